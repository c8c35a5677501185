//! The request queue: turns bios into requests, merges, plugs, holds the tag
//! pool, hands requests to the scheduler and the device, and completes every
//! bio exactly once.
//!
//! The life of a bio (as in Linux's block layer):
//! 1. [`Queue::submit`] checks it against the [`Limits`] (a bad bio is refused
//!    with a [`SubmitError`] and nothing changes) and splits it into pieces that
//!    fit; split pieces never merge.
//! 2. Unless `nomerges=2` or the bio is unmergeable, it is tried against the
//!    most recent plugged request, then through the scheduler's lookup (see
//!    `merge.rs`). A bio that merges joins an existing request.
//! 3. Otherwise it gets a request (a tag). Flushes and FUA / PREFLUSH requests
//!    go to the queue's own dispatch list, bypassing the scheduler and the plug.
//!    Others go on the plug while plugged, else to the scheduler, after an
//!    insert-time merge attempt.
//! 4. [`Queue::dispatch`] gives the device the next request, while fewer than
//!    `queue_depth` are in flight.
//! 5. [`Queue::complete`] ends a request: every bio in it completes once with
//!    its status and byte count; pieces of a split bio are reassembled so that
//!    the submitted bio completes once.
//!
//! Tunables (read and set by name with [`Queue::get`] / [`Queue::set`], as
//! `/sys/block/X/queue/` and `.../iosched/`): `nomerges` (0), `nr_requests`,
//! `max_sectors_kb`; read-only `logical_block_size`, `max_hw_sectors_kb`,
//! `max_segments`, `max_segment_size`, `chunk_sectors`, `queue_depth`; then
//! the scheduler's own.

mod build;
mod check;
mod hash;
mod merge;

use std::collections::VecDeque;

use crate::bio::{Bio, BioCompletion, BioFlags, IoContext, Nanos, Op, SECTOR_SHIFT, Status};
use crate::error::{BioError, ConfigError, RequestError, SubmitError, TunableError};
use crate::index::{NIL, Slab};
use crate::limits::Limits;
use crate::request::{BioSlot, Bios, Request, RequestId, Requests, RqState, SplitRecord};
use crate::sched::{AnyScheduler, MergeKind, MergeLookup, SchedDispatch, Scheduler};
use crate::stats::{QueueStats, elapsed};
use crate::trace::{TraceAction, TraceEvent, TraceLog};
use crate::tunable::{self, Tunable, TunableSpec, Unit, find_spec, parse_value, specs};

pub use build::{BuildError, DeviceShape};
use hash::MergeHash;

/// A plug holds at most this many requests before it flushes (Linux
/// `BLK_MAX_REQUEST_COUNT`).
pub const PLUG_MAX_REQUESTS: usize = 32;
/// A plug flushes when its last request is at least this big, unless
/// `nomerges=2` (Linux `BLK_PLUG_FLUSH_SIZE`).
pub const PLUG_FLUSH_BYTES: u64 = 128 * 1024;

/// How to build a [`Queue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// The device's limits.
    pub limits: Limits,
    /// Size of the tag pool: requests that may exist at once (queued, plugged
    /// or in flight). Linux with a scheduler: `2 × min(queue_depth, 128)`.
    pub nr_requests: u32,
    /// Requests the device takes at once (driver tags).
    pub queue_depth: u32,
    /// 0: all merging; 1: only the one-hit `last_merge` cache; 2: no merging.
    pub nomerges: u8,
    /// Most bios the queue holds at once; `None` for `64 × nr_requests`
    /// (at least 4096).
    pub max_bios: Option<u32>,
    /// Whether the device has moving parts (Linux `rotational`); schedulers
    /// that idle take their defaults from it.
    pub rotational: bool,
}

impl Default for QueueConfig {
    fn default() -> QueueConfig {
        QueueConfig::for_depth(Limits::default(), 32)
    }
}

impl QueueConfig {
    /// A configuration for a device that takes `queue_depth` requests at once,
    /// with Linux's `nr_requests` rule for a queue with a scheduler.
    pub fn for_depth(limits: Limits, queue_depth: u32) -> QueueConfig {
        QueueConfig {
            limits,
            nr_requests: 2 * queue_depth.clamp(2, 128),
            queue_depth,
            nomerges: 0,
            max_bios: None,
            rotational: true,
        }
    }

    fn bio_limit(&self) -> u32 {
        self.max_bios
            .unwrap_or_else(|| self.nr_requests.saturating_mul(64).max(4096))
    }
}

/// What became of a submitted bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// It merged into an existing request.
    Merged(MergeKind),
    /// It got a request of its own (now plugged, queued or on the bypass list).
    NewRequest(RequestId),
    /// It was split into this many pieces, each with a request of its own.
    Split(u32),
}

