//! CFQ's service: service trees, workload and queue selection, time slices,
//! dispatch admission, completion, idling and preemption (Linux
//! `cfq_select_queue`, `cfq_may_dispatch`, `cfq_completed_request`,
//! `cfq_arm_slice_timer`, `cfq_idle_slice_timer`, `cfq_should_preempt`).

use super::Cfq;
use super::queue::{ASYNC, CLOSE_THR, SYNC, SYNC_NOIDLE};
use crate::bio::{BioFlags, Nanos, PrioClass};
use crate::index::NIL;
use crate::request::{RequestId, Requests};

/// Offset that keeps service-tree keys (which may be negative) positive.
const KEY_BIAS: i64 = 1 << 62;
/// One second (Linux `HZ` in jiffies): a preempting queue goes this far
/// ahead of the first queue on its tree.
const HZ: i64 = 1_000_000_000;
/// IDLE-class queues wait this long behind the last (Linux `CFQ_IDLE_DELAY`).
const IDLE_DELAY: i64 = 200_000_000;
/// Shortest workload slice (Linux `CFQ_MIN_TT`, 2 ms).
const MIN_TT: Nanos = 2_000_000;
/// Linux `CFQ_SLICE_SCALE`.
const SLICE_SCALE: i64 = 5;

impl Cfq {
    /// Linux `cfq_prio_slice`: `base + base/5 × (4 − level)`.
    pub(super) fn prio_slice(&self, sync: bool, level: u8) -> Nanos {
        let base = self.t.slice[usize::from(sync)] as i64;
        (base + base / SLICE_SCALE * (4 - i64::from(level))).max(1) as Nanos
    }

    /// Busy queues in the class group the slice scaling looks at (RT apart
    /// from the rest), averaged as Linux does (`cfq_group_get_avg_queues`).
    fn avg_queues(&mut self, rt: bool) -> u32 {
        let busy = if rt {
            self.busy_class[PrioClass::Rt.index()]
        } else {
            self.busy_class[PrioClass::Be.index()] + self.busy_class[PrioClass::Idle.index()]
        };
        let avg = &mut self.busy_avg[usize::from(rt)];
        let (lo, hi) = ((*avg).min(busy), (*avg).max(busy));
        *avg = (3 * hi + lo + 2) / 4;
        *avg
    }

    /// Linux `cfq_scaled_cfqq_slice`.
    pub(super) fn scaled_slice(&mut self, q: u32) -> Nanos {
        let (sync, level, class) = {
            let cq = &self.queues[q as usize];
            (cq.sync, cq.level, cq.class)
        };
        let mut slice = self.prio_slice(sync, level);
        if self.t.low_latency {
            let iq = u64::from(self.avg_queues(class == PrioClass::Rt));
            let sync_slice = self.t.slice[1];
            let expect = sync_slice.saturating_mul(iq);
            let group_slice = self.t.target_latency;
            if expect > group_slice {
                let base_low = 2 * self.t.slice_idle;
                let low = slice.min(base_low * slice / sync_slice.max(1));
                slice = (slice * group_slice / expect).max(low);
            }
        }
        slice
    }

    #[inline]
    pub(super) fn slice_used(&self, q: u32, now: Nanos) -> bool {
        let cq = &self.queues[q as usize];
        !cq.flags.slice_new && now >= cq.slice_end
    }

    /// Put `q` on its service tree (Linux `cfq_service_tree_add`).
    pub(super) fn service_tree_add(&mut self, q: u32, now: Nanos, add_front: bool) {
        let (class, wl) = {
            let cq = &self.queues[q as usize];
            (cq.class.index(), cq.workload())
        };
        if let Some((c, w)) = self.queues[q as usize].on_rr {
            self.st_forest.remove(&mut self.st[c][w], q);
        }
        let now_i = now as i64;
        let key = if class == PrioClass::Idle.index() {
            let last = self
                .st_forest
                .last(&self.st[class][wl])
                .map(|l| self.queues[l as usize].rb_key)
                .unwrap_or(now_i);
            IDLE_DELAY + last
        } else if !add_front {
            let cq = &self.queues[q as usize];
            let offset = i64::from(self.busy_queues.saturating_sub(1))
                * (self.prio_slice(true, 0) as i64 - self.prio_slice(cq.sync, cq.level) as i64);
            let key = offset + now_i - cq.slice_resid;
            self.queues[q as usize].slice_resid = 0;
            key
        } else {
            let first = self
                .st_forest
                .first(&self.st[class][wl])
                .map(|f| self.queues[f as usize].rb_key)
                .unwrap_or(now_i);
            first - HZ
        };
        let cq = &mut self.queues[q as usize];
        cq.rb_key = key;
        cq.on_rr = Some((class, wl));
        self.st_forest
            .insert(&mut self.st[class][wl], q, (key + KEY_BIAS) as u64);
    }

