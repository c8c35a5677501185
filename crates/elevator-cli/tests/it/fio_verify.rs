//! `elevator run` and fio 3.33 on the same file with `verify_format=fio`:
//! what elevator writes, fio's `--verify_only` accepts; what fio writes,
//! elevator's `verify_only` accepts and, corrupted, refuses naming the
//! block. And `verify_dump`: the failing block as read and as expected, in
//! files named as fio names them.

use std::path::Path;

use crate::common::fio::{TempDir, elevator, fio, stdout_ok};

/// fio's checksums, a CRC, a hash of each family and fio's own sha256.
const KINDS: [&str; 8] = [
    "crc32c", "crc7", "crc64", "md5", "sha1", "sha256", "sha3-512", "xxhash",
];

fn job(kind: &str, tail: &str) -> String {
    format!("[v]\nrw=write\nbs=4k\nsize=1m\nverify={kind}\n{tail}")
}

fn device_file(dir: &TempDir) -> String {
    let data = dir.path().join("data");
    std::fs::File::create(&data)
        .and_then(|f| f.set_len(2 << 20))
        .expect("create the device file");
    data.display().to_string()
}

fn run_elevator(dir: &Path, job: &Path, data: &str) -> std::process::Output {
    elevator(
        dir,
        &[
            "run",
            job.to_str().expect("utf-8"),
            "--device",
            &format!("file:{data}"),
            "--seed",
            "29",
        ],
    )
}

fn run_fio(dir: &Path, job: &Path, data: &str) -> std::process::Output {
    fio(
        dir,
        &[
            "--ioengine=psync",
            &format!("--filename={data}"),
            job.to_str().expect("utf-8"),
        ],
    )
}

fn said(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn flip(path: &str, at: u64) {
    let mut data = std::fs::read(path).expect("read");
    data[at as usize] ^= 0x40;
    std::fs::write(path, &data).expect("write");
}

/// elevator writes with `verify_format=fio`, fio's `verify_only` passes.
#[test]
fn fio_verifies_what_elevator_wrote() {
    elevator_testkit::needs!("fio");
    for kind in KINDS {
        let dir = TempDir::new(&format!("fio-reads-{kind}"));
        let data = device_file(&dir);
        let write = dir.write("w.fio", &job(kind, "verify_format=fio\ndo_verify=0\n"));
        stdout_ok("elevator write", &run_elevator(dir.path(), &write, &data));
        let check = dir.write("c.fio", &job(kind, "verify_only=1\n"));
        let out = run_fio(dir.path(), &check, &data);
        let text = said(&out);
        assert!(
            out.status.success() && !text.contains("verify failed") && !text.contains("bad "),
            "fio's verify_only on elevator's {kind} blocks:\n{text}"
        );
    }
}

/// fio writes, elevator's `verify_only` with `verify_format=fio` passes; a
/// flipped byte fails it, naming the block.
#[test]
fn elevator_verifies_what_fio_wrote() {
    elevator_testkit::needs!("fio");
    for kind in KINDS {
        let dir = TempDir::new(&format!("elevator-reads-{kind}"));
        let data = device_file(&dir);
        let write = dir.write("w.fio", &job(kind, "do_verify=0\n"));
        stdout_ok("fio write", &run_fio(dir.path(), &write, &data));
        let check = dir.write("c.fio", &job(kind, "verify_format=fio\nverify_only=1\n"));
        stdout_ok(
            &format!("elevator verify_only on fio's {kind} blocks"),
            &run_elevator(dir.path(), &check, &data),
        );
        let bad = 77 * 4096;
        flip(&data, bad + 2000);
        let out = run_elevator(dir.path(), &check, &data);
        let text = said(&out);
        assert!(
            !out.status.success(),
            "missed a flipped byte ({kind}):\n{text}"
        );
        assert!(
            text.contains(&format!("offset {bad}")),
            "{kind}: the failure does not name offset {bad}:\n{text}"
        );
    }
}

/// `verify_dump=1`: a corrupted block is dumped to `v.0.0.OFFSET.received`
/// and `.expected` (fio's names for a job without `filename`), which differ
/// in the flipped byte only.
#[test]
fn verify_dump_writes_the_block_as_read_and_as_expected() {
    let dir = TempDir::new("verify-dump");
    let data = device_file(&dir);
    let write = dir.write("w.fio", &job("crc32c", "do_verify=0\n"));
    stdout_ok("elevator write", &run_elevator(dir.path(), &write, &data));
    let bad = 9 * 4096;
    flip(&data, bad + 100);
    let check = dir.write("c.fio", &job("crc32c", "verify_only=1\nverify_dump=1\n"));
    let out = run_elevator(dir.path(), &check, &data);
    assert!(!out.status.success(), "{}", said(&out));
    let read = |what: &str| {
        let p = dir.path().join(format!("v.0.0.{bad}.{what}"));
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}\n{}", p.display(), said(&out)))
    };
    let (received, expected) = (read("received"), read("expected"));
    assert_eq!(received.len(), 4096);
    assert_eq!(expected.len(), 4096);
    let differ: Vec<usize> = (0..4096).filter(|&i| received[i] != expected[i]).collect();
    assert_eq!(differ, vec![100]);
}

