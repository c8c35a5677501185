//! `bfq`: Budget Fair Queueing, modelled on Linux's BFQ with one cgroup.
//!
//! This file holds the scheduler's state ([`Bfq`]) and its [`Scheduler`]
//! implementation (insert, merge hooks, dispatch, completion); each section
//! below names the file that holds the rest of its concern. Also here:
//! `bfqq.rs` (one queue: its place, budget, think time, seek history and
//! I/O-boundness), `queueing.rs` (whether the device queues commands),
//! `tunables.rs` (the tunables table) and `check.rs` (invariant checks for
//! tests).
//!
//! # Queues
//!
//! Sync requests (reads; writes flagged SYNC, FUA or PREFLUSH) go to one
//! queue per I/O context and priority; async requests share one queue per
//! priority (class and level), as in CFQ and BFQ. A queue keeps its requests
//! in a sort tree by start sector and a FIFO, each request stamped with
//! `insert time + fifo_expire_sync / fifo_expire_async`.
//!
//! Inside the queue in service, an expired FIFO head is served first (checked
//! once per service slot); otherwise the better of the two requests around
//! the head position: sync before async, META first, then the nearer, a
//! backward seek within `back_seek_max` costing `back_seek_penalty` times a
//! forward one (`choose.rs`).
//!
//! # Service: budgets and B-WF2Q+ (`service.rs`, `wf2q.rs`)
//!
//! The queue in service may dispatch requests worth its budget (sectors;
//! async requests are charged 3× their size, as Linux's async charge factor,
//! to favour sync I/O). Queues are scheduled by B-WF2Q+ in virtual time per
//! class: each busy queue has a start `S` and finish `F = S + budget/weight`;
//! the class's virtual time grows with the service it gives divided by the
//! sum of its active weights; the eligible queue (`S ≤ V`) with the smallest
//! `F` is served next. Over time, backlogged queues get sectors in proportion
//! to their weights: BFQ shares bandwidth, not time. Classes are strict: RT
//! before BE before IDLE; an IDLE queue is served only when no RT or BE queue
//! is busy, and a queue that becomes busy in a higher class, or in the same
//! class with a higher weight than the one in service, preempts it. Weight:
//! `(8 − level) × 10` (BE level 4, the default: 40), in every class.
//!
//! A service slot ends (the queue "expires") when its budget is exhausted,
//! after `timeout_sync` (it is then charged its whole budget, so seeky queues
//! get a time share), when its idle wait runs out or is given up, when it has
//! nothing more to do, or when it is preempted. Each sync queue's budget
//! adapts to how its slots end, up to `max_budget` (by default the estimated
//! peak rate, `rate.rs`, × `timeout_sync`). Slots, expiry, charging and the
//! budget feedback are in `service.rs`.
//!
//! # Idling (`idle.rs`, `queueing.rs`, `inject.rs`)
//!
//! When the queue in service has dispatched everything, BFQ may keep the
//! device for it rather than switch: it waits for its requests in flight,
//! then up to `slice_idle` (8 ms, on every device) for its next request.
//! Following Linux's rules, it idles for a sync queue with a short think time
//! only when idling boosts throughput (a rotational device that does not
//! queue commands; or a sequential, I/O-bound queue on a device that is
//! rotational or does not queue; not for an unraised queue while raised ones
//! are active) or is needed for service guarantees (the queue is
//! raised and some active queue is not; active sync queues of different weights, the queue not the
//! lightest; active queues in more than one class; or it is the only active
//! queue). A queue becoming active ends a wait these rules no longer call
//! for. Whether the device queues is learned from the depth observed in
//! flight (Linux `hw_tag`), not taken from `queue_depth` (beyond: a device
//! that takes one command cannot queue). While it keeps the device for the
//! queue in service, BFQ injects other queues' requests: the same context's
//! async ones, the in-service queue's waker's (the queue whose completions
//! its requests follow), and others' up to an inject limit adapted from the
//! in-service queue's measured service times. The
//! wait is given up when every tag is held and nothing BFQ dispatched is in
//! the device. `strict_guarantees` = 1 idles for every sync queue and keeps
//! one request in the device at a time (no injection).
//!
//! # Weight raising (`low_latency`, `raise.rs`)
//!
//! With `low_latency` = 1, a sync queue that looks interactive (busy again
//! after 2 s idle, or new: an application starting) or soft real-time (little
//! I/O, periodically) gets its weight raised ×30 for a while, unless it was
//! created in a burst of many queues at once. A new weight takes effect when
//! the queue next joins its tree.
//!
//! # Queue lifetime and memory (`queues.rs`)
//!
//! Queues live in a slab sized by [`Scheduler::resize`], found by key
//! (`table.rs`). A queue with nothing queued, nothing in flight and not in
//! service is freed; its history stays until its slot is needed. The sync
//! queues of a context that is gone are not idled for again. Nothing
//! allocates per I/O once sized.
//!
//! Costs: insert, dispatch and completion are O(log n) in the requests of a
//! queue and in the number of busy queues (red-black trees keyed by sector,
//! by virtual start and by virtual finish time).
//!
//! # Merging
//!
//! The elevator path ([`super::MergeLookup::Elevator`]). Front-merge candidates
//! come from the sort tree of the queue the bio would go to; a bio or request
//! may merge only with a request of the same queue (same context, sync-ness
//! and priority), like CFQ. When two requests merge, the survivor keeps the
//! earlier FIFO time.
//!
//! # Tunables (Linux names and defaults)
//!
//! - `low_latency` 1: weight raising for interactive and soft real-time queues.
//! - `slice_idle` 8 ms: how long to wait for the next request of a queue.
//! - `timeout_sync` 125 ms: longest service slot.
//! - `max_budget` 0 sectors: largest budget; 0 = automatic (reads back the
//!   setting, 0, not the computed value).
//! - `fifo_expire_sync` 125 ms, `fifo_expire_async` 250 ms: request deadlines.
//! - `back_seek_max` 16384 KiB: farthest backward seek preferred.
//! - `back_seek_penalty` 2: cost of a backward seek relative to a forward one.
//! - `strict_guarantees` 0: idle always, one request at a time (above).
//!
//! Heuristics that are not tunables, with Linux's values: command queueing
//! is seen when more than 3 requests are in flight over 32 completions under
//! load (`BFQ_HW_QUEUE_THRESHOLD`, `BFQ_HW_QUEUE_SAMPLES`); a queue is
//! I/O-bound from creation, stops being one when it expires too idle having
//! used at most 1/5 of its budget, and becomes one again after 120 arrivals
//! in a row within `slice_idle` of its last completion
//! (`bfq_requests_within_timer`); a raised queue's budget is 2 × the
//! smallest budget (`__bfq_bfqq_recalc_budget`); the inject limit is reset every 1 s,
//! service times are measured from 10 ms after a reset or decrease, and a
//! time within 3/2 of the baseline raises the limit; a request of 8 sectors
//! or more is injected into a non-rotational device only when it is empty
//! (`BFQQ_SECT_THR_NONROT`); a queue's new request that follows another
//! queue's completion within 4 ms, 3 times in a row (counting restarts after
//! 128 × `slice_idle`), makes that queue its waker, injected first while the
//! queue is idled for.//!
//! # Simplified against Linux
//!
//! - One cgroup (no group hierarchy); sync queues keyed by context and
//!   priority (Linux: per process, with the process's priority).
//! - No merging of the queues of cooperating processes; at most 8 busy
//!   queues looked at for a request to inject; wakers are detected for every
//!   sync queue (Linux: only for queues with a long think time), and a
//!   context's own async requests are found among the async queue's 8 most
//!   recent (Linux: its next request only).
//! - Idling still requires a short think time in every case (Linux idles
//!   without one on a rotational device that does not queue, and for
//!   guarantees); the idle
//!   wait of a raised queue is `slice_idle` (Linux:
//!   at least 20 ms); a raised queue is not idled for merely because the
//!   device holds 4 requests more than its own (Linux does; here it gave
//!   raised random writers slots that held the disk yet cost them a few
//!   sectors each, and a raised sequential reader beside them waited seconds,
//!   see `idle.rs`).
//! - A queue becoming active ends a pointless wait of the queue in service
//!   only when that queue has nothing queued (Linux also preempts a queue
//!   with requests when the new one comes first by timestamps).
//! - The timeout charge is the whole budget (Linux charges in proportion to
//!   the time used), and the budget timeout is not lengthened for raised
//!   queues (Linux: ×30 for interactive ones): with the whole-budget charge
//!   the raised weight alone gives a raised queue its share, and a raised
//!   seeky queue does not hold the disk for seconds.
//! - Burst detection is reduced to counting queue creations; a queue
//!   marked as part of a large burst stays marked while its history is kept.
//! - The weight-raising constants (×30, 2 s, 300 ms, 7000 sectors/s, 3..13 s,
//!   110K sectors, 512 MiB) and the burst ones (180 ms, 8) are not tunables;
//!   the peak-rate estimator is this module's own.
//! - The IDLE class is served strictly after RT and BE, with no guard
//!   against its starvation.

