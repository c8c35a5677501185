//! `cfq`: Completely Fair Queueing, as Linux had it from 2.6.33 to 4.20
//! (single cgroup), with idling, including its idling on deep seeky queues
//! (slow on fast RAIDs) and a fix for it (`deep_seeky_idle`).
//!
//! **Queues.** Each process (I/O context) has a queue for its synchronous
//! requests (reads, O_DIRECT writes); asynchronous requests share one queue
//! per priority. A queue keeps its requests in sector order and in a FIFO
//! (deadline `fifo_expire_sync` / `fifo_expire_async`, checked once a slice).
//! The next request follows the head: the nearest one ahead, or one behind
//! within `back_seek_max` at `back_seek_penalty` times the cost; sync before
//! async, metadata before data.
//!
//! **Service trees.** Busy queues wait on trees per class (RT, BE, IDLE) and
//! workload type (ASYNC; SYNC_NOIDLE for sync queues without an idle window;
//! SYNC), keyed by a time that grows with their arrival and with lower
//! priority. The serving class is RT if any RT queue is busy, else BE, else
//! IDLE; within it a workload type is served for a slice of `target_latency`
//! in proportion to its queues, then the type whose first queue has waited
//! longest. The first queue of the chosen tree gets a **time slice**:
//! `slice_sync` (or `slice_async`) scaled by priority (`base + base/5 × (4 −
//! level)`, 180..40 ms for sync levels 0..7), and with `low_latency` shrunk so
//! that all busy queues fit in `target_latency`, but never below
//! `2 × slice_idle × slice / slice_sync`. The slice starts when its first
//! request completes. A queue dispatches up to `quantum / 2` requests at once
//! (more when it is alone, up to `quantum` early in its slice); an async queue
//! at most `2 × slice_async_rq × (8 − level)` per slice, and with `low_latency`
//! its depth ramps up only as long as no sync I/O was delayed.
//!
//! **Idling.** When the active sync queue runs out of requests, CFQ waits up
//! to `slice_idle` for its process's next request instead of moving on, if
//! the queue has an idle window (or is alone on its tree). The idle window
//! (decided at each enqueue): off if `slice_idle` is 0, the process has gone,
//! or the queue is **seeky** (more than 4 of its last 32 requests more than
//! 800 sectors from the previous) and not **deep**; otherwise on iff its
//! mean think time is at most `slice_idle`. A queue is marked deep when it has
//! 4 or more requests queued. `group_idle` idles for the last queue of the
//! group when the queue itself may not. A wait is given up (the slice
//! expires, keeping its residual like a preempted one) when every tag is in
//! use and nothing CFQ dispatched is in the device: other queues' requests
//! hold the tags, the process cannot allocate the request waited for, and
//! only the timer would end the wait. (Linux's CFQ let the process of the
//! queue it idled for allocate past `nr_requests`, `ELV_MQUEUE_MUST`; here tag
//! waiters stand in the engines' first-come line.)
//!
//! **Preemption** of the active queue by a new request's queue, in order: never
//! by an IDLE-class queue; always of an IDLE-class queue; never of an RT queue
//! by a non-RT one; yes if the request is sync and the active queue async; yes
//! if the active slice is used up; yes if both are SYNC_NOIDLE, that tree has
//! 2 queues and the active queue is empty; yes for a metadata request when the
//! active queue has none; yes if the new queue is RT and the active one not;
//! yes if the active queue is empty and should not idle; else yes only if the
//! active queue is waiting (idle timer running) and the request is within 8192
//! sectors of the head. A preempted queue keeps its residual slice.
//!
//! **The 2011 behaviour and the fix** (tunable `deep_seeky_idle`):
//! - `deep_seeky_idle=1` (Linux, the default): a queue once marked deep keeps
//!   its idle window even when seeky. The flag is cleared only when an idle
//!   wait times out with nothing queued, or when the active queue runs dry
//!   while seeky, idling, and with its slice new or more than half left ("the
//!   device is faster than the queue can deliver"). Between marking and
//!   clearing, CFQ idles on the queue and no other queue may preempt it: on a
//!   fast RAID, eight processes doing small O_DIRECT writes get about 30% less
//!   than with noop (`elevator experiment cfq-idling`). The clearing rule can
//!   also judge a slow disk fast.
//! - `deep_seeky_idle=0` (the fix): whether a seeky queue may idle is decided
//!   when each request is queued, from a measurement of the device rather than
//!   of the queue's slice. Busy time is cut into 200 ms windows in which
//!   seeky queues alternately may and may not idle; the device's completions
//!   per busy second are averaged per mode, the faster mode is kept, and the
//!   other is tried again one window in 32. When idling is not paying (the
//!   device serves requests faster than one seeky queue supplies them: a
//!   RAID, whose other disks stand still while CFQ waits on one process), a
//!   seeky queue gets no idle window and is not marked deep, so other queues
//!   may run and preempt at once. The slice-based clearing rule, which can
//!   misjudge a slow disk as fast, is not used.
//!
//! Tunables (Linux names and defaults; times in ms):
//! `quantum` 8, `fifo_expire_sync` 125, `fifo_expire_async` 250,
//! `back_seek_max` 16384 (KiB), `back_seek_penalty` 2, `slice_sync` 100,
//! `slice_async` 40, `slice_async_rq` 2, `slice_idle` 8 (0 on non-rotational
//! devices), `group_idle` 8, `low_latency` 1, `target_latency` 300; and
//! elevator's `deep_seeky_idle` 1.
//!
//! Not modelled: cgroups (one group), close cooperators (queue merging),
//! `REQ_NOIDLE`, hardware-queue detection beyond the device's queue depth.

