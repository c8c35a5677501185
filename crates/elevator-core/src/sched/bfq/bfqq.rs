//! One BFQ queue (`bfq_queue`): the requests of one process (sync) or of one
//! priority (async), its place in the scheduler, its budget, and the history
//! that decides idling and weight raising.

use crate::bio::{IoPrio, Nanos, Sector};
use crate::index::{ListHead, NIL, RbRoot};

/// A time that never comes.
pub(super) const NEVER: Nanos = Nanos::MAX;

/// A queue's distance from the previous request above this counts as a seek
/// (sectors; Linux `BFQQ_SEEK_THR`).
pub(super) const SEEK_THRESHOLD: Sector = 800;
/// On non-rotational devices only requests smaller than this (sectors) can
/// count as seeks (Linux `BFQQ_SECT_THR_NONROT`).
pub(super) const NONROT_SMALL: u32 = 8;
/// A queue is seeky when more than this many of its last 32 requests were
/// seeks (Linux `BFQQ_SEEKY`).
pub(super) const SEEKY_BITS: u32 = 4;

/// Where a queue is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// The slot holds no queue.
    Free,
    /// Freed: nothing queued, nothing dispatched, not in service, on no
    /// scheduling structure. Only its history is kept (on the LRU list) until
    /// the slot is needed for another queue.
    Retained,
    /// Nothing queued and not in service, but requests are in flight.
    Idle,
    /// Requests queued, waiting on its class's service tree.
    Busy,
    /// Being served.
    InService,
}

/// Why a queue is weight-raised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Raise {
    Off,
    /// It became busy after a long idle time (an application starting).
    Interactive,
    /// It issues small I/O periodically, below the soft real-time rate.
    SoftRt,
}

/// No weight slot counted.
pub(super) const NO_SLOT: u8 = u8::MAX;

#[derive(Clone, Debug)]
pub(super) struct Bfqq {
    pub key: u64,
    pub sync: bool,
    /// Priority class index (RT 0, BE 1, IDLE 2).
    pub class: u8,
    /// Level within the class, 0..=7.
    pub level: u8,
    pub place: Place,

    /// Queued requests by start sector.
    pub sort: RbRoot,
    /// Queued requests in arrival order.
    pub fifo: ListHead,
    pub queued: u32,
    /// Dispatched and not yet completed.
    pub dispatched: u32,

    /// Budget of the current (or next) service slot, sectors.
    pub budget: u64,
    /// Service charged in the current slot, sectors.
    pub service: u64,
    /// The budget feedback's value; 0 until first set.
    pub max_budget: u64,
    /// When the slot times out; `NEVER` until its first completion.
    pub budget_timeout: Nanos,
    /// The FIFO was looked at in this slot.
    pub fifo_checked: bool,
    /// Idling for its next request until then; `NEVER` when not idling.
    pub idle_until: Nanos,

    /// Never active yet: no history.
    pub fresh: bool,
    /// When it last stopped being busy.
    pub idle_since: Nanos,
    /// Last completion of one of its requests (`NEVER`: none yet).
    pub last_end_request: Nanos,
    pub ttime_mean: Nanos,
    pub ttime_samples: u32,
    /// One bit per request, 1 for a seek.
    pub seek_history: u32,
    /// End of its last queued request, `None` before the first.
    pub last_request_end: Option<Sector>,

    pub raise: Raise,
    pub wr_until: Nanos,
    /// Service received during the current interactive raise.
    pub wr_service: u64,
    /// Created in a large burst of queue creations: never raised.
    pub in_large_burst: bool,
    /// Its context is gone: never idled for, forgotten once freed.
    pub exited: bool,
    /// When it last became busy after having nothing pending.
    pub backlogged_since: Nanos,
    /// Service received since then.
    pub service_from_backlogged: u64,
    /// Becoming busy from now on counts as soft real-time.
    pub soft_rt_next_start: Nanos,
    /// The asymmetry counter it is counted in (sync queues while active).
    pub weight_slot: u8,

    /// It keeps the device busy when served (Linux `IO_bound`): set when
    /// created and after [`REQUESTS_WITHIN_TIMER`] arrivals in a row each
    /// within `slice_idle` of its last completion; cleared when it expires
    /// too idle having used at most a fifth of its budget.
    pub io_bound: bool,
    /// Arrivals in a row within `slice_idle` of its last completion, while
    /// not I/O-bound.
    pub requests_within_timer: u32,
    /// Requests of other queues that may be in the device while it is in
    /// service with nothing queued (I/O injection, `inject.rs`).
    pub inject_limit: u32,
    /// Time from its first request after it was empty to that request's
    /// completion, with nothing injected; 0: not measured yet.
    pub last_serv_time: Nanos,
    /// When its inject limit was last lowered or reset.
    pub inject_decreased: Nanos,
    /// The queue whose completions its new requests follow (Linux
    /// `waker_bfqq`), with that queue's key to tell a reused slot; `NIL`:
    /// none.
    pub waker: u32,
    pub waker_key: u64,
    /// The candidate waker, how many times in a row it was seen, since when.
    pub tentative_waker: u32,
    pub waker_detections: u32,
    pub waker_detection_start: Nanos,
}

