//! What a simulated device's media holds: for each sector, which write's
//! content is there. Owns [`ExtentMap`] (write numbers by extent, bounded by
//! the number of distinct extents written, not by the capacity) and
//! [`SimDevice`], the [`Device`] a simulation can look inside: its media
//! content, a power cut, marks.
//!
//! # Write numbers
//!
//! A device numbers the writes it is given: the n-th `Op::Write` or
//! `Op::WriteZeroes` submitted (whatever its length, even 0, and whatever
//! becomes of it) is write `n`, from 1. Write number 0 means "never written
//! since the run began". A tap in front of the device (the write log) counts
//! submissions the same way, so the numbers agree without being passed
//! along. The simulations move no data: a write's number stands for its
//! content.

use std::collections::BTreeMap;

use elevator_core::{Device, Nanos, Op};

/// A write's number: the count of write submissions up to and including it
/// (0: never written).
pub type WriteNo = u64;

/// Whether `op` is counted as a write (it changes the media's content).
#[inline]
pub fn numbered(op: Op) -> bool {
    matches!(op, Op::Write | Op::WriteZeroes)
}

/// Write numbers by extent of sectors: non-overlapping `[lo, hi)` extents,
/// each holding one write's content; sectors in no extent were never
/// written. Adjacent extents of the same write are merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtentMap {
    /// lo → (hi, write).
    ext: BTreeMap<u64, (u64, WriteNo)>,
}

impl ExtentMap {
    /// Nothing written.
    pub fn new() -> ExtentMap {
        ExtentMap::default()
    }

    /// Extents held.
    pub fn len(&self) -> usize {
        self.ext.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.ext.is_empty()
    }

    /// Sectors held (in some extent).
    pub fn sectors(&self) -> u64 {
        self.ext.iter().map(|(lo, (hi, _))| hi - lo).sum()
    }

    /// The write whose content `sector` holds (0: never written).
    pub fn get(&self, sector: u64) -> WriteNo {
        match self.ext.range(..=sector).next_back() {
            Some((_, &(hi, w))) if sector < hi => w,
            _ => 0,
        }
    }

    /// Every extent, `(lo, hi, write)`, by sector.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, WriteNo)> + '_ {
        self.ext.iter().map(|(&lo, &(hi, w))| (lo, hi, w))
    }

    /// The extents overlapping `[lo, hi)`, cut to it (gaps left out).
    pub fn within(&self, lo: u64, hi: u64) -> Vec<(u64, u64, WriteNo)> {
        let mut out = Vec::new();
        if lo >= hi {
            return out;
        }
        if let Some((_, &(b, w))) = self.ext.range(..lo).next_back()
            && b > lo
        {
            out.push((lo, b.min(hi), w));
        }
        for (&a, &(b, w)) in self.ext.range(lo..hi) {
            out.push((a, b.min(hi), w));
        }
        out
    }

    /// Forget `[lo, hi)`.
    pub fn remove(&mut self, lo: u64, hi: u64) {
        if lo >= hi {
            return;
        }
        // An extent starting before `lo` and reaching into the range.
        if let Some((&a, &(b, w))) = self.ext.range(..lo).next_back()
            && b > lo
        {
            self.ext.insert(a, (lo, w));
            if b > hi {
                self.ext.insert(hi, (b, w));
            }
        }
        let inside: Vec<u64> = self.ext.range(lo..hi).map(|(&a, _)| a).collect();
        for a in inside {
            if let Some((b, w)) = self.ext.remove(&a)
                && b > hi
            {
                self.ext.insert(hi, (b, w));
            }
        }
    }

    /// `[lo, hi)` now holds write `w` (0 forgets it).
    pub fn set(&mut self, lo: u64, hi: u64, w: WriteNo) {
        if lo >= hi {
            return;
        }
        self.remove(lo, hi);
        if w == 0 {
            return;
        }
        let (mut lo, mut hi) = (lo, hi);
        if let Some((&a, &(b, pw))) = self.ext.range(..lo).next_back()
            && b == lo
            && pw == w
        {
            self.ext.remove(&a);
            lo = a;
        }
        if let Some(&(b, nw)) = self.ext.get(&hi)
            && nw == w
        {
            self.ext.remove(&hi);
            hi = b;
        }
        self.ext.insert(lo, (hi, w));
        debug_assert!(self.check(), "extent map out of order");
    }

    /// `[lo, hi)` holds write `w` where it held an older one (a newer
    /// write's content stays).
    pub fn set_newer(&mut self, lo: u64, hi: u64, w: WriteNo) {
        let mut at = lo;
        for (a, b, old) in self.within(lo, hi) {
            if at < a {
                self.set(at, a, w);
            }
            if old < w {
                self.set(a, b, w);
            }
            at = b;
        }
        if at < hi {
            self.set(at, hi, w);
        }
    }

    /// Forget the content of writes older than `w` in `[lo, hi)`.
    pub fn remove_older(&mut self, lo: u64, hi: u64, w: WriteNo) {
        for (a, b, old) in self.within(lo, hi) {
            if old < w {
                self.remove(a, b);
            }
        }
    }

    /// Copy `[lo, hi)` of `from` over this map, where `from` holds
    /// something (a cache's content reaching the media).
    pub fn copy_from(&mut self, from: &ExtentMap, lo: u64, hi: u64) {
        for (a, b, w) in from.within(lo, hi) {
            self.set_newer(a, b, w);
        }
    }

    fn check(&self) -> bool {
        let mut end = 0;
        for (&lo, &(hi, w)) in &self.ext {
            if lo < end || hi <= lo || w == 0 {
                return false;
            }
            end = hi;
        }
        true
    }
}