/// What [`Queue::dispatch`] answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Send this request to the device; complete it with [`Queue::complete`].
    Request(RequestId),
    /// The scheduler is idling on purpose: call again at this time, or
    /// earlier if a bio arrives or a request completes.
    WaitUntil(Nanos),
    /// Requests are queued but none can go now (the device has `queue_depth`
    /// in flight, or the scheduler holds back): call again after a completion.
    Blocked,
    /// Nothing is queued (plugged requests wait for [`Queue::unplug`]).
    Empty,
}

/// How a dispatched request ended, as the device reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every byte completed.
    Done,
    /// The request failed with `status` after its first `good_bytes` bytes
    /// completed (0 if nothing is known to have completed).
    Failed {
        /// The error.
        status: Status,
        /// Bytes from the start of the request known to be good.
        good_bytes: u64,
    },
}

/// The queue's own tunables (the scheduler adds its own), with Linux names
/// and defaults; declared once, in `Queue::TABLE`.
pub const QUEUE_TUNABLES: [TunableSpec; 10] = specs(&Queue::<AnyScheduler>::TABLE);

fn piece_max(limits: &Limits) -> [u32; 5] {
    Op::ALL.map(|op| limits.max_piece_bytes(op))
}

/// The request queue over scheduler `S`.
#[derive(Clone, Debug)]
pub struct Queue<S: Scheduler = AnyScheduler> {
    limits: Limits,
    /// `limits.max_piece_bytes(op)` for each op, kept with the limits.
    piece_max: [u32; 5],
    max_hw_sectors: u32,
    nomerges: u8,
    queue_depth: u32,
    rotational: bool,
    max_bios: Option<u32>,
    rqs: Requests,
    bios: Slab<BioSlot>,
    splits: Slab<SplitRecord>,
    hash: MergeHash,
    last_merge: Option<RequestId>,
    plugged: bool,
    plug: Vec<RequestId>,
    bypass: VecDeque<RequestId>,
    sched: S,
    in_flight: u32,
    stats: QueueStats,
    trace: TraceLog,
}

impl Queue<AnyScheduler> {
    /// A queue with the scheduler named `scheduler` (see
    /// [`crate::SCHEDULER_NAMES`]).
    pub fn with_scheduler(config: QueueConfig, scheduler: &str) -> Result<Self, ConfigError> {
        Queue::new(config, AnyScheduler::by_name(scheduler)?)
    }
}

impl<S: Scheduler> Queue<S> {
    /// The queue's tunables, declared once: listing, get, set and their
    /// checks come from here.
    const TABLE: [Tunable<Self>; 10] = [
        Tunable::new(
            TunableSpec::new(
                "nomerges",
                0,
                0,
                2,
                Unit::Count,
                "0: merge; 1: only the one-hit cache; 2: never merge",
            ),
            |q| u64::from(q.nomerges),
            |q, v| q.store_nomerges(v as u8),
        ),
        Tunable::checked(
            TunableSpec::new(
                "nr_requests",
                64,
                4,
                65536,
                Unit::Count,
                "size of the tag pool (only while the queue is empty)",
            ),
            |q| u64::from(q.rqs.capacity()),
            |q, v| q.store_nr_requests(v as u32),
            Self::check_nr_requests,
        ),
        Tunable::checked(
            TunableSpec::new(
                "max_sectors_kb",
                4096,
                1,
                (u32::MAX >> 10) as u64,
                Unit::KiB,
                "largest read/write request, up to max_hw_sectors_kb",
            ),
            |q| u64::from(q.limits.max_sectors / 2),
            |q, v| q.store_max_sectors_kb(v),
            Self::check_max_sectors_kb,
        ),
        Tunable::read_only(
            TunableSpec::read_only("max_hw_sectors_kb", Unit::KiB, "device's largest request"),
            |q| u64::from(q.max_hw_sectors / 2),
        ),
        Tunable::read_only(
            TunableSpec::read_only(
                "logical_block_size",
                Unit::Bytes,
                "smallest addressable unit",
            ),
            |q| u64::from(q.limits.logical_block_size),
        ),
        Tunable::read_only(
            TunableSpec::read_only("max_segments", Unit::Count, "data segments per request"),
            |q| u64::from(q.limits.max_segments),
        ),
        Tunable::read_only(
            TunableSpec::read_only("max_segment_size", Unit::Bytes, "largest data segment"),
            |q| u64::from(q.limits.max_segment_size),
        ),
        Tunable::read_only(
            TunableSpec::read_only(
                "chunk_sectors",
                Unit::Sectors,
                "boundary requests never cross",
            ),
            |q| u64::from(q.limits.chunk_sectors),
        ),
        Tunable::read_only(
            TunableSpec::read_only(
                "queue_depth",
                Unit::Count,
                "requests the device takes at once",
            ),
            |q| u64::from(q.queue_depth),
        ),
        Tunable::read_only(
            TunableSpec::read_only(
                "rotational",
                Unit::Bool,
                "whether the device has moving parts",
            ),
            |q| u64::from(q.rotational),
        ),
    ];

