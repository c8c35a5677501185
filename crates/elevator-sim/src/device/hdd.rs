//! `hdd`: a zoned hard disk on the virtual clock: seek curve, rotation, track
//! skew, an on-disk command queue (NCQ / TCQ) ordered by shortest positioning
//! time, a volatile write cache with destaging, and read-ahead.
//!
//! # Geometry
//!
//! `cylinders` × `heads` tracks in `zones` zones of equal cylinder ranges, from
//! the outer edge (zone 0, fastest) to the inner edge. A zone's sectors per
//! track follow its media rate, `rate × revolution / 512`, with the rate
//! falling linearly from `outer_rate` to `inner_rate` (recording density is
//! constant, so a track's length, and its sector count, falls linearly with
//! its radius). Sectors are 512 bytes. LBAs run outer to inner, cylinder by
//! cylinder, and within a cylinder head 0 to head `heads - 1` on every
//! cylinder (not serpentine). The device exposes `capacity` (0: all the zones
//! hold); the rest of the innermost tracks is unused, like a drive's spare
//! area.
//!
//! Each track starts `skew` sectors later (in angle) than the one before it:
//! a head-switch's worth of sectors after a head switch, a single-cylinder
//! seek's worth after a cylinder switch (the first track of a zone is skewed
//! against the last one of the zone before it the same way). A transfer that
//! crosses a track boundary therefore costs the switch plus under one sector of
//! slack, never a revolution.
//!
//! # Timing of one media operation
//!
//! 1. Command overhead: a command is ready `overhead` after it arrives; the
//!    drive decodes queued commands while the media works, so the overhead is
//!    only on the critical path when the drive was waiting for that command.
//! 2. Positioning: seek over the cylinder distance `d` (the curve below), or a
//!    head switch when only the head changes (seek and head change overlap:
//!    the larger counts), plus `write_settle` for writes after any movement.
//! 3. Rotation: all platters turn in phase; the angle at time `t` is
//!    `(t mod T) / T` with `T = 60 s / rpm` (integer nanoseconds). The drive
//!    waits until the first target sector's start passes under the head.
//! 4. Transfer: one track's worth of sectors takes one revolution; crossing a
//!    track adds the head switch (or single-cylinder seek) and the skew slack.
//!
//! `positioning_ns` in [`DeviceStats`] counts seeks, head switches and
//! rotational waits (including those inside a transfer), `transfer_ns` the
//! time sectors pass under the head; both count every media operation,
//! including destaging and read-ahead done while no request was outstanding,
//! so they may exceed `busy_ns`.
//!
//! # Seek curve (DiskSim's / Ruemmler & Wilkes' two-part form)
//!
//! `seek(d) = a + b·√d` for `1 ≤ d ≤ k`, `c + e·d` for `d > k`, `seek(0) = 0`.
//! Four conditions fix the five unknowns with one free: `seek(1) = seek_t2t`,
//! `seek(D) = seek_full` (`D = cylinders - 1`), continuity at the knee `k`,
//! and a smooth knee (`e = b / (2√k)`: the sqrt part is an arm that
//! accelerates and decelerates, the linear part one that also coasts at its
//! top speed, and the two meet with equal slopes). For a given knee, `a`, `b`,
//! `c`, `e` follow in closed form; the knee is then found by bisection so that
//! the mean seek over uniformly random distinct start and end cylinders (the
//! distance density `2(D - x) / D²`, integrated in closed form) equals
//! `seek_avg`. Moving the knee from 1 to `D` raises that mean monotonically
//! from about `t2t + (full - t2t) / 3` to about `t2t + 0.53 (full - t2t)`; an
//! average outside that range is refused. At run time the curve is a table:
//! exact nanoseconds for `d < 4096`, then at most 4096 points with linear
//! interpolation (error well under a microsecond).
//!
//! # Command queue (`ncq`)
//!
//! With `ncq > 1` the drive serves next the queued command with the shortest
//! positioning time (overhead still to run + seek + rotational wait) from
//! where the head is when it picks, over every queued command; ties go to the
//! oldest. A command older than `age_limit` is served first (oldest first).
//! With `ncq` 0 or 1 commands are served in arrival order. The next command is
//! picked the moment the previous media operation ends, among the commands
//! queued by then (a command submitted at that same instant, after the
//! completion, is not among them, as on a real drive).
//!
//! # Write cache, flush, FUA, read cache
//!
//! - `write_cache=1`: a write without FUA that fits (total dirty data at most
//!   `cache_size`, at most `cache_segments` separate dirty extents; a write
//!   inside or right after a dirty extent joins it) completes once it has
//!   crossed the interface (`interface_rate`, one transfer at a time, after
//!   the command overhead). Dirty data is written back ("destaged", at most
//!   `max_sectors` at a time, the extent with the shortest positioning time
//!   first) whenever the drive has nothing else to do. A write that does not
//!   fit waits, in arrival order, and while one waits the drive's choice for
//!   the next media operation includes destaging dirty extents, by the same
//!   shortest-positioning rule as queued commands. A write larger than the
//!   cache goes to the media.
//! - FLUSH and PREFLUSH are ordered like a non-queued ATA command: the flush
//!   starts once every command submitted before it has completed, destages all
//!   dirty data (shortest positioning first), and completes `overhead` later;
//!   commands submitted after it wait until it completes. A write with
//!   PREFLUSH does the same flush, then proceeds as a write.
//! - FUA writes, writes with the cache off and WRITE ZEROES are media writes
//!   (queued, scheduled with the reads).
//! - DISCARD completes after the command overhead and touches nothing (disks
//!   do not implement it).
//! - Reads wholly inside a dirty extent or the read segment (the last media
//!   read and its read-ahead) are cache hits: they complete after the
//!   overhead and the interface transfer. Writes to the media invalidate an
//!   overlapping read segment.
//! - Read-ahead: when a media read ends and the drive has nothing queued, it
//!   keeps reading up to `read_ahead` bytes past it into the read segment. A
//!   read that starts inside the segment or its read-ahead range rides along
//!   (the read-ahead stretches to cover it and `read_ahead` past it), so a
//!   sequential stream at queue depth 1 never loses a revolution. Any command
//!   that needs the media stops the read-ahead at once (after the data of the
//!   reads riding on it).
//!
//! # Engine notes
//!
//! [`Device::next_completion`] is exact: the time of the next completion if
//! nothing more is submitted. Work the drive does on its own (destaging,
//! read-ahead) runs on the virtual clock between calls, whether or not
//! anything is outstanding, and is caught up with on the next call; it never
//! produces a completion by itself, so an idle drive answers `None`.
//!
//! The model keeps its per-command state in slots preallocated to the queue
//! depth; after warm-up it does not allocate per I/O.

use elevator_core::{BioFlags, Device, DeviceIo, DeviceStats, Limits, Nanos, Op, Outcome};

use super::null::{checked_limits, unknown};
use super::param::{ParamError, ParamUnit, ParamValue, parse_param};

/// A time that never comes.
const NEVER: Nanos = Nanos::MAX;

/// Entries of the exact part of the seek table.
const SEEK_FINE: u32 = 4096;

