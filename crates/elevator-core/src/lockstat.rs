//! Lock statistics as data: a [`LockStat`] per lock (what lockmeter and
//! Linux's `/proc/lock_stat` count: acquisitions, contentions, rejected
//! `try_lock`s, hold and wait times), a [`LockReport`] per run, and every
//! column derived from them. The locks that count live in the engines
//! (elevator-io's `StatLock`); the tables and JSON that print them live in
//! elevator-fio's report (`report::locks`). Pure: nothing here reads a clock.
//!
//! # lockmeter's columns
//!
//! lockmeter counts every request for a lock as one of: acquired without
//! waiting (NOWAIT), acquired after waiting (SPIN), or a `try_lock` that found
//! the lock held and gave up (RJECT). Its TOTAL is all three, so a
//! [`LockStat`]'s TOTAL is [`LockStat::total`] = `acquisitions + rejects`,
//! and:
//!
//! | column | definition |
//! |---|---|
//! | UTIL | `hold_total / elapsed`: the share of the run the lock was held |
//! | CON | `(contentions + rejects) / TOTAL` = 100% − NOWAIT: requests that found the lock held |
//! | HOLD MEAN(MAX) | `hold_total / TOTAL` (lockmeter divides by all requests, rejects included; with no rejects that is the mean per acquisition), and the longest hold |
//! | WAIT MEAN(MAX) | `wait_total / contentions`, over the acquisitions that waited, and the longest wait |
//! | (% CPU) | `wait_total / (elapsed × cpus)`: the machine's CPU time spent waiting |
//! | TOTAL | `acquisitions + rejects` |
//! | NOWAIT, SPIN, RJECT | `acquisitions − contentions`, `contentions`, `rejects`, as shares of TOTAL |
//!
//! HOLD MEAN is lockmeter's own: the `global_bh_lock` of the lock-scaling
//! measurement (`seeds/003`), held 24.6% of 38 s and asked for 114825 times
//! of which 97.8% were rejected, shows `80us`, the hold time over all 114825
//! requests (over its 2526 acquisitions it would be 3.7 ms).
//!
//! The CPUs a lock costs are `UTIL + %CPU × cpus` (the time it is held plus
//! the time spent waiting for it, in CPUs): that measurement's
//! `io_request_lock 57.7% + 47.9% * 4 = 2.49`. [`LockStat::cpus_spent`]
//! gives it, and [`LockReport::cpus_spent_sum`] adds them up (`Sum = 2.85
//! CPUs`).

/// One lock's counts over a run (or over one thread's part of it; see
/// [`LockStat::merge`]).
///
/// Minimums are meaningful only when something was counted:
/// `hold_min_ns` when `acquisitions > 0`, `wait_min_ns` when
/// `contentions > 0`; they are 0 otherwise.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LockStat {
    /// What the lock is, e.g. `io_request_lock`, `queue_lock mem:1g#0`,
    /// `sched_lock file:/dev/shm/a`.
    pub name: String,
    /// Times the lock was taken (with or without waiting).
    pub acquisitions: u64,
    /// Acquisitions that found the lock held and waited for it (lockmeter's
    /// SPIN, `/proc/lock_stat`'s contentions).
    pub contentions: u64,
    /// `try_lock` calls that found the lock held and gave up (lockmeter's
    /// RJECT). Not acquisitions.
    pub rejects: u64,
    /// Time the lock was held, summed over acquisitions, in ns.
    pub hold_total_ns: u64,
    /// Shortest hold, in ns.
    pub hold_min_ns: u64,
    /// Longest hold, in ns.
    pub hold_max_ns: u64,
    /// Time spent waiting, summed over contended acquisitions, in ns.
    pub wait_total_ns: u64,
    /// Shortest wait of a contended acquisition, in ns.
    pub wait_min_ns: u64,
    /// Longest wait, in ns.
    pub wait_max_ns: u64,
}

/// The locks of one run, and the wall time and CPU count they are judged
/// against.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LockReport {
    /// How long the run was measured, in ns.
    pub elapsed_ns: u64,
    /// CPUs the run could use (the `4` of `47.9% * 4`).
    pub cpus: u32,
    /// The locks, reported in this order.
    pub locks: Vec<LockStat>,
}