    /// `q` becomes busy (Linux `cfq_add_cfqq_rr`).
    pub(super) fn add_rr(&mut self, q: u32, now: Nanos) {
        let (class, sync) = {
            let cq = &self.queues[q as usize];
            (cq.class.index(), cq.sync)
        };
        self.busy_queues += 1;
        self.busy_class[class] += 1;
        if sync {
            self.busy_sync_queues += 1;
        } else {
            self.busy_async += 1;
        }
        self.service_tree_add(q, now, false);
    }

    /// `q` is no longer busy (Linux `cfq_del_cfqq_rr`).
    pub(super) fn del_rr(&mut self, q: u32) {
        let Some((c, w)) = self.queues[q as usize].on_rr.take() else {
            return;
        };
        self.st_forest.remove(&mut self.st[c][w], q);
        let cq = &self.queues[q as usize];
        self.busy_queues -= 1;
        self.busy_class[cq.class.index()] -= 1;
        if cq.sync {
            self.busy_sync_queues -= 1;
        } else {
            self.busy_async -= 1;
        }
    }

    /// Pick the class and workload type to serve (Linux
    /// `choose_wl_class_and_type`).
    fn choose_workload(&mut self, now: Nanos) {
        let prev_class = self.serving_class;
        self.serving_class = if self.busy_class[PrioClass::Rt.index()] > 0 {
            PrioClass::Rt.index()
        } else if self.busy_class[PrioClass::Be.index()] > 0 {
            PrioClass::Be.index()
        } else {
            PrioClass::Idle.index()
        };
        if self.serving_class == PrioClass::Idle.index() {
            self.serving_type = SYNC;
            for w in [ASYNC, SYNC_NOIDLE, SYNC] {
                if !self.st[self.serving_class][w].is_empty() {
                    self.serving_type = w;
                }
            }
            self.workload_expires = now + 1_000_000;
            return;
        }
        if prev_class != self.serving_class {
            self.workload_expires = now;
        }
        let class = self.serving_class;
        if !self.st[class][self.serving_type].is_empty() && now < self.workload_expires {
            return;
        }
        // The workload type whose first queue has the lowest key.
        let mut best: Option<(i64, usize)> = None;
        for w in [ASYNC, SYNC_NOIDLE, SYNC] {
            if let Some(f) = self.st_forest.first(&self.st[class][w]) {
                let key = self.queues[f as usize].rb_key;
                if best.is_none_or(|(k, _)| key < k) {
                    best = Some((key, w));
                }
            }
        }
        self.serving_type = best.map_or(SYNC, |(_, w)| w);
        let count = u64::from(self.st[class][self.serving_type].len() as u32);
        let busy_in_class = if class == PrioClass::Rt.index() {
            self.busy_class[class]
        } else {
            self.busy_class[PrioClass::Be.index()] + self.busy_class[PrioClass::Idle.index()]
        };
        let avg = self
            .avg_queues(class == PrioClass::Rt.index())
            .max(busy_in_class);
        let mut slice = self.t.target_latency * count / u64::from(avg.max(1));
        if self.serving_type == ASYNC {
            let tmp = self.t.target_latency * u64::from(self.busy_async)
                / u64::from(self.busy_queues.max(1));
            slice = slice.min(tmp) * self.t.slice[0] / self.t.slice[1].max(1);
        } else {
            slice = slice.max(2 * self.t.slice_idle);
        }
        self.workload_expires = now + slice.max(MIN_TT);
    }

    /// Make `q` the active queue (Linux `__cfq_set_active_queue`).
    fn set_active(&mut self, q: u32) {
        self.idle_until = None;
        let cq = &mut self.queues[q as usize];
        cq.slice_start = 0;
        cq.slice_end = 0;
        cq.slice_dispatch = 0;
        cq.flags.wait_request = false;
        cq.flags.must_dispatch = false;
        cq.flags.fifo_checked = false;
        cq.flags.slice_new = true;
        self.active = q;
    }

