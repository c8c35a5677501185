//! fio job files on a real device, on the real clock.
//!
//! The same workers as the simulation ([`elevator_fio::workload`]) generate
//! the I/O; each I/O is a caller request through the [`Engine`] with its own
//! aligned buffer (written with random bytes once, at start). A worker's
//! batch of new I/Os goes in under one plug, as `io_submit` does. The loop
//! sleeps in the device until something completes, a worker's think time or
//! runtime ends, or the scheduler's timer fires.
//!
//! Every I/O is direct (the device is opened with O_DIRECT); a job's
//! `direct=0` does not change that. The result is the simulation's
//! [`RunResult`], with the CPU time the run used: by the whole process
//! (io_uring's worker threads included) and by the engine's thread alone
//! (fio's measure).
//!
//! Options with time in them are the worker's ([`Worker`]): this loop only
//! starts workers by their start rules, sleeps until the next time one of
//! them names ([`Worker::next_wake`]), spins the CPU through the
//! `thinktime_spin` part of a think time, and hands completions over. With
//! `verify`, a write's buffer is filled by [`verify::fill`] for its offset
//! and generation just before it is submitted, and a read-back is checked by
//! [`verify::check`] as it completes; a failure is the worker's
//! ([`Worker::verify_failed`]), and a run with a failed job ends with
//! [`JobRunError::JobFailed`]. Without `verify`, buffers keep the random
//! bytes written once at the start, unless the job sets fio's buffer
//! options: then [`workload::Contents`] fills each write.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use elevator_core::rng::Rng;
use elevator_core::{Nanos, Op, Scheduler, Status};
use elevator_fio::job::{JobError, JobFile};
use elevator_fio::result::RunResult;
use elevator_fio::verify::{self, SpecError};
use elevator_fio::workload::{self, JobFailure, Pending, State, VerifyIo, Worker};
use elevator_fio::{Progress, RunConfig};
use thiserror::Error;

use crate::buf::{AlignedBuf, BufError, Slice};
use crate::clock::Clock;
use crate::cpu::CpuTime;
use crate::device::DataDevice;
use crate::dio::{Completion, DioError, DioRequest};
use crate::engine::access::{QueueAccess, QueueState};
use crate::engine::{Engine, EngineConfig, EngineError};
use elevator_trace::tap::{CpuRule, SharedSink, TRACE_DEV, TraceSummary, TraceTap};

/// Why a run could not happen or went wrong.
#[derive(Debug, Error)]
pub enum JobRunError {
    /// The job file asks for something impossible on this device.
    #[error(transparent)]
    Job(#[from] JobError),
    /// The engine could not be built or the device failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Buffers could not be allocated.
    #[error("cannot allocate I/O buffers")]
    Memory(#[from] BufError),
    /// A job's I/O was refused (it does not fit the device's rules).
    #[error("job '{job}': {error}")]
    Refused {
        /// The job.
        job: String,
        /// Why.
        error: DioError,
    },
    /// A second handle on a device could not be had (for another thread).
    #[error("cannot open the device again for another thread")]
    Share(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The multi-queue layer could not be built.
    #[error(transparent)]
    Mq(#[from] Box<crate::mq::MqError>),
    /// A job's `cpus_allowed` names a CPU this process may not run on.
    #[error(
        "job '{job}': cpus_allowed names CPU {cpu}, which this process cannot run on \
         (it may use CPUs {available})"
    )]
    NoSuchCpu {
        /// The job.
        job: String,
        /// The CPU named.
        cpu: u32,
        /// The CPUs there are, as a list.
        available: String,
    },
    /// A job's `numa_cpu_nodes` names a node this machine does not have.
    #[error(
        "job '{job}': numa_cpu_nodes names node {node}, which this machine does not have \
         (its nodes: {available})"
    )]
    NoSuchNode {
        /// The job.
        job: String,
        /// The node named.
        node: u32,
        /// The nodes there are, as a list.
        available: String,
    },
    /// The thread's CPUs could not be set.
    #[error("job '{job}': cannot set its thread's CPUs: {error}")]
    Affinity {
        /// The job.
        job: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// A stopping thread gave up on requests that could not complete (their
    /// buffers are leaked rather than freed under a device).
    #[error(
        "{requests} requests could not complete after the run stopped; their buffers are \
         leaked, not freed"
    )]
    Abandoned {
        /// Requests still in flight.
        requests: u32,
    },
    /// A job failed (an I/O error it did not go on after, `rate_min` not
    /// met, a block that did not verify): the other jobs ran on; every
    /// job's figures are in `partial`.
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
    /// A job's verify options cannot fill one of its buffers (e.g. a
    /// `verify_interval` that does not divide the block size).
    #[error("job '{job}': verify cannot fill a {len}-byte block: {error}")]
    VerifySetup {
        /// The job.
        job: String,
        /// The block's length.
        len: u32,
        /// Why.
        error: SpecError,
    },
    /// The trace (`--trace-out`) could not be written.
    #[error("cannot write the trace")]
    Trace(#[source] std::io::Error),
    /// A worker thread could not be started.
    #[error("cannot start a worker thread: {0}")]
    Spawn(String),
    /// A worker thread panicked.
    #[error("job '{job}' (clone {clone}): its thread panicked: {message}")]
    Panicked {
        /// The job.
        job: String,
        /// Which clone.
        clone: u32,
        /// What the panic said.
        message: String,
    },
    /// A thread failed and the run stopped: its error, and what every
    /// thread did until then.
    #[error("{error} (the run stopped; every other thread cancelled and drained)")]
    Stopped {
        /// The first thread's error.
        error: Box<JobRunError>,
        /// Every thread's results up to the stop.
        partial: Box<RunResult>,
    },
}

