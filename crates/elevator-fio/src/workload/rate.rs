//! fio's rate options: `rate` / `rate_iops` (a ceiling per direction,
//! `rate_process=linear|poisson`) and `rate_min` / `rate_iops_min` (a floor
//! checked at completions over each `rate_cycle` once the job has settled,
//! below which the job fails).
//!
//! As in fio, `rate_iops` becomes a byte rate of that many I/Os of the
//! direction's smallest block size, and `rate` wins when both are set.
//! `linear`: the n-th byte of a direction may be issued no earlier than
//! `n / rate` after the rate's origin (the job's start, or the end of its
//! `ramp_time`); a job that fell behind catches up. `poisson`: the gap
//! before each I/O is drawn from an exponential distribution whose mean is
//! one I/O of the smallest block size at the rate, from the worker's own
//! seeded generator.

use elevator_core::{Nanos, Op};

use super::worker::dir;
use crate::job::{JobSpec, RateProcess, RwMode};
use elevator_core::rng::Rng;

const SEC: u128 = 1_000_000_000;

/// A job clone's rate ceiling.
#[derive(Clone, Debug)]
pub(crate) struct Rate {
    /// Bytes per second per direction (0: no limit).
    bps: [u64; 3],
    /// Mean gap per direction for poisson, in ns.
    mean_gap: [f64; 3],
    poisson: bool,
    /// Linear: where the schedule starts; bytes issued since.
    origin: Nanos,
    bytes: [u64; 3],
    /// Poisson: when the next I/O of each direction may go.
    next: [Nanos; 3],
    rng: Rng,
}

impl Rate {
    /// The ceiling of `job`, if it has one.
    pub(crate) fn new(job: &JobSpec, seed: u64) -> Option<Rate> {
        let min_bs = min_bs(job);
        let mut bps = [0u64; 3];
        let mut mean_gap = [0f64; 3];
        for d in 0..3 {
            bps[d] = if job.rate[d] > 0 {
                job.rate[d]
            } else {
                job.rate_iops[d].saturating_mul(min_bs[d])
            };
            if bps[d] > 0 {
                mean_gap[d] = min_bs[d] as f64 * 1e9 / bps[d] as f64;
            }
        }
        if bps.iter().all(|&b| b == 0) {
            return None;
        }
        Some(Rate {
            bps,
            mean_gap,
            poisson: job.rate_process == RateProcess::Poisson,
            origin: 0,
            bytes: [0; 3],
            next: [0; 3],
            rng: Rng::new(super::mix(&[seed, 0x9015_5011])),
        })
    }

    /// Start the schedule at `now` (the job's start, the end of its ramp).
    pub(crate) fn restart(&mut self, now: Nanos) {
        self.origin = now;
        self.bytes = [0; 3];
        self.next = [now; 3];
    }

    /// Shift the schedule by `by` (a think time not to be caught up on:
    /// `rate_ignore_thinktime`).
    pub(crate) fn shift(&mut self, by: Nanos) {
        self.origin = self.origin.saturating_add(by);
        for n in &mut self.next {
            *n = n.saturating_add(by);
        }
    }

    /// The earliest time an I/O of `op` may be issued.
    #[inline]
    pub(crate) fn allowed_at(&self, op: Op) -> Nanos {
        let Some(d) = dir(op) else {
            return 0;
        };
        if self.bps[d] == 0 {
            0
        } else if self.poisson {
            self.next[d]
        } else {
            let offset = u128::from(self.bytes[d]) * SEC / u128::from(self.bps[d]);
            self.origin
                .saturating_add(u64::try_from(offset).unwrap_or(u64::MAX))
        }
    }

