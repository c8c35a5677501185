//! The JSON documents a run gives, rendered once for every front end (the
//! `elevator` command's `--output-format json`, the Python package's
//! `Result.json`): a run's fio JSON ([`run_json`]) with the write log's
//! check when there is one ([`with_write_log`]); a replay's report
//! ([`replay::replay_json`]); advice ([`advice_json`]).

pub mod replay;

use elevator_fio::job::JobFile;
use elevator_fio::report;
use elevator_sim::device::WriteLogReport;

use serde_json::{Value, json};

use crate::advise::ranking::Advice;
use crate::jobs::JobsRun;

/// `run`'s fio JSON report (`elevator run --output-format json`, byte for
/// byte: `device` is the `--device` as given), with the write log's
/// `write_log` object when the run has one (`write_log`: its file, if
/// any).
pub fn run_json(
    jobs: &JobFile,
    run: &JobsRun,
    device: &str,
    write_log: Option<&std::path::Path>,
) -> String {
    let rendered = report::render(report::Format::Json, jobs, &run.result, device);
    match &run.write_log {
        Some(wl) => with_write_log(&rendered, wl, write_log),
        None => rendered,
    }
}

/// fio's JSON report `json` with a `write_log` field: the write log's
/// summary and figures. The report is returned as it was if it is not a
/// JSON object.
pub fn with_write_log(
    json: &str,
    report: &WriteLogReport,
    path: Option<&std::path::Path>,
) -> String {
    let Ok(serde_json::Value::Object(mut top)) = serde_json::from_str::<serde_json::Value>(json)
    else {
        return json.to_string();
    };
    let check = report.check.as_ref();
    let faults = report.faults.map(|f| {
        serde_json::json!({
            "lse_reads": f.lse_reads,
            "lse_repaired": f.lse_repaired,
            "torn": f.torn,
            "misdirected": f.misdirected,
            "spikes": f.spikes,
            "timeouts": f.timeouts,
            "offline": f.offline,
        })
    });
    top.insert(
        "write_log".to_string(),
        serde_json::json!({
            "file": path.map(|p| p.display().to_string()),
            "summary": report.summary(),
            "records": report.records,
            "writes": report.writes,
            "recorded_writes": report.recorded_writes,
            "checked_at_s": report.checked_at as f64 / 1e9,
            "power_cut": report.gone.is_some_and(|g| g.power_cut),
            "vanished": report.gone.is_some_and(|g| !g.power_cut),
            "lost_writes": check.map(|c| c.lost_writes),
            "lost_sectors": check.map(|c| c.lost_sectors),
            "required_writes": check.map(|c| c.required_writes),
            "check": match check {
                None => "not tracked",
                Some(c) if c.violations == 0 => "passed",
                Some(_) => "failed",
            },
            "violations": check.map(|c| c.violations),
            "faults": faults,
        }),
    );
    let mut out = serde_json::to_string_pretty(&serde_json::Value::Object(top))
        .unwrap_or_else(|_| json.to_string());
    out.push('\n');
    out
}

/// Every run's figures and the ranking as JSON (`elevator advise
/// --output-format json`).
pub fn advice_json(a: &Advice) -> Value {
    let runs: Vec<Value> = a
        .ranked
        .iter()
        .zip(a.ranks())
        .enumerate()
        .map(|(i, (m, rank))| {
            let shares: Vec<Value> = m
                .shares
                .iter()
                .map(|(who, v)| json!({"name": who, "value": v}))
                .collect();
            json!({
                "rank": rank,
                "position": i + 1,
                "scheduler": m.scheduler,
                "nomerges": m.nomerges,
                "throughput_bytes_per_s": m.throughput,
                "read_p99_ns": m.read_p99,
                "write_p99_ns": m.write_p99,
                "goal_p99_ns": m.goal_p99,
                "fairness": m.fairness,
                "shares": shares,
                "shares_are": if a.trace() { "mean_latency_ns" } else { "throughput_share_of_alone" },
                "ios": m.ios,
                "elapsed_ns": m.elapsed,
            })
        })
        .collect();
    json!({
        "workload": a.workload,
        "kind": a.kind,
        "device": a.device,
        "goal": a.goal.name(),
        "goal_definition": a.goal.definition(a.trace()),
        "best": a.ranked.first().map(|m| json!({"scheduler": m.scheduler, "nomerges": m.nomerges})),
        "explanation": a.explanation(),
        "runs": runs,
    })
}
