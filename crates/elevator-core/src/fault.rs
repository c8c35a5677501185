//! What fault injection shares between engines: the counts of faults
//! injected ([`FaultCounts`], by [`FaultKind`]), how a device went away
//! ([`Gone`]), the parsing of the option values both engines take (a
//! fraction, a sector range), and the per-I/O decisions on sector ranges
//! both make (the first bad sector an I/O touches, [`first_in`]; what a
//! write repairs, [`cut`]; what a torn write keeps, [`torn_prefix`]).
//!
//! Pure, as the rest of the core: time is passed in, randomness comes from
//! the caller's [`Rng`]. The devices that inject faults
//! are the engines' wrappers around these pieces: `elevator_sim`'s
//! `FaultDevice` on the virtual clock, `elevator_io`'s `FaultDevice` over
//! real devices.

use std::fmt;

use crate::bio::{Nanos, Sector};
use crate::rng::Rng;

/// Faults injected, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// I/Os failed with EIO by `fail_rate` or `fail_sectors`.
    pub failed: u64,
    /// Reads failed on a latent sector error (`lse_sectors`).
    pub lse_reads: u64,
    /// Latent bad sectors repaired by a write reaching them (a real
    /// device counts sectors, a model counts the ranges a write touched).
    pub lse_repaired: u64,
    /// Writes torn (`torn_rate`).
    pub torn: u64,
    /// Writes that landed elsewhere (`misdirect_rate`).
    pub misdirected: u64,
    /// I/Os completed late (`spike_rate`).
    pub spikes: u64,
    /// I/Os completed `TimedOut` (`timeout_rate`).
    pub timeouts: u64,
    /// I/Os completed `Offline` once the device vanished (`vanish_at`,
    /// `power_cut_at`).
    pub offline: u64,
}

/// One kind of fault, as counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// [`FaultCounts::failed`].
    Failed,
    /// [`FaultCounts::lse_reads`].
    LseRead,
    /// [`FaultCounts::lse_repaired`].
    LseRepaired,
    /// [`FaultCounts::torn`].
    Torn,
    /// [`FaultCounts::misdirected`].
    Misdirected,
    /// [`FaultCounts::spikes`].
    Spike,
    /// [`FaultCounts::timeouts`].
    Timeout,
    /// [`FaultCounts::offline`].
    Offline,
}

impl FaultKind {
    /// Every kind, in the order of [`FaultCounts`]' fields (`kind as usize`
    /// is its place).
    pub const ALL: [FaultKind; 8] = [
        FaultKind::Failed,
        FaultKind::LseRead,
        FaultKind::LseRepaired,
        FaultKind::Torn,
        FaultKind::Misdirected,
        FaultKind::Spike,
        FaultKind::Timeout,
        FaultKind::Offline,
    ];
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
        for kind in FaultKind::ALL {
            *self.count_mut(kind) += other.count(kind);
        }
    }

    /// Count `n` more faults of `kind`.
    #[inline]
    pub fn bump(&mut self, kind: FaultKind, n: u64) {
        *self.count_mut(kind) += n;
    }

    /// The count of `kind`.
    pub fn count(&self, kind: FaultKind) -> u64 {
        let mut copy = *self;
        *copy.count_mut(kind)
    }

    #[inline]
    fn count_mut(&mut self, kind: FaultKind) -> &mut u64 {
        match kind {
            FaultKind::Failed => &mut self.failed,
            FaultKind::LseRead => &mut self.lse_reads,
            FaultKind::LseRepaired => &mut self.lse_repaired,
            FaultKind::Torn => &mut self.torn,
            FaultKind::Misdirected => &mut self.misdirected,
            FaultKind::Spike => &mut self.spikes,
            FaultKind::Timeout => &mut self.timeouts,
            FaultKind::Offline => &mut self.offline,
        }
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

/// How a device went away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gone {
    /// When (ns on the engine's clock).
    pub at: Nanos,
    /// Whether power was lost (`power_cut_at`) rather than the device
    /// vanishing (`vanish_at`).
    pub power_cut: bool,
}

