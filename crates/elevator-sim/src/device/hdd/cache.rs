//! The caches. Owns the drive's buffer ([`Cache`]): the write cache's dirty
//! data (`Extent`, `Dirty`: admission, merging, cleaning, the what-if check
//! of `Dirty::fits_after`, and which extent to destage next), the read
//! segment (the last media read and its read-ahead), where read-ahead would
//! start, and read-ahead under way ([`Ahead`]: its progress, reads riding on
//! it, stopping it). It answers whether a read is served from the cache, and
//! is told when the media starts and ends an operation.
//!
//! It knows commands only by their sectors and uses only the arm
//! (`mechanics`); the drive (`drive`) holds the commands, keeps the
//! read-ahead under way as its current media operation, and completes
//! what the cache serves.

use elevator_core::Nanos;

use super::NEVER;
use super::geometry::{Geo, Loc};
use super::mechanics::{Mechanics, Run, sweep};

/// Dirty data in the write cache: `[lba, lba + n)`, with where it starts.
#[derive(Clone, Copy, Debug)]
struct Extent {
    lba: u64,
    n: u64,
    loc: Loc,
    phase: u32,
}

impl Extent {
    fn new(g: &Geo, lba: u64, n: u64) -> Extent {
        let loc = g.locate(lba);
        Extent {
            lba,
            n,
            loc,
            phase: g.phase(&loc),
        }
    }

    fn end(&self) -> u64 {
        self.lba + self.n
    }
}

/// The write cache's dirty data: disjoint, non-adjacent extents sorted by
/// LBA, and so by cylinder.
#[derive(Debug)]
struct Dirty {
    ext: Vec<Extent>,
    sectors: u64,
}

impl Clone for Dirty {
    fn clone(&self) -> Dirty {
        Dirty {
            ext: self.ext.clone(),
            sectors: self.sectors,
        }
    }

    fn clone_from(&mut self, o: &Dirty) {
        self.ext.clone_from(&o.ext);
        self.sectors = o.sectors;
    }
}

impl Dirty {
    /// Whether `[lo, hi)` is wholly dirty.
    fn covers(&self, lo: u64, hi: u64) -> bool {
        let i = self.ext.partition_point(|x| x.lba <= lo);
        i > 0 && self.ext[i - 1].end() >= hi
    }

    /// The extents `[i0, i1)` that `[lo, hi)` overlaps or touches, and how
    /// many of its sectors are dirty already.
    fn span(&self, lo: u64, hi: u64) -> (usize, usize, u64) {
        let i0 = self.ext.partition_point(|x| x.end() < lo);
        let i1 = self.ext.partition_point(|x| x.lba <= hi).max(i0);
        let covered = self.ext[i0..i1]
            .iter()
            .map(|x| x.end().min(hi).saturating_sub(x.lba.max(lo)))
            .sum::<u64>();
        (i0, i1, covered)
    }

    /// Whether writing `[lo, hi)` into the cache keeps it within its size
    /// and segments.
    fn fits(&self, g: &Geo, lo: u64, hi: u64) -> bool {
        let (i0, i1, covered) = self.span(lo, hi);
        let segments = self.ext.len() - (i1 - i0) + 1;
        self.sectors + (hi - lo - covered) <= g.cache_sectors && segments <= g.cache_segments
    }

