//! Service slots: which queue is served next and when it preempts the one
//! in service, what a dispatch charges it, why and how its slot ends, and the
//! budget it gets for the next one. The virtual-time scheduling itself is in
//! `wf2q.rs`.
//!
//! A service slot ends (the queue "expires") when:
//! - **budget exhausted**: the next request does not fit in what is left of
//!   the budget (the first request of a slot always fits: the budget grows to
//!   it);
//! - **timeout**: `timeout_sync` has passed since the slot's first completion
//!   (so the wait for another queue's requests still in the device is not
//!   charged). The queue is charged its whole budget, whatever it used: a
//!   seeky queue that moves few sectors in its time still pays a full budget,
//!   so seeky queues get a time share rather than a sector share;
//! - **too idle**: it had nothing queued and its idle wait ran out;
//! - **tags held**: it was idled for while every tag was in use and the
//!   device empty (see `idle.rs`);
//! - **no more requests**: it has nothing queued and is not worth idling for;
//! - **preempted**: a queue of a higher class, or of the same class with a
//!   higher weight, became busy.
//!
//! It is then charged (service, or the whole budget on timeout), its finish
//! time moves to `S + charged/weight`, and it goes back to its tree (with
//! `S = F`) if it still has requests, else it goes idle keeping `F` (coming
//! back while `F > V` it restarts at `F`: no gain from going idle).
//!
//! # Budget feedback
//!
//! `max_budget` (0 = automatic: estimated peak rate × `timeout_sync`, and
//! 16384 sectors before the first estimate, Linux's default). The peak rate
//! is estimated from observed service (`rate.rs`). Each sync queue keeps its
//! own budget, starting at 2/3 of `max_budget`, kept within `[max_budget/32,
//! max_budget]`, and adjusted when it expires:
//! - budget exhausted: ×4 (it had more to do);
//! - timeout: ×2;
//! - too idle: −4 × `max_budget/32` (down to `max_budget/32`);
//! - no more requests: what it used (at least `max_budget/32`);
//! - preempted, tags held: unchanged.
//!
//! Async queues always get `max_budget`. A queue whose weight is raised gets
//! 2 × `max_budget/32` whatever its own budget (Linux
//! `__bfq_bfqq_recalc_budget`): short slots keep its latency low, and a raised
//! queue is charged little per slot, so a raised sequential reader does not
//! pay for a whole budget at once and then wait behind raised random writers
//! that are each charged only their few sectors per slot.

use super::bfqq::{NEVER, Place, REQUESTS_WITHIN_TIMER, Raise};
use super::rate::SEQ_DISTANCE;
use super::{Bfq, SEC, raise};
use crate::bio::Nanos;
use crate::index::NIL;
use crate::request::{RequestId, Requests};

/// `max_budget` before the peak rate is known (Linux
/// `bfq_default_max_budget`), sectors.
const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
/// Smallest automatic `max_budget`, sectors.
const MIN_AUTO_MAX_BUDGET: u64 = 256;
/// The smallest budget is `max_budget` / this.
const MIN_BUDGET_DIVISOR: u64 = 32;
/// A raised queue's budget, in minimum budgets (Linux: 2).
const RAISED_BUDGET_MINS: u64 = 2;
/// Async requests are charged this many times their size.
const ASYNC_CHARGE_FACTOR: u64 = 3;

/// Why a service slot ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Expiry {
    BudgetExhausted,
    Timeout,
    TooIdle,
    NoMoreRequests,
    Preempted,
    /// Idling, with every tag held and nothing in the device.
    TagsHeld,
}

impl Bfq {
    /// The largest budget now, sectors.
    fn max_budget(&self) -> u64 {
        if self.user_max_budget != 0 {
            return self.user_max_budget;
        }
        match self.rate.peak() {
            Some(peak) => ((u128::from(peak) * u128::from(self.timeout_sync) / u128::from(SEC))
                as u64)
                .max(MIN_AUTO_MAX_BUDGET),
            None => DEFAULT_MAX_BUDGET,
        }
    }

    /// The budget queue `h` gets for its next slot at `now`.
    fn queue_budget(&self, h: u32, now: Nanos) -> u64 {
        let q = &self.queues[h as usize];
        let max = self.max_budget();
        if !q.sync {
            return max;
        }
        let min = (max / MIN_BUDGET_DIVISOR).max(1);
        if q.raised(now, self.low_latency) {
            return (RAISED_BUDGET_MINS * min).min(max);
        }
        let b = if q.max_budget == 0 {
            max * 2 / 3
        } else {
            q.max_budget
        };
        b.clamp(min, max)
    }

    /// What dispatching `sectors` from queue `h` costs it.
    #[inline]
    pub(super) fn charge(&self, h: u32, sectors: u32) -> u64 {
        let s = u64::from(sectors.max(1));
        if self.queues[h as usize].sync {
            s
        } else {
            s * ASYNC_CHARGE_FACTOR
        }
    }

