//! The real clock, as the core's [`Nanos`]: nanoseconds since the clock was
//! made. The core never reads a clock; engines on real devices read this one
//! and pass the time in.

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
