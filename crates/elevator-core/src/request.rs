//! Requests: one or more contiguous bios of one operation, sent to the device
//! as one I/O, held in a fixed slab (the tag pool) and named by [`RequestId`].
//!
//! This module owns the request and bio records. The queue changes them; a
//! scheduler reads them through [`Requests`] and keeps its own per-request
//! state in arrays indexed by [`RequestId::index`].

use crate::bio::{BioFlags, IoContext, IoPrio, Nanos, Op, SECTOR_SHIFT, Sector, Status};
use crate::index::{NIL, Slab};

/// A request's handle: its tag. Valid from allocation until completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(u32);

impl RequestId {
    /// The handle as an index into per-request arrays (0..nr_requests).
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The raw tag.
    #[inline]
    pub fn raw(self) -> u32 {
        self.0
    }

    /// A handle from a raw tag that a scheduler stored.
    #[inline]
    pub fn from_raw(raw: u32) -> RequestId {
        RequestId(raw)
    }
}

/// Where a request is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RqState {
    /// Tag not in use.
    Free,
    /// On the submitter's plug, not yet visible to the scheduler.
    Plugged,
    /// Held by the scheduler.
    Queued,
    /// On the queue's own dispatch list (flushes, FUA, requeues): bypasses the
    /// scheduler, dispatched first.
    Bypass,
    /// Dispatched to the device, not yet completed.
    InFlight,
}

impl RqState {
    /// The state's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            RqState::Free => "free",
            RqState::Plugged => "plugged",
            RqState::Queued => "queued",
            RqState::Bypass => "on the dispatch list",
            RqState::InFlight => "in flight",
        }
    }
}

/// A request: contiguous bios of one operation.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub(crate) sector: Sector,
    pub(crate) alloc_time: Nanos,
    pub(crate) sectors: u32,
    pub(crate) nr_bios: u32,
    pub(crate) bio_head: u32,
    pub(crate) bio_tail: u32,
    pub(crate) hash_next: u32,
    pub(crate) ctx: IoContext,
    pub(crate) segments: u16,
    pub(crate) op: Op,
    pub(crate) flags: BioFlags,
    pub(crate) prio: IoPrio,
    pub(crate) state: RqState,
    pub(crate) hashed: bool,
    /// Whether the scheduler was given it (and so must hear of its completion).
    pub(crate) via_sched: bool,
}

impl Request {
    pub(crate) const FREE: Request = Request {
        sector: 0,
        alloc_time: 0,
        sectors: 0,
        nr_bios: 0,
        bio_head: NIL,
        bio_tail: NIL,
        hash_next: NIL,
        ctx: IoContext(0),
        segments: 0,
        op: Op::Read,
        flags: BioFlags::NONE,
        prio: IoPrio::DEFAULT,
        state: RqState::Free,
        hashed: false,
        via_sched: false,
    };

    /// First sector.
    #[inline]
    pub fn sector(&self) -> Sector {
        self.sector
    }

    /// Length in sectors.
    #[inline]
    pub fn sectors(&self) -> u32 {
        self.sectors
    }

    /// Length in bytes.
    #[inline]
    pub fn bytes(&self) -> u64 {
        u64::from(self.sectors) << SECTOR_SHIFT
    }

    /// The sector just past the request.
    #[inline]
    pub fn end(&self) -> Sector {
        self.sector + u64::from(self.sectors)
    }

    /// Operation.
    #[inline]
    pub fn op(&self) -> Op {
        self.op
    }

    /// Flags of its first bio, plus NOMERGE once a merge limit was hit.
    #[inline]
    pub fn flags(&self) -> BioFlags {
        self.flags
    }

    /// Priority (of its first bio).
    #[inline]
    pub fn prio(&self) -> IoPrio {
        self.prio
    }

    /// Submitter of its first bio.
    #[inline]
    pub fn ctx(&self) -> IoContext {
        self.ctx
    }

    /// Whether it is synchronous: a read, or a write flagged SYNC / FUA /
    /// PREFLUSH (Linux `rq_is_sync`).
    #[inline]
    pub fn is_sync(&self) -> bool {
        self.op == Op::Read
            || self
                .flags
                .intersects(BioFlags::SYNC | BioFlags::FUA | BioFlags::PREFLUSH)
    }

    /// Number of bios.
    #[inline]
    pub fn nr_bios(&self) -> u32 {
        self.nr_bios
    }

