//! The `elevator` binary end to end: microbench's JSON for every scheduler,
//! its merge counts, `schedulers`, and clear errors for bad options.
//! (Timing is never asserted here: figures come from the benchmark itself.)

use crate::common;

use common::{elevator, fails_with, ok};

/// A small microbench run (depth 8, 1000 I/Os, once).
const MICROBENCH_SMALL: [&str; 7] = [
    "microbench",
    "--depth",
    "8",
    "--ios",
    "1000",
    "--repeat",
    "1",
];

/// A small random-read job on the nvme model.
const SMALL_NVME_JOB: [&str; 6] = [
    "--name=x",
    "--rw=randread",
    "--bs=4k",
    "--size=1m",
    "--device",
    "nvme",
];

fn json(args: &[&str]) -> serde_json::Value {
    let out = ok(args);
    serde_json::from_slice(&out.stdout).expect("microbench prints JSON")
}

#[test]
fn microbench_json_has_every_field_for_every_scheduler() {
    for sched in ["none", "mq-deadline", "deadline-rbtree", "deadline-list"] {
        let v = json(&[
            "microbench",
            "--scheduler",
            sched,
            "--depth",
            "16,64",
            "--ios",
            "3000",
            "--repeat",
            "2",
            "--output-format",
            "json",
        ]);
        let cases = v["cases"].as_array().expect("cases array");
        assert_eq!(cases.len(), 2);
        for (case, depth) in cases.iter().zip([16, 64]) {
            assert_eq!(case["scheduler"], sched);
            assert_eq!(case["depth"], depth);
            assert_eq!(case["pattern"], "random");
            assert_eq!(case["nomerges"], 0);
            assert_eq!(case["ios"], 3000);
            assert!(case["ns_per_io"].as_f64().is_some_and(|x| x > 0.0));
            assert!(case["merges"].as_u64().is_some());
            assert_eq!(case["ns_per_io_runs"].as_array().map(Vec::len), Some(2));
        }
    }
}

#[test]
fn sequential_io_merges_and_nomerges_2_does_not() {
    let v = json(&[
        "microbench",
        "--scheduler",
        "mq-deadline,none",
        "--pattern",
        "sequential",
        "--nomerges",
        "0,1,2",
        "--depth",
        "32",
        "--ios",
        "20000",
        "--repeat",
        "1",
        "--output-format",
        "json",
    ]);
    for case in v["cases"].as_array().expect("cases") {
        let pct = case["merged_pct"].as_f64().expect("merged_pct");
        match case["nomerges"].as_u64() {
            Some(0 | 1) => assert!(pct >= 90.0, "{case}"),
            _ => assert_eq!(case["merges"], 0, "{case}"),
        }
    }
}

#[test]
fn normal_output_is_a_table() {
    let out = elevator(&MICROBENCH_SMALL);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ns/IO") && text.contains("mq-deadline") && text.contains("none"));
}

#[test]
fn schedulers_lists_tunables_with_defaults() {
    common::prints_all(
        &["schedulers"],
        &[
            "nomerges",
            "nr_requests",
            "mq-deadline:",
            "read_expire",
            "500 ms",
            "deadline-list:",
        ],
    );
}

#[test]
fn bad_options_say_what_is_wrong() {
    fails_with(
        &["microbench", "--scheduler", "cfqq"],
        "unknown scheduler 'cfqq'",
    );
    fails_with(&["microbench", "--depth", "0"], "--depth 0");
    fails_with(&["microbench", "--depth", "many"], "--depth");
    fails_with(&["microbench", "--bs", "1000"], "--bs 1000");
    fails_with(&["microbench", "--bs", "4q"], "not a byte count");
    fails_with(&["microbench", "--nomerges", "3"], "--nomerges");
    fails_with(&["microbench", "--ios", "0"], "--ios");
    fails_with(&["microbench", "--pattern", "zigzag"], "zigzag");
    fails_with(
        &["microbench", "--set", "slice_idle=8", "--ios", "10"],
        "unknown tunable 'slice_idle'",
    );
    fails_with(
        &[
            "microbench",
            "--scheduler",
            "mq-deadline",
            "--set",
            "fifo_batch=lots",
            "--ios",
            "10",
        ],
        "fifo_batch",
    );
    fails_with(
        &["microbench", "--set", "fifo_batch"],
        "expected TUNABLE=VALUE",
    );
}

/// Run `elevator ARGS` from the repository's root with its stdout a pipe
/// whose reader is gone (as in `elevator schedulers | true`).
fn with_closed_stdout(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    std::process::Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run elevator")
}

/// A closed stdout ends every command that prints quietly, as it ends Unix
/// tools: killed by SIGPIPE (status 141 in a shell), no panic, no error.
/// Commands that print with `println!` and those that write to stdout
/// themselves (`trace convert ... -`, `advise`, clap's `--help`) alike.
#[test]
fn a_closed_stdout_ends_each_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let dir = common::fio::TempDir::new("closed-stdout");
    let trace = dir.file("g.trace");
    ok(&["replay", "--generate", "2000", &trace]);
    let states = dir.file("states");
    let job = SMALL_NVME_JOB;
    let with_job = |cmd: &'static str| -> Vec<&str> {
        let mut v = vec![cmd];
        v.extend(job);
        v
    };
    let commands: Vec<Vec<&str>> = vec![
        vec!["schedulers"],
        vec!["devices"],
        vec!["--help"],
        with_job("run"),
        with_job("compare"),
        with_job("advise"),
        MICROBENCH_SMALL.to_vec(),
        vec!["replay", &trace, "--device", "null"],
        vec!["trace", "convert", &trace, "-", "--to", "text"],
        vec!["write-log", "show", "examples/crash/app-correct.wlog"],
        vec![
            "crash-states",
            "examples/crash/app-correct.wlog",
            "--out",
            &states,
            "--max-states",
            "20",
        ],
    ];
    for args in commands {
        let out = with_closed_stdout(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("error"),
            "elevator {args:?}: {err}"
        );
        // replay's text report goes on to report a failed write-log check
        // after its reader went away, so it may end with status 0.
        assert!(
            out.status.signal() == Some(13) || out.status.success(),
            "elevator {args:?} ends by SIGPIPE ({}): {err}",
            out.status
        );
    }
}

/// A closed stderr (`elevator run ... 2>&1 | head -1`, then more lines)
/// ends the command by SIGPIPE too, not by a panic (exit status 101).
#[test]
fn a_closed_stderr_ends_a_command_by_sigpipe() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_elevator"))
        .arg("run")
        .args(SMALL_NVME_JOB)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(writer)
        .status()
        .expect("run elevator");
    assert_eq!(status.signal(), Some(13), "{status}");
}