/// Parameters of the HDD model. Field units: milliseconds for seek, switch
/// and settle times and the age limit, microseconds for the overhead, bytes
/// for sizes, MB/s (10^6 bytes per second) for rates.
#[derive(Clone, Debug, PartialEq)]
pub struct HddParams {
    /// Spindle speed, rpm.
    pub rpm: f64,
    /// Cylinders (tracks per surface).
    pub cylinders: u32,
    /// Heads (recording surfaces).
    pub heads: u32,
    /// Zones, outer to inner, of equal cylinder ranges.
    pub zones: u32,
    /// Media rate of the outermost zone, MB/s.
    pub outer_rate: f64,
    /// Media rate of the innermost zone, MB/s.
    pub inner_rate: f64,
    /// Exposed size in bytes; 0 for all that the zones hold.
    pub capacity: u64,
    /// Logical block size in bytes (512 or 4096).
    pub logical_block_size: u32,
    /// Single-cylinder seek, ms.
    pub seek_t2t: f64,
    /// Mean seek over uniformly random cylinder pairs, ms.
    pub seek_avg: f64,
    /// Full-stroke seek, ms.
    pub seek_full: f64,
    /// Head switch within a cylinder, ms.
    pub head_switch: f64,
    /// Extra settle before writing after any head movement, ms.
    pub write_settle: f64,
    /// Controller time per command, µs.
    pub overhead: f64,
    /// Queue depth the drive reports and reorders over; 0 or 1 for FIFO.
    pub ncq: u32,
    /// Age after which a queued command is served first, ms (0: none).
    pub age_limit: f64,
    /// Volatile write cache enabled.
    pub write_cache: bool,
    /// Dirty bytes the write cache holds.
    pub cache_size: u64,
    /// Separate dirty extents the write cache holds.
    pub cache_segments: u32,
    /// Bytes read ahead after a read while idle (0: off).
    pub read_ahead: u64,
    /// Interface rate for cache hits and cached writes, MB/s.
    pub interface_rate: f64,
    /// Largest request in 512-byte sectors (Linux `max_sectors_kb` × 2).
    pub max_sectors: u32,
}

impl HddParams {
    /// The model's name.
    pub const MODEL: &'static str = "hdd";

    /// The presets: name and one line on what each is.
    pub const PRESETS: [(&'static str, &'static str); 3] = [
        (
            "hdd-7200",
            "1 TB 7200 rpm SATA disk: 8.5 ms average seek, 200-100 MB/s, NCQ 32, write cache on",
        ),
        (
            "hdd-sas-10k",
            "600 GB 10K rpm SAS disk: 4.5 ms average seek, 150-90 MB/s, TCQ 64, write cache off",
        ),
        (
            "hdd-sas-15k",
            "300 GB 15K rpm SAS disk: 3.5 ms average seek, 200-120 MB/s, TCQ 64, write cache off",
        ),
    ];

    /// The preset called `name`.
    pub fn preset(name: &str) -> Option<HddParams> {
        // Sources: prior-art.md's table of typical 7200 / 10K / 15K drives
        // (revolution, average / track-to-track / full-stroke seek, media
        // rate), DiskSim's Seagate Barracuda (head switch 0.10 ms),
        // ublk-disksim (NCQ age limit 500 ms), IDEMA LBA1-03 (capacities).
        // Assumptions are marked in each parameter's help.
        let sata = HddParams {
            rpm: 7200.0,
            cylinders: 401_000,
            heads: 2,
            zones: 16,
            outer_rate: 200.0,
            inner_rate: 100.0,
            capacity: 1_953_525_168 * 512,
            logical_block_size: 512,
            seek_t2t: 0.8,
            seek_avg: 8.5,
            seek_full: 16.0,
            head_switch: 0.1,
            write_settle: 1.0,
            overhead: 100.0,
            ncq: 32,
            age_limit: 500.0,
            write_cache: true,
            cache_size: 64 << 20,
            cache_segments: 64,
            read_ahead: 256 << 10,
            interface_rate: 600.0,
            max_sectors: 2560,
        };
        match name {
            "hdd-7200" => Some(sata),
            "hdd-sas-10k" => Some(HddParams {
                rpm: 10_000.0,
                cylinders: 209_000,
                heads: 4,
                outer_rate: 150.0,
                inner_rate: 90.0,
                capacity: 1_172_123_568 * 512,
                seek_t2t: 0.3,
                seek_avg: 4.5,
                seek_full: 10.6,
                write_settle: 0.5,
                overhead: 50.0,
                ncq: 64,
                write_cache: false,
                cache_size: 16 << 20,
                interface_rate: 1200.0,
                ..sata
            }),
            "hdd-sas-15k" => Some(HddParams {
                rpm: 15_000.0,
                cylinders: 118_000,
                heads: 4,
                outer_rate: 200.0,
                inner_rate: 120.0,
                capacity: 586_072_368 * 512,
                seek_t2t: 0.2,
                seek_avg: 3.5,
                seek_full: 6.5,
                write_settle: 0.5,
                overhead: 50.0,
                ncq: 64,
                write_cache: false,
                cache_size: 16 << 20,
                interface_rate: 1200.0,
                ..sata
            }),
            _ => None,
        }
    }

    /// The parameters with their values.
    pub fn list(&self) -> Vec<ParamValue> {
        use ParamUnit::*;
        let p = |name, value, unit, help| ParamValue {
            name,
            value,
            unit,
            help,
        };
        vec![
            p(
                "rpm",
                self.rpm,
                Rpm,
                "spindle speed; presets 7200 / 10000 / 15000 (prior-art.md table: 8.33 / 6.0 / 4.0 ms revolutions)",
            ),
            p(
                "cylinders",
                f64::from(self.cylinders),
                Count,
                "tracks per surface; presets sized so the zones just hold the capacity (derived, not from a datasheet)",
            ),
            p(
                "heads",
                f64::from(self.heads),
                Count,
                "recording surfaces; presets 2 (one 1 TB platter) / 4 / 4 (two platters) (assumption)",
            ),
            p(
                "zones",
                f64::from(self.zones),
                Count,
                "zones of equal cylinder ranges, sectors per track falling linearly outer to inner; presets 16 (assumption)",
            ),
            p(
                "outer_rate",
                self.outer_rate,
                MBps,
                "media rate of the outermost zone; presets 200 / 150 / 200 MB/s (prior-art.md table)",
            ),
            p(
                "inner_rate",
                self.inner_rate,
                MBps,
                "media rate of the innermost zone; presets 100 (half the outer, as on 3.5-inch media) / 90 / 120 (60 % of outer, assumption)",
            ),
            p(
                "capacity",
                self.capacity as f64,
                Bytes,
                "exposed size, 0 = all the zones hold; presets 1000 / 600 / 300 GB as IDEMA LBA counts (1953525168 / 1172123568 / 586072368 sectors)",
            ),
            p(
                "logical_block_size",
                f64::from(self.logical_block_size),
                Bytes,
                "512, or 4096 for a 4K-native disk; presets 512",
            ),
            p(
                "seek_t2t",
                self.seek_t2t,
                Millis,
                "single-cylinder seek; presets 0.8 / 0.3 / 0.2 ms (prior-art.md table)",
            ),
            p(
                "seek_avg",
                self.seek_avg,
                Millis,
                "mean seek over random cylinder pairs (the datasheet average); presets 8.5 / 4.5 / 3.5 ms (prior-art.md table)",
            ),
            p(
                "seek_full",
                self.seek_full,
                Millis,
                "full-stroke seek; presets 16 / 10.6 / 6.5 ms (prior-art.md table; DiskSim's Barracuda 16.7, Cheetah 9LP 10.6)",
            ),
            p(
                "head_switch",
                self.head_switch,
                Millis,
                "head switch within a cylinder; presets 0.1 ms (DiskSim's Seagate Barracuda: 0.10 ms)",
            ),
            p(
                "write_settle",
                self.write_settle,
                Millis,
                "extra settle before writing after a seek or head switch; presets 1.0 / 0.5 / 0.5 ms (assumption: datasheets quote write seeks 0.5-1 ms above reads)",
            ),
            p(
                "overhead",
                self.overhead,
                Micros,
                "controller time per command; presets 100 / 50 / 50 us (assumption)",
            ),
            p(
                "ncq",
                f64::from(self.ncq),
                Count,
                "commands queued and reordered shortest-positioning-first; 0 or 1 = FIFO; presets 32 (SATA NCQ) / 64 / 64 (SAS TCQ)",
            ),
            p(
                "age_limit",
                self.age_limit,
                Millis,
                "a queued command older than this is served first, oldest first; 0 = none; presets 500 ms (ublk-disksim)",
            ),
            p(
                "write_cache",
                if self.write_cache { 1.0 } else { 0.0 },
                Bool,
                "volatile write cache; presets 1 on SATA (desktop drives ship with it on), 0 on SAS (enterprise drives ship with it off)",
            ),
            p(
                "cache_size",
                self.cache_size as f64,
                Bytes,
                "dirty data the write cache holds; presets 64 MiB (the buffer of a 1 TB desktop drive) / 16 MiB / 16 MiB (assumption)",
            ),
            p(
                "cache_segments",
                f64::from(self.cache_segments),
                Count,
                "separate dirty extents the write cache holds, all candidates for destaging; presets 64 (assumption)",
            ),
            p(
                "read_ahead",
                self.read_ahead as f64,
                Bytes,
                "read past a media read while idle; 0 = off; presets 256 KiB (assumption)",
            ),
            p(
                "interface_rate",
                self.interface_rate,
                MBps,
                "link rate for cache hits and cached writes; presets 600 MB/s (SATA 6 Gb/s) / 1200 MB/s (SAS 12 Gb/s)",
            ),
            p(
                "max_sectors",
                f64::from(self.max_sectors),
                Count,
                "largest request in 512-byte sectors, also the destage unit; presets 2560 (Linux's default cap, max_sectors_kb 1280)",
            ),
        ]
    }

