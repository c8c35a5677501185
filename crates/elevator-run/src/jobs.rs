//! Running fio jobs on a [`Target`]: on a device model (the virtual clock,
//! this thread) or on real devices (io_uring, a thread per device or job
//! clone, the chosen lock design), with the same [`Taps`] either way, and
//! the run's figures, CPU cost, failure and write-log check given back as
//! one [`JobsRun`].

use std::sync::{Arc, Mutex};

use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_fio::result::{JobResult, RunResult};
use elevator_fio::workload::{IoError, JobFailure, Layout};
use elevator_io::{DeviceSpec, FaultTally, RealDevice};
use elevator_sim::device::{ModelSpec, WriteLogReport};
use elevator_sim::engine::{HeadsOut, SimError, TraceOut};
use elevator_trace::TraceSink;
use elevator_trace::tap::TraceSummary;

use crate::cpu_time::thread_cpu_ns;
use crate::error::{Failure, RunError};
use crate::listener::{Listener, Progress};
use crate::taps::iolog::Appends;
use crate::taps::write_log::{RealLogged, SimLogged};
use crate::taps::{Taps, blktrace};
use crate::target::Target;

/// What a run of fio jobs gave.
#[derive(Debug)]
pub struct JobsRun {
    /// The run's figures (a failed job's, up to its failure).
    pub result: RunResult,
    /// Host CPU the run took, ns: this thread's for a simulation, the
    /// process's user + system time on real devices.
    pub cpu_ns: u64,
    /// A job that failed on its own terms, or the write log's check.
    pub failure: Option<Failure>,
    /// What the write log's check found, on a model (with a write log, or
    /// when the model has faults: the check then runs without a file).
    pub write_log: Option<WriteLogReport>,
}

/// fio jobs to run on a [`Target`], with the run's settings and taps: what
/// [`JobsRequest::run`] takes.
#[derive(Debug, Clone, Copy)]
pub struct JobsRequest<'a> {
    /// The job file to run.
    pub jobs: &'a JobFile,
    /// Where to run it: a device model or real devices, and their threads.
    pub target: &'a Target,
    /// The scheduler, its tunables and the seed.
    pub cfg: &'a RunConfig,
    /// Where the run's events and writes go besides the figures.
    pub taps: &'a Taps<'a>,
}

