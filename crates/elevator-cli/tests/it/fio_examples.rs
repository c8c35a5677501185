//! fio's own upstream examples (scripts/fio-examples' census) and jobs with
//! several files per job or `rw=trimwrite`, against fio 3.33: the same job's
//! `write_iolog` from both, compared file by file and offset by offset.

use crate::common;

use std::process::Command;

use common::fio::{TempDir, elevator, fio, repo_root};

/// The upstream examples that run as written (scripts/fio-examples' census
/// on hdd-7200 after issue 29): they must keep running. The block-I/O ones
/// refused today (butterfly, which fio 3.33 refuses too without its file;
/// cross-stripe-verify, sized for a 3.7 TB drive; the sg
/// engine's SCSI write modes; zonemode=zbd) join this list as they start to
/// run.
const RUN_TODAY: &[&str] = &[
    "1mbs_clients",
    "aio-read",
    "backwards-read",
    "basic-verify",
    "cmdprio-bssplit",
    "cmdprio-percentage",
    "dedupe-global",
    "disk-zone-profile",
    "enospc-pressure",
    "exitwhat",
    "fio-rand-RW",
    "fio-rand-read",
    "fio-rand-write",
    "fio-seq-RW",
    "fio-seq-read",
    "fio-seq-write",
    "fixed-rate-submission",
    "flow",
    "fsx",
    "iometer-file-access-server",
    "jesd219",
    "latency-profile",
    "null",
    "numa",
    "poisson-rate-submission",
    "rand-zones",
    "ssd-steadystate",
    "ssd-test",
    "steadystate",
    "surface-scan",
    "tiobench-example",
    "waitfor",
    "zipf",
];

/// The census: every example in fio 3.33's examples/ through `elevator
/// run`; those of [`RUN_TODAY`] must run. The examples come from
/// `FIO_EXAMPLES_DIR` when set, else from Debian's fio_3.33.orig.tar.gz
/// (downloaded by the script into its cache, sha256 checked).
#[test]
fn upstream_examples_that_ran_keep_running() {
    elevator_testkit::slow!();
    if std::env::var_os("FIO_EXAMPLES_DIR").is_none() {
        // The script downloads fio's source with curl.
        elevator_testkit::needs!("curl");
    }
    let mut cmd = Command::new(repo_root().join("scripts/fio-examples"));
    cmd.env("ELEVATOR", env!("CARGO_BIN_EXE_elevator"))
        .arg("--must-run")
        .arg(RUN_TODAY.join(","));
    if let Some(dir) = std::env::var_os("FIO_EXAMPLES_DIR") {
        cmd.arg(dir);
    }
    let out = cmd.output().expect("run scripts/fio-examples");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scripts/fio-examples: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("block-I/O examples run as written: "),
        "{stdout}"
    );
}

/// (file, op, offset, length) of every I/O in a fio iolog (version 3),
/// file names without their directory.
fn logged(text: &str) -> Vec<(String, String, u64, u64)> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // "TIME FILE OP OFFSET LEN" (version 3 has a time first).
            let (file, op, off, len) = match f.as_slice() {
                [_, file, op, off, len] => (file, op, off, len),
                _ => return None,
            };
            let name = file.rsplit('/').next().unwrap_or(file).to_string();
            Some((name, op.to_string(), off.parse().ok()?, len.parse().ok()?))
        })
        .collect()
}

/// `filename=a:b:c`, round robin and sequential file service: elevator
/// serves the same files at the same offsets in the same order as fio
/// (`fio --write_iolog` on files in a scratch directory).
#[test]
fn several_files_per_job_log_as_fio_logs_them() {
    elevator_testkit::needs!("fio");
    for service in ["roundrobin", "sequential", "roundrobin:2"] {
        let dir = TempDir::new("several-files");
        let job = format!(
            "[j]\nfilename=a:b\\:x:c\nsize=768k\nbs=64k\nrw=write\n\
             file_service_type={service}\nwrite_iolog=io.log\n"
        );
        std::fs::write(dir.0.join("j.fio"), &job).expect("write job");
        let f = fio(&dir.0, &["j.fio"]);
        assert!(f.status.success(), "fio: {f:?}");
        let theirs = logged(&std::fs::read_to_string(dir.0.join("io.log")).expect("fio's log"));
        std::fs::remove_file(dir.0.join("io.log")).expect("remove fio's log");
        let o = elevator(&dir.0, &["run", "j.fio", "--device", "ssd-sata"]);
        assert!(o.status.success(), "elevator: {o:?}");
        let ours = logged(&std::fs::read_to_string(dir.0.join("io.log")).expect("our log"));
        let writes = |v: &[(String, String, u64, u64)]| {
            v.iter()
                .filter(|io| io.1 == "write")
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(writes(&ours), writes(&theirs), "{service}");
        assert_eq!(writes(&ours).len(), 12, "{service}");
    }
}

/// `rw=trimwrite`: each block trimmed, then written (fio 3.33 on a loop
/// device logs trim 0, write 0, trim 64k, write 64k...); the report counts
/// the trims and the writes.
#[test]
fn trimwrite_trims_then_writes_in_the_report() {
    let dir = TempDir::new("trimwrite");
    let o = elevator(
        &dir.0,
        &[
            "run",
            "--name=tw",
            "--rw=trimwrite",
            "--bs=64k",
            "--size=1m",
            "--filename=/dev/sdb",
            "--write_iolog=tw.log",
            "--output-format=json",
            "--device",
            "ssd-sata",
        ],
    );
    assert!(o.status.success(), "elevator: {o:?}");
    let json = common::fio::json("elevator run", &String::from_utf8_lossy(&o.stdout));
    let job = &json["jobs"][0];
    assert_eq!(job["trim"]["io_bytes"], 1 << 20, "{job}");
    assert_eq!(job["write"]["io_bytes"], 1 << 20, "{job}");
    let log = logged(&std::fs::read_to_string(dir.0.join("tw.log")).expect("log"));
    let ops: Vec<(&str, u64)> = log.iter().map(|io| (io.1.as_str(), io.2)).collect();
    assert_eq!(
        &ops[..4],
        &[("trim", 0), ("write", 0), ("trim", 65536), ("write", 65536)]
    );
}
