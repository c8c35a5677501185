//! [`HddParams`]: the HDD model's parameters, its presets, listing and
//! setting them by name, and the range checks that building a disk uses.

use super::sata_2011;
use crate::device::null::unknown;
use crate::device::param::{ParamError, ParamUnit, ParamValue, parse_param};

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
    pub const PRESETS: [(&'static str, &'static str); 4] = [
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
        (sata_2011::NAME, sata_2011::SUMMARY),
    ];

    /// The preset called `name`.
    pub fn preset(name: &str) -> Option<HddParams> {
        // Sources: typical datasheet figures for 7200 / 10K / 15K drives
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
        // What the SAS presets share apart from their spindle, platters and
        // seeks: two platters, TCQ 64, write cache off, a faster link.
        let sas = HddParams {
            heads: 4,
            write_settle: 0.5,
            overhead: 50.0,
            ncq: 64,
            write_cache: false,
            cache_size: 16 << 20,
            interface_rate: 1200.0,
            ..sata
        };
        match name {
            "hdd-7200" => Some(sata),
            "hdd-sas-10k" => Some(HddParams {
                rpm: 10_000.0,
                cylinders: 209_000,
                outer_rate: 150.0,
                inner_rate: 90.0,
                capacity: 1_172_123_568 * 512,
                seek_t2t: 0.3,
                seek_avg: 4.5,
                seek_full: 10.6,
                ..sas
            }),
            "hdd-sas-15k" => Some(HddParams {
                rpm: 15_000.0,
                cylinders: 118_000,
                outer_rate: 200.0,
                inner_rate: 120.0,
                capacity: 586_072_368 * 512,
                seek_t2t: 0.2,
                seek_avg: 3.5,
                seek_full: 6.5,
                ..sas
            }),
            sata_2011::NAME => Some(sata_2011::params(&sata)),
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
                "spindle speed; presets 7200 / 10000 / 15000 (typical datasheets: 8.33 / 6.0 / 4.0 ms revolutions)",
            ),
            p(
                "cylinders",
                f64::from(self.cylinders),
                Count,
                "tracks per surface; presets: the zones' size rounded up to a thousand cylinders above the capacity (derived, not from a datasheet)",
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
                "media rate of the outermost zone; presets 200 / 150 / 200 MB/s (typical datasheet figures)",
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
                "single-cylinder seek; presets 0.8 / 0.3 / 0.2 ms (typical datasheet figures)",
            ),
            p(
                "seek_avg",
                self.seek_avg,
                Millis,
                "mean seek over random cylinder pairs (the datasheet average); presets 8.5 / 4.5 / 3.5 ms (typical datasheet figures)",
            ),
            p(
                "seek_full",
                self.seek_full,
                Millis,
                "full-stroke seek; presets 16 / 10.6 / 6.5 ms (typical datasheet figures; DiskSim's Barracuda 16.7, Cheetah 9LP 10.6)",
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
        return Err(range(
            name,
            v,
            format!("must be a whole number up to {max}"),
        ));
    }
    Ok(v as u64)
}

pub(super) fn range(name: &'static str, value: f64, why: impl Into<String>) -> ParamError {
    ParamError::OutOfRange {
        model: HddParams::MODEL,
        name,
        value,
        why: why.into(),
    }
}

/// Check `lo <= v <= hi` (and that `v` is a number).
pub(super) fn within(
    name: &'static str,
    v: f64,
    lo: f64,
    hi: f64,
    unit: &str,
) -> Result<(), ParamError> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        Err(range(name, v, format!("must be {lo}..={hi}{unit}")))
    }
}
