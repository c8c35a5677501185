//! `elevator advise WORKLOAD --device D`: run one workload under every
//! scheduler (and each `nomerges` setting asked for) on a simulated device
//! ([`elevator_run::advise`] runs and measures), and rank the runs by the
//! user's goal ([`elevator_run::advise::ranking`]; [`crate::advise_report`]
//! prints).
//!
//! The workload is a fio job (a job file, fio options on the command line,
//! or both, as `elevator run` takes them) or a recorded block trace in any
//! format `elevator replay` reads. A file is taken as a trace when its
//! content is one (blktrace's magic, a blkparse, tracefs or iolog line, or
//! gzip/xz compression), when a per-CPU set `NAME.blktrace.0` is beside it,
//! or when `--trace` says so; as a fio job file otherwise.

use anyhow::Result;
use elevator_run::Target;
use elevator_run::advise::{AdviseOptions, Workload, advise, workload};

use elevator_run::advise::ranking::Advice;

use crate::advise_report::GoalArg;
use crate::progress::Stderr;
use crate::run::{OutputFormat, print_warnings};

/// Options of `elevator advise`.
///
/// fio's job options may follow on the command line as `elevator run`
/// takes them ([`crate::fio_args::split`]).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The workload: a fio job file or a block trace (recognised from its
    /// content); optional when the job is given as fio options.
    workload: Option<String>,
    /// fio job options from the command line (filled by `fio_args::split`).
    #[arg(skip)]
    pub fio: Vec<String>,
    /// Take WORKLOAD as a trace even if its content does not show it.
    #[arg(long)]
    trace: bool,
    /// Device: a simulated preset with optional overrides (`elevator
    /// devices` lists them).
    #[arg(long, default_value = "hdd-7200")]
    device: String,
    /// What to rank by: throughput (total bytes per second), p99 (the worst
    /// job's 99th percentile completion latency, of reads if the workload
    /// reads, else of writes) or fairness (Jain's index over each job's
    /// throughput relative to its throughput alone on the device; over the
    /// submitters' mean latencies for a trace).
    #[arg(long, value_enum, default_value = "throughput")]
    goal: GoalArg,
    /// Schedulers to try, comma-separated (default: every one).
    #[arg(long, value_delimiter = ',')]
    schedulers: Vec<String>,
    /// `nomerges` settings to try each scheduler with, comma-separated
    /// (0: merge; 1: only the one-hit cache; 2: never).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    nomerges: Vec<u8>,
    /// Set a queue or scheduler tunable for every run (repeatable); a
    /// tunable a scheduler does not have is an error for it.
    #[arg(long = "set", value_name = "TUNABLE=VALUE")]
    set: Vec<String>,
    /// Seed mixed into every job's random stream.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Replay a trace as a closed loop with at most N bios outstanding
    /// (default: open loop at the recorded times).
    #[arg(long, value_name = "N")]
    depth: Option<u32>,
    /// Output format.
    #[arg(long, value_enum, default_value = "normal")]
    output_format: OutputFormat,
}

/// Run `elevator advise`.
pub fn run(args: &Args) -> Result<()> {
    let target = Target::parse(&args.device)?;
    target.model_only("advise")?;
    let opts = AdviseOptions::new(
        crate::list::several_schedulers("--schedulers", &args.schedulers)?,
        args.nomerges.clone(),
        &args.set,
        args.seed,
        args.depth,
    )?;
    target.check_schedulers(&opts.schedulers, &opts.tunables)?;
    let workload = workload(args.workload.as_deref(), &args.fio, args.trace)?;
    let mut stderr = Stderr::notes();
    if let Workload::Job { jobs, .. } = &workload {
        print_warnings(jobs);
        target.check_memory(jobs, &mut stderr)?;
    }
    let runs = advise(&workload, &target, &opts, &mut stderr)?;
    let advice = Advice::new(
        workload.name(),
        workload.kind(),
        &args.device,
        args.goal.into(),
        runs,
    );
    let mut out = std::io::stdout().lock();
    // A reader that went away (`| head`) ends the process quietly, in
    // main (crate::closed_stdout).
    match args.output_format {
        OutputFormat::Normal => crate::advise_report::print_text(&advice, &mut out),
        OutputFormat::Json => crate::advise_report::print_json(&advice, &mut out),
    }
}
