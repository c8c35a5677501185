//! The real-time engine: one elevator-core queue over one device, on the
//! real clock, driven by one thread.
//!
//! A caller's [`DioRequest`] is checked whole ([`DioRequest::check`]), then
//! split into bios, each within the queue's limits for its operation and
//! never crossing a chunk boundary, and submitted to the queue under a plug.
//! The bios of one request share one completion record (Linux's `dio`
//! structure): a reference count that starts at 1 for the submitter, gains
//! one per bio submitted, loses one per bio completed and the submitter's
//! when the last bio is in; at zero the request completes, with the earliest
//! failure in file order (see [`crate::dio`] for the rule). When the queue has
//! no free tag, the rest of a request waits, and requests behind it wait in
//! line (first come, first served, as Linux's tag waiters).
//!
//! [`Engine::poll`] is the loop's one step: collect what the device
//! finished, feed waiting requests, dispatch while the device has room, and
//! if nothing has completed, sleep in the device (an io_uring wait whose
//! timeout is the scheduler's next wake-up, when it idles) until something
//! does. It never busy-polls.
//!
//! Shutting down ([`Engine::cancel`], or dropping the engine with I/O in
//! flight): requests not yet in the queue fail with `Cancelled` from where
//! they got to, requests the scheduler still holds are completed `Cancelled`
//! as they come out, and the device is asked to cancel what it has; the
//! engine then waits for every bio, so no buffer is freed while the kernel
//! may still use it.
//!
//! No heap allocation per I/O once warm: records and bio slots are reused
//! from free lists, and the caller's buffer list moves in and out with its
//! request.
//!
//! The queue is the engine's own, or shared with the engines of other
//! threads behind a lock ([`access`]): then a request of this engine's may
//! be dispatched to (and completed by) another engine's device, and the bio
//! completions come back through this engine's inbox; [`Engine::poll`]
//! sleeps until the device or the inbox has something.

pub mod access;
mod traced;

use std::collections::VecDeque;
use std::time::Duration;

use elevator_core::{
    Bio, BioCompletion, BioFlags, BuildError, ConfigError, DeviceIo, Dispatch, IoContext, IoPrio,
    Nanos, Op, Outcome, Queue, RequestError, RequestId, Status, SubmitError, TunableError,
};
use thiserror::Error;

use crate::buf::{AlignedBuf, IoBuf};
use crate::clock::Clock;
use crate::device::{Alignment, DataDevice, DataSegment, DeviceError};
use crate::dio::{Completion, DioError, DioFailure, DioRequest, Rejected};
use access::{BioSlot, DriverTags, Handoff, Peers, QueueAccess, QueueState};
use elevator_trace::tap::{SharedSink, TraceSummary, TraceTap};
use traced::Tapped;

/// The engine's own tunable: how many dispatched requests go to the kernel
/// per submission (`io_uring_enter`). 1 (the default) hands each request over
/// as soon as it is dispatched, as fio does by default
/// (`iodepth_batch_submit=1`); 0 hands over each dispatch round at once,
/// which saves system calls but delivers I/O to the device in bursts (on this
/// machine's virtio disk that cost a fifth of the IOPS).
pub const SUBMIT_BATCH: &str = "submit_batch";

/// Read a value of [`SUBMIT_BATCH`]: a count of requests, 0 for a whole
/// dispatch round at once (returned as `u32::MAX`).
pub fn parse_batch(name: &str, text: &str) -> Result<u32, TunableError> {
    match text.trim().parse::<u32>() {
        Ok(0) => Ok(u32::MAX),
        Ok(n) => Ok(n),
        Err(_) => Err(TunableError::BadValue {
            name: name.to_string(),
            value: text.to_string(),
            why: "expected a count of requests (0: all at once)",
        }),
    }
}

/// How long a shared engine being dropped with requests in flight waits
/// for them before it leaks their buffers (see [`Engine::drain_for`]).
pub const SHARED_DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// How to build an [`Engine`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// The scheduler's name (`none`, `mq-deadline`, `bfq`, ...).
    pub scheduler: String,
    /// Queue and scheduler tunables to set, by name, from text (and the
    /// engine's own, [`SUBMIT_BATCH`]).
    pub tunables: Vec<(String, String)>,
    /// Caller requests in flight at once; more are refused with
    /// [`DioError::Busy`]. Default 4096.
    pub max_requests: u32,
    /// Refuse requests that would change the device.
    pub read_only: bool,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            scheduler: "mq-deadline".into(),
            tunables: Vec::new(),
            max_requests: 4096,
            read_only: false,
        }
    }
}