    /// A queue over `sched`.
    pub fn new(config: QueueConfig, mut sched: S) -> Result<Self, ConfigError> {
        config.limits.validate()?;
        let spec = |name| find_spec(&QUEUE_TUNABLES, "queue", name);
        spec("nomerges")?.check(u64::from(config.nomerges))?;
        spec("nr_requests")?.check(u64::from(config.nr_requests))?;
        if config.queue_depth == 0 || config.queue_depth > 65536 {
            return Err(ConfigError::Limit {
                name: "queue_depth",
                value: u64::from(config.queue_depth),
                why: "must be 1..=65536",
            });
        }
        let nr = config.nr_requests;
        let max_bios = config.bio_limit();
        if max_bios < nr {
            return Err(ConfigError::Size {
                name: "max_bios",
                value: u64::from(max_bios),
                why: "must be at least nr_requests: every request holds a bio",
            });
        }
        sched.resize(nr);
        sched.set_device(config.rotational, config.queue_depth);
        Ok(Queue {
            limits: config.limits,
            piece_max: piece_max(&config.limits),
            max_hw_sectors: config.limits.max_sectors,
            nomerges: config.nomerges,
            queue_depth: config.queue_depth,
            rotational: config.rotational,
            max_bios: config.max_bios,
            rqs: Requests::new(nr),
            bios: Slab::new(nr.saturating_mul(4), max_bios),
            splits: Slab::new(64, max_bios),
            hash: MergeHash::new(nr),
            last_merge: None,
            plugged: false,
            plug: Vec::with_capacity(PLUG_MAX_REQUESTS + 1),
            bypass: VecDeque::with_capacity(nr as usize),
            sched,
            in_flight: 0,
            stats: QueueStats::default(),
            trace: TraceLog::default(),
        })
    }

    /// Submit a bio at time `now`.
    ///
    /// On error nothing was taken: the bio is bad, or the queue is full for
    /// now (complete requests and resubmit).
    pub fn submit(&mut self, bio: &Bio, now: Nanos) -> Result<Submitted, SubmitError> {
        if !self.trace.is_on() {
            return self.submit_untraced(bio, now);
        }
        self.submit_traced(bio, now)
    }

    /// [`Queue::submit`] with its Q event. Kept out of line so that the
    /// untraced path, inlined into callers, stays as small as it was.
    #[inline(never)]
    fn submit_traced(&mut self, bio: &Bio, now: Nanos) -> Result<Submitted, SubmitError> {
        self.trace.set_now(now);
        // The bio's Q goes before the G, M or X its acceptance records: put
        // it there now, and take it back if the bio is refused.
        let q = self
            .trace
            .push_first(bio_event(TraceAction::Queue, bio, now));
        let submitted = self.submit_untraced(bio, now);
        if submitted.is_err() {
            self.trace.take_back(q);
        }
        submitted
    }

    fn submit_untraced(&mut self, bio: &Bio, now: Nanos) -> Result<Submitted, SubmitError> {
        self.limits.check_bio(bio)?;
        let fits = bio.op == Op::Flush
            || (bio.len <= self.piece_max[bio.op as usize]
                && !self
                    .limits
                    .crosses_chunk(bio.sector, u64::from(bio.sectors())));
        if !fits {
            return self.submit_split(bio, now);
        }
        if self.bios.available() == 0 {
            return Err(self.full_bios(1, now));
        }
        let mut insert_merge_done = false;
        if self.nomerges != 2 && bio.mergeable() {
            match self.bio_merge(bio) {
                merge::BioMerge::Merged(kind) => {
                    self.stats.bios += 1;
                    return Ok(Submitted::Merged(kind));
                }
                merge::BioMerge::NotMerged {
                    insert_merge_futile,
                } => {
                    insert_merge_done = insert_merge_futile;
                }
            }
        }
        let id = self.new_request(bio, NIL, 0, now)?;
        self.stats.bios += 1;
        if self.add_request(id, now, insert_merge_done) {
            // Made a request of its own, which then merged onto the end of a
            // queued one when inserted.
            return Ok(Submitted::Merged(MergeKind::Back));
        }
        Ok(Submitted::NewRequest(id))
    }

