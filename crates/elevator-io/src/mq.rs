//! Many submitters: fio jobs on threads, each with its own engine and its
//! own handle on its device (its own io_uring ring, for a file), under one
//! of the three locking designs of Linux's history.
//!
//! - [`LockMode::Global`]: one lock over every device's queue, taken per
//!   request for merging and insertion, and held across dispatch and the
//!   device's submission, as Linux 2.4's `io_request_lock`.
//! - [`LockMode::Queue`]: the same, with one lock per device queue (Linux
//!   2.5 to 3.x's `queue_lock`).
//! - [`LockMode::Mq`] (the default): blk-mq. Each thread is a software
//!   context that plugs its own requests and is a hardware dispatch context
//!   with its own ring. With `none`, each thread has a queue of its own and
//!   the device's driver tags are shared through a lock-free [`TagSet`]: no
//!   lock at all on the submit and complete path. With a scheduler, the
//!   scheduler's queue is the device's, behind its own lock, taken once per
//!   batch (a plug's worth of requests inserted, a round of dispatches), and
//!   the device's submission happens outside it.
//!
//! A request may be dispatched by another thread than the one that
//! submitted it (a shared queue dispatches whatever it holds to whoever
//! asks); its completions go back to the submitter through the submitter's
//! [`Inbox`], which also wakes it. A thread whose jobs are done keeps
//! polling until its device has reported everything it was given.
//!
//! Jobs go to threads one clone each (fio's `numjobs`, and every job
//! section), in job-file order; clone `k` uses device `k mod devices`.
//! Stonewalled phases run one after the other. A thread that fails (a
//! device error, a refused I/O, a panic) stops the run: every other thread
//! cancels what it has in flight and drains, and the error comes back with
//! every thread's results.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use elevator_core::{DeviceStats, QueueStats};
use elevator_fio::job::JobFile;
use elevator_fio::locks::LockStat;
use elevator_fio::result::{CpuUse, RunResult};
use elevator_fio::workload::{self, Worker};
use elevator_fio::{Progress, RunConfig};
use thiserror::Error;

use crate::clock::Clock;
use crate::cpu::CpuTime;
use crate::device::{DataDevice, DeviceError};
use crate::engine::access::{DriverTags, Handoff, Peers, QueueAccess, QueueState, SharedQueue};
use crate::engine::{Engine, EngineConfig, EngineError, build_queue};
use crate::inbox::Inbox;
use crate::jobs::{Buf, JobRunError, Runner, make_slots};
use crate::lockstat::StatLock;
use crate::tags::TagSet;

/// The most threads one run starts (job clones in all).
pub const MAX_THREADS: usize = 64;

/// How the queues of a threaded run are locked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockMode {
    /// One lock over every device's queue (Linux 2.4's `io_request_lock`).
    Global,
    /// One lock per device queue, held across merge, insert and dispatch
    /// (Linux 2.5 to 3.x).
    Queue,
    /// blk-mq: per-thread software and hardware contexts, shared tags, a
    /// scheduler behind its own lock.
    #[default]
    Mq,
}

impl LockMode {
    /// Every mode, as `--lock` names them.
    pub const ALL: [LockMode; 3] = [LockMode::Global, LockMode::Queue, LockMode::Mq];

    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            LockMode::Global => "global",
            LockMode::Queue => "queue",
            LockMode::Mq => "mq",
        }
    }
}

impl fmt::Display for LockMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A lock mode name that is not one.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("unknown lock mode '{0}': expected global, queue or mq")]
pub struct UnknownLockMode(pub String);

impl FromStr for LockMode {
    type Err = UnknownLockMode;

    fn from_str(s: &str) -> Result<LockMode, UnknownLockMode> {
        LockMode::ALL
            .into_iter()
            .find(|m| m.name() == s.trim())
            .ok_or_else(|| UnknownLockMode(s.to_string()))
    }
}

/// How to run jobs on threads.
#[derive(Clone, Debug)]
pub struct ThreadConfig {
    /// Scheduler, tunables, seed.
    pub run: RunConfig,
    /// The locking design.
    pub lock: LockMode,
    /// Measure every lock (hold and wait times); off, locks cost what a
    /// plain mutex costs.
    pub lock_stats: bool,
}

/// What a threaded run produced beyond the run's result.
#[derive(Debug)]
pub struct ThreadedRun {
    /// The jobs' results, the queues' figures added up, the devices'
    /// figures added up, and the CPU time (threads: the sum of the worker
    /// threads').
    pub result: RunResult,
    /// Threads the run started.
    pub threads: usize,
    /// The locks the run's threads shared, with their figures when
    /// measured (empty where none was shared).
    pub locks: Vec<LockStat>,
}

