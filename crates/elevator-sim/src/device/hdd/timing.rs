//! Timing on the geometry: rotational phase and waits, positioning (seek,
//! head switch, settle), and transfers across tracks (`Xfer`), forward
//! (`Geo::transfer`) and inverted (`Geo::reached`), and interface time.

use elevator_core::Nanos;

use super::geometry::{Geo, Loc};

/// The outcome of a transfer.
#[derive(Clone, Copy, Debug)]
pub(super) struct Xfer {
    /// When the last sector has passed under the head.
    pub(super) end: Nanos,
    /// Track switches and rotational slack inside the transfer.
    pub(super) gaps: u64,
    /// Where the last sector is.
    pub(super) cyl: u32,
    pub(super) head: u32,
    /// When the sector after the last would start under the head.
    pub(super) next_t: Nanos,
}

impl Geo {
    /// The rotational phase (ns into the revolution) at which `loc`'s sector
    /// starts under the head.
    #[inline]
    pub(super) fn phase(&self, loc: &Loc) -> u32 {
        let s = u64::from(self.zones[loc.zone as usize].spt);
        let x = u64::from(loc.sector) + u64::from(loc.off);
        let x = if x >= s { x - s } else { x };
        (x * self.rev / s) as u32
    }

    /// `a mod rev` for `a < 2^32` without a division.
    #[inline]
    pub(super) fn fastmod(&self, a: u32) -> u32 {
        let low = self.rev_m.wrapping_mul(u64::from(a));
        ((u128::from(low) * u128::from(self.rev)) >> 64) as u32
    }

    /// Time from `t` until phase `phase` is under the head.
    #[inline]
    pub(super) fn wait_at(&self, phase: u32, t: Nanos) -> u64 {
        let p = t % self.rev;
        let ph = u64::from(phase);
        if ph >= p { ph - p } else { ph + self.rev - p }
    }

    /// Positioning from (`cyl0`, `head0`) to (`cyl`, `head`): seek or head
    /// switch (the larger), plus the write settle after any movement.
    #[inline]
    pub(super) fn lead(&self, cyl0: u32, head0: u32, cyl: u32, head: u32, write: bool) -> u32 {
        self.lead_after(self.seek.ns(cyl.abs_diff(cyl0)), head0, head, write)
    }

    /// [`Geo::lead`] given the seek (which is 0 exactly when the cylinder
    /// stays).
    #[inline]
    pub(super) fn lead_after(&self, seek: u32, head0: u32, head: u32, write: bool) -> u32 {
        let moved_head = head != head0;
        let p = seek.max(self.head_switch * u32::from(moved_head));
        p + self.settle * u32::from(write & ((seek != 0) | moved_head))
    }

    /// Duration of `k` sectors starting at `x = sector + off` on a track of
    /// `s` sectors.
    #[inline]
    fn dur(&self, s: u64, x: u64, k: u64) -> u64 {
        (x + k) * self.rev / s - x * self.rev / s
    }

    /// The track after `loc` in LBA order, and the switch time to it.
    pub(super) fn next_track(&self, loc: &Loc) -> Option<(Loc, u32)> {
        let z = &self.zones[loc.zone as usize];
        let s = z.spt;
        if loc.head + 1 < self.heads {
            let off = (u64::from(loc.off) + u64::from(z.head_skew)) % u64::from(s);
            return Some((
                Loc {
                    head: loc.head + 1,
                    sector: 0,
                    off: off as u32,
                    ..*loc
                },
                self.head_switch,
            ));
        }
        if loc.cyl + 1 < z.end_cyl {
            let off = (u64::from(loc.off) + u64::from(z.cyl_skew)) % u64::from(s);
            return Some((
                Loc {
                    cyl: loc.cyl + 1,
                    head: 0,
                    sector: 0,
                    off: off as u32,
                    ..*loc
                },
                self.cyl_switch,
            ));
        }
        let next = self.zones.get(loc.zone as usize + 1)?;
        Some((
            Loc {
                zone: loc.zone + 1,
                cyl: next.first_cyl,
                head: 0,
                sector: 0,
                off: next.base_off,
            },
            self.cyl_switch,
        ))
    }

