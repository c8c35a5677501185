//! I/O injection: while the device is kept for the queue in service (it has
//! nothing queued and is idled for, or waits for its requests in flight),
//! other queues' requests are dispatched to keep the device busy, as Linux's
//! BFQ does (`bfq_choose_bfqq_for_injection`), without changing the queue in
//! service.
//!
//! The source, in this order:
//! 1. the async queue of the in-service queue's priority, if one of its
//!    [`OWN_ASYNC_LOOK`] most recent requests comes from the same context (a
//!    process's own buffered writes: idling for a process must not hold back
//!    the writes it issued meanwhile; Linux looks at the async queue's next
//!    request only, and detects other blocking queues as "wakers");
//! 2. its waker queue, if busy and its next request fits in what is left of
//!    its budget, without limit (Linux `waker_bfqq`): a queue whose
//!    completions the in-service queue's new requests follow, within
//!    [`WAKER_GAP`], [`WAKER_DETECTIONS`] times in a row (detection starts
//!    over after 128 × `slice_idle`). Idling for a process whose next request
//!    waits for another queue's I/O would otherwise only stall both; this is
//!    how a client waiting on its own writes (an NBD connection, a process
//!    writing then reading) keeps going while it is idled for. Linux detects
//!    wakers only for queues with a long think time; here for any sync queue;
//! 3. if idling does not boost throughput, and the in-service queue is not
//!    raised, or other raised queues are active, or its think time is long:
//!    the first of the busy queues, in service order (at most
//!    [`SCAN_LIMIT`] looked at), whose next request fits in what is left of
//!    its budget; only raised ones when the in-service queue is raised with
//!    a short think time. On a non-rotational device a request of
//!    [`NONROT_SMALL`] sectors or more is injected only into an empty device
//!    (large requests are served first by flash and would delay the
//!    in-service queue's next one).
//!
//! Injection stops at the in-service queue's **inject limit** of requests in
//! the device. The limit adapts (Linux `bfq_update_inject_limit`): when the
//! in-service queue gets a request while the device is empty, the time to that
//! request's completion is its *service time*; measured without injection it
//! is the baseline, and the limit starts at 1 once there is one. Measured with
//! injection, a time within 3/2 of the baseline raises the limit by one (up
//! to the deepest in-flight count seen), a longer one lowers it. Each queue's
//! limit and baseline are reset every [`INJECT_RESET`] (to 0 for a queue with
//! a short think time, 1 otherwise), so that the limit follows the workload.
//! A queue that injection empties leaves its tree, charged the service it got.
//!
//! Not modelled: Linux's waker/blocked queue detection (a queue whose I/O
//! unblocks the in-service one gets injected first).

use super::bfqq::{NONROT_SMALL, Place};
use super::queues::key_of;
use super::{Bfq, MS};
use crate::bio::Nanos;
use crate::index::NIL;
use crate::request::{RequestId, Requests};

/// Busy queues looked at for a request to inject, per dispatch.
const SCAN_LIMIT: u32 = 8;
/// Most recent async requests looked at for one of the in-service context.
const OWN_ASYNC_LOOK: u32 = 8;
/// A new request this soon after another queue's completion was woken by it
/// (Linux: 4 ms).
const WAKER_GAP: Nanos = 4 * MS;
/// Wake-ups in a row that make a queue the waker (Linux: 3).
const WAKER_DETECTIONS: u32 = 3;
/// Waker detection starts over after this many `slice_idle`s (Linux: 128).
const WAKER_WINDOW_IDLES: u64 = 128;
/// A queue's inject limit and baseline are reset this long after they were
/// last lowered or reset (Linux: 1 s).
pub(super) const INJECT_RESET: Nanos = 1_000 * MS;
/// A service time is measured only this long after the limit was last
/// lowered or reset (Linux: 10 ms).
const MEASURE_HOLDOFF: Nanos = 10 * MS;