mod bfqq;
mod check;
mod choose;
mod idle;
mod inject;
mod queueing;
mod queues;
mod raise;
mod rate;
mod service;
mod table;
mod tunables;
mod wf2q;

use super::{MergeKind, SchedDispatch, Scheduler};
use crate::bio::{Bio, IoContext, Nanos, Sector};
use crate::index::{ListHead, ListLinks, NIL, RbForest};
use crate::request::{RequestId, Requests};
use crate::tunable::{self};

use bfqq::{Bfqq, NEVER, Place};
use idle::WEIGHT_SLOTS;
use queueing::DeviceQueueing;
use queues::{EXTRA_QUEUES, bio_is_sync, key_of, queue_key, rq_key};
use rate::PeakRate;
use service::Expiry;
use table::QueueTable;
use tunables::TABLE;
pub use tunables::TUNABLES;
use wf2q::Wf2q;

const MS: Nanos = 1_000_000;
const SEC: Nanos = 1_000_000_000;

const IDLE_CLASS: u8 = 2;

/// The BFQ scheduler.
#[derive(Clone, Debug)]
pub struct Bfq {
    low_latency: bool,
    slice_idle: Nanos,
    timeout_sync: Nanos,
    /// 0: automatic.
    user_max_budget: u64,
    /// Indexed by sync-ness: `[async, sync]`.
    fifo_expire: [Nanos; 2],
    /// KiB.
    back_seek_max: u64,
    back_seek_penalty: u64,
    strict_guarantees: bool,

