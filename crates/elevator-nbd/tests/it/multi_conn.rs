//! Real clients using several connections at once, against a server with
//! two worker threads (`ServerConfig::threads = 2`), so that connections
//! land on different threads once the server spreads them: `nbdcopy` over
//! four connections in and out, fio's `nbd` engine with four jobs writing
//! and verifying their own ranges, and ext4 through nbdfuse and a loop
//! device. Each runs on a memory export and, where cheap, a file export.
//! And I/O below a file's direct-I/O alignment (512-byte requests on tmpfs,
//! whose alignment is 4096): read-modify-writes, from one connection and
//! from two at once into the same blocks. The tests hold whatever the
//! server does with its threads: they check data, never timing.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{
    Client, JsonExt, Reply, TestServer, assert_same_file, pattern, run_fio, run_ok, temp_dir,
    temp_dir_in, wait_for, write_image,
};
use elevator_nbd::ExportSpec;
use elevator_nbd::proto::{cflag, cmd, opt, rep};

const MIB: u64 = 1 << 20;

/// Connections each multi-connection client opens.
const CONNECTIONS: usize = 4;

/// A server with two worker threads serving `exports`, also on TCP
/// loopback.
fn two_thread_server(exports: &[&str]) -> TestServer {
    TestServer::start_with(exports, |cfg| {
        cfg.threads = 2;
        cfg.tcp = vec!["127.0.0.1:0".parse().expect("address")];
    })
}

/// A 64 MiB file export's backing file, in `dir` (a real file system:
/// O_DIRECT does not work on tmpfs), and its `--export` spec.
fn file_export(dir: &Path, name: &str) -> String {
    let backing = dir.join(format!("{name}.img"));
    std::fs::File::create(&backing)
        .and_then(|f| f.set_len(64 * MIB))
        .expect("creating the backing file");
    format!("{name}=file:{}", backing.display())
}

/// Wait until `server` has logged `n` connections to `export`; check none
/// of them saw an error.
fn assert_connections_clean(server: &TestServer, export: &str, n: usize) {
    let needle = format!("export '{export}'");
    let lines = wait_for(&format!("{n} connections to '{export}' logged"), || {
        let lines: Vec<String> = server
            .log_lines()
            .into_iter()
            .filter(|l| l.contains(&needle))
            .collect();
        (lines.len() >= n).then_some(lines)
    });
    assert!(lines.iter().all(|l| l.contains(" 0 errors")), "{lines:#?}");
}

/// `nbdcopy` a random 64 MiB image into `uri` over four connections, copy
/// it out again over four, and compare.
fn nbdcopy_in_and_out(uri: &str, tag: &str) {
    let dir = temp_dir(tag);
    let (img, out) = (dir.path().join("in.img"), dir.path().join("out.img"));
    write_image(&img, 64 * MIB, 0x4C0);
    // nbdcopy opens no more connections than it has threads (by default,
    // the cores): ask for one thread per connection.
    let connections = [
        format!("--connections={CONNECTIONS}"),
        format!("--threads={CONNECTIONS}"),
    ];
    run_ok(
        Command::new("nbdcopy")
            .args(&connections)
            .arg("--flush")
            .arg(&img)
            .arg(uri),
    );
    run_ok(
        Command::new("nbdcopy")
            .args(&connections)
            .arg(uri)
            .arg(&out),
    );
    assert_same_file(&img, &out);
}

#[test]
fn nbdcopy_four_connections_mem_and_file() {
    elevator_testkit::needs!("nbdcopy");
    let work = temp_dir_in(Path::new("/var/tmp"), "multi-copy");
    let file = file_export(work.path(), "f");
    let server = two_thread_server(&["m=mem:64m", &file]);
    // The memory export over the Unix socket, the file export over TCP.
    nbdcopy_in_and_out(&server.uri("m"), "copy-mem");
    nbdcopy_in_and_out(&format!("nbd://{}/f", server.tcp[0]), "copy-file");
    // Four connections in and four out, on each export.
    assert_connections_clean(&server, "m", 2 * CONNECTIONS);
    assert_connections_clean(&server, "f", 2 * CONNECTIONS);
    server.stop();
}

