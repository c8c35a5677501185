//! The discrete-event engine: fio jobs through elevator-core's queue onto a
//! device model, on a virtual clock.
//!
//! Events, in time order: a device completion (the device says when its next
//! one is due), a worker waking (the end of its think time, rate wait, ramp,
//! flow wait or runtime: whatever [`Worker::next_wake`] says), a job's
//! `startdelay` running out, and a scheduler timer (a scheduler that idles
//! answers "wait until T"). Jobs start by their start rules
//! ([`workload::start_ready`]: `stonewall`, `wait_for`, `startdelay`),
//! looked at when the run starts, when a job finishes and when a delay ends.
//! A job that ends with `exitall` (or `exitall_on_error`, failed) ends the
//! others its `exit_what` names ([`workload::end_others`]) at that instant.
//! With `ss_dur`, a tick every second of virtual time samples the jobs for
//! steady state ([`workload::SteadyWatch`]) and ends those that reach it. After every event the engine dispatches
//! from the queue while the device has room. Equal times are broken by the
//! order events were scheduled, so the same job file, device, scheduler and
//! seed give the same result, event for event.
//!
//! Every job clone is its own I/O context (a process, in Linux's terms). A
//! worker issues its I/Os under a plug, as `io_submit` does; a bio the queue
//! cannot take (no free tag) waits, and that wait shows as submission
//! latency. Workers waiting for a tag wait in one line, first come first
//! served per I/O: as tags free up, the worker at the front issues one I/O
//! and, if it wants another, waits again at the back, so the waiters share
//! the tags in turn as Linux's woken tag waiters do. Nothing here reads a
//! clock: host CPU time is for the caller to measure.
//!
//! The simulation moves no data: `verify`'s read-backs are issued and timed
//! as fio's are, but nothing is checked. `thinktime_spin` passes like the
//! rest of the think time.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use elevator_core::{
    BioCompletion, BuildError, ConfigError, DeviceIo, Dispatch, HeadSample, Nanos, Op, Outcome,
    Queue, RequestId, Scheduler, SubmitError, TunableError,
};
use thiserror::Error;

use elevator_fio::job::{JobError, JobFile};
use elevator_fio::result::RunResult;
use elevator_fio::workload::{self, JobFailure, Pending, State, VerifyIo, Worker};
use elevator_fio::{Progress, RunConfig};

use crate::device::{ModelSpec, ParamError, SimDevice};
use elevator_trace::tap::{CpuRule, TRACE_DEV, TraceSummary, TraceTap};

