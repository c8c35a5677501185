//! `--trace-out NAME`: what elevator writes is blktrace's format, as the
//! real tools read it. blkparse prints every event (its counts by action
//! equal elevator's own), btt reports a Q2C average equal to elevator's
//! mean latency, and fio replays the trace (`--read_iolog`) moving the same
//! bytes as elevator's run; on simulated devices, real ones (`file:`,
//! `mem:`), under `compare`, and from `serve` with a real NBD client.
//!
//! blkparse, btt, fio and nbdcopy must be installed (`scripts/test`
//! installs them): a missing one fails the test, naming its package.
//! Nothing here measures time.

use crate::common;
use common::fio::TempDir;
use common::tools::{blkparse_counts, run};

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// elevator's own counts, from its `trace:` line on stderr: letter → count,
/// and the number of files.
fn summary(stderr: &str, prefix: &str) -> (BTreeMap<char, u64>, u64) {
    let needle = format!("elevator: trace: {prefix}.blktrace.*: ");
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix(&needle))
        .unwrap_or_else(|| panic!("no trace summary for {prefix} on stderr:\n{stderr}"));
    // "N events in K files, D dropped (Q 10, G 8, ...)"
    let words: Vec<&str> = line.split_whitespace().collect();
    let files: u64 = words[3].parse().expect("file count");
    assert_eq!(words[5], "0", "events dropped: {line}");
    let mut counts = BTreeMap::new();
    if let Some(open) = line.find('(') {
        for part in line[open + 1..].trim_end_matches(')').split(", ") {
            let (letter, n) = part.split_once(' ').expect("letter and count");
            let letter = letter.chars().next().expect("a letter");
            counts.insert(letter, n.parse().expect("a count"));
        }
    }
    let total: u64 = counts.values().sum();
    assert_eq!(
        words[0].parse::<u64>().expect("event count"),
        total,
        "{line}"
    );
    (counts, files)
}

/// btt's average Q2C in ns over the trace `prefix` (blkparse -d, then btt).
fn btt_q2c_ns(dir: &TempDir, prefix: &str) -> f64 {
    let dump = dir.file("btt.bin");
    run(Command::new("blkparse").args(["-i", prefix, "-O", "-d", &dump]));
    // btt leaves its per-device data files (`*_iops_fp.dat`) where it runs.
    let out = run(Command::new("btt")
        .current_dir(dir.path())
        .args(["-i", &dump]));
    let text = String::from_utf8_lossy(&out.stdout);
    // "Q2C               0.000052927   0.000078206   0.000232188        2048"
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("Q2C"))
        .unwrap_or_else(|| panic!("no Q2C line in btt's report:\n{text}"));
    let avg: f64 = line
        .split_whitespace()
        .nth(2)
        .expect("AVG")
        .parse()
        .expect("seconds");
    avg * 1e9
}