/// fio's `nbd` engine: four jobs (four connections), each writing 4 KiB
/// blocks in random order over its own 16 MiB of the export at depth 16,
/// with a CRC32C in each block, then reading its range back and verifying
/// it. Returns the bytes the jobs wrote.
fn fio_four_jobs_verify(uri: &str) -> u64 {
    let dir = temp_dir("fio-jobs");
    let mut cmd = Command::new("fio");
    // fio may leave files (verify state) where it runs.
    cmd.current_dir(dir.path())
        .args([
            "--name=multi",
            "--ioengine=nbd",
            "--rw=randwrite",
            "--bs=4k",
            "--iodepth=16",
            "--numjobs=4",
            "--size=16m",
            "--offset_increment=16m",
            "--verify=crc32c",
            "--do_verify=1",
            "--verify_fatal=1",
            "--verify_state_save=0",
            "--output-format=json",
        ])
        .arg(format!("--uri={uri}"));
    let what = format!("{cmd:?}");
    let j = run_fio(&mut cmd);
    let jobs = j.at("jobs").arr();
    assert_eq!(jobs.len(), 4, "{what}: one report per job");
    let mut written = 0;
    for job in jobs {
        assert_eq!(job.at("error").num(), 0.0, "{what}: a job failed");
        let bytes = job.at("write").at("io_bytes").num() as u64;
        assert_eq!(bytes, 16 * MIB, "{what}: a job wrote its whole range");
        // The verify pass read it all back.
        assert_eq!(
            job.at("read").at("io_bytes").num() as u64,
            16 * MIB,
            "{what}: a job read its whole range back"
        );
        written += bytes;
    }
    written
}

#[test]
fn fio_four_jobs_verify_mem_and_file() {
    elevator_testkit::needs!("fio");
    let work = temp_dir_in(Path::new("/var/tmp"), "multi-fio");
    let file = file_export(work.path(), "f");
    let server = two_thread_server(&["m=mem:64m", &file]);
    assert_eq!(fio_four_jobs_verify(&server.uri("m")), 64 * MIB);
    assert_eq!(
        fio_four_jobs_verify(&format!("nbd://{}/f", server.tcp[0])),
        64 * MIB
    );
    assert_connections_clean(&server, "m", 4);
    assert_connections_clean(&server, "f", 4);
    server.stop();
}

#[test]
fn ext4_round_trip_two_threads() {
    elevator_testkit::needs!(in common::ext4::TOOLS);
    // Dropped last: after the server.
    let work = temp_dir("multi-ext4");
    let server = two_thread_server(&["disk=mem:64m"]);
    if let Err(why) = common::ext4::round_trip(&server.uri("disk"), &work) {
        common::skip("ext4_round_trip_two_threads", &why);
        return;
    }
    let lines = server.log_lines();
    assert!(lines.iter().all(|l| l.contains(" 0 errors")), "{lines:#?}");
    server.stop();
}

// ---------------------------------------------------------------------------
// I/O below the device's alignment.

/// A file export on tmpfs (`/dev/shm`: direct I/O there is aligned to
/// 4096 bytes), its backing file filled with `pattern(99, ..)`: the
/// directory, the backing file, and its `--export` spec, or why there is
/// none (no tmpfs, or one without direct I/O: the caller skips).
fn tmpfs_export(size: usize) -> Result<(common::TempDir, std::path::PathBuf, String), String> {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return Err("/dev/shm does not exist".into());
    }
    let dir = temp_dir_in(shm, "subblock");
    let backing = dir.path().join("disk.img");
    std::fs::write(&backing, pattern(99, size)).expect("writing the backing file");
    let spec = format!("disk=file:{}", backing.display());
    let opened = ExportSpec::parse(&spec)
        .expect("parses")
        .open(1)
        .map_err(|e| format!("a file on tmpfs cannot be served: {}", common::chain(&e)))?;
    if opened.export.align <= 512 {
        return Err(format!(
            "direct I/O on this tmpfs is aligned to {} bytes: nothing below it to test",
            opened.export.align
        ));
    }
    Ok((dir, backing, spec))
}

/// [`tmpfs_export`], or `None` when there is none, `test` then reported as
/// skipped with the reason.
fn tmpfs_export_or_skip(
    test: &str,
    size: usize,
) -> Option<(common::TempDir, std::path::PathBuf, String)> {
    tmpfs_export(size)
        .map_err(|why| common::skip(test, &why))
        .ok()
}

