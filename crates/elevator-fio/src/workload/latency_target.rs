//! fio's latency-target profiling (`latency_target`, `latency_window`,
//! `latency_percentile`, `latency_run`): owns the search for the highest
//! queue depth at which the job's I/O meets the target.
//!
//! As fio: the job starts at depth 1. An I/O whose latency (issue to
//! completion) is above the target counts as failed; with
//! `latency_percentile=100` (the default) one such I/O at once halves the
//! depth towards the last good one, and at depth 1 it is an `ETIMEDOUT`
//! error. Once a window (`latency_window`) has passed since the cycle
//! began, the cycle succeeds if at least `latency_percentile` percent of
//! its I/Os met the target: the depth doubles (or, once a depth has failed,
//! goes halfway to it; three successes in a row just under a failed depth
//! raise that bound by one); otherwise it goes halfway down. A change of
//! depth waits for the I/O in flight first. Without `latency_run`, when a
//! success leaves the depth where it was, the job's figures restart for
//! one more cycle at that depth, and the job ends after it.

use elevator_core::Nanos;

use crate::job::JobSpec;

/// The error of an I/O that misses the target at depth 1 (Linux's
/// `ETIMEDOUT`, as fio's `max latency exceeded`).
pub const ETIMEDOUT: i32 = 110;

/// What a step of the search asks of the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyStep {
    /// Nothing.
    None,
    /// The depth changed: wait for the I/O in flight before issuing more.
    Quiesce,
    /// The depth is found: wait for the I/O in flight, restart the job's
    /// figures and run one more cycle.
    FinalRun,
    /// The final cycle is over: the job's I/O ends.
    Done,
    /// An I/O missed the target at depth 1 (`ETIMEDOUT`).
    Fatal,
}

/// One clone's search.
#[derive(Clone, Debug)]
pub struct LatencyTarget {
    target: Nanos,
    window: Nanos,
    percentile: f64,
    run: bool,
    iodepth: u32,
    qd: u32,
    high: u32,
    low: u32,
    stable: u32,
    cycle_start: Nanos,
    cycle_ios: u64,
    failed: u64,
    end_run: bool,
}

impl LatencyTarget {
    /// The search `job` asks for, if it has a `latency_target`.
    pub fn new(job: &JobSpec) -> Option<LatencyTarget> {
        (job.latency_target > 0).then(|| LatencyTarget {
            target: job.latency_target,
            window: job.latency_window,
            percentile: job.latency_percentile,
            run: job.latency_run,
            iodepth: job.iodepth.max(1),
            qd: 1,
            high: job.iodepth.max(1),
            low: 1,
            stable: 0,
            cycle_start: 0,
            cycle_ios: 0,
            failed: 0,
            end_run: false,
        })
    }

    /// The depth to keep now.
    pub fn depth(&self) -> u32 {
        self.qd
    }

    /// Begin (again) at `now`, `ios` I/Os done so far: depth 1, unless the
    /// final cycle has begun.
    pub fn begin(&mut self, now: Nanos, ios: u64) {
        if !self.end_run {
            self.qd = 1;
            self.high = self.iodepth;
            self.low = 1;
        }
        self.new_cycle(now, ios);
    }

    /// The job's figures restarted at `now` (its final cycle begins with
    /// no I/O counted).
    pub fn restart(&mut self, now: Nanos) {
        self.new_cycle(now, 0);
    }

    fn new_cycle(&mut self, now: Nanos, ios: u64) {
        self.cycle_start = now;
        self.cycle_ios = ios;
        self.failed = 0;
    }

    /// A read or write completed at `now` after `latency`; `ios` I/Os are
    /// done so far.
    pub fn completed(&mut self, latency: Nanos, now: Nanos, ios: u64) -> LatencyStep {
        if latency <= self.target {
            return LatencyStep::None;
        }
        if self.percentile < 100.0 {
            self.failed += 1;
            return LatencyStep::None;
        }
        self.failed_cycle(now, ios)
    }

    /// Look at the cycle (after completions were taken): decide once its
    /// window is over.
    pub fn check(&mut self, now: Nanos, ios: u64) -> LatencyStep {
        if now.saturating_sub(self.cycle_start) < self.window {
            return LatencyStep::None;
        }
        let n = ios.saturating_sub(self.cycle_ios);
        // No I/O in the window is no success (fio's 0/0 compares false).
        let ok =
            n > 0 && 100.0 * n.saturating_sub(self.failed) as f64 / n as f64 >= self.percentile;
        if ok {
            self.success(now, ios)
        } else {
            match self.failed_cycle(now, ios) {
                LatencyStep::Fatal => LatencyStep::None,
                step => step,
            }
        }
    }

    fn failed_cycle(&mut self, now: Nanos, ios: u64) -> LatencyStep {
        if self.qd == 1 {
            return LatencyStep::Fatal;
        }
        self.high = self.qd;
        if self.qd == self.low {
            self.low -= 1;
        }
        self.qd = (self.qd + self.low) / 2;
        self.stable = 0;
        self.new_cycle(now, ios);
        LatencyStep::Quiesce
    }

    fn success(&mut self, now: Nanos, ios: u64) -> LatencyStep {
        let qd = self.qd;
        self.low = self.qd;
        if self.qd + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.qd = if self.high != self.iodepth {
            (self.qd + self.high) / 2
        } else {
            self.qd.saturating_mul(2)
        }
        .min(self.iodepth);
        self.new_cycle(now, ios);
        if self.run || self.qd != qd {
            return LatencyStep::None;
        }
        if self.end_run {
            LatencyStep::Done
        } else {
            self.end_run = true;
            LatencyStep::FinalRun
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(iodepth: u32, good_up_to: u32) -> (u32, u32) {
        let mut job = JobSpec::new("j", 1);
        (job.iodepth, job.latency_target, job.latency_window) = (iodepth, 1000, 10);
        let mut t = LatencyTarget::new(&job).expect("a target");
        t.begin(0, 0);
        let (mut now, mut ios, mut cycles) = (0, 0, 0);
        loop {
            cycles += 1;
            assert!(cycles < 200, "the search never ends");
            now += 10;
            ios += 1;
            let lat = if t.depth() <= good_up_to { 500 } else { 5000 };
            let step = match t.completed(lat, now, ios) {
                LatencyStep::None => t.check(now, ios),
                s => s,
            };
            if step == LatencyStep::Done || step == LatencyStep::Fatal {
                return (t.depth(), cycles);
            }
        }
    }

    /// The search settles on the highest depth that meets the target, as
    /// fio's bisection does, and gives up (fatally) when even depth 1 does
    /// not.
    #[test]
    fn finds_the_highest_good_depth() {
        assert_eq!(search(128, 128).0, 128);
        assert_eq!(search(128, 40).0, 40);
        assert_eq!(search(128, 1).0, 1);
        assert_eq!(search(16, 5).0, 5);
        let mut job = JobSpec::new("j", 1);
        (job.iodepth, job.latency_target) = (8, 1000);
        let mut t = LatencyTarget::new(&job).expect("a target");
        t.begin(0, 0);
        assert_eq!(t.completed(5000, 1, 1), LatencyStep::Fatal);
    }
}
