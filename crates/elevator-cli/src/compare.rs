//! `elevator compare`: one workload under several schedulers, side by side.

use std::fmt::Write;

use elevator_fio::result::RunResult;
use serde_json::{Value, json};

use elevator_fio::report::rate;
use elevator_fio::report::text::{iec, iops};

/// Totals of one run, for a row of the comparison.
pub struct Row<'a> {
    /// The run.
    pub run: &'a RunResult,
    /// Reads and writes (and trims) completed per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw: f64,
    /// Completion latency percentiles over every I/O, ns.
    pub p50: u64,
    /// See `p50`.
    pub p99: u64,
    /// Largest completion latency, ns.
    pub max: u64,
    /// Mean completion latency, ns.
    pub mean: f64,
}

/// The row for `run`.
pub fn row(run: &RunResult) -> Row<'_> {
    let mut all = elevator_core::Histogram::new();
    let (mut ios, mut bytes) = (0, 0);
    for j in &run.jobs {
        for d in &j.dirs {
            all.merge(&d.clat);
            ios += d.ios;
            bytes += d.bytes;
        }
    }
    Row {
        run,
        iops: rate(ios, run.elapsed),
        bw: rate(bytes, run.elapsed),
        p50: all.percentile(50.0),
        p99: all.percentile(99.0),
        max: all.max(),
        mean: all.mean(),
    }
}

fn ms(ns: f64) -> String {
    format!("{:.2}", ns / 1e6)
}

/// The table.
pub fn render(job: &str, device: &str, runs: &[RunResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{job} on {device}\n");
    if let Some(note) = runs.first().and_then(elevator_fio::report::no_time_note) {
        let _ = writeln!(out, "note: {note}\n");
    }
    let _ = writeln!(
        out,
        "{:<16} {:>9} {:>11} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7}",
        "scheduler", "IOPS", "BW", "lat avg", "p50 ms", "p99 ms", "max ms", "merged", "util"
    );
    let rows: Vec<Row> = runs.iter().map(row).collect();
    for r in &rows {
        let q = &r.run.queue;
        let merged = 100.0 * q.bio_merges() as f64 / q.bios.max(1) as f64;
        let _ = writeln!(
            out,
            "{:<16} {:>9} {:>9}/s {:>9} {:>9} {:>9} {:>9} {:>7.1}% {:>6.1}%",
            r.run.scheduler,
            iops(r.iops),
            iec(r.bw),
            ms(r.mean),
            ms(r.p50 as f64),
            ms(r.p99 as f64),
            ms(r.max as f64),
            merged,
            r.run.utilisation() * 100.0
        );
    }
    if let Some(best) = rows.iter().max_by(|a, b| a.bw.total_cmp(&b.bw))
        && let Some(worst) = rows.iter().min_by(|a, b| a.bw.total_cmp(&b.bw))
        && worst.bw > 0.0
        && rows.len() > 1
    {
        let _ = writeln!(
            out,
            "\n{} moves {:.2}x the data of {} on this workload.",
            best.run.scheduler,
            best.bw / worst.bw,
            worst.run.scheduler
        );
    }
    out
}

/// The comparison as JSON.
pub fn render_json(job: &str, device: &str, runs: &[RunResult]) -> Value {
    let results: Vec<Value> = runs
        .iter()
        .map(|run| {
            let r = row(run);
            json!({
                "scheduler": run.scheduler,
                "iops": r.iops,
                "bw_bytes": r.bw,
                "clat_ns": {"mean": r.mean, "p50": r.p50, "p99": r.p99, "max": r.max},
                "merges": run.queue.bio_merges(),
                "request_merges": run.queue.request_merges,
                "util": run.utilisation(),
                "simulated_ns": run.elapsed,
                "ios": run.ios,
            })
        })
        .collect();
    json!({
        "job": job,
        "device": device,
        "results": results,
    })
}