mod queue;
mod service;

use queue::{CfqQueue, SECT_THR_NONROT, SEEK_THR};

use super::{MergeKind, SchedDispatch, Scheduler};
use crate::bio::{Bio, BioFlags, IoContext, Nanos, PrioClass};
use crate::index::{IdMap, ListLinks, NIL, RbForest, RbRoot};
use crate::request::{RequestId, Requests};
use crate::tunable::{self, Tunable, TunableSpec, Unit, specs, tunable};

/// CFQ's tunables, declared once: listing, defaults, get and set come from
/// here. Times are kept in nanoseconds, `back_seek_max` in sectors; the
/// ranges of the counts keep them within u32.
const TABLE: [Tunable<Tunables>; 13] = [
    tunable!(count, "quantum", 8, 1, 65536, Unit::Count,
        "requests a queue dispatches at once, at most", t => t.quantum),
    tunable!(ms, "fifo_expire_sync", 125, 1, 3_600_000, Unit::Millis,
        "deadline of a sync request", t => t.fifo_expire[1]),
    tunable!(ms, "fifo_expire_async", 250, 1, 3_600_000, Unit::Millis,
        "deadline of an async request", t => t.fifo_expire[0]),
    Tunable::new(
        TunableSpec::new(
            "back_seek_max",
            16384,
            0,
            1 << 30,
            Unit::KiB,
            "longest backward seek taken for the next request",
        ),
        |t| t.back_max / 2,
        |t, v| t.back_max = v * 2,
    ),
    tunable!(value, "back_seek_penalty", 2, 1, 1000, Unit::Count,
        "cost of a backward seek against a forward one", t => t.back_penalty),
    tunable!(ms, "slice_sync", 100, 1, 3_600_000, Unit::Millis,
        "time slice of a sync queue (priority 4)", t => t.slice[1]),
    tunable!(ms, "slice_async", 40, 1, 3_600_000, Unit::Millis,
        "time slice of an async queue (priority 4)", t => t.slice[0]),
    tunable!(count, "slice_async_rq", 2, 1, 65536, Unit::Count,
        "async requests per slice, scaled by priority", t => t.slice_async_rq),
    tunable!(ms, "slice_idle", 8, 0, 3_600_000, Unit::Millis,
        "wait for a sync queue's next request (0 on non-rotational)", t => t.slice_idle),
    tunable!(ms, "group_idle", 8, 0, 3_600_000, Unit::Millis,
        "wait for the group's next request", t => t.group_idle),
    tunable!(flag, "low_latency", 1, 0, 1, Unit::Bool,
        "fit every busy queue's slice in target_latency", t => t.low_latency),
    tunable!(ms, "target_latency", 300, 1, 3_600_000, Unit::Millis,
        "time in which every busy queue should be served", t => t.target_latency),
    tunable!(flag, "deep_seeky_idle", 1, 0, 1, Unit::Bool,
        "1: seeky queues once seen deep may idle (Linux, 2011); 0: only while idling is measured to pay (the fix)", t => t.deep_seeky_idle),
];

