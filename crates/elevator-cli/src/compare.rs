//! `elevator compare`: one workload under several schedulers, side by side,
//! and the closing lines that say which moved the most data, by how much
//! more than the one that moved the least, and what that did to p99
//! latency (ties go to the simplest scheduler,
//! [`elevator_run::advise::ranking::simplicity`]).

use std::fmt::Write;

use elevator_fio::result::RunResult;
use serde_json::{Value, json};

use elevator_fio::report::rate;
use elevator_fio::report::text::{iec, iops};
use elevator_run::advise::ranking::simplicity;

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
    // The device's description is long: on a line of its own when both
    // would not fit in 100 columns.
    if job.chars().count() + device.chars().count() + 4 > 100 {
        let _ = writeln!(out, "{job}\non {device}\n");
    } else {
        let _ = writeln!(out, "{job} on {device}\n");
    }
    if let Some(note) = runs.first().and_then(elevator_fio::report::no_time_note) {
        let _ = writeln!(out, "note: {note}\n");
    }
    let _ = writeln!(
        out,
        "{:<16} {:>9} {:>11} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7}",
        "scheduler", "IOPS", "BW", "avg ms", "p50 ms", "p99 ms", "max ms", "merged", "util"
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
    if let Some(most) = MostData::of(&rows) {
        let _ = write!(out, "\n{}", most.text());
    }
    out
}

/// What the closing lines say: the run that moved the most data (the
/// simplest scheduler among runs that moved the same), the one that moved
/// the least, and their p99 latencies.
struct MostData<'a> {
    most: &'a Row<'a>,
    least: &'a Row<'a>,
    /// The other schedulers whose BW prints as `most`'s.
    tied: Vec<&'a str>,
    /// The other schedulers whose BW prints as `least`'s.
    least_tied: Vec<&'a str>,
}

impl<'a> MostData<'a> {
    /// The figures of `rows`, when there are two or more and one moved data.
    fn of(rows: &'a [Row<'a>]) -> Option<MostData<'a>> {
        if rows.len() < 2 {
            return None;
        }
        let simplest =
            |a: &Row, b: &Row| simplicity(&a.run.scheduler).cmp(&simplicity(&b.run.scheduler));
        // Rows whose BW prints alike moved the same data: among them the
        // simplest scheduler is named.
        let alike = |a: &Row, b: &Row| iec(a.bw) == iec(b.bw);
        let top = rows.iter().max_by(|a, b| a.bw.total_cmp(&b.bw))?;
        let bottom = rows.iter().min_by(|a, b| a.bw.total_cmp(&b.bw))?;
        let most = rows
            .iter()
            .filter(|r| alike(r, top))
            .min_by(|a, b| simplest(a, b))?;
        let least = rows
            .iter()
            .filter(|r| alike(r, bottom))
            .min_by(|a, b| simplest(a, b))?;
        if most.bw <= 0.0 {
            return None;
        }
        let tied_with = |one: &Row| -> Vec<&'a str> {
            rows.iter()
                .filter(|r| alike(r, one) && !std::ptr::eq(*r, one))
                .map(|r| r.run.scheduler.as_str())
                .collect()
        };
        Some(MostData {
            most,
            least,
            tied: tied_with(most),
            least_tied: tied_with(least),
        })
    }

    /// How much more data `most` moved than `least`, in %.
    fn gain_percent(&self) -> f64 {
        percent_change(self.most.bw, self.least.bw)
    }

    /// How much higher (negative: lower) `most`'s p99 is than `least`'s, in %.
    fn p99_change_percent(&self) -> f64 {
        percent_change(self.most.p99 as f64, self.least.p99 as f64)
    }

    /// The closing lines.
    fn text(&self) -> String {
        let (most, least) = (&self.most.run.scheduler, &self.least.run.scheduler);
        if iec(self.most.bw) == iec(self.least.bw) {
            return format!(
                "Every scheduler moved the same data ({}/s).\n",
                iec(self.most.bw)
            );
        }
        let least_of = match self.least_tied.as_slice() {
            [] => "the least".to_string(),
            tied => format!("the least, as are {}", names(tied)),
        };
        let mut s = format!(
            "Most data: {most}, {:.1} % more than {least} ({least_of})",
            self.gain_percent()
        );
        match self.tied.as_slice() {
            [] => s.push_str(".\n"),
            tied => s.push_str(&format!("; {} the same.\n", names(tied))),
        }
        let change = self.p99_change_percent();
        let (p99_most, p99_least) = (ms(self.most.p99 as f64), ms(self.least.p99 as f64));
        let how = if self.most.p99 == self.least.p99 {
            "the same".to_string()
        } else if change > 0.0 {
            format!("{change:.1} % higher")
        } else {
            format!("{:.1} % lower", -change)
        };
        s.push_str(&format!(
            "p99 latency: {p99_most} ms under {most} vs {p99_least} ms under {least}, {how}.\n"
        ));
        s
    }

    /// The figures as JSON.
    fn json(&self) -> Value {
        json!({
            "scheduler": self.most.run.scheduler,
            "tied_with": self.tied,
            "least_scheduler": self.least.run.scheduler,
            "least_tied_with": self.least_tied,
            "bw_gain_percent": self.gain_percent(),
            "clat_p99_change_percent": self.p99_change_percent(),
        })
    }
}

/// (a − b) / b in %, 0 when b is 0.
fn percent_change(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { 100.0 * (a - b) / b }
}

/// "a", "a and b", "a, b and c".
fn names(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The comparison as JSON.
pub fn render_json(job: &str, device: &str, runs: &[RunResult]) -> Value {
    let rows: Vec<Row> = runs.iter().map(row).collect();
    let results: Vec<Value> = rows
        .iter()
        .map(|r| {
            let run = r.run;
            json!({
                "scheduler": run.scheduler,
                "iops": r.iops,
                "bw_bytes_per_s": r.bw,
                "clat_mean_ns": r.mean,
                "clat_p50_ns": r.p50,
                "clat_p99_ns": r.p99,
                "clat_max_ns": r.max,
                "bio_merges": run.queue.bio_merges(),
                "request_merges": run.queue.request_merges,
                "util_fraction": run.utilisation(),
                "elapsed_ns": run.elapsed,
                "ios": run.ios,
            })
        })
        .collect();
    json!({
        "job": job,
        "device": device,
        "results": results,
        "most_data": MostData::of(&rows).map(|m| m.json()),
    })
}
