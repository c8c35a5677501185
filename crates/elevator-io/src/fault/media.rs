//! What every share of one faulty device has in common ([`Media`]): its
//! latent bad sectors (a write through any share repairs them for all),
//! the moment it vanishes, and its fault counts, which a [`FaultTally`]
//! reads even once the device is gone.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use elevator_core::Sector;

use elevator_core::fault::{FaultCounts, FaultKind};

use super::counts::SharedCounts;
use super::sectors::SectorSet;

/// The device's state shared by its shares.
pub(crate) struct Media {
    /// Latent bad sectors not yet repaired.
    lse: Mutex<SectorSet>,
    /// Whether there were any to begin with (no lock taken otherwise).
    has_lse: bool,
    /// When the device goes.
    pub(crate) vanish: Option<Instant>,
    pub(crate) totals: SharedCounts,
}

impl Media {
    /// Media with latent errors at `lse`, vanishing at `vanish`.
    pub(crate) fn new(lse: &[(Sector, Sector)], vanish: Option<Instant>) -> Media {
        Media {
            lse: Mutex::new(SectorSet::new(lse)),
            has_lse: !lse.is_empty(),
            vanish,
            totals: SharedCounts::default(),
        }
    }

    /// Whether the device has vanished.
    pub(crate) fn vanished(&self) -> bool {
        self.vanish.is_some_and(|t| Instant::now() >= t)
    }

    /// Repair the latent bad sectors in `start..end` (a write reached
    /// them): how many there were.
    pub(crate) fn repair(&self, start: Sector, end: Sector) -> u64 {
        if !self.has_lse {
            return 0;
        }
        self.lse
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(start, end)
    }

    /// The first latent bad sector in `start..end`.
    pub(crate) fn latent(&self, start: Sector, end: Sector) -> Option<Sector> {
        if !self.has_lse {
            return None;
        }
        self.lse
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .first_in(start, end)
    }

    /// Count `n` faults of `kind`.
    pub(crate) fn bump(&self, kind: FaultKind, n: u64) {
        self.totals.bump(kind, n);
    }
}

/// The fault counts of a device and all its shares, readable from any
/// thread, even once the device is gone
/// ([`FaultDevice::tally`](super::FaultDevice::tally)).
#[derive(Clone)]
pub struct FaultTally(pub(crate) Arc<Media>);

impl FaultTally {
    /// The faults injected so far, by kind.
    pub fn get(&self) -> FaultCounts {
        self.0.totals.get()
    }
}

impl std::fmt::Debug for FaultTally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FaultTally").field(&self.get()).finish()
    }
}
