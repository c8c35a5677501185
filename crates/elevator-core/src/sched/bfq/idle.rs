//! Idling: whether the device waits for the queue in service when it has
//! nothing queued, and for how long; and the counters of active sync queues
//! by weight that tell whether the scenario is asymmetric. (A queue's think
//! time, seekiness and I/O-boundness are kept in `bfqq.rs`; whether the
//! device queues commands is learned in `queueing.rs`; serving other queues
//! while idling is `inject.rs`; `dispatch` and `completed`, in `mod.rs`,
//! start, end and give up the wait.)
//!
//! When the queue in service has dispatched everything, BFQ may keep the
//! device for it rather than switch: it waits for its requests in flight to
//! complete, and after the last completion waits up to `slice_idle` for its
//! next request (dispatch answers [`SchedDispatch::WaitUntil`]); a request for
//! it ends the wait, and the end of the wait expires it (too idle). As in
//! Linux (`bfq_better_to_idle`), a queue is idled for only if it is sync, not
//! IDLE class, its context is not gone, `slice_idle` is not 0, it has a short
//! think time (mean gap between a completion and its next request, over
//! arrivals that find it with nothing pending, within `slice_idle`; no
//! samples yet counts as short), and either:
//!
//! - **idling boosts throughput without issues**
//!   (`idling_boosts_thr_without_issues`): the device is rotational and does
//!   not queue commands; or the queue is sequential (not seeky) and I/O-bound
//!   and the device is rotational or does not queue. Never on a flash device
//!   that queues: there idling only lowers throughput. Not for a queue that
//!   is not raised while raised queues are active (it would hold the device
//!   against them; Linux `wr_busy_queues`);
//! - **idling is needed for service guarantees**
//!   (`idling_needed_for_service_guarantees`): the queue is raised and some
//!   active queue is not; or the scenario is asymmetric: active sync queues of
//!   different weights (unless this queue has the smallest weight: idling
//!   cannot protect the share of the queue everybody else outweighs), or
//!   active queues in more than one class; or it is the only active queue
//!   (idling then costs nobody anything, and a queue that becomes active
//!   while it waits ends the wait unless one of these rules still holds).
//!
//! Linux also idles for a raised queue whenever the device holds at least 4
//! requests more than the queue's own; this model does not. Here that rule
//! kept each of several raised random writers in service only while the
//! others' requests drained, each such slot charged just the few sectors it
//! had dispatched, so the device's time went to slots that cost nothing and
//! a raised sequential reader beside them waited seconds for its turn (its
//! throughput fell from 7.5 to 2.1 MB/s on hdd-7200). Among raised queues of
//! one weight, idling protects nobody's share.
//!
//! A queue that becomes active while the one in service waits for its next
//! request ends the wait (preempts it) once these rules no longer call for
//! it (`service.rs`). Whether the device queues is not a flag: see
//! `queueing.rs` (Linux `hw_tag`).
//!
//! The wait is given up at once (the queue expires, its budget unchanged)
//! when every tag is in use and nothing BFQ dispatched is in the device:
//! other queues' requests, held back by the wait, hold the tags, so the
//! queue's owner cannot allocate the request waited for and no completion
//! will free a tag; idling would only run out its time with the device idle.
//! (Linux gets the same from its tag allocation: legacy CFQ and BFQ let the
//! process of a queue being waited for allocate past `nr_requests`, and
//! blk-mq BFQ keeps each queue from taking more than its weight's share of
//! the tags, `bfq_limit_depth`. Here the engines' tag waiters stand in one
//! first-come line, so the scheduler gives up the wait instead.)
//!
//! A seeky queue that is not raised, in a symmetric scenario, waits at most
//! 2 ms (Linux `BFQ_MIN_TT`). `slice_idle` is 8 ms on every device, as in
//! Linux's BFQ.
//!
//! `strict_guarantees` = 1: every sync queue is idled for (whatever its think
//! time or seekiness), the queue in service is never expired while it has
//! requests in flight, and at most one request is in the device at a time, so
//! the device's own reordering cannot break the schedule.
//!
//! [`SchedDispatch::WaitUntil`]: crate::sched::SchedDispatch::WaitUntil

use super::Bfq;
use super::bfqq::NO_SLOT;
use super::{IDLE_CLASS, MS};
use crate::bio::Nanos;