    /// Number of data segments.
    #[inline]
    pub fn segments(&self) -> u16 {
        self.segments
    }

    /// When it was allocated (its first bio's submission).
    #[inline]
    pub fn alloc_time(&self) -> Nanos {
        self.alloc_time
    }

    /// Life-cycle state.
    #[inline]
    pub fn state(&self) -> RqState {
        self.state
    }

    /// Whether further bios or requests may merge into it.
    #[inline]
    pub fn mergeable(&self) -> bool {
        self.op.mergeable()
            && self.flags.mergeable()
            && matches!(self.state, RqState::Plugged | RqState::Queued)
    }
}

/// The request slab: read access for schedulers.
#[derive(Clone, Debug)]
pub struct Requests {
    pub(crate) slab: Slab<Request>,
}

impl Requests {
    pub(crate) fn new(nr_requests: u32) -> Requests {
        let mut slab = Slab::new(nr_requests, nr_requests);
        slab.reserve_total(nr_requests);
        Requests { slab }
    }

    /// The request behind `id`.
    #[inline]
    pub fn get(&self, id: RequestId) -> &Request {
        &self.slab[id.0]
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, id: RequestId) -> &mut Request {
        &mut self.slab[id.0]
    }

    /// Requests allocated now (tags in use).
    #[inline]
    pub fn in_use(&self) -> u32 {
        self.slab.used()
    }

    /// Size of the tag pool.
    #[inline]
    pub fn capacity(&self) -> u32 {
        self.slab.limit()
    }

    /// Whether every tag is in use: no submitter can get a new request until
    /// one is freed, which only a completion does. A scheduler idling for a
    /// queue whose next request would need a tag waits in vain while this
    /// holds and nothing it dispatched is left in the device.
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.slab.used() >= self.slab.limit()
    }

    /// The request behind `id` if `id` names a tag of this pool.
    #[inline]
    pub fn try_get(&self, id: RequestId) -> Option<&Request> {
        ((id.0 as usize) < self.slab.high_water() as usize).then(|| &self.slab[id.0])
    }

    #[inline]
    pub(crate) fn alloc(&mut self, rq: Request) -> Option<RequestId> {
        self.slab.alloc(rq).map(RequestId)
    }

    #[inline]
    pub(crate) fn free(&mut self, id: RequestId) {
        let rq = &mut self.slab[id.0];
        debug_assert!(rq.state != RqState::Free, "request {} freed twice", id.0);
        debug_assert!(!rq.hashed, "request {} freed while hashed", id.0);
        rq.state = RqState::Free;
        rq.bio_head = NIL;
        rq.bio_tail = NIL;
        rq.nr_bios = 0;
        self.slab.free(id.0);
    }
}

impl std::ops::Index<RequestId> for Requests {
    type Output = Request;
    #[inline]
    fn index(&self, id: RequestId) -> &Request {
        self.get(id)
    }
}

/// A bio (or a piece of a split bio) held in a request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BioSlot {
    pub token: u64,
    pub sector: Sector,
    pub len: u32,
    /// Byte offset of this piece within the submitted bio (0 unless split).
    pub offset: u32,
    /// Next bio of the same request.
    pub next: u32,
    /// The split record this piece reports to, or NIL.
    pub parent: u32,
}

/// What a split bio's pieces report to, so that the submitted bio completes
/// once: with every byte, or with the bytes before its earliest failure.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SplitRecord {
    pub token: u64,
    pub pending: u32,
    /// Byte offset of the earliest failed byte seen so far (`len` if none).
    pub fail_at: u32,
    pub status: Status,
}

/// One bio of a dispatched request, as the device needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BioView {
    /// The submitted bio's token.
    pub token: u64,
    /// First sector of this piece.
    pub sector: Sector,
    /// Length in bytes.
    pub len: u32,
    /// Byte offset of this piece within the submitted bio's buffer (non-zero
    /// only for pieces of a split bio).
    pub offset: u32,
}

/// Iterator over a request's bios, in sector order.
pub struct Bios<'a> {
    pub(crate) slab: &'a Slab<BioSlot>,
    pub(crate) cur: u32,
}

impl Iterator for Bios<'_> {
    type Item = BioView;

    #[inline]
    fn next(&mut self) -> Option<BioView> {
        if self.cur == NIL {
            return None;
        }
        let b = &self.slab[self.cur];
        self.cur = b.next;
        Some(BioView {
            token: b.token,
            sector: b.sector,
            len: b.len,
            offset: b.offset,
        })
    }
}
