//! `elevator run` and `bench-vs-fio` on real devices: memory and files
//! through io_uring, every scheduler, and clear errors for bad devices.

use crate::common;

use std::path::PathBuf;

use common::{elevator, fails_with, ok};

const JOB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/jobs/real-mixed.fio");

/// A file of `mib` MiB, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(dir: &str, name: &str, mib: u64) -> Scratch {
        let path = PathBuf::from(dir).join(format!("elevator-cli-{name}-{}", std::process::id()));
        let f = std::fs::File::create(&path).expect("create scratch file");
        f.set_len(mib << 20).expect("size scratch file");
        Scratch(path)
    }

    fn spec(&self) -> String {
        format!("file:{}", self.0.display())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn job_ios(v: &serde_json::Value) -> (u64, u64, u64) {
    let jobs = v["jobs"].as_array().expect("jobs");
    let sum = |dir: &str| {
        jobs.iter()
            .map(|j| j[dir]["total_ios"].as_u64().expect("total_ios"))
            .sum::<u64>()
    };
    (sum("read"), sum("write"), sum("trim"))
}

#[test]
fn every_scheduler_runs_on_memory() {
    for sched in elevator_core::SCHEDULER_NAMES {
        let out = ok(&[
            "run",
            JOB,
            "--device",
            "mem:16m",
            "--scheduler",
            sched,
            "--output-format",
            "json",
        ]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(v["elevator"]["time"], "real");
        let (r, w, t) = job_ios(&v);
        // 2 clones × 2 MiB of 4 KiB I/O, 2 MiB of 64 KiB writes, 256 KiB of trims.
        assert_eq!(r + w, 2 * 512 + 32, "{sched}");
        assert_eq!(t, 16, "{sched}");
        assert!(v["elevator"]["cpu"]["per_io_ns"].as_f64().expect("cpu") > 0.0);
        for j in v["jobs"].as_array().expect("jobs") {
            assert_eq!(j["error"], 0);
        }
    }
}

#[test]
fn files_on_tmpfs_and_the_root_file_system() {
    for dir in ["/dev/shm", "/var/tmp"] {
        let file = Scratch::new(dir, "run", 16);
        for sched in ["none", "mq-deadline", "bfq"] {
            let out = ok(&["run", JOB, "--device", &file.spec(), "--scheduler", sched]);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("real time"), "{text}");
            assert!(text.contains("cpu: engine thread"), "{text}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("IOPS"), "{err}");
        }
    }
}

/// With `continue_on_error=all` (fio's way to go on after EIO).
#[test]
fn faults_show_as_errors_and_the_run_goes_on() {
    let out = ok(&[
        "run",
        JOB,
        "--continue_on_error=all",
        "--device",
        "mem:16m,fail_rate=0.05,fail_seed=3",
        "--scheduler",
        "mq-deadline",
        "--output-format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let (r, w, _) = job_ios(&v);
    assert_eq!(r + w, 2 * 512 + 32, "every I/O completes, failed or not");
    let errors: u64 = v["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .flat_map(|j| ["read", "write"].map(|d| j[d]["errors"].as_u64().expect("errors")))
        .sum();
    assert!(errors > 10, "about 5% of ~1000 I/Os failed: {errors}");
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("elevator: faults injected: failed "))
        .unwrap_or_else(|| panic!("no fault counts on stderr: {err}"));
    // One failed device request fails every caller I/O merged into it.
    let failed: u64 = line["elevator: faults injected: failed ".len()..]
        .split(',')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(failed > 0 && failed <= errors, "{errors} errors: {line}");
}

#[test]
fn bad_devices_say_what_is_wrong() {
    fails_with(
        &["run", JOB, "--device", "file:/nonexistent/disk.img"],
        "/nonexistent/disk.img",
    );
    fails_with(&["run", JOB, "--device", "file:/tmp"], "is a directory");
    fails_with(
        &["run", JOB, "--device", "file:/dev/null"],
        "character device",
    );
    fails_with(
        &["run", JOB, "--device", "mem:16m,colour=red"],
        "unknown option 'colour=red'",
    );
    fails_with(&["run", JOB, "--device", "mem:1m"], "does not fit");
    fails_with(
        &[
            "run",
            JOB,
            "--device",
            "mem:16m",
            "--set",
            "submit_batch=lots",
        ],
        "submit_batch",
    );
    let empty = Scratch::new("/dev/shm", "empty", 0);
    fails_with(&["run", JOB, "--device", &empty.spec()], "empty");
}

/// fio and elevator side by side. fio must be installed (`scripts/test`
/// installs it); without it the test fails and says so.
#[test]
fn bench_vs_fio_prints_both() {
    elevator_testkit::needs!("fio");
    let file = Scratch::new("/dev/shm", "bench", 64);
    let job = std::env::temp_dir().join(format!("elevator-bench-test-{}.fio", std::process::id()));
    std::fs::write(
        &job,
        "[global]\nbs=4k\niodepth=8\nruntime=1\ntime_based\n[r]\nrw=randread\nsize=32m\n",
    )
    .expect("write job");
    let out = elevator(&[
        "bench-vs-fio",
        job.to_str().expect("utf-8 path"),
        "--device",
        &file.spec(),
    ]);
    let _ = std::fs::remove_file(&job);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("fio io_uring"), "{text}");
    assert!(text.contains("elevator none"), "{text}");
    assert!(text.contains("elevator mq-deadline"), "{text}");
    fails_with(
        &["bench-vs-fio", JOB, "--device", "mem:16m"],
        "needs file:PATH",
    );
}
