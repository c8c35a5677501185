//! A set of sectors kept as sorted, disjoint ranges: where a device has
//! latent sector errors left (writes take sectors out of it).

use elevator_core::Sector;
use elevator_core::fault;

/// Sorted, disjoint, non-empty ranges `start..end`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SectorSet {
    ranges: Vec<(Sector, Sector)>,
}

impl SectorSet {
    /// The set of `ranges` (sorted and disjoint, as
    /// [`FaultSpec`](super::FaultSpec)'s are; empty ones are dropped).
    pub(crate) fn new(ranges: &[(Sector, Sector)]) -> SectorSet {
        let mut ranges: Vec<_> = ranges.iter().copied().filter(|(s, e)| s < e).collect();
        ranges.sort_unstable();
        debug_assert!(
            ranges.windows(2).all(|w| w[0].1 <= w[1].0),
            "overlapping sector ranges"
        );
        SectorSet { ranges }
    }

    /// Whether no sector is left.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The first sector of `start..end` in the set.
    pub(crate) fn first_in(&self, start: Sector, end: Sector) -> Option<Sector> {
        // The first range that ends after `start`.
        let i = self.ranges.partition_point(|&(_, e)| e <= start);
        self.ranges
            .get(i)
            .filter(|&&(s, _)| s < end)
            .map(|&(s, _)| s.max(start))
    }

    /// Take `start..end` out of the set; returns how many sectors were in it.
    pub(crate) fn remove(&mut self, start: Sector, end: Sector) -> u64 {
        if start >= end {
            return 0;
        }
        let removed = fault::cut(&mut self.ranges, start, end).sectors;
        debug_assert!(self.ranges.windows(2).all(|w| w[0].1 <= w[1].0));
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_removes() {
        let mut s = SectorSet::new(&[(100, 108), (8, 16)]);
        assert_eq!(s.first_in(0, 8), None);
        assert_eq!(s.first_in(0, 9), Some(8));
        assert_eq!(s.first_in(10, 200), Some(10));
        assert_eq!(s.first_in(16, 100), None);
        assert_eq!(s.first_in(16, 101), Some(100));
        assert_eq!(s.remove(10, 12), 2);
        assert_eq!(s.first_in(10, 12), None);
        assert_eq!(s.first_in(9, 13), Some(9));
        assert_eq!(s.remove(0, 1000), 14);
        assert!(s.is_empty());
    }
}