    /// End the active queue's slice (Linux `__cfq_slice_expired`).
    pub(super) fn slice_expired(&mut self, now: Nanos, timed_out: bool) {
        let q = self.active;
        if q == NIL {
            return;
        }
        self.idle_until = None;
        let resid = if timed_out {
            Some(if self.queues[q as usize].flags.slice_new {
                self.scaled_slice(q) as i64
            } else {
                self.queues[q as usize].slice_end as i64 - now as i64
            })
        } else {
            None
        };
        let cq = &mut self.queues[q as usize];
        cq.flags.wait_request = false;
        cq.flags.wait_busy = false;
        if let Some(r) = resid {
            cq.slice_resid = r;
        }
        if cq.on_rr.is_some() && cq.sort.is_empty() {
            self.del_rr(q);
        }
        if self.queues[q as usize].on_rr.is_some() {
            self.service_tree_add(q, now, false);
        }
        self.active = NIL;
        self.maybe_free(q);
    }

    /// Linux `cfq_should_idle`.
    pub(super) fn should_idle(&self, q: u32) -> bool {
        let cq = &self.queues[q as usize];
        if self.t.slice_idle == 0 || cq.class == PrioClass::Idle {
            return false;
        }
        // The fix: no idling at all on a seeky queue while it does not pay.
        if !self.t.deep_seeky_idle && !self.trial.idle && cq.seeky() {
            return false;
        }
        if cq.flags.idle_window && self.rotational {
            return true;
        }
        // The last queue on its service tree, sync, with a short think time.
        let alone = match cq.on_rr {
            Some((c, w)) => self.st[c][w].len() == 1,
            None => {
                let (c, w) = (cq.class.index(), cq.workload());
                self.st[c][w].is_empty()
            }
        };
        alone && cq.sync && !(cq.ttime.valid() && cq.ttime.mean > self.t.slice_idle)
    }

    /// Linux `cfq_should_wait_busy` (one group: the group is the device).
    fn should_wait_busy(&self, q: u32, now: Nanos) -> bool {
        if self.busy_queues > 1 {
            return false;
        }
        let cq = &self.queues[q as usize];
        if cq.ttime.valid() && cq.ttime.mean > self.t.group_idle.max(self.t.slice_idle) {
            return false;
        }
        if self.slice_used(q, now) {
            return true;
        }
        cq.ttime.valid() && cq.slice_end.saturating_sub(now) < cq.ttime.mean
    }