impl Bfq {
    /// A request arrived for queue `h` at `now`: reset its inject limit when
    /// due, and start timing the request if `h` is in service and the
    /// device is empty (or injection is being judged).
    pub(super) fn injection_on_arrival(&mut self, h: u32, now: Nanos) {
        let q = &self.queues[h as usize];
        if !q.sync {
            return;
        }
        if now >= q.inject_decreased.saturating_add(INJECT_RESET) {
            self.reset_inject_limit(h, now);
        }
        let q = &self.queues[h as usize];
        if self.in_service == h
            && (self.dispatched == 0
                || (q.last_serv_time > 0 && self.rqs_injected && self.dispatched > 0))
            && now >= q.inject_decreased.saturating_add(MEASURE_HOLDOFF)
        {
            self.service_timer_start = now;
            self.time_next_dispatch = true;
            if self.dispatched == 0 {
                self.rqs_injected = false;
            }
        }
    }

    /// Queue `h`'s limit and baseline start over.
    fn reset_inject_limit(&mut self, h: u32, now: Nanos) {
        let short = self.queues[h as usize].short_think_time(self.slice_idle);
        let q = &mut self.queues[h as usize];
        q.last_serv_time = 0;
        q.inject_limit = u32::from(!short);
        q.inject_decreased = now;
        self.timed_rq = NIL;
    }

    /// Sync queue `h`, empty, gets a request at `now`: if it follows another
    /// queue's completion closely, count that queue as its tentative waker,
    /// and make it the waker after [`WAKER_DETECTIONS`] in a row.
    pub(super) fn check_waker(&mut self, h: u32, now: Nanos) {
        let last = self.last_completed_queue;
        if last == NIL || last == h || now.saturating_sub(self.last_completion) >= WAKER_GAP {
            return;
        }
        let window = self.slice_idle.saturating_mul(WAKER_WINDOW_IDLES);
        let last_key = self.queues[last as usize].key;
        let q = &mut self.queues[h as usize];
        if q.tentative_waker != last || now > q.waker_detection_start.saturating_add(window) {
            q.tentative_waker = last;
            q.waker_detections = 1;
            q.waker_detection_start = now;
        } else {
            q.waker_detections += 1;
        }
        if q.waker_detections >= WAKER_DETECTIONS {
            q.waker = last;
            q.waker_key = last_key;
            q.tentative_waker = NIL;
        }
    }

    /// Request `id` of the in-service queue is dispatched: time it if its
    /// arrival asked for it.
    #[inline]
    pub(super) fn injection_on_dispatch(&mut self, id: u32) {
        if self.time_next_dispatch {
            self.time_next_dispatch = false;
            self.timed_rq = id;
        }
    }

    /// Request `id` of queue `h` completed at `now`, `in_flight` in the
    /// device counting it: if it was the timed one, adapt `h`'s limit.
    #[inline]
    pub(super) fn injection_on_completion(&mut self, h: u32, id: u32, in_flight: u32, now: Nanos) {
        if id != self.timed_rq {
            return;
        }
        let max_in_flight = self.queueing.max_in_flight();
        let injected = self.rqs_injected;
        let took = now.saturating_sub(self.service_timer_start);
        let q = &mut self.queues[h as usize];
        let old = q.inject_limit;
        if q.last_serv_time > 0 && injected {
            let threshold = q.last_serv_time.saturating_mul(3) / 2;
            if took >= threshold && old > 0 {
                q.inject_limit -= 1;
                q.inject_decreased = now;
            } else if took < threshold && old <= max_in_flight {
                q.inject_limit += 1;
            }
        }
        if (q.last_serv_time == 0 && in_flight == 1) || took < q.last_serv_time {
            if q.last_serv_time == 0 {
                q.inject_limit = old.max(1);
            }
            q.last_serv_time = took;
        } else if !injected && in_flight == 1 {
            q.last_serv_time = took;
        }
        self.timed_rq = NIL;
        self.rqs_injected = false;
    }

