//! The report of `elevator replay`, as text and JSON: what elevator's queue
//! did (bios, merges, splits, requests and their sizes, btt's intervals,
//! latency percentiles per operation) and, where the trace holds the
//! recording system's own events, its counts beside elevator's.

use std::io::Write;

use anyhow::Result;
use elevator_core::{Op, Summary, TraceAction};
use elevator_run::replay::ReplayRun;
use elevator_trace::DevT;
use elevator_trace::analyze::Analysis;
use elevator_trace::reorder::{ReorderWindow, micros};
use elevator_trace::replay::Timing;
use serde_json::{Value, json};

use crate::replay::EventsArg;

/// Everything the report shows: the replay's options and what it gave.
pub struct Report {
    /// The trace's name.
    pub trace: String,
    /// The scheduler.
    pub scheduler: String,
    /// `--set` options as given.
    pub tunables: Vec<String>,
    /// Which events were replayed.
    pub events: EventsArg,
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
type Row = (&'static str, &'static str, fn(&Analysis) -> u64);

const ROWS: [Row; 13] = [
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
type Interval = (&'static str, fn(&Analysis) -> &Summary);

const INTERVALS: [Interval; 7] = [
    ("Q2G", |a| &a.q2g),
    ("G2I", |a| &a.g2i),
    ("I2D", |a| &a.i2d),
    ("Q2M", |a| &a.q2m),
    ("Q2D", |a| &a.q2d),
    ("D2C", |a| &a.d2c),
    ("Q2C", |a| &a.q2c),
];

/// The Q2C percentiles shown, with their JSON keys.
const PERCENTILES: [(f64, &str); 5] = [
    (50.0, "p50"),
    (90.0, "p90"),
    (99.0, "p99"),
    (99.9, "p99_9"),
    (100.0, "max"),
];

fn dev_text(dev: DevT) -> String {
    format!("{},{}", dev >> 20, dev & 0xfffff)
}

fn timing_text(t: &Timing) -> String {
    match t {
        Timing::Recorded(s) if *s == 1.0 => "recorded".into(),
        Timing::Recorded(s) => format!("recorded x{s}"),
        Timing::Asap => "asap".into(),
        Timing::Depth(n) => format!("closed loop, depth {n}"),
    }
}

/// The recording's value of row `i`: plugs come from the device-less
/// records.
fn recorded_value(r: &Report, i: usize) -> Option<u64> {
    let (label, _, f) = ROWS[i];
    if label.starts_with('P') || label.starts_with('U') {
        return r.run.recorded_plugs.as_ref().map(f);
    }
    r.run.recorded.as_ref().map(f)
}

fn secs(ns: f64) -> f64 {
    ns / 1e9
}

/// Print the report as text.
pub fn print_text(r: &Report, out: &mut dyn Write) -> Result<()> {
    let res = &r.run.result;
    let a = &res.analysis;
    writeln!(
        out,
        "replay: {} (device {}, {} records), {} events, timing {}",
        r.trace,
        dev_text(r.dev),
        r.run.records,
        match r.events {
            EventsArg::Q => "Q",
            EventsArg::D => "D",
        },
        timing_text(&r.timing)
    )?;
    let sets = if r.tunables.is_empty() {
        String::new()
    } else {
        format!(", {}", r.tunables.join(" "))
    };
    writeln!(
        out,
        "  on {}, scheduler {}{}",
        r.run.device, r.scheduler, sets
    )?;
    writeln!(
        out,
        "  bios {} (left out as bad: {} bios, {} lines), {:.6} s {}, {} queue events",
        res.bios,
        res.skipped,
        r.run.skipped_lines,
        secs(res.elapsed as f64),
        if r.run.real { "real" } else { "simulated" },
        res.events
    )?;
    let reordered = r.run.reordered;
    if reordered.records > 0 {
        writeln!(
            out,
            "  reordered: {} records, largest inversion {} µs (--reorder-window {})",
            reordered.records,
            micros(reordered.largest_inversion_ns),
            r.reorder_window
        )?;
    }
    writeln!(
        out,
        "  the recording's plugs replayed: {} ({} steps waited behind another task's plug)",
        res.plugs, res.waited
    )?;
    let cpu = r.run.cpu_ns.max(1) as f64 / 1e9;
    writeln!(
        out,
        "  host CPU {:.3} s: {:.2} M trace records/s, {:.2} M queue events/s",
        cpu,
        r.run.records as f64 / cpu / 1e6,
        res.events as f64 / cpu / 1e6
    )?;
    writeln!(out)?;
    if r.run.recorded.is_some() {
        writeln!(
            out,
            "  {:<24} {:>10} {:>10} {:>7}",
            "event", "recorded", "elevator", "ratio"
        )?;
    } else {
        writeln!(out, "  {:<24} {:>10}", "event", "elevator")?;
    }
    for (i, (label, _, f)) in ROWS.iter().enumerate() {
        let mine = f(a);
        match recorded_value(r, i) {
            Some(k) => {
                let ratio = if k == 0 {
                    if mine == 0 {
                        "1.000".into()
                    } else {
                        "-".into()
                    }
                } else {
                    format!("{:.3}", mine as f64 / k as f64)
                };
                let note = if label.starts_with('P') || label.starts_with('U') {
                    "  (recorded: all devices)"
                } else {
                    ""
                };
                writeln!(out, "  {label:<24} {k:>10} {mine:>10} {ratio:>7}{note}")?;
            }
            None => writeln!(out, "  {label:<24} {mine:>10}")?,
        }
    }
    writeln!(out)?;
    writeln!(out, "  bytes: queued / issued, by operation")?;
    for (i, op) in Op::ALL.iter().enumerate() {
        let (q, d) = (a.queued[i], a.issued[i]);
        if q.count + d.count > 0 {
            writeln!(
                out,
                "    {:<13} {:>8} bios {:>14} B | {:>8} requests {:>14} B",
                op.name(),
                q.count,
                q.bytes,
                d.count,
                d.bytes
            )?;
        }
    }
    writeln!(out, "  issued request sizes (top 10):")?;
    for ((op, bytes), n) in a.issue_sizes.iter().take(10) {
        writeln!(out, "    {:<13} {:>10} B {:>8}", op.name(), bytes, n)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "  btt intervals (s)   {:>12} {:>12} {:>12} {:>9}",
        "min", "avg", "max", "N"
    )?;
    for (name, f) in INTERVALS {
        let s = f(a);
        if s.count == 0 {
            continue;
        }
        writeln!(
            out,
            "    {:<17} {:>12.9} {:>12.9} {:>12.9} {:>9}",
            name,
            secs(s.min() as f64),
            secs(s.mean()),
            secs(s.max() as f64),
            s.count
        )?;
        if let Some(k) = &r.run.recorded {
            let s = f(k);
            if s.count > 0 {
                writeln!(
                    out,
                    "    {:<17} {:>12.9} {:>12.9} {:>12.9} {:>9}",
                    format!("  (recorded {name})"),
                    secs(s.min() as f64),
                    secs(s.mean()),
                    secs(s.max() as f64),
                    s.count
                )?;
            }
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "  Q2C per bio (us)    {:>10} {:>10} {:>10} {:>10} {:>10}",
        "p50", "p90", "p99", "p99.9", "max"
    )?;
    for (i, op) in Op::ALL.iter().enumerate() {
        let Some(h) = a.q2c_by_op.get(i) else {
            continue;
        };
        if h.count() == 0 {
            continue;
        }
        write!(out, "    {:<17}", op.name())?;
        for (p, _) in PERCENTILES {
            write!(out, " {:>10.1}", h.percentile(p) as f64 / 1e3)?;
        }
        writeln!(out)?;
    }
    if a.forgotten > 0 {
        writeln!(
            out,
            "  note: {} bios or requests were never seen completing and were forgotten",
            a.forgotten
        )?;
    }
    if !a.unplug_depths.is_empty() {
        let depths: Vec<String> = a
            .unplug_depths
            .iter()
            .map(|(d, n)| format!("{d}:{n}"))
            .collect();
        writeln!(out, "  unplug depths (depth:count): {}", depths.join(" "))?;
    }
    Ok(())
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

/// Print the report as JSON.
pub fn print_json(r: &Report, out: &mut dyn Write) -> Result<()> {
    let res = &r.run.result;
    let mut recorded = r.run.recorded.as_ref().map(analysis_json);
    if let (Some(Value::Object(m)), Some(p)) = (recorded.as_mut(), &r.run.recorded_plugs) {
        m.insert(
            "plugs_all_devices".into(),
            json!({"plugs": p.count(TraceAction::Plug), "unplugs": p.count(TraceAction::Unplug)}),
        );
    }
    let v = json!({
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
        "events": match r.events { EventsArg::Q => "Q", EventsArg::D => "D" },
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
    });
    serde_json::to_writer_pretty(&mut *out, &v)?;
    writeln!(out)?;
    Ok(())
}