/// The buffers jobs lend the engine: a piece of a slot's own buffer.
pub(crate) type Buf = Slice<AlignedBuf>;

/// One I/O slot: the buffer list it lends out, and what is in flight in it.
pub(crate) struct Slot {
    worker: u32,
    io: Pending,
    bufs: Vec<Buf>,
    /// The slot's own buffer while not lent out.
    spare: Option<AlignedBuf>,
}

/// What a run of `jobs` on a real device holds in memory for its workers and
/// I/Os, in bytes (see [`workload::memory_estimate`]): each I/O slot has a
/// buffer of its job's largest block size (page-aligned) and the engine's
/// record for it. Device memory (a `mem:` device's pages) is not included.
pub fn memory_estimate(jobs: &JobFile) -> u64 {
    let slot = (std::mem::size_of::<Slot>() + 256) as u64;
    workload::memory_estimate(jobs, |j| j.bs[0].max(j.bs[1]).div_ceil(4096) * 4096 + slot)
}

/// Run `jobs` on `device` under `cfg` (scheduler, tunables, seed).
/// `progress` is called now and then.
pub fn run<D: DataDevice>(
    jobs: &JobFile,
    device: D,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunResult, JobRunError> {
    run_traced(jobs, device, cfg, progress, None).map(|(result, _)| result)
}

/// [`run`], writing the queue's trace events to `trace`: one engine, one
/// thread, so one file (every record's `cpu` is 0), device `240,0`, times in
/// nanoseconds since the run started, each job clone named by its job. The
/// sink is not finished here. Returns what the trace held with the result.
pub fn run_traced<D: DataDevice>(
    jobs: &JobFile,
    device: D,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(Progress),
    trace: Option<SharedSink>,
) -> Result<(RunResult, Option<TraceSummary>), JobRunError> {
    let depth = workload::total_depth(jobs).max(1);
    let mut engine: Engine<D, Buf> = Engine::new(
        device,
        &EngineConfig {
            scheduler: cfg.scheduler.clone(),
            tunables: cfg.tunables.clone(),
            max_requests: depth,
            read_only: false,
        },
    )?;
    let mut workers = workload::workers_with_logs(
        jobs,
        engine.capacity(),
        cfg.seed,
        &elevator_trace::read_iolog::TraceLogs::sizing_buffers(),
    )?;
    // Each worker's burst reaches the kernel in one submission: its depth
    // and submit figures say so, as fio's would for one commit.
    for w in &mut workers {
        w.count_whole_bursts();
    }
    if let Some(sink) = trace {
        let mut tap = TraceTap::new(TRACE_DEV, CpuRule::Fixed(0), engine.now());
        for w in &workers {
            tap.name(w.ctx, &w.name);
        }
        engine.trace_to(tap, sink);
    }
    let align = engine.alignment().memory;
    let (slots, free) = make_slots(jobs, &workers, align, cfg.seed)?;
    let mut runner = Runner {
        engine,
        workers,
        slots,
        free,
        run_start: None,
        started: Vec::new(),
        start_next: None,
        ios: 0,
        polls: 0,
        out: Vec::with_capacity(depth as usize),
        stop: None,
        exits: None,
    };
    let (cpu0, thread0) = (CpuTime::process_total(), CpuTime::thread());
    runner.run(progress)?;
    let thread = CpuTime::thread().since(&thread0);
    let process = CpuTime::process_total().saturating_sub(cpu0);
    let Runner {
        mut engine,
        workers,
        ios,
        polls,
        ..
    } = runner;
    let summary = engine
        .finish_trace()
        .transpose()
        .map_err(JobRunError::Trace)?;
    let failed = workload::first_failure(&workers);
    let result = RunResult {
        scheduler: engine.queue().scheduler().name().to_string(),
        device: engine.device().describe(),
        elapsed: workload::elapsed(&workers),
        queue: engine.queue().stats().clone(),
        device_stats: engine.device().stats(),
        events: polls,
        ios,
        locks: Vec::new(),
        cpu: Some(thread.run_use(process)),
        ended_at_ms: Some(crate::clock::unix_ms()),
        jobs: workload::job_results(workers),
    };
    match failed {
        Some(failed) => Err(JobRunError::job_failed(failed, result)),
        None => Ok((result, summary)),
    }
}

/// Slots for `workers`' I/Os, with buffers aligned to `align` (at least a
/// page), filled with random bytes once; and each worker's free slots:
/// worker w owns a slot per I/O it may have in flight (its job's
/// [`queue_depth`](elevator_fio::job::JobSpec::queue_depth)) with buffers of its largest block size.
pub(crate) fn make_slots(
    jobs: &JobFile,
    workers: &[Worker],
    align: u32,
    seed: u64,
) -> Result<(Vec<Slot>, Vec<Vec<u32>>), BufError> {
    let align = align.max(4096) as usize;
    let mut slots = Vec::new();
    let mut free: Vec<Vec<u32>> = Vec::new();
    let mut rng = Rng::new(workload::mix(&[seed, 0xB0FF]));
    for (w, worker) in workers.iter().enumerate() {
        let spec = &jobs.jobs[worker.job_index];
        let mut mine = Vec::new();
        for _ in 0..spec.queue_depth() {
            let mut buf = AlignedBuf::new(worker.max_bs() as usize, align)?;
            for chunk in buf.chunks_mut(8) {
                let r = rng.next_u64().to_le_bytes();
                chunk.copy_from_slice(&r[..chunk.len()]);
            }
            mine.push(slots.len() as u32);
            slots.push(Slot {
                worker: w as u32,
                io: Pending {
                    op: Op::Read,
                    sector: 0,
                    len: 0,
                    issued: 0,
                    verify: VerifyIo::None,
                    prio: 0,
                },
                bufs: Vec::with_capacity(1),
                spare: Some(buf),
            });
        }
        free.push(mine);
    }
    Ok((slots, free))
}

/// Workers driving one engine: the loop of a run, or of one thread of a
/// threaded run.
pub(crate) struct Runner<D: DataDevice, Q: QueueAccess = QueueState> {
    pub(crate) engine: Engine<D, Buf, Q>,
    pub(crate) workers: Vec<Worker>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) free: Vec<Vec<u32>>,
    /// When the run began (start delays count from it); `None`: when this
    /// loop starts.
    pub(crate) run_start: Option<Nanos>,
    pub(crate) started: Vec<u32>,
    /// When a start delay ends.
    pub(crate) start_next: Option<Nanos>,
    pub(crate) ios: u64,
    pub(crate) polls: u64,
    pub(crate) out: Vec<Completion<Buf>>,
    /// Set when the run is to stop early (another thread failed): the
    /// engine is cancelled and drained.
    pub(crate) stop: Option<std::sync::Arc<Stop>>,
    /// In a threaded run, where clones on other threads learn that this
    /// one's end ends them (`exitall`), and this one learns of its own;
    /// `None`: every clone is in `workers`.
    pub(crate) exits: Option<ExitLink>,
}

