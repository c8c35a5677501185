//! CFQ's per-process queue: its requests (sector order and FIFO), its slice,
//! its flags, and what CFQ learns about the process (think time, seekiness).

use crate::bio::{Nanos, PrioClass, Sector};
use crate::index::{NIL, RbRoot};

/// Workload types (Linux `wl_type_t`), in Linux's order.
pub(super) const ASYNC: usize = 0;
/// Sync queues that are not idled on.
pub(super) const SYNC_NOIDLE: usize = 1;
/// Sync queues with an idle window.
pub(super) const SYNC: usize = 2;

/// A request that seeks farther than this from the previous one counts as
/// seeky on a rotational device (Linux `CFQQ_SEEK_THR`, 8 × 100 sectors).
pub(super) const SEEK_THR: u64 = 800;
/// On a non-rotational device, a request smaller than this counts as seeky
/// (Linux `CFQQ_SECT_THR_NONROT`).
pub(super) const SECT_THR_NONROT: u32 = 64;
/// A request within this distance of the last position is "close" (Linux
/// `CFQQ_CLOSE_THR`).
pub(super) const CLOSE_THR: u64 = 8192;
/// Think-time statistics are trusted after this many samples (Linux
/// `sample_valid`: more than 80).
pub(super) const SAMPLE_VALID: u32 = 80;

/// Exponentially weighted think time (Linux `cfq_ttime`), in fixed point as
/// Linux keeps it: samples and total scaled by 256, decaying by 7/8.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ThinkTime {
    /// When the process's last request completed.
    pub last_end_request: Nanos,
    pub samples: u32,
    pub total: u64,
    pub mean: Nanos,
}

impl ThinkTime {
    /// A new request arrived at `now`; gaps are capped at `cap`.
    pub fn update(&mut self, now: Nanos, cap: Nanos) {
        let elapsed = now.saturating_sub(self.last_end_request).min(cap);
        self.samples = (7 * self.samples + 256) / 8;
        self.total = (7 * self.total + 256 * elapsed) / 8;
        self.mean = (self.total + 128) / u64::from(self.samples.max(1));
    }

    /// Whether enough samples were seen to trust `mean`.
    pub fn valid(&self) -> bool {
        self.samples > SAMPLE_VALID
    }
}

/// Per-queue flags (Linux `cfqq->flags`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Flags {
    /// Idling is worth it for this queue (Linux `idle_window`).
    pub idle_window: bool,
    /// The idle timer runs for this queue (Linux `wait_request`).
    pub wait_request: bool,
    /// A request arrived while idling: dispatch it (Linux `must_dispatch`).
    pub must_dispatch: bool,
    /// Its slice has not started yet (Linux `slice_new`).
    pub slice_new: bool,
    /// Its FIFO was checked in this slice (Linux `fifo_expire`).
    pub fifo_checked: bool,
    /// It was seen with 4 or more requests queued (Linux `deep`).
    pub deep: bool,
    /// It waits for its group to become busy again (Linux `wait_busy`).
    pub wait_busy: bool,
}

/// One CFQ queue: a process's sync I/O, or one priority's async I/O.
#[derive(Clone, Debug)]
pub(super) struct CfqQueue {
    pub in_use: bool,
    /// The I/O context (for sync queues).
    pub ctx: u32,
    pub sync: bool,
    pub class: PrioClass,
    pub level: u8,
    /// Requests by start sector.
    pub sort: RbRoot,
    /// Requests in arrival order, with their FIFO deadlines.
    pub fifo: crate::index::ListHead,
    /// The request to dispatch next (Linux `next_rq`).
    pub next_rq: u32,
    /// Requests queued (not yet dispatched).
    pub queued: u32,
    /// Requests dispatched and not completed.
    pub dispatched: u32,
    /// Metadata (Linux REQ_PRIO) requests queued.
    pub prio_pending: u32,
    pub slice_start: Nanos,
    pub slice_end: Nanos,
    /// Slice left when it was preempted or idled out (negative: overrun).
    pub slice_resid: i64,
    /// Requests dispatched in the current slice.
    pub slice_dispatch: u32,
    /// Key on its service tree (ns, may be negative).
    pub rb_key: i64,
    /// On a service tree: (class, workload type).
    pub on_rr: Option<(usize, usize)>,
    pub seek_history: u32,
    pub last_request_pos: Sector,
    pub ttime: ThinkTime,
    pub flags: Flags,
    /// Its process has gone: no idling, freed when idle.
    pub exited: bool,
}

