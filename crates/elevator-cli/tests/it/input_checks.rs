//! What `elevator` refuses or warns about, end to end: nothing a user gives
//! it is clamped, rounded or ignored without a word, every mistake is found
//! before any run starts, and each message names what was wrong and where.

use crate::common;

use std::path::PathBuf;

use common::{elevator, fails_with, ok};

/// A job file in the temporary directory, removed when dropped.
struct Job(PathBuf);

impl Job {
    fn new(name: &str, text: &str) -> Job {
        let path =
            std::env::temp_dir().join(format!("elevator-input-{}-{name}.fio", std::process::id()));
        std::fs::write(&path, text).expect("write job file");
        Job(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temporary path")
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `elevator run JOB --device DEVICE` must fail with `needle` in its message.
fn run_fails_with(job: &str, device: &str, needle: &str) {
    fails_with(&["run", job, "--device", device], needle);
}

fn stderr(args: &[&str]) -> String {
    String::from_utf8_lossy(&elevator(args).stderr).into_owned()
}

#[test]
fn offsets_past_the_end_of_the_device_are_refused() {
    let job = Job::new(
        "offset",
        "[j]\nrw=randread\nbs=4k\nfilename=/dev/sdx\noffset=2t\nsize=16m\n",
    );
    // A 1 TB disk (1000204886016 bytes) and 64 MiB of memory.
    run_fails_with(job.path(), "hdd-7200", ":5: option 'offset'");
    run_fails_with(
        job.path(),
        "hdd-7200",
        "on the device (1000204886016 bytes)",
    );
    run_fails_with(job.path(), "mem:64m", "on the device (67108864 bytes)");
    let past = Job::new(
        "offset-size",
        "[j]\nrw=read\nbs=4k\nfilename=/dev/sdx\noffset=60m\nsize=8m\n",
    );
    run_fails_with(
        past.path(),
        "mem:64m",
        "offset 62914560 + size 8388608 runs past the end of the device (67108864 bytes)",
    );
    let file = Job::new("offset-file", "[j]\nrw=read\nbs=4k\nsize=16m\noffset=2t\n");
    run_fails_with(
        file.path(),
        "mem:64m",
        "in its files of 16777216 bytes (the device has 67108864 bytes)",
    );
}

#[test]
fn an_option_given_twice_is_a_warning_naming_both_lines() {
    let job = Job::new("twice", "[j]\nrw=randread\nbs=4k\nsize=1m\nrw=randwrite\n");
    let out = ok(&["run", job.path(), "--device", "nvme"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "elevator: warning: {}:5: option 'rw' is set again in section [j] (first at line 2)",
            job.path()
        )),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("write:"));
}

#[test]
fn a_size_error_cites_the_size_line() {
    let job = Job::new("size", "[global]\nbs=4k\n[j]\nrw=read\nsize=1k\n");
    run_fails_with(
        job.path(),
        "nvme",
        &format!("{}:5: option 'size'", job.path()),
    );
}

#[test]
fn compare_checks_every_scheduler_and_tunable_before_it_runs() {
    let out = elevator(&["compare", "--schedulers", "none,nosuch"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown scheduler 'nosuch'"), "{err}");
    assert!(
        !err.contains("simulated in"),
        "none ran before nosuch was checked: {err}"
    );
    assert!(out.stdout.is_empty());
    let out = elevator(&[
        "compare",
        "--schedulers",
        "none,bfq",
        "--set",
        "slice_idle=-1",
    ]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("simulated in"));
}

#[test]
fn device_errors_and_help_name_what_exists() {
    let help = String::from_utf8_lossy(&ok(&["--help"]).stdout).into_owned();
    assert!(
        !help.contains("ssd,"),
        "help offers a device that is refused: {help}"
    );
    run_fails_with("examples/default.fio", "ssd", "did you mean ssd-sata?");
    for spec in ["bogus:x", "ssd"] {
        run_fails_with(
            "examples/default.fio",
            spec,
            "or a real device: file:PATH or mem:SIZE",
        );
    }
}

#[test]
fn microbench_names_a_too_small_nr_requests() {
    let out = elevator(&["microbench", "--set", "nr_requests=4", "--ios", "1000"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nr_requests=4 is too small for this case")
            && err.contains("needs at least 161 tags"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing printed before the check");
}

#[test]
fn error_lines_do_not_end_in_spaces() {
    for args in [
        &["run", "examples/default.fio", "--set", "nr_requests=1"][..],
        &[
            "run",
            "examples/default.fio",
            "--set",
            "read_expire=99999999999",
        ],
        &[
            "run",
            "examples/default.fio",
            "--device",
            "hdd-7200,zones=0",
        ],
        &[
            "run",
            "examples/default.fio",
            "--device",
            "hdd-7200,heads=0",
        ],
    ] {
        let err = stderr(args);
        assert!(err.contains("error"), "{args:?}: {err}");
        for line in err.lines() {
            assert_eq!(line, line.trim_end(), "{args:?}: trailing space");
        }
    }
}

#[test]
fn a_device_that_takes_no_time_says_why_its_rates_are_zero() {
    let job = Job::new(
        "null",
        "[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nsize=1m\n",
    );
    let out = ok(&["run", job.path(), "--device", "null"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        // fio's lines come first; the note heads elevator's own figures.
        text.contains("\nnote: null (1024 GiB, 0 us) completes I/O in no simulated time"),
        "{text}"
    );
    assert!(text.contains("the 256 I/Os are counted below"), "{text}");
    let out = ok(&[
        "run",
        job.path(),
        "--device",
        "null",
        "--output-format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        v["elevator"]["note"]
            .as_str()
            .is_some_and(|n| n.contains("no simulated time"))
    );
    // With a latency, rates mean something and there is no note.
    let out = ok(&["run", job.path(), "--device", "null,latency=10"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("note:"));
}

#[test]
fn runs_too_big_for_the_machine_are_refused_before_they_start() {
    let job = Job::new(
        "huge",
        "[j]\nrw=randread\nbs=4k\nnumjobs=4096\nioengine=libaio\niodepth=65536\nfilename=/dev/x\nsize=16k\n",
    );
    // 2^28 buffers of 4 KiB: over a TiB, more than any machine it runs on.
    run_fails_with(
        job.path(),
        "mem:64g",
        "4096 job clones with 268435456 I/Os in flight in all, more than half of this \
         machine's memory",
    );
}

#[test]
fn lock_options_are_checked_and_belong_to_real_devices() {
    let err = stderr(&["run", "examples/default.fio", "--lock", "spin"]);
    assert!(
        err.contains("unknown lock mode 'spin': expected global, queue or mq"),
        "{err}"
    );
    let err = stderr(&["run", "examples/default.fio", "--lock", "global"]);
    assert!(
        err.contains("--lock and --lock-stats go with a real --device"),
        "{err}"
    );
    let err = stderr(&["run", "examples/default.fio", "--also-device", "mem:1g"]);
    assert!(
        err.contains("--also-device goes with a real --device"),
        "{err}"
    );
    let job = Job::new(
        "cpus.fio",
        "[j]\nrw=read\nbs=4k\nsize=64k\ncpus_allowed=0,999\nfilename=/dev/x\n",
    );
    let err = stderr(&["run", job.path(), "--device", "mem:1m"]);
    assert!(err.contains("cpus_allowed names CPU 999"), "{err}");
}

#[test]
fn an_unknown_output_format_lists_the_formats_once() {
    let err = stderr(&["run", "examples/default.fio", "--output-format", "jsn"]);
    assert!(err.contains("unknown output format 'jsn'"), "{err}");
    assert_eq!(
        err.matches("(normal, json, json+ or terse)").count(),
        1,
        "{err}"
    );
}

#[test]
fn a_filename_without_a_device_says_the_run_is_simulated() {
    let job = [
        "run",
        "--name=x",
        "--filename=/var/tmp/elevator-no-such-dir/new.img",
        "--size=1m",
        "--rw=write",
    ];
    let err = stderr(&job);
    assert!(
        err.contains(
            "elevator: note: no --device: the jobs run on the simulated hdd-7200 (the default); \
             their filename= names a file on it. For the real file, --device \
             file:/var/tmp/elevator-no-such-dir/new.img"
        ),
        "{err}"
    );
    assert_eq!(err.matches("no --device").count(), 1, "{err}");
    let given = [&job[..], &["--device", "hdd-7200"]].concat();
    let err = stderr(&given);
    assert!(!err.contains("no --device"), "{err}");
}

#[test]
fn a_missing_trace_says_it_could_not_be_read() {
    fails_with(
        &["replay", "/nonexistent"],
        "reading trace /nonexistent: No such file or directory",
    );
}

#[test]
fn a_misspelt_elevator_option_is_suggested_as_elevators() {
    fails_with(
        &["run", "--devcie", "nvme", "--name=x", "--size=1m"],
        "unknown option --devcie: neither elevator's nor fio's (did you mean --device (elevator's)?)",
    );
    fails_with(
        &["run", "examples/default.fio", "--outputformat=json"],
        "(did you mean --output-format (elevator's)?)",
    );
    fails_with(
        &["compare", "--schedulrs", "none"],
        "(did you mean --schedulers (elevator's)?)",
    );
    // A name nearer one of fio's options gets fio's suggestion.
    fails_with(
        &["run", "--name=x", "--sise=1m"],
        "fio has no option 'sise' (did you mean 'size'?)",
    );
}

#[test]
fn an_unwritable_report_is_refused_before_any_run() {
    let bad = "/nonexistent/elevator-dir/x.html";
    for args in [
        &["run", "examples/default.fio", "--report", bad][..],
        &["compare", "--schedulers", "none", "--report", bad][..],
    ] {
        let out = elevator(args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("--report {bad}: cannot write it")),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "{args:?} ran before refusing");
    }
}

#[test]
fn experiment_help_says_which_experiments_quick_changes() {
    let out = ok(&["experiment", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains(
            "cfq-idling is already small (the virtual clock) and --quick does not change it"
        ),
        "{help}"
    );
}

#[test]
fn serve_suggests_a_misspelt_tunable_and_lists_only_settable_ones() {
    let err = stderr(&["serve", "--export", "disk=mem:64m,read_expir=1"]);
    assert!(
        err.contains("unknown tunable 'read_expir' for the queue or scheduler mq-deadline (did you mean read_expire?); known: "),
        "{err}"
    );
    assert!(
        !err.contains("logical_block_size"),
        "a read-only attribute listed: {err}"
    );
}
