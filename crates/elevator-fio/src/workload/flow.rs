//! fio's flows (`flow_id`, `flow`, `flow_sleep`): jobs that share a
//! `flow_id` issue I/Os in proportion to their `flow` weights.
//!
//! As fio's token scheme: a flow keeps one counter of the I/Os its jobs
//! issued (starting at 1) and the sum of the weights of its running jobs;
//! each job counts its own. Before each I/O a job compares its share of
//! the flow's I/Os with its share of the weights: above it, the job is held
//! back (with `flow_sleep`, it waits for its I/O in flight and then sleeps
//! that long; without, it tries again at once, which elevator's engines do
//! when its I/O completes or, with nothing in flight, after
//! [`FLOW_RETRY`]); else both counters go up and the I/O goes. A job joins
//! its flow's weight when it starts and leaves it, taking its I/Os off the
//! counter, when it ends. The counters are atomics, so the clones of one
//! flow may run on different threads (real devices); the simulator runs
//! them on one, in a fixed order, and stays reproducible.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use elevator_core::Nanos;

/// How soon a job held back by its flow, with no `flow_sleep` and nothing
/// in flight, tries again (fio tries again at once, spinning).
pub const FLOW_RETRY: Nanos = 10_000;

/// One `flow_id`'s shared counters.
#[derive(Debug)]
pub struct FlowGroup {
    /// I/Os issued by the flow's jobs, plus 1.
    issued: AtomicU64,
    /// The weights of its running jobs, summed.
    weight: AtomicU64,
}

impl FlowGroup {
    fn new() -> FlowGroup {
        FlowGroup {
            issued: AtomicU64::new(1),
            weight: AtomicU64::new(0),
        }
    }
}

/// One job clone's part in its flow.
#[derive(Clone, Debug)]
pub(crate) struct FlowMember {
    /// Its flow's id.
    pub(crate) id: u32,
    group: Arc<FlowGroup>,
    weight: u64,
    /// I/Os it issued.
    issued: u64,
    /// `flow_sleep`.
    pub(crate) sleep: Nanos,
    joined: bool,
    /// An I/O was let go and not issued yet (asking again is no new I/O).
    granted: bool,
}

impl FlowMember {
    /// A member of weight `weight` (a flow of its own until
    /// [`join_groups`] gives it its flow's counters).
    pub(crate) fn new(id: u32, weight: u32, sleep: Nanos) -> FlowMember {
        FlowMember {
            id,
            group: Arc::new(FlowGroup::new()),
            weight: u64::from(weight),
            issued: 0,
            sleep,
            joined: false,
            granted: false,
        }
    }

    /// It starts: its weight counts.
    pub(crate) fn join(&mut self) {
        if !self.joined {
            self.joined = true;
            self.group.weight.fetch_add(self.weight, Ordering::Relaxed);
        }
    }

    /// It ends: its weight and its I/Os leave the flow.
    pub(crate) fn leave(&mut self) {
        if std::mem::take(&mut self.joined) {
            self.group.weight.fetch_sub(self.weight, Ordering::Relaxed);
            self.group.issued.fetch_sub(self.issued, Ordering::Relaxed);
            self.issued = 0;
        }
    }

    /// Whether it may issue an I/O now; if so, the I/O is counted (once,
    /// however often it asks before [`FlowMember::used`]).
    pub(crate) fn allows(&mut self) -> bool {
        if self.granted {
            return true;
        }
        let total = self.group.issued.load(Ordering::Relaxed).max(1);
        let weights = self.group.weight.load(Ordering::Relaxed);
        // Held back when issued / total > weight / weights.
        if weights > 0
            && u128::from(self.issued) * u128::from(weights)
                > u128::from(self.weight) * u128::from(total)
        {
            return false;
        }
        self.group.issued.fetch_add(1, Ordering::Relaxed);
        self.issued += 1;
        self.granted = true;
        true
    }

    /// The I/O it was let go was issued.
    #[inline]
    pub(crate) fn used(&mut self) {
        self.granted = false;
    }

    fn set_group(&mut self, group: Arc<FlowGroup>) {
        self.group = group;
    }
}

/// Give every member the counters of its `flow_id`.
pub(crate) fn join_groups<'a>(members: impl Iterator<Item = &'a mut FlowMember>) {
    let mut groups: HashMap<u32, Arc<FlowGroup>> = HashMap::new();
    for m in members {
        let g = groups
            .entry(m.id)
            .or_insert_with(|| Arc::new(FlowGroup::new()));
        m.set_group(Arc::clone(g));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_1_and_8_share_1_to_8() {
        let mut a = FlowMember::new(0, 1, 0);
        let mut b = FlowMember::new(0, 8, 0);
        join_groups([&mut a, &mut b].into_iter());
        a.join();
        b.join();
        for _ in 0..9000 {
            for m in [&mut a, &mut b] {
                if m.allows() {
                    m.used();
                }
            }
        }
        let ratio = b.issued as f64 / a.issued as f64;
        assert!((ratio - 8.0).abs() < 0.1, "{} vs {}", a.issued, b.issued);
        a.leave();
        assert_eq!(b.group.weight.load(Ordering::Relaxed), 8);
        assert!(b.allows(), "alone in its flow, it is never held");
    }
}
