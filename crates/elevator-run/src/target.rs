//! [`Target`]: where a workload runs, a device model on the virtual clock
//! (elevator-sim) or real devices through io_uring (elevator-io) with their
//! threads and lock design, from the spec a user gives (`hdd-7200,rpm=5400`,
//! `file:PATH`, `mem:SIZE`); the checks made before anything runs
//! (schedulers and tunables, memory); and what a job's file is on it (the
//! device's own file is the whole device: [`Target::jobs_on_device`]).

use std::borrow::Cow;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use elevator_core::{BuildError, DeviceShape, Limits, Queue};
use elevator_fio::job::{JobFile, JobSpec};
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

    /// `jobs` as they run on this target. On `file:PATH`, a job whose
    /// `filename` (under its `directory`) is the device's own file, the same
    /// file however it is written, and that gives no `size`, `filesize` or
    /// `fill_device`, does its I/O on the whole device, as fio does on an
    /// existing file or device with no size: it is given no file name of
    /// its own, which the layout reads as the whole device. Other jobs, and
    /// every job on a model or `mem:`, are as given (a job that names no
    /// file and no size uses the whole device there too).
    pub fn jobs_on_device<'a>(&self, jobs: &'a JobFile) -> Cow<'a, JobFile> {
        let DeviceKind::File { path, .. } = &self.spec.kind else {
            return Cow::Borrowed(jobs);
        };
        let Ok(device) = std::fs::metadata(path) else {
            return Cow::Borrowed(jobs);
        };
        let is_device = |job: &JobSpec| {
            let Some(name) = &job.filename else {
                return false;
            };
            if job.size.is_some() || job.filesize.is_some() || job.fill_device {
                return false;
            }
            let name = match &job.directory {
                Some(dir) if !name.starts_with('/') => Path::new(dir).join(name),
                _ => Path::new(name).to_path_buf(),
            };
            std::fs::metadata(name)
                .is_ok_and(|m| m.dev() == device.dev() && m.ino() == device.ino())
        };
        if !jobs.jobs.iter().any(is_device) {
            return Cow::Borrowed(jobs);
        }
        let mut resolved = jobs.clone();
        for job in &mut resolved.jobs {
            if is_device(job) {
                job.filename = None;
                job.filename_format = None;
                job.directory = None;
                job.nrfiles = 1;
            }
        }
        Cow::Owned(resolved)
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
                .map(|j| u64::from(j.numjobs) * u64::from(j.iodepth))
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
