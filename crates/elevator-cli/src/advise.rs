//! `elevator advise WORKLOAD --device D`: run one workload under every
//! scheduler (and each `nomerges` setting asked for) on a simulated device,
//! measure what each run gave, and rank the runs by the user's goal
//! ([`crate::advise_report`] ranks, prints and explains).
//!
//! The workload is a fio job (a job file, fio options on the command line,
//! or both, as `elevator run` takes them) or a recorded block trace in any
//! format `elevator replay` reads. A file is taken as a trace when its
//! content is one (blktrace's magic, a blkparse, tracefs or iolog line, or
//! gzip/xz compression), when a per-CPU set `NAME.blktrace.0` is beside it,
//! or when `--trace` says so; as a fio job file otherwise.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use elevator_core::{Op, SCHEDULER_NAMES, TraceAction};
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::result::RunResult;
use elevator_io::DeviceSpec;
use elevator_sim::device::ModelSpec;
use elevator_sim::replay::{ReplayConfig, replay as replay_sim};
use elevator_trace::replay::ReplayResult;
use elevator_trace::replay::{Events, FlushModel, Planner, Timing};
use elevator_trace::{Record, TraceSink};

use crate::advise_report::{Advice, Goal};

use crate::run::{Bar, OutputFormat, ThreadArgs, check_schedulers, load_job, parse_sets};

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
    goal: Goal,
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

/// What one run gave, in the figures the goals rank by.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The scheduler.
    pub scheduler: String,
    /// The `nomerges` setting.
    pub nomerges: u8,
    /// Bytes moved per second of (virtual) run time.
    pub throughput: f64,
    /// The worst job's 99th percentile completion latency of reads, ns
    /// (None: no reads); for a trace, that of every read.
    pub read_p99: Option<u64>,
    /// Likewise for writes.
    pub write_p99: Option<u64>,
    /// The p99 goal's figure, ns: the worst job's p99 read latency (write,
    /// if nothing reads); for a trace, the p99 of every read (write).
    pub goal_p99: Option<u64>,
    /// The direction `goal_p99` is of: "read" or "write".
    pub goal_p99_dir: &'static str,
    /// Jain's fairness index over the shares (1: all equal; 1/n: one takes
    /// everything).
    pub fairness: f64,
    /// Each job clone's throughput as a share of what its job gets alone
    /// on the device, or each trace submitter's mean completion latency
    /// (ns), named.
    pub shares: Vec<(String, f64)>,
    /// I/Os (bios) completed.
    pub ios: u64,
    /// Virtual run time, ns.
    pub elapsed: u64,
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²); 1 for no or one value.
pub fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if xs.len() < 2 || squares == 0.0 {
        1.0
    } else {
        sum * sum / (xs.len() as f64 * squares)
    }
}

/// The workload to advise on.
enum Workload {
    Job { jobs: JobFile, name: String },
    Trace { path: String },
}