/// The engine could not be built, or the device failed under it.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The queue cannot be built for this device and scheduler.
    #[error("cannot build the queue")]
    Queue(#[from] ConfigError),
    /// A tunable could not be set.
    #[error("{name}={value}: {error}")]
    Tunable {
        /// Tunable name.
        name: String,
        /// Its value as given.
        value: String,
        /// What was wrong.
        error: TunableError,
    },
    /// The device failed to submit or wait.
    #[error("the device failed")]
    Device(#[from] DeviceError),
    /// The device reported a request the queue does not have in flight.
    #[error("the device reported a completion the queue does not expect")]
    Completion(#[from] RequestError),
    /// Requests are in flight, but nothing can make them progress.
    #[error("stalled: {in_flight} requests in flight, none at the device, no timer set")]
    Stalled {
        /// Requests in flight.
        in_flight: u32,
    },
}

/// What the engine has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Requests accepted.
    pub submitted: u64,
    /// Requests refused before anything was submitted.
    pub refused: u64,
    /// Requests completed (successfully or not).
    pub completed: u64,
    /// Requests that completed with an error.
    pub failed: u64,
    /// Bios submitted to the queue.
    pub bios: u64,
    /// Times a request had to wait for a tag.
    pub tag_waits: u64,
    /// Sleeps in the device.
    pub waits: u64,
}

/// One caller request: its completion record.
struct Record<B> {
    op: Op,
    flags: BioFlags,
    ctx: IoContext,
    prio: IoPrio,
    offset: u64,
    len: u64,
    bufs: Vec<B>,
    user_data: u64,
    /// The submitter's reference plus one per bio in the queue.
    refs: u32,
    /// Submission cursor: segment, offset within it, bytes issued.
    seg: usize,
    seg_off: usize,
    issued: u64,
    /// Whether a flush's one bio went in.
    flush_sent: bool,
    /// Offset of the first failed byte (`len` if none) and its status.
    fail_at: u64,
    status: Status,
    queued_at: Nanos,
}

impl<B> Record<B> {
    /// The rest of the request will not be submitted: it fails with `status`
    /// from where submission got to (unless an earlier byte failed already).
    /// A flush that was never sent fails whole: it made nothing durable.
    fn fail_rest(&mut self, status: Status) {
        let unsent = if self.op == Op::Flush {
            !self.flush_sent
        } else {
            self.issued < self.len
        };
        if unsent && (self.issued < self.fail_at || self.status == Status::Ok) {
            self.fail_at = self.fail_at.min(self.issued);
            self.status = status;
        }
        self.issued = self.len;
        self.flush_sent = true;
    }
}

/// What a dispatch round hands the device after the queue's lock is let
/// go: the request and its segments' range in `Engine::segs`.
type Staged = (DeviceIo, u32, u32);

/// One queue over one device on the real clock (the queue of its own, or
/// shared with other engines: see [`access`]).
pub struct Engine<D: DataDevice, B: IoBuf = AlignedBuf, Q: QueueAccess = QueueState> {
    // Declared first so that it is dropped first: a device drains what it
    // has in flight when dropped, before the records (and the buffers the
    // kernel may be using) go.
    device: D,
    q: Tapped<Q>,
    /// The engines this one shares queues or tags with (`None`: alone).
    peers: Option<Peers>,
    /// Hand-offs taken from the inbox, being applied.
    handoffs: Vec<Handoff>,
    /// Driver tags shared with the other hardware contexts of the device.
    driver_tags: Option<DriverTags>,
    /// Dispatched requests to hand the device once the lock is let go.
    staged: Vec<Staged>,
    clock: Clock,
    align: Alignment,
    capacity: u64,
    read_only: bool,
    records: Vec<Record<B>>,
    free_records: Vec<u32>,
    max_requests: u32,
    /// Records with bios still to submit, in arrival order.
    waiting: VecDeque<u32>,
    /// Records complete and not yet handed back.
    finished: Vec<u32>,
    segs: Vec<DataSegment>,
    dev_done: Vec<(u32, Outcome)>,
    timer_at: Option<Nanos>,
    cancelling: bool,
    user_plug: bool,
    /// Each request goes to the queue as one bio per buffer (see
    /// [`Engine::set_whole_bios`]).
    whole_bios: bool,
    /// A poll with a timeout leaves the caller's plug as it is (see
    /// [`Engine::set_plug_held_while_waiting`]).
    plug_held_while_waiting: bool,
    /// Requests handed to the kernel per submission (`u32::MAX`: each
    /// dispatch round's all at once).
    submit_batch: u32,
    unkicked: u32,
    stats: EngineStats,
}

/// The engine's own tunable ([`SUBMIT_BATCH`]) out of `cfg`'s, and the
/// rest, which are the queue's.
fn split_tunables(cfg: &EngineConfig) -> Result<(u32, Vec<(String, String)>), EngineError> {
    let mut submit_batch = 1;
    let mut queue_tunables = Vec::with_capacity(cfg.tunables.len());
    for (name, value) in &cfg.tunables {
        if name == SUBMIT_BATCH {
            submit_batch = parse_batch(name, value).map_err(|error| EngineError::Tunable {
                name: name.clone(),
                value: value.clone(),
                error,
            })?;
        } else {
            queue_tunables.push((name.clone(), value.clone()));
        }
    }
    Ok((submit_batch, queue_tunables))
}

/// The queue `cfg` asks for (scheduler and tunables) over `device`: what
/// [`Engine::new`] builds, and what engines sharing one queue are given
/// (see [`Engine::with_access`]).
pub fn build_queue<D: DataDevice>(device: &D, cfg: &EngineConfig) -> Result<Queue, EngineError> {
    let (_, queue_tunables) = split_tunables(cfg)?;
    Queue::for_device(device.shape(), &cfg.scheduler, &queue_tunables).map_err(|e| match e {
        BuildError::Config(e) => EngineError::Queue(e),
        BuildError::Tunable { name, value, error } => EngineError::Tunable { name, value, error },
    })
}

impl<D: DataDevice, B: IoBuf> Engine<D, B> {
    /// An engine over `device` with the queue and scheduler of `cfg`.
    pub fn new(device: D, cfg: &EngineConfig) -> Result<Engine<D, B>, EngineError> {
        let queue = build_queue(&device, cfg)?;
        Engine::with_access(
            device,
            cfg,
            QueueState::new(queue),
            Clock::new(),
            None,
            None,
        )
    }

    /// The queue (for its statistics, tunables and scheduler).
    pub fn queue(&self) -> &Queue {
        &self.q.inner.queue
    }
}

impl<D: DataDevice, B: IoBuf, Q: QueueAccess> Engine<D, B, Q> {
    /// An engine over `device` submitting to the queue `q` reaches, on
    /// `clock` (engines of one run share one, so their times compare).
    /// `peers` names the engines it shares queues or driver tags with (its
    /// device then watches its inbox); `driver_tags`, the device's tags
    /// when they are shared. `cfg`'s scheduler and queue tunables are not
    /// used (the queue exists); its `submit_batch`, `max_requests` and
    /// `read_only` are.
    pub fn with_access(
        #[cfg_attr(loom, allow(unused_mut))] mut device: D,
        cfg: &EngineConfig,
        q: Q,
        clock: Clock,
        peers: Option<Peers>,
        driver_tags: Option<DriverTags>,
    ) -> Result<Engine<D, B, Q>, EngineError> {
        let (submit_batch, _) = split_tunables(cfg)?;
        let limits = device.limits();
        // Under loom (the model checks of the inbox and tag set) an inbox has
        // no eventfd, and no engine runs.
        #[cfg(not(loom))]
        if let Some(p) = &peers {
            let fd = p.inboxes[usize::from(p.me)].fd();
            device.watch(std::os::fd::AsRawFd::as_raw_fd(&fd))?;
        }
        let mut align = device.alignment();
        align.offset = align.offset.max(limits.logical_block_size);
        let depth = device.queue_depth() as usize;
        Ok(Engine {
            q: Tapped::new(q),
            peers,
            handoffs: Vec::with_capacity(depth),
            driver_tags,
            staged: Vec::with_capacity(depth),
            clock,
            align,
            capacity: limits.capacity << 9,
            read_only: cfg.read_only,
            records: Vec::new(),
            free_records: Vec::new(),
            max_requests: cfg.max_requests.max(1),
            waiting: VecDeque::new(),
            // Every live request may finish in one reap: room for all of
            // them up front, so that a rare burst does not allocate.
            finished: Vec::with_capacity(cfg.max_requests.max(1) as usize),
            segs: Vec::with_capacity(usize::from(limits.max_segments)),
            dev_done: Vec::with_capacity(depth),
            timer_at: None,
            cancelling: false,
            user_plug: false,
            whole_bios: false,
            plug_held_while_waiting: false,
            submit_batch,
            unkicked: 0,
            stats: EngineStats::default(),
            device,
        })
    }

    /// The engine's clock (nanoseconds since it was built).
    pub fn now(&self) -> Nanos {
        self.clock.now()
    }

    /// Run `f` on the queue (under its lock, if it is shared): for its
    /// statistics, tunables and scheduler.
    pub fn with_queue<R>(&mut self, f: impl FnOnce(&Queue) -> R) -> R {
        self.q.with(|s| f(&s.queue))
    }

    /// Write the queue's trace events from now on through `tap` into `out`
    /// (a sink the engines of a run may share): every event this engine
    /// causes, drained while it holds the queue.
    pub fn trace_to(&mut self, tap: TraceTap, out: SharedSink) {
        self.q.start(tap, out);
    }

    /// Stop tracing and write what is left: what this engine's tap wrote
    /// (`None` if it was not tracing). Events a queue of this engine's own
    /// could not hold are in the summary's `dropped`; a shared queue's are
    /// not (count them once, from the queue).
    pub fn finish_trace(&mut self) -> Option<Result<TraceSummary, std::io::Error>> {
        self.q.stop()
    }

    /// Whether the queue is shared with other engines.
    pub fn shares_queue(&self) -> bool {
        self.q.shared()
    }

    /// Set a queue or scheduler tunable by name, from text (the engine's
    /// own `submit_batch` too). The queue itself is not handed out: requests
    /// in it point at buffers only the engine may release.
    pub fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        if name == SUBMIT_BATCH {
            self.submit_batch = parse_batch(name, text)?;
            return Ok(());
        }
        self.q.with(|s| s.queue.set_str(name, text))
    }

    /// The submitter `ctx` is gone (a process exited, a connection closed):
    /// the scheduler drops what it kept for it.
    pub fn context_gone(&mut self, ctx: IoContext) {
        let now = self.clock.now();
        let wake = self.q.with(|s| {
            s.queue.context_gone(ctx, now);
            std::mem::take(&mut s.sleepers)
        });
        self.wake(wake);
    }

    /// Record the queue's trace events from now on (with room for `limit`
    /// undrained ones), or stop: drain them with [`Engine::drain_trace`]
    /// after each call into the engine.
    pub fn set_tracing(&mut self, on: bool, limit: usize) {
        self.q.with(|s| s.queue.set_tracing(on, limit));
    }

    /// Submit each request from now on as one bio per buffer, whatever its
    /// size, for the queue to split as its limits require (`X` events, as
    /// Linux splits a bio in `blk_mq_submit_bio`), instead of cutting it
    /// into bios that fit first as a direct-I/O path does (the default).
    /// A trace replay submits the recorded bios so, and the queue sees
    /// each as the recording's queue did.
    pub fn set_whole_bios(&mut self, on: bool) {
        self.whole_bios = on;
    }

    /// Whether a [`Engine::poll`] with a timeout, about to sleep, leaves the
    /// requests on the caller's plug there (`true`) or hands them to the
    /// scheduler first (`false`, the default, as Linux flushes a task's
    /// plug when it sleeps). A trace replay waiting for the recorded time
    /// of its next step holds the plug as the recording's task did, which
    /// did not sleep between its bios; a poll with no timeout always
    /// flushes, or nothing could wake it.
    pub fn set_plug_held_while_waiting(&mut self, on: bool) {
        self.plug_held_while_waiting = on;
    }

    /// Hand the queue's trace events recorded since the last drain to `f`,
    /// oldest first.
    pub fn drain_trace(&mut self, f: &mut dyn FnMut(elevator_core::TraceEvent)) {
        self.q.with(|s| s.queue.drain_trace().for_each(&mut *f));
    }

    /// The device.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The alignment requests must keep.
    pub fn alignment(&self) -> Alignment {
        self.align
    }

    /// The device's size in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// What the engine has done.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// When the engine next needs a [`Engine::poll`] even if no completion
    /// arrives: the scheduler's wake-up, or the device's next completion if
    /// it runs on a schedule (a paced model).
    pub fn next_deadline(&self) -> Option<Nanos> {
        match (self.timer_at, self.device.next_completion()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The descriptor an event loop of its own waits on, besides the
    /// device's [`poll_fd`](DataDevice::poll_fd), for an engine that has
    /// peers: it becomes readable when another thread hands this engine
    /// completions or wakes it while it sleeps. Sleep on it only between
    /// [`Engine::prepare_sleep`] and [`Engine::woke`].
    #[cfg(not(loom))]
    pub fn inbox_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.peers
            .as_ref()
            .map(|p| p.inboxes[usize::from(p.me)].fd())
    }

    /// About to sleep in an event loop of the caller's (see
    /// [`Engine::inbox_fd`]): whether it may, that is, nothing has been
    /// handed to this engine since its last [`Engine::poll`]. When it may,
    /// other threads write the inbox's descriptor to wake it; call
    /// [`Engine::woke`] after the sleep, whether it slept or not.
    pub fn prepare_sleep(&self) -> bool {
        self.peers
            .as_ref()
            .is_none_or(|p| p.inboxes[usize::from(p.me)].prepare_sleep())
    }

    /// Back from a sleep that [`Engine::prepare_sleep`] allowed.
    pub fn woke(&self) {
        if let Some(p) = &self.peers {
            p.inboxes[usize::from(p.me)].woke();
        }
    }

    /// Whether completed requests wait to be handed back by
    /// [`Engine::poll`] (so an event loop must not sleep).
    pub fn has_finished(&self) -> bool {
        !self.finished.is_empty()
    }

    /// Requests accepted and not yet handed back.
    pub fn in_flight(&self) -> u32 {
        (self.records.len() - self.free_records.len()) as u32
    }

    /// Whether nothing of this engine's is in flight and its device has
    /// reported everything it was given. On a shared queue the device may
    /// hold other engines' requests (whoever asks dispatches what the queue
    /// holds), so an engine must keep polling until it is idle before it
    /// stops, or those requests never complete.
    pub fn is_idle(&self) -> bool {
        self.in_flight() == 0 && self.device.outstanding() == 0
    }

    /// Hold new requests in the plug until [`Engine::unplug`], so that a batch
    /// merges and reaches the scheduler together. As in Linux, a
    /// [`Engine::poll`] that is about to sleep hands what the plug holds to
    /// the scheduler first (the plug stays in force), and
    /// [`Engine::cancel`] ends it. On a shared queue the plug is this
    /// engine's own: requests wait here and go into the queue in one hold of
    /// its lock at the unplug.
    pub fn plug(&mut self) {
        self.user_plug = true;
        if !self.q.shared() {
            self.q.with(|s| s.queue.plug());
        }
    }

    /// Release the plug.
    pub fn unplug(&mut self) {
        self.user_plug = false;
        let now = self.clock.now();
        if self.q.shared() {
            self.feed_waiting(now);
        } else {
            self.q.with(|s| s.queue.unplug(now));
        }
    }

    /// Accept `req`, or give it back with the reason. Nothing of a refused
    /// request was submitted. The request is sent to the device by the next
    /// [`Engine::poll`].
    pub fn submit(&mut self, req: DioRequest<B>) -> Result<(), Box<Rejected<B>>> {
        let refuse = |error, request| Err(Box::new(Rejected { error, request }));
        if self.cancelling {
            self.stats.refused += 1;
            return refuse(DioError::ShuttingDown, req);
        }
        if self.read_only && req.op != Op::Read && req.op != Op::Flush {
            self.stats.refused += 1;
            return refuse(DioError::ReadOnly { op: req.op }, req);
        }
        if let Err(error) = req.check(self.align, self.capacity) {
            self.stats.refused += 1;
            return refuse(error, req);
        }
        let Some(r) = self.alloc_record() else {
            self.stats.refused += 1;
            return refuse(
                DioError::Busy {
                    max: self.max_requests,
                },
                req,
            );
        };
        let len = req.bytes();
        self.records[r as usize] = Record {
            op: req.op,
            flags: req.flags,
            ctx: req.ctx,
            prio: req.prio,
            offset: req.offset,
            len,
            bufs: req.bufs,
            user_data: req.user_data,
            refs: 1,
            seg: 0,
            seg_off: 0,
            issued: 0,
            flush_sent: false,
            fail_at: len,
            status: Status::Ok,
            queued_at: 0,
        };
        self.stats.submitted += 1;
        let now = self.clock.now();
        if self.q.shared() {
            // This engine's plug: the queue sees the batch in one hold.
            let queued = !self.waiting.is_empty();
            self.waiting.push_back(r);
            if !self.user_plug {
                if queued {
                    self.stats.tag_waits += 1;
                }
                self.feed_waiting(now);
            }
            return Ok(());
        }
        if !self.waiting.is_empty() {
            self.waiting.push_back(r);
            self.stats.tag_waits += 1;
            return Ok(());
        }
        let me = self.me();
        let whole = self.whole_bios;
        let Engine {
            q,
            records,
            align,
            stats,
            user_plug,
            ..
        } = self;
        let all_in = q.with(|s| {
            if !*user_plug {
                s.queue.plug();
            }
            let rec = &mut records[r as usize];
            let all_in = feed(s, rec, r, me, align, whole, stats, now);
            if !*user_plug {
                s.queue.unplug(now);
            }
            all_in
        });
        if all_in {
            self.put_ref(r, now);
        } else {
            self.waiting.push_back(r);
            self.stats.tag_waits += 1;
        }
        Ok(())
    }

    /// This engine's index among the engines it shares with (0 alone).
    fn me(&self) -> u16 {
        self.peers.as_ref().map_or(0, |p| p.me)
    }

    fn alloc_record(&mut self) -> Option<u32> {
        if let Some(r) = self.free_records.pop() {
            return Some(r);
        }
        if self.records.len() as u32 >= self.max_requests {
            return None;
        }
        self.records.push(Record {
            op: Op::Read,
            flags: BioFlags::NONE,
            ctx: IoContext(0),
            prio: IoPrio::DEFAULT,
            offset: 0,
            len: 0,
            bufs: Vec::new(),
            user_data: 0,
            refs: 0,
            seg: 0,
            seg_off: 0,
            issued: 0,
            flush_sent: false,
            fail_at: 0,
            status: Status::Ok,
            queued_at: 0,
        });
        Some(self.records.len() as u32 - 1)
    }

    /// Drop the submitter's reference of record `r` (all its bios are in the
    /// queue); at zero it is finished.
    fn put_ref(&mut self, r: u32, now: Nanos) {
        let rec = &mut self.records[r as usize];
        debug_assert!(rec.refs > 0, "completion record reference count underflow");
        rec.queued_at = now;
        rec.refs -= 1;
        if rec.refs == 0 {
            self.finished.push(r);
        }
    }

    /// Feed waiting records, oldest first, while the queue takes them: in
    /// one hold of the queue's lock, or one per record where the lock is
    /// taken per request.
    fn feed_waiting(&mut self, now: Nanos) {
        while !self.waiting.is_empty() {
            let me = self.me();
            let per_request = self.q.per_request();
            let shared = self.q.shared();
            let whole = self.whole_bios;
            let Engine {
                q,
                records,
                align,
                stats,
                user_plug,
                waiting,
                finished,
                ..
            } = self;
            let (fed, blocked) = q.with(|s| {
                let plug = shared || !*user_plug;
                if plug {
                    s.queue.plug();
                }
                let mut fed = 0;
                let mut blocked = false;
                while let Some(&r) = waiting.front() {
                    let rec = &mut records[r as usize];
                    if !feed(s, rec, r, me, align, whole, stats, now) {
                        blocked = true;
                        if shared {
                            // Woken by whoever next completes a request here.
                            s.sleepers |= 1 << (me % 64);
                        }
                        break;
                    }
                    waiting.pop_front();
                    rec.queued_at = now;
                    debug_assert!(rec.refs > 0, "completion record reference count underflow");
                    rec.refs -= 1;
                    if rec.refs == 0 {
                        finished.push(r);
                    }
                    fed += 1;
                    if per_request {
                        break;
                    }
                }
                if plug {
                    s.queue.unplug(now);
                }
                (fed, blocked)
            });
            if blocked || fed == 0 {
                break;
            }
        }
    }

    /// Apply hand-offs: completions of this engine's bios that another
    /// engine completed.
    fn take_handoffs(&mut self) {
        let Some(p) = &self.peers else {
            return;
        };
        let inbox = &p.inboxes[usize::from(p.me)];
        if inbox.is_empty() {
            return;
        }
        let mut got = std::mem::take(&mut self.handoffs);
        inbox.drain(&mut got);
        for h in got.drain(..) {
            if h.record != Handoff::WAKE {
                bio_done(&mut self.records, &mut self.finished, h);
            }
        }
        self.handoffs = got;
    }

    /// Collect what the device has finished by `now`.
    fn reap(&mut self, now: Nanos) -> Result<(), EngineError> {
        let mut done = std::mem::take(&mut self.dev_done);
        done.clear();
        self.device
            .complete(now, &mut |tag, outcome| done.push((tag, outcome)));
        let result = if done.is_empty() {
            Ok(())
        } else {
            self.complete_all(&done, now)
        };
        let any = !done.is_empty();
        self.dev_done = done;
        if any {
            self.feed_waiting(now);
        }
        result
    }

    /// Complete each request of `done` with its outcome: each bio's
    /// completion goes to its record (or its owner's inbox). Every
    /// completion is applied even if one is refused: the device has
    /// forgotten them all, so one dropped here would never complete (and its
    /// request's buffers would be held for good).
    fn complete_all(&mut self, done: &[(u32, Outcome)], now: Nanos) -> Result<(), EngineError> {
        let me = self.me();
        let per_request = self.q.per_request();
        let Engine {
            q,
            records,
            finished,
            peers,
            driver_tags,
            ..
        } = self;
        let mut result = Ok(());
        let mut wake = 0u64;
        let mut at = 0;
        while at < done.len() {
            let end = if per_request { at + 1 } else { done.len() };
            q.with(|s| {
                for &(tag, outcome) in &done[at..end] {
                    let id = RequestId::from_raw(tag);
                    if let Err(e) =
                        complete_in(s, id, outcome, now, me, records, finished, peers.as_ref())
                        && result.is_ok()
                    {
                        result = Err(EngineError::Completion(e));
                    }
                }
                wake |= std::mem::take(&mut s.sleepers);
            });
            at = end;
        }
        if let Some(dt) = driver_tags {
            for &(tag, _) in done {
                wake |= dt.put(tag);
            }
        }
        self.wake(wake);
        result
    }

    /// Wake the engines of `mask` (a bit each, by index modulo 64), but
    /// this one.
    fn wake(&self, mask: u64) {
        if let Some(p) = self.peers.as_ref() {
            p.wake(mask);
        }
    }

    /// Dispatch while the device has room: a batch per hold of the queue's
    /// lock, handed to the device once the lock is let go; or, where the
    /// lock is taken per request, one request per hold with the device's
    /// submission inside it (as the single-queue kernels called the driver
    /// with the queue lock held).
    fn pump(&mut self, now: Nanos) -> Result<(), EngineError> {
        self.timer_at = None;
        let me = self.me();
        let per_request = self.q.per_request();
        loop {
            let room = self
                .device
                .queue_depth()
                .saturating_sub(self.device.outstanding());
            if room == 0 {
                break;
            }
            let batch = if per_request { 1 } else { room };
            let Engine {
                device,
                q,
                records,
                finished,
                peers,
                driver_tags,
                staged,
                segs,
                cancelling,
                timer_at,
                unkicked,
                submit_batch,
                ..
            } = self;
            staged.clear();
            segs.clear();
            let mut sent = 0u32;
            let mut cancelled = 0u32;
            let mut result = Ok(());
            let mut wait_tag = false;
            // Engines waiting for driver tags that cancelled requests gave
            // back.
            let mut tag_waiters = 0u64;
            let shared = q.shared();
            q.with(|s| {
                for _ in 0..batch {
                    let tag = match driver_tags.as_mut() {
                        None => None,
                        Some(_) if s.queue.queued() == 0 => break,
                        Some(dt) => match dt.take() {
                            Some(t) => Some(t),
                            None => {
                                wait_tag = true;
                                break;
                            }
                        },
                    };
                    match s.queue.dispatch(now) {
                        Dispatch::Request(id) => {
                            if let (Some(dt), Some(t)) = (driver_tags.as_mut(), tag) {
                                dt.bind(t, id.raw());
                            }
                            if *cancelling {
                                let failed = Outcome::Failed {
                                    status: Status::Cancelled,
                                    good_bytes: 0,
                                };
                                if let Err(e) = complete_in(
                                    s,
                                    id,
                                    failed,
                                    now,
                                    me,
                                    records,
                                    finished,
                                    peers.as_ref(),
                                ) && result.is_ok()
                                {
                                    result = Err(EngineError::Completion(e));
                                }
                                if let Some(dt) = driver_tags.as_mut() {
                                    tag_waiters |= dt.put(id.raw());
                                }
                                cancelled += 1;
                                continue;
                            }
                            let rq = s.queue.request(id);
                            let io = DeviceIo {
                                tag: id.raw(),
                                op: rq.op(),
                                sector: rq.sector(),
                                sectors: rq.sectors(),
                                flags: rq.flags(),
                            };
                            let start = segs.len() as u32;
                            if io.op.has_data() {
                                for bv in s.queue.bios(id) {
                                    let slot = s.bios[bv.token as usize];
                                    segs.push(DataSegment {
                                        addr: (slot.addr + bv.offset as usize) as *mut u8,
                                        len: bv.len,
                                    });
                                }
                            }
                            staged.push((io, start, segs.len() as u32));
                            sent += 1;
                            if per_request || !shared {
                                // The device's submission, inside the hold
                                // (or with no lock to hold).
                                send(device, staged, segs, now);
                                segs.clear();
                            }
                        }
                        Dispatch::WaitUntil(t) => {
                            if let (Some(dt), Some(t)) = (driver_tags.as_mut(), tag) {
                                dt.untake(t);
                            }
                            *timer_at = Some(t);
                            break;
                        }
                        Dispatch::Blocked | Dispatch::Empty => {
                            if let (Some(dt), Some(t)) = (driver_tags.as_mut(), tag) {
                                dt.untake(t);
                            }
                            break;
                        }
                    }
                }
                if shared && s.queue.queued() > 0 {
                    // Requests are left: whoever next changes what can be
                    // dispatched wakes this engine to try again.
                    s.sleepers |= 1 << (me % 64);
                }
            });
            if let Some(p) = peers.as_ref() {
                p.wake(tag_waiters);
            }
            result?;
            if !per_request {
                send(device, staged, segs, now);
            }
            *unkicked += sent;
            if *unkicked >= *submit_batch {
                device.kick()?;
                *unkicked = 0;
            }
            if wait_tag && let Some(dt) = driver_tags.as_ref() {
                // Asked to be woken when a tag comes back; one may have
                // come back already.
                if dt.wait_for_tag(me) {
                    continue;
                }
            }
            if sent + cancelled < batch || timer_at.is_some() {
                break;
            }
        }
        Ok(())
    }

    /// One step of the loop: collect completions, feed the queue, dispatch,
    /// and if nothing has completed, sleep until something does, the
    /// scheduler's timer fires, or `timeout` passes (`None`: no limit;
    /// `Some(ZERO)`: never sleep). Completed requests are appended to `out`.
    /// Returns how many were. An engine that shares its queue or tags also
    /// sleeps while its requests are in other engines' hands, until its
    /// inbox has something.
    pub fn poll(
        &mut self,
        timeout: Option<Duration>,
        out: &mut Vec<Completion<B>>,
    ) -> Result<usize, EngineError> {
        let mut now = self.clock.now();
        self.take_handoffs();
        self.reap(now)?;
        self.pump(now)?;
        if self.finished.is_empty() && timeout != Some(Duration::ZERO) {
            if timeout.is_none() || !self.plug_held_while_waiting {
                self.flush_before_sleep(now)?;
            }
            let mut wait = timeout;
            if let Some(t) = self.timer_at {
                let d = Clock::until(now, t);
                wait = Some(wait.map_or(d, |w| w.min(d)));
            }
            let elsewhere = self.peers.is_some() && self.in_flight() > 0;
            if self.finished.is_empty()
                && (self.device.outstanding() > 0 || wait.is_some() || elsewhere)
            {
                let inbox = self.peers.as_ref().map(|p| &p.inboxes[usize::from(p.me)]);
                if inbox.is_none_or(|i| i.prepare_sleep()) {
                    self.stats.waits += 1;
                    let slept = self.device.wait(wait);
                    if let Some(i) = inbox {
                        i.woke();
                    }
                    slept?;
                }
                now = self.clock.now();
                self.take_handoffs();
                self.reap(now)?;
                self.pump(now)?;
            }
        }
        self.device.kick()?;
        self.unkicked = 0;
        Ok(self.deliver(now, out))
    }

    /// About to sleep with requests on the caller's plug: hand them to the
    /// scheduler first, as Linux flushes a task's plug when it sleeps.
    /// Otherwise nothing could complete, a wait with no timeout would
    /// return at once (a caller looping on `poll` would spin) and `drain`
    /// would stall. The plug stays in force for what comes next.
    fn flush_before_sleep(&mut self, now: Nanos) -> Result<(), EngineError> {
        if self.q.shared() {
            if !self.waiting.is_empty() {
                self.feed_waiting(now);
                self.pump(now)?;
            }
            return Ok(());
        }
        let user_plug = self.user_plug;
        let flushed = self.q.with(|s| {
            if s.queue.plugged_requests() == 0 {
                return false;
            }
            s.queue.unplug(now);
            if user_plug {
                s.queue.plug();
            }
            true
        });
        if flushed {
            self.pump(now)?;
        }
        Ok(())
    }

    fn deliver(&mut self, now: Nanos, out: &mut Vec<Completion<B>>) -> usize {
        let n = self.finished.len();
        for i in 0..n {
            let r = self.finished[i];
            let rec = &mut self.records[r as usize];
            let result = if rec.fail_at >= rec.len && rec.status == Status::Ok {
                Ok(rec.len)
            } else {
                Err(DioFailure {
                    done: rec.fail_at.min(rec.len),
                    status: rec.status,
                })
            };
            self.stats.completed += 1;
            if result.is_err() {
                self.stats.failed += 1;
            }
            out.push(Completion {
                user_data: rec.user_data,
                op: rec.op,
                result,
                bufs: std::mem::take(&mut rec.bufs),
                queued_at: rec.queued_at,
                completed_at: now,
            });
            self.free_records.push(r);
        }
        self.finished.clear();
        n
    }

    /// Start shutting down: refuse new requests, fail what has not reached
    /// the queue (from where it got to) with `Cancelled`, complete what the
    /// scheduler still holds as `Cancelled` when it comes out, and ask the
    /// device to cancel what it has. Follow with [`Engine::drain`].
    pub fn cancel(&mut self) {
        self.cancelling = true;
        let now = self.clock.now();
        while let Some(r) = self.waiting.pop_front() {
            self.records[r as usize].fail_rest(Status::Cancelled);
            self.put_ref(r, now);
        }
        // Requests on the caller's plug go to the scheduler, to be completed
        // `Cancelled` as they come out: left on the plug, nothing would ever
        // complete them (and `Drop` would leak their buffers).
        self.user_plug = false;
        if !self.q.shared() {
            self.q.with(|s| s.queue.unplug(now));
        }
        self.device.cancel_all();
    }

    /// Whether anything can still make progress on its own: something at
    /// the device, a timer, requests on the plug, or requests in other
    /// engines' hands.
    fn can_progress(&mut self) -> bool {
        self.device.outstanding() > 0
            || self.timer_at.is_some()
            || !self.finished.is_empty()
            || self.peers.is_some()
            || self.q.with(|s| s.queue.plugged_requests() > 0)
    }

    /// [`Engine::drain`] for at most `limit`: whether the engine is idle
    /// when it returns. On a shared queue an engine's requests may depend on
    /// other engines (one that failed midway may never complete what it
    /// took); a run that is stopping bounds its wait with this.
    pub fn drain_for(
        &mut self,
        limit: Duration,
        out: &mut Vec<Completion<B>>,
    ) -> Result<bool, EngineError> {
        let deadline = self.clock.now().saturating_add(limit.as_nanos() as Nanos);
        while !self.is_idle() {
            let now = self.clock.now();
            if now >= deadline {
                return Ok(false);
            }
            self.poll(Some(Clock::until(now, deadline)), out)?;
        }
        Ok(true)
    }

    /// Run until every accepted request has completed, appending them to
    /// `out`, and the device has reported everything it was given (on a
    /// shared queue, it may hold other engines' requests).
    pub fn drain(&mut self, out: &mut Vec<Completion<B>>) -> Result<(), EngineError> {
        while self.in_flight() > 0 || self.device.outstanding() > 0 {
            let got = self.poll(None, out)?;
            // Requests on the caller's plug are not stuck: the next poll
            // that would sleep hands them to the scheduler.
            if got == 0 && self.in_flight() > 0 && !self.can_progress() {
                // Nothing at the device and no timer: one more pass may
                // dispatch what completions freed; if not, nothing will.
                let again = self.poll(Some(Duration::ZERO), out)?;
                if again == 0 && self.in_flight() > 0 && !self.can_progress() {
                    return Err(EngineError::Stalled {
                        in_flight: self.in_flight(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Hand the device every staged request, then forget them.
fn send<D: DataDevice>(device: &mut D, staged: &mut Vec<Staged>, segs: &[DataSegment], now: Nanos) {
    for &(io, start, end) in staged.iter() {
        // SAFETY: each segment lies inside a buffer of a record that is in
        // flight (the record's bios hold references on it until the device
        // reports this request), and the engine that owns the record owns
        // those buffers (moved in with the request, handed back only when
        // every bio has completed), so the memory stays valid and untouched
        // until then. `IoBuf`'s contract keeps the memory in place while the
        // buffers move.
        unsafe { device.submit_data(io, &segs[start as usize..end as usize], now) };
    }
    staged.clear();
}

/// Submit record `r`'s next bios into the queue of `s` until it is all in
/// (true) or the queue is full (false): bios that fit the queue's limits,
/// or with `whole` one bio per buffer for the queue to split.
#[allow(clippy::too_many_arguments)]
fn feed<B: IoBuf>(
    s: &mut QueueState,
    rec: &mut Record<B>,
    r: u32,
    me: u16,
    align: &Alignment,
    whole: bool,
    stats: &mut EngineStats,
    now: Nanos,
) -> bool {
    // The queue's limits, which its tunables (`max_sectors_kb`) may change.
    let limits = *s.queue.limits();
    let mem_align = u64::from(align.memory);
    loop {
        let flush = rec.op == Op::Flush;
        if (flush && rec.flush_sent) || (!flush && rec.issued >= rec.len) {
            return true;
        }
        let pos = rec.offset + rec.issued;
        let mut piece = if whole {
            whole_bio_bytes(&limits)
        } else {
            u64::from(limits.max_piece_bytes(rec.op))
        }
        .min(rec.len - rec.issued);
        if limits.chunk_sectors > 0 && !whole {
            let chunk = u64::from(limits.chunk_sectors) << 9;
            piece = piece.min(chunk - pos % chunk);
        }
        let mut addr = 0usize;
        if rec.op.has_data() {
            let b = &mut rec.bufs[rec.seg];
            let left = b.len() - rec.seg_off;
            if left == 0 {
                rec.seg += 1;
                rec.seg_off = 0;
                continue;
            }
            if piece < left as u64 && mem_align.is_power_of_two() && piece >= mem_align {
                // The next piece starts inside this segment: at a multiple
                // of the DMA alignment from its (aligned) start, or the
                // device refuses it. (Block-size pieces smaller than the
                // alignment cannot keep it; the device fails those.)
                piece -= piece % mem_align;
            }
            piece = piece.min(left as u64);
            addr = b.as_mut_ptr() as usize + rec.seg_off;
        }
        let token = match s.free_bios.pop() {
            Some(t) => t,
            None => {
                s.bios.push(BioSlot::default());
                s.bios.len() as u32 - 1
            }
        };
        let bio = Bio {
            op: rec.op,
            sector: pos >> 9,
            len: piece as u32,
            flags: rec.flags,
            ctx: rec.ctx,
            prio: rec.prio,
            token: u64::from(token),
        };
        match s.queue.submit(&bio, now) {
            Ok(_) => {
                s.bios[token as usize] = BioSlot {
                    owner: me,
                    record: r,
                    off: rec.issued,
                    addr,
                };
                rec.refs += 1;
                stats.bios += 1;
                rec.flush_sent = flush;
                rec.issued += piece;
                rec.seg_off += piece as usize;
            }
            Err(SubmitError::NoTag { .. } | SubmitError::NoBioSlot { .. }) => {
                s.free_bios.push(token);
                return false;
            }
            Err(_) => {
                // The queue refused a bio the checks let through (its limits
                // changed under us): the rest of the request fails from
                // here, and what is in flight completes as usual.
                s.free_bios.push(token);
                rec.fail_rest(Status::IoError);
                return true;
            }
        }
    }
}

/// The most bytes one whole bio may carry (a bio's length is a `u32`): the
/// largest multiple of the logical block size that fits.
fn whole_bio_bytes(limits: &elevator_core::Limits) -> u64 {
    let most = u64::from(u32::MAX);
    most - most % u64::from(limits.logical_block_size.max(1))
}

/// Complete request `id` of the queue of `s` with `outcome`: each bio's
/// completion goes to its record if this engine (`me`) owns it, else to its
/// owner's inbox.
#[allow(clippy::too_many_arguments)]
fn complete_in<B>(
    s: &mut QueueState,
    id: RequestId,
    outcome: Outcome,
    now: Nanos,
    me: u16,
    records: &mut [Record<B>],
    finished: &mut Vec<u32>,
    peers: Option<&Peers>,
) -> Result<(), RequestError> {
    let QueueState {
        queue,
        bios,
        free_bios,
        ..
    } = s;
    queue.complete(id, outcome, now, &mut |c: BioCompletion| {
        let slot = bios[c.token as usize];
        free_bios.push(c.token as u32);
        let h = Handoff {
            record: slot.record,
            off: slot.off,
            status: c.status,
            bytes: c.bytes,
        };
        if slot.owner == me {
            bio_done(records, finished, h);
        } else if let Some(inbox) = peers.and_then(|p| p.inboxes.get(usize::from(slot.owner))) {
            inbox.push(h);
        } else {
            debug_assert!(
                false,
                "bio of engine {} with no way to reach it",
                slot.owner
            );
        }
    })
}

/// A bio of record `h.record` completed: note its failure (the earliest in
/// file order wins) and drop its reference; at zero the record is finished.
fn bio_done<B>(records: &mut [Record<B>], finished: &mut Vec<u32>, h: Handoff) {
    let rec = &mut records[h.record as usize];
    if h.status != Status::Ok {
        let at = h.off + u64::from(h.bytes);
        if at < rec.fail_at || rec.status == Status::Ok {
            rec.fail_at = rec.fail_at.min(at);
            rec.status = h.status;
        }
    }
    debug_assert!(rec.refs > 0, "bio completed twice");
    rec.refs -= 1;
    if rec.refs == 0 {
        finished.push(h.record);
    }
}

impl<D: DataDevice, B: IoBuf, Q: QueueAccess> Drop for Engine<D, B, Q> {
    fn drop(&mut self) {
        if self.in_flight() == 0 && self.device.outstanding() == 0 {
            return;
        }
        self.cancel();
        let mut sink = Vec::new();
        // Alone, an engine's requests depend on nothing else: wait for all.
        // Shared, they may depend on an engine that failed midway (even
        // this one, unwinding from a panic): wait a while, no more.
        let drained = if self.peers.is_some() {
            matches!(self.drain_for(SHARED_DRAIN_LIMIT, &mut sink), Ok(true))
        } else {
            self.drain(&mut sink).is_ok()
        };
        if !drained {
            // Some I/O may still be in the kernel's hands: never free its
            // memory. Leaking is the only safe answer left.
            for rec in &mut self.records {
                std::mem::forget(std::mem::take(&mut rec.bufs));
            }
        }
    }
}
