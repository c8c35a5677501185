//! How long a worker looks for more work without sleeping after a pass
//! that did some: the adaptive polling window, and the statistics of recent
//! idle gaps it is chosen from.
//!
//! Looking again (an `epoll_wait` that does not block) costs a core while it
//! lasts; sleeping costs a wake-up when work comes. Spinning pays only when
//! the next work comes soon after the last. So each worker measures its idle
//! gaps (from the end of a pass that did work to the start of the next one
//! that does, whether it spun or slept in between) and keeps two figures, as
//! io_uring's hybrid polling keeps a mean completion time and NAPI busy
//! polling a budget:
//!
//! - how often recently a gap was short enough to spin through (at most
//!   the cap, `--poll-us`): a moving average, each gap weighing
//!   [`1/2^RATE_SHIFT`](RATE_SHIFT);
//! - the moving mean of those short gaps.
//!
//! The worker spins only while at least half of the recent gaps were short,
//! and then for twice their mean (enough for most of them), never more than
//! the cap. A spin that finds nothing ends in a sleep, whose long gap lowers
//! the rate: after a few misses in a row the window is 0, and the worker
//! sleeps at once. It keeps measuring while it sleeps, so short gaps (work
//! coming back closely) raise the rate and the window grows back.
//!
//! Gaps come in two kinds, each with its own figures ([`Spinner`]): those
//! that begin with requests in flight on the worker's devices (the next
//! work is a completion, due after the device's latency: a file's ring) and
//! those that begin with none (the next work is a client's request).
//!
//! Pure arithmetic on the instants the worker passes in: no clock is read
//! here.

use std::time::{Duration, Instant};

/// Each gap weighs 1/2^RATE_SHIFT in the moving figures.
const RATE_SHIFT: u32 = 3;
/// The rate in fixed point: `ONE` is every gap short.
const ONE: u32 = 1 << 16;
/// Spinning needs at least this rate (half of the recent gaps short).
const THRESHOLD: u32 = ONE / 2;
/// A window shorter than this is not worth a look: the worker sleeps.
const MIN_WINDOW: Duration = Duration::from_micros(1);

/// One worker's polling windows: one for idle gaps that begin with its
/// devices busy, one for those that begin with them idle.
#[derive(Debug)]
pub(crate) struct Spinner {
    /// When the last pass that did work ended, and whether its devices had
    /// requests in flight then (`None`: no such pass yet).
    idle_since: Option<(Instant, bool)>,
    /// Gaps that began with requests in flight.
    device: SpinPolicy,
    /// Gaps that began with none.
    client: SpinPolicy,
}

impl Spinner {
    /// Windows of at most `cap` each.
    pub(crate) fn new(cap: Duration) -> Spinner {
        Spinner {
            idle_since: None,
            device: SpinPolicy::new(cap),
            client: SpinPolicy::new(cap),
        }
    }

    /// A pass that did work began at `started` (when the worker's wait
    /// returned) and ended at `ended`, leaving requests in flight on the
    /// worker's devices or not (`in_flight`): the gap since the previous
    /// one counts, and until when the worker looks again rather than sleeps
    /// (`None`: it sleeps at once).
    pub(crate) fn worked(
        &mut self,
        started: Instant,
        ended: Instant,
        in_flight: bool,
    ) -> Option<Instant> {
        if let Some((since, busy)) = self.idle_since {
            let gap = started.saturating_duration_since(since);
            if busy {
                self.device.gap(gap);
            } else {
                self.client.gap(gap);
            }
        }
        self.idle_since = Some((ended, in_flight));
        let policy = if in_flight {
            &self.device
        } else {
            &self.client
        };
        policy.spin_until(ended)
    }
}

/// The polling window for one kind of idle gap, and what it is chosen from.
#[derive(Debug)]
pub(crate) struct SpinPolicy {
    /// The longest spin (`--poll-us`); zero: never spin.
    cap: Duration,
    /// How often recent gaps were at most `cap`, out of [`ONE`].
    short_rate: u32,
    /// The moving mean of recent gaps at most `cap`, in nanoseconds.
    short_gap_ns: u64,
    /// The window the figures give, kept so that each pass need not
    /// recompute it.
    window: Duration,
}

impl SpinPolicy {
    /// A policy spinning at most `cap`. It starts at the threshold, spinning
    /// the whole cap: the first long gap stops it, the first short ones keep
    /// it going.
    pub(crate) fn new(cap: Duration) -> SpinPolicy {
        let mut p = SpinPolicy {
            cap,
            short_rate: THRESHOLD,
            short_gap_ns: cap.as_nanos() as u64 / 2,
            window: Duration::ZERO,
        };
        p.window = p.compute_window();
        p
    }

