//! `elevator sweep SPEC.toml`: a workload over a grid of configurations on
//! this machine's threads, as a CSV table (to `--out`, written as each
//! configuration completes and resumed where it stopped, or to stdout at
//! the end). The options and the printing: [`elevator_run::sweep`] runs.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use elevator_run::sweep::results_file::csv_table;
use elevator_run::sweep::{Plugins, ResultsFile, Spec, SweepProgress, run_local};

/// Options of `elevator sweep`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The sweep's spec (TOML): the workload (`trace`, `job` or
    /// `job_text`), fixed values and a `[grid]` of lists, every combination
    /// run (docs/commands/sweep.md has every key).
    spec: PathBuf,
    /// Write the table here, each configuration's rows as it completes; run
    /// again, the sweep resumes: only the configurations missing run. Once
    /// complete, the rows are put in configuration order. Without it, the
    /// table goes to stdout at the end.
    #[arg(long, value_name = "FILE.csv")]
    out: Option<PathBuf>,
    /// Configurations run at once, each on a thread (default: one per CPU).
    /// The table is the same whatever it is.
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    quiet: bool,
}

/// Run `elevator sweep`.
pub fn run(args: &Args) -> Result<()> {
    let spec = Spec::from_toml_file(&args.spec, &Plugins::default())?;
    let total = spec.len();
    let threads = args.jobs.unwrap_or(0);
    if args.jobs == Some(0) {
        anyhow::bail!("--jobs 0: run at least one configuration at a time");
    }
    let quiet = args.quiet;
    let progress = move |p: SweepProgress| {
        if !quiet {
            eprintln!("elevator: sweep: {}", p.line());
        }
    };
    let Some(path) = &args.out else {
        let rows = run_local(&spec, threads, None, &Plugins::default(), &progress)?;
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(csv_table(&spec, &rows).as_bytes())
            .and_then(|()| stdout.flush())
            .context("writing the table to stdout")?;
        return Ok(());
    };
    let mut out = ResultsFile::open(path, &spec)?;
    let done = out.done().len();
    if done > 0 && !quiet {
        eprintln!(
            "elevator: {}: {done} of {total} configurations done, running {}",
            path.display(),
            total - done
        );
    }
    run_local(
        &spec,
        threads,
        Some(&mut out),
        &Plugins::default(),
        &progress,
    )?;
    out.finish(&spec)?;
    Ok(())
}
