//! The multi-queue layer: many submitting threads, each with its own engine
//! and its own handle on its device (its own io_uring ring, for a file),
//! under one of the three locking designs of Linux's history.
//!
//! - [`LockMode::Global`]: one lock over every device's queue, taken per
//!   request for merging and insertion, and held across dispatch and the
//!   device's submission, as Linux 2.4's `io_request_lock`.
//! - [`LockMode::Queue`]: the same, with one lock per device queue (Linux
//!   2.5 to 3.x's `queue_lock`).
//! - [`LockMode::Mq`] (the default): blk-mq. Each thread is a software
//!   context that plugs its own requests and a hardware dispatch context
//!   with its own ring. With `none`, each thread has a queue of its own and
//!   the device's driver tags are shared through a lock-free [`TagSet`]: no
//!   lock at all on the submit and complete path. With a scheduler, the
//!   scheduler's queue is the device's, behind its own lock (none where
//!   one thread alone serves the device), taken once per
//!   batch (a plug's worth of requests inserted, a round of dispatches,
//!   a round of completions), and the device's submission happens outside
//!   it.
//!
//! [`MultiQueue`] holds what the threads share (the queues and their locks,
//! the tag sets, every thread's [`Inbox`], one clock); each thread makes its
//! engine from it with [`MultiQueue::engine`] and drives it itself. A
//! request may be dispatched by another thread than the one that submitted
//! it (a shared queue dispatches whatever it holds to whoever asks); its
//! completions go back to the submitter through the submitter's inbox,
//! which also wakes it. An engine that is done keeps polling until its
//! device has reported everything it was given. [`run_threads`] runs fio
//! jobs this way, a thread per job clone.

mod jobs;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use elevator_core::lockstat::LockStat;
use elevator_core::{IoContext, Nanos, Queue, QueueStats, TunableError};
use thiserror::Error;

pub use jobs::{ThreadConfig, ThreadedRun, run_threads, run_threads_traced};

use crate::buf::IoBuf;
use crate::clock::Clock;
use crate::device::{Alignment, DataDevice};
use crate::dio::{Completion, DioRequest, Rejected};
use crate::engine::access::{DriverTags, Handoff, Peers, QueueState, SharedQueue};
use crate::engine::{Engine, EngineConfig, EngineError, EngineStats, build_queue};
use crate::inbox::Inbox;
use crate::lockstat::StatLock;
use crate::tags::TagSet;

/// The most threads (engines) one multi-queue layer serves.
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

/// The layer could not be built.
#[derive(Debug, Error)]
pub enum MqError {
    /// No device was given.
    #[error("no device to run on")]
    NoDevice,
    /// More threads than the layer serves.
    #[error(
        "{threads} threads asked for (one per job clone: numjobs over every job section); \
         at most {max} are allowed"
    )]
    TooManyThreads {
        /// Threads asked for.
        threads: usize,
        /// The limit.
        max: usize,
    },
    /// A device's shared tag set could not be made.
    #[error("device {device}: {why}")]
    Tags {
        /// The device's index.
        device: usize,
        /// What was wrong.
        why: String,
    },
    /// A thread's inbox (an eventfd) could not be made.
    #[error("cannot make a thread's wake-up eventfd")]
    Inbox(#[source] std::io::Error),
    /// A device's queue could not be built.
    #[error("device {device}")]
    Queue {
        /// The device's index.
        device: usize,
        /// Why.
        #[source]
        error: Box<EngineError>,
    },
    /// More engines asked of a device than it was set up for.
    #[error("device {device} was set up for {users} engines, and all were made")]
    TooManyEngines {
        /// The device's index.
        device: usize,
        /// Engines it was set up for.
        users: usize,
    },
    /// A thread or device index out of range.
    #[error("{what} {index} out of range: the layer has {count}")]
    Index {
        /// "thread" or "device".
        what: &'static str,
        /// The index given.
        index: usize,
        /// How many there are.
        count: usize,
    },
}

/// One device's queue, as the threads that use it reach it.
enum Access {
    /// Shared behind a lock.
    Shared(SharedQueue),
    /// Each thread its own queue; the device's driver tags shared, where
    /// more than one thread serves it (one alone needs no sharing: its
    /// queue's own depth limit is the device's).
    Own(Option<(Arc<TagSet>, Arc<AtomicU64>)>),
}

