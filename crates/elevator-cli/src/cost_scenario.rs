//! `elevator cost-scenario`: internal, hidden from `--help`. The
//! instruction-count guard's front end (`scripts/perf-guard` runs `guard`),
//! and what callgrind runs (`run NAME`). The scenarios, the counting and
//! the baselines are [`elevator_run::cost`]'s.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use elevator_run::cost::{self, Baselines, Comparison, callgrind, scenario};

/// Options of `elevator cost-scenario`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// Run one scenario in this process (what callgrind runs) and print
    /// `ops N`.
    Run {
        /// The scenario.
        name: String,
        /// Operations (default: the scenario's own).
        #[arg(long)]
        ops: Option<u64>,
    },
    /// List the guarded scenarios.
    List,
    /// Count every scenario under callgrind, print the table against the
    /// baselines, and fail if one grew by more than the threshold.
    Guard {
        /// The baselines file.
        #[arg(long)]
        baselines: PathBuf,
        /// `rustc --version` of this build (the baselines must name the
        /// same).
        #[arg(long)]
        rustc: String,
        /// Write the counts as the new baselines instead of comparing.
        #[arg(long)]
        update: bool,
        /// Only these scenarios (repeatable).
        #[arg(long)]
        only: Vec<String>,
        /// Growth that fails, percent.
        #[arg(long, default_value_t = 3.0)]
        threshold: f64,
        /// Scenarios counted at once.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
    },
}

/// Run `elevator cost-scenario`.
pub fn run(args: &Args) -> Result<()> {
    match &args.what {
        What::Run { name, ops } => {
            let ops = match ops {
                Some(n) => *n,
                None => scenario::find(name)?.ops,
            };
            let done = scenario::run(name, ops)?;
            println!("ops {done}");
            Ok(())
        }
        What::List => {
            for s in scenario::all() {
                println!("{}  (per {}, {:?})", s.name, s.unit, s.counting);
            }
            Ok(())
        }
        What::Guard {
            baselines,
            rustc,
            update,
            only,
            threshold,
            jobs,
        } => guard(baselines, rustc, *update, only, *threshold, *jobs),
    }
}

fn guard(
    path: &Path,
    rustc: &str,
    update: bool,
    only: &[String],
    threshold: f64,
    jobs: usize,
) -> Result<()> {
    let scenarios = if only.is_empty() {
        scenario::all()
    } else {
        only.iter()
            .map(|n| scenario::find(n))
            .collect::<Result<Vec<_>, _>>()?
    };
    // Read (and check) the baselines first: a wrong compiler fails at once.
    let existing = match Baselines::read(path) {
        Ok(b) => Some(b),
        Err(_) if update => None,
        Err(e) => return Err(e).context("run scripts/perf-guard --update to make the baselines"),
    };
    if !update && let Some(b) = &existing {
        b.check_compiler(rustc)?;
    }
    let program = std::env::current_exe().context("finding this executable")?;
    eprintln!(
        "counting {} scenarios under callgrind, {jobs} at a time",
        scenarios.len()
    );
    let results = callgrind::count_all(&program, &scenarios, jobs, &|s, r| match r {
        Ok(c) => eprintln!("  {:<40} {:>12.1} per {}", s.name, c.per_op(), c.unit),
        Err(_) => eprintln!("  {:<40} failed", s.name),
    });
    let counted = results
        .into_iter()
        .collect::<Result<Vec<_>, cost::CostError>>()?;
    if update {
        // Kept when only some were counted; the compiler is this build's.
        let mut b = match (existing, only.is_empty()) {
            (Some(b), false) => b,
            _ => Baselines::default(),
        };
        b.rustc = rustc.trim().to_string();
        for c in &counted {
            b.set(&c.name, c.per_op());
        }
        b.write(path)?;
        println!("{}", b.render());
        println!("wrote {}", path.display());
        return Ok(());
    }
    let Some(b) = existing else {
        bail!("no baselines");
    };
    let cmp = Comparison::new(&counted, &b, threshold);
    print!("{}", cmp.table());
    let failures = cmp.failures();
    if failures.is_empty() {
        println!(
            "{} scenarios within +{threshold}% of their baselines",
            cmp.rows.len()
        );
        Ok(())
    } else {
        let names: Vec<&str> = failures.iter().map(|r| r.name.as_str()).collect();
        bail!(
            "{} of {} scenarios grew by more than {threshold}% or have no baseline: {} (a \
             change that costs this on purpose regenerates the baselines with \
             scripts/perf-guard --update in the same commit and says why)",
            failures.len(),
            cmp.rows.len(),
            names.join(", ")
        )
    }
}
