//! Geometry: zones, tracks and skew, `Geo` (everything fixed when a disk is
//! built, checked against the parameters), and locating an LBA (`Loc`,
//! and the public [`HddLocation`]). Timing on a `Geo` is in `timing`.

use elevator_core::Limits;

use super::params::{HddParams, range, within};
use super::seek::{SeekCurve, SeekTable};
use crate::device::null::checked_limits;
use crate::device::param::ParamError;

/// Division of 32-bit values by a fixed divisor with a multiplication
/// (Lemire, Kaser & Kurz, "Faster remainder by direct computation", 2019).
#[derive(Clone, Copy, Debug)]
pub(super) struct Div32 {
    d: u32,
    /// `ceil(2^64 / d)`, or 0 for `d == 1`.
    m: u64,
}

impl Div32 {
    pub(super) fn new(d: u32) -> Div32 {
        let d = d.max(1);
        Div32 {
            d,
            m: if d == 1 {
                0
            } else {
                u64::MAX / u64::from(d) + 1
            },
        }
    }

    /// `(n / d, n % d)`.
    #[inline]
    fn divrem(&self, n: u32) -> (u32, u32) {
        if self.m == 0 {
            return (n, 0);
        }
        let q = ((u128::from(self.m) * u128::from(n)) >> 64) as u32;
        (q, n - q * self.d)
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Zone {
    pub(super) first_cyl: u32,
    pub(super) end_cyl: u32,
    pub(super) spt: u32,
    spt_div: Div32,
    first_lba: u64,
    end_lba: u64,
    /// Skew after a head switch, sectors.
    pub(super) head_skew: u32,
    /// Skew after a cylinder switch (last head to head 0), sectors.
    pub(super) cyl_skew: u32,
    /// Skew from one cylinder's head 0 to the next one's.
    cyl_adv: u32,
    /// Skew of the zone's first track.
    pub(super) base_off: u32,
}

/// Where a sector is: zone, cylinder, head, sector in track, and the track's
/// skew (the angular offset of its sector 0, in sectors).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Loc {
    pub(super) zone: u32,
    pub(super) cyl: u32,
    pub(super) head: u32,
    pub(super) sector: u32,
    pub(super) off: u32,
}

/// Where a sector of the disk is, as [`Hdd::locate`](super::Hdd::locate) reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HddLocation {
    /// Zone, 0 outermost.
    pub zone: u32,
    /// Cylinder, 0 outermost.
    pub cylinder: u32,
    /// Head.
    pub head: u32,
    /// Sector within the track.
    pub sector: u32,
    /// Sectors per track of the zone.
    pub sectors_per_track: u32,
}

/// Everything fixed at build time.
#[derive(Clone, Debug)]
pub(super) struct Geo {
    pub(super) rev: u64,
    pub(super) rev_m: u64,
    pub(super) kt: u64,
    pub(super) heads: u32,
    heads_div: Div32,
    pub(super) cylinders: u32,
    pub(super) zones: Vec<Zone>,
    /// Each zone's end LBA, for the search in `locate`.
    zone_end: Vec<u64>,
    pub(super) capacity: u64,
    pub(super) curve: SeekCurve,
    pub(super) seek: SeekTable,
    pub(super) head_switch: u32,
    pub(super) cyl_switch: u32,
    pub(super) settle: u32,
    pub(super) overhead: u64,
    pub(super) ncq: u32,
    pub(super) age_limit: u64,
    pub(super) write_cache: bool,
    pub(super) cache_sectors: u64,
    pub(super) cache_segments: usize,
    pub(super) read_ahead: u64,
    /// Interface time per sector, picoseconds.
    pub(super) iface_ps: u64,
    pub(super) chunk: u64,
    pub(super) limits: Limits,
    pub(super) outer_rate: f64,
    pub(super) inner_rate: f64,
    pub(super) rpm: f64,
}