/// What the threads of a multi-queue layer share: each device's queue (or
/// tag set) and every thread's inbox.
pub struct MultiQueue {
    devices: Vec<Access>,
    inboxes: Arc<[Inbox<Handoff>]>,
    clock: Clock,
    cfg: EngineConfig,
    lock: LockMode,
    /// Engines each device was set up for, and how many were made.
    users: Vec<(usize, AtomicUsize)>,
}

impl MultiQueue {
    /// A layer over `devices` (one handle each: its limits, depth and
    /// rotation shape the device's queue) for `users[i]` engines on device
    /// `i` (as many threads in all), with the scheduler and tunables of
    /// `cfg`, locked as `lock` says; with `lock_stats`, every shared lock is
    /// measured.
    pub fn new<D: DataDevice>(
        devices: &[&D],
        users: &[usize],
        cfg: &EngineConfig,
        lock: LockMode,
        lock_stats: bool,
    ) -> Result<MultiQueue, MqError> {
        if devices.is_empty() {
            return Err(MqError::NoDevice);
        }
        if users.len() != devices.len() {
            return Err(MqError::Index {
                what: "user count",
                index: users.len(),
                count: devices.len(),
            });
        }
        let threads: usize = users.iter().sum();
        if threads > MAX_THREADS {
            return Err(MqError::TooManyThreads {
                threads,
                max: MAX_THREADS,
            });
        }
        let queue = |device: usize, d: &D| -> Result<Queue, MqError> {
            build_queue(d, cfg).map_err(|error| MqError::Queue {
                device,
                error: Box::new(error),
            })
        };
        let name = |d: usize| format!("dev{d}");
        let devs: Vec<Access> = match lock {
            LockMode::Global => {
                let states = devices
                    .iter()
                    .enumerate()
                    .map(|(i, d)| queue(i, d).map(QueueState::new))
                    .collect::<Result<Vec<_>, _>>()?;
                let lock = Arc::new(StatLock::new("io_request_lock", states, lock_stats));
                (0..devices.len())
                    .map(|index| {
                        Access::Shared(SharedQueue::Global {
                            lock: lock.clone(),
                            index,
                        })
                    })
                    .collect()
            }
            LockMode::Mq if cfg.scheduler == "none" => devices
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    // The queue is each thread's own; build one now only
                    // to check the configuration.
                    queue(i, d)?;
                    if users[i] < 2 {
                        return Ok(Access::Own(None));
                    }
                    let set = TagSet::new(d.queue_depth().max(1)).map_err(|e| MqError::Tags {
                        device: i,
                        why: e.to_string(),
                    })?;
                    Ok(Access::Own(Some((
                        Arc::new(set),
                        Arc::new(AtomicU64::new(0)),
                    ))))
                })
                .collect::<Result<Vec<_>, MqError>>()?,
            LockMode::Queue | LockMode::Mq => {
                let per_request = lock == LockMode::Queue;
                let kind = if per_request {
                    "queue_lock"
                } else {
                    "sched_lock"
                };
                devices
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let state = QueueState::new(queue(i, d)?);
                        if !per_request && users[i] < 2 {
                            // blk-mq with one context on the device: its
                            // scheduler is shared with nobody, so it takes
                            // no lock (the queue is the engine's own).
                            return Ok(Access::Own(None));
                        }
                        Ok(Access::Shared(SharedQueue::Device {
                            lock: Arc::new(StatLock::new(
                                format!("{kind} {}", name(i)),
                                state,
                                lock_stats,
                            )),
                            per_request,
                        }))
                    })
                    .collect::<Result<Vec<_>, MqError>>()?
            }
        };
        let inboxes: Arc<[Inbox<Handoff>]> = (0..threads)
            .map(|_| Inbox::new())
            .collect::<Result<Vec<_>, _>>()
            .map_err(MqError::Inbox)?
            .into();
        Ok(MultiQueue {
            devices: devs,
            inboxes,
            clock: Clock::new(),
            cfg: cfg.clone(),
            lock,
            users: users.iter().map(|&u| (u, AtomicUsize::new(0))).collect(),
        })
    }

    /// The engine of thread `thread` on device `device`, over `handle` (its
    /// own handle on that device). Make it on the thread that drives it.
    pub fn engine<D: DataDevice, B: IoBuf>(
        &self,
        thread: usize,
        device: usize,
        handle: D,
    ) -> Result<MqEngine<D, B>, MqError> {
        if thread >= self.inboxes.len() {
            return Err(MqError::Index {
                what: "thread",
                index: thread,
                count: self.inboxes.len(),
            });
        }
        let Some(access) = self.devices.get(device) else {
            return Err(MqError::Index {
                what: "device",
                index: device,
                count: self.devices.len(),
            });
        };
        let (users, made) = &self.users[device];
        if made.fetch_add(1, Ordering::Relaxed) >= *users {
            return Err(MqError::TooManyEngines {
                device,
                users: *users,
            });
        }
        let peers = Some(Peers {
            me: thread as u16,
            inboxes: self.inboxes.clone(),
        });
        let fail = |error| MqError::Queue {
            device,
            error: Box::new(error),
        };
        Ok(match access {
            Access::Shared(q) => MqEngine::Shared(
                Engine::with_access(handle, &self.cfg, q.clone(), self.clock, peers, None)
                    .map_err(fail)?,
            ),
            Access::Own(shared_tags) => {
                let queue = QueueState::new(build_queue(&handle, &self.cfg).map_err(fail)?);
                let tags = shared_tags
                    .as_ref()
                    .map(|(set, waiters)| DriverTags::new(set.clone(), waiters.clone()));
                MqEngine::Own(
                    Engine::with_access(handle, &self.cfg, queue, self.clock, peers, tags)
                        .map_err(fail)?,
                )
            }
        })
    }

    /// Wake every thread's engine from its sleep (to see a stop flag).
    pub fn wake_all(&self) {
        for inbox in self.inboxes.iter() {
            inbox.push(Handoff::wake());
        }
    }

    /// A function that wakes every thread's engine, for a thread that has
    /// no hold on the layer (one that stops the run).
    pub fn waker(&self) -> impl Fn() + Send + Sync + 'static {
        let inboxes = self.inboxes.clone();
        move || {
            for inbox in inboxes.iter() {
                inbox.push(Handoff::wake());
            }
        }
    }

    /// The clock every engine of the layer reads.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The locking design.
    pub fn lock_mode(&self) -> LockMode {
        self.lock
    }

    /// Threads the layer serves.
    pub fn threads(&self) -> usize {
        self.inboxes.len()
    }

    /// Devices the layer serves.
    pub fn devices(&self) -> usize {
        self.devices.len()
    }

    /// The shared locks and their figures (counts are zero unless the
    /// layer measures them). Call it while no engine holds a lock.
    pub fn locks(&self) -> Vec<LockStat> {
        let mut out = Vec::new();
        for (i, a) in self.devices.iter().enumerate() {
            match a {
                Access::Shared(SharedQueue::Device { lock, .. }) => out.push(lock.stat()),
                Access::Shared(SharedQueue::Global { lock, .. }) if i == 0 => out.push(lock.stat()),
                _ => {}
            }
        }
        out
    }

    /// Trace events the shared queues could not hold, added up (the
    /// queues that are each thread's own are the engines' to report).
    pub fn trace_dropped(&self) -> u64 {
        let mut dropped = 0;
        for (i, a) in self.devices.iter().enumerate() {
            match a {
                Access::Shared(SharedQueue::Device { lock, .. }) => {
                    dropped += lock.lock().queue().trace_dropped()
                }
                Access::Shared(SharedQueue::Global { lock, .. }) if i == 0 => {
                    for s in lock.lock().iter() {
                        dropped += s.queue().trace_dropped();
                    }
                }
                _ => {}
            }
        }
        dropped
    }

    /// The shared queues' figures added up (the queues that are each
    /// thread's own are the engines' to report).
    pub fn queue_stats(&self) -> QueueStats {
        let mut stats = QueueStats::default();
        for (i, a) in self.devices.iter().enumerate() {
            match a {
                Access::Shared(SharedQueue::Device { lock, .. }) => {
                    stats.merge(lock.lock().queue().stats())
                }
                Access::Shared(SharedQueue::Global { lock, .. }) if i == 0 => {
                    for s in lock.lock().iter() {
                        stats.merge(s.queue().stats());
                    }
                }
                _ => {}
            }
        }
        stats
    }
}

