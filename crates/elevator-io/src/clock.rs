//! The real clock, as the core's [`Nanos`]: nanoseconds since the clock was
//! made. The core never reads a clock; engines on real devices read this one
//! and pass the time in. Also the wall clock's date ([`unix_ms`]) that
//! reports of real runs show.

use std::time::{Duration, Instant};

use elevator_core::Nanos;

/// A monotonic clock counting nanoseconds from its creation.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    base: Instant,
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::new()
    }
}

impl Clock {
    /// A clock that reads 0 now.
    pub fn new() -> Clock {
        Clock {
            base: Instant::now(),
        }
    }

    /// Nanoseconds since the clock was made.
    #[inline]
    pub fn now(&self) -> Nanos {
        // u64 nanoseconds last 584 years.
        self.base.elapsed().as_nanos() as Nanos
    }

    /// How long from `now` until `at` (zero if it has passed).
    #[inline]
    pub fn until(now: Nanos, at: Nanos) -> Duration {
        Duration::from_nanos(at.saturating_sub(now))
    }
}

/// The wall clock: milliseconds since the Unix epoch (0 if the system clock
/// is set before it). Reports of real runs show it as their date.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
