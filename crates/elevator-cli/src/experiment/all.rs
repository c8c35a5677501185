//! `elevator experiment all --out DIR`: every experiment, one after the
//! other, each written as `NAME.txt` (its table, verdicts and notes) and
//! `NAME.json`, then one self-contained `report.html` with a summary table
//! (each shape: the seed's figure, elevator's, the verdict) and every plot.
//! An experiment that fails is reported in its place and makes the command
//! fail at the end; the others still run and are written.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{Args, Which};
use crate::report::html::{Section, SummaryRow, page};
use elevator_run::experiment::{Opts, Outcome, WIDTH, hang};

/// One experiment of the set.
pub(super) struct Entry {
    name: &'static str,
    seed: &'static str,
    /// About how long it takes here, seconds: full and quick.
    secs: (u32, u32),
    /// The experiment to run.
    which: Which,
}

const ENTRIES: &[Entry] = &[
    Entry {
        name: "merging",
        seed: "000",
        secs: (15, 4),
        which: Which::Merging,
    },
    Entry {
        name: "direct-io",
        seed: "001",
        secs: (80, 12),
        which: Which::DirectIo,
    },
    Entry {
        name: "deadline-cost",
        seed: "002",
        secs: (55, 7),
        which: Which::DeadlineCost,
    },
    Entry {
        name: "lock-scaling",
        seed: "003",
        secs: (60, 8),
        which: Which::LockScaling,
    },
    Entry {
        name: "cfq-idling",
        seed: "004",
        secs: (2, 2),
        which: Which::CfqIdling,
    },
];

/// The report's size past which `all` warns: it is meant to be mailed and
/// opened anywhere.
const REPORT_LIMIT: u64 = 2 << 20;

/// Run every experiment and write the report.
pub fn run(args: &Args) -> Result<()> {
    let Some(dir) = &args.out else {
        bail!("experiment all writes a report: give --out DIR (created if missing)");
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let opts = Opts {
        quick: args.quick,
        seed: args.seed,
    };
    let total: u32 = ENTRIES
        .iter()
        .map(|e| if args.quick { e.secs.1 } else { e.secs.0 })
        .sum();
    let mode = if args.quick { "quick" } else { "full" };
    eprintln!(
        "experiment all ({mode}): {} experiments, about {} here; writing {}",
        ENTRIES.len(),
        duration(f64::from(total)),
        dir.display()
    );
    let started = Instant::now();
    let mut outcomes = Vec::new();
    let mut failed = Vec::new();
    for (i, e) in ENTRIES.iter().enumerate() {
        eprintln!(
            "[{}/{}] {} (seed {}), about {}",
            i + 1,
            ENTRIES.len(),
            e.name,
            e.seed,
            duration(f64::from(if args.quick { e.secs.1 } else { e.secs.0 }))
        );
        let t = Instant::now();
        let result = super::with_progress(true, |p| super::outcome(e.which, args, &opts, p));
        match result {
            Ok(o) => {
                write_one(dir, &o)?;
                let held = o.shapes.iter().filter(|s| s.holds).count();
                eprintln!(
                    "      done in {}: {held} of {} shapes hold",
                    duration(t.elapsed().as_secs_f64()),
                    o.shapes.len()
                );
                outcomes.push(o);
            }
            Err(err) => {
                eprintln!("      FAILED: {err:#}");
                failed.push((e, format!("{err:#}")));
            }
        }
    }
    let html = report(&outcomes, &failed, args.quick)?;
    let path = dir.join("report.html");
    std::fs::write(&path, &html).with_context(|| format!("writing {}", path.display()))?;
    let mut out = std::io::stdout().lock();
    summary(&mut out, &outcomes)?;
    writeln!(
        out,
        "\n{} ({} KiB)\nand each experiment's .txt and .json in {}; {} in all",
        path.display(),
        html.len().div_ceil(1024),
        dir.display(),
        duration(started.elapsed().as_secs_f64())
    )?;
    if html.len() as u64 > REPORT_LIMIT {
        eprintln!(
            "warning: {} is {} KiB, more than the 2 MiB a report should be",
            path.display(),
            html.len() / 1024
        );
    }
    if !failed.is_empty() {
        let names: Vec<&str> = failed.iter().map(|(e, _)| e.name).collect();
        bail!("experiments failed: {} (see above)", names.join(", "));
    }
    Ok(())
}

fn duration(secs: f64) -> String {
    if secs < 90.0 {
        format!("{secs:.0} s")
    } else {
        format!("{:.1} min", secs / 60.0)
    }
}

/// `NAME.txt` and `NAME.json`.
pub(super) fn write_one(dir: &Path, o: &Outcome) -> Result<()> {
    let mut text = Vec::new();
    super::print::print(o, false, &mut text)?;
    let txt = dir.join(format!("{}.txt", o.name));
    std::fs::write(&txt, text).with_context(|| format!("writing {}", txt.display()))?;
    let json = dir.join(format!("{}.json", o.name));
    let mut doc = serde_json::to_vec_pretty(o)?;
    doc.push(b'\n');
    std::fs::write(&json, doc).with_context(|| format!("writing {}", json.display()))?;
    Ok(())
}

/// The summary on the terminal: each shape's seed, verdict and claim, the
/// claim wrapped to keep lines within [`WIDTH`] columns.
fn summary(out: &mut dyn Write, outcomes: &[Outcome]) -> std::io::Result<()> {
    let held: usize = outcomes
        .iter()
        .map(|o| o.shapes.iter().filter(|s| s.holds).count())
        .sum();
    let all: usize = outcomes.iter().map(|o| o.shapes.len()).sum();
    writeln!(out, "{held} of {all} shapes hold")?;
    writeln!(out, "seed  {:<13}  shape", "verdict")?;
    for o in outcomes {
        for s in &o.shapes {
            let prefix = format!("{:<4}  {:<13}  ", o.seed, s.verdict());
            write!(out, "{}", hang(&prefix, &s.claim, WIDTH))?;
        }
    }
    Ok(())
}

/// The HTML report.
pub(super) fn report(
    outcomes: &[Outcome],
    failed: &[(&Entry, String)],
    quick: bool,
) -> Result<String> {
    let rows: Vec<SummaryRow> = outcomes
        .iter()
        .flat_map(|o| {
            o.shapes.iter().map(|s| SummaryRow {
                id: o.name.to_string(),
                seed: o.seed.to_string(),
                shape: s.clone(),
            })
        })
        .collect();
    let mut sections: Vec<Section> = outcomes
        .iter()
        .map(|o| Section {
            id: o.name.to_string(),
            heading: format!("Seed {}: {}", o.seed, o.title),
            lead: format!(
                "elevator experiment {}{}",
                o.name,
                if quick { " --quick" } else { "" }
            ),
            shapes: o.shapes.clone(),
            figures: o.figures.clone(),
            text: o.table.clone(),
            notes: o.notes.clone(),
        })
        .collect();
    for (e, err) in failed {
        sections.push(Section {
            id: e.name.to_string(),
            heading: format!("Seed {}: {} failed", e.seed, e.name),
            notes: vec![err.clone()],
            ..Section::default()
        });
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    page(
        "elevator: the seeds' results",
        &format!(
            "Each experiment reproduces one of the Linux discussions elevator grew from and checks \
             the shapes its seed reported. elevator {}, `elevator experiment all{}`, {cpus} CPUs.",
            env!("CARGO_PKG_VERSION"),
            if quick { " --quick" } else { "" }
        ),
        &rows,
        &sections,
    )
}