    /// An I/O of `op` and `len` bytes was issued.
    #[inline]
    pub(crate) fn issued(&mut self, op: Op, len: u32) {
        let Some(d) = dir(op) else {
            return;
        };
        if self.bps[d] == 0 {
            return;
        }
        if self.poisson {
            // Uniform in (0, 1]: never ln(0).
            let u = ((self.rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
            let gap = -u.ln() * self.mean_gap[d];
            self.next[d] = self.next[d].saturating_add(gap as Nanos);
        } else {
            self.bytes[d] += u64::from(len);
        }
    }
}

/// The smallest block size of each direction (for `rate_iops`).
fn min_bs(job: &JobSpec) -> [u64; 3] {
    let mut m = job.bs;
    if let Some(r) = &job.bsrange {
        for d in 0..3 {
            m[d] = m[d].min(r[d].0);
        }
    }
    if let Some(s) = &job.bssplit {
        for d in 0..3 {
            if let Some(b) = s[d].iter().map(|&(b, _)| b).min() {
                m[d] = b;
            }
        }
    }
    m.map(|b| b.max(1))
}

/// Which directions a job's `rw` does (read, write, trim).
pub(crate) fn directions(rw: RwMode) -> [bool; 3] {
    match rw {
        RwMode::Read | RwMode::RandRead => [true, false, false],
        RwMode::Write | RwMode::RandWrite => [false, true, false],
        RwMode::ReadWrite | RwMode::RandRw => [true, true, false],
        RwMode::Trim | RwMode::RandTrim => [false, false, true],
        RwMode::TrimWrite | RwMode::RandTrimWrite => [false, true, true],
    }
}

/// fio lets a job settle for this long after its start (or the end of
/// its ramp) before its rate floor is checked.
const SETTLE: Nanos = 2_000_000_000;

/// A job clone's rate floor: `rate_min` / `rate_iops_min`, for the
/// directions the job does. As fio's `check_min_rate`, it is checked at
/// each completion once the job has settled (2 s after its start): the
/// first check of a direction only takes a baseline; each later one, once
/// a `rate_cycle` has passed since the last, compares what the direction
/// did since then with its floor (bytes when `rate_min` is set, else
/// I/Os) and takes a new baseline.
#[derive(Clone, Debug)]
pub(crate) struct RateMin {
    min_bps: [u64; 3],
    min_iops: [u64; 3],
    cycle: Nanos,
    /// When the job started (or its ramp ended).
    since: Nanos,
    /// Bytes and I/Os completed since `since`.
    bytes: [u64; 3],
    ios: [u64; 3],
    /// The last baseline per direction: when, and the counts then
    /// (`None`: none taken yet).
    last: [Option<(Nanos, u64, u64)>; 3],
}

/// A rate floor not met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateShortfall {
    /// Direction: 0 read, 1 write, 2 trim.
    pub dir: usize,
    /// Whether the floor is in I/Os per second (else bytes per second).
    pub iops: bool,
    /// The floor.
    pub min: u64,
    /// What the job did over the cycle.
    pub got: u64,
}

impl RateMin {
    /// The floor of `job`, if it has one.
    pub(crate) fn new(job: &JobSpec) -> Option<RateMin> {
        let does = directions(job.rw);
        let mut min_bps = job.rate_min;
        let mut min_iops = job.rate_iops_min;
        for d in 0..3 {
            if !does[d] {
                min_bps[d] = 0;
                min_iops[d] = 0;
            }
        }
        if min_bps.iter().chain(&min_iops).all(|&m| m == 0) {
            return None;
        }
        Some(RateMin {
            min_bps,
            min_iops,
            cycle: job.rate_cycle.max(1),
            since: 0,
            bytes: [0; 3],
            ios: [0; 3],
            last: [None; 3],
        })
    }

    /// The job (re)starts at `now`: its start, the end of its ramp.
    pub(crate) fn restart(&mut self, now: Nanos) {
        self.since = now;
        self.bytes = [0; 3];
        self.ios = [0; 3];
        self.last = [None; 3];
    }

    /// An I/O of `op` moved `bytes` at `now`: counted, and the floor
    /// checked.
    #[inline]
    pub(crate) fn completed(
        &mut self,
        op: Op,
        bytes: u64,
        now: Nanos,
    ) -> Result<(), RateShortfall> {
        if let Some(d) = dir(op) {
            self.bytes[d] += bytes;
            self.ios[d] += 1;
        }
        self.check(now)
    }

    /// At `now` (a completion): check each direction that has moved data
    /// and whose cycle is over.
    fn check(&mut self, now: Nanos) -> Result<(), RateShortfall> {
        if now.saturating_sub(self.since) < SETTLE {
            return Ok(());
        }
        for d in 0..3 {
            if self.bytes[d] == 0 || (self.min_bps[d] == 0 && self.min_iops[d] == 0) {
                continue;
            }
            if let Some((at, bytes, ios)) = self.last[d] {
                let spent = now.saturating_sub(at);
                if spent < self.cycle || spent == 0 {
                    continue;
                }
                let per_sec = |n: u64| {
                    u64::try_from(u128::from(n) * SEC / u128::from(spent)).unwrap_or(u64::MAX)
                };
                let (iops, min, got) = if self.min_bps[d] > 0 {
                    (false, self.min_bps[d], per_sec(self.bytes[d] - bytes))
                } else {
                    (true, self.min_iops[d], per_sec(self.ios[d] - ios))
                };
                if got < min {
                    return Err(RateShortfall {
                        dir: d,
                        iops,
                        min,
                        got,
                    });
                }
            }
            self.last[d] = Some((now, self.bytes[d], self.ios[d]));
        }
        Ok(())
    }
}