impl CfqQueue {
    /// A queue for `ctx` (sync) or for a priority's async I/O.
    pub fn new(ctx: u32, sync: bool, class: PrioClass, level: u8, now: Nanos) -> CfqQueue {
        CfqQueue {
            in_use: true,
            ctx,
            sync,
            class,
            level,
            sort: RbRoot::EMPTY,
            fifo: crate::index::ListHead::EMPTY,
            next_rq: NIL,
            queued: 0,
            dispatched: 0,
            prio_pending: 0,
            slice_start: 0,
            slice_end: 0,
            slice_resid: 0,
            slice_dispatch: 0,
            rb_key: 0,
            on_rr: None,
            seek_history: 0,
            last_request_pos: 0,
            ttime: ThinkTime {
                last_end_request: now,
                ..ThinkTime::default()
            },
            // Linux: sync queues start with an idle window, unless IDLE class.
            flags: Flags {
                idle_window: sync && class != PrioClass::Idle,
                ..Flags::default()
            },
            exited: false,
        }
    }

    /// Linux `CFQQ_SEEKY`: more than 4 of the last 32 requests were seeky.
    #[inline]
    pub fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 32 / 8
    }

    /// Its workload type.
    #[inline]
    pub fn workload(&self) -> usize {
        if !self.sync {
            ASYNC
        } else if !self.flags.idle_window {
            SYNC_NOIDLE
        } else {
            SYNC
        }
    }

    /// Whether it is idle or still has work or I/O in flight.
    #[inline]
    pub fn idle(&self) -> bool {
        self.queued == 0 && self.dispatched == 0
    }
}

/// Linux `cfq_choose_req`: of two requests (start sector, sync, meta),
/// the one to serve next from head position `last`. Sync beats async,
/// metadata beats data; then the shorter distance, where a backward seek of
/// up to `back_max` sectors costs `back_penalty` times its length and a
/// longer one "wraps" (is served last). Returns true for the first.
pub(super) fn choose_first(
    a: (Sector, bool, bool),
    b: (Sector, bool, bool),
    last: Sector,
    back_max: u64,
    back_penalty: u64,
) -> bool {
    if a.1 != b.1 {
        return a.1;
    }
    if a.2 != b.2 {
        return a.2;
    }
    let dist = |s: Sector| -> Option<u64> {
        if s >= last {
            Some(s - last)
        } else if s + back_max >= last {
            Some((last - s).saturating_mul(back_penalty))
        } else {
            None
        }
    };
    match (dist(a.0), dist(b.0)) {
        (Some(da), Some(db)) => {
            if da != db {
                da < db
            } else {
                a.0 >= b.0
            }
        }
        (Some(_), None) => true,
        (None, Some(_)) => false,
        // Both wrapped: the one further behind (one backward seek only).
        (None, None) => a.0 <= b.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_time_converges() {
        let mut t = ThinkTime::default();
        let mut now = 0;
        for _ in 0..200 {
            t.last_end_request = now;
            now += 2_000_000;
            t.update(now, 16_000_000);
        }
        assert!(t.valid());
        assert!((1_900_000..=2_100_000).contains(&t.mean), "{}", t.mean);
    }

    #[test]
    fn seekiness_needs_more_than_four_of_32() {
        let mut q = CfqQueue::new(1, true, PrioClass::Be, 4, 0);
        q.seek_history = 0b1111;
        assert!(!q.seeky());
        q.seek_history = 0b11111;
        assert!(q.seeky());
    }

    #[test]
    fn choose_prefers_sync_meta_then_distance_with_back_penalty() {
        let (bm, bp) = (32768, 2);
        assert!(!choose_first(
            (100, false, false),
            (200, true, false),
            0,
            bm,
            bp
        ));
        assert!(choose_first(
            (900, true, true),
            (100, true, false),
            0,
            bm,
            bp
        ));
        // Forward 100 vs backward 60 (costs 120): forward wins.
        assert!(choose_first(
            (1100, true, false),
            (940, true, false),
            1000,
            bm,
            bp
        ));
        // Forward 150 vs backward 60 (120): backward wins.
        assert!(!choose_first(
            (1150, true, false),
            (940, true, false),
            1000,
            bm,
            bp
        ));
        // Far behind wraps: served last.
        assert!(choose_first(
            (1_000_000, true, false),
            (10, true, false),
            100_000,
            bm,
            bp
        ));
    }
}