/// A fraction `0..=1` (a fault rate), from text; `None` if it is not one.
pub fn fraction(text: &str) -> Option<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|r| (0.0..=1.0).contains(r))
}

/// A sector range that did not parse ([`sector_range`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadRange {
    /// Not `START-END` with two whole numbers.
    NotARange,
    /// `START-END` with `START >= END`: no sector in it.
    Empty(Sector, Sector),
}

/// One sector range `A-B` of a `A-B[:C-D...]` option: `A..B` (`B`
/// excluded), with `A < B`.
pub fn sector_range(text: &str) -> Result<(Sector, Sector), BadRange> {
    let parsed = text
        .split_once('-')
        .and_then(|(a, b)| Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?)));
    match parsed {
        Some((a, b)) if a < b => Ok((a, b)),
        Some((a, b)) => Err(BadRange::Empty(a, b)),
        None => Err(BadRange::NotARange),
    }
}

/// The first sector of `lo..hi` inside one of `ranges` (in any order,
/// possibly overlapping): where an I/O over `lo..hi` meets its first bad
/// sector.
#[inline]
pub fn first_in(ranges: &[(Sector, Sector)], lo: Sector, hi: Sector) -> Option<Sector> {
    ranges
        .iter()
        .filter(|&&(a, b)| a < hi && lo < b)
        .map(|&(a, _)| a.max(lo))
        .min()
}

/// How much of a torn write of `sectors` sectors reaches the media, in
/// sectors: a random whole number of blocks of `block` sectors, from none
/// up to all but one (none for a write shorter than two blocks).
#[inline]
pub fn torn_prefix(rng: &mut Rng, sectors: u64, block: u64) -> u64 {
    rng.below((sectors / block).max(1)) * block
}

/// What [`cut`] took out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cut {
    /// Ranges it reached.
    pub ranges: u64,
    /// Sectors it took out.
    pub sectors: u64,
}

/// Take `lo..hi` out of `ranges` (a write repaired those sectors): each
/// range it reaches keeps what lies before `lo` and after `hi`, in place of
/// the range, order kept.
pub fn cut(ranges: &mut Vec<(Sector, Sector)>, lo: Sector, hi: Sector) -> Cut {
    let mut done = Cut::default();
    let mut kept = Vec::with_capacity(ranges.len() + 1);
    for &(a, b) in ranges.iter() {
        if !(a < hi && lo < b) {
            kept.push((a, b));
            continue;
        }
        done.ranges += 1;
        done.sectors += b.min(hi).saturating_sub(a.max(lo));
        if a < lo {
            kept.push((a, lo));
        }
        if hi < b {
            kept.push((hi, b));
        }
    }
    *ranges = kept;
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_cut() {
        assert_eq!(sector_range(" 8 - 16"), Ok((8, 16)));
        assert_eq!(sector_range("8-8"), Err(BadRange::Empty(8, 8)));
        assert_eq!(sector_range("x"), Err(BadRange::NotARange));
        assert_eq!(fraction("0.5"), Some(0.5));
        assert_eq!(fraction("1.5"), None);
        let mut r = vec![(100, 108), (8, 16)];
        assert_eq!(first_in(&r, 0, 200), Some(8));
        assert_eq!(first_in(&r, 10, 12), Some(10));
        assert_eq!(first_in(&r, 16, 100), None);
        assert_eq!(
            cut(&mut r, 10, 12),
            Cut {
                ranges: 1,
                sectors: 2
            }
        );
        assert_eq!(r, vec![(100, 108), (8, 10), (12, 16)]);
        let mut c = FaultCounts::default();
        c.bump(FaultKind::Torn, 2);
        let mut d = c;
        d.add(&c);
        assert_eq!((d.torn, d.count(FaultKind::Torn), d.injected()), (4, 4, 4));
    }
}