/// Run `elevator advise`.
pub fn run(args: &Args) -> Result<()> {
    let target = DeviceSpec::parse(&args.device)?;
    let Some(model) = target.model() else {
        bail!(
            "--device {}: advise runs on simulated devices only (a preset such as hdd-7200 or \
             nvme; `elevator devices` lists them), where every scheduler sees the same device",
            args.device
        );
    };
    let schedulers: Vec<String> = if args.schedulers.is_empty() {
        SCHEDULER_NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        args.schedulers.clone()
    };
    if args.nomerges.is_empty() {
        bail!("--nomerges: give at least one setting (0, 1 or 2)");
    }
    if let Some(bad) = args.nomerges.iter().find(|n| **n > 2) {
        bail!("--nomerges {bad}: must be 0, 1 or 2");
    }
    let tunables = parse_sets(&args.set)?;
    if tunables.iter().any(|(n, _)| n == "nomerges") {
        bail!("--set nomerges=...: give the settings to try with --nomerges instead");
    }
    check_schedulers(&target, &schedulers, &tunables)?;
    let workload = workload(args)?;
    if let Workload::Job { jobs, .. } = &workload {
        crate::run::check_memory(jobs, &target)?;
    }
    if args.depth.is_some() && matches!(workload, Workload::Job { .. }) {
        bail!("--depth goes with a trace; a fio job sets its own iodepth");
    }
    let alone = match &workload {
        // One job section's clones all share one figure alone: no need.
        Workload::Job { jobs, name } if jobs.jobs.len() > 1 => {
            alone_throughputs(jobs, &target, &tunables, args.seed)
                .with_context(|| format!("running each job of {name} alone"))?
        }
        _ => Vec::new(),
    };
    let mut runs = Vec::new();
    for sched in &schedulers {
        for &nomerges in &args.nomerges {
            let mut set = tunables.clone();
            set.push(("nomerges".to_string(), nomerges.to_string()));
            let measured = match &workload {
                Workload::Job { jobs, name } => {
                    run_job(jobs, &target, sched, set, args.seed, nomerges, &alone)
                        .with_context(|| format!("running {name} under {sched}"))?
                }
                Workload::Trace { path } => {
                    replay_trace(path, model, sched, set, args.depth, nomerges)
                        .with_context(|| format!("replaying {path} under {sched}"))?
                }
            };
            runs.push(measured);
        }
    }
    let (name, kind) = match &workload {
        Workload::Job { name, .. } => (name.clone(), "job"),
        Workload::Trace { path } => (path.clone(), "trace"),
    };
    let advice = Advice::new(&name, kind, &args.device, args.goal, runs);
    let mut out = std::io::stdout().lock();
    // A reader that went away (`| head`) ends the process quietly, in
    // main (crate::closed_stdout).
    match args.output_format {
        OutputFormat::Normal => crate::advise_report::print_text(&advice, &mut out),
        OutputFormat::Json => crate::advise_report::print_json(&advice, &mut out),
    }
}

/// The workload the command line names.
fn workload(args: &Args) -> Result<Workload> {
    match &args.workload {
        Some(path) if path == "-" => {
            bail!("advise reads its workload once per scheduler: give a file, not standard input")
        }
        Some(path) if args.trace || is_trace(path)? => {
            if !args.fio.is_empty() {
                bail!(
                    "{path} is a trace: fio job options ({}) go with a job",
                    args.fio.join(" ")
                );
            }
            Ok(Workload::Trace { path: path.clone() })
        }
        Some(path) => Ok(Workload::Job {
            jobs: load_job(Some(path), &args.fio)?,
            name: path.clone(),
        }),
        None if args.trace => bail!("--trace: name the trace"),
        None => Ok(Workload::Job {
            jobs: load_job(None, &args.fio)?,
            name: "command line".to_string(),
        }),
    }
}

/// Whether the file at `path` is a trace: its content (compressed, or in a
/// format [`elevator_trace::detect`] knows), or a per-CPU blktrace set
/// named by it.
fn is_trace(path: &str) -> Result<bool> {
    if Path::new(&format!("{path}.blktrace.0")).exists() {
        return Ok(true);
    }
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .with_context(|| format!("opening {path}"))?
        .take(4096)
        .read_to_end(&mut head)
        .with_context(|| format!("reading {path}"))?;
    Ok(
        elevator_trace::open::compression(&head) != elevator_trace::open::Compression::None
            || elevator_trace::detect(&head).is_some(),
    )
}

/// Run `jobs` under `scheduler` with `tunables` on the simulated `target`.
fn execute(
    jobs: &JobFile,
    target: &DeviceSpec,
    scheduler: &str,
    tunables: Vec<(String, String)>,
    seed: u64,
) -> Result<RunResult> {
    let cfg = RunConfig {
        scheduler: scheduler.to_string(),
        tunables,
        seed,
    };
    let mut bar = Bar::new(false, String::new());
    let (result, _cpu) = crate::run::execute(
        jobs,
        target,
        &cfg,
        &ThreadArgs::default(),
        &mut bar,
        &Default::default(),
    )?;
    Ok(result)
}