    /// Until when the worker looks again rather than sleeps, after a pass
    /// that did work ended at `ended` (`None`: it sleeps at once).
    pub(crate) fn spin_until(&self, ended: Instant) -> Option<Instant> {
        (!self.window.is_zero()).then(|| ended + self.window)
    }

    /// The current window: how long a spin lasts.
    #[cfg(test)]
    pub(crate) fn window(&self) -> Duration {
        self.window
    }

    /// Count one idle gap.
    fn gap(&mut self, gap: Duration) {
        if self.cap.is_zero() {
            return;
        }
        let short = gap <= self.cap;
        let rate = self.short_rate - (self.short_rate >> RATE_SHIFT);
        self.short_rate = rate + if short { ONE >> RATE_SHIFT } else { 0 };
        if short {
            let g = gap.as_nanos() as u64;
            // mean += (g - mean) / 2^RATE_SHIFT, in signed steps.
            let m = self.short_gap_ns;
            self.short_gap_ns = if g >= m {
                m + ((g - m) >> RATE_SHIFT)
            } else {
                m - ((m - g) >> RATE_SHIFT)
            };
        }
        self.window = self.compute_window();
    }

    fn compute_window(&self) -> Duration {
        if self.short_rate < THRESHOLD {
            return Duration::ZERO;
        }
        let w = Duration::from_nanos(self.short_gap_ns.saturating_mul(2)).min(self.cap);
        if w < MIN_WINDOW { Duration::ZERO } else { w }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: Duration = Duration::from_micros(50);

    /// Count `n` gaps of `gap` each.
    fn feed(p: &mut SpinPolicy, gap: Duration, n: usize) {
        for _ in 0..n {
            p.gap(gap);
        }
    }

    #[test]
    fn starts_at_the_cap() {
        let p = SpinPolicy::new(CAP);
        assert_eq!(p.window(), CAP);
        let now = Instant::now();
        assert_eq!(p.spin_until(now), Some(now + CAP));
    }

    #[test]
    fn zero_cap_never_spins() {
        let mut p = SpinPolicy::new(Duration::ZERO);
        assert_eq!(p.window(), Duration::ZERO);
        feed(&mut p, Duration::from_nanos(500), 50);
        assert_eq!(p.spin_until(Instant::now()), None);
    }

    #[test]
    fn long_gaps_drop_it_to_zero_and_short_ones_bring_it_back() {
        let mut p = SpinPolicy::new(CAP);
        feed(&mut p, Duration::from_millis(2), 1);
        assert_eq!(
            p.window(),
            Duration::ZERO,
            "one miss at the threshold stops it"
        );
        feed(&mut p, Duration::from_millis(2), 20);
        assert_eq!(p.spin_until(Instant::now()), None);
        // Work coming closely again: after a few short gaps it spins, for
        // about twice their length.
        feed(&mut p, Duration::from_micros(5), 30);
        let w = p.window();
        assert!(
            w >= Duration::from_micros(8) && w <= Duration::from_micros(30),
            "{w:?}"
        );
        // Mostly long gaps again: it stops.
        feed(&mut p, Duration::from_millis(1), 10);
        assert_eq!(p.window(), Duration::ZERO);
    }

    #[test]
    fn the_window_follows_the_short_gaps_and_never_passes_the_cap() {
        let mut p = SpinPolicy::new(CAP);
        feed(&mut p, Duration::from_micros(2), 60);
        let w = p.window();
        assert!(
            w >= Duration::from_micros(3) && w <= Duration::from_micros(6),
            "{w:?}"
        );
        feed(&mut p, Duration::from_micros(45), 60);
        assert_eq!(p.window(), CAP);
    }

    #[test]
    fn device_gaps_and_client_gaps_are_counted_apart() {
        let mut s = Spinner::new(CAP);
        let mut t = Instant::now();
        // Completions come 10 µs after a pass that leaves I/O in flight;
        // clients come back 5 ms after one that leaves none.
        for _ in 0..30 {
            let end = t + Duration::from_micros(1);
            s.worked(t, end, true);
            t = end + Duration::from_micros(10);
            let end = t + Duration::from_micros(1);
            s.worked(t, end, false);
            t = end + Duration::from_millis(5);
        }
        let end = t + Duration::from_micros(1);
        let busy = s
            .worked(t, end, true)
            .expect("spins while a completion is due");
        assert!(busy - end >= Duration::from_micros(15) && busy - end <= CAP);
        t = end + Duration::from_micros(10);
        let end = t + Duration::from_micros(1);
        assert_eq!(s.worked(t, end, false), None, "sleeps waiting for clients");
    }

    #[test]
    fn a_few_long_gaps_among_short_ones_keep_it_spinning() {
        let mut p = SpinPolicy::new(CAP);
        for _ in 0..20 {
            feed(&mut p, Duration::from_micros(10), 3);
            feed(&mut p, Duration::from_millis(5), 1);
        }
        assert!(p.window() > Duration::ZERO);
    }
}