/// CFQ's tunables, with Linux defaults.
pub const TUNABLES: [TunableSpec; 13] = specs(&TABLE);

/// Tunable values, in nanoseconds where they are times.
#[derive(Clone, Copy, Debug, Default)]
struct Tunables {
    pub quantum: u32,
    /// FIFO deadline: [async, sync].
    pub fifo_expire: [Nanos; 2],
    /// back_seek_max in sectors.
    pub back_max: u64,
    pub back_penalty: u64,
    /// Base slice: [async, sync].
    pub slice: [Nanos; 2],
    pub slice_async_rq: u32,
    pub slice_idle: Nanos,
    pub group_idle: Nanos,
    pub low_latency: bool,
    pub target_latency: Nanos,
    pub deep_seeky_idle: bool,
}

impl Tunables {
    /// Linux's defaults, from the table.
    fn linux() -> Tunables {
        let mut t = Tunables::default();
        tunable::apply_defaults(&TABLE, &mut t);
        t
    }
}

/// The fix's measurement: does idling on seeky queues pay on this device?
/// Busy time is cut into windows of [`TRIAL_WINDOW`]; in each, seeky queues
/// either may idle (as in 2011) or may not, and the device's completions per
/// busy second are averaged per mode. Until both modes have two windows they
/// alternate; then the faster mode is used, and the other is tried again one
/// window in [`PROBE_EVERY`], so that a change in the device or workload is
/// noticed.
#[derive(Clone, Copy, Debug)]
pub(super) struct IdleTrial {
    /// Whether seeky queues may idle in the current window.
    pub idle: bool,
    busy_in_window: Nanos,
    busy_since: Option<Nanos>,
    completions: u32,
    /// Mean completions per busy second: [without idling, with idling].
    rate: [f64; 2],
    windows: [u32; 2],
    total: u64,
}

/// Busy time per measurement window of the fix.
pub(super) const TRIAL_WINDOW: Nanos = 200_000_000;
/// Once settled, the other mode is tried again one window in this many.
pub(super) const PROBE_EVERY: u64 = 32;

impl Default for IdleTrial {
    fn default() -> IdleTrial {
        IdleTrial {
            idle: true,
            busy_in_window: 0,
            busy_since: None,
            completions: 0,
            rate: [0.0; 2],
            windows: [0; 2],
            total: 0,
        }
    }
}

impl IdleTrial {
    /// The device got its first request in flight at `now`.
    pub fn busy(&mut self, now: Nanos) {
        self.busy_since = Some(now);
    }

    /// A request completed at `now`; `idle_after` says whether the device has
    /// nothing in flight afterwards.
    pub fn completed(&mut self, now: Nanos, idle_after: bool) {
        self.completions += 1;
        if let Some(since) = self.busy_since {
            self.busy_in_window += now.saturating_sub(since);
            self.busy_since = (!idle_after).then_some(now);
        }
        if self.busy_in_window >= TRIAL_WINDOW {
            self.close();
        }
    }