/// One device's queue, as the threads that use it reach it.
enum Access {
    /// Shared behind a lock.
    Shared(SharedQueue),
    /// Each thread its own queue; the device's tags shared.
    Own(Arc<TagSet>, Arc<AtomicU64>),
}

/// What one thread hands back.
struct ThreadEnd {
    /// The worker, with its figures (`None` if its thread panicked).
    worker: Option<Worker>,
    ios: u64,
    polls: u64,
    cpu: CpuTime,
    queue: Option<QueueStats>,
    device: DeviceStats,
    error: Option<JobRunError>,
}

/// Run `jobs` on threads over `devices`, one thread per job clone; each
/// thread gets its own handle on its device from `share` (the first
/// thread of a device gets the device itself).
pub fn run_threads<D, S, E>(
    jobs: &JobFile,
    devices: Vec<D>,
    share: S,
    cfg: &ThreadConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<ThreadedRun, JobRunError>
where
    D: DataDevice + Send,
    S: Fn(&D) -> Result<D, E>,
    E: std::error::Error + Send + Sync + 'static,
{
    if devices.is_empty() {
        return Err(JobRunError::NoDevice);
    }
    let capacity = devices.iter().map(|d| d.limits().capacity << 9).min();
    let (workers, phases) = workload::workers(jobs, capacity.unwrap_or(0), cfg.run.seed)?;
    if workers.len() > MAX_THREADS {
        return Err(JobRunError::TooManyThreads {
            threads: workers.len(),
            max: MAX_THREADS,
        });
    }
    let nthreads = workers.len();
    // A device no clone would use is left out.
    let mut devices = devices;
    devices.truncate(nthreads.max(1));
    let ndev = devices.len();
    let device_of = |w: usize| w % ndev;
    let describe: Vec<String> = devices.iter().map(|d| d.describe()).collect();

    // Handles: the shares first, the device itself last.
    let mut handles: Vec<Vec<D>> = Vec::with_capacity(ndev);
    for (d, dev) in devices.into_iter().enumerate() {
        let users = (0..nthreads).filter(|&w| device_of(w) == d).count();
        let mut mine = Vec::with_capacity(users);
        for _ in 1..users {
            mine.push(share(&dev).map_err(|e| JobRunError::Share(Box::new(e)))?);
        }
        mine.push(dev);
        handles.push(mine);
    }

    let engine_cfg = EngineConfig {
        scheduler: cfg.run.scheduler.clone(),
        tunables: cfg.run.tunables.clone(),
        max_requests: workload::total_depth(jobs).max(1),
        read_only: false,
    };
    let access = build_access(&handles, &engine_cfg, cfg)?;
    let inboxes: Arc<[Inbox<Handoff>]> = (0..nthreads)
        .map(|_| Inbox::new())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| JobRunError::Engine(EngineError::Device(DeviceError::Enter(e))))?
        .into();
    let clock = Clock::new();
    let stop = Arc::new(AtomicBool::new(false));
    let done_ios = Arc::new(AtomicU64::new(0));
    let cpu0 = CpuTime::process_total();

    let mut pending: Vec<Option<Worker>> = workers.into_iter().map(Some).collect();
    let mut ends: Vec<Option<ThreadEnd>> = (0..nthreads).map(|_| None).collect();
    let mut handles: Vec<std::vec::IntoIter<D>> = handles.into_iter().map(Vec::into_iter).collect();
    for phase in 0..phases {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        std::thread::scope(|scope| -> Result<(), JobRunError> {
            let mut running = Vec::new();
            for w in 0..nthreads {
                if pending[w].as_ref().is_none_or(|wk| wk.phase != phase) {
                    continue;
                }
                let Some(worker) = pending[w].take() else {
                    continue;
                };
                let Some(device) = handles[device_of(w)].next() else {
                    return Err(JobRunError::NoDevice);
                };
                let job = Job {
                    jobs,
                    engine_cfg: &engine_cfg,
                    access: &access[device_of(w)],
                    peers: Peers {
                        me: w as u16,
                        inboxes: inboxes.clone(),
                    },
                    clock,
                    stop: stop.clone(),
                    done_ios: done_ios.clone(),
                    seed: cfg.run.seed,
                };
                let handle = std::thread::Builder::new()
                    .name(format!("elevator-{}.{}", worker.name, worker.clone))
                    .spawn_scoped(scope, move || job.run(device, worker))
                    .map_err(|e| JobRunError::Spawn(e.to_string()))?;
                running.push((w, handle));
            }
            while running.iter().any(|(_, h)| !h.is_finished()) {
                std::thread::sleep(Duration::from_millis(100));
                progress(Progress {
                    now: clock.now(),
                    ios: done_ios.load(Ordering::Relaxed),
                    fraction: 0.0,
                });
            }
            for (w, h) in running {
                match h.join() {
                    Ok(end) => ends[w] = Some(end),
                    Err(_) => stop.store(true, Ordering::Relaxed),
                }
            }
            Ok(())
        })?;
    }
    let process = CpuTime::process_total().saturating_sub(cpu0);
    finish(ends, pending, &access, &describe, cfg, process, nthreads)
}

