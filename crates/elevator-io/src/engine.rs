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

use std::collections::VecDeque;
use std::time::Duration;

use elevator_core::{
    Bio, BioCompletion, BioFlags, BuildError, ConfigError, DeviceIo, DeviceShape, Dispatch,
    IoContext, IoPrio, Nanos, Op, Outcome, Queue, RequestError, RequestId, Status, SubmitError,
    TunableError,
};
use thiserror::Error;

use crate::buf::{AlignedBuf, IoBuf};
use crate::clock::Clock;
use crate::device::{Alignment, DataDevice, DataSegment, DeviceError};
use crate::dio::{Completion, DioError, DioFailure, DioRequest, Rejected};

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

/// A bio in the queue: which record, where in it, where its memory is.
#[derive(Clone, Copy, Debug, Default)]
struct BioSlot {
    record: u32,
    off: u64,
    addr: usize,
}

/// One queue over one device on the real clock.
pub struct Engine<D: DataDevice, B: IoBuf = AlignedBuf> {
    // Declared first so that it is dropped first: a device drains what it
    // has in flight when dropped, before the records (and the buffers the
    // kernel may be using) go.
    device: D,
    queue: Queue,
    clock: Clock,
    align: Alignment,
    capacity: u64,
    read_only: bool,
    records: Vec<Record<B>>,
    free_records: Vec<u32>,
    max_requests: u32,
    bios: Vec<BioSlot>,
    free_bios: Vec<u32>,
    /// Records with bios still to submit, in arrival order.
    waiting: VecDeque<u32>,
    /// Records complete and not yet handed back.
    finished: Vec<u32>,
    segs: Vec<DataSegment>,
    dev_done: Vec<(u32, Outcome)>,
    timer_at: Option<Nanos>,
    cancelling: bool,
    user_plug: bool,
    /// Requests handed to the kernel per submission (`u32::MAX`: each
    /// dispatch round's all at once).
    submit_batch: u32,
    unkicked: u32,
    stats: EngineStats,
}

