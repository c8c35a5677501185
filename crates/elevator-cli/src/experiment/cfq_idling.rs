//! `elevator experiment cfq-idling` reproduces the 2011 report on CFQ's idling (LKML, "CFQ: fixing performance
//! issues"): eight processes writing 4 KiB O_DIRECT blocks round-robin over
//! four 16 MiB files each (`examples/seed004.fio`), once on a 7200 rpm disk
//! with no think time, once on an eight-disk RAID-0 with 1 ms of think time
//! per batch of four, under noop, CFQ as in 2011, CFQ with `slice_idle=0`,
//! CFQ with elevator's fix, BFQ, mq-deadline and Kyber.

use std::io::{IsTerminal, Write};

use anyhow::{Context, Result};
use elevator_core::{Histogram, Nanos};
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::result::RunResult;
use elevator_sim::device::ModelSpec;
use elevator_sim::engine::run as simulate;
use serde::Serialize;

use super::Args;
use crate::run::OutputFormat;
use elevator_fio::report::rate;

/// The shipped job file of the 2011 CFQ idling report's workload.
const SEED004: (&str, &str) = (
    "examples/seed004.fio",
    include_str!("../../../../examples/seed004.fio"),
);

/// One row: a scheduler with some tunables.
struct Variant {
    label: &'static str,
    scheduler: &'static str,
    tunables: &'static [(&'static str, &'static str)],
}

const VARIANTS: [Variant; 7] = [
    Variant {
        label: "none (noop)",
        scheduler: "none",
        tunables: &[],
    },
    Variant {
        label: "cfq (2011)",
        scheduler: "cfq",
        tunables: &[("deep_seeky_idle", "1")],
    },
    Variant {
        label: "cfq slice_idle=0",
        scheduler: "cfq",
        tunables: &[("slice_idle", "0")],
    },
    Variant {
        label: "cfq (fixed)",
        scheduler: "cfq",
        tunables: &[("deep_seeky_idle", "0")],
    },
    Variant {
        label: "bfq",
        scheduler: "bfq",
        tunables: &[],
    },
    Variant {
        label: "mq-deadline",
        scheduler: "mq-deadline",
        tunables: &[],
    },
    Variant {
        label: "kyber",
        scheduler: "kyber",
        tunables: &[],
    },
];

/// A scenario: a device and whether the processes think.
struct Scenario {
    name: &'static str,
    device: &'static str,
    /// Think time after each batch of four, ns.
    think: Nanos,
}

const SCENARIOS: [Scenario; 2] = [
    Scenario {
        name: "hdd",
        device: "hdd-sata-2011",
        think: 0,
    },
    Scenario {
        name: "raid",
        device: "raid0-8x-sas-10k",
        think: 1_000_000,
    },
];

#[derive(Serialize)]
struct Row {
    label: &'static str,
    scheduler: &'static str,
    tunables: Vec<String>,
    /// Aggregate throughput, MB/s (10^6 bytes).
    mb_s: f64,
    /// Completion latency p99 of each job clone, ns.
    p99_ns_by_job: Vec<u64>,
    /// The worst of them.
    p99_ns_worst: u64,
    /// The slowest and fastest job's share of the throughput, MB/s.
    job_mb_s_min: f64,
    /// See `job_mb_s_min`.
    job_mb_s_max: f64,
}

#[derive(Serialize)]
struct ScenarioResult {
    name: &'static str,
    device: &'static str,
    think_ns: Nanos,
    rows: Vec<Row>,
}

#[derive(Serialize)]
struct Shape {
    scenario: &'static str,
    claim: String,
    /// The claim's left side (MB/s).
    left: f64,
    /// Its right side: factor × reference (MB/s).
    right: f64,
    holds: bool,
}

#[derive(Serialize)]
struct Report {
    experiment: &'static str,
    job: &'static str,
    seed: u64,
    scenarios: Vec<ScenarioResult>,
    shapes: Vec<Shape>,
}

fn row(v: &Variant, run: &RunResult) -> Row {
    let mut p99s = Vec::new();
    let mut job_rates = Vec::new();
    let mut bytes = 0;
    for j in &run.jobs {
        let mut h = Histogram::new();
        let mut jb = 0;
        for d in &j.dirs {
            h.merge(&d.clat);
            jb += d.bytes;
        }
        bytes += jb;
        p99s.push(h.percentile(99.0));
        job_rates.push(rate(jb, j.runtime()) / 1e6);
    }
    Row {
        label: v.label,
        scheduler: v.scheduler,
        tunables: v.tunables.iter().map(|(n, x)| format!("{n}={x}")).collect(),
        mb_s: rate(bytes, run.elapsed) / 1e6,
        p99_ns_worst: p99s.iter().copied().max().unwrap_or(0),
        p99_ns_by_job: p99s,
        job_mb_s_min: job_rates.iter().copied().fold(f64::INFINITY, f64::min),
        job_mb_s_max: job_rates.iter().copied().fold(0.0, f64::max),
    }
}

fn mb(rows: &[Row], label: &str) -> f64 {
    rows.iter()
        .find(|r| r.label == label)
        .map_or(0.0, |r| r.mb_s)
}