impl JobsRequest<'_> {
    /// Run the jobs on the target to the end: a job that failed on its own
    /// terms (a verify error, `rate_min` not met) still gives the run's
    /// figures, with what failed ([`JobsRun::failure`]), as fio reports such
    /// a run in full. The notes are the write log's, the trace's
    /// (`taps.trace_out`) and the I/O errors jobs met; jobs with
    /// `write_iolog` log their I/Os there.
    pub fn run(&self, listener: &mut dyn Listener) -> Result<JobsRun, RunError> {
        self.target
            .check_plugin_runs_here(&self.cfg.scheduler, &self.cfg.plugins)?;
        let threads = &self.target.threads;
        let jobs = self.target.jobs_on_device(self.jobs);
        let request = JobsRequest {
            jobs: &jobs,
            ..*self
        };
        let run = match self.target.model() {
            Some(_) if !threads.also.is_empty() => {
                return Err(RunError::Usage(
                    "--also-device goes with a real --device (file:PATH or mem:SIZE): a disk \
                     model runs in the simulator, one device at a time"
                        .to_string(),
                ));
            }
            Some(_) if threads.lock.is_some() || threads.lock_stats => {
                return Err(RunError::Usage(
                    "--lock and --lock-stats go with a real --device (file:PATH or mem:SIZE): \
                     the simulator runs one queue on one virtual clock, with no threads or locks"
                        .to_string(),
                ));
            }
            Some(model) => request.run_model(model, listener)?,
            None => request.run_real(listener)?,
        };
        io_error_notes(self.jobs, &run.result, listener);
        Ok(run)
    }

    /// [`JobsRequest::run`], with a failure as an error.
    pub fn run_strict(&self, listener: &mut dyn Listener) -> Result<JobsRun, RunError> {
        let mut run = self.run(listener)?;
        match run.failure.take() {
            Some(failure) => Err(RunError::Failed(failure)),
            None => Ok(run),
        }
    }
    /// Run on a device model, on this thread.
    fn run_model(
        &self,
        model: &ModelSpec,
        listener: &mut dyn Listener,
    ) -> Result<JobsRun, RunError> {
        let Self {
            jobs, cfg, taps, ..
        } = *self;
        let (mut sink, appends) = taps.run_sink(jobs, || {
            Ok(model.build()?.limits().capacity.saturating_mul(512))
        })?;
        let mut out = sink.as_mut().map(|s| TraceOut::new(&mut **s));
        let mut heads = taps.observer.map(|o| HeadsOut::new(o.max_heads()));
        let t0 = thread_cpu_ns();
        let mut device = SimLogged::build(model, taps.write_log, |e| SimError::from(e).into())?;
        let result = elevator_sim::engine::run_on(
            jobs,
            device.device(),
            cfg,
            &mut |p| listener.progress(Progress::Jobs(p)),
            out.as_mut(),
            heads.as_mut(),
        );
        let write_log = device.finish(listener)?;
        let cpu_ns = thread_cpu_ns().saturating_sub(t0);
        if let (Some(o), Some(h)) = (taps.observer, heads) {
            o.set_heads(&mut h.samples.iter().map(|s| (s.time, s.cylinder)));
        }
        listener.finished();
        let summary = out.and_then(|o| o.summary);
        close_taps(
            sink.as_mut(),
            appends,
            taps.trace_out,
            summary.as_ref(),
            listener,
        )?;
        let check = write_log
            .as_ref()
            .and_then(|r| r.verdict().err())
            .map(Failure::Check);
        let (result, failure) = match result {
            Ok(result) => (result, check),
            Err(SimError::JobFailed {
                job,
                clone,
                failure,
                partial,
            }) => (*partial, job_failed(job, clone, failure)),
            Err(e) => return Err(e.into()),
        };
        Ok(JobsRun {
            result,
            cpu_ns,
            failure,
            write_log,
        })
    }

    /// Run on real devices: the target's, and the `also` devices, each on a
    /// thread of its own.
    fn run_real(&self, listener: &mut dyn Listener) -> Result<JobsRun, RunError> {
        let Self {
            jobs,
            target,
            cfg,
            taps,
        } = *self;
        let threads = &target.threads;
        let mut devs = vec![target.spec().open()?];
        for spec in &threads.also {
            let extra = DeviceSpec::parse(spec)?;
            if extra.model().is_some() {
                return Err(RunError::Usage(format!(
                    "--also-device {spec}: several devices must all be real (file:PATH or \
                 mem:SIZE); a disk model runs in the simulator, one at a time"
                )));
            }
            devs.push(extra.open()?);
        }
        let devs_given = devs.len();
        // Each faulty device's counts, to report once the run has taken the
        // devices and is over.
        let faults: Vec<(usize, FaultTally)> = devs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| match d {
                RealDevice::Faulty(f) => Some((i, f.tally())),
                _ => None,
            })
            .collect();
        // The write log records the --device (with its data); its shares, one
        // per thread, record into the same log.
        let write_log = match taps.write_log {
            Some(path) if devs_given > 1 => {
                return Err(RunError::Usage(format!(
                    "--write-log {} records one device: --also-device gives {devs_given}",
                    path.display()
                )));
            }
            Some(path) => {
                // One device (refused above otherwise): the --device.
                let (log, first) = RealLogged::create(path, devs.swap_remove(0))?;
                devs.push(first);
                Some(log)
            }
            None => None,
        };
        let tcfg = elevator_io::mq::ThreadConfig {
            run: cfg.clone(),
            lock: threads.lock.unwrap_or_default(),
            lock_stats: threads.lock_stats,
        };
        let (sink, appends) = taps.run_sink(jobs, || {
            let bytes = devs
                .iter()
                .map(|d| elevator_core::Device::limits(d).capacity << 9)
                .min();
            Ok(bytes.unwrap_or(0))
        })?;
        let sink = sink.map(|s| Arc::new(Mutex::new(s)));
        let result = elevator_io::mq::run_threads_traced(
            jobs,
            devs,
            |d: &RealDevice| d.share(),
            &tcfg,
            &mut |p| listener.progress(Progress::Jobs(p)),
            sink.clone(),
        );
        listener.finished();
        if let Some(log) = &write_log {
            log.finish(listener)?;
        }
        for (i, tally) in &faults {
            let which = match (devs_given, i) {
                (1, _) => String::new(),
                (_, 0) => " on --device".to_string(),
                (_, i) => format!(" on --also-device {}", threads.also[i - 1]),
            };
            listener.note(&format!("faults injected{which}: {}", tally.get()));
        }
        let mut guard = sink
            .as_ref()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()));
        close_taps(
            guard.as_deref_mut(),
            appends,
            taps.trace_out,
            result.as_ref().ok().and_then(|run| run.trace.as_ref()),
            listener,
        )?;
        drop(guard);
        let (result, failure) = match result {
            Ok(run) => (run.result, None),
            Err(elevator_io::jobs::JobRunError::JobFailed {
                job,
                clone,
                failure,
                partial,
            }) => (*partial, job_failed(job, clone, failure)),
            Err(e) => return Err(e.into()),
        };
        let cpu_ns = result.cpu.map_or(0, |c| c.process_ns);
        Ok(JobsRun {
            result,
            cpu_ns,
            failure,
            write_log: None,
        })
    }
}