/// Each job section's throughput (bytes/s) when one clone of it runs
/// alone on the device, under `none` with the queue tunables of `tunables`
/// (those `none` has): what fairness measures each job's share against.
fn alone_throughputs(
    jobs: &JobFile,
    target: &DeviceSpec,
    tunables: &[(String, String)],
    seed: u64,
) -> Result<Vec<f64>> {
    let none = ["none".to_string()];
    let queue_tunables: Vec<(String, String)> = tunables
        .iter()
        .filter(|t| check_schedulers(target, &none, std::slice::from_ref(*t)).is_ok())
        .cloned()
        .collect();
    let mut alone = Vec::with_capacity(jobs.jobs.len());
    for spec in &jobs.jobs {
        let mut solo = jobs.clone();
        let mut spec = spec.clone();
        spec.numjobs = 1;
        spec.stonewall = false;
        spec.new_group = false;
        spec.wait_for = None;
        solo.jobs = vec![spec];
        let run = execute(&solo, target, "none", queue_tunables.clone(), seed)?;
        let bytes = run.bytes();
        let runtime = run.jobs.first().map_or(run.elapsed, |j| j.runtime());
        alone.push(elevator_fio::report::rate(bytes, runtime.max(1)));
    }
    Ok(alone)
}

/// Run the fio job under `scheduler` with `tunables` and measure it;
/// `alone` is each job section's throughput alone (see
/// [`alone_throughputs`]).
fn run_job(
    jobs: &JobFile,
    target: &DeviceSpec,
    scheduler: &str,
    tunables: Vec<(String, String)>,
    seed: u64,
    nomerges: u8,
    alone: &[f64],
) -> Result<Measured> {
    let result = execute(jobs, target, scheduler, tunables, seed)?;
    Ok(measure_job(&result, nomerges, alone))
}

impl Measured {
    /// A run's figures from its totals (bytes, I/Os, elapsed ns), its p99s
    /// (reads, writes) and each participant's share: the goal's p99 is of
    /// reads if anything read, fairness is Jain's index over the shares.
    fn new(
        scheduler: &str,
        nomerges: u8,
        (bytes, ios, elapsed): (u64, u64, u64),
        (read_p99, write_p99): (Option<u64>, Option<u64>),
        shares: Vec<(String, f64)>,
    ) -> Measured {
        let values: Vec<f64> = shares.iter().map(|(_, v)| *v).collect();
        Measured {
            scheduler: scheduler.to_string(),
            nomerges,
            throughput: elevator_fio::report::rate(bytes, elapsed),
            read_p99,
            write_p99,
            goal_p99: read_p99.or(write_p99),
            goal_p99_dir: if read_p99.is_some() { "read" } else { "write" },
            fairness: jain(&values),
            shares,
            ios,
            elapsed,
        }
    }
}

/// The figures of a fio run.
fn measure_job(run: &RunResult, nomerges: u8, alone: &[f64]) -> Measured {
    let mut bytes = 0;
    let mut shares = Vec::with_capacity(run.jobs.len());
    for job in &run.jobs {
        let job_bytes: u64 = job.dirs.iter().map(|d| d.bytes).sum();
        bytes += job_bytes;
        let who = if job.clone == 0 {
            job.name.clone()
        } else {
            format!("{}.{}", job.name, job.clone)
        };
        let throughput = elevator_fio::report::rate(job_bytes, job.runtime().max(1));
        let share = match alone.get(job.job_index) {
            Some(&solo) if solo > 0.0 => throughput / solo,
            _ => throughput,
        };
        shares.push((who, share));
    }
    // The worst job's p99, per direction; the goal's is of reads if
    // anything reads.
    let worst_p99 = |dir: usize| {
        run.jobs
            .iter()
            .filter(|j| j.dirs[dir].clat.count() > 0)
            .map(|j| j.dirs[dir].clat.percentile(99.0))
            .max()
    };
    let (read_p99, write_p99) = (worst_p99(0), worst_p99(1));
    Measured::new(
        &run.scheduler,
        nomerges,
        (bytes, run.ios, run.elapsed),
        (read_p99, write_p99),
        shares,
    )
}