    /// [`Dirty::fits`] as it will be once `[c0, c1)` is clean, without
    /// changing anything.
    fn fits_after(&self, g: &Geo, lo: u64, hi: u64, c0: u64, c1: u64) -> bool {
        // The extents cleaning touches become at most two pieces.
        let j0 = self.ext.partition_point(|x| x.end() <= c0);
        let j1 = self.ext.partition_point(|x| x.lba < c1).max(j0);
        let cleaned: u64 = self.ext[j0..j1]
            .iter()
            .map(|x| x.end().min(c1) - x.lba.max(c0))
            .sum();
        let mut pieces = [(0, 0); 2];
        let mut np = 0;
        if j1 > j0 {
            if self.ext[j0].lba < c0 {
                pieces[np] = (self.ext[j0].lba, c0);
                np += 1;
            }
            if self.ext[j1 - 1].end() > c1 {
                pieces[np] = (c1, self.ext[j1 - 1].end());
                np += 1;
            }
        }
        let touch = |xs: &[Extent]| {
            let i0 = xs.partition_point(|x| x.end() < lo);
            let i1 = xs.partition_point(|x| x.lba <= hi).max(i0);
            let covered: u64 = xs[i0..i1]
                .iter()
                .map(|x| x.end().min(hi).saturating_sub(x.lba.max(lo)))
                .sum();
            (i1 - i0, covered)
        };
        let (ta, ca) = touch(&self.ext[..j0]);
        let (tb, cb) = touch(&self.ext[j1..]);
        let (mut tp, mut cp) = (0, 0);
        for &(a, b) in &pieces[..np] {
            if b >= lo && a <= hi {
                tp += 1;
                cp += b.min(hi).saturating_sub(a.max(lo));
            }
        }
        let segments = self.ext.len() - (j1 - j0) + np - (ta + tb + tp) + 1;
        let sectors = self.sectors - cleaned + (hi - lo - (ca + cb + cp));
        sectors <= g.cache_sectors && segments <= g.cache_segments
    }

    /// Write `[lo, hi)` into the cache (merging with what it touches).
    fn add(&mut self, g: &Geo, lo: u64, hi: u64) {
        let (i0, i1, covered) = self.span(lo, hi);
        if i1 == i0 + 1 && covered == hi - lo {
            return;
        }
        let (start, end) = if i1 > i0 {
            (lo.min(self.ext[i0].lba), hi.max(self.ext[i1 - 1].end()))
        } else {
            (lo, hi)
        };
        let x = match self.ext.get(i0) {
            Some(x) if i1 > i0 && x.lba == start => Extent {
                n: end - start,
                ..*x
            },
            _ => Extent::new(g, start, end - start),
        };
        if i1 > i0 {
            self.ext[i0] = x;
            if i1 > i0 + 1 {
                self.ext.drain(i0 + 1..i1);
            }
        } else {
            self.ext.insert(i0, x);
        }
        self.sectors += hi - lo - covered;
    }

    /// `[c0, c1)` is on the media now.
    fn clean(&mut self, g: &Geo, c0: u64, c1: u64) {
        let mut i = self.ext.partition_point(|x| x.end() <= c0);
        while let Some(&x) = self.ext.get(i) {
            if x.lba >= c1 {
                break;
            }
            let xe = x.end();
            self.sectors -= xe.min(c1) - x.lba.max(c0);
            match (x.lba < c0, xe > c1) {
                (false, false) => {
                    self.ext.remove(i);
                }
                (false, true) => {
                    self.ext[i] = Extent::new(g, c1, xe - c1);
                    i += 1;
                }
                (true, false) => {
                    self.ext[i].n = c0 - x.lba;
                    i += 1;
                }
                (true, true) => {
                    self.ext[i].n = c0 - x.lba;
                    self.ext.insert(i + 1, Extent::new(g, c1, xe - c1));
                    i += 2;
                }
            }
        }
    }
}

/// The drive's buffer: dirty data, the read segment, where read-ahead would
/// start.
#[derive(Debug)]
pub(super) struct Cache {
    dirty: Dirty,
    /// The read segment, `[start, end)`.
    buf: (u64, u64),
    /// Where read-ahead would start after the last media read.
    ra_from: Option<u64>,
}

impl Clone for Cache {
    fn clone(&self) -> Cache {
        Cache {
            dirty: self.dirty.clone(),
            buf: self.buf,
            ra_from: self.ra_from,
        }
    }

    /// Field by field, reusing the allocations.
    fn clone_from(&mut self, o: &Cache) {
        self.dirty.clone_from(&o.dirty);
        self.buf = o.buf;
        self.ra_from = o.ra_from;
    }
}

/// Where a read's data comes from.
pub(super) enum ReadFrom {
    /// The cache: complete through the interface.
    Cache,
    /// The read-ahead under way, which has read it by this time.
    Ahead(Nanos),
    /// The media: queue it.
    Media,
}