    fn close(&mut self) {
        let m = usize::from(self.idle);
        let r = f64::from(self.completions) * 1e9 / self.busy_in_window as f64;
        self.windows[m] = self.windows[m].saturating_add(1);
        // Average over the last few windows of this mode.
        self.rate[m] += (r - self.rate[m]) / f64::from(self.windows[m].min(4));
        self.total += 1;
        self.completions = 0;
        self.busy_in_window = 0;
        self.idle = if self.windows[0] < 2 || self.windows[1] < 2 {
            !self.idle
        } else {
            let best = self.rate[1] >= self.rate[0];
            if self.total.is_multiple_of(PROBE_EVERY) {
                !best
            } else {
                best
            }
        };
    }
}

/// The CFQ scheduler.
#[derive(Clone, Debug)]
pub struct Cfq {
    t: Tunables,
    rotational: bool,
    /// Per request: its queue, its FIFO deadline.
    rq_queue: Vec<u32>,
    fifo_time: Vec<Nanos>,
    rq_sort: RbForest,
    rq_fifo: ListLinks,
    /// Queues and where to find them.
    queues: Vec<CfqQueue>,
    free_queues: Vec<u32>,
    by_ctx: IdMap,
    async_queues: [[u32; 8]; 3],
    /// Service trees per class and workload type, over queue handles.
    st: [[RbRoot; 3]; 3],
    st_forest: RbForest,
    active: u32,
    serving_class: usize,
    serving_type: usize,
    workload_expires: Nanos,
    /// The idle timer, if armed.
    idle_until: Option<Nanos>,
    rq_in_driver: u32,
    /// Requests in flight: [async, sync].
    rq_in_flight: [u32; 2],
    busy_queues: u32,
    busy_sync_queues: u32,
    busy_class: [u32; 3],
    busy_async: u32,
    busy_avg: [u32; 2],
    last_position: u64,
    last_delayed_sync: Nanos,
    queued: u32,
    trial: IdleTrial,
}

impl Default for Cfq {
    fn default() -> Cfq {
        Cfq::new()
    }
}

impl Cfq {
    /// CFQ with Linux's defaults.
    pub fn new() -> Cfq {
        Cfq {
            t: Tunables::linux(),
            rotational: true,
            rq_queue: Vec::new(),
            fifo_time: Vec::new(),
            rq_sort: RbForest::new(0),
            rq_fifo: ListLinks::new(0),
            queues: Vec::new(),
            free_queues: Vec::new(),
            by_ctx: IdMap::new(),
            async_queues: [[NIL; 8]; 3],
            st: [[RbRoot::EMPTY; 3]; 3],
            st_forest: RbForest::new(0),
            active: NIL,
            serving_class: PrioClass::Be.index(),
            serving_type: queue::SYNC,
            workload_expires: 0,
            idle_until: None,
            rq_in_driver: 0,
            rq_in_flight: [0; 2],
            busy_queues: 0,
            busy_sync_queues: 0,
            busy_class: [0; 3],
            busy_async: 0,
            busy_avg: [0; 2],
            last_position: 0,
            last_delayed_sync: 0,
            queued: 0,
            trial: IdleTrial::default(),
        }
    }

    /// The queue for a request or bio of `ctx` with this sync-ness and
    /// priority, made if needed.
    fn queue_for(
        &mut self,
        ctx: IoContext,
        sync: bool,
        prio: crate::bio::IoPrio,
        now: Nanos,
    ) -> u32 {
        let (class, level) = (prio.class(), prio.level());
        if sync {
            if let Some(q) = self.by_ctx.get(ctx.0) {
                return q;
            }
        } else {
            let q = self.async_queues[class.index()][usize::from(level)];
            if q != NIL {
                return q;
            }
        }
        let fresh = CfqQueue::new(ctx.0, sync, class, level, now);
        let q = match self.free_queues.pop() {
            Some(q) => {
                self.queues[q as usize] = fresh;
                q
            }
            None => {
                self.queues.push(fresh);
                let n = self.queues.len();
                self.st_forest.grow(n);
                (n - 1) as u32
            }
        };
        if sync {
            self.by_ctx.insert(ctx.0, q);
        } else {
            self.async_queues[class.index()][usize::from(level)] = q;
        }
        q
    }