/// The shapes the 2011 report found, checked against the rows.
fn shapes(results: &[ScenarioResult]) -> Vec<Shape> {
    let mut out = Vec::new();
    // Each claim: value, comparison, factor × reference.
    let mut check = |scenario: &'static str,
                     claim: &str,
                     value: f64,
                     cmp: &str,
                     factor: f64,
                     reference: f64| {
        let bound = factor * reference;
        let holds = match cmp {
            ">" => value > bound,
            ">=" => value >= bound,
            _ => value <= bound,
        };
        out.push(Shape {
            scenario,
            claim: claim.to_string(),
            left: value,
            right: bound,
            holds,
        });
    };
    for s in results {
        let r = &s.rows;
        let none = mb(r, "none (noop)");
        let c2011 = mb(r, "cfq (2011)");
        let fixed = mb(r, "cfq (fixed)");
        let idle0 = mb(r, "cfq slice_idle=0");
        match s.name {
            "raid" => {
                check("raid", "cfq (2011) <= 0.8 x none", c2011, "<=", 0.8, none);
                check(
                    "raid",
                    "cfq slice_idle=0 >= 0.97 x none",
                    idle0,
                    ">=",
                    0.97,
                    none,
                );
                check(
                    "raid",
                    "cfq (fixed) >= 0.97 x none",
                    fixed,
                    ">=",
                    0.97,
                    none,
                );
            }
            _ => {
                check("hdd", "cfq (2011) > none", c2011, ">", 1.0, none);
                check("hdd", "cfq (fixed) >= cfq (2011)", fixed, ">=", 1.0, c2011);
                check("hdd", "cfq (fixed) >= 1.5 x none", fixed, ">=", 1.5, none);
            }
        }
    }
    out
}

/// Run `elevator experiment`.
pub fn run(args: &Args) -> Result<()> {
    let base = JobFile::parse(SEED004.1, SEED004.0)?;
    let json = args.output_format == OutputFormat::Json;
    // Which run is going: on a terminal only, where `\r` redraws one line.
    let progress = !json && std::io::stderr().is_terminal();
    let mut results = Vec::new();
    for sc in &SCENARIOS {
        let mut jobs = base.clone();
        if sc.think > 0 {
            for j in &mut jobs.jobs {
                // The 2011 report's aio-stress slept 1 ms after each batch it
                // submitted: a batch of four issued (fio's
                // thinktime_blocks_type=issue), not four completed.
                j.thinktime = sc.think;
                j.thinktime_blocks = 4;
                j.thinktime_blocks_type = elevator_fio::job::ThinkBlocks::Issue;
            }
        }
        let device = ModelSpec::parse(sc.device)?;
        let mut rows = Vec::new();
        for v in &VARIANTS {
            if progress {
                eprint!("\r{:<5} {:<20}", sc.name, v.label);
            }
            // The 2011 report's kernel (3.1) predates blk-mq: its request queue had
            // 128 requests whatever the device's depth.
            let tunables = std::iter::once(("nr_requests", "128"))
                .chain(v.tunables.iter().copied())
                .map(|(n, x)| (n.to_string(), x.to_string()))
                .collect();
            let cfg = RunConfig {
                scheduler: v.scheduler.into(),
                tunables,
                seed: args.seed,
            };
            let result = simulate(&jobs, &device, &cfg, &mut |_| {})
                .with_context(|| format!("{} on {}", v.label, sc.device))?;
            rows.push(row(v, &result));
        }
        results.push(ScenarioResult {
            name: sc.name,
            device: sc.device,
            think_ns: sc.think,
            rows,
        });
    }
    if progress {
        eprint!("\r{:40}\r", "");
    }
    let shapes = shapes(&results);
    let mut out = std::io::stdout().lock();
    if json {
        let report = Report {
            experiment: "cfq-idling",
            job: SEED004.0,
            seed: args.seed,
            scenarios: results,
            shapes,
        };
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "Seed 004: eight processes writing 4 KiB O_DIRECT blocks round-robin over four 16 MiB files each ({}),\n\
         each file once; nr_requests=128 as in the seed's single-queue kernel\n",
        SEED004.0
    )?;
    for s in &results {
        let think = if s.think_ns > 0 {
            format!(", {} ms think time per batch of 4", s.think_ns / 1_000_000)
        } else {
            ", no think time".to_string()
        };
        writeln!(out, "{} ({}{think}):", s.name, s.device)?;
        writeln!(
            out,
            "  {:<18} {:>9} {:>16} {:>18}",
            "scheduler", "MB/s", "p99 worst job", "job MB/s min-max"
        )?;
        for r in &s.rows {
            writeln!(
                out,
                "  {:<18} {:>9.2} {:>13.1} ms {:>8.2} - {:.2}",
                r.label,
                r.mb_s,
                r.p99_ns_worst as f64 / 1e6,
                r.job_mb_s_min,
                r.job_mb_s_max
            )?;
        }
        writeln!(out)?;
    }
    writeln!(out, "Shapes seed 004 reported:")?;
    for sh in &shapes {
        writeln!(
            out,
            "  {:<5} {:<34} {:>8.2} vs {:<8.2} {}",
            sh.scenario,
            sh.claim,
            sh.left,
            sh.right,
            if sh.holds { "holds" } else { "DOES NOT HOLD" }
        )?;
    }
    Ok(())
}