    /// Queue `h` just got its first queued request (of `sectors`) and is not in
    /// service: decide on weight raising and put it on its tree.
    pub(super) fn activate(&mut self, h: u32, sectors: u32, now: Nanos) {
        self.raise_on_activation(h, now);
        let slice_idle = self.slice_idle;
        let q = &mut self.queues[h as usize];
        if !q.io_bound {
            // Back to I/O-bound after enough arrivals right after its
            // completions.
            if q.last_end_request != NEVER && now < q.last_end_request.saturating_add(slice_idle) {
                q.requests_within_timer += 1;
                if q.requests_within_timer >= REQUESTS_WITHIN_TIMER {
                    q.io_bound = true;
                }
            } else {
                q.requests_within_timer = 0;
            }
        }
        let history = !q.fresh;
        q.fresh = false;
        let budget = self.queue_budget(h, now).max(self.charge(h, sectors));
        let weight = self.weight(h, now);
        self.queues[h as usize].budget = budget;
        self.queues[h as usize].place = Place::Busy;
        self.wf2q.activate(h, budget, weight, history);
        self.count_weight(h, now);
        self.maybe_preempt(h, now);
    }

    /// Busy queue `h` preempts the queue in service if it has a higher class,
    /// or the same class and a higher weight, or if the queue in service has
    /// nothing queued and, now that `h` is active, is no longer worth idling
    /// for (Linux: `!bfq_better_to_idle` on a queue becoming busy).
    fn maybe_preempt(&mut self, h: u32, now: Nanos) {
        let s = self.in_service;
        if s == NIL || s == h {
            return;
        }
        let (q, sq) = (&self.queues[h as usize], &self.queues[s as usize]);
        let preempt = q.class < sq.class
            || (q.class == sq.class && self.wf2q.weight(h) > self.wf2q.weight(s))
            || (sq.queued == 0 && !self.strict_guarantees && !self.may_idle(s, now));
        if preempt {
            self.expire(s, Expiry::Preempted, now);
        }
    }

    /// Put the next queue in service; false if no queue is busy.
    pub(super) fn start_next(&mut self) -> bool {
        for class in 0..3 {
            if !self.wf2q.has_busy(class) {
                continue;
            }
            if let Some(h) = self.wf2q.pick(class) {
                let q = &mut self.queues[h as usize];
                debug_assert!(q.place == Place::Busy && q.queued > 0);
                // Its service is 0 unless injection served it while busy.
                q.place = Place::InService;
                q.fifo_checked = false;
                q.budget_timeout = NEVER;
                q.idle_until = NEVER;
                self.in_service = h;
                return true;
            }
        }
        false
    }

    /// Hand request `id` of in-service queue `h` to the device.
    pub(super) fn take(
        &mut self,
        rqs: &Requests,
        h: u32,
        id: u32,
        charge: u64,
        now: Nanos,
    ) -> RequestId {
        let rq = RequestId::from_raw(id);
        if h == self.in_service {
            self.injection_on_dispatch(id);
        }
        let r = &rqs[rq];
        let q = &mut self.queues[h as usize];
        self.sort.remove(&mut q.sort, id);
        self.fifo.remove(&mut q.fifo, id);
        q.queued -= 1;
        q.dispatched += 1;
        q.service += charge;
        q.service_from_backlogged = q.service_from_backlogged.saturating_add(charge);
        q.idle_until = NEVER;
        raise::charged(q, charge);
        let class = usize::from(q.class);
        self.queued -= 1;
        let sequential = r.sector().abs_diff(self.last_pos) <= SEQ_DISTANCE;
        self.rate.dispatched(now, self.dispatched, sequential);
        self.dispatched += 1;
        self.last_pos = r.end();
        self.wf2q.served(class, charge);
        rq
    }

    /// End the service slot of in-service queue `h`.
    pub(super) fn expire(&mut self, h: u32, why: Expiry, now: Nanos) {
        debug_assert_eq!(self.in_service, h, "expiring a queue not in service");
        self.in_service = NIL;
        let max = self.max_budget();
        let min = (max / MIN_BUDGET_DIVISOR).max(1);
        let budget = self.queue_budget(h, now);
        let q = &mut self.queues[h as usize];
        let served = q.service;
        let charged = if why == Expiry::Timeout {
            served.max(q.budget)
        } else {
            served
        };
        q.max_budget = if q.sync {
            match why {
                Expiry::BudgetExhausted => budget.saturating_mul(4).min(max),
                Expiry::Timeout => budget.saturating_mul(2).min(max),
                Expiry::TooIdle if budget > 5 * min => budget - 4 * min,
                Expiry::TooIdle => min,
                Expiry::NoMoreRequests => served.clamp(min, max),
                Expiry::Preempted | Expiry::TagsHeld => budget,
            }
        } else {
            max
        };
        if why == Expiry::TooIdle && served <= q.budget / 5 {
            q.io_bound = false;
        }
        q.service = 0;
        q.idle_until = NEVER;
        q.budget_timeout = NEVER;
        if q.raise != Raise::Off && !q.raised(now, self.low_latency) {
            q.raise = Raise::Off;
        }
        let class = usize::from(q.class);
        if charged > served {
            self.wf2q.served(class, charged - served);
        }
        self.uncount_weight(h);
        if self.queues[h as usize].queued > 0 {
            let budget = self.queue_budget(h, now);
            let weight = self.weight(h, now);
            let q = &mut self.queues[h as usize];
            q.budget = budget;
            q.place = Place::Busy;
            self.wf2q.requeue(h, charged, budget, weight);
            self.count_weight(h, now);
        } else {
            self.wf2q.deactivate(h, charged);
            self.went_idle(h, now);
            let q = &mut self.queues[h as usize];
            if q.dispatched == 0 {
                self.release(h);
            } else {
                q.place = Place::Idle;
            }
        }
    }
}