/// A threaded run's stop: a flag, and a way to wake every thread to see it.
pub(crate) struct Stop {
    /// Set when a thread failed.
    pub(crate) flag: AtomicBool,
    /// Wakes every thread's engine.
    pub(crate) wake: Box<dyn Fn() + Send + Sync>,
}

impl Stop {
    /// Stop the run: set the flag, wake everyone.
    pub(crate) fn now(&self) {
        self.flag.store(true, Ordering::SeqCst);
        (self.wake)();
    }
}

/// Which clones of a threaded run have started and which another clone's
/// end has ended (`exitall`, `exit_what`), for every thread to see.
pub(crate) struct ExitBoard {
    /// Each clone's reporting group.
    groups: Vec<u32>,
    started: Vec<AtomicBool>,
    ended: Vec<AtomicBool>,
    /// Bumped whenever a clone is ended, so a thread looks only then.
    epoch: AtomicU64,
    stop: Arc<Stop>,
    /// With steady-state detection (`ss_dur`), each clone's progress as
    /// its thread last published it: state (0 waiting, 1 running, 2 done),
    /// start, bytes, I/Os. Empty without.
    progress: Vec<[AtomicU64; 4]>,
}

impl ExitBoard {
    /// The board of `workers`; `watched`: publish progress for
    /// steady-state detection.
    pub(crate) fn new(workers: &[Worker], stop: Arc<Stop>, watched: bool) -> ExitBoard {
        let progress = if watched { workers.len() } else { 0 };
        ExitBoard {
            groups: workers.iter().map(|w| w.group).collect(),
            started: workers.iter().map(|_| AtomicBool::new(false)).collect(),
            ended: workers.iter().map(|_| AtomicBool::new(false)).collect(),
            epoch: AtomicU64::new(0),
            stop,
            progress: (0..progress).map(|_| Default::default()).collect(),
        }
    }