/// The failure of a job clone, from an engine's error.
fn job_failed(job: String, clone: u32, failure: Box<JobFailure>) -> Option<Failure> {
    Some(Failure::Job {
        job,
        clone,
        failure,
    })
}

/// Close a run's trace sink and iolog files, and note what went into the
/// blktrace files (`trace_out`) if the run got that far (`summary`).
fn close_taps(
    sink: Option<&mut Box<dyn TraceSink + Send>>,
    appends: Option<Appends>,
    trace_out: Option<&str>,
    summary: Option<&TraceSummary>,
    listener: &mut dyn Listener,
) -> Result<(), RunError> {
    if let Some(sink) = sink {
        sink.finish()
            .map_err(RunError::io("writing the trace (--trace-out, write_iolog)"))?;
    }
    if let Some(appends) = appends {
        appends.finish()?;
    }
    if let (Some(prefix), Some(summary)) = (trace_out, summary) {
        for note in blktrace::summary_notes(prefix, summary) {
            listener.note(&note);
        }
    }
    Ok(())
}

/// fio's line for each I/O error it reports: the one that ended each
/// failed job clone, and with `error_dump` the first one each clone went on
/// after (`io_u error on file NAME: TEXT: write offset=N, buflen=N`); and
/// for a clone that went on after errors, how many. A few notes per clone
/// at most, however many I/Os failed.
fn io_error_notes(jobs: &JobFile, result: &RunResult, listener: &mut dyn Listener) {
    let line = |j: &JobResult, e: &IoError, what: &str| {
        let file = match (jobs.jobs.get(j.job_index), e.file) {
            (Some(spec), Some((n, _))) => {
                format!(" on file {}", Layout::file_name(spec, j.clone, n))
            }
            _ => String::new(),
        };
        format!("io_u error{file}: {}{what}", e.what())
    };
    for j in &result.jobs {
        if let Some(e) = &j.first_ignored {
            listener.note(&line(j, e, " (went on: continue_on_error)"));
        }
        if j.total_err > 0 {
            // The run may succeed, as fio's does: say so where it is seen.
            listener.note(&format!(
                "job '{}' (clone {}) went on after {} errors (first: {}, {}), as \
                 continue_on_error / ignore_error ask",
                j.name,
                j.clone,
                j.total_err,
                j.first_error,
                elevator_fio::errno::name(j.first_error).unwrap_or("?")
            ));
        }
        if let Some(JobFailure::Io(e)) = &j.failure {
            listener.note(&line(j, e, ""));
        }
    }
}