/// `num / den`, and 0 for an empty denominator: a mean or share of counts
/// that may be empty.
pub fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// The smaller of two minimums, each counted only if its samples exist.
#[inline]
fn merged_min(a: u64, a_count: u64, b: u64, b_count: u64) -> u64 {
    match (a_count, b_count) {
        (0, _) => b,
        (_, 0) => a,
        _ => a.min(b),
    }
}

impl LockStat {
    /// A lock with nothing counted yet.
    pub fn new(name: impl Into<String>) -> LockStat {
        LockStat {
            name: name.into(),
            ..LockStat::default()
        }
    }

    /// Counts one finished acquisition, held `hold_ns`, that waited
    /// `wait_ns` if it was contended (sums saturate).
    #[inline]
    pub fn record(&mut self, hold_ns: u64, wait_ns: Option<u64>) {
        self.hold_min_ns = merged_min(self.hold_min_ns, self.acquisitions, hold_ns, 1);
        self.acquisitions += 1;
        self.hold_total_ns = self.hold_total_ns.saturating_add(hold_ns);
        self.hold_max_ns = self.hold_max_ns.max(hold_ns);
        if let Some(wait_ns) = wait_ns {
            self.wait_min_ns = merged_min(self.wait_min_ns, self.contentions, wait_ns, 1);
            self.contentions += 1;
            self.wait_total_ns = self.wait_total_ns.saturating_add(wait_ns);
            self.wait_max_ns = self.wait_max_ns.max(wait_ns);
        }
    }

    /// Adds `other`'s counts to these (sums, and the extremes of minimums
    /// and maximums), for adding up per-thread or per-run figures of one
    /// lock. The name stays this one's.
    pub fn merge(&mut self, other: &LockStat) {
        self.hold_min_ns = merged_min(
            self.hold_min_ns,
            self.acquisitions,
            other.hold_min_ns,
            other.acquisitions,
        );
        self.wait_min_ns = merged_min(
            self.wait_min_ns,
            self.contentions,
            other.wait_min_ns,
            other.contentions,
        );
        self.acquisitions += other.acquisitions;
        self.contentions += other.contentions;
        self.rejects += other.rejects;
        self.hold_total_ns += other.hold_total_ns;
        self.hold_max_ns = self.hold_max_ns.max(other.hold_max_ns);
        self.wait_total_ns += other.wait_total_ns;
        self.wait_max_ns = self.wait_max_ns.max(other.wait_max_ns);
    }

    /// lockmeter's TOTAL: every request for the lock, `acquisitions +
    /// rejects`.
    pub fn total(&self) -> u64 {
        self.acquisitions + self.rejects
    }

    /// Acquisitions that did not wait.
    pub fn nowait_count(&self) -> u64 {
        self.acquisitions.saturating_sub(self.contentions)
    }

    /// UTIL, in percent: the share of `elapsed_ns` the lock was held.
    pub fn util(&self, elapsed_ns: u64) -> f64 {
        100.0 * ratio(self.hold_total_ns, elapsed_ns)
    }

    /// CON, in percent: requests that found the lock held (waited or were
    /// rejected), of TOTAL; 100% − NOWAIT.
    pub fn con(&self) -> f64 {
        100.0 * ratio(self.contentions + self.rejects, self.total())
    }

    /// lockmeter's HOLD MEAN, in ns: `hold_total_ns / total()`. With no
    /// rejects it is the mean hold per acquisition.
    pub fn hold_mean_ns(&self) -> f64 {
        ratio(self.hold_total_ns, self.total())
    }

    /// WAIT MEAN, in ns, over the acquisitions that waited.
    pub fn wait_mean_ns(&self) -> f64 {
        ratio(self.wait_total_ns, self.contentions)
    }

    /// (% CPU), in percent: the time spent waiting for the lock, of all the
    /// CPU time `cpus` CPUs had in `elapsed_ns`.
    pub fn wait_cpu(&self, elapsed_ns: u64, cpus: u32) -> f64 {
        100.0
            * ratio(
                self.wait_total_ns,
                elapsed_ns.saturating_mul(u64::from(cpus)),
            )
    }