/// The share of zero bytes and of 4 KiB blocks that repeat an earlier one
/// in the first `len` bytes of `path`.
fn zeros_and_dups(path: &str, len: usize) -> (f64, f64) {
    let data = std::fs::read(path).expect("read");
    let data = &data[..len];
    let zeros = data.iter().filter(|&&b| b == 0).count() as f64 / len as f64;
    let blocks: Vec<&[u8]> = data.chunks(4096).collect();
    let unique: std::collections::HashSet<&[u8]> = blocks.iter().copied().collect();
    let dups = 1.0 - unique.len() as f64 / blocks.len() as f64;
    (zeros, dups)
}

/// fio's buffer options: elevator's writes on a file have the share of
/// zeros (`buffer_compress_percentage`) and of repeated blocks
/// (`dedupe_percentage`, both modes) that fio's writes of the same job have,
/// within 3 points; `buffer_pattern` alone fills every byte.
#[test]
fn buffer_contents_have_fios_compressibility_and_dedupe() {
    elevator_testkit::needs!("fio");
    let jobs = [
        "buffer_compress_percentage=50\ndedupe_percentage=34\n",
        "dedupe_percentage=34\ndedupe_mode=working_set\ndedupe_working_set_percentage=50\n",
        "buffer_compress_percentage=70\nbuffer_compress_chunk=4k\nrefill_buffers=1\n",
        "buffer_pattern=0x01\n",
    ];
    for (i, tail) in jobs.iter().enumerate() {
        let dir = TempDir::new(&format!("contents-{i}"));
        let text = format!("[c]\nrw=write\nbs=4k\nsize=4m\n{tail}");
        let fio_data = device_file(&dir);
        let job = dir.write("c.fio", &text);
        stdout_ok("fio", &run_fio(dir.path(), &job, &fio_data));
        let fio_figures = zeros_and_dups(&fio_data, 4 << 20);
        let ours = dir.path().join("ours").display().to_string();
        std::fs::File::create(&ours)
            .and_then(|f| f.set_len(4 << 20))
            .expect("create");
        stdout_ok("elevator", &run_elevator(dir.path(), &job, &ours));
        let our_figures = zeros_and_dups(&ours, 4 << 20);
        if tail.starts_with("buffer_pattern") {
            let data = std::fs::read(&ours).expect("read");
            assert!(data.iter().all(|&b| b == 1), "buffer_pattern=0x01");
            continue;
        }
        assert!(
            (fio_figures.0 - our_figures.0).abs() < 0.03
                && (fio_figures.1 - our_figures.1).abs() < 0.03,
            "{tail}: fio's zeros and repeated blocks {fio_figures:?}, elevator's {our_figures:?}"
        );
    }
}

/// `dedupe_global` (fio's `examples/dedupe-global.fio`, smaller): two jobs
/// share one working set, so the same blocks appear in both jobs' files.
/// The share of one job's distinct blocks also in the other's, and of
/// repeated blocks overall, are fio's within 5 points.
#[test]
fn dedupe_global_shares_blocks_between_jobs_as_fio_does() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("dedupe-global");
    let text = "[global]\nrw=write\nbs=4k\nsize=8m\ndedupe_mode=working_set\ndedupe_global=1\n\
                dedupe_percentage=50\ndedupe_working_set_percentage=50\n[a]\n[b]\n";
    let job = dir.write("g.fio", text);
    let fio_dir = dir.path().join("fio");
    std::fs::create_dir(&fio_dir).expect("mkdir");
    let out = fio(
        dir.path(),
        &[
            "--ioengine=psync",
            &format!("--directory={}", fio_dir.display()),
            job.to_str().expect("utf-8"),
        ],
    );
    stdout_ok("fio", &out);
    let read = |p: std::path::PathBuf| std::fs::read(&p).expect("read fio's file");
    let fio_files = [read(fio_dir.join("a.0.0")), read(fio_dir.join("b.0.0"))];
    let ours = dir.path().join("ours").display().to_string();
    std::fs::File::create(&ours)
        .and_then(|f| f.set_len(16 << 20))
        .expect("create");
    stdout_ok("elevator", &run_elevator(dir.path(), &job, &ours));
    let data = std::fs::read(&ours).expect("read");
    let our_files = [data[..8 << 20].to_vec(), data[8 << 20..16 << 20].to_vec()];
    let figures = |files: &[Vec<u8>; 2]| {
        let sets: Vec<std::collections::HashSet<&[u8]>> =
            files.iter().map(|f| f.chunks(4096).collect()).collect();
        let blocks = (files[0].len() + files[1].len()) / 4096;
        let unique: std::collections::HashSet<&[u8]> = sets[0].union(&sets[1]).copied().collect();
        let both = sets[0].intersection(&sets[1]).count() as f64 / sets[0].len() as f64;
        (both, 1.0 - unique.len() as f64 / blocks as f64)
    };
    let (theirs, ours) = (figures(&fio_files), figures(&our_files));
    assert!(
        theirs.0 > 0.1 && (theirs.0 - ours.0).abs() < 0.05 && (theirs.1 - ours.1).abs() < 0.05,
        "blocks in both jobs' files, repeated blocks: fio {theirs:?}, elevator {ours:?}"
    );
}