    /// Split `bio` into pieces that keep the limits, each its own unmergeable
    /// request; all tags and bio entries are checked before anything changes.
    fn submit_split(&mut self, bio: &Bio, now: Nanos) -> Result<Submitted, SubmitError> {
        let pieces = self.limits.pieces(bio);
        let limit = if pieces > self.rqs.capacity() {
            Some(format!("nr_requests={}", self.rqs.capacity()))
        } else if pieces >= self.bios.limit() {
            Some(format!("max_bios={}", self.bios.limit()))
        } else {
            None
        };
        if let Some(limit) = limit {
            return Err(SubmitError::Bio(BioError::TooLarge {
                op: bio.op,
                len: bio.len,
                pieces,
                max_piece: self.piece_max[bio.op as usize],
                limit,
            }));
        }
        let free_tags = self.rqs.capacity() - self.rqs.in_use();
        if free_tags < pieces {
            self.stats.refused_full += 1;
            self.flush_plug_when_full(now);
            return Err(SubmitError::NoTag {
                needed: pieces,
                free: free_tags,
                nr_requests: self.rqs.capacity(),
            });
        }
        if self.bios.available() < pieces || self.splits.available() == 0 {
            return Err(self.full_bios(pieces + 1, now));
        }
        let Some(parent) = self.splits.alloc(SplitRecord {
            token: bio.token,
            pending: pieces,
            fail_at: bio.len,
            status: Status::Ok,
        }) else {
            return Err(self.full_bios(pieces + 1, now));
        };
        let max = self.piece_max[bio.op as usize];
        let mut offset = 0u32;
        let mut sector = bio.sector;
        while offset < bio.len {
            let len = self.limits.piece_len(bio.op, sector, bio.len - offset, max);
            // Every piece keeps PREFLUSH and FUA: none may reach the media
            // before the flush, and each must be durable.
            let piece = Bio {
                sector,
                len,
                flags: bio.flags | BioFlags::NOMERGE,
                ..*bio
            };
            if self.trace.is_on() && offset + len < bio.len {
                let mut cut = bio_event(TraceAction::Split, &piece, now);
                cut.extra = sector + u64::from(len >> SECTOR_SHIFT);
                self.trace.push(cut);
            }
            // Tags and entries were counted above, so this cannot fail.
            let id = self.new_request(&piece, parent, offset, now)?;
            self.add_request(id, now, true);
            offset += len;
            sector += u64::from(len >> SECTOR_SHIFT);
        }
        self.stats.bios += 1;
        self.stats.bios_split += 1;
        Ok(Submitted::Split(pieces))
    }

    fn full_bios(&mut self, needed: u32, now: Nanos) -> SubmitError {
        self.stats.refused_full += 1;
        self.flush_plug_when_full(now);
        SubmitError::NoBioSlot {
            needed,
            free: self.bios.available(),
            max_bios: self.bios.limit(),
        }
    }

    /// Allocate a request holding `bio` alone.
    fn new_request(
        &mut self,
        bio: &Bio,
        parent: u32,
        offset: u32,
        now: Nanos,
    ) -> Result<RequestId, SubmitError> {
        let segments = self.limits.segments_for(bio.op, bio.len) as u16;
        let Some(id) = self.rqs.alloc(Request {
            sector: bio.sector,
            alloc_time: now,
            sectors: bio.sectors(),
            nr_bios: 1,
            ctx: bio.ctx,
            segments,
            op: bio.op,
            flags: bio.flags,
            prio: bio.prio,
            state: RqState::Queued,
            ..Request::FREE
        }) else {
            self.stats.refused_full += 1;
            self.flush_plug_when_full(now);
            return Err(SubmitError::NoTag {
                needed: 1,
                free: 0,
                nr_requests: self.rqs.capacity(),
            });
        };
        let Some(b) = self.bios.alloc(BioSlot {
            token: bio.token,
            sector: bio.sector,
            len: bio.len,
            offset,
            next: NIL,
            parent,
        }) else {
            self.rqs.free(id);
            return Err(self.full_bios(1, now));
        };
        let rq = self.rqs.get_mut(id);
        rq.bio_head = b;
        rq.bio_tail = b;
        self.stats.requests += 1;
        if self.trace.is_on() {
            self.trace.push(bio_event(TraceAction::GetRq, bio, now));
        }
        Ok(id)
    }