    /// Set a parameter from text.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), ParamError> {
        let list = self.list();
        let Some(param) = list.iter().find(|p| p.name == name) else {
            return Err(unknown(Self::MODEL, name, &list));
        };
        let (pname, unit) = (param.name, param.unit);
        let v = parse_param(Self::MODEL, name, unit, text)?;
        let count = |max: u64| -> Result<u64, ParamError> { whole(pname, v, max) };
        let u32max = u64::from(u32::MAX);
        match pname {
            "rpm" => self.rpm = v,
            "cylinders" => self.cylinders = count(u32max)? as u32,
            "heads" => self.heads = count(u32max)? as u32,
            "zones" => self.zones = count(u32max)? as u32,
            "outer_rate" => self.outer_rate = v,
            "inner_rate" => self.inner_rate = v,
            "capacity" => self.capacity = count(u64::MAX >> 10)?,
            "logical_block_size" => self.logical_block_size = count(u32max)? as u32,
            "seek_t2t" => self.seek_t2t = v,
            "seek_avg" => self.seek_avg = v,
            "seek_full" => self.seek_full = v,
            "head_switch" => self.head_switch = v,
            "write_settle" => self.write_settle = v,
            "overhead" => self.overhead = v,
            "ncq" => self.ncq = count(u32max)? as u32,
            "age_limit" => self.age_limit = v,
            "write_cache" => self.write_cache = v != 0.0,
            "cache_size" => self.cache_size = count(u64::MAX >> 10)?,
            "cache_segments" => self.cache_segments = count(u32max)? as u32,
            "read_ahead" => self.read_ahead = count(u64::MAX >> 10)?,
            "interface_rate" => self.interface_rate = v,
            _ => self.max_sectors = count(u32max)? as u32,
        }
        Ok(())
    }
}

/// `v` as a whole number no larger than `max`.
fn whole(name: &'static str, v: f64, max: u64) -> Result<u64, ParamError> {
    if v.fract() != 0.0 || v > max as f64 {
        return Err(range(name, v, format!("must be a whole number up to {max}")));
    }
    Ok(v as u64)
}

fn range(name: &'static str, value: f64, why: impl Into<String>) -> ParamError {
    ParamError::OutOfRange {
        model: HddParams::MODEL,
        name,
        value,
        why: why.into(),
    }
}

/// Check `lo <= v <= hi` (and that `v` is a number).
fn within(name: &'static str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), ParamError> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(range(name, v, format!("must be {lo}..={hi} {unit}")))
    }
}

// ---------------------------------------------------------------------------
// Seek curve
// ---------------------------------------------------------------------------

/// The fitted seek curve, in milliseconds over cylinder distance:
/// `a + b·√d` up to the knee, `c + e·d` beyond.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeekCurve {
    /// Constant of the sqrt part, ms.
    pub a: f64,
    /// Coefficient of √d, ms.
    pub b: f64,
    /// Constant of the linear part, ms.
    pub c: f64,
    /// Coefficient of d, ms per cylinder.
    pub e: f64,
    /// Distance (cylinders) where the parts meet.
    pub knee: f64,
}

impl SeekCurve {
    /// Seek time in ms over `d` cylinders (0 for 0).
    pub fn ms(&self, d: f64) -> f64 {
        if d <= 0.0 {
            0.0
        } else if d <= self.knee {
            self.a + self.b * d.sqrt()
        } else {
            self.c + self.e * d
        }
    }

    /// The curve through `seek(1) = t2t` and `seek(max) = full` with a smooth
    /// knee at `k`.
    fn with_knee(t2t: f64, full: f64, max: f64, k: f64) -> SeekCurve {
        let sk = k.sqrt();
        let b = (full - t2t) / (sk / 2.0 + max / (2.0 * sk) - 1.0);
        let a = t2t - b;
        let e = b / (2.0 * sk);
        let c = a + b * sk / 2.0;
        SeekCurve { a, b, c, e, knee: k }
    }

    /// Mean over distances with density `2(L - x) / L²` on `[0, L]` (random
    /// start and end cylinders), in closed form.
    fn mean(&self, l: f64) -> f64 {
        let k = self.knee;
        let sqrt_part = self.a * (l * k - k * k / 2.0)
            + self.b * (l * (2.0 / 3.0) * k.powf(1.5) - (2.0 / 5.0) * k.powf(2.5));
        let lin_part = self.c * (l * (l - k) - (l * l - k * k) / 2.0)
            + self.e * (l * (l * l - k * k) / 2.0 - (l * l * l - k * k * k) / 3.0);
        2.0 / (l * l) * (sqrt_part + lin_part)
    }

    /// Fit to single-cylinder, average and full-stroke times over `max`
    /// cylinders of distance; `Err((lo, hi))` gives the reachable averages.
    fn fit(t2t: f64, avg: f64, full: f64, max: f64) -> Result<SeekCurve, (f64, f64)> {
        let lo_curve = SeekCurve::with_knee(t2t, full, max, 1.0);
        let hi_curve = SeekCurve::with_knee(t2t, full, max, max);
        let (lo, hi) = (lo_curve.mean(max), hi_curve.mean(max));
        if !(avg >= lo && avg <= hi) {
            return Err((lo, hi));
        }
        // Bisection on log(knee): the mean rises with the knee.
        let (mut x0, mut x1) = (0.0f64, max.ln());
        for _ in 0..200 {
            let xm = (x0 + x1) / 2.0;
            if SeekCurve::with_knee(t2t, full, max, xm.exp()).mean(max) < avg {
                x0 = xm;
            } else {
                x1 = xm;
            }
        }
        Ok(SeekCurve::with_knee(t2t, full, max, ((x0 + x1) / 2.0).exp()))
    }
}

/// The seek curve as a table of nanoseconds.
#[derive(Clone, Debug)]
struct SeekTable {
    /// Exact values for `d < fine.len()`.
    fine: Vec<u32>,
    /// Values at multiples of `1 << shift`, interpolated between.
    coarse: Vec<u32>,
    shift: u32,
}