    /// Transfer `n > 0` sectors from `loc`, whose first sector starts under
    /// the head at `t`.
    pub(super) fn transfer(&self, mut loc: Loc, mut n: u64, mut t: Nanos) -> Xfer {
        let mut gaps = 0;
        loop {
            let s = u64::from(self.zones[loc.zone as usize].spt);
            let x = u64::from(loc.sector) + u64::from(loc.off);
            let avail = s - u64::from(loc.sector);
            let k = n.min(avail);
            t += self.dur(s, x, k);
            n -= k;
            let here = Xfer {
                end: t,
                gaps,
                cyl: loc.cyl,
                head: loc.head,
                next_t: t,
            };
            if k < avail {
                return here;
            }
            let Some((next, sw)) = self.next_track(&loc) else {
                return here;
            };
            let arr = t + u64::from(sw);
            let start = arr + self.wait_at(self.phase(&next), arr);
            if n == 0 {
                return Xfer {
                    next_t: start,
                    ..here
                };
            }
            gaps += start - t;
            t = start;
            loc = next;
        }
    }

    /// The first sector not yet read at time `t` by a transfer whose sector
    /// `lba` starts under the head at `t0`, stopping at `limit`.
    pub(super) fn reached(&self, lba: u64, t0: Nanos, t: Nanos, limit: u64) -> u64 {
        if t <= t0 || lba >= limit {
            return lba.min(limit);
        }
        let mut loc = self.locate(lba);
        let (mut lba, mut ts) = (lba, t0);
        loop {
            let s = u64::from(self.zones[loc.zone as usize].spt);
            let x = u64::from(loc.sector) + u64::from(loc.off);
            let avail = s - u64::from(loc.sector);
            let whole = self.dur(s, x, avail);
            let elapsed = t - ts;
            if elapsed < whole {
                // Largest k with dur(x, k) <= elapsed.
                let e = x * self.rev / s + elapsed;
                let k = ((e + 1) * s - 1) / self.rev - x;
                return (lba + k.min(avail)).min(limit);
            }
            lba += avail;
            if lba >= limit {
                return limit;
            }
            let end = ts + whole;
            let Some((next, sw)) = self.next_track(&loc) else {
                return lba;
            };
            let arr = end + u64::from(sw);
            let start = arr + self.wait_at(self.phase(&next), arr);
            if t <= start {
                return lba;
            }
            ts = start;
            loc = next;
        }
    }

    /// Interface time for `n` sectors.
    #[inline]
    pub(super) fn iface(&self, n: u64) -> u64 {
        n * self.iface_ps / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::hdd::HddParams;

    fn geo(name: &str) -> Geo {
        Geo::new(&HddParams::preset(name).unwrap()).unwrap()
    }

    #[test]
    fn fastmod_matches_remainder() {
        let g = geo("hdd-7200");
        let mut rng = elevator_core::rng::Rng::new(12345);
        for _ in 0..100_000 {
            let a = rng.below(g.kt + g.rev) as u32;
            assert_eq!(g.fastmod(a), a % g.rev as u32);
        }
        assert_eq!(g.fastmod(0), 0);
        assert_eq!(g.fastmod(g.rev as u32), 0);
    }

    #[test]
    fn reached_inverts_transfer() {
        let g = geo("hdd-7200");
        let lba = 3000;
        let t0 = 1_000_000;
        for n in [1u64, 100, 255, 256, 3000, 7000] {
            let x = g.transfer(g.locate(lba), n, t0);
            assert_eq!(g.reached(lba, t0, x.end, u64::MAX), lba + n, "n={n}");
            assert!(g.reached(lba, t0, x.end - 1, u64::MAX) < lba + n);
        }
    }
}