    /// Every clone's progress as last published, for a steady-state tick.
    pub(crate) fn samples(&self) -> Vec<workload::CloneSample> {
        self.progress
            .iter()
            .map(|p| {
                let state = p[0].load(Ordering::Acquire);
                workload::CloneSample {
                    running: state == 1,
                    done: state == 2,
                    began: p[1].load(Ordering::Relaxed),
                    bytes: p[2].load(Ordering::Relaxed),
                    ios: p[3].load(Ordering::Relaxed),
                }
            })
            .collect()
    }

    /// End clones `ended` (steady state attained) and wake every thread to
    /// see it.
    pub(crate) fn end(&self, ended: &[u32]) {
        let mut any = false;
        for &w in ended {
            if let Some(e) = self.ended.get(w as usize) {
                any |= !e.swap(true, Ordering::AcqRel);
            }
        }
        if any {
            self.epoch.fetch_add(1, Ordering::AcqRel);
            (self.stop.wake)();
        }
    }
}

/// One thread's view of the [`ExitBoard`]: its clones are the board's
/// `first..` (one per thread here).
pub(crate) struct ExitLink {
    board: Arc<ExitBoard>,
    first: usize,
    seen: u64,
}

impl ExitLink {
    /// The link of the thread whose first clone is the board's `first`.
    pub(crate) fn new(board: Arc<ExitBoard>, first: usize) -> ExitLink {
        ExitLink {
            board,
            first,
            seen: 0,
        }
    }

    /// The thread's clone `w` has started.
    pub(crate) fn started(&self, w: usize) {
        if let Some(s) = self.board.started.get(self.first + w) {
            s.store(true, Ordering::Release);
        }
    }