impl SeekTable {
    fn new(curve: &SeekCurve, max: u32) -> SeekTable {
        let ns = |d: f64| (curve.ms(d) * 1e6).round().max(0.0) as u32;
        let fine_len = max.saturating_add(1).min(SEEK_FINE);
        let fine = (0..fine_len).map(|d| ns(f64::from(d))).collect();
        let mut shift = 0;
        while (max >> shift) > SEEK_FINE {
            shift += 1;
        }
        let coarse = if max >= SEEK_FINE {
            (0..=(max >> shift) + 1)
                .map(|i| ns(f64::from(i) * f64::from(1u32 << shift)))
                .collect()
        } else {
            Vec::new()
        };
        SeekTable {
            fine,
            coarse,
            shift,
        }
    }

    #[inline]
    fn ns(&self, d: u32) -> u32 {
        if let Some(&v) = self.fine.get(d as usize) {
            return v;
        }
        let i = (d >> self.shift) as usize;
        let f = u64::from(d & ((1 << self.shift) - 1));
        let (Some(&a), Some(&b)) = (self.coarse.get(i), self.coarse.get(i + 1)) else {
            return self.coarse.last().copied().unwrap_or(0);
        };
        a + ((u64::from(b.saturating_sub(a)) * f) >> self.shift) as u32
    }
}

// ---------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct Zone {
    first_cyl: u32,
    end_cyl: u32,
    spt: u32,
    first_lba: u64,
    end_lba: u64,
    /// Skew after a head switch, sectors.
    head_skew: u32,
    /// Skew after a cylinder switch (last head to head 0), sectors.
    cyl_skew: u32,
    /// Skew from one cylinder's head 0 to the next one's.
    cyl_adv: u32,
    /// Skew of the zone's first track.
    base_off: u32,
}

/// Where a sector is: zone, cylinder, head, sector in track, and the track's
/// skew (the angular offset of its sector 0, in sectors).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Loc {
    zone: u32,
    cyl: u32,
    head: u32,
    sector: u32,
    off: u32,
}

/// The outcome of a transfer.
#[derive(Clone, Copy, Debug)]
struct Xfer {
    /// When the last sector has passed under the head.
    end: Nanos,
    /// Track switches and rotational slack inside the transfer.
    gaps: u64,
    /// Where the last sector is.
    cyl: u32,
    head: u32,
    /// When the sector after the last would start under the head.
    next_t: Nanos,
}

/// Where a sector of the disk is, as [`Hdd::locate`] reports it.
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
struct Geo {
    rev: u64,
    rev_m: u64,
    kt: u64,
    heads: u32,
    cylinders: u32,
    zones: Vec<Zone>,
    capacity: u64,
    curve: SeekCurve,
    seek: SeekTable,
    head_switch: u32,
    cyl_switch: u32,
    settle: u32,
    overhead: u64,
    ncq: u32,
    age_limit: u64,
    write_cache: bool,
    cache_sectors: u64,
    cache_segments: usize,
    read_ahead: u64,
    /// Interface time per sector, picoseconds.
    iface_ps: u64,
    chunk: u64,
    limits: Limits,
    outer_rate: f64,
    inner_rate: f64,
    rpm: f64,
}

