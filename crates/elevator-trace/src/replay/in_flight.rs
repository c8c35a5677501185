//! The recorded bios a replay has started and not finished, shared by both
//! drivers (elevator-sim's on a model, elevator-io's on a real device): each
//! one's flush parts ([`FlushParts`], submitted one after the other's
//! completion), which part runs, and whose bio it is. A bio is named by a
//! `u32` handle, the token (or user data) its parts carry through the queue
//! or the engine; handles are reused ([`elevator_core::index::Slab`]), so
//! a replay allocates nothing per bio once warm.

use elevator_core::index::Slab;
use elevator_core::{BioFlags, Op};

use super::{FlushParts, PlannedBio};

/// One part of a recorded bio: `(op, flags, sector, bytes)`.
pub type Part = (Op, BioFlags, u64, u32);

/// One recorded bio in flight.
#[derive(Clone, Copy, Debug, Default)]
pub struct InFlightBio {
    /// Its parts, in order.
    pub parts: FlushParts,
    /// Which part runs (an index into `parts`).
    pub next: u8,
    /// The recording's process (the parts' I/O context).
    pub pid: u32,
    /// Its trace record, for errors.
    pub record: u64,
    /// The recorded bio, when it runs as a sequence of parts (a flush
    /// machinery's sequence shows as the recorded bio in a simulated trace).
    pub original: Option<Part>,
}

impl InFlightBio {
    /// The part to submit now (`None`: none left).
    #[inline]
    pub fn part(&self) -> Option<Part> {
        self.parts.parts.get(self.next as usize).copied().flatten()
    }
}

/// The recorded bios in flight (see the module's documentation).
#[derive(Clone, Debug)]
pub struct InFlight {
    bios: Slab<InFlightBio>,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight::new()
    }
}

impl InFlight {
    /// None in flight.
    pub fn new() -> InFlight {
        InFlight {
            bios: Slab::new(0, u32::MAX),
        }
    }

    /// Start `b` as `parts` (its first part not yet submitted); its handle.
    #[inline]
    pub fn start(&mut self, b: &PlannedBio, parts: FlushParts) -> u32 {
        let bio = InFlightBio {
            parts,
            next: 0,
            pid: b.pid,
            record: b.record,
            original: (!parts.is_single()).then_some((b.op, b.flags, b.sector, b.bytes)),
        };
        // A slab of u32::MAX entries fills only past 2^32 bios in flight,
        // more than any queue or engine holds (their tags are fewer).
        self.bios
            .alloc(bio)
            .unwrap_or_else(|| unreachable!("2^32 replayed bios in flight"))
    }

    /// Bio `s`, if `s` was ever handed out.
    #[inline]
    pub fn get(&self, s: u32) -> Option<&InFlightBio> {
        (s < self.bios.high_water()).then(|| &self.bios[s])
    }

    /// The running part of bio `s` completed: whether another part follows
    /// (`s` stays, its next part to submit); if not, `s` is finished and its
    /// handle freed. `None` for a handle never handed out.
    #[inline]
    pub fn part_done(&mut self, s: u32) -> Option<bool> {
        if s >= self.bios.high_water() {
            return None;
        }
        let bio = &mut self.bios[s];
        bio.next += 1;
        let more = bio.part().is_some();
        if !more {
            self.bios.free(s);
        }
        Some(more)
    }

    /// Bio `s` ends early (left out as bad): its handle is freed.
    #[inline]
    pub fn release(&mut self, s: u32) {
        self.bios.free(s);
    }

    /// Bios started and not finished.
    #[inline]
    pub fn outstanding(&self) -> u64 {
        u64::from(self.bios.used())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::FlushModel;

    fn bio(op: Op, flags: BioFlags) -> PlannedBio {
        PlannedBio {
            op,
            flags,
            sector: 8,
            bytes: 4096,
            pid: 7,
            time: 0,
            record: 3,
        }
    }

    #[test]
    fn a_flush_sequence_runs_part_by_part_then_frees_its_handle() {
        let mut f = InFlight::new();
        let b = bio(Op::Write, BioFlags::PREFLUSH | BioFlags::FUA);
        let s = f.start(&b, FlushModel::default().parts(&b));
        assert_eq!(f.outstanding(), 1);
        let first = f
            .get(s)
            .map(|b| (b.part().map(|p| p.0), b.original.is_some(), b.pid));
        assert_eq!(first, Some((Some(Op::Flush), true, 7)));
        assert_eq!(f.part_done(s), Some(true));
        assert_eq!(f.part_done(s), Some(true));
        assert_eq!(f.part_done(s), Some(false));
        assert_eq!(f.outstanding(), 0);
        // The handle is reused.
        let plain = bio(Op::Read, BioFlags::NONE);
        assert_eq!(f.start(&plain, FlushModel::default().parts(&plain)), s);
        assert!(f.get(s).is_some_and(|b| b.original.is_none()));
        assert_eq!(f.part_done(s + 1), None);
    }
}
