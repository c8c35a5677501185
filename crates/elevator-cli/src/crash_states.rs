//! `elevator crash-states LOG --out DIR`: its options, its progress lines
//! and its report; the states are planned, built and checked by
//! `elevator_run::crash_states`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use elevator_run::crash_states::{self, BuildOptions, Report, Verdict};
use elevator_trace::write_log::LoadedLog;
use elevator_trace::write_log::crash::{PlanOptions, StateId};

use crate::write_log_cmd::check_whole;

/// `elevator crash-states ...`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The write log (one that carries data: from a real device or `serve`).
    /// Writes are applied with their data, write-zeroes and discards as
    /// holes that read as zeroes (what a discard leaves is undefined;
    /// zeroes is one choice).
    log: PathBuf,
    /// Where the images (ID.img), the marks files (ID.marks), the
    /// checkers' output (ID.out: the last 64 KiB of it, after a line
    /// counting what was dropped) and report.txt / report.json go (created
    /// if missing; with --only, report-ID.txt / .json).
    #[arg(long)]
    out: PathBuf,
    /// Run `sh -c CMD` on each state: `{}` in CMD is replaced by the
    /// image's path (shell-quoted if it needs it), and the environment has ELEVATOR_CRASH_IMAGE (the
    /// image), ELEVATOR_CRASH_STATE (its ID) and ELEVATOR_CRASH_MARKS (a
    /// file listing, one per line, every mark recorded before the cut).
    /// Exit status 0 passes.
    #[arg(long, value_name = "CMD")]
    check: Option<String>,
    /// Seconds a check may take (at most 86400), its output included:
    /// past it the checker's process group is killed and the state fails.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    timeout: f64,
    /// Seeds which subsets of unflushed writes are explored.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// States between flush boundaries to explore per epoch (all of them
    /// when there are no more).
    #[arg(long, value_name = "K", default_value_t = 4)]
    between: u64,
    /// States to explore at most: with --check, more are spread evenly over
    /// the log; without, more is refused.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    max_states: usize,
    /// Checks to run at once (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Which states' images to keep after their check.
    #[arg(long, value_enum, default_value = "failing")]
    keep: Keep,
    /// Build (and check) only this state, e.g. f12, c17-3 or end (with the
    /// seed that named it); its image is kept.
    #[arg(long, value_name = "ID")]
    only: Option<String>,
    /// Start from a copy of this image instead of zeroes.
    #[arg(long, value_name = "IMG")]
    base: Option<PathBuf>,
    /// Use the whole records before a truncation or corruption instead of
    /// refusing the log.
    #[arg(long)]
    valid_prefix: bool,
}

/// Which images stay after their check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Keep {
    /// The failing states'.
    Failing,
    /// Every state's.
    All,
    /// None.
    None,
}

impl Keep {
    /// The library's.
    fn kept(self) -> crash_states::Keep {
        match self {
            Keep::Failing => crash_states::Keep::Failing,
            Keep::All => crash_states::Keep::All,
            Keep::None => crash_states::Keep::None,
        }
    }
}

/// Run `elevator crash-states ...`.
pub fn run(args: &Args) -> Result<()> {
    let timeout = crate::serve::seconds_option("--timeout", args.timeout)?;
    let log = LoadedLog::load(&args.log)?;
    log.check_has_data()?;
    check_whole(&log, args.valid_prefix)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let opts = PlanOptions {
        seed: args.seed,
        between: args.between,
        max_states: args.max_states,
    };
    let only: Option<StateId> = match &args.only {
        Some(id) => Some(id.parse().context("--only")?),
        None => None,
    };
    let planned = crash_states::plan(&log, only, &opts, args.check.is_some())?;
    let keep = if args.check.is_none() || args.only.is_some() {
        Keep::All
    } else {
        args.keep
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // SIGINT and SIGTERM stop the run: the checkers run in their own
    // process groups (so that a timeout can kill all of theirs), which the
    // terminal's ^C does not reach, so they are killed by the run.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing a signal handler")?;
    }
    let build = BuildOptions {
        out: args.out.clone(),
        check: args.check.clone(),
        timeout,
        keep: keep.kept(),
        jobs,
        base: args.base.clone(),
    };
    let built =
        crash_states::build_and_check(&log, &planned.states, &build, &stop, |i, total, b| {
            let (word, why) = match &b.verdict {
                Verdict::Pass => ("passed", String::new()),
                Verdict::Fail(why) => ("FAILED", format!(" ({why})")),
                Verdict::Unchecked => ("built", String::new()),
            };
            eprintln!(
                "elevator: crash-states: [{}/{total}] {} {word}{why}",
                i + 1,
                b.state.id
            );
        })?;
    let report = Report {
        log: &log,
        options: &opts,
        plan: &planned,
        build: &build,
        only: args.only.as_deref(),
        valid_prefix: args.valid_prefix,
        built: &built,
    };
    let text = report.text();
    print!("{text}");
    // --only (a rebuild, often into the first run's DIR) keeps that run's
    // report: its own is report-ID.
    let stem = match &args.only {
        Some(id) => format!("report-{id}"),
        None => "report".to_string(),
    };
    let report_txt = args.out.join(format!("{stem}.txt"));
    std::fs::write(&report_txt, &text)
        .with_context(|| format!("writing {}", report_txt.display()))?;
    let report_json = args.out.join(format!("{stem}.json"));
    let json = serde_json::to_string_pretty(&report.json())?;
    std::fs::write(&report_json, json + "\n")
        .with_context(|| format!("writing {}", report_json.display()))?;
    let failed = built
        .iter()
        .filter(|b| matches!(b.verdict, Verdict::Fail(_)))
        .count();
    if failed > 0 {
        bail!(
            "{failed} of {} crash states failed the check (report: {})",
            built.len(),
            report_txt.display()
        );
    }
    Ok(())
}