/// One thread's engine in a [`MultiQueue`]: over a shared queue, or over a
/// queue of its own with shared tags.
// One per thread, made once and kept: the size difference costs nothing,
// a box would cost an indirection on every call.
#[allow(clippy::large_enum_variant)]
pub enum MqEngine<D: DataDevice, B: IoBuf> {
    /// The device's queue is shared behind a lock.
    Shared(Engine<D, B, SharedQueue>),
    /// The queue is this thread's own (`--lock mq` with `none`).
    Own(Engine<D, B, QueueState>),
}

/// Run `$body` with `$e` bound to whichever engine `$self` holds.
macro_rules! either {
    ($self:expr, $e:ident => $body:expr) => {
        match $self {
            MqEngine::Shared($e) => $body,
            MqEngine::Own($e) => $body,
        }
    };
}

impl<D: DataDevice, B: IoBuf> MqEngine<D, B> {
    /// See [`Engine::submit`].
    pub fn submit(&mut self, req: DioRequest<B>) -> Result<(), Box<Rejected<B>>> {
        either!(self, e => e.submit(req))
    }

    /// See [`Engine::poll`].
    pub fn poll(
        &mut self,
        timeout: Option<Duration>,
        out: &mut Vec<Completion<B>>,
    ) -> Result<usize, EngineError> {
        either!(self, e => e.poll(timeout, out))
    }