impl Cache {
    /// Empty, with room for `segments` dirty extents.
    pub(super) fn new(segments: usize) -> Cache {
        Cache {
            dirty: Dirty {
                ext: Vec::with_capacity(segments + 1),
                sectors: 0,
            },
            buf: (0, 0),
            ra_from: None,
        }
    }

    /// Whether there is no dirty data.
    #[inline]
    pub(super) fn is_clean(&self) -> bool {
        self.dirty.ext.is_empty()
    }

    /// Dirty sectors and extents.
    #[inline]
    pub(super) fn dirt(&self) -> (u64, u64) {
        (self.dirty.sectors, self.dirty.ext.len() as u64)
    }

    /// Take a write of `[lo, hi)` into the write cache if it fits; whether
    /// it did.
    #[inline]
    pub(super) fn admit(&mut self, g: &Geo, lo: u64, hi: u64) -> bool {
        if !self.dirty.fits(g, lo, hi) {
            return false;
        }
        self.dirty.add(g, lo, hi);
        true
    }

    /// Whether a write of `[lo, hi)` would fit once `[c0, c1)` is clean,
    /// without changing anything.
    #[inline]
    pub(super) fn fits_after(&self, g: &Geo, lo: u64, hi: u64, c0: u64, c1: u64) -> bool {
        self.dirty.fits_after(g, lo, hi, c0, c1)
    }

    /// Where a read of `[lo, hi)` arriving at `t` is served from, with
    /// `ahead` the read-ahead under way, if any (stretched if the read
    /// rides on it).
    pub(super) fn read(
        &self,
        g: &Geo,
        ahead: Option<&mut Ahead>,
        lo: u64,
        hi: u64,
        t: Nanos,
    ) -> ReadFrom {
        if self.dirty.covers(lo, hi) {
            return ReadFrom::Cache;
        }
        if let Some(ra) = ahead {
            let limit = ra.stop.unwrap_or(NEVER);
            if lo >= self.buf.0 && lo <= ra.target && hi <= limit {
                let te = ra_time_at(g, ra, hi);
                if te <= t {
                    return ReadFrom::Cache;
                }
                if hi > ra.target {
                    ra.target = (hi + g.read_ahead).min(g.capacity);
                    let from = ra.ck_lba;
                    ra.end = g.transfer(g.locate(from), ra.target - from, ra.ck_t).end;
                }
                if hi > ra.ck_lba {
                    let x = g.transfer(g.locate(ra.ck_lba), hi - ra.ck_lba, ra.ck_t);
                    ra.ck_lba = hi;
                    ra.ck_end = x.end;
                    ra.ck_t = x.next_t;
                }
                ra.rider_end = ra.rider_end.max(te);
                return ReadFrom::Ahead(te);
            }
        } else if self.buf.0 <= lo && hi <= self.buf.1 {
            return ReadFrom::Cache;
        }
        ReadFrom::Media
    }

    /// The dirty extent with the shortest positioning time from the head
    /// at `t`, if it beats `best` (ties: queued commands first, then the
    /// lower LBA): its `(cost, tie-break)` and index.
    pub(super) fn best_dirty(
        &self,
        g: &Geo,
        m: &Mechanics,
        t: Nanos,
        best: (u64, u64),
    ) -> ((u64, u64), Option<usize>) {
        let phase0 = t % g.rev;
        let ext = &self.dirty.ext;
        let (best, j) = sweep(
            g,
            m.cyl(),
            ext,
            |x| x.loc.cyl,
            |x, seek| {
                let c = m.cost(g, t, phase0, seek, x.loc.head, x.phase, true, 0);
                (c, (1 << 63) | x.lba)
            },
            best,
        );
        (best, (j != usize::MAX).then_some(j))
    }

    /// The media starts on `[lo, hi)` (a write, or a read): a write makes
    /// an overlapping read segment stale, and read-ahead no longer follows
    /// the last read.
    #[inline]
    pub(super) fn media_starts(&mut self, write: bool, lo: u64, hi: u64) {
        if write && lo < self.buf.1 && self.buf.0 < hi {
            self.buf = (0, 0);
        }
        self.ra_from = None;
    }

