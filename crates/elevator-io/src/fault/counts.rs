//! How many faults of each kind a [`FaultDevice`](super::FaultDevice) has
//! injected ([`FaultCounts`]).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Faults injected, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// I/Os failed with EIO by `fail_rate` or `fail_sectors`.
    pub failed: u64,
    /// Reads failed on a latent sector error (`lse_sectors`).
    pub lse_reads: u64,
    /// Latent bad sectors repaired by a write reaching them.
    pub lse_repaired: u64,
    /// Writes torn (`torn_rate`).
    pub torn: u64,
    /// Writes that landed elsewhere (`misdirect_rate`).
    pub misdirected: u64,
    /// I/Os completed late (`spike_rate`).
    pub spikes: u64,
    /// I/Os completed `TimedOut` (`timeout_rate`).
    pub timeouts: u64,
    /// I/Os completed `Offline` once the device vanished (`vanish_at`).
    pub offline: u64,
}

/// One kind of fault, as counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Failed,
    LseRead,
    LseRepaired,
    Torn,
    Misdirected,
    Spike,
    Timeout,
    Offline,
}

impl FaultCounts {
    /// Completions whose status a fault changed (failed, latent-sector
    /// reads, torn, timed out, offline); misdirected writes and spikes
    /// complete `Ok`.
    pub fn injected(&self) -> u64 {
        self.failed + self.lse_reads + self.torn + self.timeouts + self.offline
    }

    /// Whether any fault happened.
    pub fn any(&self) -> bool {
        *self != FaultCounts::default()
    }

    /// Add `other`'s counts (another share's).
    pub fn add(&mut self, other: &FaultCounts) {
        let FaultCounts {
            failed,
            lse_reads,
            lse_repaired,
            torn,
            misdirected,
            spikes,
            timeouts,
            offline,
        } = other;
        self.failed += failed;
        self.lse_reads += lse_reads;
        self.lse_repaired += lse_repaired;
        self.torn += torn;
        self.misdirected += misdirected;
        self.spikes += spikes;
        self.timeouts += timeouts;
        self.offline += offline;
    }

    pub(crate) fn bump(&mut self, kind: Kind, n: u64) {
        *match kind {
            Kind::Failed => &mut self.failed,
            Kind::LseRead => &mut self.lse_reads,
            Kind::LseRepaired => &mut self.lse_repaired,
            Kind::Torn => &mut self.torn,
            Kind::Misdirected => &mut self.misdirected,
            Kind::Spike => &mut self.spikes,
            Kind::Timeout => &mut self.timeouts,
            Kind::Offline => &mut self.offline,
        } += n;
    }
}

/// `failed 3, lse_reads 1, ...`: every kind, by its option's name.
impl fmt::Display for FaultCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "failed {}, lse_reads {}, lse_repaired {}, torn {}, misdirected {}, spikes {}, \
             timeouts {}, offline {}",
            self.failed,
            self.lse_reads,
            self.lse_repaired,
            self.torn,
            self.misdirected,
            self.spikes,
            self.timeouts,
            self.offline
        )
    }
}

/// [`FaultCounts`] added up over every share of a device, from any thread.
#[derive(Debug, Default)]
pub(crate) struct SharedCounts([AtomicU64; 8]);

impl SharedCounts {
    pub(crate) fn bump(&self, kind: Kind, n: u64) {
        self.0[kind as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> FaultCounts {
        let mut c = FaultCounts::default();
        for (i, kind) in [
            Kind::Failed,
            Kind::LseRead,
            Kind::LseRepaired,
            Kind::Torn,
            Kind::Misdirected,
            Kind::Spike,
            Kind::Timeout,
            Kind::Offline,
        ]
        .into_iter()
        .enumerate()
        {
            c.bump(kind, self.0[i].load(Ordering::Relaxed));
        }
        c
    }
}