    /// Publish the thread's clones' progress, when steady state is
    /// watched (once per loop, not per I/O).
    #[inline]
    pub(crate) fn publish(&self, workers: &[Worker]) {
        if self.board.progress.is_empty() {
            return;
        }
        for (i, w) in workers.iter().enumerate() {
            let Some(p) = self.board.progress.get(self.first + i) else {
                continue;
            };
            let c = workload::CloneSample::of(w);
            p[1].store(c.began, Ordering::Relaxed);
            p[2].store(c.bytes, Ordering::Relaxed);
            p[3].store(c.ios, Ordering::Relaxed);
            let state = if c.done { 2 } else { u64::from(c.running) };
            p[0].store(state, Ordering::Release);
        }
    }

    /// End the thread's clones that another's end has ended (one load
    /// when nothing changed).
    pub(crate) fn see(&mut self, workers: &mut [Worker]) {
        let epoch = self.board.epoch.load(Ordering::Acquire);
        if epoch == self.seen {
            return;
        }
        self.seen = epoch;
        for (i, w) in workers.iter_mut().enumerate() {
            let ended = self.board.ended.get(self.first + i);
            if ended.is_some_and(|e| e.load(Ordering::Acquire)) && !w.terminated() {
                w.terminate();
            }
        }
    }

    /// The thread's clone `w` (`worker`) has finished: mark the clones it
    /// ends and wake every thread to see it.
    pub(crate) fn ended(&self, w: usize, worker: &Worker) {
        let Some(what) = worker.ends_others() else {
            return;
        };
        let me = self.first + w;
        let b = &self.board;
        let mut any = false;
        for (i, group) in b.groups.iter().enumerate() {
            let started = b.started[i].load(Ordering::Acquire);
            if i != me && what.ends(worker.group, *group, started) {
                any |= !b.ended[i].swap(true, Ordering::AcqRel);
            }
        }
        if any {
            b.epoch.fetch_add(1, Ordering::AcqRel);
            (b.stop.wake)();
        }
    }
}

/// Stops the run if dropped while the thread panics.
struct StopOnPanic(std::sync::Arc<Stop>);

impl Drop for StopOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.now();
        }
    }
}