    /// Start destaging (the start of) dirty extent `j`, whose first sector
    /// comes under the head `cost` after `t`: its sectors and timing.
    pub(super) fn destage(
        &mut self,
        g: &Geo,
        t: Nanos,
        j: usize,
        cost: u64,
    ) -> Option<(u64, u64, Run)> {
        let &x = self.dirty.ext.get(j)?;
        let n = x.n.min(g.chunk);
        let run = Run::new(g, x.loc, n, t, t + cost);
        self.media_starts(true, x.lba, x.lba + n);
        Some((x.lba, n, run))
    }

    /// A destage of `[lo, hi)` has ended: it is clean.
    #[inline]
    pub(super) fn destaged(&mut self, g: &Geo, lo: u64, hi: u64) {
        self.dirty.clean(g, lo, hi);
    }

    /// A media read of `[lo, hi)` has ended: it is the read segment, and
    /// read-ahead would continue it.
    #[inline]
    pub(super) fn read_done(&mut self, lo: u64, hi: u64) {
        self.buf = (lo, hi);
        self.ra_from = Some(hi);
    }

    /// Where to read ahead now that the media is free, if anywhere (asked
    /// once: the answer is used up).
    #[inline]
    pub(super) fn read_ahead_from(&mut self, g: &Geo) -> Option<u64> {
        let from = self.ra_from.take()?;
        (g.read_ahead > 0 && from < g.capacity).then_some(from)
    }

    /// Read-ahead `ra` has ended at `t`: the read segment grows by what it
    /// read; its timing.
    pub(super) fn ahead_done(&mut self, g: &Geo, ra: &Ahead, t: Nanos) -> Run {
        let reached = ra.stop.unwrap_or(ra.target);
        let last = if reached > ra.lba0 {
            reached - 1
        } else {
            ra.lba0
        };
        let loc = g.locate(last.min(g.capacity - 1));
        let t0 = ra.t0.min(t);
        if self.buf.1 == ra.lba0 {
            self.buf.1 = reached;
        } else {
            self.buf = (ra.lba0, reached);
        }
        Run {
            end: t,
            pos: t0 - ra.start.min(t0),
            xfer: t - t0,
            cyl: loc.cyl,
            head: loc.head,
            start: t0,
            start_cyl: g.locate(ra.lba0.min(g.capacity - 1)).cyl,
        }
    }
}

/// Read-ahead in progress.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ahead {
    start: Nanos,
    /// First sector read ahead, and when it starts under the head.
    lba0: u64,
    t0: Nanos,
    /// Checkpoint: a sector, when the sector before it has been read, and
    /// when it starts under the head.
    ck_lba: u64,
    ck_end: Nanos,
    ck_t: Nanos,
    /// Where it stops unless stretched.
    target: u64,
    end: Nanos,
    /// Latest data time of a read riding on it.
    rider_end: Nanos,
    /// Set when stopped early: the first sector not read.
    stop: Option<u64>,
}

impl Ahead {
    /// Read ahead from `from`, the heads where `m` says, starting at `t`.
    pub(super) fn start(g: &Geo, m: &Mechanics, t: Nanos, from: u64) -> Ahead {
        let loc = g.locate(from);
        let t0 = m.read_start(g, t, &loc);
        let target = (from + g.read_ahead).min(g.capacity);
        let end = g.transfer(loc, target - from, t0).end;
        Ahead {
            start: t,
            lba0: from,
            t0,
            ck_lba: from,
            ck_end: t0,
            ck_t: t0,
            target,
            end,
            rider_end: 0,
            stop: None,
        }
    }

    /// When it ends.
    #[inline]
    pub(super) fn end(&self) -> Nanos {
        self.end
    }

    /// Whether it has been stopped early.
    #[inline]
    pub(super) fn stopping(&self) -> bool {
        self.stop.is_some()
    }