    /// Route a new request: bypass list, plug, or scheduler. Returns whether
    /// it merged away into a queued request.
    fn add_request(&mut self, id: RequestId, now: Nanos, insert_merge_done: bool) -> bool {
        let rq = &self.rqs[id];
        if rq.op == Op::Flush || rq.flags.intersects(BioFlags::FUA | BioFlags::PREFLUSH) {
            if rq.op != Op::Flush {
                self.trace_rq(TraceAction::Insert, id, now, 0);
            }
            self.rqs.get_mut(id).state = RqState::Bypass;
            self.bypass.push_back(id);
            return false;
        }
        if self.plugged {
            let flush_size = self.nomerges != 2
                && self
                    .plug
                    .last()
                    .is_some_and(|&l| self.rqs[l].bytes() >= PLUG_FLUSH_BYTES);
            if self.plug.len() >= PLUG_MAX_REQUESTS || flush_size {
                self.flush_plug(now);
            }
            self.rqs.get_mut(id).state = RqState::Plugged;
            if self.plug.is_empty() && self.trace.is_on() {
                let ctx = self.rqs[id].ctx;
                self.trace
                    .push(TraceEvent::plug(TraceAction::Plug, now, ctx, 0));
            }
            self.plug.push(id);
            return false;
        }
        self.insert(id, now, insert_merge_done)
    }

    /// The tag pool or bio table ran out while requests sit on the plug:
    /// flush them, as Linux does when a task sleeps waiting for a tag, so that
    /// they can be dispatched and free what they hold.
    fn flush_plug_when_full(&mut self, now: Nanos) {
        if !self.plug.is_empty() {
            self.flush_plug(now);
        }
    }

    /// Give a request to the scheduler, after an insert-time merge attempt.
    /// Returns whether it merged away instead.
    fn insert(&mut self, id: RequestId, now: Nanos, insert_merge_done: bool) -> bool {
        self.trace.set_now(now);
        self.rqs.get_mut(id).state = RqState::Queued;
        let elevator = self.sched.merge_lookup() == MergeLookup::Elevator;
        let mergeable = self.nomerges != 2 && self.rqs[id].mergeable();
        if elevator && mergeable && !insert_merge_done && self.insert_merge(id) {
            return true;
        }
        self.rqs.get_mut(id).via_sched = true;
        self.trace_rq(TraceAction::Insert, id, now, 0);
        self.sched.insert(&self.rqs, id, now);
        if elevator && mergeable {
            if self.nomerges == 0 {
                self.hash.insert(&mut self.rqs, id);
            }
            if self.last_merge.is_none() {
                self.last_merge = Some(id);
            }
        }
        false
    }

    /// Start collecting new requests on the plug instead of queueing them.
    pub fn plug(&mut self) {
        self.plugged = true;
    }

    /// Send plugged requests to the scheduler and stop plugging.
    pub fn unplug(&mut self, now: Nanos) {
        self.flush_plug(now);
        self.plugged = false;
    }

    /// Whether the queue is plugged.
    pub fn is_plugged(&self) -> bool {
        self.plugged
    }

    fn flush_plug(&mut self, now: Nanos) {
        if self.trace.is_on()
            && let Some(&first) = self.plug.first()
        {
            let (ctx, depth) = (self.rqs[first].ctx, self.plug.len() as u64);
            self.trace
                .push(TraceEvent::plug(TraceAction::Unplug, now, ctx, depth));
        }
        let mut plug = std::mem::take(&mut self.plug);
        for &id in &plug {
            self.insert(id, now, false);
        }
        plug.clear();
        self.plug = plug;
    }

