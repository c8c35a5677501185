//! Whether the device queues commands internally (Linux `hw_tag`), learned
//! from the depth BFQ observes in flight rather than taken from a flag.
//!
//! A device that takes one command at a time (`queue_depth` 1) cannot queue,
//! and is known not to from the start. Otherwise the device is first assumed
//! to queue (as Linux does before its first verdict), and at each completion,
//! while the load is deep enough to tell (more than [`THRESHOLD`] requests in
//! flight and queued), the deepest in-flight count is noted; after
//! [`SAMPLES`] such completions the verdict is "queues" if that depth exceeded
//! [`THRESHOLD`], and sampling starts over. A completion does not count when
//! the queue in service is about to be idled for and has too few requests to
//! fill the device: the shallow depth is then BFQ's doing, not the device's.
//! Once the device is seen to queue, the verdict stays.

/// Requests in flight above which the device is queueing (Linux
/// `BFQ_HW_QUEUE_THRESHOLD`).
pub(super) const THRESHOLD: u32 = 3;
/// Completions per verdict (Linux `BFQ_HW_QUEUE_SAMPLES`).
pub(super) const SAMPLES: u32 = 32;

/// The learned answer to "does the device queue commands?".
#[derive(Clone, Copy, Debug)]
pub(super) struct DeviceQueueing {
    /// The current verdict.
    queueing: bool,
    /// The verdict can no longer change.
    settled: bool,
    /// Deepest in-flight count seen in this round of samples.
    max_in_flight: u32,
    samples: u32,
}

impl DeviceQueueing {
    /// For a device that takes `queue_depth` commands at once.
    pub(super) fn new(queue_depth: u32) -> DeviceQueueing {
        let single = queue_depth <= 1;
        DeviceQueueing {
            queueing: !single,
            settled: single,
            max_in_flight: 0,
            samples: 0,
        }
    }

    /// Whether the device queues commands, as far as known.
    #[inline]
    pub(super) fn queueing(&self) -> bool {
        self.queueing
    }

    /// The deepest in-flight count seen since the last verdict.
    #[inline]
    pub(super) fn max_in_flight(&self) -> u32 {
        self.max_in_flight
    }

    /// A request completed with `in_flight` requests (itself included) in
    /// the device and `queued` in the scheduler; `shallow_by_idling`: the
    /// queue in service may be idled for and has too few requests to fill the
    /// device.
    #[inline]
    pub(super) fn completed(&mut self, in_flight: u32, queued: u32, shallow_by_idling: bool) {
        self.max_in_flight = self.max_in_flight.max(in_flight);
        if self.settled || in_flight + queued <= THRESHOLD {
            return;
        }
        if shallow_by_idling && in_flight < THRESHOLD {
            return;
        }
        self.samples += 1;
        if self.samples < SAMPLES {
            return;
        }
        self.queueing = self.max_in_flight > THRESHOLD;
        self.settled = self.queueing;
        self.max_in_flight = 0;
        self.samples = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_command_at_a_time_never_queues() {
        let mut d = DeviceQueueing::new(1);
        assert!(!d.queueing());
        for _ in 0..1000 {
            d.completed(1, 50, false);
        }
        assert!(!d.queueing());
    }

    #[test]
    fn learned_from_the_depth_seen() {
        // A deep device kept shallow: not queueing after one round.
        let mut d = DeviceQueueing::new(32);
        assert!(d.queueing(), "assumed to queue before a verdict");
        for _ in 0..SAMPLES {
            d.completed(2, 10, false);
        }
        assert!(!d.queueing());
        // Shallow load says nothing; neither does shallowness from idling.
        for _ in 0..10 * SAMPLES {
            d.completed(1, 2, false);
            d.completed(2, 10, true);
        }
        assert!(!d.queueing());
        // Deep in flight: queueing, for good.
        for _ in 0..SAMPLES {
            d.completed(8, 0, false);
        }
        assert!(d.queueing());
        for _ in 0..10 * SAMPLES {
            d.completed(2, 10, false);
        }
        assert!(d.queueing());
    }
}
