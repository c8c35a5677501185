//! `zonemode=strided`: I/O stays in one zone of `zonerange` bytes until
//! `zonesize` bytes were transferred in it, then moves to the next zone,
//! `zonerange + zoneskip` bytes further on, wrapping to the start of the
//! region after the last (as fio does, measured with fio 3.33's null
//! engine: `--rw=read --size=256k --bs=4k --zonemode=strided --zonesize=8k
//! --zonerange=64k --zoneskip=16k` reads blocks 0 1 20 21 40 41 60 61 0 1
//! ...). When `zonesize` exceeds `zonerange`, the zone is gone over again
//! until `zonesize` bytes are done (0 1 0 1 2 3 2 3 ... for 16k in 8k
//! zones). Sequential I/O starts at each zone's start; random I/O draws
//! within the zone. `zonesize=0` means no zones.

use crate::job::{JobSpec, ZoneMode};

/// The zone geometry of a strided job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    /// Bytes to transfer in a zone before moving on.
    pub size: u64,
    /// Bytes of a zone.
    pub range: u64,
    /// Bytes between the end of one zone and the start of the next.
    pub skip: u64,
}

impl Strided {
    /// The zones of `job`, if it has any.
    pub fn of(job: &JobSpec) -> Option<Strided> {
        if job.zonemode != ZoneMode::Strided || job.zonesize == 0 {
            return None;
        }
        let range = if job.zonerange == 0 {
            job.zonesize
        } else {
            job.zonerange
        };
        Some(Strided {
            size: job.zonesize,
            range: range / 512 * 512,
            skip: job.zoneskip / 512 * 512,
        })
        .filter(|z| z.range > 0)
    }

    /// The end of the zone starting at `zone` in a region ending at `hi`.
    #[inline]
    pub fn end(&self, zone: u64, hi: u64) -> u64 {
        zone.saturating_add(self.range).min(hi)
    }

    /// The zone after the one at `zone`, in the region `[lo, hi)`.
    #[inline]
    pub fn next(&self, zone: u64, lo: u64, hi: u64) -> u64 {
        let next = zone.saturating_add(self.range).saturating_add(self.skip);
        if next >= hi { lo } else { next }
    }
}