    /// NOWAIT, in percent of TOTAL.
    pub fn nowait(&self) -> f64 {
        100.0 * ratio(self.nowait_count(), self.total())
    }

    /// SPIN, in percent of TOTAL: acquisitions that waited.
    pub fn spin(&self) -> f64 {
        100.0 * ratio(self.contentions, self.total())
    }

    /// RJECT, in percent of TOTAL: `try_lock`s that gave up.
    pub fn rject(&self) -> f64 {
        100.0 * ratio(self.rejects, self.total())
    }

    /// The CPUs the lock cost: `UTIL + %CPU × cpus`, which is
    /// `(hold_total + wait_total) / elapsed`.
    pub fn cpus_spent(&self, elapsed_ns: u64) -> f64 {
        ratio(self.hold_total_ns + self.wait_total_ns, elapsed_ns)
    }
}

impl LockReport {
    /// The CPUs all the locks cost together (the `Sum = N CPUs` line).
    pub fn cpus_spent_sum(&self) -> f64 {
        // Folded from +0.0: an empty f64 sum is -0.0, which prints "-0.00".
        self.locks
            .iter()
            .map(|l| l.cpus_spent(self.elapsed_ns))
            .fold(0.0, |sum, cpus| sum + cpus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_sums_counts_and_keeps_extremes() {
        let mut a = LockStat {
            name: "queue_lock mem:1g#0".into(),
            acquisitions: 10,
            contentions: 2,
            rejects: 1,
            hold_total_ns: 1_000,
            hold_min_ns: 50,
            hold_max_ns: 300,
            wait_total_ns: 400,
            wait_min_ns: 100,
            wait_max_ns: 300,
        };
        let b = LockStat {
            name: "other".into(),
            acquisitions: 5,
            contentions: 1,
            rejects: 0,
            hold_total_ns: 600,
            hold_min_ns: 40,
            hold_max_ns: 200,
            wait_total_ns: 500,
            wait_min_ns: 500,
            wait_max_ns: 500,
        };
        a.merge(&b);
        assert_eq!(
            a,
            LockStat {
                name: "queue_lock mem:1g#0".into(),
                acquisitions: 15,
                contentions: 3,
                rejects: 1,
                hold_total_ns: 1_600,
                hold_min_ns: 40,
                hold_max_ns: 300,
                wait_total_ns: 900,
                wait_min_ns: 100,
                wait_max_ns: 500,
            }
        );
    }

    #[test]
    fn merge_ignores_the_minimums_of_nothing() {
        // An empty side's minimum (0) is no sample.
        let counted = LockStat {
            name: "l".into(),
            acquisitions: 3,
            contentions: 1,
            hold_min_ns: 70,
            hold_max_ns: 90,
            hold_total_ns: 240,
            wait_min_ns: 20,
            wait_max_ns: 20,
            wait_total_ns: 20,
            ..LockStat::default()
        };
        let mut empty = LockStat::new("l");
        empty.merge(&counted);
        assert_eq!(empty, counted);
        let mut counted_too = counted.clone();
        counted_too.merge(&LockStat::new("l"));
        assert_eq!(counted_too, counted);
        // Rejects alone carry no hold or wait.
        let mut rejected = LockStat {
            rejects: 4,
            ..LockStat::new("l")
        };
        rejected.merge(&counted);
        assert_eq!(rejected.hold_min_ns, 70);
        assert_eq!(rejected.wait_min_ns, 20);
        assert_eq!(rejected.total(), 7);
    }

    #[test]
    fn record_counts_holds_and_waits() {
        let mut l = LockStat::new("l");
        l.record(70, None);
        l.record(90, Some(20));
        l.record(80, None);
        assert_eq!((l.acquisitions, l.contentions, l.rejects), (3, 1, 0));
        assert_eq!(
            (l.hold_min_ns, l.hold_max_ns, l.hold_total_ns),
            (70, 90, 240)
        );
        assert_eq!(
            (l.wait_min_ns, l.wait_max_ns, l.wait_total_ns),
            (20, 20, 20)
        );
    }
}
