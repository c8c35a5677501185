//! [`Target`]: where a workload runs, a device model on the virtual clock
//! (elevator-sim) or real devices through io_uring (elevator-io) with their
//! threads and lock design, from the spec a user gives (`hdd-7200,rpm=5400`,
//! `file:PATH`, `mem:SIZE`); the checks made before anything runs
//! (schedulers and tunables, memory); and what a job's file is on it (the
//! device's own file is the whole device: [`Target::jobs_on_device`]).

use std::borrow::Cow;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use elevator_core::{
    AnyScheduler, BuildError, ConfigError, DeviceShape, Limits, Plugins, Queue, canonical_scheduler,
};
use elevator_fio::job::{Amount, JobFile, JobSpec};
use elevator_io::mq::LockMode;
use elevator_io::{DeviceKind, DeviceSpec};
use elevator_sim::device::ModelSpec;

use crate::error::RunError;
use crate::job_text::machine_memory;
use crate::listener::Listener;

/// How a run on real devices uses threads and locks.
#[derive(Clone, Debug, Default)]
pub struct Threads {
    /// The locking design (default: blk-mq's).
    pub lock: Option<LockMode>,
    /// Measure every lock the layer takes.
    pub lock_stats: bool,
    /// More real devices: job clone k runs on device k mod N, each on a
    /// thread of its own (the specs as given).
    pub also: Vec<String>,
}

/// A device to run on: a model or a real device, with the threads and
/// locks of a real run.
#[derive(Debug)]
pub struct Target {
    spec: DeviceSpec,
    name: String,
    /// Threads and locks (a model takes none).
    pub threads: Threads,
}

impl Target {
    /// The target a device spec names (`hdd-7200,rpm=5400`, `nvme`,
    /// `file:PATH`, `mem:SIZE`), with no extra threads.
    pub fn parse(spec: &str) -> Result<Target, RunError> {
        Ok(Target {
            spec: DeviceSpec::parse(spec)?,
            name: spec.to_string(),
            threads: Threads::default(),
        })
    }

    /// The target of a spec already parsed, named `name`.
    pub fn from_spec(spec: DeviceSpec, name: impl Into<String>) -> Target {
        Target {
            spec,
            name: name.into(),
            threads: Threads::default(),
        }
    }

    /// This target with these threads and locks.
    pub fn with_threads(mut self, threads: Threads) -> Target {
        self.threads = threads;
        self
    }

    /// The spec as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is a real device (io_uring, the real clock).
    pub fn is_real(&self) -> bool {
        self.spec.model().is_none()
    }

    /// The spec as given, with the model's description after it
    /// (`hdd-7200 (7200 rpm disk ...)`) for a model.
    pub fn described(&self) -> String {
        match self.spec.model().map(ModelSpec::build) {
            Some(Ok(d)) => format!("{} ({})", self.name, d.describe()),
            _ => self.name.clone(),
        }
    }

    /// The parsed spec.
    pub fn spec(&self) -> &DeviceSpec {
        &self.spec
    }

    /// The device model, if this is one.
    pub fn model(&self) -> Option<&ModelSpec> {
        self.spec.model()
    }

    /// The model, or why a command that runs on models only (`what`)
    /// cannot run here.
    pub fn model_only(&self, what: &str) -> Result<&ModelSpec, RunError> {
        self.spec.model().ok_or_else(|| {
            RunError::Usage(format!(
                "--device {}: {what} runs on simulated devices only (a preset such as hdd-7200 \
                 or nvme; `elevator devices` lists them), where every scheduler sees the same \
                 device",
                self.name
            ))
        })
    }

