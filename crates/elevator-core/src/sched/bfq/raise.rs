//! Weight raising (`low_latency`): which queues get a raised weight and for
//! how long, and the bursts of queue creations whose queues are never raised.
//!
//! With `low_latency` = 1, a sync queue (not IDLE class) gets its weight
//! raised ×30:
//! - **interactive**: it becomes busy after being idle for at least 2 s, or
//!   is new (an application starting). The raise lasts the time to read
//!   512 MiB at the estimated peak rate, kept within 3..13 s (Linux's bounds;
//!   before an estimate the rate is taken as 100 MB/s rotational, 400 MB/s
//!   otherwise), and ends early once the queue has received 110K sectors
//!   (Linux's figure for one process of a large application starting): past
//!   that it is an I/O-bound process, not a start-up;
//! - **soft real-time**: it becomes busy, with nothing in flight, no earlier
//!   than `soft_rt_next_start`, computed when it last went idle as the later of
//!   (when it became backlogged + its service since then / 7000 sectors/s) and
//!   (now + `slice_idle` + 4 ms): a queue that issues little, periodically,
//!   and does not come straight back, and whose last 32 requests were not
//!   all seeks (Linux `BFQQ_TOTALLY_SEEKY`). Raised for 300 ms, renewed each
//!   time.
//!
//! **Bursts**: queue creations less than 180 ms apart form a burst; once a
//! burst reaches 8 queues, none of its queues (and none created while it
//! goes on) is raised: many processes started together (a `git grep`, a
//! boot, fio's clones) want throughput, and raising them all would only make
//! each hold the device in turn.
//!
//! A new weight takes effect when the queue next joins its tree. Setting
//! `low_latency` to 0 ends all raising.

use super::bfqq::{Bfqq, NEVER, Raise};
use super::{Bfq, IDLE_CLASS, MS, SEC};
use crate::bio::Nanos;

/// Weight-raising factor (Linux `wr_coeff`).
const WR_COEFF: u64 = 30;
/// Idle time after which a queue becoming busy counts as interactive.
const WR_MIN_IDLE: Nanos = 2 * SEC;
/// Duration of a soft real-time raise (Linux `wr_rt_max_time`).
const WR_RT_MAX_TIME: Nanos = 300 * MS;
/// Highest rate of a soft real-time queue, sectors per second.
const WR_MAX_SOFTRT_RATE: u64 = 7000;
/// Slack added to `slice_idle` before a returning queue may be soft real-time.
const SOFTRT_SLACK: Nanos = 4 * MS;
/// An interactive raise lasts the time to transfer this many sectors (512 MiB)...
const WR_REF_SECTORS: u64 = 1 << 20;
/// ...at least this long...
const WR_MIN_DURATION: Nanos = 3 * SEC;
/// ...and at most this long.
const WR_MAX_DURATION: Nanos = 13 * SEC;
/// An interactive raise ends once the queue received this much service,
/// sectors (Linux: about 110K sectors, what one process of a large
/// application transfers while it starts).
const WR_MAX_SERVICE: u64 = 110 * 1024;
/// Assumed peak rates before an estimate, sectors per second, indexed by
/// `rotational`: 400 MB/s, 100 MB/s.
const REF_RATE: [u64; 2] = [781_250, 195_312];
/// Queue creations less than this apart belong to one burst.
const BURST_INTERVAL: Nanos = 180 * MS;
/// A burst of this many queue creations is large: none of them is raised.
pub(super) const LARGE_BURST: u32 = 8;

impl Bfq {
    /// Turn weight raising on or off (`low_latency`). Off ends every raise;
    /// weights follow when queues next join their trees.
    pub(super) fn set_low_latency(&mut self, on: bool) {
        self.low_latency = on;
        if !on {
            for q in &mut self.queues {
                q.raise = Raise::Off;
            }
        }
    }

    /// The peak rate, or the assumed one before an estimate (sectors/s).
    fn peak_rate(&self) -> u64 {
        self.rate
            .peak()
            .unwrap_or(REF_RATE[usize::from(self.rotational)])
    }

    /// How long an interactive raise lasts.
    fn wr_duration(&self) -> Nanos {
        let t = u128::from(WR_REF_SECTORS) * u128::from(SEC) / u128::from(self.peak_rate().max(1));
        (t.min(u128::from(WR_MAX_DURATION)) as Nanos).max(WR_MIN_DURATION)
    }

