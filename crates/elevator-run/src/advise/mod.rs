//! Advice on a scheduler: one workload (a fio job or a recorded trace) run
//! under every scheduler and each `nomerges` setting asked for, on a device
//! model where every run sees the same device, and what each run gave in
//! the figures the goals rank by ([`Measured`]: throughput, p99 latency,
//! Jain's fairness).
//!
//! A file is taken as a trace when its content is one (blktrace's magic, a
//! blkparse, tracefs or iolog line, or gzip/xz compression), when a per-CPU
//! set `NAME.blktrace.0` is beside it, or when asked; as a fio job file
//! otherwise ([`workload`]). [`ranking`] orders the runs by a goal and
//! explains the choice.

pub mod measure;
pub mod ranking;

use std::io::Read;
use std::path::Path;

use elevator_core::SCHEDULER_NAMES;
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::result::RunResult;
use elevator_sim::device::ModelSpec;
use elevator_sim::replay::{ReplayConfig, replay as replay_sim};
use elevator_trace::replay::{Events, FlushModel, Planner, Timing};

use crate::error::RunError;
use crate::job_text::load_job;
use crate::jobs::JobsRequest;
use crate::listener::Listener;
use crate::target::{Target, parse_tunables};

pub use measure::{Measured, jain};
use measure::{SubmitterLatency, measure_job, measure_trace};

/// The workload to advise on.
#[derive(Debug)]
pub enum Workload {
    /// A fio job, named as given (a path, or `command line`).
    Job {
        /// The jobs.
        jobs: JobFile,
        /// Its name.
        name: String,
    },
    /// A recorded trace.
    Trace {
        /// Its path.
        path: String,
    },
}

impl Workload {
    /// Its name: the job's, or the trace's path.
    pub fn name(&self) -> &str {
        match self {
            Workload::Job { name, .. } => name,
            Workload::Trace { path } => path,
        }
    }

    /// `job` or `trace`.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::Job { .. } => "job",
            Workload::Trace { .. } => "trace",
        }
    }
}

/// What to try.
#[derive(Clone, Debug)]
pub struct AdviseOptions {
    /// The schedulers.
    pub schedulers: Vec<String>,
    /// The `nomerges` settings to try each with.
    pub nomerges: Vec<u8>,
    /// Tunables for every run (not `nomerges`).
    pub tunables: Vec<(String, String)>,
    /// Seed mixed into every job's random stream.
    pub seed: u64,
    /// Replay a trace as a closed loop of at most this many bios (`None`:
    /// open loop at the recorded times).
    pub depth: Option<u32>,
}

impl AdviseOptions {
    /// The options, checked; no schedulers means every one; `sets` are
    /// `NAME=VALUE` tunables.
    pub fn new(
        schedulers: Vec<String>,
        nomerges: Vec<u8>,
        sets: &[String],
        seed: u64,
        depth: Option<u32>,
    ) -> Result<AdviseOptions, RunError> {
        let schedulers = if schedulers.is_empty() {
            SCHEDULER_NAMES.iter().map(|s| s.to_string()).collect()
        } else {
            schedulers
        };
        if nomerges.is_empty() {
            return Err(RunError::Usage(
                "--nomerges: give at least one setting (0, 1 or 2)".to_string(),
            ));
        }
        if let Some(bad) = nomerges.iter().find(|n| **n > 2) {
            return Err(RunError::Usage(format!(
                "--nomerges {bad}: must be 0, 1 or 2"
            )));
        }
        let tunables = parse_tunables(sets)?;
        if tunables.iter().any(|(n, _)| n == "nomerges") {
            return Err(RunError::Usage(
                "--set nomerges=...: give the settings to try with --nomerges instead".to_string(),
            ));
        }
        Ok(AdviseOptions {
            schedulers,
            nomerges,
            tunables,
            seed,
            depth,
        })
    }
}

/// The workload a command line names: `path` (a trace if `trace` says so
/// or its content shows it, else a job file) with fio job options `fio`.
pub fn workload(path: Option<&str>, fio: &[String], trace: bool) -> Result<Workload, RunError> {
    match path {
        Some("-") => Err(RunError::Usage(
            "advise reads its workload once per scheduler: give a file, not standard input"
                .to_string(),
        )),
        Some(path) if trace || is_trace(path)? => {
            if !fio.is_empty() {
                return Err(RunError::Usage(format!(
                    "{path} is a trace: fio job options ({}) go with a job",
                    fio.join(" ")
                )));
            }
            Ok(Workload::Trace {
                path: path.to_string(),
            })
        }
        Some(path) => Ok(Workload::Job {
            jobs: load_job(Some(path), fio)?,
            name: path.to_string(),
        }),
        None if trace => Err(RunError::Usage("--trace: name the trace".to_string())),
        None => Ok(Workload::Job {
            jobs: load_job(None, fio)?,
            name: "command line".to_string(),
        }),
    }
}