    rotational: bool,
    queueing: DeviceQueueing,

    /// Per request: the sort trees' nodes, FIFO links, FIFO time, queue.
    sort: RbForest,
    fifo: ListLinks,
    fifo_time: Vec<Nanos>,
    rq_queue: Vec<u32>,

    queues: Vec<Bfqq>,
    /// Slots never used.
    free: Vec<u32>,
    /// Freed queues, least recently freed first.
    lru_links: ListLinks,
    lru: ListHead,
    table: QueueTable,
    wf2q: Wf2q,
    /// Active sync queues per weight (level, raised), lightest first, and
    /// which of those counters are non-zero.
    weight_counts: [u32; WEIGHT_SLOTS],
    weight_mask: u16,
    in_service: u32,

    /// Queues created in the current burst, while it is not large.
    burst_links: ListLinks,
    burst: ListHead,
    /// Creation time of the burst's last queue.
    burst_last: Nanos,
    burst_size: u32,
    burst_large: bool,

    /// End of the last dispatched request.
    last_pos: Sector,
    rate: PeakRate,
    queued: u32,
    dispatched: u32,

    /// Injection (`inject.rs`): the in-service queue's request being timed
    /// (`NIL`: none), when its timing started, whether the next dispatch of
    /// the queue in service is to be timed, and whether other queues'
    /// requests were injected meanwhile.
    timed_rq: u32,
    service_timer_start: Nanos,
    time_next_dispatch: bool,
    rqs_injected: bool,
    /// The queue of the last completed request, and when it completed.
    last_completed_queue: u32,
    last_completion: Nanos,
}

