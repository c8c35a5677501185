//! The device's peak rate, estimated from observed service.
//!
//! An observation interval starts at a dispatch and collects the sectors
//! completed after it. Once it has at least [`MIN_SAMPLES`] completions and
//! lasts at least [`MIN_INTERVAL`], its rate (sectors per second, from the
//! interval's start to its last completion) is a sample, and a new interval
//! starts. An interval is dropped when the device sat idle (nothing
//! dispatched) for more than [`MAX_IDLE`]: the rate of a device that had
//! nothing to do says nothing about its speed.
//!
//! Filtering: a sample above the estimate pulls it halfway up at once (a
//! device is at least as fast as it was seen to be); a sample below it lowers
//! it by 1/8 of the difference, and only if at least 3/4 of the interval's
//! dispatches were sequential (within [`SEQ_DISTANCE`] sectors of the previous
//! one): random I/O is slow because of the workload, not the device. The
//! first sample is taken as it is.

use crate::bio::{Nanos, Sector};

/// Completions an interval needs before it yields a sample.
pub(super) const MIN_SAMPLES: u32 = 32;
/// Shortest interval that yields a sample.
pub(super) const MIN_INTERVAL: Nanos = 100_000_000;
/// Idle time after which an interval is dropped.
pub(super) const MAX_IDLE: Nanos = 100_000_000;
/// A dispatch this close to the previous one counts as sequential.
pub(super) const SEQ_DISTANCE: Sector = 800;

#[derive(Clone, Debug, Default)]
pub(super) struct PeakRate {
    /// Sectors per second; 0 until the first sample.
    peak: u64,
    active: bool,
    start: Nanos,
    sectors: u64,
    completions: u32,
    dispatches: u32,
    sequential: u32,
    last_event: Nanos,
    samples: u64,
}

impl PeakRate {
    /// The estimate in sectors per second, once there is one.
    #[inline]
    pub(super) fn peak(&self) -> Option<u64> {
        (self.peak > 0).then_some(self.peak)
    }

    /// Samples taken so far.
    #[cfg(test)]
    pub(super) fn samples(&self) -> u64 {
        self.samples
    }

    fn restart(&mut self, now: Nanos) {
        self.active = true;
        self.start = now;
        self.sectors = 0;
        self.completions = 0;
        self.dispatches = 0;
        self.sequential = 0;
    }

    /// A request was dispatched; `in_flight` were in flight before it;
    /// `sequential`: it starts near where the previous one ended.
    #[inline]
    pub(super) fn dispatched(&mut self, now: Nanos, in_flight: u32, sequential: bool) {
        if !self.active || (in_flight == 0 && now.saturating_sub(self.last_event) > MAX_IDLE) {
            self.restart(now);
        }
        self.dispatches += 1;
        self.sequential += u32::from(sequential);
        self.last_event = now;
    }

    /// A request of `sectors` completed; `in_flight` remain in flight.
    #[inline]
    pub(super) fn completed(&mut self, now: Nanos, sectors: u32, in_flight: u32) {
        self.last_event = now;
        if !self.active {
            return;
        }
        self.sectors += u64::from(sectors);
        self.completions += 1;
        let elapsed = now.saturating_sub(self.start);
        if self.completions < MIN_SAMPLES || elapsed < MIN_INTERVAL {
            return;
        }
        let rate = (u128::from(self.sectors) * 1_000_000_000 / u128::from(elapsed)) as u64;
        let sequential = self.sequential * 4 >= self.dispatches * 3;
        if self.peak == 0 {
            self.peak = rate;
        } else if rate > self.peak {
            self.peak = self.peak / 2 + rate / 2;
        } else if sequential {
            self.peak -= (self.peak - rate) / 8;
        }
        self.peak = self.peak.max(1);
        self.samples += 1;
        if in_flight > 0 {
            self.restart(now);
        } else {
            self.active = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_steady_device() {
        let mut r = PeakRate::default();
        // 128 sectors every 100 µs, one at a time: 1.28 M sectors/s.
        let mut now = 0;
        for _ in 0..10_000 {
            r.dispatched(now, 0, true);
            now += 100_000;
            r.completed(now, 128, 0);
        }
        let peak = r.peak().unwrap();
        assert!((1_270_000..=1_290_000).contains(&peak), "{peak}");
        assert!(r.samples() >= 9);
        // Slow random I/O does not pull the estimate down.
        for i in 0..10_000u32 {
            r.dispatched(now, 0, i.is_multiple_of(8));
            now += 10_000_000;
            r.completed(now, 8, 0);
        }
        assert_eq!(r.peak(), Some(peak));
    }
}