    /// The existing queue a bio would go to, if any.
    fn queue_of_bio(&self, bio: &Bio) -> u32 {
        if is_sync_bio(bio) {
            self.by_ctx.get(bio.ctx.0).unwrap_or(NIL)
        } else {
            self.async_queues[bio.prio.class().index()][usize::from(bio.prio.level())]
        }
    }

    /// Free `q` if its process has gone and it is idle.
    fn maybe_free(&mut self, q: u32) {
        let cq = &self.queues[q as usize];
        if cq.in_use && cq.exited && cq.idle() && self.active != q && cq.on_rr.is_none() {
            self.by_ctx.remove(cq.ctx);
            self.queues[q as usize].in_use = false;
            self.free_queues.push(q);
        }
    }

    /// Record where `rq` (just queued in `q`) seeks to (Linux
    /// `cfq_update_io_seektime`).
    fn update_seek(&mut self, q: u32, sector: u64, sectors: u32) {
        let rotational = self.rotational;
        let cq = &mut self.queues[q as usize];
        let sdist = if cq.last_request_pos == 0 {
            0
        } else {
            sector.abs_diff(cq.last_request_pos)
        };
        cq.seek_history <<= 1;
        let seeky = if rotational {
            sdist > SEEK_THR
        } else {
            sectors < SECT_THR_NONROT
        };
        cq.seek_history |= u32::from(seeky);
    }

    /// Linux `cfq_update_idle_window`, with the fix when `deep_seeky_idle=0`.
    fn update_idle_window(&mut self, q: u32) {
        // The fix: seeky queues idle only while idling was measured to pay.
        let parallel = !self.t.deep_seeky_idle && !self.trial.idle;
        let slice_idle = self.t.slice_idle;
        let cq = &mut self.queues[q as usize];
        if !cq.sync || cq.class == PrioClass::Idle {
            return;
        }
        if cq.queued >= 4 && !(parallel && cq.seeky()) {
            cq.flags.deep = true;
        }
        let enable = if cq.exited
            || slice_idle == 0
            || (!cq.flags.deep && cq.seeky())
            || (parallel && cq.seeky())
        {
            false
        } else if cq.ttime.valid() {
            cq.ttime.mean <= slice_idle
        } else {
            cq.flags.idle_window
        };
        cq.flags.idle_window = enable;
    }

    /// The next request of `q` after `last` is taken out (Linux
    /// `cfq_find_next_rq`).
    fn find_next_rq(&self, rqs: &Requests, q: u32, last: u32) -> u32 {
        let cq = &self.queues[q as usize];
        let next = self
            .rq_sort
            .next(last)
            .or_else(|| self.rq_sort.first(&cq.sort).filter(|&f| f != last));
        let prev = self.rq_sort.prev(last);
        let key = rqs[RequestId::from_raw(last)].sector();
        self.choose_rq(rqs, next, prev, key).unwrap_or(NIL)
    }

    /// Linux `cfq_choose_req` over two optional requests.
    fn choose_rq(&self, rqs: &Requests, a: Option<u32>, b: Option<u32>, last: u64) -> Option<u32> {
        match (a, b) {
            (None, b) => b,
            (a, None) => a,
            (Some(x), Some(y)) if x == y => Some(x),
            (Some(x), Some(y)) => {
                let desc = |id: u32| {
                    let r = &rqs[RequestId::from_raw(id)];
                    (r.sector(), r.is_sync(), r.flags().contains(BioFlags::META))
                };
                if queue::choose_first(desc(x), desc(y), last, self.t.back_max, self.t.back_penalty)
                {
                    Some(x)
                } else {
                    Some(y)
                }
            }
        }
    }