    /// `jobs` as they run on this target, sized as fio sizes a job that
    /// gives no `size`, `filesize` or `fill_device` from its existing file:
    ///
    /// - on `file:PATH`, a job whose `filename` (under its `directory`) is
    ///   the device's own file, the same file however it is written, does
    ///   its I/O on the whole device, as fio does on a device: it is given
    ///   no file name of its own, which the layout reads as the whole
    ///   device (as it does a job that names no file, on any device);
    /// - a job whose `filename` is another regular file that exists here,
    ///   and that no earlier job gave a size, gets that file's size as its
    ///   `filesize` (fio reads an existing file whole), its file laid out
    ///   on the device as any other; with `size=N%`, N % of that file's
    ///   size is its `size`.
    ///
    /// Every other job is as given (a missing file with no size is refused
    /// by the layout, as fio refuses it).
    pub fn jobs_on_device<'a>(&self, jobs: &'a JobFile) -> Cow<'a, JobFile> {
        let device = match &self.spec.kind {
            DeviceKind::File { path, .. } => std::fs::metadata(path).ok(),
            _ => None,
        };
        let mut resolved: Option<JobFile> = None;
        for (j, job) in jobs.jobs.iter().enumerate() {
            let Some(name) = host_file(job) else {
                continue;
            };
            // An earlier job that gave the file a size laid it out: it
            // keeps that size, as before.
            let laid_out = jobs.jobs[..j].iter().any(|earlier| {
                earlier.filename.is_some()
                    && host_file(earlier).is_none()
                    && host_file_name(earlier) == name
            });
            let Ok(meta) = std::fs::metadata(&name) else {
                continue;
            };
            if laid_out {
                continue;
            }
            let whole = job.size.is_none()
                && device
                    .as_ref()
                    .is_some_and(|d| d.dev() == meta.dev() && d.ino() == meta.ino());
            let sized = !whole && meta.is_file() && meta.len() >= 512;
            if !whole && !sized {
                continue;
            }
            let spec = &mut resolved.get_or_insert_with(|| jobs.clone()).jobs[j];
            match spec.size {
                _ if whole => {
                    spec.filename = None;
                    spec.filename_format = None;
                    spec.directory = None;
                    spec.nrfiles = 1;
                }
                // A percentage is of the file, as in fio.
                Some(Amount::Percent(p)) => {
                    let bytes = u128::from(meta.len()) * u128::from(p) / 100;
                    spec.size = Some(Amount::Bytes(bytes as u64 / 512 * 512));
                }
                _ => spec.filesize = Some(meta.len() / 512 * 512),
            }
        }
        match resolved {
            Some(r) => Cow::Owned(r),
            None => Cow::Borrowed(jobs),
        }
    }

    /// Check every scheduler name and every tunable before anything runs,
    /// so that a mistake in the last of several schedulers is not found
    /// after the first has run in full. Tunables are tried on a queue of
    /// each scheduler; on a real device the engine's own `submit_batch` is
    /// checked by the engine's rule.
    pub fn check_schedulers(
        &self,
        schedulers: &[String],
        tunables: &[(String, String)],
    ) -> Result<(), RunError> {
        self.check_schedulers_in(schedulers, tunables, &Plugins::default())
    }

    /// [`Target::check_schedulers`], where a name may also be one of
    /// `plugins` (schedulers written in Python), which run in simulation
    /// only. Tunables are checked against the built-in schedulers among
    /// `schedulers`; a plugin takes its settings from its own constructor.
    pub fn check_schedulers_in(
        &self,
        schedulers: &[String],
        tunables: &[(String, String)],
        plugins: &Plugins,
    ) -> Result<(), RunError> {
        let (foreign, schedulers): (Vec<String>, Vec<String>) = schedulers
            .iter()
            .cloned()
            .partition(|s| canonical_scheduler(s).is_none() && plugins.find(s).is_some());
        for name in &foreign {
            self.check_plugin_runs_here(name, plugins)?;
        }
        let schedulers = &schedulers[..];
        // The engine's own tunable, on a real device; the rest are the queue's.
        let mut queue_tunables = Vec::with_capacity(tunables.len());
        for (name, value) in tunables {
            if self.is_real() && name == elevator_io::engine::SUBMIT_BATCH {
                elevator_io::engine::parse_batch(name, value).map_err(|error| {
                    RunError::Tunable {
                        setting: format!("{name}={value}"),
                        error,
                    }
                })?;
            } else {
                queue_tunables.push((name.clone(), value.clone()));
            }
        }
        for sched in schedulers {
            AnyScheduler::by_name(sched).map_err(ConfigError::from)?;
        }
        for (name, value) in &queue_tunables {
            crate::names::check_tunable_name(name, value, schedulers, self.is_real())?;
        }
        let shape = DeviceShape {
            limits: Limits::default(),
            queue_depth: 32,
            rotational: true,
        };
        for sched in schedulers {
            Queue::for_device(shape, sched, &queue_tunables).map_err(|e| match e {
                BuildError::Config(e) => RunError::from(e),
                BuildError::Tunable { name, value, error } => RunError::Tunable {
                    setting: format!("{name}={value} under {sched}"),
                    error,
                },
            })?;
        }
        Ok(())
    }

    /// Refuse a plugin scheduler (one of `plugins` named `scheduler`) on a
    /// real device: plugins run in simulation only.
    pub fn check_plugin_runs_here(
        &self,
        scheduler: &str,
        plugins: &Plugins,
    ) -> Result<(), RunError> {
        if self.is_real()
            && canonical_scheduler(scheduler).is_none()
            && plugins.find(scheduler).is_some()
        {
            return Err(RunError::Usage(format!(
                "scheduler {scheduler} is written in Python: it runs in simulation only, on a \
                 device model (such as hdd-7200), not on {}",
                self.name()
            )));
        }
        Ok(())
    }

    /// Refuse a run whose workers and I/O buffers would hold more than half
    /// of the machine's memory, before anything is allocated: such a run
    /// would be killed by the kernel partway (`numjobs=4096` with
    /// `iodepth=65536` grew to 23 GB and was). Notes what the device spec
    /// warns of (a memory device larger than the host's available memory).
    pub fn check_memory(
        &self,
        jobs: &JobFile,
        listener: &mut dyn Listener,
    ) -> Result<(), RunError> {
        for warning in self.spec.warnings() {
            listener.note(&format!("warning: {warning}"));
        }
        let Some(total) = machine_memory() else {
            return Ok(());
        };
        let (need, what) = if self.is_real() {
            (
                elevator_io::jobs::memory_estimate(jobs),
                "for its job clones and their I/O buffers (iodepth × bs each)",
            )
        } else {
            (
                elevator_sim::engine::memory_estimate(jobs),
                "for its job clones and their I/O records",
            )
        };
        if need > total / MEMORY_SHARE {
            let clones: u64 = jobs.jobs.iter().map(|j| u64::from(j.numjobs)).sum();
            let ios: u64 = jobs
                .jobs
                .iter()
                .map(|j| u64::from(j.numjobs) * u64::from(j.queue_depth()))
                .sum();
            let iec = elevator_fio::report::text::iec;
            return Err(RunError::Usage(format!(
                "{}: this run would hold about {} {what}: {clones} job clones with {ios} I/Os \
                 in flight in all, more than half of this machine's memory ({}); lower numjobs \
                 or iodepth",
                jobs.path,
                iec(need as f64),
                iec(total as f64),
            )));
        }
        Ok(())
    }
}

