//! `elevator run --report` and `elevator compare --report`: the HTML page
//! of any job's plots, written beside the normal output, and the errors a
//! report can meet. (The browser test, `report_browser.rs`, renders the
//! experiments' report; these check the pages' content.)

use crate::common;
use common::fio::TempDir;
use common::{fails_with, ok};

/// The `<figure>`s of a page, each with its inline SVG.
fn figures(html: &str) -> usize {
    let n = html.matches("<figure>").count();
    assert_eq!(
        html.matches("<figure><svg").count(),
        n,
        "a figure without its SVG"
    );
    n
}

#[test]
fn run_report_has_latency_throughput_and_timeline() {
    let dir = TempDir::new("run-report");
    let page = dir.file("run.html");
    let out = ok(&[
        "run",
        "examples/default.fio",
        "--device",
        "hdd-7200",
        "--report",
        &page,
    ]);
    // The normal output is unchanged by --report.
    assert!(String::from_utf8_lossy(&out.stdout).contains("Run status group"));
    let html = std::fs::read_to_string(&page).expect("the report");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(figures(&html), 4, "latency, throughput, timeline, heads");
    for title in [
        "Completion latency per job",
        "Throughput over time per job",
        "Who the device served",
        "Where the heads went",
    ] {
        assert!(html.contains(title), "no plot '{title}'");
    }
    // Every job of the default job file is named in the plots.
    assert!(html.contains("reader"), "jobs not named");
    assert!(!html.contains("<script"));
}

#[test]
fn compare_report_has_a_section_per_scheduler() {
    let dir = TempDir::new("compare-report");
    let page = dir.file("compare.html");
    ok(&["compare", "--schedulers", "none,bfq", "--report", &page]);
    let html = std::fs::read_to_string(&page).expect("the report");
    // Three side-by-side plots (latency, throughput, the heads on the
    // default hdd-7200), then three per scheduler.
    assert_eq!(figures(&html), 3 + 2 * 3);
    assert!(html.contains("Where the heads went per scheduler"));
    assert!(html.contains("id=\"none\"") && html.contains("id=\"bfq\""));
    assert!(html.contains("Completion latency per scheduler"));
}

#[test]
fn reports_that_cannot_be_written_say_where() {
    fails_with(
        &[
            "compare",
            "--schedulers",
            "none",
            "--report",
            "/nonexistent-dir/x.html",
        ],
        "--report /nonexistent-dir/x.html: cannot write it",
    );
    fails_with(&["experiment", "all", "--quick"], "give --out DIR");
}

#[test]
fn no_heads_without_a_disk() {
    elevator_testkit::slow!();
    let dir = TempDir::new("run-report-ssd");
    let page = dir.file("run.html");
    ok(&[
        "run",
        "examples/default.fio",
        "--device",
        "nvme",
        "--report",
        &page,
    ]);
    let html = std::fs::read_to_string(&page).expect("the report");
    assert_eq!(figures(&html), 3);
    assert!(!html.contains("Where the heads went"));
}

#[test]
fn one_experiment_writes_its_files_with_out() {
    elevator_testkit::slow!();
    let dir = TempDir::new("experiment-out");
    let out = dir.file("cfq");
    ok(&["experiment", "cfq-idling", "--out", &out]);
    for name in ["cfq-idling.txt", "cfq-idling.json", "report.html"] {
        assert!(
            dir.path().join("cfq").join(name).exists(),
            "{name} not written"
        );
    }
    let html = std::fs::read_to_string(dir.path().join("cfq/report.html")).expect("report");
    assert!(html.contains("id=\"cfq-idling\"") && figures(&html) > 5);
}