impl Default for Bfq {
    fn default() -> Bfq {
        Bfq::new()
    }
}

impl Bfq {
    /// BFQ with Linux's default tunables.
    pub fn new() -> Bfq {
        let mut b = Bfq {
            // Tunables: set from the table's defaults below.
            low_latency: false,
            slice_idle: 0,
            timeout_sync: 0,
            user_max_budget: 0,
            fifo_expire: [0; 2],
            back_seek_max: 0,
            back_seek_penalty: 0,
            strict_guarantees: false,
            rotational: true,
            queueing: DeviceQueueing::new(2),
            sort: RbForest::new(0),
            fifo: ListLinks::new(0),
            fifo_time: Vec::new(),
            rq_queue: Vec::new(),
            queues: Vec::new(),
            free: Vec::new(),
            lru_links: ListLinks::new(0),
            lru: ListHead::EMPTY,
            table: QueueTable::with_capacity(0),
            wf2q: Wf2q::new(),
            weight_counts: [0; WEIGHT_SLOTS],
            weight_mask: 0,
            in_service: NIL,
            burst_links: ListLinks::new(0),
            burst: ListHead::EMPTY,
            burst_last: NEVER,
            burst_size: 0,
            burst_large: false,
            last_pos: 0,
            rate: PeakRate::default(),
            queued: 0,
            dispatched: 0,
            timed_rq: NIL,
            service_timer_start: 0,
            time_next_dispatch: false,
            rqs_injected: false,
            last_completed_queue: NIL,
            last_completion: 0,
        };
        tunable::apply_defaults(&TABLE, &mut b);
        b
    }
}