/// Add up what the threads handed back into one result; the first
/// failure, if any, comes back with it.
fn finish(
    ends: Vec<Option<ThreadEnd>>,
    pending: Vec<Option<Worker>>,
    access: &[Access],
    describe: &[String],
    cfg: &ThreadConfig,
    process: Duration,
    threads: usize,
) -> Result<ThreadedRun, JobRunError> {
    let mut workers = Vec::with_capacity(ends.len());
    let mut queue = QueueStats::default();
    let mut device_stats = DeviceStats::default();
    let (mut ios, mut polls) = (0, 0);
    let (mut user, mut system) = (Duration::ZERO, Duration::ZERO);
    let mut failure = None;
    let mut ran = 0;
    for (end, never) in ends.into_iter().zip(pending) {
        let Some(end) = end else {
            // A phase that never started (the run stopped), or a thread
            // that could not hand anything back.
            if let Some(w) = never {
                workers.push(w);
            }
            continue;
        };
        ran += 1;
        workers.extend(end.worker);
        ios += end.ios;
        polls += end.polls;
        user += end.cpu.user;
        system += end.cpu.system;
        if let Some(q) = &end.queue {
            queue.merge(q);
        }
        device_stats.merge(&end.device);
        if failure.is_none() {
            failure = end.error;
        }
    }
    let mut locks = Vec::new();
    let mut seen_global = false;
    for a in access {
        match a {
            Access::Shared(SharedQueue::Device { lock, .. }) => {
                locks.push(lock.stat());
                queue.merge(lock.lock().queue().stats());
            }
            Access::Shared(SharedQueue::Global { lock, .. }) => {
                if !seen_global {
                    seen_global = true;
                    locks.push(lock.stat());
                    for s in lock.lock().iter() {
                        queue.merge(s.queue().stats());
                    }
                }
            }
            Access::Own(..) => {}
        }
    }
    let mut device = describe.first().cloned().unwrap_or_default();
    if describe.len() > 1 {
        device = format!("{} devices: {}", describe.len(), describe.join("; "));
    }
    let result = RunResult {
        scheduler: cfg.run.scheduler.clone(),
        device,
        elapsed: workload::elapsed(&workers),
        queue,
        device_stats,
        events: polls,
        ios,
        cpu: Some(CpuUse {
            process_ns: process.as_nanos() as u64,
            thread_user_ns: user.as_nanos() as u64,
            thread_system_ns: system.as_nanos() as u64,
        }),
        jobs: workload::job_results(workers),
        locks: if cfg.lock_stats { locks.clone() } else { Vec::new() },
    };
    let _ = ran;
    match failure {
        Some(error) => Err(JobRunError::Stopped {
            error: Box::new(error),
            partial: Box::new(result),
        }),
        None => Ok(ThreadedRun {
            result,
            threads,
            locks,
        }),
    }
}

/// Build the shared part of each device's queue for `cfg.lock`.
fn build_access<D: DataDevice>(
    handles: &[Vec<D>],
    engine_cfg: &EngineConfig,
    cfg: &ThreadConfig,
) -> Result<Vec<Access>, JobRunError> {
    let measure = cfg.lock_stats;
    let mut queues = Vec::new();
    for hs in handles {
        if let Some(d) = hs.last() {
            queues.push(build_queue(d, engine_cfg)?);
        }
    }
    let name = |d: usize| format!("dev{d}");
    Ok(match cfg.lock {
        LockMode::Global => {
            let n = queues.len();
            let states: Vec<QueueState> = queues.into_iter().map(QueueState::new).collect();
            let lock = Arc::new(StatLock::new("io_request_lock", states, measure));
            (0..n)
                .map(|index| {
                    Access::Shared(SharedQueue::Global {
                        lock: lock.clone(),
                        index,
                    })
                })
                .collect()
        }
        LockMode::Queue => queues
            .into_iter()
            .enumerate()
            .map(|(d, q)| {
                let q = QueueState::new(q);
                Access::Shared(SharedQueue::Device {
                    lock: Arc::new(StatLock::new(format!("queue_lock {}", name(d)), q, measure)),
                    per_request: true,
                })
            })
            .collect(),
        LockMode::Mq if cfg.run.scheduler == "none" => handles
            .iter()
            .map(|hs| {
                let depth = hs.last().map_or(1, |d| d.queue_depth().max(1));
                let set = TagSet::new(depth).map_err(|e| JobRunError::Tags(e.to_string()));
                set.map(|s| Access::Own(Arc::new(s), Arc::new(AtomicU64::new(0))))
            })
            .collect::<Result<Vec<_>, _>>()?,
        LockMode::Mq => queues
            .into_iter()
            .enumerate()
            .map(|(d, q)| {
                Access::Shared(SharedQueue::Device {
                    lock: Arc::new(StatLock::new(
                        format!("sched_lock {}", name(d)),
                        QueueState::new(q),
                        measure,
                    )),
                    per_request: false,
                })
            })
            .collect(),
    })
}

