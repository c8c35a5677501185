//! `elevator replay` on the device it builds from the trace by default,
//! serving each request in the time the recording's device took: the
//! shipped kernel trace keeps every count, a page-cache-like workload whose
//! merges depend on the device's times merges as recorded (and does not
//! on the old fixed 200 µs device), a trace without completions falls back
//! to that device and says why, and `--device` overrides.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common;
use common::fio::TempDir;

/// The device replays ran on before: 200 µs per request, 128 tags.
const FIXED: &str = "null,latency=200,queue_depth=128";

fn traces() -> PathBuf {
    match std::env::var_os("ELEVATOR_TRACES") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/traces"),
    }
}

/// `elevator ARGS --output-format json` (with `stdin` on its standard
/// input, if given), which must succeed: its report.
fn json(args: &[&str], stdin: Option<&[u8]>) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_elevator"));
    cmd.args(args)
        .args(["--output-format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = cmd.spawn().expect("runs elevator");
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(bytes).expect("writes the trace");
    }
    let out = child.wait_with_output().expect("waits");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

/// `elevator ARGS`, which must fail: its standard error.
fn refused(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("runs elevator");
    assert!(!out.status.success(), "{args:?} ran");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn count(v: &Value, side: &str, row: &str) -> u64 {
    v[side]["counts"][row]
        .as_u64()
        .unwrap_or_else(|| panic!("{side}.{row} in {v}"))
}

fn device(v: &Value) -> &str {
    v["device"].as_str().expect("the device")
}

const ROWS: [&str; 7] = [
    "back_merges",
    "front_merges",
    "request_merges",
    "requests_allocated",
    "requests_inserted",
    "requests_issued",
    "flushes_issued",
];

#[test]
fn the_pgbench_trace_replays_on_its_own_service_times_with_every_count() {
    let trace = traces().join("pgbench-init-mq-deadline.trace.xz");
    let trace = trace.to_string_lossy().into_owned();
    let v = json(
        &[
            "replay",
            &trace,
            "--set",
            "max_sectors_kb=1280",
            "--set",
            "nr_requests=256",
        ],
        None,
    );
    assert_eq!(
        device(&v),
        "recorded (the recording's service times: 1789 requests matched, 0 from the model \
         of D2C by size; 1789 recorded, queue depth 96)"
    );
    for row in ROWS.iter().chain(&["splits", "bios_queued"]) {
        assert_eq!(
            count(&v, "elevator", row),
            count(&v, "recorded", row),
            "{row}"
        );
    }
    // Named, with overrides: as deep as the loop device's 128 tags.
    let v = json(
        &[
            "replay",
            &trace,
            "--device",
            "recorded,queue_depth=128,seed=7",
            "--set",
            "max_sectors_kb=1280",
            "--set",
            "nr_requests=256",
        ],
        None,
    );
    assert!(
        device(&v).starts_with("recorded,queue_depth=128,seed=7 (the recording's service times")
            && device(&v).ends_with("queue depth 128)"),
        "{}",
        device(&v)
    );
    assert_eq!(count(&v, "elevator", "requests_issued"), 1789);
    let e = refused(&["replay", &trace, "--device", "recorded,latency=5"]);
    assert!(
        e.contains("--device recorded,latency=5: recorded has no parameter 'latency'"),
        "{e}"
    );
}

/// A page-cache-like workload: four writeback tasks each writing its own
/// file as 4 KiB bios, 5-60 µs apart, in bursts of 48 with pauses of 1-4
/// ms; no plugs, so which bios merge depends on how long the device keeps
/// the requests before them waiting (a seeded generator, tracefs text).
fn page_cache_writeback() -> String {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut below = |lo: u64, hi: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        lo + state % (hi - lo)
    };
    let mut bios = Vec::new();
    for task in 0..4u64 {
        let mut t = 1_000_000 + task * 7000;
        let mut sector = (task + 1) << 24;
        for b in 0..1200 {
            if b % 48 == 47 {
                t += below(1000, 4000) * 1000;
            }
            t += below(5, 60) * 1000;
            bios.push((t, task, sector));
            sector += 8;
        }
    }
    bios.sort_unstable();
    bios.iter()
        .map(|&(t, task, sector)| {
            let comm = format!("kworker/u8:{task}");
            format!(
                "{comm:>16}-{:<7} [{:03}] ..... {:>5}.{:06}: block_bio_queue: 8,0 W {sector} + 8 \
                 [{comm}]\n",
                100 + task,
                task % 2,
                t / 1_000_000_000,
                t % 1_000_000_000 / 1000
            )
        })
        .collect()
}

#[test]
fn a_page_cache_workload_merges_as_recorded_on_slow_devices() {
    let dir = TempDir::new("replay-recorded-pc");
    let input = dir.path().join("writeback.trace");
    std::fs::write(&input, page_cache_writeback()).expect("writes the workload");
    let input = input.to_string_lossy().into_owned();
    // The "recordings": the workload through mq-deadline on slow devices
    // of few tags, with their issues and completions.
    for recording_device in ["null,latency=2000,queue_depth=4", "hdd-7200,ncq=4"] {
        let name = recording_device.replace([',', '='], "-");
        let rec = dir.path().join(&name).to_string_lossy().into_owned();
        json(
            &[
                "replay",
                &input,
                "--device",
                recording_device,
                "--trace-out",
                &rec,
            ],
            None,
        );
        let v = json(&["replay", &rec], None);
        assert!(
            device(&v).starts_with("recorded (the recording's service times"),
            "{}",
            device(&v)
        );
        for row in ROWS {
            let (k, e) = (count(&v, "recorded", row), count(&v, "elevator", row));
            assert_eq!(e, k, "{recording_device}: {row}");
        }
        assert!(count(&v, "recorded", "back_merges") > 1000);
        // The fixed 200 µs device serves each request before the next
        // bio comes: nothing merges.
        let fixed = json(&["replay", &rec, "--device", FIXED], None);
        assert_eq!(count(&fixed, "elevator", "back_merges"), 0);
        // Another scheduler issues other requests: those the recording
        // did not issue take times from the model.
        let other = json(&["replay", &rec, "--scheduler", "none"], None);
        assert!(
            !device(&other).contains(" 0 from the model"),
            "{}",
            device(&other)
        );
    }
}

#[test]
fn without_completions_the_fixed_device_serves_and_says_why() {
    let dir = TempDir::new("replay-recorded-none");
    let trace = dir.path().join("q-only.trace");
    let text = page_cache_writeback();
    std::fs::write(&trace, &text).expect("writes the trace");
    let trace = trace.to_string_lossy().into_owned();
    let v = json(&["replay", &trace], None);
    assert!(
        device(&v).starts_with(&format!(
            "{FIXED} (null (1024 GiB, 200 us)), the default: the trace has no completions of \
             device 8,0"
        )),
        "{}",
        device(&v)
    );
    let v = json(&["replay", "-"], Some(text.as_bytes()));
    assert!(device(&v).contains("standard input"), "{}", device(&v));
    // Asked for by name, the recorded device needs completions.
    let e = refused(&["replay", &trace, "--device", "recorded"]);
    assert!(
        e.contains("--device recorded: the trace has no completions of device 8,0"),
        "{e}"
    );
    // A device named is the device used, with nothing added.
    let v = json(&["replay", &trace, "--device", "nvme"], None);
    assert!(device(&v).starts_with("nvme ("), "{}", device(&v));
    assert!(!device(&v).contains("default"), "{}", device(&v));
}
