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