/// Run `workload` on the model `target` under every scheduler and
/// `nomerges` setting of `opts`, in that order, and measure each run. The
/// listener hears each run's notes (a faulty model's write-log summary, I/O
/// errors), not its progress.
pub fn advise(
    workload: &Workload,
    target: &Target,
    opts: &AdviseOptions,
    listener: &mut dyn Listener,
) -> Result<Vec<Measured>, RunError> {
    let model = target.model_only("advise")?;
    if opts.depth.is_some() && matches!(workload, Workload::Job { .. }) {
        return Err(RunError::Usage(
            "--depth goes with a trace; a fio job sets its own iodepth".to_string(),
        ));
    }
    let alone = match workload {
        // One job section's clones all share one figure alone: no need.
        Workload::Job { jobs, name } if jobs.jobs.len() > 1 => {
            alone_throughputs(jobs, target, &opts.tunables, opts.seed, listener)
                .map_err(|e| e.during(format!("running each job of {name} alone")))?
        }
        _ => Vec::new(),
    };
    let mut runs = Vec::new();
    for sched in &opts.schedulers {
        for &nomerges in &opts.nomerges {
            let mut set = opts.tunables.clone();
            set.push(("nomerges".to_string(), nomerges.to_string()));
            let measured = match workload {
                Workload::Job { jobs, name } => {
                    run_job(jobs, target, sched, set, opts.seed, listener)
                        .map(|run| measure_job(&run, nomerges, &alone))
                        .map_err(|e| e.during(format!("running {name} under {sched}")))?
                }
                Workload::Trace { path } => {
                    replay_trace(path, model, sched, set, opts.depth, nomerges)
                        .map_err(|e| e.during(format!("replaying {path} under {sched}")))?
                }
            };
            runs.push(measured);
        }
    }
    Ok(runs)
}

/// Whether the file at `path` is a trace: its content (compressed, or in a
/// format [`elevator_trace::detect`] knows), or a per-CPU blktrace set
/// named by it.
fn is_trace(path: &str) -> Result<bool, RunError> {
    if Path::new(&format!("{path}.blktrace.0")).exists() {
        return Ok(true);
    }
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .map_err(RunError::io(format!("opening {path}")))?
        .take(4096)
        .read_to_end(&mut head)
        .map_err(RunError::io(format!("reading {path}")))?;
    Ok(
        elevator_trace::open::compression(&head) != elevator_trace::open::Compression::None
            || elevator_trace::detect(&head).is_some(),
    )
}

/// Run `jobs` under `scheduler` with `tunables` on the simulated `target`.
fn run_job(
    jobs: &JobFile,
    target: &Target,
    scheduler: &str,
    tunables: Vec<(String, String)>,
    seed: u64,
    listener: &mut dyn Listener,
) -> Result<RunResult, RunError> {
    let cfg = RunConfig {
        plugins: Default::default(),
        scheduler: scheduler.to_string(),
        tunables,
        seed,
    };
    let request = JobsRequest {
        jobs,
        target,
        cfg: &cfg,
        taps: &Default::default(),
    };
    Ok(request.run_strict(listener)?.result)
}

/// Each job section's throughput (bytes/s) when one clone of it runs
/// alone on the device, under `none` with the queue tunables of `tunables`
/// (those `none` has): what fairness measures each job's share against.
fn alone_throughputs(
    jobs: &JobFile,
    target: &Target,
    tunables: &[(String, String)],
    seed: u64,
    listener: &mut dyn Listener,
) -> Result<Vec<f64>, RunError> {
    let none = ["none".to_string()];
    let queue_tunables: Vec<(String, String)> = tunables
        .iter()
        .filter(|t| {
            target
                .check_schedulers(&none, std::slice::from_ref(*t))
                .is_ok()
        })
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
        let run = run_job(
            &solo,
            target,
            "none",
            queue_tunables.clone(),
            seed,
            listener,
        )?;
        let bytes: u64 = run
            .jobs
            .iter()
            .flat_map(|j| j.dirs.iter())
            .map(|d| d.bytes)
            .sum();
        let runtime = run.jobs.first().map_or(run.elapsed, |j| j.runtime());
        alone.push(elevator_fio::report::rate(bytes, runtime.max(1)));
    }
    Ok(alone)
}

/// Replay the trace at `path` under `scheduler` on `model`.
fn replay_trace(
    path: &str,
    model: &ModelSpec,
    scheduler: &str,
    tunables: Vec<(String, String)>,
    depth: Option<u32>,
    nomerges: u8,
) -> Result<Measured, RunError> {
    let reader = elevator_trace::open(Path::new(path), None, false)?;
    let plan = Planner::new(reader, Events::Queued, None);
    let cfg = ReplayConfig {
        plugins: Default::default(),
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
