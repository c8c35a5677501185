//! `elevator run`, `compare` and `devices` end to end: fio-compatible JSON,
//! deterministic output, comparisons, and clear errors.

use crate::common;

use common::{fails_with, ok};

/// The keys that tools written for fio read (fio's --output-format=json).
#[test]
fn json_has_the_keys_fio_tools_read() {
    let out = ok(&[
        "run",
        "examples/randread-timed.fio",
        "--device",
        "ssd-sata",
        "--output-format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        v["fio version"]
            .as_str()
            .is_some_and(|s| s.starts_with("fio-"))
    );
    assert!(v["timestamp"].is_u64());
    assert_eq!(v["global options"]["ioengine"], "libaio");
    let jobs = v["jobs"].as_array().expect("jobs");
    assert_eq!(
        jobs.len(),
        2,
        "group_reporting folds the four readers into one"
    );
    let r = &jobs[0];
    assert_eq!(r["jobname"], "random-reads");
    assert_eq!(r["groupid"], 0);
    assert_eq!(r["error"], 0);
    let read = &r["read"];
    for key in [
        "io_bytes",
        "io_kbytes",
        "bw_bytes",
        "bw",
        "runtime",
        "total_ios",
    ] {
        assert!(
            read[key].as_u64().is_some_and(|x| x > 0),
            "read.{key}: {}",
            read[key]
        );
    }
    assert!(read["iops"].as_f64().is_some_and(|x| x > 1000.0));
    assert_eq!(
        read["bw"].as_u64().unwrap(),
        read["bw_bytes"].as_u64().unwrap() / 1024
    );
    let clat = &read["clat_ns"];
    for key in ["min", "max", "mean", "stddev", "N"] {
        assert!(clat[key].is_number(), "clat_ns.{key}");
    }
    for p in ["1.000000", "50.000000", "99.000000", "99.990000"] {
        assert!(
            clat["percentile"][p].as_u64().is_some_and(|x| x > 0),
            "clat percentile {p}"
        );
    }
    assert!(read["lat_ns"]["mean"].as_f64().is_some_and(|x| x > 0.0));
    assert!(read["slat_ns"]["N"].as_u64().is_some());
    assert_eq!(
        jobs[1]["write"]["total_ios"].as_u64().map(|x| x > 0),
        Some(true)
    );
    assert_eq!(jobs[1]["groupid"], 1, "stonewall starts a new group");
    assert!(v["disk_util"][0]["util"].as_f64().is_some_and(|u| u > 50.0));
    assert!(
        v["elevator"]["queue"]["dispatches"]
            .as_u64()
            .is_some_and(|d| d > 0)
    );
    assert_eq!(v["elevator"]["scheduler"], "mq-deadline");
}

#[test]
fn same_seed_same_bytes() {
    let args = [
        "run",
        "examples/default.fio",
        "--device",
        "hdd-7200",
        "--seed",
        "7",
        "--output-format",
        "json",
    ];
    let a = ok(&args);
    let b = ok(&args);
    assert_eq!(
        a.stdout, b.stdout,
        "JSON output differs between identical runs"
    );
    let text = ["run", "examples/default.fio", "--seed", "7"];
    assert_eq!(ok(&text).stdout, ok(&text).stdout, "text output differs");
    let c = ok(&[
        "run",
        "examples/default.fio",
        "--device",
        "hdd-7200",
        "--seed",
        "8",
        "--output-format",
        "json",
    ]);
    assert_ne!(a.stdout, c.stdout, "a different seed changes the run");
}

#[test]
fn text_output_looks_like_fio() {
    let out = common::prints_all(
        &[
            "run",
            "examples/roundrobin-writers.fio",
            "--device",
            "ssd-sata",
        ],
        &[
            "writer: (groupid=0, jobs=1)",
            "write: IOPS=",
            "clat percentiles",
            "99.00th=[",
            "Run status group 0 (all jobs):",
            "WRITE: bw=",
            "Disk stats (read/write):",
            "elevator: scheduler mq-deadline",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("M I/Os per CPU second"),
        "speed line on stderr: {err}"
    );
}

#[test]
fn compare_prints_every_scheduler() {
    elevator_testkit::slow!();
    let out = ok(&[
        "compare",
        "examples/default.fio",
        "--device",
        "ssd-sata",
        "--schedulers",
        "none,mq-deadline",
        "--output-format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let results = v["results"].as_array().expect("results");
    let names: Vec<&str> = results
        .iter()
        .filter_map(|r| r["scheduler"].as_str())
        .collect();
    assert_eq!(names, ["none", "mq-deadline"]);
    assert!(
        results
            .iter()
            .all(|r| r["iops"].as_f64().is_some_and(|x| x > 0.0))
    );
    let table = ok(&[
        "compare",
        "--device",
        "ssd-sata",
        "--schedulers",
        "none,deadline-list",
    ]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("examples/default.fio on ssd"), "{text}");
    assert!(
        text.contains("deadline-list") && text.contains("p99 ms"),
        "{text}"
    );
}

#[test]
fn devices_lists_presets_and_parameters() {
    common::prints_all(
        &["devices"],
        &[
            "null:",
            "ssd-sata:",
            "nvme:",
            "hdd-7200:",
            "hdd-sas-10k:",
            "hdd-sas-15k:",
            "raid0-8x-sas-10k:",
            "channel_rate",
            "member",
        ],
    );
}

#[test]
fn bad_input_says_what_and_where() {
    fails_with(
        &["run", "examples/default.fio", "--device", "hdd-9000"],
        "unknown device 'hdd-9000'",
    );
    fails_with(
        &[
            "run",
            "examples/default.fio",
            "--device",
            "ssd-sata,channels",
        ],
        "not name=value",
    );
    fails_with(
        &["run", "examples/default.fio", "--device", "ssd-sata,warp=9"],
        "ssd has no parameter 'warp'",
    );
    fails_with(
        &[
            "run",
            "examples/default.fio",
            "--device",
            "ssd-sata,channels=0",
        ],
        "channels",
    );
    fails_with(
        &["run", "no/such/file.fio"],
        "reading job file no/such/file.fio",
    );
    fails_with(
        &["run", "examples/default.fio", "--scheduler", "cfqq"],
        "unknown scheduler 'cfqq'",
    );
    fails_with(
        &["run", "examples/default.fio", "--set", "fifo_batch=many"],
        "--set fifo_batch=many",
    );
    let dir = std::env::temp_dir().join(format!("elevator-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.fio");
    // (cmdprio_percentage, refused before issue 29, is implemented now.)
    std::fs::write(&bad, "[job]\nrw=randread\nnowait=1\n").expect("write job");
    let path = bad.to_string_lossy().to_string();
    fails_with(&["run", &path], &format!("{path}:3: option 'nowait'"));
    let huge = dir.join("huge.fio");
    std::fs::write(&huge, "[job]\nrw=read\nsize=64g\n").expect("write job");
    let path = huge.to_string_lossy().to_string();
    fails_with(
        &["run", &path, "--device", "null,capacity=1g"],
        "does not fit",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cfq_idling_experiment_prints_the_table_and_verdicts() {
    elevator_testkit::slow!();
    let out = ok(&["experiment", "cfq-idling", "--output-format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["name"], "cfq-idling");
    assert_eq!(v["seed"], "004");
    let scenarios = v["data"]["scenarios"].as_array().expect("scenarios");
    assert_eq!(scenarios.len(), 2);
    for s in scenarios {
        let labels: Vec<&str> = s["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .filter_map(|r| r["label"].as_str())
            .collect();
        assert_eq!(
            labels,
            [
                "none (noop)",
                "cfq (2011)",
                "cfq slice_idle=0",
                "cfq (fixed)",
                "bfq",
                "mq-deadline",
                "kyber"
            ]
        );
        for r in s["rows"].as_array().expect("rows") {
            assert!(r["mb_per_s"].as_f64().is_some_and(|x| x > 0.0), "{r}");
            assert!(r["p99_ns_worst"].as_u64().is_some_and(|x| x > 0), "{r}");
        }
    }
    let shapes = v["shapes"].as_array().expect("shapes");
    assert_eq!(shapes.len(), 6);
    assert!(shapes.iter().all(|s| s["holds"].is_boolean()));
    // The simulation is deterministic: seed 004's six shapes hold.
    assert!(shapes.iter().all(|s| s["holds"] == true), "{shapes:?}");
    let text = ok(&["experiment", "cfq-idling"]);
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(
        t.contains("Shapes seed 004 reported") && t.contains("cfq (fixed)"),
        "{t}"
    );
}

/// The issue's job: random 4 KiB writes at depth 8 with verify, on a memory
/// device where every I/O fails.
const FAILING: [&str; 10] = [
    "run",
    "--name=x",
    "--rw=randwrite",
    "--bs=4k",
    "--size=16m",
    "--ioengine=libaio",
    "--iodepth=8",
    "--verify=crc32c",
    "--device",
    "mem:64m,fail_rate=1",
];

fn failing(extra: &[&str]) -> std::process::Output {
    let mut args = FAILING.to_vec();
    args.extend(extra);
    common::elevator(&args)
}

fn json_job(out: &std::process::Output) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    v["jobs"][0].clone()
}

/// As fio: a job stops at its first I/O error, reports its errno (`err= 5`,
/// `"error": 5`), names the failed I/O on stderr, and the run exits
/// non-zero.
#[test]
fn an_io_error_ends_the_job_and_the_run_fails() {
    let out = failing(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "exit 0 after I/O errors: {err}");
    assert!(
        text.contains("x: (groupid=0, jobs=1): err= 5 (func=io_u error, error=Input/output error)"),
        "{text}"
    );
    assert!(
        err.contains("elevator: io_u error on file x.0.0: Input/output error: write offset="),
        "{err}"
    );
    assert!(err.contains("failed: Input/output error"), "{err}");
    let out = failing(&["--output-format", "json"]);
    assert!(!out.status.success());
    let job = json_job(&out);
    assert_eq!(job["error"], 5, "{job}");
    // It stopped at once: at most the I/Os in flight (iodepth) were issued,
    // of the 4096 the job has; no errors were let go.
    let ios = job["write"]["total_ios"].as_u64().expect("total_ios");
    assert!((1..=8).contains(&ios), "{ios} writes after the first error");
    assert_eq!(
        job["read"]["total_ios"], 0,
        "no verify after a failed write"
    );
    assert!(job.get("total_err").is_none(), "{job}");
    // Each clone stops on its own, on one thread or several, whatever the
    // lock design.
    for lock in ["global", "queue", "mq"] {
        let out = failing(&["--numjobs=2", "--lock", lock, "--output-format", "json"]);
        assert!(!out.status.success(), "{lock}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        for job in v["jobs"].as_array().expect("jobs") {
            assert_eq!(job["error"], 5, "{lock}");
            let ios = job["write"]["total_ios"].as_u64().expect("total_ios");
            assert!((1..=8).contains(&ios), "{lock}: {ios}");
        }
    }
}

/// `continue_on_error=all` (or `io`, `write`, 1) lets EIO go on, as fio's
/// default list of non-fatal errors has it: the job runs to its end, the
/// errors are counted (`total_err`, `first_error`, the text's `errors`
/// line) and reported as the job's error, and the run succeeds, as fio's
/// does.
#[test]
fn continue_on_error_runs_to_the_end_and_counts() {
    for value in ["all", "1", "io", "write"] {
        let arg = format!("--continue_on_error={value}");
        let out = failing(&[&arg, "--output-format", "json"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{value}: {err}");
        let job = json_job(&out);
        assert_eq!(job["write"]["total_ios"], 4096, "{value}: {job}");
        assert_eq!(job["error"], 5, "{value}");
        assert_eq!(job["first_error"], 5, "{value}");
        assert!(
            job["total_err"].as_u64().is_some_and(|n| n >= 4096),
            "{value}: {}",
            job["total_err"]
        );
    }
    let out = failing(&["--continue_on_error=all"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("elevator: job 'x' (clone 0) went on after 4096 errors (first: 5, EIO)"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("err= 5 (func=io_u error"), "{text}");
    assert!(
        text.contains("     errors    : total=4096, first_error=5/<Input/output error>"),
        "{text}"
    );
    // Reads only: a failed write still ends the job.
    let out = failing(&["--continue_on_error=read", "--output-format", "json"]);
    assert!(!out.status.success());
    let ios = json_job(&out)["write"]["total_ios"].as_u64();
    assert!(ios.is_some_and(|n| n <= 8), "{ios:?}");
}

/// `ignore_error` lists the errors that go on, per kind (reads, writes,
/// verify), by name or number; an error it does not list still ends the
/// job. `error_dump` names the first error that went on.
#[test]
fn ignore_error_lets_the_listed_errors_go_on() {
    for value in ["EIO,EIO", ",EIO", ",5", ",ENOSPC:-5"] {
        let arg = format!("--ignore_error={value}");
        let out = failing(&[&arg, "--output-format", "json"]);
        assert!(
            out.status.success(),
            "{value}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let job = json_job(&out);
        assert_eq!(job["write"]["total_ios"], 4096, "{value}");
        assert_eq!(job["total_err"], 4096, "{value}");
    }
    let out = failing(&["--ignore_error=EIO,ENOSPC", "--output-format", "json"]);
    assert!(!out.status.success(), "EIO on a write is not in the list");
    assert_eq!(json_job(&out)["error"], 5);
    let out = failing(&["--ignore_error=,EIO", "--error_dump=1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("io_u error on file x.0.0: Input/output error: write offset=")
            && err.contains("(went on: continue_on_error)"),
        "{err}"
    );
    fails_with(
        &[
            "run",
            "--name=x",
            "--size=1m",
            "--ignore_error=EWHAT",
            "--parse-only",
        ],
        "--ignore_error (command line, argument 4): 'EWHAT': unknown error name",
    );
    fails_with(
        &[
            "run",
            "--name=x",
            "--size=1m",
            "--ignore_error=5,5,5,5",
            "--parse-only",
        ],
        "at most three lists",
    );
    fails_with(
        &[
            "run",
            "--name=x",
            "--size=1m",
            "--continue_on_error=some",
            "--parse-only",
        ],
        "expected none, read, write, io, verify, all, 0 or 1",
    );
}

/// A simulated device that loses power mid-run ends the job as an I/O
/// error does: ENODEV (19), the run exits non-zero, and the power cut's
/// report is still there.
#[test]
fn a_power_cut_ends_the_job_with_enodev() {
    elevator_testkit::needs!("prlimit");
    let out = common::elevator(&[
        "run",
        "--name=db",
        "--rw=randwrite",
        "--bs=16k",
        "--size=64m",
        "--ioengine=libaio",
        "--iodepth=8",
        "--device",
        "hdd-7200,power_cut_at=100ms",
        "--output-format",
        "json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("elevator: power cut at 0.100 s"), "{err}");
    assert!(err.contains("No such device"), "{err}");
    let job = json_job(&out);
    assert_eq!(job["error"], 19, "{job}");
    let ios = job["write"]["total_ios"].as_u64().expect("total_ios");
    assert!(ios < 4096, "the job went on after the power cut: {ios}");
}

/// The address space a hostile job file may make `elevator` use: 1 GiB.
const AS_LIMIT: &str = "--as=1073741824";

/// `elevator ARGS` under `prlimit --as=1GiB` (an unbounded allocation
/// fails the test, not the machine), from `dir`, with a deadline; `None`
/// when prlimit cannot be run here.
fn limited(dir: &std::path::Path, args: &[&str]) -> Option<std::process::Output> {
    limited_to(AS_LIMIT, dir, args)
}

/// [`limited`] with the address-space limit `limit` (prlimit's `--as=N`).
fn limited_to(limit: &str, dir: &std::path::Path, args: &[&str]) -> Option<std::process::Output> {
    if std::process::Command::new("prlimit")
        .arg("--version")
        .output()
        .is_err()
    {
        common::skip("limited", "prlimit (util-linux) is not installed");
        return None;
    }
    let mut cmd = std::process::Command::new("prlimit");
    cmd.current_dir(dir)
        .arg(limit)
        .arg(env!("CARGO_BIN_EXE_elevator"))
        .args(args);
    Some(common::fio::run(&mut cmd))
}

/// `limited`, which must fail with `needle` on stderr (and not for lack of
/// memory).
fn refused(dir: &std::path::Path, args: &[&str], needle: &str) {
    let Some(out) = limited(dir, args) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} was accepted");
    assert!(err.contains(needle), "{args:?}: '{needle}' not in: {err}");
    assert!(!err.contains("memory allocation"), "{err}");
}

/// Job files that would exhaust memory (issue 26): each is refused with
/// what was wrong and where, under a 1 GiB address-space limit, without
/// reading more than a job file may hold.
#[test]
fn hostile_job_files_are_refused_within_bounds() {
    let dir = common::fio::TempDir::new("hostile-jobs");
    let d = dir.path();
    dir.write("zero.fio", "[global]\nsize=1m\ninclude /dev/zero\n[a]\n");
    refused(
        d,
        &["run", "--parse-only", "zero.fio"],
        "zero.fio:3: option 'include': cannot read '/dev/zero': it is a character device",
    );
    refused(
        d,
        &["run", "--parse-only", "/dev/zero"],
        "reading job file /dev/zero: it holds more than 4 MiB",
    );
    // A FIFO nobody writes to: refused, not waited on.
    let fifo = dir.file("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        dir.write("fifo.fio", "[global]\ninclude fifo\n[a]\nsize=1m\n");
        refused(d, &["run", "--parse-only", "fifo.fio"], "it is a FIFO");
    }
    // The issue's 20,000 tiny sections (580 KB with its names).
    let sections: String = (0..20_000).map(|i| format!("[job-{i:05}]\n")).collect();
    dir.write(
        "many.fio",
        &format!("[global]\nrw=randread\nsize=1m\n{sections}"),
    );
    refused(
        d,
        &["run", "--parse-only", "many.fio"],
        "many.fio:4100: job 'job-04096' makes 4097 jobs, more than fio's limit of 4096",
    );
    refused(
        d,
        &[
            "run",
            "--parse-only",
            "--size=1m",
            "--numjobs=4000",
            "--name=a",
            "--name=b",
        ],
        "--numjobs (command line, argument 4): job 'b' makes 8000 jobs",
    );
    // 3 MiB included six times: past the 16 MiB a file and its includes hold.
    dir.write("big.inc", &format!("; {}\n", "x".repeat(3 << 20)));
    dir.write(
        "big.fio",
        &format!("[a]\nsize=1m\n{}", "include big.inc\n".repeat(6)),
    );
    refused(
        d,
        &["run", "--parse-only", "big.fio"],
        "big.fio:8: option 'include': 'big.inc' brings the text read to more than 16 MiB",
    );
    // A long value in [global] would be copied into every job: 3 MiB
    // times 4096 jobs is 12 GiB.
    let sections: String = (0..4096).map(|i| format!("[j{i}]\n")).collect();
    dir.write(
        "amplified.fio",
        &format!(
            "[global]\nsize=1m\nfilename={}\n{sections}",
            "f".repeat(3 << 20)
        ),
    );
    refused(
        d,
        &["run", "--parse-only", "amplified.fio"],
        "amplified.fio:3: option 'filename': its value is 3145728 bytes long",
    );
    // A million repeated lines cost what one does.
    dir.write(
        "repeat.fio",
        &format!("[a]\nsize=1m\n{}", "bs=4k\n".repeat(600_000)),
    );
    let out = limited(d, &["run", "--parse-only", "repeat.fio"]);
    if let Some(out) = out {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains("599899 more warnings like these"), "{err}");
    }
}

/// A job section costs what it holds: fio's limit of 4096 jobs runs (and
/// reports in JSON) within half a GiB of address space; each section held
/// about 245 KB (its histograms, and the report's copies of them) before,
/// 1 GB for 4096.
#[test]
fn the_most_jobs_fio_allows_run_within_half_a_gigabyte() {
    let dir = common::fio::TempDir::new("many-jobs");
    let sections: String = (0..4096).map(|i| format!("[j{i}]\n")).collect();
    dir.write(
        "max.fio",
        &format!("[global]\nrw=randread\nsize=64k\n{sections}"),
    );
    let Some(out) = limited_to(
        "--as=536870912",
        dir.path(),
        &[
            "run",
            "max.fio",
            "--device",
            "null",
            "--output-format",
            "json",
        ],
    ) else {
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["jobs"].as_array().map(Vec::len), Some(4096));
}

/// Offsets and sizes at the ends of a `u64` are refused naming the option,
/// never wrapped (issue 26).
#[test]
fn extreme_offsets_are_refused_naming_the_option() {
    for (option, value, needle) in [
        ("offset", "18446744073709551615", "is past 2^64 bytes"),
        (
            "offset",
            "9223372036854775808",
            "leaves no room for a block",
        ),
        ("size", "18446744073709551615", "does not fit"),
        ("filesize", "9223372036854775808", "does not fit"),
        (
            "offset_increment",
            "18446744073709551615",
            "is past 2^64 bytes",
        ),
    ] {
        let arg = format!("--{option}={value}");
        fails_with(
            &[
                "run",
                "--name=x",
                "--size=1m",
                "--numjobs=2",
                &arg,
                "--device",
                "null",
            ],
            &format!("--{option} (command line, argument "),
        );
        let out = common::elevator(&["run", "--name=x", "--size=1m", "--numjobs=2", &arg]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{option}={value}: {err}");
    }
}

/// fio's note when a synchronous engine caps a job's depth.
const SYNC_NOTE: &str = "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1";

/// `elevator run` of two clones of 4 KiB random reads at iodepth=8 with
/// `engine` on the simulated SATA SSD, in `format`.
fn depth_run(engine: &str, format: &str) -> String {
    let engine = format!("--ioengine={engine}");
    let out = ok(&[
        "run",
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--size=4m",
        "--iodepth=8",
        "--numjobs=2",
        &engine,
        "--device",
        "ssd-sata",
        "--output-format",
        format,
    ]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// As fio: psync (its default) is synchronous, so iodepth=8 runs at depth 1
/// (every I/O counted at depth 1), the header keeps the stated depth, and
/// each clone prints fio's note after "Starting"; libaio keeps 8 in flight.
#[test]
fn a_synchronous_engine_runs_at_depth_1_and_says_so_as_fio_does() {
    let text = depth_run("psync", "normal");
    assert!(text.contains("ioengine=psync, iodepth=8\n"), "{text}");
    let notes = format!("Starting 2 processes\n{SYNC_NOTE}\n{SYNC_NOTE}\nr: (groupid=");
    assert!(text.contains(&notes), "{text}");
    let depths: Vec<&str> = text.lines().filter(|l| l.contains("IO depths")).collect();
    assert_eq!(depths.len(), 2, "{text}");
    assert!(
        depths
            .iter()
            .all(|l| l.contains(": 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%")),
        "{text}"
    );
    // The latency line keeps the job's depth, as fio's does.
    assert!(text.contains("percentile=100.00%, depth=8\n"), "{text}");

    let text = depth_run("libaio", "normal");
    assert!(!text.contains("note: both"), "{text}");
    let depths: Vec<&str> = text.lines().filter(|l| l.contains("IO depths")).collect();
    assert!(depths.iter().all(|l| l.contains(", 8=99.")), "{text}");

    // JSON: fio prints its notes on stdout before the document.
    let text = depth_run("psync", "json");
    let (notes, doc) = text.split_at(text.find('{').expect("a JSON document"));
    assert_eq!(notes, format!("{SYNC_NOTE}\n{SYNC_NOTE}\n"));
    let v: serde_json::Value = serde_json::from_str(doc).expect("JSON");
    assert_eq!(v["jobs"][0]["iodepth_level"]["1"], 100.0, "{doc}");
    assert_eq!(v["jobs"][0]["job options"]["iodepth"], "8", "{doc}");
    let text = depth_run("libaio", "json");
    assert!(text.starts_with('{'), "{text}");
}

/// An `--output` file holds the report alone: fio's notes go to stdout
/// only, as fio's do.
#[test]
fn depth_notes_stay_out_of_an_output_file() {
    let dir = std::env::temp_dir().join(format!("elevator-syncdepth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join("r.json");
    let path_text = path.to_str().expect("utf-8 path");
    ok(&[
        "run",
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--size=1m",
        "--iodepth=8",
        "--device",
        "ssd-sata",
        "--output-format",
        "json",
        "--output",
        path_text,
    ]);
    let text = std::fs::read_to_string(&path).expect("the output file");
    let _ = std::fs::remove_dir_all(&dir);
    let v: serde_json::Value = serde_json::from_str(&text).expect("a JSON document alone");
    assert_eq!(v["jobs"][0]["iodepth_level"]["1"], 100.0, "{text}");
}