/// A simulated [`Device`] whose media content can be looked at, and which
/// can lose power.
pub trait SimDevice: Device {
    /// Start keeping track of which write each media sector holds (before
    /// the first I/O). Models that cannot keep track ignore it.
    fn track_media(&mut self) {}

    /// The media content, if tracked: what survives a power cut now (a
    /// RAID 0's as put together at the end of the run or the cut).
    fn media(&self) -> Option<&ExtentMap> {
        None
    }

    /// Whether the model has a volatile write cache that a power cut can
    /// lose (and so takes `power_cut_at`), even if it is switched off.
    fn volatile_cache(&self) -> bool {
        false
    }

    /// The run is over at `now`: a power cut or a vanishing set for later
    /// happens now (the device sat idle until then). Models ignore it.
    fn end_of_run(&mut self, now: Nanos) {
        let _ = now;
    }

    /// Power is lost at `now` (the model has been brought up to `now` with
    /// [`Device::complete`]): what is cached and not on the media is lost
    /// (or, with power-loss protection, written). The caller stops using
    /// the model afterwards.
    fn power_cut(&mut self, now: Nanos) {
        let _ = now;
    }

    /// A note from the run (a fio job starting or ending) at `now`, for a
    /// write log. Devices ignore it; a tap records it.
    fn mark(&mut self, text: &str, now: Nanos) {
        let _ = (text, now);
    }

    /// What the faults did so far, if the device injects any.
    fn fault_counts(&self) -> Option<crate::device::FaultState> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(m: &ExtentMap) -> Vec<(u64, u64, WriteNo)> {
        m.iter().collect()
    }

    #[test]
    fn set_splits_merges_and_forgets() {
        let mut m = ExtentMap::new();
        m.set(0, 100, 1);
        m.set(40, 60, 2);
        assert_eq!(v(&m), vec![(0, 40, 1), (40, 60, 2), (60, 100, 1)]);
        m.set(40, 60, 1);
        assert_eq!(v(&m), vec![(0, 100, 1)]);
        m.remove(10, 20);
        assert_eq!(v(&m), vec![(0, 10, 1), (20, 100, 1)]);
        assert_eq!((m.get(5), m.get(15), m.get(99), m.get(100)), (1, 0, 1, 0));
        m.set(5, 30, 3);
        assert_eq!(v(&m), vec![(0, 5, 1), (5, 30, 3), (30, 100, 1)]);
        assert_eq!(m.sectors(), 100);
        m.remove(0, 1000);
        assert!(m.is_empty());
    }

    #[test]
    fn newer_and_older_rules() {
        let mut m = ExtentMap::new();
        m.set(10, 20, 5);
        m.set_newer(0, 30, 4);
        assert_eq!(v(&m), vec![(0, 10, 4), (10, 20, 5), (20, 30, 4)]);
        m.remove_older(0, 30, 5);
        assert_eq!(v(&m), vec![(10, 20, 5)]);
        let mut media = ExtentMap::new();
        media.set(0, 100, 1);
        media.copy_from(&m, 0, 15);
        assert_eq!(v(&media), vec![(0, 10, 1), (10, 15, 5), (15, 100, 1)]);
    }

    #[test]
    fn matches_a_sector_array() {
        let mut rng = elevator_core::rng::Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut rnd = move |n: u64| rng.below(n);
        let mut m = ExtentMap::new();
        let mut a = [0u64; 300];
        for w in 1..3000u64 {
            let lo = rnd(300);
            let hi = (lo + 1 + rnd(40)).min(300);
            match rnd(4) {
                0 => {
                    m.remove(lo, hi);
                    a[lo as usize..hi as usize].fill(0);
                }
                1 => {
                    m.set_newer(lo, hi, w / 2);
                    for s in &mut a[lo as usize..hi as usize] {
                        *s = (*s).max(w / 2);
                    }
                }
                _ => {
                    m.set(lo, hi, w);
                    a[lo as usize..hi as usize].fill(w);
                }
            }
            for (s, &want) in a.iter().enumerate() {
                assert_eq!(m.get(s as u64), want, "sector {s} after write {w}");
            }
        }
    }
}