    /// Take `rq` out of its queue's sort tree and FIFO (dispatch or merge).
    fn remove_rq(&mut self, rqs: &Requests, rq: u32) {
        let q = self.rq_queue[rq as usize];
        if self.queues[q as usize].next_rq == rq {
            let n = self.find_next_rq(rqs, q, rq);
            self.queues[q as usize].next_rq = n;
        }
        let cq = &mut self.queues[q as usize];
        self.rq_sort.remove(&mut cq.sort, rq);
        self.rq_fifo.remove(&mut cq.fifo, rq);
        cq.queued -= 1;
        if rqs[RequestId::from_raw(rq)]
            .flags()
            .contains(BioFlags::META)
        {
            cq.prio_pending = cq.prio_pending.saturating_sub(1);
        }
        self.queued -= 1;
        // An emptied queue stays on its service tree until its slice expires
        // (Linux cfq_del_rq_rb): it still counts as busy for idling and
        // preemption decisions.
    }
}

/// Whether CFQ treats a bio as synchronous (Linux `rq_is_sync`).
fn is_sync_bio(bio: &Bio) -> bool {
    bio.op == crate::bio::Op::Read
        || bio
            .flags
            .intersects(BioFlags::SYNC | BioFlags::FUA | BioFlags::PREFLUSH)
}

