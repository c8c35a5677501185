//! `elevator experiment`: its options, one call per experiment, and the
//! printing and files of what it returns. The experiments are
//! [`elevator_run::experiment`]'s (merging, deadline-cost, lock-scaling,
//! cfq-idling), except one that still lives here: [`direct_io`] (the
//! O_DIRECT submission path's cost, LKML 2006; it races fio through
//! `bench-vs-fio`'s [`crate::bench_fio::compare`]). `experiment all` runs
//! every one and writes each one's table, JSON and verdicts, and one HTML
//! report.

mod all;
mod direct_io;
mod print;

use std::io::{IsTerminal, Write};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;

use crate::run::OutputFormat;
use elevator_run::cost::CellCounter;
use elevator_run::experiment::{
    Opts, Outcome, Progress, cfq_idling, deadline_cost, lock_scaling, merging,
};

/// Which experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// Every experiment, with `--out DIR` for the tables, JSON, verdicts and
    /// `report.html`.
    All,
    /// CFQ idling on deep seeky queues (LKML 2011), on a slow disk and a fast
    /// RAID.
    CfqIdling,
    /// dd readers under one global lock, a lock per queue and blk-mq (LKML
    /// 2001's lockmeter report), measured here and predicted for more CPUs.
    LockScaling,
    /// The core path's CPU per bio with `nomerges` 0, 1 and 2, random and
    /// sequential, and the share of bios merged (seed 000, LKML 2008).
    Merging,
    /// elevator's io_uring direct-I/O path beside fio's io_uring engine on
    /// the same file: IOPS and CPU per I/O (seed 001, LKML 2006).
    DirectIo,
    /// CPU per I/O against queue depth for deadline's sorted list and its
    /// trees (seed 002, LKML 2002).
    DeadlineCost,
}

/// Options of `elevator experiment`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The experiment, or `all`.
    #[arg(value_enum)]
    which: Which,
    /// Seed mixed into every job's random stream.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "normal")]
    output_format: OutputFormat,
    /// Small and fast: lock-scaling, merging, direct-io and deadline-cost
    /// with fewer cases and shorter runs (`all --quick` takes under two
    /// minutes on two cores); cfq-idling is already small (the virtual
    /// clock) and --quick does not change it. Shapes are still checked.
    #[arg(long)]
    quick: bool,
    /// The directory for each experiment's NAME.txt (table and verdicts),
    /// NAME.json, and report.html (required by `all`; with one experiment,
    /// its files and a report of its own). Created if missing.
    #[arg(long, value_name = "DIR")]
    out: Option<std::path::PathBuf>,
    /// lock-scaling: the device each reader reads (each opened once per
    /// reader for "own devices"): mem:SIZE (copy=0: no data moves, as a
    /// controller's DMA costs the CPUs nothing), file:PATH, or a disk
    /// model.
    #[arg(long, default_value = "mem:64m,copy=0")]
    device: String,
    /// lock-scaling: reader counts to run, each 1 to 64 [default: 1,2,4,8;
    /// with --quick 1,2].
    #[arg(long, value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// lock-scaling: seconds each run lasts, more than 0 and at most 3600
    /// [default: 2; with --quick 0.5].
    #[arg(long)]
    runtime: Option<f64>,
    /// lock-scaling: the scheduler every queue runs.
    #[arg(long, default_value = "none")]
    scheduler: String,
    /// merging, deadline-cost: base the CPU-cost verdicts on the timed
    /// figures alone. Without it they use instructions per bio of the same
    /// cases, counted under valgrind's callgrind, when valgrind is
    /// installed (a count a busy machine does not move).
    #[arg(long)]
    timed: bool,
}

/// Run `elevator experiment`.
pub fn run(args: &Args) -> Result<()> {
    match args.which {
        Which::All => all::run(args),
        which => run_outcome(args, |opts, p| outcome(which, args, opts, p)),
    }
}

/// Run one experiment (`all` is every one: [`all::run`]).
fn outcome(which: Which, args: &Args, opts: &Opts, progress: Progress) -> Result<Outcome> {
    Ok(match which {
        Which::All => bail!("experiment all runs every experiment, not one"),
        Which::CfqIdling => cfq_idling::outcome(opts, progress)?,
        Which::LockScaling => lock_scaling::outcome(&lock_scaling_params(args), opts, progress)?,
        Which::Merging => merging::outcome(opts, progress, cell_counter(args)?.as_ref())?,
        Which::DirectIo => direct_io::outcome(opts, progress)?,
        Which::DeadlineCost => {
            deadline_cost::outcome(opts, progress, cell_counter(args)?.as_ref())?
        }
    })
}

/// What counts the instructions of merging's and deadline-cost's cells:
/// this executable under valgrind, unless `--timed` or valgrind is missing.
fn cell_counter(args: &Args) -> Result<Option<CellCounter>> {
    if args.timed {
        return Ok(None);
    }
    let exe = std::env::current_exe().context("finding this executable")?;
    Ok(CellCounter::if_valgrind(&exe))
}

/// Run `f` with a progress line on stderr (redrawn with `\r`, only when
/// `show` and stderr is a terminal), cleared when `f` returns.
fn with_progress<T>(show: bool, f: impl FnOnce(Progress) -> T) -> T {
    let show = show && std::io::stderr().is_terminal();
    let mut line = |what: &str, done: usize, total: usize| {
        if show {
            let line: String = format!("[{done}/{total}] {what}")
                .chars()
                .take(79)
                .collect();
            eprint!("\r{line:<79}");
            let _ = std::io::stderr().flush();
        }
    };
    let out = f(&mut line);
    if show {
        eprint!("\r{:<79}\r", "");
        let _ = std::io::stderr().flush();
    }
    out
}

/// What lock-scaling runs, from the command line: `--quick` runs 1 and 2
/// readers for 0.5 s unless `--threads` or `--runtime` say otherwise.
fn lock_scaling_params(args: &Args) -> lock_scaling::Params {
    let (threads, runtime) = lock_scaling::Params::defaults(args.quick);
    lock_scaling::Params {
        device: args.device.clone(),
        threads: args.threads.clone().unwrap_or(threads),
        runtime: args.runtime.unwrap_or(runtime),
        scheduler: args.scheduler.clone(),
    }
}

/// Run an experiment that returns an [`Outcome`] and print it
/// ([`print::print`]), with its progress on stderr.
fn run_outcome<E>(
    args: &Args,
    outcome: impl FnOnce(&Opts, Progress) -> Result<Outcome, E>,
) -> Result<()>
where
    anyhow::Error: From<E>,
{
    let opts = Opts {
        quick: args.quick,
        seed: args.seed,
    };
    if let Some(dir) = &args.out {
        // Said before the experiment runs, not after.
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let json = args.output_format == OutputFormat::Json;
    let o = with_progress(!json, |p| outcome(&opts, p))?;
    finish(args, &o)
}

/// Print one experiment's outcome, and with `--out DIR` also write its
/// `NAME.txt`, `NAME.json` and a `report.html` of its own there.
fn finish(args: &Args, o: &Outcome) -> Result<()> {
    let json = args.output_format == OutputFormat::Json;
    print::print(o, json, &mut std::io::stdout().lock()).context("writing the outcome")?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        all::write_one(dir, o)?;
        let html = all::report(std::slice::from_ref(o), &[], args.quick)?;
        let path = dir.join("report.html");
        std::fs::write(&path, html).with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "{}, {}.txt and {}.json written in {}",
            path.display(),
            o.name,
            o.name,
            dir.display()
        );
    }
    Ok(())
}