impl<D: DataDevice, B: IoBuf> Engine<D, B> {
    /// An engine over `device` with the queue and scheduler of `cfg`.
    pub fn new(device: D, cfg: &EngineConfig) -> Result<Engine<D, B>, EngineError> {
        let limits = device.limits();
        // The engine's own tunable; the rest are the queue's.
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
        let shape = DeviceShape {
            limits,
            queue_depth: device.queue_depth(),
            rotational: device.rotational(),
        };
        let queue =
            Queue::for_device(shape, &cfg.scheduler, &queue_tunables).map_err(|e| match e {
                BuildError::Config(e) => EngineError::Queue(e),
                BuildError::Tunable { name, value, error } => {
                    EngineError::Tunable { name, value, error }
                }
            })?;
        let mut align = device.alignment();
        align.offset = align.offset.max(limits.logical_block_size);
        Ok(Engine {
            queue,
            clock: Clock::new(),
            align,
            capacity: limits.capacity << 9,
            read_only: cfg.read_only,
            records: Vec::new(),
            free_records: Vec::new(),
            max_requests: cfg.max_requests.max(1),
            bios: Vec::new(),
            free_bios: Vec::new(),
            waiting: VecDeque::new(),
            // Every live request may finish in one reap: room for all of
            // them up front, so that a rare burst does not allocate.
            finished: Vec::with_capacity(cfg.max_requests.max(1) as usize),
            segs: Vec::with_capacity(usize::from(limits.max_segments)),
            dev_done: Vec::with_capacity(device.queue_depth() as usize),
            timer_at: None,
            cancelling: false,
            user_plug: false,
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

    /// The queue (for its statistics, tunables and scheduler).
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Set a queue or scheduler tunable by name, from text (the engine's
    /// own `submit_batch` too). The queue itself is not handed out: requests
    /// in it point at buffers only the engine may release.
    pub fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        if name == SUBMIT_BATCH {
            self.submit_batch = parse_batch(name, text)?;
            return Ok(());
        }
        self.queue.set_str(name, text)
    }

    /// The submitter `ctx` is gone (a process exited, a connection closed):
    /// the scheduler drops what it kept for it.
    pub fn context_gone(&mut self, ctx: IoContext) {
        let now = self.clock.now();
        self.queue.context_gone(ctx, now);
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

    /// Whether completed requests wait to be handed back by
    /// [`Engine::poll`] (so an event loop must not sleep).
    pub fn has_finished(&self) -> bool {
        !self.finished.is_empty()
    }

    /// Requests accepted and not yet handed back.
    pub fn in_flight(&self) -> u32 {
        (self.records.len() - self.free_records.len()) as u32
    }

    /// Hold new requests in the plug until [`Engine::unplug`], so that a batch
    /// merges and reaches the scheduler together. As in Linux, a
    /// [`Engine::poll`] that is about to sleep hands what the plug holds to
    /// the scheduler first (the plug stays in force), and
    /// [`Engine::cancel`] ends it.
    pub fn plug(&mut self) {
        self.user_plug = true;
        self.queue.plug();
    }

    /// Release the plug.
    pub fn unplug(&mut self) {
        self.user_plug = false;
        self.queue.unplug(self.clock.now());
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
        if !self.waiting.is_empty() {
            self.waiting.push_back(r);
            self.stats.tag_waits += 1;
            return Ok(());
        }
        if !self.user_plug {
            self.queue.plug();
        }
        let all_in = self.feed(r, now);
        if !self.user_plug {
            self.queue.unplug(now);
        }
        if all_in {
            self.put_ref(r, now);
        } else {
            self.waiting.push_back(r);
            self.stats.tag_waits += 1;
        }
        Ok(())
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

    /// Submit record `r`'s next bios until it is all in (true) or the queue
    /// is full (false).
    fn feed(&mut self, r: u32, now: Nanos) -> bool {
        let limits = *self.queue.limits();
        let mem_align = u64::from(self.align.memory);
        let rec = &mut self.records[r as usize];
        loop {
            let flush = rec.op == Op::Flush;
            if (flush && rec.flush_sent) || (!flush && rec.issued >= rec.len) {
                return true;
            }
            let pos = rec.offset + rec.issued;
            let mut piece = u64::from(limits.max_piece_bytes(rec.op)).min(rec.len - rec.issued);
            if limits.chunk_sectors > 0 {
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
                    // The next piece starts inside this segment: at a
                    // multiple of the DMA alignment from its (aligned)
                    // start, or the device refuses it. (Block-size pieces
                    // smaller than the alignment cannot keep it; the device
                    // fails those.)
                    piece -= piece % mem_align;
                }
                piece = piece.min(left as u64);
                addr = b.as_mut_ptr() as usize + rec.seg_off;
            }
            let token = match self.free_bios.pop() {
                Some(t) => t,
                None => {
                    self.bios.push(BioSlot::default());
                    self.bios.len() as u32 - 1
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
            match self.queue.submit(&bio, now) {
                Ok(_) => {
                    self.bios[token as usize] = BioSlot {
                        record: r,
                        off: rec.issued,
                        addr,
                    };
                    rec.refs += 1;
                    self.stats.bios += 1;
                    rec.flush_sent = flush;
                    rec.issued += piece;
                    rec.seg_off += piece as usize;
                }
                Err(SubmitError::NoTag { .. } | SubmitError::NoBioSlot { .. }) => {
                    self.free_bios.push(token);
                    return false;
                }
                Err(_) => {
                    // The queue refused a bio the checks let through (its
                    // limits changed under us): the rest of the request fails
                    // from here, and what is in flight completes as usual.
                    self.free_bios.push(token);
                    rec.fail_rest(Status::IoError);
                    return true;
                }
            }
        }
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

    /// Feed waiting records, oldest first, while the queue takes them.
    fn feed_waiting(&mut self, now: Nanos) {
        if self.waiting.is_empty() {
            return;
        }
        self.queue.plug();
        while let Some(&r) = self.waiting.front() {
            if !self.feed(r, now) {
                break;
            }
            self.waiting.pop_front();
            self.put_ref(r, now);
        }
        if !self.user_plug {
            self.queue.unplug(now);
        }
    }

    /// Complete request `id` with `outcome`: each bio's completion goes to
    /// its record.
    fn complete_request(
        &mut self,
        id: RequestId,
        outcome: Outcome,
        now: Nanos,
    ) -> Result<(), EngineError> {
        let Engine {
            queue,
            records,
            bios,
            free_bios,
            finished,
            ..
        } = self;
        queue.complete(id, outcome, now, &mut |c: BioCompletion| {
            let slot = bios[c.token as usize];
            free_bios.push(c.token as u32);
            let rec = &mut records[slot.record as usize];
            if c.status != Status::Ok {
                let at = slot.off + u64::from(c.bytes);
                if at < rec.fail_at || rec.status == Status::Ok {
                    rec.fail_at = rec.fail_at.min(at);
                    rec.status = c.status;
                }
            }
            debug_assert!(rec.refs > 0, "bio completed twice");
            rec.refs -= 1;
            if rec.refs == 0 {
                finished.push(slot.record);
            }
        })?;
        Ok(())
    }

    /// Collect what the device has finished by `now`.
    fn reap(&mut self, now: Nanos) -> Result<(), EngineError> {
        let mut done = std::mem::take(&mut self.dev_done);
        done.clear();
        self.device
            .complete(now, &mut |tag, outcome| done.push((tag, outcome)));
        // Every completion is applied even if one is refused: the device has
        // forgotten them all, so one dropped here would never complete (and
        // its request's buffers would be held for good).
        let mut result = Ok(());
        for &(tag, outcome) in &done {
            if let Err(e) = self.complete_request(RequestId::from_raw(tag), outcome, now)
                && result.is_ok()
            {
                result = Err(e);
            }
        }
        let any = !done.is_empty();
        self.dev_done = done;
        if any {
            self.feed_waiting(now);
        }
        result
    }

    /// Dispatch while the device has room.
    fn pump(&mut self, now: Nanos) -> Result<(), EngineError> {
        self.timer_at = None;
        while self.device.outstanding() < self.device.queue_depth() {
            match self.queue.dispatch(now) {
                Dispatch::Request(id) => {
                    if self.cancelling {
                        let cancelled = Outcome::Failed {
                            status: Status::Cancelled,
                            good_bytes: 0,
                        };
                        self.complete_request(id, cancelled, now)?;
                        continue;
                    }
                    let rq = self.queue.request(id);
                    let io = DeviceIo {
                        tag: id.raw(),
                        op: rq.op(),
                        sector: rq.sector(),
                        sectors: rq.sectors(),
                        flags: rq.flags(),
                    };
                    self.segs.clear();
                    if io.op.has_data() {
                        for bv in self.queue.bios(id) {
                            let slot = self.bios[bv.token as usize];
                            self.segs.push(DataSegment {
                                addr: (slot.addr + bv.offset as usize) as *mut u8,
                                len: bv.len,
                            });
                        }
                    }
                    // SAFETY: each segment lies inside a buffer of a record
                    // that is in flight (the record's bios hold references on
                    // it until the device reports this request), and the
                    // engine owns those buffers (moved in with the request,
                    // handed back only when every bio has completed), so the
                    // memory stays valid and untouched until then. `IoBuf`'s
                    // contract keeps the memory in place while the buffers
                    // move.
                    unsafe { self.device.submit_data(io, &self.segs, now) };
                    self.unkicked += 1;
                    if self.unkicked >= self.submit_batch {
                        self.device.kick()?;
                        self.unkicked = 0;
                    }
                }
                Dispatch::WaitUntil(t) => {
                    self.timer_at = Some(t);
                    break;
                }
                Dispatch::Blocked | Dispatch::Empty => break,
            }
        }
        Ok(())
    }

    /// One step of the loop: collect completions, feed the queue, dispatch,
    /// and if nothing has completed, sleep until something does, the
    /// scheduler's timer fires, or `timeout` passes (`None`: no limit;
    /// `Some(ZERO)`: never sleep). Completed requests are appended to `out`.
    /// Returns how many were.
    pub fn poll(
        &mut self,
        timeout: Option<Duration>,
        out: &mut Vec<Completion<B>>,
    ) -> Result<usize, EngineError> {
        let mut now = self.clock.now();
        self.reap(now)?;
        self.pump(now)?;
        if self.finished.is_empty() && timeout != Some(Duration::ZERO) {
            if self.queue.plugged_requests() > 0 {
                // About to sleep with requests on the caller's plug: hand
                // them to the scheduler first, as Linux flushes a task's plug
                // when it sleeps. Otherwise nothing could complete, a wait
                // with no timeout would return at once (a caller looping on
                // `poll` would spin) and `drain` would stall. The plug stays
                // in force for what comes next.
                self.queue.unplug(now);
                if self.user_plug {
                    self.queue.plug();
                }
                self.pump(now)?;
            }
            let mut wait = timeout;
            if let Some(t) = self.timer_at {
                let d = Clock::until(now, t);
                wait = Some(wait.map_or(d, |w| w.min(d)));
            }
            if self.device.outstanding() > 0 || wait.is_some() {
                self.stats.waits += 1;
                self.device.wait(wait)?;
                now = self.clock.now();
                self.reap(now)?;
                self.pump(now)?;
            }
        }
        self.device.kick()?;
        self.unkicked = 0;
        Ok(self.deliver(now, out))
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
        self.queue.unplug(now);
        self.device.cancel_all();
    }

    /// Run until every accepted request has completed, appending them to
    /// `out`.
    pub fn drain(&mut self, out: &mut Vec<Completion<B>>) -> Result<(), EngineError> {
        while self.in_flight() > 0 {
            let got = self.poll(None, out)?;
            // Requests on the caller's plug are not stuck: the next poll
            // that would sleep hands them to the scheduler.
            if got == 0
                && self.device.outstanding() == 0
                && self.timer_at.is_none()
                && self.finished.is_empty()
                && self.queue.plugged_requests() == 0
                && self.in_flight() > 0
            {
                // Nothing at the device and no timer: one more pass may
                // dispatch what completions freed; if not, nothing will.
                let again = self.poll(Some(Duration::ZERO), out)?;
                if again == 0
                    && self.device.outstanding() == 0
                    && self.timer_at.is_none()
                    && self.queue.plugged_requests() == 0
                {
                    return Err(EngineError::Stalled {
                        in_flight: self.in_flight(),
                    });
                }
            }
        }
        Ok(())
    }
}

impl<D: DataDevice, B: IoBuf> Drop for Engine<D, B> {
    fn drop(&mut self) {
        if self.in_flight() == 0 {
            return;
        }
        self.cancel();
        let mut sink = Vec::new();
        if self.drain(&mut sink).is_err() {
            // Some I/O may still be in the kernel's hands: never free its
            // memory. Leaking is the only safe answer left.
            for rec in &mut self.records {
                std::mem::forget(std::mem::take(&mut rec.bufs));
            }
        }
    }
}