/// The bytes fio moves replaying the trace `prefix` (merged into one file
/// by blkparse, as fio reads one) onto a scratch file: (read, written).
fn fio_replay_bytes(dir: &TempDir, prefix: &str) -> (u64, u64) {
    let merged = dir.file("merged.bin");
    run(Command::new("blkparse").args(["-i", prefix, "-O", "-d", &merged]));
    let target = dir.file("replay.img");
    std::fs::File::create(&target)
        .and_then(|f| f.set_len(256 << 20))
        .expect("a scratch file for fio");
    let out = run(Command::new("fio").args([
        "--name=replay",
        &format!("--read_iolog={merged}"),
        &format!("--replay_redirect={target}"),
        "--replay_no_stall=1",
        "--ioengine=psync",
        "--output-format=json",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    let json: Value = serde_json::from_str(&text[text.find('{').expect("fio's JSON")..])
        .expect("fio's JSON parses");
    let job = &json["jobs"][0];
    (
        job["read"]["io_bytes"].as_u64().expect("read bytes"),
        job["write"]["io_bytes"].as_u64().expect("written bytes"),
    )
}

/// A run's figures from its fio-style JSON: bytes read and written, I/Os,
/// the mean latency over every I/O (ns), and the disk's I/Os and merges.
struct Figures {
    read: u64,
    written: u64,
    ios: u64,
    mean_lat: f64,
    disk_ios: u64,
    disk_merges: u64,
}

fn figures(json: &Value) -> Figures {
    let mut f = Figures {
        read: 0,
        written: 0,
        ios: 0,
        mean_lat: 0.0,
        disk_ios: 0,
        disk_merges: 0,
    };
    let mut lat_sum = 0.0;
    for job in json["jobs"].as_array().expect("jobs") {
        for dir in ["read", "write", "trim"] {
            let d = &job[dir];
            let n = d["total_ios"].as_u64().unwrap_or(0);
            f.ios += n;
            lat_sum += d["lat_ns"]["mean"].as_f64().unwrap_or(0.0) * n as f64;
        }
        f.read += job["read"]["io_bytes"].as_u64().unwrap_or(0);
        f.written += job["write"]["io_bytes"].as_u64().unwrap_or(0);
    }
    for disk in json["disk_util"].as_array().expect("disk_util") {
        f.disk_ios +=
            disk["read_ios"].as_u64().unwrap_or(0) + disk["write_ios"].as_u64().unwrap_or(0);
        f.disk_merges +=
            disk["read_merges"].as_u64().unwrap_or(0) + disk["write_merges"].as_u64().unwrap_or(0);
    }
    f.mean_lat = lat_sum / f.ios.max(1) as f64;
    f
}

/// `elevator run ARGS --trace-out PREFIX --output-format json`: the JSON
/// and stderr.
fn traced_run(args: &[&str], prefix: &str) -> (Value, String) {
    let mut all: Vec<&str> = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--trace-out", prefix, "--output-format", "json"]);
    let out = common::ok(&all);
    let json: Value = serde_json::from_slice(&out.stdout).expect("elevator's JSON");
    (json, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// blkparse's counts are elevator's, elevator's counts agree with its
/// queue's statistics, and there is a file per submitter.
fn check_counts(json: &Value, stderr: &str, prefix: &str, files: u64) {
    let (ours, nfiles) = summary(stderr, prefix);
    assert_eq!(nfiles, files, "files written:\n{stderr}");
    for cpu in 0..files {
        assert!(
            Path::new(&format!("{prefix}.blktrace.{cpu}")).is_file(),
            "{prefix}.blktrace.{cpu} is missing"
        );
    }
    let theirs = blkparse_counts(prefix);
    assert_eq!(theirs, ours, "blkparse's counts by action, and elevator's");
    let f = figures(json);
    let count = |c: char| ours.get(&c).copied().unwrap_or(0);
    assert_eq!(count('Q'), f.ios, "a Q per I/O the jobs issued");
    assert_eq!(count('C'), f.disk_ios, "a C per request the disk completed");
    assert_eq!(count('D'), f.disk_ios, "a D per request the disk took");
    assert_eq!(count('M') + count('F'), f.disk_merges, "merges");
}

#[test]
fn a_simulated_run_is_read_by_blkparse_btt_and_fio() {
    elevator_testkit::needs!("blkparse", "btt", "fio");
    let dir = TempDir::new("sim");
    let prefix = dir.file("t");
    // Two writers whose 4k writes merge, and a reader whose 2 MiB reads
    // are split at the SSD's 1.25 MiB limit.
    let (json, stderr) = traced_run(
        &[
            "--device",
            "ssd-sata",
            "--name=w",
            "--rw=write",
            "--bs=4k",
            "--size=2m",
            "--numjobs=2",
            "--ioengine=libaio",
            "--iodepth=8",
            "--name=r",
            "--rw=read",
            "--bs=2m",
            "--size=8m",
            "--ioengine=libaio",
            "--iodepth=2",
        ],
        &prefix,
    );
    check_counts(&json, &stderr, &prefix, 3);
    let (ours, _) = summary(&stderr, &prefix);
    assert!(ours.get(&'X').copied().unwrap_or(0) > 0, "splits: {ours:?}");
    assert!(ours.get(&'M').copied().unwrap_or(0) > 0, "merges: {ours:?}");

    let f = figures(&json);
    assert_eq!(fio_replay_bytes(&dir, &prefix), (f.read, f.written));
    // btt pairs a split bio's Q with the completion of its first piece,
    // elevator's latency ends at its last: close, not equal.
    let q2c = btt_q2c_ns(&dir, &prefix);
    assert_close(q2c, f.mean_lat, 0.10, "with splits");
}

#[test]
fn btt_q2c_is_elevators_latency() {
    elevator_testkit::needs!("blkparse", "btt");
    let dir = TempDir::new("btt");
    let prefix = dir.file("t");
    let (json, stderr) = traced_run(
        &[
            "--device",
            "hdd-7200",
            "--scheduler",
            "bfq",
            "--name=w",
            "--rw=randwrite",
            "--bs=4k",
            "--size=1m",
            "--numjobs=2",
            "--ioengine=libaio",
            "--iodepth=4",
            "--name=s",
            "--rw=write",
            "--bs=4k",
            "--size=1m",
            "--ioengine=libaio",
            "--iodepth=8",
        ],
        &prefix,
    );
    check_counts(&json, &stderr, &prefix, 3);
    let q2c = btt_q2c_ns(&dir, &prefix);
    assert_close(q2c, figures(&json).mean_lat, 0.01, "without splits");
}

/// `a` is within `share` of `b`.
fn assert_close(a: f64, b: f64, share: f64, what: &str) {
    assert!(
        (a - b).abs() <= share * b,
        "{what}: btt's Q2C {a:.0} ns and elevator's mean latency {b:.0} ns differ by more \
         than {:.0} %",
        share * 100.0
    );
}

#[test]
fn a_real_file_and_memory_are_traced_a_file_per_thread() {
    elevator_testkit::needs!("blkparse", "fio");
    let dir = TempDir::new("real");
    let img = dir.file("disk.img");
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(32 << 20))
        .expect("a file to run on");
    let file = format!("file:{img}");
    for (device, lock, tag) in [
        (file.as_str(), "mq", "f"),
        ("mem:32m", "queue", "m"),
        ("mem:32m", "global", "g"),
    ] {
        let prefix = dir.file(tag);
        let (json, stderr) = traced_run(
            &[
                "--device",
                device,
                "--lock",
                lock,
                "--name=a",
                "--rw=randrw",
                "--bs=4k",
                "--size=2m",
                "--numjobs=2",
                "--ioengine=libaio",
                "--iodepth=4",
                "--name=s",
                "--rw=write",
                "--bs=8k",
                "--size=1m",
                "--ioengine=libaio",
                "--iodepth=8",
            ],
            &prefix,
        );
        check_counts(&json, &stderr, &prefix, 3);
        let f = figures(&json);
        assert_eq!(
            fio_replay_bytes(&dir, &prefix),
            (f.read, f.written),
            "{device} --lock {lock}"
        );
    }
}

#[test]
fn compare_writes_a_trace_per_scheduler() {
    elevator_testkit::needs!("blkparse");
    let dir = TempDir::new("compare");
    let prefix = dir.file("c");
    let out = common::ok(&[
        "compare",
        "--device",
        "hdd-7200",
        "--schedulers",
        "none,bfq",
        "--trace-out",
        &prefix,
        "--name=a",
        "--rw=randread",
        "--bs=4k",
        "--size=1m",
        "--numjobs=2",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for sched in ["none", "bfq"] {
        let p = format!("{prefix}-{sched}");
        let (ours, files) = summary(&stderr, &p);
        assert_eq!(files, 2, "{stderr}");
        assert_eq!(blkparse_counts(&p), ours, "{sched}");
        assert_eq!(ours.get(&'Q'), Some(&512), "{sched}: {ours:?}");
    }
}

#[test]
fn a_bad_trace_place_fails_clearly() {
    common::fails_with(
        &[
            "run",
            "--device",
            "null",
            "--name=a",
            "--rw=read",
            "--size=64k",
            "--trace-out",
            "/nonexistent-dir/t",
        ],
        "--trace-out /nonexistent-dir/t",
    );
}

/// blkparse's totals for the trace `prefix`: KiB of reads and of writes
/// queued (its "Reads Queued: N, K KiB" line of the "Total" section).
fn blkparse_queued_kib(prefix: &str) -> (u64, u64) {
    let out = run(Command::new("blkparse").args(["-i", prefix]));
    let text = String::from_utf8_lossy(&out.stdout);
    let total = &text[text.find("Total (").expect("blkparse's totals")..];
    let line = total
        .lines()
        .find(|l| l.contains("Reads Queued:"))
        .expect("a Queued line");
    // " Reads Queued:          18,     4096KiB\t Writes Queued:          16,     4096KiB"
    let kib: Vec<u64> = line
        .split("KiB")
        .filter_map(|part| {
            part.rsplit(|c: char| !c.is_ascii_digit())
                .find(|w| !w.is_empty())
        })
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(kib.len(), 2, "{line}");
    (kib[0], kib[1])
}

#[test]
fn serve_traces_each_worker_and_connection() {
    elevator_testkit::needs!("nbdcopy", "kill", "blkparse");
    let dir = TempDir::new("serve");
    let sock = dir.file("nbd.sock");
    let prefix = dir.file("s");
    let log = dir.file("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["serve", "--export", "disk=mem:4m", "--threads", "2"])
        .args(["--unix", &sock, "--trace-out", &prefix])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("a log file"))
        .spawn()
        .expect("running elevator serve");
    wait_for("elevator serve to listen", || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "elevator serve exited ({status}):\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        Path::new(&sock).exists().then_some(())
    });
    let uri = format!("nbd+unix:///disk?socket={sock}");
    let image = dir.file("in.img");
    let data: Vec<u8> = (0..4u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&image, &data).expect("an image");
    run(Command::new("nbdcopy").args(["-C", "1", &image, &uri]));
    let copy = dir.file("out.img");
    run(Command::new("nbdcopy").args(["-C", "1", &uri, &copy]));
    assert!(
        std::fs::read(&copy).expect("the copy") == data,
        "round trip"
    );
    run(Command::new("kill").args(["-TERM", &child.id().to_string()]));
    let status = wait_for("elevator serve to stop", || child.try_wait().ok().flatten());
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "serve exited {status}:\n{stderr}");

    let (ours, files) = summary(&stderr, &prefix);
    assert!(
        (1..=2).contains(&files),
        "a file per worker at most: {stderr}"
    );
    assert_eq!(blkparse_counts(&prefix), ours, "{stderr}");
    assert_eq!(blkparse_queued_kib(&prefix), (4096, 4096), "bytes queued");
    // Each connection is a process named after it.
    let out = run(Command::new("blkparse").args(["-i", &prefix]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[nbd"), "connections named nbdN:\n{text}");
}

/// Poll `f` until it gives a value; panic after two minutes.
fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    elevator_testkit::wait_for(what, Duration::from_secs(120), f)
}