fn p99(h: &elevator_core::Histogram) -> Option<u64> {
    (h.count() > 0).then(|| h.percentile(99.0))
}

/// Replay the trace at `path` under `scheduler` on `model`.
fn replay_trace(
    path: &str,
    model: &ModelSpec,
    scheduler: &str,
    tunables: Vec<(String, String)>,
    depth: Option<u32>,
    nomerges: u8,
) -> Result<Measured> {
    let reader = elevator_trace::open(Path::new(path), None, false)?;
    let plan = Planner::new(reader, Events::Queued, None);
    let cfg = ReplayConfig {
        scheduler: scheduler.to_string(),
        tunables,
        timing: depth.map_or(Timing::Recorded(1.0), Timing::Depth),
        flush: FlushModel {
            write_cache: true,
            fua: false,
        },
        skip_bad: false,
        source_name: path.to_string(),
    };
    let mut submitters = SubmitterLatency::default();
    let result = replay_sim(plan, model, &cfg, Some(&mut submitters), &mut |_| {})?;
    Ok(measure_trace(&result, &submitters, scheduler, nomerges))
}

/// The figures of a trace replay.
fn measure_trace(
    result: &ReplayResult,
    submitters: &SubmitterLatency,
    scheduler: &str,
    nomerges: u8,
) -> Measured {
    let a = &result.analysis;
    let hist = |op: Op| a.q2c_by_op.get(op as usize).and_then(p99);
    let bytes: u64 = a.completed.iter().map(|c| c.bytes).sum();
    let (read_p99, write_p99) = (hist(Op::Read), hist(Op::Write));
    let shares: Vec<(String, f64)> = submitters
        .by_pid
        .iter()
        .filter(|(_, s)| s.bios > 0)
        .map(|(pid, s)| (format!("pid {pid}"), s.latency_ns as f64 / s.bios as f64))
        .collect();
    Measured::new(
        scheduler,
        nomerges,
        (bytes, result.bios, result.elapsed),
        (read_p99, write_p99),
        shares,
    )
}

/// One submitter's bios completed and their summed latency.
#[derive(Clone, Copy, Debug, Default)]
struct Submitter {
    bios: u64,
    latency_ns: u64,
}

/// A trace sink that measures each submitter's (pid's) completion latency:
/// a queued bio completes with the first completion that covers its first
/// sector (merged bios complete with their request).
#[derive(Debug, Default)]
struct SubmitterLatency {
    /// Bios in flight by (first sector, arrival number): pid, queue time.
    in_flight: BTreeMap<(u64, u64), (u32, u64)>,
    arrivals: u64,
    by_pid: BTreeMap<u32, Submitter>,
}

impl TraceSink for SubmitterLatency {
    fn record(&mut self, record: &Record) -> std::io::Result<()> {
        let e = &record.event;
        if e.bytes == 0 {
            return Ok(());
        }
        match e.action {
            TraceAction::Queue => {
                self.arrivals += 1;
                self.in_flight
                    .insert((e.sector, self.arrivals), (record.pid(), e.time));
            }
            TraceAction::Complete => {
                let end = e.sector + u64::from(e.bytes).div_ceil(512);
                let done: Vec<(u64, u64)> = self
                    .in_flight
                    .range((e.sector, 0)..(end, 0))
                    .map(|(k, _)| *k)
                    .collect();
                for key in done {
                    if let Some((pid, queued)) = self.in_flight.remove(&key) {
                        let s = self.by_pid.entry(pid).or_default();
                        s.bios += 1;
                        s.latency_ns += e.time.saturating_sub(queued);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn process(&mut self, _pid: u32, _name: &str, _time: u64) -> std::io::Result<()> {
        Ok(())
    }

    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::jain;

    #[test]
    fn jain_is_one_when_equal_and_one_over_n_when_one_takes_all() {
        assert_eq!(jain(&[3.0, 3.0, 3.0]), 1.0);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert_eq!(jain(&[]), 1.0);
    }
}