impl Geo {
    pub(super) fn new(p: &HddParams) -> Result<Geo, ParamError> {
        within("rpm", p.rpm, 1000.0, 20000.0, "rpm")?;
        within("cylinders", f64::from(p.cylinders), 16.0, 10_000_000.0, "")?;
        within("heads", f64::from(p.heads), 1.0, 64.0, "")?;
        within("zones", f64::from(p.zones), 1.0, 1000.0, "")?;
        if p.zones > p.cylinders {
            return Err(range(
                "zones",
                f64::from(p.zones),
                format!("more zones than the {} cylinders", p.cylinders),
            ));
        }
        within("outer_rate", p.outer_rate, 1.0, 10_000.0, "MB/s")?;
        within(
            "inner_rate",
            p.inner_rate,
            1.0,
            p.outer_rate,
            "MB/s (at most outer_rate)",
        )?;
        within("seek_t2t", p.seek_t2t, 0.001, 1000.0, "ms")?;
        within(
            "seek_full",
            p.seek_full,
            p.seek_t2t,
            1000.0,
            "ms (at least seek_t2t)",
        )?;
        within(
            "seek_avg",
            p.seek_avg,
            p.seek_t2t,
            p.seek_full,
            "ms (seek_t2t..=seek_full)",
        )?;
        within("head_switch", p.head_switch, 0.0, 100.0, "ms")?;
        within("write_settle", p.write_settle, 0.0, 100.0, "ms")?;
        within("overhead", p.overhead, 0.0, 100_000.0, "us")?;
        within("ncq", f64::from(p.ncq), 0.0, 1024.0, "")?;
        within("age_limit", p.age_limit, 0.0, 3_600_000.0, "ms")?;
        within("interface_rate", p.interface_rate, 1.0, 1_000_000.0, "MB/s")?;
        within(
            "cache_segments",
            f64::from(p.cache_segments),
            1.0,
            4096.0,
            "",
        )?;
        if p.write_cache && p.cache_size < 4096 {
            return Err(range(
                "cache_size",
                p.cache_size as f64,
                "must be at least 4096 bytes with write_cache=1",
            ));
        }
        within(
            "cache_size",
            p.cache_size as f64,
            0.0,
            (16u64 << 30) as f64,
            "bytes",
        )?;
        within(
            "read_ahead",
            p.read_ahead as f64,
            0.0,
            (64u64 << 20) as f64,
            "bytes",
        )?;
        let lbs = p.logical_block_size;
        if lbs != 512 && lbs != 4096 {
            return Err(range(
                "logical_block_size",
                f64::from(lbs),
                "must be 512 or 4096",
            ));
        }
        let block = u64::from(lbs / 512);

        let rev = (60e9 / p.rpm).round() as u64;
        let heads = p.heads;
        let cylinders = p.cylinders;
        let max_d = cylinders - 1;
        let curve = SeekCurve::fit(p.seek_t2t, p.seek_avg, p.seek_full, f64::from(max_d)).map_err(
            |(lo, hi)| {
                range(
                    "seek_avg",
                    p.seek_avg,
                    format!(
                        "with seek_t2t={} and seek_full={} over {} cylinders the two-part curve reaches averages {:.3}..={:.3} ms",
                        p.seek_t2t, p.seek_full, cylinders, lo, hi
                    ),
                )
            },
        )?;
        let seek = SeekTable::new(&curve, max_d);
        let head_switch = (p.head_switch * 1e6).round() as u32;
        let cyl_switch = seek.ns(1).max(head_switch);

        // Zones.
        let nz = p.zones;
        let mut zones = Vec::with_capacity(nz as usize);
        let mut lba = 0u64;
        for i in 0..nz {
            let frac = if nz > 1 {
                f64::from(i) / f64::from(nz - 1)
            } else {
                0.0
            };
            let rate = p.outer_rate + (p.inner_rate - p.outer_rate) * frac;
            let spt = (rate * rev as f64 / 512_000.0).round();
            if !(1.0..=1_048_576.0).contains(&spt) {
                return Err(range(
                    if i == 0 { "outer_rate" } else { "inner_rate" },
                    rate,
                    format!(
                        "gives {spt} sectors per track at {} rpm; must be 1..=1048576",
                        p.rpm
                    ),
                ));
            }
            let spt = spt as u32;
            let first_cyl = (u64::from(i) * u64::from(cylinders) / u64::from(nz)) as u32;
            let end_cyl = (u64::from(i + 1) * u64::from(cylinders) / u64::from(nz)) as u32;
            let s = u64::from(spt);
            let skew = |ns: u32| ((u64::from(ns) * s).div_ceil(rev) % s) as u32;
            let head_skew = skew(head_switch);
            let cyl_skew = skew(cyl_switch);
            let cyl_adv =
                ((u64::from(heads - 1) * u64::from(head_skew) + u64::from(cyl_skew)) % s) as u32;
            let base_off = match zones.last() {
                None => 0,
                Some(z) => {
                    let z: &Zone = z;
                    let ps = u64::from(z.spt);
                    let last = (u64::from(z.base_off)
                        + u64::from(z.end_cyl - z.first_cyl - 1) * u64::from(z.cyl_adv)
                        + u64::from(heads - 1) * u64::from(z.head_skew))
                        % ps;
                    let end_phase = last * rev / ps;
                    let target = (end_phase + u64::from(cyl_switch)) % rev;
                    ((target * s).div_ceil(rev) % s) as u32
                }
            };
            let sectors = u64::from(end_cyl - first_cyl) * u64::from(heads) * s;
            zones.push(Zone {
                first_cyl,
                end_cyl,
                spt,
                spt_div: Div32::new(spt),
                first_lba: lba,
                end_lba: lba + sectors,
                head_skew,
                cyl_skew,
                cyl_adv,
                base_off,
            });
            lba += sectors;
        }
        let geometry = lba;
        let capacity = if p.capacity == 0 {
            geometry / block * block
        } else {
            if p.capacity > geometry.saturating_mul(512) {
                return Err(range(
                    "capacity",
                    p.capacity as f64,
                    format!(
                        "the zones hold only {geometry} sectors ({} bytes: cylinders × heads × sectors per track); raise cylinders, heads or the rates, or set capacity=0",
                        geometry * 512
                    ),
                ));
            }
            p.capacity / 512 / block * block
        };
        if capacity == 0 {
            return Err(range(
                "capacity",
                p.capacity as f64,
                "must hold at least one logical block",
            ));
        }
        let max_sectors = p.max_sectors / (block as u32) * (block as u32);
        if max_sectors == 0 || max_sectors > 65535 {
            return Err(range(
                "max_sectors",
                f64::from(p.max_sectors),
                "must be one logical block..=65535 sectors",
            ));
        }
        let limits = checked_limits(
            HddParams::MODEL,
            Limits {
                logical_block_size: lbs,
                max_sectors,
                // Linux sd's WRITE SAME(10) limit, 0xffff blocks.
                max_write_zeroes_sectors: 0xffff / (block as u32) * (block as u32),
                capacity,
                ..Limits::default()
            },
        )?;

        let settle = (p.write_settle * 1e6).round() as u32;
        let overhead = (p.overhead * 1e3).round() as u64;
        // Rotational waits are taken modulo the revolution from a value kept
        // below `kt + rev`, which must stay under 2^32 for `fastmod`.
        let lead_max = overhead
            + u64::from(seek.ns(max_d))
            + u64::from(head_switch)
            + u64::from(settle)
            + 2 * rev;
        let kt = lead_max.div_ceil(rev) * rev + rev;
        debug_assert!(kt + rev < 1 << 32);
        Ok(Geo {
            rev,
            rev_m: u64::MAX / rev + 1,
            kt,
            heads,
            heads_div: Div32::new(heads),
            cylinders,
            zone_end: zones.iter().map(|z| z.end_lba).collect(),
            zones,
            capacity,
            curve,
            seek,
            head_switch,
            cyl_switch,
            settle,
            overhead,
            ncq: p.ncq,
            age_limit: (p.age_limit * 1e6).round() as u64,
            write_cache: p.write_cache,
            cache_sectors: p.cache_size / 512,
            cache_segments: p.cache_segments as usize,
            read_ahead: p.read_ahead / 512,
            iface_ps: (512.0 * 1e6 / p.interface_rate).round() as u64,
            chunk: u64::from(max_sectors),
            limits,
            outer_rate: p.outer_rate,
            inner_rate: p.inner_rate,
            rpm: p.rpm,
        })
    }