    /// See [`Engine::drain`].
    pub fn drain(&mut self, out: &mut Vec<Completion<B>>) -> Result<(), EngineError> {
        either!(self, e => e.drain(out))
    }

    /// See [`Engine::cancel`].
    pub fn cancel(&mut self) {
        either!(self, e => e.cancel())
    }

    /// See [`Engine::plug`].
    pub fn plug(&mut self) {
        either!(self, e => e.plug())
    }

    /// See [`Engine::unplug`].
    pub fn unplug(&mut self) {
        either!(self, e => e.unplug())
    }

    /// See [`Engine::is_idle`]: poll until it is, before stopping.
    pub fn is_idle(&self) -> bool {
        either!(self, e => e.is_idle())
    }

    /// See [`Engine::in_flight`].
    pub fn in_flight(&self) -> u32 {
        either!(self, e => e.in_flight())
    }

    /// See [`Engine::now`].
    pub fn now(&self) -> Nanos {
        either!(self, e => e.now())
    }

    /// See [`Engine::alignment`].
    pub fn alignment(&self) -> Alignment {
        either!(self, e => e.alignment())
    }

    /// See [`Engine::capacity`].
    pub fn capacity(&self) -> u64 {
        either!(self, e => e.capacity())
    }

    /// See [`Engine::device`].
    pub fn device(&self) -> &D {
        either!(self, e => e.device())
    }

    /// See [`Engine::stats`].
    pub fn stats(&self) -> EngineStats {
        either!(self, e => e.stats())
    }

    /// See [`Engine::trace_to`].
    pub fn trace_to(
        &mut self,
        tap: elevator_trace::tap::TraceTap,
        out: elevator_trace::tap::SharedSink,
    ) {
        either!(self, e => e.trace_to(tap, out))
    }

    /// See [`Engine::finish_trace`].
    pub fn finish_trace(
        &mut self,
    ) -> Option<Result<elevator_trace::tap::TraceSummary, std::io::Error>> {
        either!(self, e => e.finish_trace())
    }

    /// See [`Engine::context_gone`].
    pub fn context_gone(&mut self, ctx: IoContext) {
        either!(self, e => e.context_gone(ctx))
    }

    /// See [`Engine::set_tunable`].
    pub fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        either!(self, e => e.set_tunable(name, text))
    }

    /// See [`Engine::next_deadline`].
    pub fn next_deadline(&self) -> Option<Nanos> {
        either!(self, e => e.next_deadline())
    }

    /// See [`Engine::has_finished`].
    pub fn has_finished(&self) -> bool {
        either!(self, e => e.has_finished())
    }

    /// See [`Engine::inbox_fd`].
    #[cfg(not(loom))]
    pub fn inbox_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        either!(self, e => e.inbox_fd())
    }

    /// See [`Engine::prepare_sleep`].
    pub fn prepare_sleep(&self) -> bool {
        either!(self, e => e.prepare_sleep())
    }

    /// See [`Engine::woke`].
    pub fn woke(&self) {
        either!(self, e => e.woke())
    }

    /// See [`Engine::drain_for`].
    pub fn drain_for(
        &mut self,
        limit: Duration,
        out: &mut Vec<Completion<B>>,
    ) -> Result<bool, EngineError> {
        either!(self, e => e.drain_for(limit, out))
    }

    /// The queue's figures: this engine's own queue, or the shared one.
    pub fn queue_stats(&mut self) -> QueueStats {
        either!(self, e => e.with_queue(|q| q.stats().clone()))
    }
}
