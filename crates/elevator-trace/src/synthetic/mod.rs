//! Generated traces of any length, for tests, benchmarks and speed
//! figures: [`SyntheticTrace`], records in O(1) memory with every kind of
//! event (Q, X, M, G, I, D, C, P, U; reads, writes, sync, FUA, flushes,
//! discards, an error completion now and then) from three processes on two
//! CPUs, times increasing; and [`kernel_text::write`], tracefs text that
//! looks like a kernel's (plugged batches that merge as they were
//! recorded), for the replay benchmarks.

pub mod kernel_text;

use elevator_core::{BioFlags, Op, TraceAction, TraceEvent};

use crate::record::{DevT, Record, dev_t, event};

/// The processes of a [`SyntheticTrace`]: pid and name.
pub const PROCESSES: [(u32, &str); 3] = [(4100, "postgres"), (4101, "kworker/1:2"), (4102, "fio")];

/// The device of a [`SyntheticTrace`] (8,16).
pub fn device() -> DevT {
    dev_t(8, 16)
}

/// Generates `n` events.
pub struct SyntheticTrace {
    remaining: u64,
    io: u64,
    time: u64,
    pending: [Option<Record>; 8],
    next: usize,
    count: usize,
}

impl SyntheticTrace {
    /// A trace of `events` events.
    pub fn new(events: u64) -> SyntheticTrace {
        SyntheticTrace {
            remaining: events,
            io: 0,
            time: 0,
            pending: [None; 8],
            next: 0,
            count: 0,
        }
    }

    fn push(
        &mut self,
        action: TraceAction,
        op: Op,
        flags: BioFlags,
        sector: u64,
        bytes: u32,
        extra: u64,
    ) {
        let k = self.io;
        let (pid, _) = PROCESSES[(k % 3) as usize];
        let cpu = (k % 2) as u32;
        let error = if action == TraceAction::Complete && k % 97 == 5 {
            -5
        } else {
            0
        };
        let event = TraceEvent {
            error,
            extra,
            ..event(self.time, action, op, flags, sector, bytes, pid)
        };
        self.time += 731 + (k % 5) * 97;
        if self.count < self.pending.len() {
            self.pending[self.count] = Some(Record::new(event, cpu, device()));
            self.count += 1;
        }
    }

    /// Queue up the events of the next I/O.
    fn generate(&mut self) {
        self.count = 0;
        self.next = 0;
        let k = self.io;
        let sector = (k * 7919 % 1_000_000) * 8;
        let bytes = 4096 * (1 + (k % 8) as u32);
        let (op, flags) = match k % 10 {
            0..=3 => (Op::Read, BioFlags::NONE),
            4 | 5 => (Op::Write, BioFlags::NONE),
            6 => (Op::Write, BioFlags::SYNC),
            7 => (Op::Write, BioFlags::SYNC | BioFlags::FUA | BioFlags::META),
            8 => (Op::Discard, BioFlags::NONE),
            _ if k % 50 == 9 => (Op::Flush, BioFlags::PREFLUSH),
            _ => (Op::Read, BioFlags::SYNC),
        };
        let (sector, bytes) = if op == Op::Flush {
            (0, 0)
        } else {
            (sector, bytes)
        };
        let plug = k.is_multiple_of(8);
        if plug {
            self.push(TraceAction::Plug, Op::Write, BioFlags::NONE, 0, 0, 0);
        }
        self.push(TraceAction::Queue, op, flags, sector, bytes, 0);
        if k % 13 == 1 && bytes > 4096 {
            // As the kernel's block_split: the piece before the cut.
            self.push(TraceAction::Split, op, flags, sector, 4096, sector + 8);
        }
        if k % 7 == 3 && op != Op::Flush {
            self.push(TraceAction::BackMerge, op, flags, sector, bytes, 0);
        } else {
            if op != Op::Flush {
                self.push(TraceAction::GetRq, op, flags, sector, bytes, 0);
                self.push(TraceAction::Insert, op, flags, sector, bytes, 0);
            }
            if plug {
                self.push(
                    TraceAction::Unplug,
                    Op::Write,
                    BioFlags::NONE,
                    0,
                    0,
                    1 + k % 4,
                );
            }
            self.push(TraceAction::Issue, op, flags, sector, bytes, 0);
            self.push(TraceAction::Complete, op, flags, sector, bytes, 0);
        }
        self.io += 1;
    }
}

impl Iterator for SyntheticTrace {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        if self.remaining == 0 {
            return None;
        }
        while self.next >= self.count {
            self.generate();
        }
        let r = self.pending[self.next].take();
        self.next += 1;
        self.remaining -= 1;
        r
    }
}
