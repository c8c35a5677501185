//! Real clients using several connections at once, against a server with
//! two worker threads (`ServerConfig::threads = 2`), so that connections
//! land on different threads once the server spreads them: `nbdcopy` over
//! four connections in and out, fio's `nbd` engine with four jobs writing
//! and verifying their own ranges, and ext4 through nbdfuse and a loop
//! device. Each runs on a memory export and, where cheap, a file export.
//! The tests hold whatever the server does with its threads: they check
//! data, never timing.

mod common;

use std::path::Path;
use std::process::Command;

use common::{
    JsonExt, TestServer, assert_same_file, run_fio, run_ok, temp_dir, temp_dir_in, wait_for,
    write_image,
};

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