    /// Queue `h`'s weight at `now`, raising included.
    pub(super) fn weight(&self, h: u32, now: Nanos) -> u64 {
        let q = &self.queues[h as usize];
        if q.raised(now, self.low_latency) {
            q.base_weight() * WR_COEFF
        } else {
            q.base_weight()
        }
    }

    /// Queue `h` becomes busy and is not in service: raise its weight if it
    /// looks interactive or soft real-time, and, if nothing of it is in
    /// flight, start measuring its rate from now (for the soft real-time
    /// test when it next goes idle). Its first activation counts it in the
    /// current burst of queue creations.
    pub(super) fn raise_on_activation(&mut self, h: u32, now: Nanos) {
        if self.queues[h as usize].fresh {
            self.handle_burst(h, now);
        }
        let wr_duration = self.wr_duration();
        let q = &mut self.queues[h as usize];
        if self.low_latency && q.sync && q.class != IDLE_CLASS && !q.in_large_burst {
            let interactive = q.fresh || now >= q.idle_since.saturating_add(WR_MIN_IDLE);
            if interactive {
                q.raise = Raise::Interactive;
                q.wr_until = now.saturating_add(wr_duration);
                q.wr_service = 0;
            } else if q.dispatched == 0
                && !q.totally_seeky()
                && now >= q.soft_rt_next_start
                && !(q.raised(now, true) && q.wr_until > now.saturating_add(WR_RT_MAX_TIME))
            {
                q.raise = Raise::SoftRt;
                q.wr_until = now.saturating_add(WR_RT_MAX_TIME);
            }
        }
        if q.dispatched == 0 {
            q.backlogged_since = now;
            q.service_from_backlogged = 0;
        }
    }

    /// New queue `h` is activated for the first time: count it in the
    /// current burst of queue creations (a new burst starts when the last
    /// creation is more than [`BURST_INTERVAL`] ago). When a burst reaches
    /// [`LARGE_BURST`] queues, all of them, and any created while it lasts,
    /// are marked and lose their raise: many processes started together
    /// (a `git grep`, a boot, fio's clones) want throughput, not latency.
    fn handle_burst(&mut self, h: u32, now: Nanos) {
        if self.burst_last == NEVER || now > self.burst_last.saturating_add(BURST_INTERVAL) {
            while self.burst_links.pop_front(&mut self.burst).is_some() {}
            self.burst_size = 0;
            self.burst_large = false;
        }
        self.burst_last = now;
        self.burst_size += 1;
        if !self.burst_large && self.burst_size >= LARGE_BURST {
            self.burst_large = true;
            while let Some(m) = self.burst_links.pop_front(&mut self.burst) {
                let q = &mut self.queues[m as usize];
                q.in_large_burst = true;
                q.raise = Raise::Off;
            }
        }
        if self.burst_large {
            self.queues[h as usize].in_large_burst = true;
        } else {
            self.burst_links.push_back(&mut self.burst, h);
        }
    }

    /// Queue `h` stops being busy at `now`: remember when (a long idle time
    /// makes its return interactive), and when it may next count as soft
    /// real-time: not before its service since it became backlogged would
    /// have taken at [`WR_MAX_SOFTRT_RATE`], nor within `slice_idle` +
    /// [`SOFTRT_SLACK`] of now (it must not come straight back).
    pub(super) fn went_idle(&mut self, h: u32, now: Nanos) {
        let slice_idle = self.slice_idle;
        let q = &mut self.queues[h as usize];
        q.idle_since = now;
        if q.sync {
            let paced = q.backlogged_since.saturating_add(
                (u128::from(q.service_from_backlogged) * u128::from(SEC)
                    / u128::from(WR_MAX_SOFTRT_RATE))
                .min(u128::from(NEVER / 2)) as Nanos,
            );
            q.soft_rt_next_start =
                paced.max(now.saturating_add(slice_idle).saturating_add(SOFTRT_SLACK));
        }
    }
}

/// Queue `q` was charged `charge` sectors: an interactive raise ends once
/// the queue has received [`WR_MAX_SERVICE`] during it.
pub(super) fn charged(q: &mut Bfqq, charge: u64) {
    if q.raise == Raise::Interactive {
        q.wr_service += charge;
        if q.wr_service > WR_MAX_SERVICE {
            // Not an application starting: an I/O-bound process. The
            // weight drops when it next joins its tree.
            q.raise = Raise::Off;
        }
    }
}