    /// Dispatch another queue's request while in-service queue `h` (nothing
    /// queued) keeps the device, if injection allows one.
    pub(super) fn inject(&mut self, rqs: &Requests, h: u32, now: Nanos) -> Option<RequestId> {
        if self.strict_guarantees || self.queued == 0 {
            return None;
        }
        let (c, id) = self.injection_source(rqs, h, now)?;
        let charge = self.charge(c, rqs[RequestId::from_raw(id)].sectors());
        self.rqs_injected = true;
        let rq = self.take(rqs, c, id, charge, now);
        if self.queues[c as usize].queued == 0 {
            self.drained_by_injection(c, now);
        }
        Some(rq)
    }

    /// What is left of busy queue `c`'s budget covers its next request.
    fn fits_budget(&self, rqs: &Requests, c: u32, next: u32) -> bool {
        let q = &self.queues[c as usize];
        let charge = self.charge(c, rqs[RequestId::from_raw(next)].sectors());
        charge <= q.budget.saturating_sub(q.service)
    }

    /// A recent async request of in-service queue `h`'s context, with its
    /// queue.
    fn own_async(&self, rqs: &Requests, h: u32) -> Option<(u32, u32)> {
        let q = &self.queues[h as usize];
        let a = self
            .table
            .get(key_of(0, false, usize::from(q.class), q.level))?;
        if a == h {
            return None;
        }
        let ctx = q.key as u32;
        let mut cur = self.queues[a as usize].fifo.back();
        for _ in 0..OWN_ASYNC_LOOK {
            let id = cur?;
            if rqs[RequestId::from_raw(id)].ctx().0 == ctx {
                return self.fits_budget(rqs, a, id).then_some((a, id));
            }
            cur = self.fifo.prev(id);
        }
        None
    }

    /// The queue to inject from and its request, if any.
    fn injection_source(&self, rqs: &Requests, h: u32, now: Nanos) -> Option<(u32, u32)> {
        // 1. The same context's async requests.
        if let Some(found) = self.own_async(rqs, h) {
            return Some(found);
        }
        let q = &self.queues[h as usize];
        // 2. Its waker.
        let w = q.waker;
        if w != NIL
            && w != h
            && self.queues[w as usize].key == q.waker_key
            && self.queues[w as usize].place == Place::Busy
        {
            let next = self.nearest(rqs, w);
            if self.fits_budget(rqs, w, next) {
                return Some((w, next));
            }
        }
        // 3. Any busy queue, if idling is not there for throughput.
        let raised = q.raised(now, self.low_latency);
        let short = q.short_think_time(self.slice_idle);
        if self.idling_boosts_throughput(h, now) || (raised && self.raised_active() <= 1 && short) {
            return None;
        }
        let limit = q.inject_limit;
        if self.dispatched >= limit {
            return None;
        }
        let always = !raised || !short;
        let mut looked = 0;
        for class in 0..3 {
            let mut cur = self.wf2q.first_busy(class);
            while let Some(c) = cur {
                looked += 1;
                if looked > SCAN_LIMIT {
                    return None;
                }
                cur = self.wf2q.next_busy(c);
                let cq = &self.queues[c as usize];
                debug_assert!(cq.place == Place::Busy && cq.queued > 0);
                if !(always || cq.raised(now, self.low_latency)) {
                    continue;
                }
                let next = self.nearest(rqs, c);
                if !self.fits_budget(rqs, c, next) {
                    continue;
                }
                if !self.rotational
                    && rqs[RequestId::from_raw(next)].sectors() >= NONROT_SMALL
                    && self.dispatched >= 1
                {
                    continue;
                }
                return Some((c, next));
            }
        }
        None
    }

    /// Busy queue `c` has nothing queued left after an injection: it leaves
    /// its tree, charged what it was served, and waits for its completions.
    fn drained_by_injection(&mut self, c: u32, now: Nanos) {
        let served = self.queues[c as usize].service;
        self.wf2q.remove_busy(c);
        self.wf2q.deactivate(c, served);
        self.uncount_weight(c);
        self.went_idle(c, now);
        let q = &mut self.queues[c as usize];
        q.service = 0;
        q.place = Place::Idle;
    }
}
