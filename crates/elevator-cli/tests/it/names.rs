//! The names a user types, end to end: every device kind and option
//! `elevator devices` lists is one its parser takes (from the parsers' own
//! tables, so the listing cannot drift), scheduler aliases are listed and
//! said when used, `--schedulers all` is every scheduler, and a misspelt
//! scheduler, tunable or device gets the nearest name.

use crate::common;

use std::sync::Arc;

use common::{elevator, fails_with, ok, prints_all};
use elevator_core::SCHEDULER_NAMES;
use elevator_sim::device::{ModelSpec, RecordedParams, presets};
use elevator_trace::analyze::service_times::ServiceTimes;

/// The option rows (`    name  default  meaning`) of the section whose
/// heading starts with `heading`, up to the next blank line.
fn rows<'a>(listing: &'a str, heading: &str) -> Vec<&'a str> {
    let mut lines = listing.lines().skip_while(|l| !l.starts_with(heading));
    assert!(
        lines.next().is_some(),
        "no section '{heading}' in:\n{listing}"
    );
    lines
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("    ") && !l.starts_with("     "))
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

#[test]
fn devices_lists_every_option_each_parser_takes_within_100_columns() {
    let out = ok(&["devices"]);
    let listing = String::from_utf8_lossy(&out.stdout).into_owned();
    for line in listing.lines() {
        assert!(line.chars().count() <= 100, "wider than 100: {line}");
    }
    let check = |heading: &str, names: Vec<&str>| {
        let listed = rows(&listing, heading);
        assert_eq!(listed, names, "section '{heading}'");
    };
    for (preset, _) in presets() {
        let spec = ModelSpec::preset(preset).expect("preset");
        let mut names: Vec<&str> = spec.params().iter().map(|p| p.name).collect();
        if preset.starts_with("raid0") {
            names.insert(0, "member");
        }
        check(&format!("{preset}: "), names);
    }
    let recorded = RecordedParams::new(Arc::new(ServiceTimes::default()));
    check(
        "recorded: ",
        recorded.list().iter().map(|p| p.name).collect(),
    );
    let names = |table: &[(&'static str, &str, &str)]| table.iter().map(|t| t.0).collect();
    check(
        "Faults, on any model",
        names(&elevator_sim::device::fault::FAULT_PARAMS),
    );
    check("file:PATH: ", names(&elevator_io::spec::FILE_OPTIONS));
    check("mem:SIZE: ", names(&elevator_io::spec::MEM_OPTIONS));
    check(
        "Faults, on file: and mem:",
        names(&elevator_io::fault::FAULT_OPTIONS),
    );
}

#[test]
fn real_devices_without_a_size_or_path_and_misspelt_presets_say_what_exists() {
    let job = "examples/default.fio";
    fails_with(
        &["run", job, "--device", "mem"],
        "mem needs a size: mem:SIZE, e.g. mem:1g",
    );
    fails_with(
        &["run", job, "--device", "file"],
        "file needs a path: file:PATH",
    );
    fails_with(
        &["run", job, "--device", "hdd-7300"],
        "unknown device 'hdd-7300' (did you mean hdd-7200?)",
    );
    fails_with(
        &["run", job, "--device", "nvme,queue_dept=8"],
        "(did you mean queue_depth?)",
    );
    fails_with(
        &["run", job, "--device", "mem:1g,queue_dept=8"],
        "(did you mean queue_depth?)",
    );
}

#[test]
fn schedulers_lists_aliases_and_a_run_says_when_it_uses_one() {
    prints_all(
        &["schedulers"],
        &[
            "none: no tunables (alias: noop)",
            "mq-deadline: (alias: deadline)",
            "`--schedulers all` names every one",
        ],
    );
    let out = ok(&["run", "examples/default.fio", "--scheduler", "noop"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let note = "elevator: note: noop is Linux's old name for none; running none";
    assert_eq!(err.matches(note).count(), 1, "{err}");
    assert!(err.contains("elevator: none on "), "{err}");
    let out = ok(&[
        "compare",
        "--schedulers",
        "deadline,mq-deadline",
        "--output-format",
        "json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("deadline is Linux's old name for mq-deadline; running mq-deadline"),
        "{err}"
    );
    let json = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        json.matches("\"mq-deadline\"").count(),
        1,
        "run once: {json}"
    );
}

#[test]
fn unknown_schedulers_get_the_nearest_name_and_the_list_with_aliases() {
    fails_with(
        &["compare", "--schedulers", "none,cfqq"],
        "unknown scheduler 'cfqq' (did you mean cfq?); known: none (alias: noop), \
         mq-deadline (alias: deadline), deadline-rbtree",
    );
    fails_with(&["compare", "--schedulers", "none,cfqq"], "kyber, or all");
    fails_with(
        &["run", "examples/default.fio", "--scheduler", "all"],
        "--scheduler all: this command runs one scheduler",
    );
    fails_with(
        &["replay", "no-such.trace", "--scheduler", "kyberr"],
        "(did you mean kyber?)",
    );
}

#[test]
fn schedulers_all_runs_every_scheduler() {
    let out = ok(&["compare", "--schedulers", "all"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for name in SCHEDULER_NAMES {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing from:\n{text}"
        );
    }
}

#[test]
fn misspelt_tunables_get_the_nearest_name_in_every_command_that_takes_set() {
    let hint = "unknown tunable 'read_expir' for the queue or mq-deadline (did you mean \
                read_expire?)";
    fails_with(
        &["run", "examples/default.fio", "--set", "read_expir=100"],
        hint,
    );
    fails_with(
        &[
            "compare",
            "--schedulers",
            "mq-deadline",
            "--set",
            "read_expir=100",
        ],
        hint,
    );
    fails_with(
        &["replay", "no-such.trace", "--set", "read_expir=100"],
        hint,
    );
    fails_with(
        &[
            "advise",
            "--schedulers",
            "mq-deadline",
            "--set",
            "read_expir=100",
        ],
        hint,
    );
    fails_with(
        &["run", "examples/default.fio", "--set", "nr_request=64"],
        "(did you mean nr_requests?)",
    );
    // With no near name, what the run can set: the queue's tunables and
    // those every scheduler in it has.
    fails_with(
        &["compare", "--set", "colour=red"],
        "unknown tunable 'colour' for the queue or none, mq-deadline, deadline-list; known \
         here: nomerges, nr_requests, max_sectors_kb (`elevator schedulers` lists every one)",
    );
}

#[test]
fn a_tunable_of_schedulers_not_in_the_run_says_which_have_it() {
    let which = "unknown tunable 'slice_idle' for none, mq-deadline, deadline-list: it is a \
                 tunable of cfq and bfq only; run one of them (--scheduler cfq, or \
                 --schedulers cfq,bfq)";
    fails_with(&["compare", "--set", "slice_idle=0"], which);
    fails_with(
        &["run", "examples/default.fio", "--set", "slice_idle=0"],
        "unknown tunable 'slice_idle' for mq-deadline: it is a tunable of cfq and bfq only",
    );
    fails_with(
        &["advise", "--set", "slice_idle=0"],
        "it is a tunable of cfq and bfq only",
    );
    fails_with(
        &["run", "examples/default.fio", "--set", "submit_batch=4"],
        "it is the io engine's, on real devices only",
    );
    // Under the schedulers that have it, it runs.
    let out = elevator(&[
        "compare",
        "--schedulers",
        "cfq,bfq",
        "--set",
        "slice_idle=0",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn devices_says_a_capacity_in_gigabytes_too() {
    prints_all(
        &["devices"],
        &[
            "    capacity             1099511627776 bytes the device's size (1099.5 GB, 1024 GiB)",
            "    capacity             2000000000000 bytes the device's size (2000 GB, 1862.6 GiB)",
        ],
    );
}