/// Longest idle wait for a seeky queue idled for throughput only.
const MIN_TT: Nanos = 2 * MS;
/// Weight counters: 8 levels, raised or not.
pub(super) const WEIGHT_SLOTS: usize = 16;
/// The counters of raised weights (every raised weight is above every
/// unraised one).
const RAISED_SLOTS: u16 = 0xff00;

/// Weight counter of a queue at `level`, `raised` or not: counters ordered by
/// weight, lightest first.
#[inline]
fn weight_slot(level: u8, raised: bool) -> usize {
    usize::from(raised) * 8 + (7 - usize::from(level.min(7)))
}

impl Bfq {
    /// Whether idling for in-service queue `h` is worth it (Linux
    /// `bfq_better_to_idle`).
    pub(super) fn may_idle(&self, h: u32, now: Nanos) -> bool {
        let q = &self.queues[h as usize];
        if !q.sync || q.class == IDLE_CLASS || q.exited {
            return false;
        }
        if self.strict_guarantees {
            return true;
        }
        if self.slice_idle == 0 || !q.short_think_time(self.slice_idle) {
            return false;
        }
        self.idling_boosts_throughput(h, now) || self.idling_needed_for_guarantees(h, now)
    }

    /// Whether idling for `h` raises throughput without holding the device
    /// against raised queues.
    pub(super) fn idling_boosts_throughput(&self, h: u32, now: Nanos) -> bool {
        let q = &self.queues[h as usize];
        let queueing = self.queueing.queueing();
        let sequential_io_bound = !q.seeky() && q.io_bound && q.short_think_time(self.slice_idle);
        let boosts = (self.rotational && !queueing)
            || ((self.rotational || !queueing) && sequential_io_bound);
        boosts && (self.raised_active() == 0 || q.raised(now, self.low_latency))
    }

    /// Whether idling for `h` is needed to keep the service it is owed.
    pub(super) fn idling_needed_for_guarantees(&self, h: u32, now: Nanos) -> bool {
        let q = &self.queues[h as usize];
        let active = self.wf2q.active_total();
        (q.raised(now, self.low_latency) && self.raised_active() < active)
            || self.asymmetric(h)
            || active == 1
    }

    /// Whether queues would not get their shares without idling for `h`:
    /// active sync queues of different weights, `h` not the lightest; or
    /// active queues in more than one class (Linux
    /// `bfq_asymmetric_scenario`).
    pub(super) fn asymmetric(&self, h: u32) -> bool {
        let slot = self.queues[h as usize].weight_slot;
        let lightest = slot != NO_SLOT && u32::from(slot) == self.weight_mask.trailing_zeros();
        let varied = !lightest && self.weight_mask.count_ones() > 1;
        varied || self.wf2q.classes_active() > 1
    }

    /// Active sync queues with a raised weight.
    #[inline]
    pub(super) fn raised_active(&self) -> u32 {
        if self.weight_mask & RAISED_SLOTS == 0 {
            return 0;
        }
        self.weight_counts[8..].iter().sum()
    }

    /// How long to wait for in-service queue `h`'s next request.
    pub(super) fn idle_time(&self, h: u32, now: Nanos) -> Nanos {
        let q = &self.queues[h as usize];
        if !self.strict_guarantees
            && q.seeky()
            && !q.raised(now, self.low_latency)
            && !self.asymmetric(h)
        {
            self.slice_idle.min(MIN_TT)
        } else {
            self.slice_idle
        }
    }

    /// Count sync queue `h` as active at its current weight.
    pub(super) fn count_weight(&mut self, h: u32, now: Nanos) {
        let q = &self.queues[h as usize];
        if !q.sync {
            return;
        }
        debug_assert_eq!(q.weight_slot, NO_SLOT, "queue {h} counted twice");
        let slot = weight_slot(q.level, q.raised(now, self.low_latency));
        self.weight_counts[slot] += 1;
        self.weight_mask |= 1 << slot;
        self.queues[h as usize].weight_slot = slot as u8;
    }

    /// Stop counting queue `h` (it is no longer active).
    pub(super) fn uncount_weight(&mut self, h: u32) {
        let slot = self.queues[h as usize].weight_slot;
        if slot == NO_SLOT {
            return;
        }
        let slot = usize::from(slot);
        self.weight_counts[slot] -= 1;
        if self.weight_counts[slot] == 0 {
            self.weight_mask &= !(1 << slot);
        }
        self.queues[h as usize].weight_slot = NO_SLOT;
    }
}
