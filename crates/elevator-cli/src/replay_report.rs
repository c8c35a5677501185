//! The report of `elevator replay`, as text and JSON: what elevator's queue
//! did (bios, merges, splits, requests and their sizes, btt's intervals,
//! latency percentiles per operation) and, where the trace holds the
//! recording system's own events, its counts beside elevator's.

use std::io::Write;

use anyhow::Result;
use elevator_core::Op;
pub use elevator_run::json::replay::ReplayReport as Report;
use elevator_run::json::replay::{
    INTERVALS, PERCENTILES, ROWS, dev_text, replay_json, secs, timing_text,
};
use elevator_trace::reorder::micros;
use elevator_trace::replay::Events;

/// The recording's value of row `i`: plugs come from the device-less
/// records.
fn recorded_value(r: &Report, i: usize) -> Option<u64> {
    let (label, _, f) = ROWS[i];
    if label.starts_with('P') || label.starts_with('U') {
        return r.run.recorded_plugs.as_ref().map(f);
    }
    r.run.recorded.as_ref().map(f)
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
            Events::Queued => "Q",
            Events::Issued => "D",
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

/// Print the report as JSON ([`replay_json`]).
pub fn print_json(r: &Report, out: &mut dyn Write) -> Result<()> {
    let v = replay_json(r);
    serde_json::to_writer_pretty(&mut *out, &v)?;
    writeln!(out)?;
    Ok(())
}