/// Why a run could not happen.
#[derive(Debug, Error)]
pub enum SimError {
    /// A plugin scheduler failed (a Python exception): `message` says how.
    #[error("scheduler {name} failed: {message}")]
    Scheduler {
        /// The scheduler's name.
        name: String,
        /// Its failure (a Python traceback).
        message: String,
    },
    /// The job file asks for something impossible on this device.
    #[error(transparent)]
    Job(#[from] JobError),
    /// The device cannot be built.
    #[error("bad device parameters")]
    Device(#[from] ParamError),
    /// The queue cannot be built for this device and scheduler.
    #[error("cannot build the queue")]
    Queue(#[from] ConfigError),
    /// A tunable given with `--set`.
    #[error("--set {name}={value}: {error}")]
    Tunable {
        /// Tunable name.
        name: String,
        /// Its value as given.
        value: String,
        /// What was wrong.
        error: TunableError,
    },
    /// A job issued a bio the queue refused: a bug in the job's layout.
    #[error("job '{job}' issued a bad bio: {error}")]
    Bio {
        /// The job.
        job: String,
        /// The queue's complaint.
        error: SubmitError,
    },
    /// The device reported a request the queue does not have in flight.
    #[error("the device reported a completion the queue does not expect")]
    Completion(#[from] elevator_core::RequestError),
    /// A job failed (an I/O error it did not go on after, `rate_min` not
    /// met, ...): the run went on without it; every job's figures are in
    /// `partial`.
    #[error("job '{job}' (clone {clone}) failed: {failure}")]
    JobFailed {
        /// The job.
        job: String,
        /// Which clone.
        clone: u32,
        /// Why.
        failure: Box<JobFailure>,
        /// The run's result, with every job's figures.
        partial: Box<RunResult>,
    },
    /// The trace (`--trace-out`) could not be written.
    #[error("cannot write the trace")]
    Trace(#[source] std::io::Error),
    /// The simulation can make no progress (a bug, reported rather than hung).
    #[error("simulation stalled at {now} ns: {why}")]
    Stalled {
        /// Virtual time.
        now: Nanos,
        /// What was stuck.
        why: String,
    },
}

/// Events at one instant, while a time-based job runs, before the engine
/// concludes that time stands still (a device that completes I/O in no
/// time). Jobs bounded by size always end, however fast the device.
const STILL_LIMIT: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// Worker wakes (end of think time, rate wait, ramp, runtime...).
    Wake(u32),
    /// A job's start delay ends: start what may start.
    Start,
    /// The scheduler asked to be called again.
    Timer,
    /// A second has passed: the steady-state watches sample (`ss_dur`).
    Steady,
}

/// One I/O in flight: who issued it, what it was, and when.
#[derive(Clone, Copy, Debug)]
struct IoRecord {
    worker: u32,
    io: Pending,
    submitted: Nanos,
}

/// What a simulation of `jobs` holds in memory for its workers and I/Os,
/// in bytes (see [`workload::memory_estimate`]): each I/O in flight has a
/// record and, at most, one pending event.
pub fn memory_estimate(jobs: &JobFile) -> u64 {
    let per_io = (std::mem::size_of::<IoRecord>()
        + std::mem::size_of::<u32>()
        + std::mem::size_of::<Reverse<(Nanos, u64, Event)>>()) as u64;
    workload::memory_estimate(jobs, |_| per_io)
}

impl IoRecord {
    /// The record of `io`, issued by worker `w`, taken by the queue at `now`.
    fn submitted(w: u32, io: &Pending, now: Nanos) -> IoRecord {
        IoRecord {
            worker: w,
            io: *io,
            submitted: now,
        }
    }
}

const NO_IO: IoRecord = IoRecord {
    worker: 0,
    io: Pending {
        op: Op::Read,
        sector: 0,
        len: 0,
        issued: 0,
        verify: VerifyIo::None,
        prio: 0,
    },
    submitted: 0,
};

/// Run `jobs` on a device built from `device` under `cfg`. `progress` is
/// called now and then.
pub fn run(
    jobs: &JobFile,
    device: &ModelSpec,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunResult, SimError> {
    run_traced(jobs, device, cfg, progress, None)
}

/// A run's trace: where it goes, and (once the run is over) what it held.
pub struct TraceOut<'a> {
    /// Where the events go (one file per job clone: a record's `cpu` is the
    /// clone's index, counting from 0 over the job file; device
    /// [`TRACE_DEV`]; times in virtual nanoseconds; each clone named by its
    /// job's name before its first event).
    pub sink: &'a mut dyn elevator_trace::TraceSink,
    /// What was written, filled in when the run ends (also when a job
    /// failed). The sink is not finished: that is the caller's.
    pub summary: Option<TraceSummary>,
}

impl<'a> TraceOut<'a> {
    /// A trace into `sink`.
    pub fn new(sink: &'a mut dyn elevator_trace::TraceSink) -> TraceOut<'a> {
        TraceOut {
            sink,
            summary: None,
        }
    }
}

/// [`run`], writing the queue's trace events to `trace` as they happen.
pub fn run_traced(
    jobs: &JobFile,
    device: &ModelSpec,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(Progress),
    trace: Option<&mut TraceOut<'_>>,
) -> Result<RunResult, SimError> {
    run_observed(jobs, device, cfg, progress, trace, None)
}

/// Where a run's head positions go ([`run_observed`]).
#[derive(Clone, Debug, Default)]
pub struct HeadsOut {
    /// At most this many samples are kept (the first ones).
    pub cap: usize,
    /// The samples, in time order (virtual nanoseconds from the start of
    /// the run), appended to when the run ends (also when a job failed).
    pub samples: Vec<HeadSample>,
    /// Samples past `cap`, not kept.
    pub dropped: u64,
}

impl HeadsOut {
    /// Keep up to `cap` samples.
    pub fn new(cap: usize) -> HeadsOut {
        HeadsOut {
            cap,
            samples: Vec::new(),
            dropped: 0,
        }
    }
}

/// [`run_traced`], also recording where the device's heads went
/// ([`elevator_core::Device::record_heads`]) into `heads`: for plots of the
/// head position (cylinder) against time. Only the disk model (and a RAID 0,
/// through its first member) records anything; on other devices `heads`
/// stays empty.
pub fn run_observed(
    jobs: &JobFile,
    device: &ModelSpec,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(Progress),
    trace: Option<&mut TraceOut<'_>>,
    heads: Option<&mut HeadsOut>,
) -> Result<RunResult, SimError> {
    let mut device = device.build_sim()?;
    run_on(jobs, &mut *device, cfg, progress, trace, heads)
}

/// [`run_observed`] on a device already built: a model, or a tap in front of
/// one ([`crate::device::WriteLogDevice`]), which the caller keeps and looks at
/// afterwards. The device is told of each job clone's start and end
/// ([`SimDevice::mark`]: `job NAME start`, `job NAME end`, with `:N` after
/// the name for clone N > 0), at the virtual time it happens.
pub fn run_on(
    jobs: &JobFile,
    device: &mut dyn SimDevice,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(Progress),
    mut trace: Option<&mut TraceOut<'_>>,
    heads: Option<&mut HeadsOut>,
) -> Result<RunResult, SimError> {
    let mut engine = Engine::new(jobs, device, cfg)?;
    if let Some(h) = &heads {
        engine.device.record_heads(h.cap);
    }
    let tap = trace.as_ref().map(|_| {
        // Drained once per event of the loop: room for a burst from every
        // I/O the jobs may have in flight.
        TraceTap::enable_for_depth(&mut engine.queue, workload::total_depth(jobs));
        let mut tap = TraceTap::new(TRACE_DEV, CpuRule::BySubmitter, 0);
        for w in &engine.workers {
            tap.name(w.ctx, &w.name);
        }
        tap
    });
    let ran = match (tap, trace.as_mut()) {
        (Some(mut tap), Some(t)) => {
            let ran = engine.run(progress, Some((&mut tap, &mut *t.sink)));
            tap.drain(&mut engine.queue, t.sink);
            let dropped = engine.queue.trace_dropped();
            t.summary = Some(tap.finish(t.sink, dropped).map_err(SimError::Trace)?);
            ran
        }
        _ => engine.run(progress, None),
    };
    if let Some(h) = heads {
        h.dropped += engine.device.take_heads(&mut h.samples);
    }
    if let Some(message) = engine.queue.scheduler().plugin_failure() {
        return Err(SimError::Scheduler {
            name: engine.scheduler.clone(),
            message,
        });
    }
    ran?;
    let failed = workload::first_failure(&engine.workers);
    let result = engine.result();
    match failed {
        Some((job, clone, failure)) => Err(SimError::JobFailed {
            job,
            clone,
            failure: Box::new(failure),
            partial: Box::new(result),
        }),
        None => Ok(result),
    }
}

struct Engine<'d> {
    queue: Queue,
    device: &'d mut dyn SimDevice,
    workers: Vec<Worker>,
    ios: Vec<IoRecord>,
    free_ios: Vec<u32>,
    events: BinaryHeap<Reverse<(Nanos, u64, Event)>>,
    seq: u64,
    timer_at: Option<Nanos>,
    /// Workers waiting for a tag, each once with the one I/O it waits to
    /// issue (its `pending`), in the order those I/Os started waiting. A
    /// worker is here exactly while its `blocked` is set.
    blocked: VecDeque<u32>,
    /// Workers to serve after the current event, in the order they were
    /// touched (first come, first served).
    touched: Vec<u32>,
    is_touched: Vec<bool>,
    /// Workers whose I/O completed in the current event.
    completing: Vec<u32>,
    device_done: Vec<(u32, Outcome)>,
    /// Workers started by the last start check.
    started: Vec<u32>,
    /// The wake event last scheduled for each worker.
    wake_at: Vec<Option<Nanos>>,
    /// The start event scheduled, if any.
    start_at: Option<Nanos>,
    now: Nanos,
    event_count: u64,
    ios_done: u64,
    scheduler: String,
    device_name: String,
    /// Steady-state detection, when a job asks for it.
    steady: Option<workload::SteadyWatch>,
}

impl<'d> Engine<'d> {
    fn new(
        jobs: &JobFile,
        device: &'d mut dyn SimDevice,
        cfg: &RunConfig,
    ) -> Result<Engine<'d>, SimError> {
        let shape = device.shape();
        let limits = shape.limits;
        let queue = Queue::for_device_in(shape, &cfg.scheduler, &cfg.plugins, &cfg.tunables)
            .map_err(|e| match e {
                BuildError::Config(e) => SimError::Queue(e),
                BuildError::Tunable { name, value, error } => {
                    SimError::Tunable { name, value, error }
                }
            })?;
        let workers = workload::workers_with_logs(
            jobs,
            limits.capacity * 512,
            cfg.seed,
            &elevator_trace::read_iolog::TraceLogs::streamed(),
        )?;
        let steady = workload::SteadyWatch::new(jobs, &workers)?;
        let depth = workload::total_depth(jobs);
        let nworkers = workers.len();
        Ok(Engine {
            scheduler: queue.scheduler().name().to_string(),
            device_name: device.describe(),
            queue,
            device,
            workers,
            ios: vec![NO_IO; depth as usize],
            free_ios: (0..depth).rev().collect(),
            events: BinaryHeap::new(),
            seq: 0,
            timer_at: None,
            blocked: VecDeque::with_capacity(nworkers),
            touched: Vec::new(),
            is_touched: vec![false; nworkers],
            completing: Vec::new(),
            device_done: Vec::new(),
            started: Vec::with_capacity(nworkers),
            wake_at: vec![None; nworkers],
            start_at: None,
            now: 0,
            event_count: 0,
            ios_done: 0,
            steady,
        })
    }

    fn touch(&mut self, w: u32) {
        if !std::mem::replace(&mut self.is_touched[w as usize], true) {
            self.touched.push(w);
        }
    }

    fn schedule(&mut self, at: Nanos, e: Event) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, e)));
    }

    /// Start the workers whose start rules are met at `now`.
    fn start_check(&mut self, now: Nanos) {
        let mut started = std::mem::take(&mut self.started);
        let next = workload::start_ready(&mut self.workers, 0, now, &mut started);
        for &w in &started {
            self.mark(w, "start", now);
            self.schedule(now, Event::Wake(w));
        }
        started.clear();
        self.started = started;
        if let Some(t) = next
            && self.start_at.is_none_or(|at| at <= now || t < at)
        {
            self.start_at = Some(t);
            self.schedule(t, Event::Start);
        }
    }

    /// Tell the device that worker `w`'s job clone starts or ends.
    fn mark(&mut self, w: u32, what: &str, now: Nanos) {
        let wk = &self.workers[w as usize];
        let text = if wk.clone == 0 {
            format!("job {} {what}", wk.name)
        } else {
            format!("job {}:{} {what}", wk.name, wk.clone)
        };
        self.device.mark(&text, now);
    }

    /// Make sure worker `w` is looked at when it next wants to be.
    fn arm(&mut self, w: u32, now: Nanos) {
        if let Some(t) = self.workers[w as usize].next_wake()
            && t > now
            && self.wake_at[w as usize] != Some(t)
        {
            self.wake_at[w as usize] = Some(t);
            self.schedule(t, Event::Wake(w));
        }
    }

    /// The loop; with `trace`, the queue's events are drained into it after
    /// every event (one branch when not tracing).
    fn run(
        &mut self,
        progress: &mut dyn FnMut(Progress),
        mut trace: Option<(&mut TraceTap, &mut dyn elevator_trace::TraceSink)>,
    ) -> Result<(), SimError> {
        if self.workers.is_empty() {
            return Ok(());
        }
        self.start_check(0);
        if self.steady.is_some() {
            self.schedule(workload::STEADY_TICK, Event::Steady);
        }
        let mut still = 0u64;
        loop {
            let next_event = self.events.peek().map(|Reverse((t, _, _))| *t);
            let next_done = self.device.next_completion();
            let now = match (next_event, next_done) {
                (None, None) => break,
                (Some(e), None) => e,
                (None, Some(d)) => d,
                (Some(e), Some(d)) => e.min(d),
            };
            debug_assert!(now >= self.now, "time went backwards");
            if now == self.now {
                still += 1;
                if still > STILL_LIMIT
                    && self
                        .workers
                        .iter()
                        .any(|w| w.state == State::Running && w.time_based())
                {
                    return Err(SimError::Stalled {
                        now,
                        why: format!(
                            "virtual time has not moved for {STILL_LIMIT} events: the device \
                             completes I/O in no time, so a time-based job would never end; \
                             give it a latency (e.g. --device null,latency=1)"
                        ),
                    });
                }
            } else {
                still = 0;
            }
            self.now = now;
            self.event_count += 1;
            if next_done == Some(now) {
                self.device_completions(now)?;
            } else if let Some(Reverse((_, _, e))) = self.events.pop() {
                match e {
                    Event::Wake(w) => self.touch(w),
                    Event::Start => {
                        if self.start_at == Some(now) {
                            self.start_at = None;
                        }
                        self.start_check(now);
                    }
                    Event::Timer => {
                        if self.timer_at == Some(now) {
                            self.timer_at = None;
                        }
                    }
                    Event::Steady => self.steady_tick(now),
                }
            }
            self.serve_touched(now)?;
            self.pump(now);
            if let Some((tap, sink)) = trace.as_mut() {
                tap.drain(&mut self.queue, *sink);
            }
            if self.event_count & 0x3FFF == 0 {
                progress(self.progress(now));
            }
            if self.workers.iter().all(|w| w.state == State::Done)
                && self.device.outstanding() == 0
                && self.queue.is_idle()
            {
                break;
            }
        }
        if let Some(w) = self.workers.iter().find(|w| w.state != State::Done) {
            return Err(SimError::Stalled {
                now: self.now,
                why: format!(
                    "job '{}' clone {} has {} I/Os in flight and the queue holds {} requests, \
                     but nothing is due",
                    w.name,
                    w.clone,
                    w.in_flight,
                    self.queue.requests().in_use()
                ),
            });
        }
        progress(self.progress(self.now));
        Ok(())
    }

    /// The device finished I/Os at `now`.
    fn device_completions(&mut self, now: Nanos) -> Result<(), SimError> {
        let mut done = std::mem::take(&mut self.device_done);
        done.clear();
        self.device.complete(now, &mut |tag, o| done.push((tag, o)));
        let Engine {
            queue,
            workers,
            ios,
            free_ios,
            completing,
            ios_done,
            ..
        } = self;
        for &(tag, outcome) in &done {
            queue.complete(
                RequestId::from_raw(tag),
                outcome,
                now,
                &mut |c: BioCompletion| {
                    let rec = ios[c.token as usize];
                    free_ios.push(c.token as u32);
                    let w = &mut workers[rec.worker as usize];
                    w.completed(&rec.io, u64::from(c.bytes), c.status, rec.submitted, now);
                    *ios_done += 1;
                    completing.push(rec.worker);
                },
            )?;
        }
        self.device_done = done;
        // Each worker takes what completed for it at once.
        let mut completing = std::mem::take(&mut self.completing);
        for &w in &completing {
            self.workers[w as usize].reap(now);
        }
        // Tags freed: the workers waiting for one go first, in turn; then
        // those whose I/O just completed (behind any still waiting).
        self.serve_waiting(now)?;
        for &w in &completing {
            self.touch(w);
        }
        completing.clear();
        self.completing = completing;
        Ok(())
    }

    /// Let every worker touched by the last event issue what it can.
    fn serve_touched(&mut self, now: Nanos) -> Result<(), SimError> {
        let mut touched = std::mem::take(&mut self.touched);
        for &w in &touched {
            if !std::mem::replace(&mut self.is_touched[w as usize], false) {
                continue;
            }
            let worker = &mut self.workers[w as usize];
            let was_blocked = worker.blocked;
            // Move it on first (a stage over), then let it issue.
            let mut done = worker.state == State::Running && worker.check_done(now);
            if !done {
                self.issue(w, now)?;
                let worker = &mut self.workers[w as usize];
                done = worker.state == State::Running && worker.check_done(now);
            }
            let worker = &mut self.workers[w as usize];
            if was_blocked && !worker.blocked {
                // Its time ran out while it waited for a tag: it leaves the
                // line (once per worker, so the search is no per-I/O cost).
                self.blocked.retain(|&x| x != w);
            }
            if done {
                // The process exits: schedulers drop what they kept for it.
                let ctx = self.workers[w as usize].ctx;
                self.mark(w, "end", now);
                self.queue.context_gone(ctx, now);
                if self.workers[w as usize].ends_others().is_some() {
                    self.end_others(w, now);
                }
                self.start_check(now);
            } else {
                self.arm(w, now);
            }
        }
        touched.clear();
        self.touched = touched;
        Ok(())
    }

    /// Worker `w` has ended with `exitall` or `exitall_on_error`: end the
    /// others its `exit_what` ends; those running are looked at now.
    #[cold]
    fn end_others(&mut self, w: u32, now: Nanos) {
        let mut running = Vec::new();
        workload::end_others(&mut self.workers, w as usize, &mut running);
        for x in running {
            self.schedule(now, Event::Wake(x));
        }
    }

    /// The steady-state watches' tick: the clones of a watch that attains
    /// steady state end (looked at now); the next tick while any waits.
    #[cold]
    fn steady_tick(&mut self, now: Nanos) {
        let Some(watch) = &mut self.steady else {
            return;
        };
        let clones: Vec<_> = self.workers.iter().map(workload::CloneSample::of).collect();
        let mut ended = Vec::new();
        watch.tick(&clones, now, &mut ended);
        let again = watch.active(&clones);
        for x in ended {
            if self.workers[x as usize].terminate() {
                self.schedule(now, Event::Wake(x));
            }
        }
        if again {
            self.schedule(now + workload::STEADY_TICK, Event::Steady);
        }
    }

    /// Worker `w` issues I/Os while it may.
    fn issue(&mut self, w: u32, now: Nanos) -> Result<(), SimError> {
        let worker = &mut self.workers[w as usize];
        if !worker.can_issue(now) {
            return Ok(());
        }
        if !self.blocked.is_empty() {
            // Others are waiting for a tag: wait in line behind them, with the
            // I/O already wanted (so the wait counts as submission latency).
            let io = worker.next_io(now);
            worker.pending = Some(io);
            worker.blocked = true;
            self.blocked.push_back(w);
            return Ok(());
        }
        self.queue.plug();
        while self.workers[w as usize].can_issue(now) {
            let worker = &mut self.workers[w as usize];
            let io = worker.next_io(now);
            let Some(token) = self.free_ios.pop() else {
                worker.pending = Some(io);
                break;
            };
            let bio = worker.bio(&io, u64::from(token));
            match self.queue.submit(&bio, now) {
                Ok(_) => {
                    self.ios[token as usize] = IoRecord::submitted(w, &io, now);
                    worker.issued(&io, now);
                }
                Err(SubmitError::NoTag { .. } | SubmitError::NoBioSlot { .. }) => {
                    self.free_ios.push(token);
                    worker.pending = Some(io);
                    worker.blocked = true;
                    self.blocked.push_back(w);
                    break;
                }
                Err(error) => {
                    self.queue.unplug(now);
                    worker.commit();
                    return Err(SimError::Bio {
                        job: worker.name.clone(),
                        error,
                    });
                }
            }
        }
        self.queue.unplug(now);
        self.workers[w as usize].commit();
        Ok(())
    }

    /// Tags were freed: serve the line of workers waiting for one, first
    /// come first served per I/O. The worker at the front issues the one I/O
    /// it waits with; if it wants another, that one waits at the back, behind
    /// the others, so freed tags go round the waiters in turn (as Linux wakes
    /// its tag waiters one at a time) instead of all going to the first.
    /// Each waiter is in the line once, with its I/O wanted since it joined,
    /// so the wait counts as that I/O's submission latency.
    fn serve_waiting(&mut self, now: Nanos) -> Result<(), SimError> {
        while let Some(&w) = self.blocked.front() {
            let worker = &mut self.workers[w as usize];
            debug_assert!(worker.blocked && worker.pending.is_some());
            worker.blocked = false;
            if !worker.can_issue(now) {
                // Its time is up: it leaves the line, and is looked at (and
                // its waiting I/O dropped) once this event is done.
                self.blocked.pop_front();
                self.touch(w);
                continue;
            }
            let Some(token) = self.free_ios.pop() else {
                worker.blocked = true;
                break;
            };
            let io = worker.next_io(now);
            let bio = worker.bio(&io, u64::from(token));
            // Its own submission, under its own plug, as each woken task
            // submits for itself.
            self.queue.plug();
            let submitted = self.queue.submit(&bio, now);
            self.queue.unplug(now);
            match submitted {
                Ok(_) => {
                    self.ios[token as usize] = IoRecord::submitted(w, &io, now);
                    worker.issued(&io, now);
                    worker.commit();
                    self.blocked.pop_front();
                    if worker.can_issue(now) {
                        // It wants another: to the back of the line.
                        let io = worker.next_io(now);
                        worker.pending = Some(io);
                        worker.blocked = true;
                        self.blocked.push_back(w);
                    }
                }
                Err(SubmitError::NoTag { .. } | SubmitError::NoBioSlot { .. }) => {
                    // Still none free: it keeps its place at the front.
                    self.free_ios.push(token);
                    worker.pending = Some(io);
                    worker.blocked = true;
                    break;
                }
                Err(error) => {
                    return Err(SimError::Bio {
                        job: worker.name.clone(),
                        error,
                    });
                }
            }
        }
        Ok(())
    }

    /// Dispatch while the device has room.
    fn pump(&mut self, now: Nanos) {
        while self.device.outstanding() < self.device.queue_depth() {
            match self.queue.dispatch(now) {
                Dispatch::Request(id) => {
                    let rq = self.queue.request(id);
                    let io = DeviceIo {
                        tag: id.raw(),
                        op: rq.op(),
                        sector: rq.sector(),
                        sectors: rq.sectors(),
                        flags: rq.flags(),
                    };
                    self.device.submit(io, now);
                }
                Dispatch::WaitUntil(t) => {
                    if self.timer_at.is_none_or(|at| t < at) {
                        self.timer_at = Some(t);
                        self.schedule(t, Event::Timer);
                    }
                    break;
                }
                Dispatch::Blocked | Dispatch::Empty => break,
            }
        }
    }

    fn progress(&self, now: Nanos) -> Progress {
        Progress {
            now,
            ios: self.ios_done,
            fraction: workload::progress(&self.workers, now),
        }
    }

    fn result(mut self) -> RunResult {
        if let Some(watch) = self.steady.take() {
            for (w, result) in watch.finish() {
                if let Some(w) = self.workers.get_mut(w as usize) {
                    w.steady = Some(Box::new(result));
                }
            }
        }
        RunResult {
            scheduler: self.scheduler,
            device: self.device_name,
            elapsed: workload::elapsed(&self.workers),
            queue: self.queue.stats().clone(),
            device_stats: self.device.stats(),
            events: self.event_count,
            ios: self.ios_done,
            cpu: None,
            ended_at_ms: None,
            locks: Vec::new(),
            jobs: workload::job_results(self.workers),
        }
    }
}