    /// Where `lba` (below the geometry's end) is.
    pub(super) fn locate(&self, lba: u64) -> Loc {
        let last = self.zones.len() - 1;
        let zi = self.zone_end.partition_point(|&e| e <= lba).min(last);
        let z = &self.zones[zi];
        let rel = lba.saturating_sub(z.first_lba);
        let s = u64::from(z.spt);
        // 32-bit divisions where the values allow (they do on the presets).
        let (track, sector) = match u32::try_from(rel) {
            Ok(r) => {
                let (q, r) = z.spt_div.divrem(r);
                (u64::from(q), r)
            }
            Err(_) => (rel / s, (rel % s) as u32),
        };
        let (crel, head) = match u32::try_from(track) {
            Ok(tr) => {
                let (q, r) = self.heads_div.divrem(tr);
                (u64::from(q), r)
            }
            Err(_) => (
                track / u64::from(self.heads),
                (track % u64::from(self.heads)) as u32,
            ),
        };
        let off = u64::from(z.base_off)
            + crel * u64::from(z.cyl_adv)
            + u64::from(head) * u64::from(z.head_skew);
        let off = match u32::try_from(off) {
            Ok(o) => u64::from(z.spt_div.divrem(o).1),
            Err(_) => off % s,
        };
        Loc {
            zone: zi as u32,
            cyl: z.first_cyl + crel as u32,
            head,
            sector,
            off: off as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(name: &str) -> Geo {
        Geo::new(&HddParams::preset(name).unwrap()).unwrap()
    }

    #[test]
    fn locate_walks_tracks_in_order() {
        let g = geo("hdd-7200");
        let z0 = g.zones[0];
        let a = g.locate(u64::from(z0.spt) - 1);
        let b = g.locate(u64::from(z0.spt));
        assert_eq!((a.cyl, a.head, a.sector), (0, 0, z0.spt - 1));
        assert_eq!((b.cyl, b.head, b.sector), (0, 1, 0));
        let c = g.locate(2 * u64::from(z0.spt));
        assert_eq!((c.cyl, c.head), (1, 0));
        let (n, _) = g.next_track(&a).unwrap();
        assert_eq!(n, b);
        let z1 = g.zones[1];
        let d = g.locate(z1.first_lba);
        assert_eq!(
            (d.zone, d.cyl, d.head, d.sector, d.off),
            (1, z1.first_cyl, 0, 0, z1.base_off)
        );
        let last = g.locate(z1.first_lba - 1);
        assert_eq!(g.next_track(&last).unwrap().0, d);
    }
}
