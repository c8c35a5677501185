//! `elevator replay`'s report as JSON ([`replay_json`]), and what its text
//! shares with it: the side-by-side rows ([`ROWS`]), btt's intervals
//! ([`INTERVALS`]), the latency percentiles ([`PERCENTILES`]).

use elevator_core::{Op, Summary, TraceAction};
use elevator_trace::DevT;
use elevator_trace::analyze::Analysis;
use elevator_trace::reorder::ReorderWindow;
use elevator_trace::replay::{Events, Timing};
use serde_json::{Value, json};

use crate::replay::ReplayRun;

/// Everything the report shows: the replay's options and what it gave.
#[derive(Debug)]
pub struct ReplayReport {
    /// The trace's name.
    pub trace: String,
    /// The scheduler.
    pub scheduler: String,
    /// `--set` options as given.
    pub tunables: Vec<String>,
    /// Which events were replayed.
    pub events: Events,
    /// Timing.
    pub timing: Timing,
    /// The trace's device replayed.
    pub dev: DevT,
    /// The text readers' reorder window.
    pub reorder_window: ReorderWindow,
    /// What the replay gave.
    pub run: ReplayRun,
}

/// A row of the side-by-side table: label, JSON key and how to count it.
pub type Row = (&'static str, &'static str, fn(&Analysis) -> u64);

/// The side-by-side table's rows: label, JSON key, how to count.
pub const ROWS: [Row; 13] = [
    ("Q  bios queued", "bios_queued", |a| {
        a.count(TraceAction::Queue)
    }),
    ("M  back merges", "back_merges", |a| {
        a.count(TraceAction::BackMerge)
    }),
    ("F  front merges", "front_merges", |a| {
        a.count(TraceAction::FrontMerge)
    }),
    ("   request merges", "request_merges", |a| {
        a.count(TraceAction::RqMerge)
    }),
    ("X  splits", "splits", |a| a.count(TraceAction::Split)),
    ("G  requests allocated", "requests_allocated", |a| {
        a.count(TraceAction::GetRq)
    }),
    ("I  requests inserted", "requests_inserted", |a| {
        a.count(TraceAction::Insert)
    }),
    ("D  requests issued", "requests_issued", |a| {
        a.count(TraceAction::Issue)
    }),
    ("   of which flushes", "flushes_issued", |a| a.flush_issues),
    ("C  completions", "completions", |a| {
        a.count(TraceAction::Complete)
    }),
    ("R  requeues", "requeues", |a| a.count(TraceAction::Requeue)),
    ("P  plugs", "plugs", |a| a.count(TraceAction::Plug)),
    ("U  unplugs", "unplugs", |a| a.count(TraceAction::Unplug)),
];

/// An interval of btt's: name (its JSON key in lower case) and where the
/// analysis keeps it.
pub type Interval = (&'static str, fn(&Analysis) -> &Summary);

/// btt's intervals shown.
pub const INTERVALS: [Interval; 7] = [
    ("Q2G", |a| &a.q2g),
    ("G2I", |a| &a.g2i),
    ("I2D", |a| &a.i2d),
    ("Q2M", |a| &a.q2m),
    ("Q2D", |a| &a.q2d),
    ("D2C", |a| &a.d2c),
    ("Q2C", |a| &a.q2c),
];

/// The Q2C percentiles shown, with their JSON keys.
pub const PERCENTILES: [(f64, &str); 5] = [
    (50.0, "p50"),
    (90.0, "p90"),
    (99.0, "p99"),
    (99.9, "p99_9"),
    (100.0, "max"),
];

/// A device number as `MAJ,MIN`.
pub fn dev_text(dev: DevT) -> String {
    format!("{},{}", dev >> 20, dev & 0xfffff)
}

/// A replay's timing as the report writes it.
pub fn timing_text(t: &Timing) -> String {
    match t {
        Timing::Recorded(s) if *s == 1.0 => "recorded".into(),
        Timing::Recorded(s) => format!("recorded x{s}"),
        Timing::Asap => "asap".into(),
        Timing::Depth(n) => format!("closed loop, depth {n}"),
    }
}

/// Nanoseconds as seconds.
pub fn secs(ns: f64) -> f64 {
    ns / 1e9
}

fn summary_json(s: &Summary) -> Value {
    json!({
        "min_s": secs(s.min() as f64),
        "avg_s": secs(s.mean()),
        "max_s": secs(s.max() as f64),
        "count": s.count,
    })
}

fn analysis_json(a: &Analysis) -> Value {
    let counts: serde_json::Map<String, Value> = ROWS
        .iter()
        .map(|(_, key, f)| (key.to_string(), json!(f(a))))
        .collect();
    let intervals: serde_json::Map<String, Value> = INTERVALS
        .iter()
        .map(|(name, f)| (name.to_lowercase(), summary_json(f(a))))
        .collect();
    let by_op: serde_json::Map<String, Value> = Op::ALL
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let h = a.q2c_by_op.get(i);
            let pct: serde_json::Map<String, Value> = PERCENTILES
                .iter()
                .map(|(p, key)| (key.to_string(), json!(h.map_or(0, |h| h.percentile(*p)))))
                .collect();
            (
                op.name().replace('-', "_"),
                json!({
                    "queued": {"count": a.queued[i].count, "bytes": a.queued[i].bytes},
                    "issued": {"count": a.issued[i].count, "bytes": a.issued[i].bytes},
                    "q2c_percentiles_ns": pct,
                }),
            )
        })
        .collect();
    json!({
        "counts": counts,
        "intervals": intervals,
        "ops": by_op,
        "issue_sizes": a.issue_sizes.iter().take(32).map(|((op, b), n)| json!({"op": op.name(), "bytes": b, "count": n})).collect::<Vec<_>>(),
        "forgotten": a.forgotten,
        "untallied": a.untallied,
        "unplug_depths": a.unplug_depths.iter().map(|(d, n)| json!({"depth": d, "count": n})).collect::<Vec<_>>(),
    })
}

/// The report as JSON (`elevator replay --output-format json`).
pub fn replay_json(r: &ReplayReport) -> Value {
    let res = &r.run.result;
    let mut recorded = r.run.recorded.as_ref().map(analysis_json);
    if let (Some(Value::Object(m)), Some(p)) = (recorded.as_mut(), &r.run.recorded_plugs) {
        m.insert(
            "plugs_all_devices".into(),
            json!({"plugs": p.count(TraceAction::Plug), "unplugs": p.count(TraceAction::Unplug)}),
        );
    }
    json!({
        "trace": r.trace,
        "dev": dev_text(r.dev),
        "records": r.run.records,
        "skipped_lines": r.run.skipped_lines,
        "reordered": {
            "records": r.run.reordered.records,
            "largest_inversion_us": r.run.reordered.largest_inversion_ns as f64 / 1e3,
            "window": r.reorder_window.to_string(),
        },
        "device": r.run.device,
        "scheduler": r.scheduler,
        "set": r.tunables,
        "events": match r.events { Events::Queued => "Q", Events::Issued => "D" },
        "timing": timing_text(&r.timing),
        "bios": res.bios,
        "skipped_bios": res.skipped,
        "elapsed_s": secs(res.elapsed as f64),
        "queue_events": res.events,
        "plugs_replayed": res.plugs,
        "steps_waited_behind_plugs": res.waited,
        "host_cpu_s": r.run.cpu_ns as f64 / 1e9,
        "clock": if r.run.real { "real" } else { "simulated" },
        "elevator": analysis_json(&res.analysis),
        "recorded": recorded,
    })
}