    /// The media is needed from `t`: stop once the riders' data is read.
    pub(super) fn stop_at(&mut self, g: &Geo, t: Nanos) {
        // Riders' data is read by `end`, and the checkpoint is the end of
        // the last rider (or the start).
        let end = t.max(self.rider_end);
        let stop = if end >= self.ck_t {
            g.reached(self.ck_lba, self.ck_t, end, self.target)
        } else {
            self.ck_lba.min(self.target)
        };
        self.stop = Some(stop);
        self.end = end;
    }
}

/// When a read-ahead has read every sector before `hi`.
fn ra_time_at(g: &Geo, ra: &Ahead, hi: u64) -> Nanos {
    if hi <= ra.lba0 {
        return 0;
    }
    if hi == ra.ck_lba {
        return ra.ck_end;
    }
    let (from, t) = if hi > ra.ck_lba {
        (ra.ck_lba, ra.ck_t)
    } else {
        (ra.lba0, ra.t0)
    };
    g.transfer(g.locate(from), hi - from, t).end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::hdd::HddParams;

    fn geo(name: &str) -> Geo {
        Geo::new(&HddParams::preset(name).unwrap()).unwrap()
    }

    #[test]
    fn fits_after_agrees_with_cleaning_first() {
        let mut p = HddParams::preset("hdd-7200").unwrap();
        p.set("cache_segments", "6").unwrap();
        p.set("cache_size", "40k").unwrap();
        let g = Geo::new(&p).unwrap();
        let mut rng = elevator_core::rng::Rng::new(0x1234_5678_9abc_def1);
        let mut rnd = move |n: u64| rng.below(n);
        let mut d = Dirty {
            ext: Vec::new(),
            sectors: 0,
        };
        let mut checked = 0;
        for _ in 0..20_000 {
            let lo = 1000 + rnd(400);
            let hi = lo + 1 + rnd(40);
            if rnd(3) > 0 && d.fits(&g, lo, hi) {
                d.add(&g, lo, hi);
            }
            let c0 = 1000 + rnd(440);
            let c1 = c0 + 1 + rnd(60);
            let (wlo, whi) = (1000 + rnd(440), 0);
            let whi = whi + wlo + 1 + rnd(50);
            let mut after = d.clone();
            after.clean(&g, c0, c1);
            assert_eq!(
                d.fits_after(&g, wlo, whi, c0, c1),
                after.fits(&g, wlo, whi),
                "{:?} clean {c0}..{c1} write {wlo}..{whi}",
                d.ext.iter().map(|x| (x.lba, x.end())).collect::<Vec<_>>()
            );
            checked += 1;
            if rnd(4) == 0 {
                d.clean(&g, c0, c1);
            }
            let total: u64 = d.ext.iter().map(|x| x.n).sum();
            assert_eq!(total, d.sectors);
            assert!(d.ext.windows(2).all(|w| w[0].end() < w[1].lba));
        }
        assert_eq!(checked, 20_000);
    }

    #[test]
    fn dirty_extents_merge_and_clean() {
        let g = geo("hdd-7200");
        let mut d = Dirty {
            ext: Vec::new(),
            sectors: 0,
        };
        d.add(&g, 100, 108);
        d.add(&g, 200, 208);
        d.add(&g, 108, 116); // touches the first
        assert_eq!(d.ext.len(), 2);
        assert_eq!((d.ext[0].lba, d.ext[0].n), (100, 16));
        d.add(&g, 104, 204); // bridges both
        assert_eq!(d.ext.len(), 1);
        assert_eq!((d.ext[0].lba, d.ext[0].n, d.sectors), (100, 108, 108));
        assert!(d.covers(150, 208) && !d.covers(150, 209));
        d.clean(&g, 120, 130); // splits
        assert_eq!(d.ext.len(), 2);
        assert_eq!(d.sectors, 98);
        assert_eq!((d.ext[1].lba, d.ext[1].loc), (130, g.locate(130)));
        d.clean(&g, 0, 125);
        d.clean(&g, 200, 1000);
        assert_eq!(
            (d.ext.len(), d.ext[0].lba, d.ext[0].n, d.sectors),
            (1, 130, 70, 70)
        );
    }
}