/// Arrivals in a row within `slice_idle` of the last completion that make a
/// queue I/O-bound again (Linux `bfq_requests_within_timer`).
pub(super) const REQUESTS_WITHIN_TIMER: u32 = 120;

impl Bfqq {
    pub const FREE: Bfqq = Bfqq {
        key: u64::MAX,
        sync: false,
        class: 1,
        level: 4,
        place: Place::Free,
        sort: RbRoot::EMPTY,
        fifo: ListHead::EMPTY,
        queued: 0,
        dispatched: 0,
        budget: 0,
        service: 0,
        max_budget: 0,
        budget_timeout: NEVER,
        fifo_checked: false,
        idle_until: NEVER,
        fresh: true,
        idle_since: 0,
        last_end_request: NEVER,
        ttime_mean: 0,
        ttime_samples: 0,
        seek_history: 0,
        last_request_end: None,
        raise: Raise::Off,
        wr_until: 0,
        wr_service: 0,
        in_large_burst: false,
        exited: false,
        backlogged_since: 0,
        service_from_backlogged: 0,
        soft_rt_next_start: 0,
        weight_slot: NO_SLOT,
        io_bound: true,
        requests_within_timer: 0,
        inject_limit: 0,
        last_serv_time: 0,
        inject_decreased: 0,
        waker: NIL,
        waker_key: u64::MAX,
        tentative_waker: NIL,
        waker_detections: 0,
        waker_detection_start: 0,
    };

    /// A new queue for `key`.
    pub fn new(key: u64, sync: bool, prio: IoPrio) -> Bfqq {
        Bfqq {
            key,
            sync,
            class: prio.class().index() as u8,
            level: prio.level(),
            place: Place::Idle,
            ..Bfqq::FREE
        }
    }

    /// Weight from the priority level: `(8 − level) × 10`.
    #[inline]
    pub fn base_weight(&self) -> u64 {
        (8 - u64::from(self.level.min(7))) * 10
    }

    /// Whether its recent requests were mostly seeks.
    #[inline]
    pub fn seeky(&self) -> bool {
        self.seek_history.count_ones() > SEEKY_BITS
    }

    /// Whether every one of its last 32 requests was a seek (Linux
    /// `BFQQ_TOTALLY_SEEKY`).
    #[inline]
    pub fn totally_seeky(&self) -> bool {
        self.seek_history == u32::MAX
    }

    /// Whether its mean think time is within `slice_idle` (no samples yet
    /// counts as short, as for a new Linux queue).
    #[inline]
    pub fn short_think_time(&self, slice_idle: Nanos) -> bool {
        self.ttime_samples == 0 || self.ttime_mean <= slice_idle
    }

    /// A request arrived at `now` while it had nothing pending: one think-time
    /// sample (the gap since its last completion, capped at `cap`), averaged
    /// with weight 1/8.
    #[inline]
    pub fn record_think_time(&mut self, now: Nanos, cap: Nanos) {
        if self.last_end_request == NEVER {
            return;
        }
        let sample = now.saturating_sub(self.last_end_request).min(cap);
        self.ttime_mean = if self.ttime_samples == 0 {
            sample
        } else {
            (self.ttime_mean * 7 + sample) / 8
        };
        self.ttime_samples = self.ttime_samples.saturating_add(1);
    }

    /// A request `sector..+sectors` arrived: update the seek history.
    #[inline]
    pub fn record_position(&mut self, sector: Sector, sectors: u32, rotational: bool) {
        let seek = self.last_request_end.is_some_and(|end| {
            sector.abs_diff(end) > SEEK_THRESHOLD && (rotational || sectors < NONROT_SMALL)
        });
        self.seek_history = (self.seek_history << 1) | u32::from(seek);
        self.last_request_end = Some(sector + u64::from(sectors));
    }

    /// Whether its weight is raised at `now`.
    #[inline]
    pub fn raised(&self, now: Nanos, low_latency: bool) -> bool {
        low_latency && self.raise != Raise::Off && now < self.wr_until
    }
}