    /// Linux `cfq_select_queue`: the queue to dispatch from, or `None` to
    /// wait (for a completion, or the idle timer).
    pub(super) fn select_queue(&mut self, now: Nanos) -> Option<u32> {
        let q = self.active;
        if q != NIL {
            if self.queued == 0 {
                return None;
            }
            let keep = 'decide: {
                let cq = &self.queues[q as usize];
                if cq.flags.wait_busy && !cq.sort.is_empty() {
                    break 'decide false;
                }
                if self.slice_used(q, now) && !cq.flags.must_dispatch {
                    if self.busy_queues <= 1
                        && cq.sort.is_empty()
                        && cq.dispatched > 0
                        && self.should_wait_busy(q, now)
                    {
                        return None;
                    }
                    break 'decide false;
                }
                if !cq.sort.is_empty() {
                    return Some(q);
                }
                if self.idle_until.is_some() {
                    return None;
                }
                // 2011: a deep seeky queue is let go if the device is much
                // faster than the queue can deliver (its slice is new, or
                // more than half is left). The fix decides this at enqueue.
                if self.t.deep_seeky_idle {
                    let cq = &self.queues[q as usize];
                    let half_left = cq.flags.slice_new
                        || cq.slice_end.saturating_sub(now) > now.saturating_sub(cq.slice_start);
                    if cq.seeky() && cq.flags.idle_window && half_left {
                        let cq = &mut self.queues[q as usize];
                        cq.flags.deep = false;
                        cq.flags.idle_window = false;
                    }
                }
                let cq = &self.queues[q as usize];
                if cq.dispatched > 0 && self.should_idle(q) {
                    return None;
                }
                if self.t.group_idle > 0
                    && self.busy_queues <= 1
                    && cq.dispatched > 0
                    && !(cq.ttime.valid() && cq.ttime.mean > self.t.group_idle)
                {
                    return None;
                }
                false
            };
            if !keep {
                self.slice_expired(now, false);
            }
        }
        self.choose_workload(now);
        let next = self
            .st_forest
            .first(&self.st[self.serving_class][self.serving_type])?;
        self.set_active(next);
        Some(next)
    }

    /// Linux `cfq_may_dispatch`.
    fn may_dispatch(&self, q: u32, now: Nanos) -> bool {
        let cq = &self.queues[q as usize];
        if self.should_idle(q) && self.rq_in_flight[0] > 0 {
            return false;
        }
        if self.rq_in_flight[1] > 0 && !cq.sync {
            return false;
        }
        let mut max = (self.t.quantum / 2).max(1);
        if cq.class == PrioClass::Idle {
            max = 1;
        }
        if cq.dispatched >= max {
            if cq.class == PrioClass::Idle {
                return false;
            }
            let promote_sync = cq.sync && self.busy_sync_queues == 1;
            let used_soon = cq.flags.slice_new
                || now + self.t.slice_idle * u64::from(cq.dispatched) > cq.slice_end;
            if self.busy_queues > 1 && used_soon && !promote_sync {
                return false;
            }
            max = if self.busy_queues <= 1 || promote_sync {
                u32::MAX
            } else {
                self.t.quantum
            };
        }
        if !cq.sync && self.t.low_latency {
            let since = now.saturating_sub(self.last_delayed_sync);
            let mut depth = (since / self.t.slice[1].max(1)) as u32;
            if depth == 0 && cq.dispatched == 0 {
                depth = 1;
            }
            max = max.min(depth);
        }
        cq.dispatched < max
    }

    /// Dispatch one request of `q`, if allowed (Linux `cfq_dispatch_request`
    /// and the bookkeeping of `cfq_dispatch_requests`).
    pub(super) fn dispatch_from(&mut self, rqs: &Requests, q: u32, now: Nanos) -> Option<u32> {
        if self.queues[q as usize].sort.is_empty() {
            return None;
        }
        let expired = self.check_fifo(q, now);
        if expired.is_some() {
            self.queues[q as usize].flags.must_dispatch = true;
        }
        if !self.may_dispatch(q, now) {
            return None;
        }
        let rq = expired.unwrap_or(self.queues[q as usize].next_rq);
        if rq == NIL {
            return None;
        }
        self.remove_rq(rqs, rq);
        let r = &rqs[RequestId::from_raw(rq)];
        self.last_position = r.end();
        if self.rq_in_driver == 0 {
            self.parallelism_idle(now);
        }
        self.rq_in_driver += 1;
        let sync = usize::from(self.queues[q as usize].sync);
        self.rq_in_flight[sync] += 1;
        let cq = &mut self.queues[q as usize];
        cq.dispatched += 1;
        cq.slice_dispatch += 1;
        cq.flags.must_dispatch = false;
        // An async queue expires when it has dispatched its share; an IDLE
        // queue after every request.
        let max_rq = 2 * self.t.slice_async_rq * (8 - u32::from(cq.level.min(7)));
        if self.busy_queues > 1
            && ((!cq.sync && cq.slice_dispatch >= max_rq) || cq.class == PrioClass::Idle)
        {
            cq.slice_end = now + 1;
            cq.flags.slice_new = false;
            self.slice_expired(now, false);
        }
        Some(rq)
    }

    /// Linux `cfq_check_fifo`: the FIFO head if it expired, once a slice.
    fn check_fifo(&mut self, q: u32, now: Nanos) -> Option<u32> {
        let cq = &mut self.queues[q as usize];
        if cq.flags.fifo_checked {
            return None;
        }
        cq.flags.fifo_checked = true;
        let head = cq.fifo.front()?;
        (now >= self.fifo_time[head as usize]).then_some(head)
    }

    fn parallelism_idle(&mut self, now: Nanos) {
        self.trial.busy(now);
    }

    /// A request of ours completed (Linux `cfq_completed_request`).
    pub(super) fn request_done(&mut self, rqs: &Requests, rq: RequestId, now: Nanos) {
        let q = self.rq_queue[rq.index()];
        self.rq_in_driver -= 1;
        self.trial.completed(now, self.rq_in_driver == 0);
        let sync = self.queues[q as usize].sync;
        self.rq_in_flight[usize::from(sync)] -= 1;
        self.queues[q as usize].dispatched -= 1;
        if sync {
            self.queues[q as usize].ttime.last_end_request = now;
            if rqs[rq].alloc_time() + self.t.fifo_expire[1] >= now {
                self.last_delayed_sync = now;
            }
        }
        if self.active == q {
            let empty = self.queues[q as usize].sort.is_empty();
            if self.queues[q as usize].flags.slice_new {
                let slice = self.scaled_slice(q);
                let cq = &mut self.queues[q as usize];
                cq.slice_start = now;
                cq.slice_end = now + slice;
                cq.flags.slice_new = false;
            }
            if self.should_wait_busy(q, now) {
                let extend = if self.t.slice_idle > 0 {
                    self.t.slice_idle
                } else {
                    self.t.group_idle
                };
                let cq = &mut self.queues[q as usize];
                cq.slice_end = now + extend;
                cq.flags.wait_busy = true;
            }
            if self.slice_used(q, now) || self.queues[q as usize].class == PrioClass::Idle {
                self.slice_expired(now, true);
            } else if sync && empty {
                self.arm_slice_timer(now);
            }
        }
        self.maybe_free(q);
    }

    /// Linux `cfq_arm_slice_timer`: start waiting for the active queue's
    /// next request.
    fn arm_slice_timer(&mut self, now: Nanos) {
        let q = self.active;
        let mut group = false;
        if !self.should_idle(q) {
            if self.t.group_idle > 0 {
                group = true;
            } else {
                return;
            }
        }
        let cq = &self.queues[q as usize];
        if cq.dispatched > 0 || cq.exited {
            return;
        }
        if cq.ttime.valid() && cq.slice_end.saturating_sub(now) < cq.ttime.mean {
            return;
        }
        if group
            && (self.busy_queues > 1 || (cq.ttime.valid() && cq.ttime.mean > self.t.group_idle))
        {
            return;
        }
        let wait = if group {
            self.t.group_idle
        } else {
            self.t.slice_idle
        };
        if wait == 0 {
            return;
        }
        self.queues[q as usize].flags.wait_request = true;
        self.idle_until = Some(now + wait);
    }

    /// The idle timer ran out (Linux `cfq_idle_slice_timer`).
    pub(super) fn idle_timer_fired(&mut self, now: Nanos) {
        self.idle_until = None;
        let q = self.active;
        if q == NIL {
            return;
        }
        let cq = &self.queues[q as usize];
        if cq.flags.must_dispatch {
            return;
        }
        if !self.slice_used(q, now) {
            if self.busy_queues == 0 {
                return;
            }
            if !self.queues[q as usize].sort.is_empty() {
                return;
            }
            // The idle did not pay off: forget that the queue was deep.
            self.queues[q as usize].flags.deep = false;
        }
        self.slice_expired(now, false);
    }

    /// Linux `cfq_should_preempt`: may queue `new` (which just got `rq`)
    /// take over from the active queue?
    pub(super) fn should_preempt(
        &self,
        new: u32,
        rqs: &Requests,
        rq: RequestId,
        now: Nanos,
    ) -> bool {
        let active = self.active;
        if active == NIL {
            return false;
        }
        let n = &self.queues[new as usize];
        let a = &self.queues[active as usize];
        let r = &rqs[rq];
        if n.class == PrioClass::Idle {
            return false;
        }
        if a.class == PrioClass::Idle {
            return true;
        }
        if a.class == PrioClass::Rt && n.class != PrioClass::Rt {
            return false;
        }
        if r.is_sync() && !a.sync && !a.flags.must_dispatch {
            return true;
        }
        if self.slice_used(active, now) {
            return true;
        }
        if self.serving_type == SYNC_NOIDLE
            && n.workload() == SYNC_NOIDLE
            && n.on_rr.is_some_and(|(c, w)| self.st[c][w].len() == 2)
            && a.sort.is_empty()
        {
            return true;
        }
        if r.flags().contains(BioFlags::META) && a.prio_pending == 0 {
            return true;
        }
        if n.class == PrioClass::Rt && a.class != PrioClass::Rt {
            return true;
        }
        if a.sort.is_empty() && !self.should_idle(active) {
            return true;
        }
        if !a.flags.wait_request {
            return false;
        }
        r.sector().abs_diff(self.last_position) <= CLOSE_THR
    }

    /// Linux `cfq_preempt_queue`: `new` goes next.
    pub(super) fn preempt(&mut self, new: u32, now: Nanos) {
        let old_type = self.queues[self.active as usize].workload();
        self.slice_expired(now, true);
        if old_type != self.queues[new as usize].workload() {
            // The workload changes: choose it afresh.
            self.workload_expires = now;
        }
        if self.queues[new as usize].on_rr.is_some() {
            self.service_tree_add(new, now, true);
        }
        let cq = &mut self.queues[new as usize];
        cq.slice_end = 0;
        cq.flags.slice_new = true;
    }
}