/// The host path of `job`'s file when fio would size the job from it: it
/// names a file (not one under `/dev/`, which the layout takes as the
/// device) and gives no `filesize` or `fill_device`, and no `size` but a
/// percentage (of the file, in fio).
fn host_file(job: &JobSpec) -> Option<std::path::PathBuf> {
    let name = job.filename.as_ref()?;
    let sized = matches!(job.size, Some(Amount::Bytes(_)));
    if sized || job.filesize.is_some() || job.fill_device || name.starts_with("/dev/") {
        return None;
    }
    Some(host_file_name(job))
}

/// `job`'s first file as a host path: `filename` under `directory`.
fn host_file_name(job: &JobSpec) -> std::path::PathBuf {
    let name = job.filename.as_deref().unwrap_or_default();
    match &job.directory {
        Some(dir) if !name.starts_with('/') => Path::new(dir).join(name),
        _ => Path::new(name).to_path_buf(),
    }
}

/// `--set NAME=VALUE` options as (name, value) pairs.
pub fn parse_tunables(sets: &[String]) -> Result<Vec<(String, String)>, RunError> {
    sets.iter()
        .map(|s| {
            let (n, v) = s
                .split_once('=')
                .ok_or_else(|| RunError::Usage(format!("--set '{s}': expected TUNABLE=VALUE")))?;
            Ok((n.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// The share of the machine's memory a run may plan to hold: half.
const MEMORY_SHARE: u64 = 2;