impl Scheduler for Bfq {
    fn name(&self) -> &'static str {
        "bfq"
    }

    fn resize(&mut self, nr_requests: u32) {
        let n = nr_requests as usize;
        self.sort.grow(n);
        self.fifo.grow(n);
        if self.fifo_time.len() < n {
            self.fifo_time.resize(n, 0);
        }
        if self.rq_queue.len() < n {
            self.rq_queue.resize(n, NIL);
        }
        let slots = 2 * n + EXTRA_QUEUES;
        let old = self.queues.len();
        if slots > old {
            self.queues.resize(slots, Bfqq::FREE);
            // Lowest handles first; room for every slot, so that freeing one
            // never allocates.
            let mut fresh: Vec<u32> = Vec::with_capacity(slots);
            fresh.extend((old as u32..slots as u32).rev());
            fresh.extend_from_slice(&self.free);
            self.free = fresh;
            self.lru_links.grow(slots);
            self.burst_links.grow(slots);
            self.wf2q.grow(slots);
        }
        if self.table.capacity() < slots {
            let mut table = QueueTable::with_capacity(slots);
            for (key, h) in self.table.entries() {
                table.insert(key, h);
            }
            self.table = table;
        }
    }

    fn set_device(&mut self, rotational: bool, queue_depth: u32) {
        self.rotational = rotational;
        self.queueing = DeviceQueueing::new(queue_depth);
    }

    #[inline]
    fn allow_bio_merge(&self, rqs: &Requests, rq: RequestId, bio: &Bio) -> bool {
        rq_key(rqs, rq) == queue_key(bio.ctx.0, bio_is_sync(bio), bio.prio)
    }

    #[inline]
    fn allow_request_merge(&self, rqs: &Requests, rq: RequestId, next: RequestId) -> bool {
        rq_key(rqs, rq) == rq_key(rqs, next)
    }

    #[inline]
    fn front_merge_candidate(&self, rqs: &Requests, bio: &Bio) -> Option<RequestId> {
        let key = queue_key(bio.ctx.0, bio_is_sync(bio), bio.prio);
        let h = self.table.get(key)?;
        let id = self.sort.find(&self.queues[h as usize].sort, bio.end())?;
        debug_assert_eq!(rqs[RequestId::from_raw(id)].sector(), bio.end());
        Some(RequestId::from_raw(id))
    }

    #[inline]
    fn next_request(&self, _rqs: &Requests, rq: RequestId) -> Option<RequestId> {
        if !self.sort.is_linked(rq.raw()) {
            return None;
        }
        self.sort.next(rq.raw()).map(RequestId::from_raw)
    }

    #[inline]
    fn prev_request(&self, _rqs: &Requests, rq: RequestId) -> Option<RequestId> {
        if !self.sort.is_linked(rq.raw()) {
            return None;
        }
        self.sort.prev(rq.raw()).map(RequestId::from_raw)
    }

    fn insert(&mut self, rqs: &Requests, rq: RequestId, now: Nanos) {
        let r = &rqs[rq];
        let sync = r.is_sync();
        let key = queue_key(r.ctx().0, sync, r.prio());
        let h = self.get_queue(key, sync, r.prio());
        let i = rq.index();
        self.rq_queue[i] = h;
        self.fifo_time[i] = now.saturating_add(self.fifo_expire[usize::from(sync)]);
        let think_cap = self.slice_idle.saturating_mul(2);
        let rotational = self.rotational;
        if self.queues[h as usize].sync
            && self.queues[h as usize].queued == 0
            && self.queues[h as usize].dispatched == 0
        {
            self.check_waker(h, now);
        }
        let q = &mut self.queues[h as usize];
        q.exited = false;
        self.sort.insert(&mut q.sort, rq.raw(), r.sector());
        self.fifo.push_back(&mut q.fifo, rq.raw());
        if q.sync {
            if q.queued == 0 && q.dispatched == 0 {
                q.record_think_time(now, think_cap);
            }
            q.record_position(r.sector(), r.sectors(), rotational);
        }
        q.queued += 1;
        self.queued += 1;
        self.injection_on_arrival(h, now);
        let q = &mut self.queues[h as usize];
        if self.in_service == h {
            // The wait is over.
            q.idle_until = NEVER;
        } else if q.queued == 1 {
            self.activate(h, r.sectors(), now);
        }
    }

    fn bio_merged(&mut self, rqs: &Requests, rq: RequestId, kind: MergeKind) {
        if kind == MergeKind::Front {
            let h = self.rq_queue[rq.index()];
            let root = &mut self.queues[h as usize].sort;
            self.sort.remove(root, rq.raw());
            self.sort.insert(root, rq.raw(), rqs[rq].sector());
        }
    }

    fn requests_merged(
        &mut self,
        _rqs: &Requests,
        into: RequestId,
        gone: RequestId,
        gone_queued: bool,
    ) {
        if !gone_queued {
            return;
        }
        let h = self.rq_queue[gone.index()];
        debug_assert_eq!(h, self.rq_queue[into.index()], "merge across queues");
        let q = &mut self.queues[h as usize];
        if self.fifo_time[gone.index()] < self.fifo_time[into.index()] {
            // The survivor takes the earlier deadline and FIFO position.
            self.fifo.remove(&mut q.fifo, into.raw());
            self.fifo.insert_after(&mut q.fifo, gone.raw(), into.raw());
            self.fifo_time[into.index()] = self.fifo_time[gone.index()];
        }
        self.sort.remove(&mut q.sort, gone.raw());
        self.fifo.remove(&mut q.fifo, gone.raw());
        q.queued -= 1;
        self.queued -= 1;
        self.rq_queue[gone.index()] = NIL;
        debug_assert!(q.queued > 0, "the survivor of a merge is queued");
    }

    fn dispatch(&mut self, rqs: &Requests, now: Nanos) -> SchedDispatch {
        // Each turn dispatches, answers, or expires the queue in service; a
        // freshly started slot always dispatches, so this ends.
        loop {
            if self.in_service == NIL && (self.queued == 0 || !self.start_next()) {
                return SchedDispatch::Nothing;
            }
            let h = self.in_service;
            let q = &self.queues[h as usize];
            let timed_out = q.budget_timeout != NEVER && now >= q.budget_timeout;
            if q.queued > 0 {
                if self.strict_guarantees && self.dispatched > 0 {
                    return SchedDispatch::Nothing;
                }
                if timed_out {
                    self.expire(h, Expiry::Timeout, now);
                    continue;
                }
                let id = self.choose(rqs, h, now);
                let charge = self.charge(h, rqs[RequestId::from_raw(id)].sectors());
                let q = &mut self.queues[h as usize];
                if q.service == 0 {
                    q.budget = q.budget.max(charge);
                } else if charge > q.budget.saturating_sub(q.service) {
                    self.expire(h, Expiry::BudgetExhausted, now);
                    continue;
                }
                return SchedDispatch::Request(self.take(rqs, h, id, charge, now));
            }
            if q.dispatched > 0 {
                // Wait for its completions if it is worth idling for,
                // keeping the device busy with others' requests if allowed.
                if self.strict_guarantees || (!timed_out && self.may_idle(h, now)) {
                    return match self.inject(rqs, h, now) {
                        Some(rq) => SchedDispatch::Request(rq),
                        None => SchedDispatch::Nothing,
                    };
                }
                let why = if timed_out {
                    Expiry::Timeout
                } else {
                    Expiry::NoMoreRequests
                };
                self.expire(h, why, now);
                continue;
            }
            let why = if timed_out {
                Expiry::Timeout
            } else if q.idle_until == NEVER {
                Expiry::NoMoreRequests
            } else if self.dispatched == 0 && rqs.exhausted() {
                // Other queues' requests hold every tag and none will
                // complete: its owner cannot send the request we would wait
                // for.
                Expiry::TagsHeld
            } else if now < q.idle_until {
                let until = q.idle_until;
                return match self.inject(rqs, h, now) {
                    Some(rq) => SchedDispatch::Request(rq),
                    None => SchedDispatch::WaitUntil(until),
                };
            } else {
                Expiry::TooIdle
            };
            self.expire(h, why, now);
        }
    }

    fn completed(&mut self, rqs: &Requests, rq: RequestId, now: Nanos) {
        let h = self.rq_queue[rq.index()];
        debug_assert!(h != NIL, "completion of a request bfq does not hold");
        if h == NIL {
            return;
        }
        self.rq_queue[rq.index()] = NIL;
        let in_flight = self.dispatched;
        let shallow_by_idling = self.in_service != NIL && {
            let s = &self.queues[self.in_service as usize];
            s.short_think_time(self.slice_idle) && s.dispatched + s.queued < queueing::THRESHOLD
        };
        self.queueing
            .completed(in_flight, self.queued, shallow_by_idling);
        self.injection_on_completion(h, rq.raw(), in_flight, now);
        self.last_completed_queue = h;
        self.last_completion = now;
        self.dispatched -= 1;
        self.rate.completed(now, rqs[rq].sectors(), self.dispatched);
        let q = &mut self.queues[h as usize];
        q.dispatched -= 1;
        q.last_end_request = now;
        if self.in_service == h {
            if q.budget_timeout == NEVER {
                self.queues[h as usize].budget_timeout = now.saturating_add(self.timeout_sync);
            }
            let q = &self.queues[h as usize];
            if q.queued == 0 && q.dispatched == 0 && self.may_idle(h, now) {
                let t = self.idle_time(h, now);
                if t > 0 {
                    self.queues[h as usize].idle_until = now.saturating_add(t);
                }
            }
        } else if q.place == Place::Idle && q.dispatched == 0 {
            self.release(h);
        }
    }

    fn context_gone(&mut self, ctx: IoContext, now: Nanos) {
        // Its sync queues, one per priority it used: stop idling for them,
        // and forget the ones already freed. Requests still queued are
        // served as usual.
        for class in 0..3 {
            for level in 0..8 {
                let Some(h) = self.table.get(key_of(ctx.0, true, class, level)) else {
                    continue;
                };
                let q = &mut self.queues[h as usize];
                q.exited = true;
                match q.place {
                    Place::Retained => self.forget(h),
                    Place::InService if q.queued == 0 => {
                        // Idling (or about to): the wait is pointless now.
                        let why = if q.dispatched == 0 {
                            Expiry::TooIdle
                        } else {
                            Expiry::NoMoreRequests
                        };
                        self.expire(h, why, now);
                    }
                    _ => {}
                }
            }
        }
    }

    table_tunables!(TABLE, TUNABLES);
}
