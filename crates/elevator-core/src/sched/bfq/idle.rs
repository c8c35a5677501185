//! Idling: whether the device waits for the queue in service when it has
//! nothing queued, and for how long; and the counters of active sync queues
//! by weight that tell whether idling is needed for guarantees. (A queue's
//! think time and seekiness are kept in `bfqq.rs`; `dispatch` and
//! `completed`, in `mod.rs`, start, end and give up the wait.)
//!
//! When the queue in service has dispatched everything, BFQ may keep the
//! device for it rather than switch: it waits for its requests in flight to
//! complete, and after the last completion waits up to `slice_idle` for its
//! next request (dispatch answers [`SchedDispatch::WaitUntil`]); a request for
//! it ends the wait, and the end of the wait expires it (too idle). A queue
//! is idled for if it is sync, not IDLE class, has a short think time (mean
//! gap between a completion and its next request, over arrivals that find it
//! with nothing pending, within `slice_idle`; no samples yet counts as short),
//! and either
//! - idling boosts throughput: the device is rotational without command
//!   queueing (`queue_depth` 1), or it is rotational or lacks queueing and the
//!   queue is not seeky (more than 4 of its last 32 requests more than 800
//!   sectors from the previous one); or
//! - idling is needed for guarantees: the active sync queues do not all have
//!   the same class, weight and raising (an asymmetric scenario), or the
//!   queue is weight-raised.
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
//! A seeky queue that is idled for only because of throughput, not raised,
//! waits at most 2 ms (Linux `BFQ_MIN_TT`). `slice_idle` is 8 ms on every
//! device, as in Linux's BFQ; on a non-rotational device with queueing the
//! rule above idles only to protect guarantees.
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

impl Bfq {
    /// Whether idling for in-service queue `h` is worth it.
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
        let boosts_throughput = (self.rotational && !self.hw_queueing)
            || ((self.rotational || !self.hw_queueing) && !q.seeky());
        let needed_for_guarantees = self.distinct_weights > 1 || q.raised(now, self.low_latency);
        boosts_throughput || needed_for_guarantees
    }

    /// How long to wait for in-service queue `h`'s next request.
    pub(super) fn idle_time(&self, h: u32, now: Nanos) -> Nanos {
        let q = &self.queues[h as usize];
        if !self.strict_guarantees
            && q.seeky()
            && !q.raised(now, self.low_latency)
            && self.distinct_weights <= 1
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
        let raised = q.raised(now, self.low_latency);
        let slot = usize::from(q.class) * 16 + usize::from(q.level) * 2 + usize::from(raised);
        self.weight_counts[slot] += 1;
        if self.weight_counts[slot] == 1 {
            self.distinct_weights += 1;
        }
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
            self.distinct_weights -= 1;
        }
        self.queues[h as usize].weight_slot = NO_SLOT;
    }
}
