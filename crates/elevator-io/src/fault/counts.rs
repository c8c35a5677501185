//! The fault counts of a [`FaultDevice`](super::FaultDevice) added up over
//! every share of it, from any thread ([`SharedCounts`]); the counts
//! themselves are [`elevator_core::fault::FaultCounts`].

use std::sync::atomic::{AtomicU64, Ordering};

use elevator_core::fault::{FaultCounts, FaultKind};

/// [`FaultCounts`] added up over every share of a device, from any thread.
#[derive(Debug, Default)]
pub(crate) struct SharedCounts([AtomicU64; 8]);

impl SharedCounts {
    pub(crate) fn bump(&self, kind: FaultKind, n: u64) {
        self.0[kind as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> FaultCounts {
        let mut c = FaultCounts::default();
        for (kind, n) in FaultKind::ALL.into_iter().zip(&self.0) {
            c.bump(kind, n.load(Ordering::Relaxed));
        }
        c
    }
}
