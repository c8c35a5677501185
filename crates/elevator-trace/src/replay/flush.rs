//! The kernel's flush machinery (`blk-flush.c`) as a property of the
//! device replayed on: what a bio with PREFLUSH or FUA becomes.

use elevator_core::{BioFlags, Op};

use super::PlannedBio;

/// What the replayed-on device does with cache flushes, so that a bio with
/// PREFLUSH or FUA becomes what the kernel's flush machinery makes of it
/// (`blk-flush.c`): on a device with a volatile write cache and no FUA (a
/// loop device, most SATA disks), a `FWFSM` bio is a flush, then the write,
/// then another flush, one after the other; with FUA, a flush then a FUA
/// write; with no write cache, the flags are dropped and an empty flush
/// completes at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushModel {
    /// The device has a volatile write cache (Linux `write_cache`: write back).
    pub write_cache: bool,
    /// The device honours FUA writes itself.
    pub fua: bool,
}

impl Default for FlushModel {
    /// Write back without FUA, as a loop device is.
    fn default() -> FlushModel {
        FlushModel {
            write_cache: true,
            fua: false,
        }
    }
}

/// What one recorded bio becomes: up to three bios, submitted one after the
/// other's completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushParts {
    /// The parts, in order: `(op, flags, sector, bytes)`.
    pub parts: [Option<(Op, BioFlags, u64, u32)>; 3],
}

impl FlushParts {
    /// Whether the bio needs no sequence (one part, as recorded).
    pub fn is_single(&self) -> bool {
        self.parts[1].is_none()
    }
}

impl FlushModel {
    /// What `bio` becomes on this device. An empty result (no part) means
    /// it completes at once (a flush with no write cache to flush).
    pub fn parts(&self, bio: &PlannedBio) -> FlushParts {
        let flush = (Op::Flush, BioFlags::PREFLUSH | BioFlags::SYNC, 0, 0);
        let mut out = FlushParts::default();
        let cache_flags = BioFlags::PREFLUSH | BioFlags::FUA;
        if !self.write_cache {
            if bio.op != Op::Flush {
                let flags = bio.flags.without(cache_flags);
                out.parts[0] = Some((bio.op, flags, bio.sector, bio.bytes));
            }
            return out;
        }
        if bio.op == Op::Flush || !bio.flags.intersects(cache_flags) {
            out.parts[0] = Some((bio.op, bio.flags, bio.sector, bio.bytes));
            return out;
        }
        let mut n = 0;
        if bio.flags.contains(BioFlags::PREFLUSH) {
            out.parts[n] = Some(flush);
            n += 1;
        }
        let fua = self.fua && bio.flags.contains(BioFlags::FUA);
        let mut flags = bio.flags.without(cache_flags) | BioFlags::NOMERGE;
        if fua {
            flags |= BioFlags::FUA;
        }
        out.parts[n] = Some((bio.op, flags, bio.sector, bio.bytes));
        n += 1;
        if bio.flags.contains(BioFlags::FUA) && !fua {
            out.parts[n] = Some(flush);
        }
        out
    }
}
