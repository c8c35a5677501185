//! The caches: the write cache's dirty data (`Extent`, `Dirty`: admission,
//! merging, cleaning, and the what-if check of `Dirty::fits_after`), reads
//! served from cache (dirty data, the read segment, riding on read-ahead),
//! admitting writes that waited for room, starting a destage, and
//! read-ahead (`Ahead`).

use elevator_core::Nanos;

use super::NEVER;
use super::drive::{Media, State};
use super::geometry::{Geo, Loc};

/// Dirty data in the write cache: `[lba, lba + n)`, with where it starts.
#[derive(Clone, Copy, Debug)]
pub(super) struct Extent {
    pub(super) lba: u64,
    n: u64,
    pub(super) loc: Loc,
    pub(super) phase: u32,
}

impl Extent {
    pub(super) fn new(g: &Geo, lba: u64, n: u64) -> Extent {
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
pub(super) struct Dirty {
    pub(super) ext: Vec<Extent>,
    pub(super) sectors: u64,
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
    pub(super) fn fits(&self, g: &Geo, lo: u64, hi: u64) -> bool {
        let (i0, i1, covered) = self.span(lo, hi);
        let segments = self.ext.len() - (i1 - i0) + 1;
        self.sectors + (hi - lo - covered) <= g.cache_sectors && segments <= g.cache_segments
    }

    /// [`Dirty::fits`] as it will be once `[c0, c1)` is clean, without
    /// changing anything.
    pub(super) fn fits_after(&self, g: &Geo, lo: u64, hi: u64, c0: u64, c1: u64) -> bool {
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
    pub(super) fn add(&mut self, g: &Geo, lo: u64, hi: u64) {
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
    pub(super) fn clean(&mut self, g: &Geo, c0: u64, c1: u64) {
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

/// Read-ahead in progress.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ahead {
    pub(super) start: Nanos,
    /// First sector read ahead, and when it starts under the head.
    pub(super) lba0: u64,
    pub(super) t0: Nanos,
    /// Checkpoint: a sector, when the sector before it has been read, and
    /// when it starts under the head.
    pub(super) ck_lba: u64,
    ck_end: Nanos,
    pub(super) ck_t: Nanos,
    /// Where it stops unless stretched.
    pub(super) target: u64,
    pub(super) end: Nanos,
    /// Latest data time of a read riding on it.
    pub(super) rider_end: Nanos,
    /// Set when stopped early: the first sector not read.
    pub(super) stop: Option<u64>,
}

impl State {
    pub(super) fn classify_read(&mut self, g: &Geo, s: u32, t: Nanos) {
        let sl = self.slots[s as usize];
        let (lo, hi) = (sl.lba, sl.lba + sl.n);
        if self.dirty.covers(lo, hi) {
            self.via_interface(g, s, t);
            return;
        }
        if let Media::Ahead(mut ra) = self.media {
            let limit = ra.stop.unwrap_or(NEVER);
            if lo >= self.buf.0 && lo <= ra.target && hi <= limit {
                let te = ra_time_at(g, &ra, hi);
                if te <= t {
                    self.via_interface(g, s, t);
                    return;
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
                self.media = Media::Ahead(ra);
                self.push_timed(s, te.max(sl.ready));
                return;
            }
        } else if self.buf.0 <= lo && hi <= self.buf.1 {
            self.via_interface(g, s, t);
            return;
        }
        self.queue_media(g, s, false);
    }

    pub(super) fn accept_waiting(&mut self, g: &Geo, t: Nanos) {
        while let Some(&s) = self.waiting.first() {
            let sl = self.slots[s as usize];
            let (lo, hi) = (sl.lba, sl.lba + sl.n);
            if !self.dirty.fits(g, lo, hi) {
                break;
            }
            self.dirty.add(g, lo, hi);
            self.waiting.remove(0);
            self.via_interface(g, s, t);
        }
    }

    /// Destage (the start of) dirty extent `j`, whose first sector comes
    /// under the head `cost` after `t`.
    pub(super) fn start_destage(&mut self, g: &Geo, t: Nanos, j: usize, cost: u64) {
        let Some(&x) = self.dirty.ext.get(j) else {
            return;
        };
        let n = x.n.min(g.chunk);
        let t1 = t + cost;
        let tr = g.transfer(x.loc, n, t1);
        if x.lba < self.buf.1 && self.buf.0 < x.lba + n {
            self.buf = (0, 0);
        }
        self.media = Media::Destage {
            lba: x.lba,
            n,
            end: tr.end,
            pos: t1 - t + tr.gaps,
            xfer: tr.end - t1 - tr.gaps,
            cyl: tr.cyl,
            head: tr.head,
        };
        self.ra_from = None;
    }

    pub(super) fn start_ahead(&mut self, g: &Geo, t: Nanos, from: u64) {
        let loc = g.locate(from);
        let arr = t + u64::from(g.lead(self.cyl, self.head, loc.cyl, loc.head, false));
        let t0 = arr + g.wait_at(g.phase(&loc), arr);
        let target = (from + g.read_ahead).min(g.capacity);
        let end = g.transfer(loc, target - from, t0).end;
        self.media = Media::Ahead(Ahead {
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
        });
    }
}

/// When a read-ahead has read every sector before `hi`.
pub(super) fn ra_time_at(g: &Geo, ra: &Ahead, hi: u64) -> Nanos {
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
        let mut x = 0x1234_5678_9abc_def1u64;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
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
