//! `elevator experiment merging`, `deadline-cost` and `direct-io` (seeds
//! 000, 002 and 001) end to end with `--quick`: each prints one JSON
//! document with its name, seed, title, data, the seed's shapes (claim, the
//! seed's figure, elevator's, holds) and notes, and the table otherwise.
//! Whether a timing shape holds is never checked: timing belongs to the
//! machine, not to the tests. Every line of the simulated tables (compare,
//! advise, experiment) fits in 100 columns.

use serde_json::Value;

use crate::common;
use common::ok;

/// `elevator experiment NAME --quick --output-format json`, parsed.
fn outcome(name: &str) -> Value {
    let out = ok(&["experiment", name, "--quick", "--output-format", "json"]);
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {text}"))
}

/// The outcome names the experiment and its seed and has `shapes` shapes,
/// each with every field set; returns the shapes.
fn check_outcome(v: &Value, name: &str, seed: &str, shapes: usize) -> Vec<Value> {
    assert_eq!(v["name"], name, "{v}");
    assert_eq!(v["seed"], seed, "{v}");
    assert!(!v["title"].as_str().unwrap_or("").is_empty(), "{v}");
    assert!(v["data"].is_object(), "{v}");
    assert!(v["notes"].is_array(), "{v}");
    let list = v["shapes"].as_array().expect("shapes array").clone();
    assert_eq!(list.len(), shapes, "{name}: {v}");
    for s in &list {
        for field in ["claim", "seed", "ours"] {
            let text = s[field].as_str().unwrap_or("");
            assert!(!text.is_empty(), "{name}: shape without {field}: {s}");
        }
        assert!(s["holds"].is_boolean(), "{name}: shape without holds: {s}");
    }
    list
}

#[test]
fn merging_reports_its_cases_and_shapes() {
    elevator_testkit::slow!();
    let v = outcome("merging");
    check_outcome(&v, "merging", "000", 4);
    let cases = v["data"]["cases"].as_array().expect("cases");
    // 3 schedulers × 2 patterns × nomerges 0, 1, 2.
    assert_eq!(cases.len(), 18, "{v}");
    for c in cases {
        assert!(c["ns_per_io"].as_f64().unwrap_or(0.0) > 0.0, "{c}");
    }
    // Merging is counted, not timed: sequential bios merge unless merging
    // is off, random ones never do.
    for c in cases {
        let merged = c["merged_pct"].as_f64().expect("merged_pct");
        match (c["pattern"].as_str(), c["nomerges"].as_u64()) {
            (Some("sequential"), Some(0)) => assert!(merged >= 90.0, "{c}"),
            (_, Some(2)) | (Some("random"), _) => assert!(merged < 1.0, "{c}"),
            _ => {}
        }
    }
}

#[test]
fn deadline_cost_reports_every_depth_and_its_shapes() {
    elevator_testkit::slow!();
    let v = outcome("deadline-cost");
    check_outcome(&v, "deadline-cost", "002", 6);
    let cases = v["data"]["cases"].as_array().expect("cases");
    let depths = v["data"]["depths"].as_array().expect("depths");
    assert!(depths.iter().any(|d| d == 4096), "{v}");
    assert_eq!(cases.len(), 3 * depths.len(), "{v}");
    for sched in ["deadline-list", "deadline-rbtree", "mq-deadline"] {
        assert!(
            cases.iter().filter(|c| c["scheduler"] == sched).count() == depths.len(),
            "{sched}: {v}"
        );
    }
}

#[test]
fn direct_io_runs_or_says_fio_is_missing() {
    let v = outcome("direct-io");
    let shapes = check_outcome(&v, "direct-io", "001", 3);
    if v["data"]["fio"].is_null() {
        // No fio here: the shapes say so and none is claimed to hold.
        for s in &shapes {
            assert_eq!(s["ours"], "not run: fio not found", "{s}");
            assert_eq!(s["holds"], false, "{s}");
        }
    } else {
        assert!(v["data"]["median"]["fio"]["iops"].as_f64().unwrap_or(0.0) > 0.0);
        for sched in ["none", "mq-deadline"] {
            let iops = v["data"]["median"]["elevator"][sched]["iops"].as_f64();
            assert!(iops.unwrap_or(0.0) > 0.0, "{sched}: {v}");
        }
    }
}

#[test]
fn the_table_ends_with_the_shapes_and_notes() {
    elevator_testkit::slow!();
    let out = ok(&["experiment", "merging", "--quick"]);
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    assert!(text.contains("nomerges"), "{text}");
    assert!(text.contains("Shapes seed 000 reported:"), "{text}");
    assert!(text.contains("shapes hold."), "{text}");
    assert!(text.contains("Note: "), "{text}");
    assert_fits(&text, "experiment merging --quick");
}

/// The widest line a person reads in a terminal.
const MAX_COLUMNS: usize = 100;

/// Every line of `text` is at most [`MAX_COLUMNS`] columns wide.
fn assert_fits(text: &str, what: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= MAX_COLUMNS,
            "{what}: a line of {} columns:\n{line}",
            line.chars().count()
        );
    }
}

#[test]
fn simulated_tables_fit_in_100_columns() {
    elevator_testkit::slow!();
    let commands: [&[&str]; 7] = [
        &["compare"],
        &[
            "compare",
            "examples/reader-beside-writers.fio",
            "--schedulers",
            "none,mq-deadline,bfq,kyber",
        ],
        &["advise", "examples/default.fio"],
        &[
            "advise",
            "examples/default.fio",
            "--goal",
            "p99",
            "--nomerges",
            "0,2",
        ],
        &[
            "advise",
            "examples/reader-beside-writers.fio",
            "--goal",
            "fairness",
        ],
        &["experiment", "cfq-idling", "--quick"],
        &[
            "experiment",
            "lock-scaling",
            "--quick",
            "--threads",
            "1,2",
            "--runtime",
            "0.1",
        ],
    ];
    for args in commands {
        let out = ok(args);
        let text = String::from_utf8(out.stdout).expect("UTF-8 output");
        assert_fits(&text, &args.join(" "));
    }
}