#[test]
fn sub_block_requests_on_a_tmpfs_file_are_read_modify_writes() {
    const SIZE: usize = 1 << 20;
    let Some((_dir, backing, spec)) = tmpfs_export_or_skip(
        "sub_block_requests_on_a_tmpfs_file_are_read_modify_writes",
        SIZE,
    ) else {
        return;
    };
    let server = TestServer::start_with(&[&spec], |c| c.threads = 2);
    let mut model = pattern(99, SIZE);
    for structured in [false, true] {
        let mut c = Client::start(&server.sock);
        if structured {
            assert_eq!(c.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
            c.structured = true;
        }
        let info = c.go("disk");
        assert_eq!(
            info.block.map(|b| (b.0, b.1)),
            Some((512, 4096)),
            "block sizes"
        );
        let cookie = |n: u64| n + if structured { 100 } else { 0 };
        // Reads of 512 bytes, inside a block and across two.
        for (offset, len) in [(512u64, 512u32), (3584, 1024), (4096 + 512, 8192)] {
            let got = c.read_at(cookie(1), 0, offset, len);
            let at = offset as usize;
            assert!(
                got.as_deref() == Ok(&model[at..at + len as usize]),
                "READ of {len} at {offset}: {got:?}"
            );
        }
        // Writes: inside a block, across two, with a middle, with FUA.
        for (k, (offset, len, flags)) in [
            (1536u64, 512usize, 0u16),
            (4096 - 512, 1024, 0),
            (8192 + 1024, 3 * 4096, cflag::FUA),
            (65536 + 512, 512, cflag::FUA),
        ]
        .into_iter()
        .enumerate()
        {
            let data = pattern(k as u64 + if structured { 10 } else { 0 }, len);
            assert_eq!(
                c.write_at(cookie(2), flags, offset, &data),
                0,
                "WRITE at {offset}"
            );
            model[offset as usize..offset as usize + len].copy_from_slice(&data);
        }
        // Write-zeroes below the alignment, and a trim (a hint: the whole
        // blocks inside it, none here).
        assert_eq!(
            c.command(cookie(3), 0, cmd::WRITE_ZEROES, 2048, 1024 + 4096),
            0
        );
        model[2048..2048 + 1024 + 4096].fill(0);
        assert_eq!(c.command(cookie(4), 0, cmd::TRIM, 131072 + 512, 1024), 0);
        // Everything reads back, neighbours untouched, through the server
        // and in the file.
        let got = c.read_at(cookie(5), 0, 0, 131072).expect("READ back");
        assert!(got == model[..131072], "the first 128 KiB differ");
        c.disc();
    }
    // Offsets and lengths at u64 extremes are refused here too.
    common::assert_extremes_refused(&server, "disk", 512);
    server.stop();
    let file = std::fs::read(&backing).expect("reading the backing file");
    assert!(
        file[..131072] == model[..131072],
        "the backing file differs"
    );
}

#[test]
fn overlapping_sub_block_writes_from_two_connections_are_serialised() {
    const BLOCKS: usize = 64;
    let Some((_dir, backing, spec)) = tmpfs_export_or_skip(
        "overlapping_sub_block_writes_from_two_connections_are_serialised",
        1 << 20,
    ) else {
        return;
    };
    let server = TestServer::start_with(&[&spec], |c| c.threads = 2);
    // Two connections (on the two workers) write the sectors of the same
    // 4 KiB blocks at once: one the even sectors, the other the odd. Each
    // write reads, patches and writes back a whole block: unless they are
    // serialised, one undoes the other.
    let writers: Vec<_> = (0..2u64)
        .map(|k| {
            let sock = server.sock.clone();
            std::thread::spawn(move || {
                let mut c = Client::open(&sock, "disk");
                let sectors: Vec<u64> = (0..BLOCKS as u64 * 8).filter(|s| s % 2 == k).collect();
                for &s in &sectors {
                    c.request(0, cmd::WRITE, s, s * 512, 512);
                    c.send(&pattern(1000 + s, 512));
                }
                for _ in &sectors {
                    match c.read_reply(|_| 0) {
                        Reply::Simple { error: 0, .. } => {}
                        other => panic!("connection {k}: {other:?}"),
                    }
                }
                c.disc();
            })
        })
        .collect();
    for w in writers {
        w.join().expect("a writer failed");
    }
    let mut c = Client::open(&server.sock, "disk");
    let got = c
        .read_at(1, 0, 0, (BLOCKS * 4096) as u32)
        .expect("READ back");
    c.disc();
    server.stop();
    let file = std::fs::read(&backing).expect("reading the backing file");
    for s in 0..BLOCKS * 8 {
        let want = pattern(1000 + s as u64, 512);
        let at = s * 512;
        assert!(got[at..at + 512] == want, "sector {s} read back wrong");
        assert!(file[at..at + 512] == want, "sector {s} wrong in the file");
    }
}