    /// The next request for the device, if one may go now.
    pub fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let work = !self.bypass.is_empty() || self.sched.has_work();
        if !work {
            return Dispatch::Empty;
        }
        if self.in_flight >= self.queue_depth {
            return Dispatch::Blocked;
        }
        if let Some(id) = self.bypass.pop_front() {
            return Dispatch::Request(self.start(id, now));
        }
        match self.sched.dispatch(&self.rqs, now) {
            SchedDispatch::Request(id) => Dispatch::Request(self.start(id, now)),
            SchedDispatch::WaitUntil(t) => Dispatch::WaitUntil(t),
            SchedDispatch::Nothing => Dispatch::Blocked,
        }
    }

    #[inline]
    fn start(&mut self, id: RequestId, now: Nanos) -> RequestId {
        self.trace.set_now(now);
        debug_assert!(
            matches!(self.rqs[id].state, RqState::Queued | RqState::Bypass),
            "dispatching request {} in state {:?}",
            id.raw(),
            self.rqs[id].state
        );
        if self.last_merge == Some(id) {
            self.last_merge = None;
        }
        self.hash.remove(&mut self.rqs, id);
        self.trace_rq(TraceAction::Issue, id, now, 0);
        let rq = self.rqs.get_mut(id);
        rq.state = RqState::InFlight;
        let waited = elapsed(rq.alloc_time, now);
        self.in_flight += 1;
        self.stats.dispatches += 1;
        self.stats.queue_time.record(waited);
        id
    }

    /// Check that `id` names a request in flight.
    fn in_flight_check(&self, id: RequestId) -> Result<(), RequestError> {
        let Some(rq) = self.rqs.try_get(id) else {
            return Err(RequestError::Unknown {
                tag: id.raw(),
                nr_requests: self.rqs.capacity(),
            });
        };
        if rq.state != RqState::InFlight {
            return Err(RequestError::NotInFlight {
                tag: id.raw(),
                state: rq.state.name(),
            });
        }
        Ok(())
    }

    /// Put a dispatched request back (the device could not take it now). It
    /// goes to the head of the queue's own dispatch list.
    pub fn requeue(&mut self, id: RequestId) -> Result<(), RequestError> {
        self.in_flight_check(id)?;
        self.trace_rq(TraceAction::Requeue, id, self.trace.now(), 0);
        self.rqs.get_mut(id).state = RqState::Bypass;
        self.in_flight -= 1;
        self.stats.requeues += 1;
        self.bypass.push_front(id);
        Ok(())
    }

    /// End dispatched request `id`. Each bio of it completes through `sink`,
    /// exactly once; a split bio completes when its last piece does.
    ///
    /// With [`Outcome::Failed`], `good_bytes` is rounded down to a whole
    /// logical block; bios wholly within it succeed, and the rest fail with the
    /// status, each reporting the bytes of it that lay within it. A bio with no
    /// data (a flush) in a failed request fails.
    ///
    /// A handle that is not in flight is refused and nothing changes.
    pub fn complete(
        &mut self,
        id: RequestId,
        outcome: Outcome,
        now: Nanos,
        sink: &mut impl FnMut(BioCompletion),
    ) -> Result<(), RequestError> {
        self.in_flight_check(id)?;
        self.trace.set_now(now);
        let (status, good) = match outcome {
            Outcome::Failed { status, good_bytes } if status != Status::Ok => {
                let lbs = u64::from(self.limits.logical_block_size);
                (status, good_bytes - good_bytes % lbs)
            }
            _ => (Status::Ok, u64::MAX),
        };
        let mut offset = 0u64;
        let mut cur = self.rqs[id].bio_head;
        let mut count = 0;
        while cur != NIL {
            let b = self.bios[cur];
            let end = offset + u64::from(b.len);
            let (st, bytes) = if status == Status::Ok || (b.len > 0 && end <= good) {
                (Status::Ok, b.len)
            } else {
                // Within u32: less than b.len.
                (
                    status,
                    good.saturating_sub(offset).min(u64::from(b.len)) as u32,
                )
            };
            self.bio_done(b, st, bytes, sink);
            self.bios.free(cur);
            offset = end;
            cur = b.next;
            count += 1;
        }
        debug_assert_eq!(count, self.rqs[id].nr_bios, "request bio count mismatch");
        if self.rqs[id].via_sched {
            self.sched.completed(&self.rqs, id, now);
        }
        self.in_flight -= 1;
        self.trace_rq(TraceAction::Complete, id, now, status.errno());
        let rq = &self.rqs[id];
        let disk = &mut self.stats.disk[QueueStats::disk_index(rq.op)];
        disk.ios += 1;
        disk.ticks_ns += elapsed(rq.alloc_time, now);
        self.rqs.free(id);
        self.stats.completions += 1;
        Ok(())
    }

    /// One piece completed: report it, or fold it into its split record.
    #[inline]
    fn bio_done(
        &mut self,
        b: BioSlot,
        status: Status,
        bytes: u32,
        sink: &mut impl FnMut(BioCompletion),
    ) {
        if b.parent == NIL {
            self.report(b.token, status, bytes, sink);
            return;
        }
        let rec = &mut self.splits[b.parent];
        debug_assert!(rec.pending > 0, "split piece completed twice");
        if status != Status::Ok && b.offset + bytes < rec.fail_at {
            rec.fail_at = b.offset + bytes;
            rec.status = status;
        }
        rec.pending -= 1;
        if rec.pending == 0 {
            let rec = *rec;
            self.splits.free(b.parent);
            self.report(rec.token, rec.status, rec.fail_at, sink);
        }
    }

    #[inline]
    fn report(
        &mut self,
        token: u64,
        status: Status,
        bytes: u32,
        sink: &mut impl FnMut(BioCompletion),
    ) {
        self.stats.bios_completed += 1;
        if status != Status::Ok {
            self.stats.bio_errors += 1;
        }
        sink(BioCompletion {
            token,
            status,
            bytes,
        });
    }

    /// The submitter `ctx` is gone (a process exited, a connection closed):
    /// the scheduler drops what it kept for it and stops waiting on it.
    pub fn context_gone(&mut self, ctx: IoContext, now: Nanos) {
        self.sched.context_gone(ctx, now);
    }

    /// Record an event about request `id`, if tracing.
    #[inline]
    pub(crate) fn trace_rq(&mut self, action: TraceAction, id: RequestId, now: Nanos, error: i32) {
        if self.trace.is_on() {
            let rq = &self.rqs[id];
            self.trace.push(TraceEvent {
                time: now,
                action,
                op: rq.op,
                flags: rq.flags,
                sector: if rq.op == Op::Flush { 0 } else { rq.sector },
                bytes: rq.bytes() as u32,
                ctx: rq.ctx,
                error,
                extra: 0,
            });
        }
    }

    /// Record an event about `bio`, if tracing.
    #[inline]
    pub(crate) fn trace_bio(&mut self, action: TraceAction, bio: &Bio, now: Nanos) {
        if self.trace.is_on() {
            self.trace.push(bio_event(action, bio, now));
        }
    }

    /// Record trace events from now on (with room for `limit` undrained
    /// ones: drain them with [`Queue::drain_trace`] after each call), or stop.
    pub fn set_tracing(&mut self, on: bool, limit: usize) {
        self.trace.set(on, limit);
    }

    /// Whether trace events are recorded.
    #[inline]
    pub fn is_tracing(&self) -> bool {
        self.trace.is_on()
    }

    /// Take the trace events recorded since the last drain, oldest first.
    pub fn drain_trace(&mut self) -> std::vec::Drain<'_, TraceEvent> {
        self.trace.drain()
    }

    /// Trace events lost because they were not drained in time.
    pub fn trace_dropped(&self) -> u64 {
        self.trace.dropped()
    }

    /// The request behind `id`.
    #[inline]
    pub fn request(&self, id: RequestId) -> &Request {
        &self.rqs[id]
    }

    /// The bios of request `id` in sector order.
    pub fn bios(&self, id: RequestId) -> Bios<'_> {
        Bios {
            slab: &self.bios,
            cur: self.rqs[id].bio_head,
        }
    }

    /// All requests (read access).
    pub fn requests(&self) -> &Requests {
        &self.rqs
    }

    /// The scheduler.
    pub fn scheduler(&self) -> &S {
        &self.sched
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Statistics since creation or the last reset.
    pub fn stats(&self) -> &QueueStats {
        &self.stats
    }

    /// Zero the statistics.
    pub fn reset_stats(&mut self) {
        self.stats = QueueStats::default();
    }

    /// Requests in flight at the device.
    #[inline]
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Requests waiting for dispatch (held by the scheduler or on the bypass
    /// list; not counting plugged ones).
    #[inline]
    pub fn queued(&self) -> u32 {
        self.sched.queued() + self.bypass.len() as u32
    }

    /// Requests on the plug.
    #[inline]
    pub fn plugged_requests(&self) -> u32 {
        self.plug.len() as u32
    }

    /// Whether no request exists (none plugged, queued or in flight).
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.rqs.in_use() == 0
    }

    /// The queue's and the scheduler's tunables.
    pub fn tunables(&self) -> impl Iterator<Item = &'static TunableSpec> {
        QUEUE_TUNABLES.iter().chain(self.sched.tunables())
    }

    /// Read a tunable of the queue or its scheduler by name.
    pub fn get(&self, name: &str) -> Result<u64, TunableError> {
        match tunable::find(&Self::TABLE, "queue", name) {
            Ok(t) => Ok(t.get(self)),
            Err(_) => self
                .sched
                .get_tunable(name)
                .map_err(|e| self.unknown(e, false)),
        }
    }

    /// Set a tunable of the queue or its scheduler by name. Every check runs
    /// before anything changes: a refused value leaves the queue as it was.
    pub fn set(&mut self, name: &str, value: u64) -> Result<(), TunableError> {
        match tunable::find(&Self::TABLE, "queue", name) {
            Ok(t) => t.set(self, value),
            Err(_) => self
                .sched
                .set_tunable(name, value)
                .map_err(|e| self.unknown(e, true)),
        }
    }

    /// Set a tunable from text (`"250"`, `"2s"`, `"on"`).
    pub fn set_str(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        let spec = self
            .tunables()
            .find(|s| s.name == name)
            .ok_or_else(|| self.unknown_name(name, true))?;
        let v = parse_value(spec, text)?;
        self.set(name, v)
    }

    /// `e`, an unknown name, as the queue's: with its own tunables and the
    /// scheduler's (only the settable ones when `settable`).
    fn unknown(&self, e: TunableError, settable: bool) -> TunableError {
        match e {
            TunableError::Unknown { name, .. } => self.unknown_name(&name, settable),
            other => other,
        }
    }

    /// Tunable `name` is neither the queue's nor its scheduler's: the
    /// nearest name, and what there is (what can be set, when `settable`).
    fn unknown_name(&self, name: &str, settable: bool) -> TunableError {
        let known = || self.tunables().filter(move |s| !(settable && s.read_only));
        TunableError::Unknown {
            name: name.to_string(),
            owner: format!(
                "the queue or scheduler {}{}",
                self.sched.name(),
                crate::spelling::did_you_mean(name, known().map(|s| s.name))
            ),
            known: known().map(|s| s.name).collect::<Vec<_>>().join(", "),
        }
    }

    /// Hash every queued mergeable request (after `nomerges` went back to 0:
    /// requests queued meanwhile were not hashed).
    fn rehash_queued(&mut self) {
        if self.sched.merge_lookup() != MergeLookup::Elevator {
            return;
        }
        for raw in 0..self.rqs.slab.high_water() {
            let id = RequestId::from_raw(raw);
            let rq = &self.rqs[id];
            if rq.state == RqState::Queued && rq.via_sched && rq.mergeable() && !rq.hashed {
                self.hash.insert(&mut self.rqs, id);
            }
        }
    }

    fn store_nomerges(&mut self, nomerges: u8) {
        let was = self.nomerges;
        self.nomerges = nomerges;
        if was != 0 && nomerges == 0 {
            self.rehash_queued();
        }
    }

    /// `max_sectors_kb` stays within what the device takes and holds at least
    /// one logical block.
    fn check_max_sectors_kb(&self, spec: &TunableSpec, kb: u64) -> Result<(), TunableError> {
        let sectors = kb.saturating_mul(2);
        let min = u64::from(self.limits.block_sectors());
        if sectors > u64::from(self.max_hw_sectors) || sectors < min {
            return Err(TunableError::OutOfRange {
                name: spec.name,
                value: kb,
                min: min.div_ceil(2),
                max: u64::from(self.max_hw_sectors / 2),
                unit: spec.unit.name(),
            });
        }
        Ok(())
    }

    fn store_max_sectors_kb(&mut self, kb: u64) {
        // Checked: within max_hw_sectors, a u32.
        self.limits.max_sectors = (kb * 2) as u32;
        self.piece_max = piece_max(&self.limits);
    }

    /// The bio table's size for a tag pool of `nr`.
    fn bio_limit_for(&self, nr: u32) -> u32 {
        QueueConfig {
            nr_requests: nr,
            max_bios: self.max_bios,
            ..QueueConfig::default()
        }
        .bio_limit()
    }

    /// `nr_requests` fits in the bio table (every request holds a bio), and
    /// changes only while no request exists.
    fn check_nr_requests(&self, spec: &TunableSpec, nr: u64) -> Result<(), TunableError> {
        // The spec's range keeps nr within u32.
        let limit = self.bio_limit_for(nr as u32);
        if u64::from(limit) < nr {
            return Err(TunableError::OutOfRange {
                name: spec.name,
                value: nr,
                min: spec.min,
                max: spec.max.min(u64::from(limit)),
                unit: spec.unit.name(),
            });
        }
        if !self.is_idle() {
            return Err(TunableError::Busy {
                name: spec.name,
                why: "requests exist; change it while the queue is idle",
            });
        }
        Ok(())
    }

    /// Rebuild the tag pool for `nr` requests (checked: the queue is idle and
    /// the bio table holds them).
    fn store_nr_requests(&mut self, nr: u32) {
        let limit = self.bio_limit_for(nr);
        self.rqs = Requests::new(nr);
        self.hash = MergeHash::new(nr);
        self.bypass = VecDeque::with_capacity(nr as usize);
        self.last_merge = None;
        self.bios = Slab::new(nr.saturating_mul(4), limit);
        self.splits = Slab::new(64, limit);
        self.sched.resize(nr);
    }
}

/// A trace event about `bio`.
#[inline]
fn bio_event(action: TraceAction, bio: &Bio, now: Nanos) -> TraceEvent {
    TraceEvent {
        time: now,
        action,
        op: bio.op,
        flags: bio.flags,
        sector: if bio.op == Op::Flush { 0 } else { bio.sector },
        bytes: bio.len,
        ctx: bio.ctx,
        error: 0,
        extra: 0,
    }
}