/// One thread's work: its worker on its device handle.
struct Job<'a> {
    jobs: &'a JobFile,
    engine_cfg: &'a EngineConfig,
    access: &'a Access,
    peers: Peers,
    clock: Clock,
    stop: Arc<AtomicBool>,
    done_ios: Arc<AtomicU64>,
    seed: u64,
}

impl Job<'_> {
    fn run<D: DataDevice>(self, device: D, worker: Worker) -> ThreadEnd {
        let cpu0 = CpuTime::thread();
        let (job, clone) = (worker.name.clone(), worker.clone);
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| match self.access {
            Access::Shared(q) => self.drive(device, worker, q.clone(), None),
            Access::Own(set, waiters) => match build_queue(&device, self.engine_cfg) {
                Ok(queue) => {
                    let tags = DriverTags::new(set.clone(), waiters.clone());
                    self.drive(device, worker, QueueState::new(queue), Some(tags))
                }
                Err(e) => ThreadEnd::failed(worker, e.into()),
            },
        }));
        let mut end = result.unwrap_or_else(|payload| {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            ThreadEnd {
                worker: None,
                ios: 0,
                polls: 0,
                cpu: CpuTime::default(),
                queue: None,
                device: DeviceStats::default(),
                error: Some(JobRunError::Panicked {
                    job,
                    clone,
                    message,
                }),
            }
        });
        if end.error.is_some() {
            self.stop.store(true, Ordering::SeqCst);
            for inbox in self.peers.inboxes.iter() {
                inbox.push(Handoff::wake());
            }
        }
        end.cpu = CpuTime::thread().since(&cpu0);
        end
    }

    fn drive<D: DataDevice, Q: QueueAccess>(
        &self,
        device: D,
        worker: Worker,
        q: Q,
        tags: Option<DriverTags>,
    ) -> ThreadEnd {
        let peers = Peers {
            me: self.peers.me,
            inboxes: self.peers.inboxes.clone(),
        };
        let engine: Engine<D, Buf, Q> =
            match Engine::with_access(device, self.engine_cfg, q, self.clock, Some(peers), tags) {
                Ok(e) => e,
                Err(e) => return ThreadEnd::failed(worker, e.into()),
            };
        let align = engine.alignment().memory;
        let (slots, free) =
            match make_slots(self.jobs, std::slice::from_ref(&worker), align, self.seed) {
                Ok(s) => s,
                Err(e) => return ThreadEnd::failed(worker, e.into()),
            };
        let workers = vec![worker];
        let phase = workers[0].phase;
        let depth = self.jobs.jobs[workers[0].job_index].iodepth as usize;
        let mut runner = Runner {
            engine,
            workers,
            slots,
            free,
            phase,
            phases: phase + 1,
            ios: 0,
            polls: 0,
            out: Vec::with_capacity(depth),
            stop: Some(self.stop.clone()),
        };
        let done_ios = &self.done_ios;
        let mut last = 0;
        let result = runner.run(&mut |p| {
            done_ios.fetch_add(p.ios - last, Ordering::Relaxed);
            last = p.ios;
        });
        let queue = match self.access {
            Access::Own(..) => Some(runner.engine.with_queue(|q| q.stats().clone())),
            Access::Shared(_) => None,
        };
        let device = runner.engine.device().stats();
        let Runner {
            engine,
            mut workers,
            ios,
            polls,
            ..
        } = runner;
        drop(engine);
        ThreadEnd {
            worker: workers.pop(),
            ios,
            polls,
            cpu: CpuTime::default(),
            queue,
            device,
            error: result.err(),
        }
    }
}

impl ThreadEnd {
    /// A thread that failed before its worker ran.
    fn failed(worker: Worker, error: JobRunError) -> ThreadEnd {
        ThreadEnd {
            worker: Some(worker),
            ios: 0,
            polls: 0,
            cpu: CpuTime::default(),
            queue: None,
            device: DeviceStats::default(),
            error: Some(error),
        }
    }
}
