//! How a flush sequence shows in a replay's trace: the kernel's flush
//! machinery traces a `FWFSM` bio as the bio it was given (its `Q` and
//! `G`), not as the flush, write and flush it becomes, so a replay shows
//! the sequence's first part as the recorded bio and leaves its other
//! parts' `Q` and `G` out ([`SequenceLabels`]). A driver whose queue
//! events it drains one submission at a time knows which events are a
//! part's; one whose queue may take a part later (elevator-io's engine,
//! when the queue has no free tag) notes each part as it is submitted,
//! and its `Q` is found among the events by what it carries.

use std::collections::VecDeque;

use elevator_core::{Op, TraceAction, TraceEvent};

use super::{InFlightBio, Part};

/// What a part's `Q` and `G` become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Label {
    /// Shown as they are.
    Keep,
    /// Shown as the recorded bio's.
    As(Part),
    /// Left out.
    Drop,
}

/// A part of a sequence submitted, whose `Q` has not been seen yet.
#[derive(Clone, Copy, Debug)]
struct Pending {
    handle: u32,
    op: Op,
    sector: u64,
    bytes: u32,
    pid: u32,
    label: Label,
}

impl Pending {
    /// Whether `e` is this part's `Q` (a flush's sector is traced as 0).
    fn is_queue_of(&self, e: &TraceEvent) -> bool {
        let sector = if self.op == Op::Flush { 0 } else { self.sector };
        e.op == self.op && e.sector == sector && e.bytes == self.bytes && e.ctx.0 == self.pid
    }
}

/// The labels of the parts of flush sequences in flight (see the module's
/// documentation). Holds at most one entry per part submitted and not yet
/// seen or forgotten.
#[derive(Clone, Debug)]
pub struct SequenceLabels {
    pending: VecDeque<Pending>,
    /// What the `G` events after the latest `Q` become.
    current: Label,
}

impl Default for SequenceLabels {
    fn default() -> Self {
        SequenceLabels::new()
    }
}

impl SequenceLabels {
    /// No sequence in flight.
    pub fn new() -> SequenceLabels {
        SequenceLabels {
            pending: VecDeque::new(),
            current: Label::Keep,
        }
    }

    /// The running part of `bio` (handle `handle`) went to the queue:
    /// note it if `bio` runs as a sequence.
    pub fn submitted(&mut self, handle: u32, bio: &InFlightBio) {
        let (Some(original), Some((op, _, sector, bytes))) = (bio.original, bio.part()) else {
            return;
        };
        let label = if bio.next == 0 {
            Label::As(original)
        } else {
            Label::Drop
        };
        self.pending.push_back(Pending {
            handle,
            op,
            sector,
            bytes,
            pid: bio.pid,
            label,
        });
    }

    /// Bio `handle`'s running part completed or was refused: its `Q` has
    /// been seen, or never will be.
    pub fn forget(&mut self, handle: u32) {
        if !self.pending.is_empty() {
            self.pending.retain(|p| p.handle != handle);
        }
    }

    /// Relabel `event` as its part's label says: false if it is left out.
    #[inline]
    pub fn apply(&mut self, event: &mut TraceEvent) -> bool {
        match event.action {
            TraceAction::Queue => {
                self.current = if self.pending.is_empty() {
                    Label::Keep
                } else {
                    match self.pending.iter().position(|p| p.is_queue_of(event)) {
                        Some(i) => self.pending.remove(i).map_or(Label::Keep, |p| p.label),
                        None => Label::Keep,
                    }
                };
            }
            TraceAction::GetRq => {}
            _ => return true,
        }
        match self.current {
            Label::Keep => true,
            Label::Drop => false,
            Label::As((op, flags, sector, bytes)) => {
                event.op = op;
                event.flags = flags;
                event.sector = sector;
                event.bytes = bytes;
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::event;
    use crate::replay::{FlushModel, InFlight, PlannedBio};
    use elevator_core::BioFlags;

    fn q(action: TraceAction, op: Op, sector: u64, bytes: u32, pid: u32) -> TraceEvent {
        event(0, action, op, BioFlags::NONE, sector, bytes, pid)
    }

    #[test]
    fn a_sequence_shows_as_the_recorded_bio_whenever_its_parts_are_queued() {
        let fwfsm = PlannedBio {
            time: 0,
            op: Op::Write,
            flags: BioFlags::PREFLUSH | BioFlags::FUA | BioFlags::SYNC,
            sector: 64,
            bytes: 4096,
            pid: 9,
            record: 1,
        };
        let mut f = InFlight::new();
        let s = f.start(&fwfsm, FlushModel::default().parts(&fwfsm));
        let mut labels = SequenceLabels::new();
        labels.submitted(s, f.get(s).expect("started"));
        // Another bio's Q comes first: it is left as it is.
        let mut other = q(TraceAction::Queue, Op::Write, 8, 4096, 3);
        assert!(labels.apply(&mut other));
        assert_eq!(other.sector, 8);
        // The first part (a flush) shows as the recorded write, Q and G.
        let mut first = q(TraceAction::Queue, Op::Flush, 0, 0, 9);
        assert!(labels.apply(&mut first));
        assert_eq!((first.op, first.sector, first.bytes), (Op::Write, 64, 4096));
        let mut g = q(TraceAction::GetRq, Op::Flush, 0, 0, 9);
        assert!(labels.apply(&mut g));
        assert_eq!(g.sector, 64);
        let mut d = q(TraceAction::Issue, Op::Flush, 0, 0, 9);
        assert!(labels.apply(&mut d));
        assert_eq!(d.op, Op::Flush);
        // The later parts' Q and G are left out, their D kept.
        labels.forget(s);
        assert_eq!(f.part_done(s), Some(true));
        labels.submitted(s, f.get(s).expect("running"));
        let mut second = q(TraceAction::Queue, Op::Write, 64, 4096, 9);
        assert!(!labels.apply(&mut second));
        assert!(!labels.apply(&mut q(TraceAction::GetRq, Op::Write, 64, 4096, 9)));
        assert!(labels.apply(&mut q(TraceAction::Issue, Op::Write, 64, 4096, 9)));
        // A part refused never shows: forgetting it leaves nothing behind.
        labels.forget(s);
        assert_eq!(f.part_done(s), Some(true));
        labels.submitted(s, f.get(s).expect("running"));
        labels.forget(s);
        assert!(labels.pending.is_empty());
        let mut plain = q(TraceAction::Queue, Op::Flush, 0, 0, 9);
        assert!(labels.apply(&mut plain));
        assert_eq!(plain.op, Op::Flush);
    }
}
