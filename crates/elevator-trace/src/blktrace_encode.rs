//! Encoding blktrace records straight into a byte buffer: the writers'
//! hot path.
//!
//! [`encode_record`] appends one event's 48 bytes (56 with a split's or
//! unplug's payload) to a `Vec<u8>` in fixed-size copies, with the `action`
//! word looked up in an [`ActionWords`] table rather than worked out per
//! event; [`encode_notify`] appends a process notify record. The bytes are
//! those of [`RawRecord::encode`](crate::blktrace::RawRecord::encode) (the
//! tests check it).

use elevator_core::{BioFlags, Op, TraceAction};

use crate::blktrace::{MAGIC, RECORD_BYTES, VERSION, action_word, category, code};
use crate::record::{DevT, Record};

/// Bytes of a process notify record's payload (the kernel's `comm`).
pub const COMM_BYTES: usize = 16;

/// The flag bits that change an `action` word (sync, meta, FUA, preflush).
const FLAG_BITS: usize = 16;

/// [`action_word`] for every action, operation and flag set, computed once.
#[derive(Clone, Debug)]
pub struct ActionWords {
    words: Vec<u32>,
}

impl Default for ActionWords {
    fn default() -> ActionWords {
        ActionWords::new()
    }
}

impl ActionWords {
    /// The table (960 words).
    pub fn new() -> ActionWords {
        let mut words = vec![0; TraceAction::ALL.len() * Op::ALL.len() * FLAG_BITS];
        for action in TraceAction::ALL {
            for op in Op::ALL {
                for bits in 0..FLAG_BITS {
                    let flags = flags_of(bits as u8);
                    words[Self::index(action, op, flags)] = action_word(action, op, flags);
                }
            }
        }
        ActionWords { words }
    }

    #[inline]
    fn index(action: TraceAction, op: Op, flags: BioFlags) -> usize {
        ((action as usize * Op::ALL.len()) + op as usize) * FLAG_BITS
            + (flags.bits() as usize & (FLAG_BITS - 1))
    }

    /// The `action` word of [`action_word`]`(action, op, flags)`.
    #[inline]
    pub fn get(&self, action: TraceAction, op: Op, flags: BioFlags) -> u32 {
        // The index is in range by construction; `get` keeps it panic-free.
        self.words
            .get(Self::index(action, op, flags))
            .copied()
            .unwrap_or_else(|| action_word(action, op, flags))
    }
}

/// The flags whose bits are `bits` (sync, meta, FUA, preflush).
fn flags_of(bits: u8) -> BioFlags {
    let mut flags = BioFlags::NONE;
    for f in [
        BioFlags::SYNC,
        BioFlags::META,
        BioFlags::FUA,
        BioFlags::PREFLUSH,
    ] {
        if bits & f.bits() != 0 {
            flags |= f;
        }
    }
    flags
}

/// Append `record`, numbered `sequence`, to `out`: 48 bytes, and for a
/// split or unplug the 8-byte big-endian payload (`extra`), with `pdu_len`
/// saying so. `words` gives the `action` word.
#[inline(always)]
pub fn encode_record(out: &mut Vec<u8>, words: &ActionWords, record: &Record, sequence: u32) {
    let e = &record.event;
    let pdu = matches!(e.action, TraceAction::Split | TraceAction::Unplug);
    let mut b = [0u8; RECORD_BYTES + 8];
    b[0..4].copy_from_slice(&(MAGIC | u32::from(VERSION)).to_ne_bytes());
    b[4..8].copy_from_slice(&sequence.to_ne_bytes());
    b[8..16].copy_from_slice(&e.time.to_ne_bytes());
    b[16..24].copy_from_slice(&e.sector.to_ne_bytes());
    b[24..28].copy_from_slice(&e.bytes.to_ne_bytes());
    b[28..32].copy_from_slice(&words.get(e.action, e.op, e.flags).to_ne_bytes());
    b[32..36].copy_from_slice(&e.ctx.0.to_ne_bytes());
    b[36..40].copy_from_slice(&record.dev.to_ne_bytes());
    b[40..44].copy_from_slice(&record.cpu.to_ne_bytes());
    // The kernel stores the (negative) errno in 16 bits.
    b[44..46].copy_from_slice(&(e.error as u16).to_ne_bytes());
    b[46..48].copy_from_slice(&(if pdu { 8u16 } else { 0 }).to_ne_bytes());
    if pdu {
        b[48..56].copy_from_slice(&e.extra.to_be_bytes());
        out.extend_from_slice(&b);
    } else {
        out.extend_from_slice(&b[..RECORD_BYTES]);
    }
}

/// Append a process notify record naming `pid` (`name` cut to 15 bytes and
/// NUL padded to 16, as the kernel's `comm`) on `cpu` and `dev` to `out`.
pub fn encode_notify(out: &mut Vec<u8>, pid: u32, name: &str, time: u64, cpu: u32, dev: DevT) {
    let raw = crate::blktrace::RawRecord {
        magic: MAGIC | u32::from(VERSION),
        sequence: 0,
        time,
        sector: 0,
        bytes: 0,
        action: (category::NOTIFY << 16) | code::NOTIFY_PROCESS,
        pid,
        device: dev,
        cpu,
        error: 0,
        pdu_len: COMM_BYTES as u16,
    };
    let mut comm = [0u8; COMM_BYTES];
    // The kernel's comm holds 15 bytes and a NUL.
    let n = name.len().min(COMM_BYTES - 1);
    comm[..n].copy_from_slice(&name.as_bytes()[..n]);
    out.extend_from_slice(&raw.encode());
    out.extend_from_slice(&comm);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blktrace_write::raw_record;
    use crate::record::event;

    #[test]
    fn encoded_records_are_the_raw_records() {
        let words = ActionWords::new();
        let mut out = Vec::new();
        let mut want = Vec::new();
        let mut sequence = 0;
        for action in TraceAction::ALL {
            for op in Op::ALL {
                for bits in 0..32u8 {
                    let mut flags = flags_of(bits & 15);
                    if bits & 16 != 0 {
                        flags |= BioFlags::NOMERGE;
                    }
                    let mut e = event(1234, action, op, flags, 77, 4096, 9);
                    e.error = -5;
                    e.extra = 0x0102_0304_0506_0708;
                    let r = Record::new(e, 3, 240 << 20);
                    sequence += 1;
                    encode_record(&mut out, &words, &r, sequence);
                    let raw = raw_record(&r, sequence);
                    want.extend_from_slice(&raw.encode());
                    if raw.pdu_len > 0 {
                        want.extend_from_slice(&e.extra.to_be_bytes());
                    }
                }
            }
        }
        assert!(out == want);
    }
}