impl Geo {
    fn new(p: &HddParams) -> Result<Geo, ParamError> {
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
        within("inner_rate", p.inner_rate, 1.0, p.outer_rate, "MB/s (at most outer_rate)")?;
        within("seek_t2t", p.seek_t2t, 0.001, 1000.0, "ms")?;
        within("seek_full", p.seek_full, p.seek_t2t, 1000.0, "ms (at least seek_t2t)")?;
        within("seek_avg", p.seek_avg, p.seek_t2t, p.seek_full, "ms (seek_t2t..=seek_full)")?;
        within("head_switch", p.head_switch, 0.0, 100.0, "ms")?;
        within("write_settle", p.write_settle, 0.0, 100.0, "ms")?;
        within("overhead", p.overhead, 0.0, 100_000.0, "us")?;
        within("ncq", f64::from(p.ncq), 0.0, 1024.0, "")?;
        within("age_limit", p.age_limit, 0.0, 3_600_000.0, "ms")?;
        within("interface_rate", p.interface_rate, 1.0, 1_000_000.0, "MB/s")?;
        within("cache_segments", f64::from(p.cache_segments), 1.0, 4096.0, "")?;
        if p.write_cache && p.cache_size < 4096 {
            return Err(range(
                "cache_size",
                p.cache_size as f64,
                "must be at least 4096 bytes with write_cache=1",
            ));
        }
        within("cache_size", p.cache_size as f64, 0.0, (16u64 << 30) as f64, "bytes")?;
        within("read_ahead", p.read_ahead as f64, 0.0, (64u64 << 20) as f64, "bytes")?;
        let lbs = p.logical_block_size;
        if lbs != 512 && lbs != 4096 {
            return Err(range("logical_block_size", f64::from(lbs), "must be 512 or 4096"));
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
                    format!("gives {spt} sectors per track at {} rpm; must be 1..=1048576", p.rpm),
                ));
            }
            let spt = spt as u32;
            let first_cyl = (u64::from(i) * u64::from(cylinders) / u64::from(nz)) as u32;
            let end_cyl = (u64::from(i + 1) * u64::from(cylinders) / u64::from(nz)) as u32;
            let s = u64::from(spt);
            let skew = |ns: u32| ((u64::from(ns) * s).div_ceil(rev) % s) as u32;
            let head_skew = skew(head_switch);
            let cyl_skew = skew(cyl_switch);
            let cyl_adv = ((u64::from(heads - 1) * u64::from(head_skew) + u64::from(cyl_skew)) % s) as u32;
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
            cylinders,
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
    fn locate(&self, lba: u64) -> Loc {
        let last = self.zones.len() - 1;
        let zi = self.zones.partition_point(|z| z.end_lba <= lba).min(last);
        let z = &self.zones[zi];
        let rel = lba.saturating_sub(z.first_lba);
        let s = u64::from(z.spt);
        let track = rel / s;
        let sector = (rel - track * s) as u32;
        let h = u64::from(self.heads);
        let crel = track / h;
        let head = (track - crel * h) as u32;
        let off = (u64::from(z.base_off)
            + crel * u64::from(z.cyl_adv)
            + u64::from(head) * u64::from(z.head_skew))
            % s;
        Loc {
            zone: zi as u32,
            cyl: z.first_cyl + crel as u32,
            head,
            sector,
            off: off as u32,
        }
    }

    /// The rotational phase (ns into the revolution) at which `loc`'s sector
    /// starts under the head.
    #[inline]
    fn phase(&self, loc: &Loc) -> u32 {
        let s = u64::from(self.zones[loc.zone as usize].spt);
        let x = (u64::from(loc.sector) + u64::from(loc.off)) % s;
        (x * self.rev / s) as u32
    }

    /// `a mod rev` for `a < 2^32` without a division.
    #[inline]
    fn fastmod(&self, a: u32) -> u32 {
        let low = self.rev_m.wrapping_mul(u64::from(a));
        ((u128::from(low) * u128::from(self.rev)) >> 64) as u32
    }

    /// Time from `t` until phase `phase` is under the head.
    #[inline]
    fn wait_at(&self, phase: u32, t: Nanos) -> u64 {
        let p = t % self.rev;
        let ph = u64::from(phase);
        if ph >= p { ph - p } else { ph + self.rev - p }
    }

    /// Positioning from (`cyl0`, `head0`) to (`cyl`, `head`): seek or head
    /// switch (the larger), plus the write settle after any movement.
    #[inline]
    fn lead(&self, cyl0: u32, head0: u32, cyl: u32, head: u32, write: bool) -> u32 {
        let d = cyl.abs_diff(cyl0);
        let mut p = self.seek.ns(d);
        if head != head0 {
            p = p.max(self.head_switch);
        }
        if write && (d != 0 || head != head0) {
            p += self.settle;
        }
        p
    }

    /// Duration of `k` sectors starting at `x = sector + off` on a track of
    /// `s` sectors.
    #[inline]
    fn dur(&self, s: u64, x: u64, k: u64) -> u64 {
        (x + k) * self.rev / s - x * self.rev / s
    }

    /// The track after `loc` in LBA order, and the switch time to it.
    fn next_track(&self, loc: &Loc) -> Option<(Loc, u32)> {
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
    fn transfer(&self, mut loc: Loc, mut n: u64, mut t: Nanos) -> Xfer {
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
    fn reached(&self, lba: u64, t0: Nanos, t: Nanos, limit: u64) -> u64 {
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
    fn iface(&self, n: u64) -> u64 {
        n * self.iface_ps / 1000
    }
}

// ---------------------------------------------------------------------------
// Simulation state
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    /// Submitted behind a flush barrier.
    Held,
    /// A flush, or a write's preflush, waiting to run.
    Barrier,
    /// Waiting for the media.
    Queued,
    /// A cached write waiting for room.
    Waiting,
    /// Completes at a known time (in `timed`).
    Timed,
    /// Being served by the media.
    Media,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    tag: u32,
    op: Op,
    flags: BioFlags,
    lba: u64,
    n: u64,
    seq: u64,
    arrival: Nanos,
    ready: Nanos,
    state: SlotState,
    preflush: bool,
    loc: Loc,
}

impl Slot {
    const FREE: Slot = Slot {
        tag: 0,
        op: Op::Read,
        flags: BioFlags::NONE,
        lba: 0,
        n: 0,
        seq: 0,
        arrival: 0,
        ready: 0,
        state: SlotState::Free,
        preflush: false,
        loc: Loc {
            zone: 0,
            cyl: 0,
            head: 0,
            sector: 0,
            off: 0,
        },
    };
}

/// A command queued for the media, with its position precomputed.
#[derive(Clone, Copy, Debug)]
struct Cand {
    cyl: u32,
    head: u32,
    phase: u32,
    write: bool,
    slot: u32,
    ready: Nanos,
    arrival: Nanos,
    seq: u64,
}

/// Dirty data in the write cache.
#[derive(Clone, Copy, Debug)]
struct Extent {
    lba: u64,
    n: u64,
    loc: Loc,
    phase: u32,
}

/// A completion at a known time.
#[derive(Clone, Copy, Debug)]
struct Timed {
    t: Nanos,
    seq: u64,
    slot: u32,
}

/// Read-ahead in progress.
#[derive(Clone, Copy, Debug)]
struct Ahead {
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

#[derive(Clone, Copy, Debug)]
enum Media {
    Idle,
    Req {
        slot: u32,
        end: Nanos,
        pos: u64,
        xfer: u64,
        cyl: u32,
        head: u32,
    },
    Destage {
        idx: usize,
        lba: u64,
        n: u64,
        end: Nanos,
        pos: u64,
        xfer: u64,
        cyl: u32,
        head: u32,
    },
    Ahead(Ahead),
}

#[derive(Debug)]
struct State {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Commands queued for the media, in arrival order.
    queued: Vec<Cand>,
    /// Cached writes waiting for room, in arrival order.
    waiting: Vec<u32>,
    /// Commands held behind a barrier, in arrival order.
    held: Vec<u32>,
    /// Completions at known times, latest first.
    timed: Vec<Timed>,
    /// Completed and not yet reported, in completion order.
    done: Vec<(Nanos, u32)>,
    dirty: Vec<Extent>,
    dirty_sectors: u64,
    barrier: Option<u32>,
    media: Media,
    cyl: u32,
    head: u32,
    /// The read segment, `[start, end)`.
    buf: (u64, u64),
    /// Where read-ahead would start after the last media read.
    ra_from: Option<u64>,
    iface_free: Nanos,
    seq: u64,
    clock: Nanos,
    inflight: u32,
    busy_since: Nanos,
    stats: DeviceStats,
}

impl Clone for State {
    fn clone(&self) -> State {
        let mut s = State::new(0, 0);
        s.clone_from(self);
        s
    }

    /// Field by field, reusing the allocations (the scratch copy that
    /// predictions run on).
    fn clone_from(&mut self, o: &State) {
        self.slots.clone_from(&o.slots);
        self.free.clone_from(&o.free);
        self.queued.clone_from(&o.queued);
        self.waiting.clone_from(&o.waiting);
        self.held.clone_from(&o.held);
        self.timed.clone_from(&o.timed);
        self.done.clone_from(&o.done);
        self.dirty.clone_from(&o.dirty);
        self.dirty_sectors = o.dirty_sectors;
        self.barrier = o.barrier;
        self.media = o.media;
        self.cyl = o.cyl;
        self.head = o.head;
        self.buf = o.buf;
        self.ra_from = o.ra_from;
        self.iface_free = o.iface_free;
        self.seq = o.seq;
        self.clock = o.clock;
        self.inflight = o.inflight;
        self.busy_since = o.busy_since;
        self.stats = o.stats;
    }
}

/// What to do next on the media.
enum Pick {
    None,
    Queued(usize),
    Dirty(usize),
}

impl State {
    fn new(depth: usize, segments: usize) -> State {
        State {
            slots: vec![Slot::FREE; depth],
            free: (0..depth as u32).rev().collect(),
            queued: Vec::with_capacity(depth),
            waiting: Vec::with_capacity(depth),
            held: Vec::with_capacity(depth),
            timed: Vec::with_capacity(depth),
            done: Vec::with_capacity(depth),
            dirty: Vec::with_capacity(segments),
            dirty_sectors: 0,
            barrier: None,
            media: Media::Idle,
            cyl: 0,
            head: 0,
            buf: (0, 0),
            ra_from: None,
            iface_free: 0,
            seq: 0,
            clock: 0,
            inflight: 0,
            busy_since: 0,
            stats: DeviceStats::default(),
        }
    }

    fn media_end(&self) -> Nanos {
        match self.media {
            Media::Idle => NEVER,
            Media::Req { end, .. } | Media::Destage { end, .. } => end,
            Media::Ahead(ra) => ra.end,
        }
    }

    /// Process every internal event up to `now`; whether there was any.
    fn advance(&mut self, g: &Geo, now: Nanos) -> bool {
        let mut any = false;
        while self.step(g, now) {
            any = true;
        }
        self.clock = self.clock.max(now);
        any
    }

    /// Process the earliest internal event if it is due by `now`.
    fn step(&mut self, g: &Geo, now: Nanos) -> bool {
        let t_op = self.media_end();
        let t_c = self.timed.last().map_or(NEVER, |e| e.t);
        if t_c <= t_op {
            if t_c > now {
                return false;
            }
            if let Some(e) = self.timed.pop() {
                self.finish(g, e.slot, e.t);
                self.kick(g, e.t);
            }
        } else {
            if t_op > now {
                return false;
            }
            self.end_media(g, t_op);
            self.kick(g, t_op);
        }
        true
    }

    fn push_timed(&mut self, slot: u32, t: Nanos) {
        let seq = self.slots[slot as usize].seq;
        self.slots[slot as usize].state = SlotState::Timed;
        let i = self.timed.partition_point(|e| (e.t, e.seq) > (t, seq));
        self.timed.insert(i, Timed { t, seq, slot });
    }

    /// Complete through the interface: after the overhead, one transfer at
    /// a time.
    fn via_interface(&mut self, g: &Geo, slot: u32, t: Nanos) {
        let sl = &self.slots[slot as usize];
        let start = t.max(sl.ready).max(self.iface_free);
        let end = start + g.iface(sl.n);
        self.iface_free = end;
        self.push_timed(slot, end);
    }

    fn finish(&mut self, g: &Geo, slot: u32, t: Nanos) {
        let sl = &mut self.slots[slot as usize];
        sl.state = SlotState::Free;
        self.done.push((t, sl.tag));
        self.free.push(slot);
        self.stats.ios += 1;
        self.inflight = self.inflight.saturating_sub(1);
        if self.inflight == 0 {
            self.stats.busy_ns += t.saturating_sub(self.busy_since);
        }
        if self.barrier == Some(slot) {
            self.barrier = None;
            self.release_held(g, t);
        }
    }

    fn release_held(&mut self, g: &Geo, t: Nanos) {
        while self.barrier.is_none() && !self.held.is_empty() {
            let s = self.held.remove(0);
            self.classify(g, s, t);
        }
    }

    /// Commands older than the barrier `b` still outstanding.
    fn older_outstanding(&self, b: u32) -> usize {
        let seq = self.slots[b as usize].seq;
        self.slots
            .iter()
            .filter(|s| s.state != SlotState::Free && s.seq < seq)
            .count()
    }

    fn barrier_ready(&self) -> bool {
        match self.barrier {
            Some(b) => {
                self.slots[b as usize].state == SlotState::Barrier && self.older_outstanding(b) == 0
            }
            None => false,
        }
    }

    /// Route a command arriving (or released) at `t`.
    fn classify(&mut self, g: &Geo, s: u32, t: Nanos) {
        let si = s as usize;
        self.slots[si].ready = t + g.overhead;
        if self.barrier.is_some() {
            self.slots[si].state = SlotState::Held;
            self.held.push(s);
            return;
        }
        let sl = self.slots[si];
        if sl.op == Op::Flush || sl.preflush {
            self.slots[si].state = SlotState::Barrier;
            self.barrier = Some(s);
            return;
        }
        if sl.n == 0 || sl.op == Op::Discard {
            self.push_timed(s, sl.ready);
            return;
        }
        match sl.op {
            Op::Read => self.classify_read(g, s, t),
            Op::Write
                if g.write_cache
                    && !sl.flags.contains(BioFlags::FUA)
                    && sl.n <= g.cache_sectors =>
            {
                if self.waiting.is_empty() && self.try_cache(g, sl.lba, sl.n) {
                    self.via_interface(g, s, t);
                } else {
                    self.slots[si].state = SlotState::Waiting;
                    self.waiting.push(s);
                }
            }
            _ => self.queue_media(g, s, true),
        }
    }

    fn classify_read(&mut self, g: &Geo, s: u32, t: Nanos) {
        let sl = self.slots[s as usize];
        let (lo, hi) = (sl.lba, sl.lba + sl.n);
        if self.dirty.iter().any(|x| x.lba <= lo && hi <= x.lba + x.n) {
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
                let ready = self.slots[s as usize].ready;
                self.push_timed(s, te.max(ready));
                return;
            }
        } else if self.buf.0 <= lo && hi <= self.buf.1 {
            self.via_interface(g, s, t);
            return;
        }
        self.queue_media(g, s, false);
    }

    fn queue_media(&mut self, g: &Geo, s: u32, write: bool) {
        let sl = &mut self.slots[s as usize];
        sl.state = SlotState::Queued;
        self.queued.push(Cand {
            cyl: sl.loc.cyl,
            head: sl.loc.head,
            phase: g.phase(&sl.loc),
            write,
            slot: s,
            ready: sl.ready,
            arrival: sl.arrival,
            seq: sl.seq,
        });
    }

    /// Put `[lba, lba + n)` in the write cache if it fits.
    fn try_cache(&mut self, g: &Geo, lba: u64, n: u64) -> bool {
        let end = lba + n;
        let mut adjacent = None;
        for (i, x) in self.dirty.iter().enumerate() {
            if x.lba <= lba && end <= x.lba + x.n {
                return true;
            }
            if adjacent.is_none() && x.lba + x.n == lba {
                adjacent = Some(i);
            }
        }
        if self.dirty_sectors + n > g.cache_sectors {
            return false;
        }
        if let Some(i) = adjacent {
            self.dirty[i].n += n;
        } else if self.dirty.len() < g.cache_segments {
            let loc = g.locate(lba);
            self.dirty.push(Extent {
                lba,
                n,
                loc,
                phase: g.phase(&loc),
            });
        } else {
            return false;
        }
        self.dirty_sectors += n;
        true
    }

    fn accept_waiting(&mut self, g: &Geo, t: Nanos) {
        while let Some(&s) = self.waiting.first() {
            let sl = self.slots[s as usize];
            if !self.try_cache(g, sl.lba, sl.n) {
                break;
            }
            self.waiting.remove(0);
            self.via_interface(g, s, t);
        }
    }

    /// Something happened at `t`: start the media if it is idle, stop
    /// read-ahead if the media is needed.
    fn kick(&mut self, g: &Geo, t: Nanos) {
        match self.media {
            Media::Idle => self.decide(g, t),
            Media::Ahead(mut ra) if ra.stop.is_none() => {
                if !self.queued.is_empty() || !self.waiting.is_empty() || self.barrier_ready() {
                    // Riders' data is read by `end`, and the checkpoint
                    // is the end of the last rider (or the start).
                    let end = t.max(ra.rider_end);
                    let stop = if end >= ra.ck_t {
                        g.reached(ra.ck_lba, ra.ck_t, end, ra.target)
                    } else {
                        ra.ck_lba.min(ra.target)
                    };
                    ra.stop = Some(stop);
                    ra.end = end;
                    self.media = Media::Ahead(ra);
                }
            }
            _ => {}
        }
    }

    /// The media is free at `t`: start what comes next.
    fn decide(&mut self, g: &Geo, t: Nanos) {
        loop {
            if let Some(b) = self.barrier {
                if self.slots[b as usize].state != SlotState::Barrier {
                    // A flush completing: nothing may start.
                    return;
                }
                if self.older_outstanding(b) == 0 {
                    if !self.dirty.is_empty() {
                        let j = self.best_dirty(g, t, u64::MAX).1;
                        self.start_destage(g, t, j);
                        return;
                    }
                    let sl = self.slots[b as usize];
                    if sl.op == Op::Flush {
                        self.push_timed(b, t.max(sl.ready));
                        return;
                    }
                    // A preflush done: the write goes on as a write.
                    self.barrier = None;
                    self.slots[b as usize].preflush = false;
                    self.classify(g, b, t);
                    self.release_held(g, t);
                    continue;
                }
            }
            if !self.waiting.is_empty() && self.dirty.is_empty() {
                self.accept_waiting(g, t);
            }
            if !self.queued.is_empty() || !self.waiting.is_empty() {
                match self.choose(g, t) {
                    Pick::Queued(i) => self.start_req(g, t, i),
                    Pick::Dirty(j) => self.start_destage(g, t, j),
                    Pick::None => {}
                }
                return;
            }
            if let Some(from) = self.ra_from.take()
                && g.read_ahead > 0
                && from < g.capacity
            {
                self.start_ahead(g, t, from);
                return;
            }
            if !self.dirty.is_empty() {
                let j = self.best_dirty(g, t, u64::MAX).1;
                self.start_destage(g, t, j);
            }
            return;
        }
    }

    /// The next media operation among queued commands and, while a write
    /// waits for room, dirty extents.
    fn choose(&self, g: &Geo, t: Nanos) -> Pick {
        let fq = self.queued.first().map(|c| (c.seq, c.arrival));
        let fw = self.waiting.first().map(|&s| {
            let sl = &self.slots[s as usize];
            (sl.seq, sl.arrival)
        });
        let (oldest_is_queued, arrival) = match (fq, fw) {
            (Some(q), Some(w)) => {
                if q.0 < w.0 {
                    (true, q.1)
                } else {
                    (false, w.1)
                }
            }
            (Some(q), None) => (true, q.1),
            (None, Some(w)) => (false, w.1),
            (None, None) => return Pick::None,
        };
        let aged = g.age_limit > 0 && arrival.saturating_add(g.age_limit) <= t;
        if g.ncq <= 1 || aged {
            return if oldest_is_queued {
                Pick::Queued(0)
            } else {
                Pick::Dirty(self.best_dirty(g, t, u64::MAX).1)
            };
        }
        let phase0 = t % g.rev;
        let mut best = u64::MAX;
        let mut pick = Pick::None;
        for (i, c) in self.queued.iter().enumerate() {
            let lead = c.ready.saturating_sub(t)
                + u64::from(g.lead(self.cyl, self.head, c.cyl, c.head, c.write));
            if lead >= best {
                continue;
            }
            let y = u64::from(c.phase) + g.kt - (phase0 + lead);
            let cost = lead + u64::from(g.fastmod(y as u32));
            if cost < best {
                best = cost;
                pick = Pick::Queued(i);
            }
        }
        if !self.waiting.is_empty() {
            let (cost, j) = self.best_dirty(g, t, best);
            if cost < best {
                pick = Pick::Dirty(j);
            }
        }
        pick
    }

    /// The dirty extent with the shortest positioning time, if under `best`.
    fn best_dirty(&self, g: &Geo, t: Nanos, mut best: u64) -> (u64, usize) {
        let phase0 = t % g.rev;
        let mut pick = 0;
        for (j, x) in self.dirty.iter().enumerate() {
            let lead = u64::from(g.lead(self.cyl, self.head, x.loc.cyl, x.loc.head, true));
            if lead >= best {
                continue;
            }
            let y = u64::from(x.phase) + g.kt - (phase0 + lead);
            let cost = lead + u64::from(g.fastmod(y as u32));
            if cost < best {
                best = cost;
                pick = j;
            }
        }
        (best, pick)
    }

    fn start_req(&mut self, g: &Geo, t: Nanos, i: usize) {
        let c = self.queued.remove(i);
        let t0 = t.max(c.ready);
        let arr = t0 + u64::from(g.lead(self.cyl, self.head, c.cyl, c.head, c.write));
        let t1 = arr + g.wait_at(c.phase, arr);
        let sl = &mut self.slots[c.slot as usize];
        sl.state = SlotState::Media;
        let x = g.transfer(sl.loc, sl.n, t1);
        if c.write && sl.lba < self.buf.1 && self.buf.0 < sl.lba + sl.n {
            self.buf = (0, 0);
        }
        self.media = Media::Req {
            slot: c.slot,
            end: x.end,
            pos: t1 - t0 + x.gaps,
            xfer: x.end - t1 - x.gaps,
            cyl: x.cyl,
            head: x.head,
        };
        self.ra_from = None;
    }

    fn start_destage(&mut self, g: &Geo, t: Nanos, j: usize) {
        let Some(&x) = self.dirty.get(j) else {
            return;
        };
        let n = x.n.min(g.chunk);
        let arr = t + u64::from(g.lead(self.cyl, self.head, x.loc.cyl, x.loc.head, true));
        let t1 = arr + g.wait_at(x.phase, arr);
        let tr = g.transfer(x.loc, n, t1);
        if x.lba < self.buf.1 && self.buf.0 < x.lba + n {
            self.buf = (0, 0);
        }
        self.media = Media::Destage {
            idx: j,
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

    fn start_ahead(&mut self, g: &Geo, t: Nanos, from: u64) {
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

    fn end_media(&mut self, g: &Geo, t: Nanos) {
        match std::mem::replace(&mut self.media, Media::Idle) {
            Media::Idle => {}
            Media::Req {
                slot,
                pos,
                xfer,
                cyl,
                head,
                ..
            } => {
                self.cyl = cyl;
                self.head = head;
                self.stats.positioning_ns += pos;
                self.stats.transfer_ns += xfer;
                let sl = self.slots[slot as usize];
                if sl.op == Op::Read {
                    self.buf = (sl.lba, sl.lba + sl.n);
                    self.ra_from = Some(sl.lba + sl.n);
                }
                self.finish(g, slot, t);
            }
            Media::Destage {
                idx,
                lba,
                n,
                pos,
                xfer,
                cyl,
                head,
                ..
            } => {
                self.cyl = cyl;
                self.head = head;
                self.stats.positioning_ns += pos;
                self.stats.transfer_ns += xfer;
                let i = match self.dirty.get(idx) {
                    Some(x) if x.lba == lba => Some(idx),
                    _ => self.dirty.iter().position(|x| x.lba == lba),
                };
                if let Some(i) = i {
                    let x = &mut self.dirty[i];
                    let done = n.min(x.n);
                    x.n -= done;
                    self.dirty_sectors = self.dirty_sectors.saturating_sub(done);
                    if x.n == 0 {
                        self.dirty.remove(i);
                    } else {
                        x.lba += done;
                        x.loc = g.locate(x.lba);
                        x.phase = g.phase(&x.loc);
                    }
                }
                self.accept_waiting(g, t);
            }
            Media::Ahead(ra) => {
                let reached = ra.stop.unwrap_or(ra.target);
                let last = if reached > ra.lba0 { reached - 1 } else { ra.lba0 };
                let loc = g.locate(last.min(g.capacity - 1));
                self.cyl = loc.cyl;
                self.head = loc.head;
                let t0 = ra.t0.min(t);
                self.stats.positioning_ns += t0 - ra.start.min(t0);
                self.stats.transfer_ns += t - t0;
                if self.buf.1 == ra.lba0 {
                    self.buf.1 = reached;
                } else {
                    self.buf = (ra.lba0, reached);
                }
            }
        }
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

// ---------------------------------------------------------------------------
// The device
// ---------------------------------------------------------------------------

/// The hard-disk model. See the module documentation.
#[derive(Debug)]
pub struct Hdd {
    geo: Geo,
    st: State,
    /// Where predictions run.
    scratch: State,
    next_done: Option<Nanos>,
    depth: u32,
    outstanding: u32,
}

impl Hdd {
    /// A disk with these parameters, every value checked.
    pub fn new(p: &HddParams) -> Result<Hdd, ParamError> {
        let geo = Geo::new(p)?;
        let depth = p.ncq.max(1);
        let st = State::new(depth as usize, geo.cache_segments);
        Ok(Hdd {
            scratch: st.clone(),
            st,
            geo,
            next_done: None,
            depth,
            outstanding: 0,
        })
    }

    /// Seek time over `distance` cylinders, ns, as the model uses it.
    pub fn seek_ns(&self, distance: u32) -> u64 {
        u64::from(self.geo.seek.ns(distance.min(self.geo.cylinders - 1)))
    }

    /// The fitted seek curve.
    pub fn seek_curve(&self) -> SeekCurve {
        self.geo.curve
    }

    /// Cylinders.
    pub fn cylinders(&self) -> u32 {
        self.geo.cylinders
    }

    /// One revolution, ns.
    pub fn revolution_ns(&self) -> u64 {
        self.geo.rev
    }

    /// Head switch time, ns.
    pub fn head_switch_ns(&self) -> u64 {
        u64::from(self.geo.head_switch)
    }

    /// Where `sector` is (clamped to the capacity).
    pub fn locate(&self, sector: u64) -> HddLocation {
        let loc = self.geo.locate(sector.min(self.geo.capacity - 1));
        HddLocation {
            zone: loc.zone,
            cylinder: loc.cyl,
            head: loc.head,
            sector: loc.sector,
            sectors_per_track: self.geo.zones[loc.zone as usize].spt,
        }
    }

    /// Time of the next completion if nothing more is submitted.
    fn predict(&mut self) -> Option<Nanos> {
        let st = &self.st;
        if let Some(&(t, _)) = st.done.first() {
            return Some(t);
        }
        if st.inflight == 0 {
            return None;
        }
        let m = st.timed.last().map_or(NEVER, |e| e.t);
        match st.media {
            Media::Req { end, .. } => return Some(m.min(end)),
            Media::Idle if m != NEVER => return Some(m),
            Media::Destage { end, .. } | Media::Ahead(Ahead { end, .. }) if m <= end => {
                return Some(m);
            }
            Media::Destage { idx, lba, n, end, .. }
                if st.queued.is_empty() && st.barrier.is_none() && !st.waiting.is_empty() =>
            {
                // Writes waiting for room: the first is accepted when this
                // destage ends if it fits then.
                if let Some(t) = self.accept_after_destage(idx, lba, n, end) {
                    return Some(m.min(t));
                }
            }
            _ => {}
        }
        self.scratch.clone_from(&self.st);
        // Every outstanding command completes within a bounded number of
        // events; the bound only guards against a modelling error.
        for _ in 0..100_000_000u64 {
            if let Some(&(t, _)) = self.scratch.done.first() {
                return Some(t);
            }
            if !self.scratch.step(&self.geo, NEVER) {
                break;
            }
        }
        debug_assert!(false, "hdd: an outstanding command never completes");
        None
    }

    /// When the first waiting write completes if it fits once the destage
    /// of `n` sectors at `lba` (extent `idx`) ends at `end`.
    fn accept_after_destage(&self, idx: usize, lba: u64, n: u64, end: Nanos) -> Option<Nanos> {
        let st = &self.st;
        let g = &self.geo;
        let &w = st.waiting.first()?;
        let sl = &st.slots[w as usize];
        let x = st.dirty.get(idx).filter(|x| x.lba == lba)?;
        let done = n.min(x.n);
        let (lo, hi) = (sl.lba, sl.lba + sl.n);
        let mut adjacent = false;
        for (i, y) in st.dirty.iter().enumerate() {
            let (ylo, yhi) = if i == idx {
                (y.lba + done, y.lba + y.n)
            } else {
                (y.lba, y.lba + y.n)
            };
            if ylo == yhi {
                continue;
            }
            if ylo <= lo && hi <= yhi {
                adjacent = true;
                break;
            }
            adjacent |= yhi == lo;
        }
        let room = st.dirty_sectors - done + sl.n <= g.cache_sectors;
        let segments = st.dirty.len() - usize::from(done == x.n);
        let fits = room && (adjacent || segments < g.cache_segments);
        if !fits {
            return None;
        }
        Some(end.max(sl.ready).max(st.iface_free) + g.iface(sl.n))
    }
}

impl Device for Hdd {
    fn describe(&self) -> String {
        let g = &self.geo;
        format!(
            "hdd ({} GB, {} rpm, {} zones {}-{} MB/s, {}, write cache {})",
            g.capacity * 512 / 1_000_000_000,
            g.rpm,
            g.zones.len(),
            g.outer_rate,
            g.inner_rate,
            if g.ncq > 1 {
                format!("queue {}", g.ncq)
            } else {
                "FIFO".to_string()
            },
            if g.write_cache { "on" } else { "off" }
        )
    }

    fn limits(&self) -> Limits {
        self.geo.limits
    }

    fn queue_depth(&self) -> u32 {
        self.depth
    }

    fn rotational(&self) -> bool {
        true
    }

    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        let g = &self.geo;
        let now = now.max(self.st.clock);
        let moved = self.st.advance(g, now);
        let st = &mut self.st;
        let s = match st.free.pop() {
            Some(s) => s,
            None => {
                // More than the queue depth outstanding: keep going.
                st.slots.push(Slot::FREE);
                (st.slots.len() - 1) as u32
            }
        };
        let (lba, n) = match io.op {
            Op::Flush => (0, 0),
            _ if io.sector >= g.capacity => (0, 0),
            _ => (io.sector, u64::from(io.sectors).min(g.capacity - io.sector)),
        };
        st.slots[s as usize] = Slot {
            tag: io.tag,
            op: io.op,
            flags: io.flags,
            lba,
            n,
            seq: st.seq,
            arrival: now,
            ready: now,
            state: SlotState::Free,
            preflush: io.flags.contains(BioFlags::PREFLUSH),
            loc: if n > 0 { g.locate(lba) } else { Loc::default() },
        };
        st.seq += 1;
        if st.inflight == 0 {
            st.busy_since = now;
        }
        st.inflight += 1;
        self.outstanding += 1;
        let waiting_before = st.waiting.len();
        st.classify(g, s, now);
        let state = st.slots[s as usize].state;
        // Behind a barrier, or behind other writes waiting for room, a new
        // command changes nothing that comes before it.
        let unchanged = !moved
            && self.next_done.is_some()
            && (state == SlotState::Held
                || (state == SlotState::Waiting && waiting_before > 0));
        st.kick(g, now);
        st.advance(g, now);
        if !unchanged {
            self.next_done = self.predict();
        }
    }

    fn next_completion(&self) -> Option<Nanos> {
        self.next_done
    }

    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        let now = now.max(self.st.clock);
        let moved = self.st.advance(&self.geo, now);
        if !moved && self.st.done.is_empty() {
            return;
        }
        for (_, tag) in self.st.done.drain(..) {
            self.outstanding = self.outstanding.saturating_sub(1);
            done(tag, Outcome::Done);
        }
        self.next_done = self.predict();
    }

    fn outstanding(&self) -> u32 {
        self.outstanding
    }

    fn stats(&self) -> DeviceStats {
        self.st.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fastmod_matches_remainder() {
        let g = Geo::new(&HddParams::preset("hdd-7200").unwrap()).unwrap();
        let mut x = 12345u32;
        for _ in 0..100_000 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let a = x % (g.kt as u32 + g.rev as u32);
            assert_eq!(g.fastmod(a), a % g.rev as u32);
        }
        assert_eq!(g.fastmod(0), 0);
        assert_eq!(g.fastmod(g.rev as u32), 0);
    }

    #[test]
    fn seek_mean_rises_with_the_knee() {
        let mut last = 0.0;
        for i in 0..=100 {
            let k = (f64::from(i) / 100.0 * 400_000f64.ln()).exp();
            let m = SeekCurve::with_knee(0.8, 16.0, 400_000.0, k).mean(400_000.0);
            assert!(m >= last - 1e-9, "knee {k}: {m} < {last}");
            last = m;
        }
    }

    #[test]
    fn locate_walks_tracks_in_order() {
        let g = Geo::new(&HddParams::preset("hdd-7200").unwrap()).unwrap();
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
        assert_eq!((d.zone, d.cyl, d.head, d.sector, d.off), (1, z1.first_cyl, 0, 0, z1.base_off));
        let last = g.locate(z1.first_lba - 1);
        assert_eq!(g.next_track(&last).unwrap().0, d);
    }

    #[test]
    fn reached_inverts_transfer() {
        let g = Geo::new(&HddParams::preset("hdd-7200").unwrap()).unwrap();
        let lba = 3000;
        let t0 = 1_000_000;
        for n in [1u64, 100, 255, 256, 3000, 7000] {
            let x = g.transfer(g.locate(lba), n, t0);
            assert_eq!(g.reached(lba, t0, x.end, u64::MAX), lba + n, "n={n}");
            assert!(g.reached(lba, t0, x.end - 1, u64::MAX) < lba + n);
        }
    }
}