impl Scheduler for Cfq {
    fn name(&self) -> &'static str {
        "cfq"
    }

    fn resize(&mut self, nr_requests: u32) {
        let n = nr_requests as usize;
        self.rq_sort.grow(n);
        self.rq_fifo.grow(n);
        if self.rq_queue.len() < n {
            self.rq_queue.resize(n, NIL);
            self.fifo_time.resize(n, 0);
        }
    }

    fn set_device(&mut self, rotational: bool, _queue_depth: u32) {
        self.rotational = rotational;
        if !rotational {
            self.t.slice_idle = 0;
        }
    }

    fn allow_bio_merge(&self, rqs: &Requests, rq: RequestId, bio: &Bio) -> bool {
        let q = self.queue_of_bio(bio);
        q != NIL && self.rq_queue[rq.index()] == q && rqs[rq].is_sync() == is_sync_bio(bio)
    }

    fn allow_request_merge(&self, _rqs: &Requests, rq: RequestId, next: RequestId) -> bool {
        self.rq_queue[rq.index()] == self.rq_queue[next.index()]
    }

    fn front_merge_candidate(&self, _rqs: &Requests, bio: &Bio) -> Option<RequestId> {
        let q = self.queue_of_bio(bio);
        if q == NIL {
            return None;
        }
        self.rq_sort
            .find(&self.queues[q as usize].sort, bio.end())
            .map(RequestId::from_raw)
    }

    fn next_request(&self, _rqs: &Requests, rq: RequestId) -> Option<RequestId> {
        self.rq_sort.next(rq.raw()).map(RequestId::from_raw)
    }

    fn prev_request(&self, _rqs: &Requests, rq: RequestId) -> Option<RequestId> {
        self.rq_sort.prev(rq.raw()).map(RequestId::from_raw)
    }

    fn insert(&mut self, rqs: &Requests, rq: RequestId, now: Nanos) {
        let r = &rqs[rq];
        let sync = r.is_sync();
        let q = self.queue_for(r.ctx(), sync, r.prio(), now);
        let id = rq.raw();
        self.rq_queue[rq.index()] = q;
        self.fifo_time[rq.index()] = now.saturating_add(self.t.fifo_expire[usize::from(sync)]);
        {
            let cq = &mut self.queues[q as usize];
            self.rq_sort.insert(&mut cq.sort, id, r.sector());
            self.rq_fifo.push_back(&mut cq.fifo, id);
            cq.queued += 1;
            if r.flags().contains(BioFlags::META) {
                cq.prio_pending += 1;
            }
        }
        self.queued += 1;
        let next = self.queues[q as usize].next_rq;
        let best = self.choose_rq(
            rqs,
            (next != NIL).then_some(next),
            Some(id),
            self.last_position,
        );
        self.queues[q as usize].next_rq = best.unwrap_or(id);
        if self.queues[q as usize].on_rr.is_none() {
            self.add_rr(q, now);
        }
        // Linux cfq_rq_enqueued.
        if self.queues[q as usize].sync {
            let cap = 2 * self.t.slice_idle;
            self.queues[q as usize].ttime.update(now, cap);
        }
        self.update_seek(q, r.sector(), r.sectors());
        self.update_idle_window(q);
        self.queues[q as usize].last_request_pos = r.end();
        if q == self.active {
            if self.queues[q as usize].flags.wait_request {
                if r.bytes() > 4096 || self.busy_queues > 1 {
                    self.idle_until = None;
                    self.queues[q as usize].flags.wait_request = false;
                } else {
                    self.queues[q as usize].flags.must_dispatch = true;
                }
            }
        } else if self.should_preempt(q, rqs, rq, now) {
            self.preempt(q, now);
        }
    }

    fn bio_merged(&mut self, rqs: &Requests, rq: RequestId, kind: MergeKind) {
        if kind == MergeKind::Front {
            let q = self.rq_queue[rq.index()];
            let cq = &mut self.queues[q as usize];
            self.rq_sort.remove(&mut cq.sort, rq.raw());
            self.rq_sort
                .insert(&mut cq.sort, rq.raw(), rqs[rq].sector());
        }
    }

    fn requests_merged(
        &mut self,
        rqs: &Requests,
        into: RequestId,
        gone: RequestId,
        gone_queued: bool,
    ) {
        if !gone_queued {
            return;
        }
        let q = self.rq_queue[gone.index()];
        if self.fifo_time[gone.index()] < self.fifo_time[into.index()] {
            let cq = &mut self.queues[q as usize];
            self.rq_fifo.remove(&mut cq.fifo, into.raw());
            self.rq_fifo
                .insert_after(&mut cq.fifo, gone.raw(), into.raw());
            self.fifo_time[into.index()] = self.fifo_time[gone.index()];
        }
        self.remove_rq(rqs, gone.raw());
    }

    fn dispatch(&mut self, rqs: &Requests, now: Nanos) -> SchedDispatch {
        if let Some(t) = self.idle_until {
            if now >= t {
                self.idle_timer_fired(now);
            } else if self.rq_in_driver == 0 && rqs.exhausted() {
                // Other queues' requests hold every tag and none will
                // complete: the active queue's process cannot send the
                // request we wait for. Move on; like a preempted queue, it
                // keeps what is left of its slice.
                self.slice_expired(now, true);
            }
        }
        match self.select_queue(now) {
            None => match self.idle_until {
                Some(t) if self.queued > 0 || self.active != NIL => SchedDispatch::WaitUntil(t),
                _ => SchedDispatch::Nothing,
            },
            Some(q) => match self.dispatch_from(rqs, q, now) {
                Some(rq) => SchedDispatch::Request(RequestId::from_raw(rq)),
                None => SchedDispatch::Nothing,
            },
        }
    }

    fn completed(&mut self, rqs: &Requests, rq: RequestId, now: Nanos) {
        self.request_done(rqs, rq, now);
    }

    fn context_gone(&mut self, ctx: IoContext, now: Nanos) {
        let Some(q) = self.by_ctx.get(ctx.0) else {
            return;
        };
        self.queues[q as usize].exited = true;
        self.queues[q as usize].flags.idle_window = false;
        if self.active == q {
            // Linux cfq_exit_cfqq: expire it, and its idle timer with it.
            self.slice_expired(now, false);
        }
        self.maybe_free(q);
    }

    table_tunables!(TABLE, TUNABLES, t);
}

#[cfg(test)]
mod tests;
