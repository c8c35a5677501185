//! `elevator advise` end to end on simulated devices (deterministic; no
//! timing): workloads with a known best answer rank as expected, the
//! explanation carries the numbers, the JSON ranks as the table does, a
//! trace is advised on as a job is, and bad input is a clear error.

use serde_json::Value;

use crate::common;
use common::fio::TempDir;
use common::{fails_with, ok};

const READER_WRITERS: &str = "examples/reader-beside-writers.fio";
const RANDREAD_QD32: &str = "crates/elevator-cli/tests/jobs/advise-randread-qd32.fio";

fn stdout(args: &[&str]) -> String {
    String::from_utf8(ok(args).stdout).expect("UTF-8 output")
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--output-format", "json"]);
    serde_json::from_str(&stdout(&all)).expect("advise's JSON parses")
}

/// The schedulers of the table's rows (the lines after its `rank` header,
/// up to the blank line), in rank order.
fn table_order(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|line| !line.trim_start().starts_with("rank"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let rank = words.next()?;
            rank.parse::<u32>().ok()?;
            words.next().map(str::to_string)
        })
        .collect()
}

fn runs(v: &Value) -> &Vec<Value> {
    v["runs"].as_array().expect("runs")
}

#[test]
fn a_fair_scheduler_wins_fairness_for_a_reader_beside_random_writers_on_hdd() {
    let args = [
        "advise",
        READER_WRITERS,
        "--device",
        "hdd-7200",
        "--goal",
        "fairness",
    ];
    let v = json(&args);
    let best = v["best"]["scheduler"].as_str().expect("best scheduler");
    assert!(
        best == "bfq" || best == "cfq",
        "fairness should go to bfq or cfq, not {best}: {v}"
    );
    // Both fair schedulers beat every other on the goal's figure.
    let fairness = |name: &str| {
        runs(&v)
            .iter()
            .find(|r| r["scheduler"] == name)
            .and_then(|r| r["fairness"].as_f64())
            .expect("a run's fairness")
    };
    for other in [
        "none",
        "mq-deadline",
        "deadline-list",
        "deadline-rbtree",
        "kyber",
    ] {
        assert!(fairness("bfq") > fairness(other), "bfq vs {other}: {v}");
        assert!(fairness("cfq") > fairness(other), "cfq vs {other}: {v}");
    }
    let text = stdout(&args);
    assert_eq!(table_order(&text).first().map(String::as_str), Some(best));
    assert!(text.contains("fairness: Jain's index"), "{text}");
    assert!(text.contains(&format!("{best} ranks first")), "{text}");
}

#[test]
fn throughput_on_an_ssd_ranks_every_scheduler_and_explains_with_numbers() {
    let args = [
        "advise",
        RANDREAD_QD32,
        "--device",
        "ssd-sata",
        "--goal",
        "throughput",
    ];
    let text = stdout(&args);
    let order = table_order(&text);
    assert_eq!(order.len(), 7, "{text}");
    // Every scheduler: none, mq-deadline, deadline-rbtree, deadline-list,
    // cfq, bfq and kyber.
    for name in elevator_core::SCHEDULER_NAMES {
        assert!(order.iter().any(|s| s == name), "{name} missing: {text}");
    }
    let v = json(&args);
    let bw: Vec<f64> = runs(&v)
        .iter()
        .map(|r| r["throughput_bytes_per_s"].as_f64().expect("throughput"))
        .collect();
    let top = bw.iter().cloned().fold(0.0, f64::max);
    // The first is the best or within 2 % of it, and cfq, which idles
    // between its queues' slices, is not first.
    assert!(bw[0] >= 0.98 * top, "{bw:?}");
    assert_ne!(order[0], "cfq", "{text}");
    // The explanation names the winner, says the figures, and the tie.
    let explanation = v["explanation"].as_str().expect("explanation");
    assert!(explanation.contains(&order[0]), "{explanation}");
    assert!(explanation.contains("MiB/s"), "{explanation}");
    assert!(explanation.contains("hardly matters"), "{explanation}");
    // The text says the same, wrapped.
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words(&text).contains(&words(explanation)), "{text}");
}

#[test]
fn json_ranks_as_the_table_does_with_every_nomerges_setting() {
    let args = [
        "advise",
        RANDREAD_QD32,
        "--device",
        "nvme",
        "--goal",
        "p99",
        "--schedulers",
        "none,mq-deadline,bfq",
        "--nomerges",
        "0,2",
    ];
    let v = json(&args);
    let table = table_order(&stdout(&args));
    let ranked: Vec<String> = runs(&v)
        .iter()
        .map(|r| r["scheduler"].as_str().expect("scheduler").to_string())
        .collect();
    assert_eq!(ranked, table);
    assert_eq!(ranked.len(), 6);
    // Each run's place; its rank is its place, or the rank of the run
    // before it when both show the same figures.
    for (i, r) in runs(&v).iter().enumerate() {
        assert_eq!(r["position"].as_u64(), Some(i as u64 + 1));
        let rank = r["rank"].as_u64().expect("rank");
        assert!(rank <= i as u64 + 1, "{v}");
    }
    // Ranked by the p99 goal: the first's is the lowest, within noise.
    let p99: Vec<f64> = runs(&v)
        .iter()
        .map(|r| r["goal_p99_ns"].as_f64().expect("p99"))
        .collect();
    let lowest = p99.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(p99[0] <= 1.02 * lowest, "{p99:?}");
    assert_eq!(v["best"]["scheduler"].as_str(), Some(ranked[0].as_str()));
    assert_eq!(v["goal"], "p99");
}

#[test]
fn a_trace_is_advised_on_per_submitter() {
    let dir = TempDir::new("advise-trace");
    let trace = dir.path().join("gen.trace");
    let trace = trace.to_str().expect("UTF-8 path");
    ok(&["replay", "--generate", "3000", trace]);
    let v = json(&[
        "advise", trace, "--device", "hdd-7200", "--goal", "fairness",
    ]);
    assert_eq!(v["kind"], "trace");
    assert_eq!(runs(&v).len(), 7);
    let first = &runs(&v)[0];
    assert!(
        first["shares"].as_array().is_some_and(|s| s.len() > 1),
        "{v}"
    );
    assert_eq!(first["shares_are"], "mean_latency_ns");
}

#[test]
fn bad_input_is_a_clear_error() {
    let refused: [(&[&str], &str); 7] = [
        (
            &["advise", RANDREAD_QD32, "--goal", "speed"],
            "invalid value 'speed' for '--goal",
        ),
        (
            &["advise", RANDREAD_QD32, "--schedulers", "none,elevator9"],
            "elevator9",
        ),
        (
            &["advise", RANDREAD_QD32, "--device", "floppy"],
            "unknown device 'floppy'",
        ),
        (
            &["advise", RANDREAD_QD32, "--device", "mem:64m"],
            "simulated devices only",
        ),
        (
            &["advise", RANDREAD_QD32, "--nomerges", "3"],
            "--nomerges 3",
        ),
        (&["advise", "no/such/job.fio"], "no/such/job.fio"),
        (&["advise", "-"], "not standard input"),
    ];
    for (args, needle) in refused {
        fails_with(args, needle);
    }
}