impl<D: DataDevice, Q: QueueAccess> Runner<D, Q> {
    pub(crate) fn run(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<(), JobRunError> {
        if self.workers.is_empty() {
            return Ok(());
        }
        // A panic from here on stops the other threads at once, before this
        // engine (dropped while unwinding) waits for its requests.
        let _stop_on_panic = self.stop.clone().map(StopOnPanic);
        let now = self.engine.now();
        let run_start = *self.run_start.get_or_insert(now);
        self.see_exits();
        self.start_check(run_start.min(now), now);
        loop {
            self.see_exits();
            if self
                .stop
                .as_ref()
                .is_some_and(|s| s.flag.load(Ordering::Relaxed))
            {
                self.engine.cancel();
                let mut out = std::mem::take(&mut self.out);
                let drained = self
                    .engine
                    .drain_for(crate::engine::SHARED_DRAIN_LIMIT, &mut out);
                for c in out.drain(..) {
                    self.completed(c);
                }
                self.out = out;
                if !drained? {
                    return Err(JobRunError::Abandoned {
                        requests: self.engine.in_flight(),
                    });
                }
                return Ok(());
            }
            let now = self.engine.now();
            if self.start_next.is_some_and(|t| now >= t) {
                self.start_check(run_start, now);
            }
            self.retire(run_start, now);
            self.issue_all(now)?;
            self.retire(run_start, now);
            if let Some(t) = self.spin_until(now) {
                // thinktime_spin: busy on the CPU, not asleep.
                while self.engine.now() < t {
                    std::hint::spin_loop();
                }
                continue;
            }
            if self.workers.iter().all(|w| w.state == State::Done) && self.engine.in_flight() == 0 {
                // Requests of other threads' may still be on this engine's
                // device (a shared queue): see them through.
                let mut out = std::mem::take(&mut self.out);
                let drained = self.engine.drain(&mut out);
                self.out = out;
                drained?;
                break;
            }
            let timeout = self.next_wake().map(|t| Clock::until(now, t));
            let mut out = std::mem::take(&mut self.out);
            self.engine.poll(timeout, &mut out)?;
            self.polls += 1;
            for c in out.drain(..) {
                self.completed(c);
            }
            self.out = out;
            let now = self.engine.now();
            for w in &mut self.workers {
                w.reap(now);
            }
            if let Some(link) = &self.exits {
                link.publish(&self.workers);
            }
            if self.polls & 0x3FF == 0 {
                let now = self.engine.now();
                progress(Progress {
                    now,
                    ios: self.ios,
                    fraction: workload::progress(&self.workers, now),
                });
            }
        }
        let now = self.engine.now();
        progress(Progress {
            now,
            ios: self.ios,
            fraction: 1.0,
        });
        Ok(())
    }

    /// Start the workers whose start rules are met at `now`.
    fn start_check(&mut self, run_start: Nanos, now: Nanos) {
        self.started.clear();
        self.start_next =
            workload::start_ready(&mut self.workers, run_start, now, &mut self.started);
        if let Some(link) = &self.exits {
            for &w in &self.started {
                link.started(w as usize);
            }
        }
    }

    /// End the workers another thread's clone has ended (`exitall`).
    #[inline]
    fn see_exits(&mut self) {
        if let Some(link) = &mut self.exits {
            link.see(&mut self.workers);
        }
    }

    /// Worker `w` has just finished: end the clones its `exitall` /
    /// `exitall_on_error` ends, here or (through the link) on other
    /// threads.
    #[cold]
    fn end_others(&mut self, w: usize) {
        match &self.exits {
            Some(link) => link.ended(w, &self.workers[w]),
            None => workload::end_others(&mut self.workers, w, &mut Vec::new()),
        }
    }

    /// The end of the spinning part of a worker's think time, if one is
    /// spinning now.
    fn spin_until(&self, now: Nanos) -> Option<Nanos> {
        self.workers
            .iter()
            .filter_map(|w| w.spin_until)
            .filter(|&t| t > now)
            .max()
    }

    /// Every running worker issues what it may, all under one plug.
    fn issue_all(&mut self, now: Nanos) -> Result<(), JobRunError> {
        self.engine.plug();
        let result = (0..self.workers.len()).try_for_each(|w| self.issue(w, now));
        self.engine.unplug();
        result
    }

    fn issue(&mut self, w: usize, now: Nanos) -> Result<(), JobRunError> {
        let worker = &mut self.workers[w];
        let result = Self::issue_one(
            worker,
            &mut self.engine,
            &mut self.slots,
            &mut self.free[w],
            w,
            now,
        );
        worker.commit();
        result
    }

    fn issue_one(
        worker: &mut Worker,
        engine: &mut Engine<D, Buf, Q>,
        slots: &mut [Slot],
        free: &mut Vec<u32>,
        w: usize,
        now: Nanos,
    ) -> Result<(), JobRunError> {
        while worker.can_issue(now) {
            let Some(s) = free.pop() else {
                break;
            };
            let io = worker.next_io(now);
            let slot = &mut slots[s as usize];
            let offset = io.sector << 9;
            let req = if io.op.has_data() {
                let buf = slot.spare.take().ok_or_else(|| JobRunError::Refused {
                    job: worker.name.clone(),
                    error: DioError::Busy { max: 0 },
                })?;
                let mut piece = match Slice::new(buf, 0, io.len as usize) {
                    Ok(p) => p,
                    Err(buf) => {
                        slot.spare = Some(buf);
                        return Err(JobRunError::Memory(BufError::Layout {
                            len: io.len as usize,
                            align: 0,
                        }));
                    }
                };
                if let (VerifyIo::Fill(generation), Some(spec)) = (io.verify, &worker.verify)
                    && let Err(error) = verify::fill(spec, &mut piece, offset, generation)
                {
                    slot.spare = Some(piece.into_inner());
                    free.push(s);
                    return Err(JobRunError::VerifySetup {
                        job: worker.name.clone(),
                        len: io.len,
                        error,
                    });
                }
                if io.verify == VerifyIo::None
                    && io.op != Op::Read
                    && let Some(contents) = worker.contents.as_mut()
                {
                    // fio's buffer options: this write's bytes.
                    contents.fill(&mut piece);
                }
                let mut bufs = std::mem::take(&mut slot.bufs);
                bufs.push(piece);
                if io.op == Op::Read {
                    DioRequest::read(offset, bufs, u64::from(s))
                } else {
                    DioRequest::write(offset, bufs, u64::from(s))
                }
            } else if io.op == Op::Flush {
                DioRequest::flush(u64::from(s))
            } else {
                DioRequest::discard(offset, u64::from(io.len), u64::from(s))
            };
            let req = req
                .with_ctx(worker.ctx)
                .with_flags(worker.flags(io.op))
                .with_prio(Worker::io_prio(&io));
            if let Err(rejected) = engine.submit(req) {
                let rejected = *rejected;
                let mut bufs = rejected.request.bufs;
                if let Some(b) = bufs.pop() {
                    slot.spare = Some(b.into_inner());
                }
                slot.bufs = bufs;
                free.push(s);
                return Err(JobRunError::Refused {
                    job: worker.name.clone(),
                    error: rejected.error,
                });
            }
            slot.worker = w as u32;
            slot.io = io;
            worker.issued(&io, now);
        }
        Ok(())
    }

    /// Workers with nothing more to do finish; the workers waiting for
    /// them may start.
    fn retire(&mut self, run_start: Nanos, now: Nanos) {
        let mut any = false;
        for i in 0..self.workers.len() {
            let w = &mut self.workers[i];
            if w.state == State::Running && w.check_done(now) {
                self.engine.context_gone(w.ctx);
                any = true;
                if w.ends_others().is_some() {
                    self.end_others(i);
                }
            }
        }
        if any {
            self.start_check(run_start, now);
        }
    }

    /// The next time a worker wants attention without a completion.
    fn next_wake(&self) -> Option<Nanos> {
        self.workers
            .iter()
            .filter_map(Worker::next_wake)
            .chain(self.start_next)
            .min()
    }

    fn completed(&mut self, mut c: Completion<Buf>) {
        let s = c.user_data as usize;
        let Some(slot) = self.slots.get_mut(s) else {
            return;
        };
        let w = slot.worker as usize;
        let (bytes, status) = match c.result {
            Ok(n) => (n, Status::Ok),
            Err(f) => (f.done, f.status),
        };
        let ok = status.is_ok();
        let Some(worker) = self.workers.get_mut(w) else {
            return;
        };
        let io = slot.io;
        let piece = c.bufs.pop();
        if let (VerifyIo::Check(generation), Some(spec), Some(buf), true) =
            (io.verify, &worker.verify, &piece, ok)
        {
            let got = &buf[..(bytes as usize).min(buf.len())];
            if let Err(e) = verify::check(spec, got, io.offset(), generation) {
                crate::verify_dump::dump_failure(spec, got, io.offset(), generation, &e);
                worker.verify_failed(e);
            }
        }
        if let Some(b) = piece {
            slot.spare = Some(b.into_inner());
        }
        slot.bufs = c.bufs;
        worker.completed(&io, bytes, status, c.queued_at, c.completed_at);
        self.free[w].push(s as u32);
        self.ios += 1;
    }
}

impl From<crate::mq::MqError> for JobRunError {
    fn from(e: crate::mq::MqError) -> JobRunError {
        JobRunError::Mq(Box::new(e))
    }
}

impl JobRunError {
    /// The run's error for `failed`, the first failed worker ([`workload::first_failure`]:
    /// job, clone, failure), with the run's `partial` result.
    pub(crate) fn job_failed(failed: (String, u32, JobFailure), partial: RunResult) -> JobRunError {
        let (job, clone, failure) = failed;
        JobRunError::JobFailed {
            job,
            clone,
            failure: Box::new(failure),
            partial: Box::new(partial),
        }
    }
}
