//! blktrace's binary format: the 48-byte `struct blk_io_trace` record that
//! the kernel's relay buffers hold and `blktrace -o NAME` writes to
//! `NAME.blktrace.<cpu>`, followed by `pdu_len` bytes of payload.
//!
//! Layout (native byte order; readers detect it from the magic):
//!
//! | offset | field    | type | meaning                                     |
//! |--------|----------|------|---------------------------------------------|
//! | 0      | magic    | u32  | `0x65617400 \| version` (version 0x07)      |
//! | 4      | sequence | u32  | per-CPU sequence number                     |
//! | 8      | time     | u64  | nanoseconds                                 |
//! | 16     | sector   | u64  | first 512-byte sector                       |
//! | 24     | bytes    | u32  | size                                        |
//! | 28     | action   | u32  | categories `<< 16` \| action code           |
//! | 32     | pid      | u32  | process id                                  |
//! | 36     | device   | u32  | `major << 20 \| minor`                      |
//! | 40     | cpu      | u32  | CPU                                         |
//! | 44     | error    | u16  | errno of a completion                       |
//! | 46     | pdu_len  | u16  | payload bytes that follow                   |
//!
//! Payloads: a split's is the big-endian sector the second part starts at;
//! an unplug's the big-endian number of requests; a process notify's the
//! process name (16 bytes, NUL padded).

use elevator_core::{BioFlags, Op, TraceAction};

/// Bytes of one record without its payload.
pub const RECORD_BYTES: usize = 48;
/// The magic number without the version byte.
pub const MAGIC: u32 = 0x6561_7400;
/// The format version written and read.
pub const VERSION: u8 = 0x07;

/// Category bits (`BLK_TC_*`), stored `<< 16` in `action`.
pub mod category {
    /// A read.
    pub const READ: u32 = 1 << 0;
    /// A write.
    pub const WRITE: u32 = 1 << 1;
    /// A flush or preflush.
    pub const FLUSH: u32 = 1 << 2;
    /// Synchronous.
    pub const SYNC: u32 = 1 << 3;
    /// Queueing events.
    pub const QUEUE: u32 = 1 << 4;
    /// Requeue.
    pub const REQUEUE: u32 = 1 << 5;
    /// Issue.
    pub const ISSUE: u32 = 1 << 6;
    /// Completion.
    pub const COMPLETE: u32 = 1 << 7;
    /// File-system request.
    pub const FS: u32 = 1 << 8;
    /// Passthrough request.
    pub const PC: u32 = 1 << 9;
    /// A notify record (process name, timestamp, message).
    pub const NOTIFY: u32 = 1 << 10;
    /// Readahead.
    pub const AHEAD: u32 = 1 << 11;
    /// Metadata.
    pub const META: u32 = 1 << 12;
    /// Discard.
    pub const DISCARD: u32 = 1 << 13;
    /// Driver data.
    pub const DRV_DATA: u32 = 1 << 14;
    /// Forced unit access.
    pub const FUA: u32 = 1 << 15;
}

/// Action codes (`__BLK_TA_*`), the low 16 bits of `action`.
pub mod code {
    /// Q.
    pub const QUEUE: u32 = 1;
    /// M.
    pub const BACKMERGE: u32 = 2;
    /// F.
    pub const FRONTMERGE: u32 = 3;
    /// G.
    pub const GETRQ: u32 = 4;
    /// S (sleep for a request).
    pub const SLEEPRQ: u32 = 5;
    /// R.
    pub const REQUEUE: u32 = 6;
    /// D.
    pub const ISSUE: u32 = 7;
    /// C.
    pub const COMPLETE: u32 = 8;
    /// P.
    pub const PLUG: u32 = 9;
    /// U.
    pub const UNPLUG_IO: u32 = 10;
    /// UT (timer unplug).
    pub const UNPLUG_TIMER: u32 = 11;
    /// I.
    pub const INSERT: u32 = 12;
    /// X.
    pub const SPLIT: u32 = 13;
    /// B (bounce).
    pub const BOUNCE: u32 = 14;
    /// A (remap).
    pub const REMAP: u32 = 15;
    /// Abort.
    pub const ABORT: u32 = 16;
    /// Driver data.
    pub const DRV_DATA: u32 = 17;
    /// Notify: a process name.
    pub const NOTIFY_PROCESS: u32 = 0;
    /// Notify: a wall-clock timestamp.
    pub const NOTIFY_TIMESTAMP: u32 = 1;
    /// Notify: a message.
    pub const NOTIFY_MESSAGE: u32 = 2;
    /// The cgroup flag that may be or'ed onto a code.
    pub const CGROUP: u32 = 1 << 8;
}

/// One raw record, fields as stored (already in host byte order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawRecord {
    /// Magic and version.
    pub magic: u32,
    /// Per-CPU sequence.
    pub sequence: u32,
    /// Nanoseconds.
    pub time: u64,
    /// Sector.
    pub sector: u64,
    /// Bytes.
    pub bytes: u32,
    /// Categories `<< 16` | code.
    pub action: u32,
    /// Process id.
    pub pid: u32,
    /// Device.
    pub device: u32,
    /// CPU.
    pub cpu: u32,
    /// Errno.
    pub error: u16,
    /// Payload length.
    pub pdu_len: u16,
}

/// Byte order of a file, found from its first record's magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    /// Little-endian (x86, arm64).
    Little,
    /// Big-endian.
    Big,
}

impl Endian {
    /// This machine's.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };

    /// The byte order in which `bytes` (a record's first four) read as the
    /// magic, if any.
    pub fn detect(bytes: [u8; 4]) -> Option<Endian> {
        if u32::from_le_bytes(bytes) & 0xffff_ff00 == MAGIC {
            Some(Endian::Little)
        } else if u32::from_be_bytes(bytes) & 0xffff_ff00 == MAGIC {
            Some(Endian::Big)
        } else {
            None
        }
    }
}

impl RawRecord {
    /// Encode in host byte order (as blktrace writes).
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[0..4].copy_from_slice(&self.magic.to_ne_bytes());
        b[4..8].copy_from_slice(&self.sequence.to_ne_bytes());
        b[8..16].copy_from_slice(&self.time.to_ne_bytes());
        b[16..24].copy_from_slice(&self.sector.to_ne_bytes());
        b[24..28].copy_from_slice(&self.bytes.to_ne_bytes());
        b[28..32].copy_from_slice(&self.action.to_ne_bytes());
        b[32..36].copy_from_slice(&self.pid.to_ne_bytes());
        b[36..40].copy_from_slice(&self.device.to_ne_bytes());
        b[40..44].copy_from_slice(&self.cpu.to_ne_bytes());
        b[44..46].copy_from_slice(&self.error.to_ne_bytes());
        b[46..48].copy_from_slice(&self.pdu_len.to_ne_bytes());
        b
    }

    /// Decode a record stored in `endian` order. Magic and version are not
    /// checked here.
    pub fn decode(b: &[u8; RECORD_BYTES], endian: Endian) -> RawRecord {
        let u16_at = |i: usize| {
            let a = [b[i], b[i + 1]];
            match endian {
                Endian::Little => u16::from_le_bytes(a),
                Endian::Big => u16::from_be_bytes(a),
            }
        };
        let u32_at = |i: usize| {
            let a = [b[i], b[i + 1], b[i + 2], b[i + 3]];
            match endian {
                Endian::Little => u32::from_le_bytes(a),
                Endian::Big => u32::from_be_bytes(a),
            }
        };
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            match endian {
                Endian::Little => u64::from_le_bytes(a),
                Endian::Big => u64::from_be_bytes(a),
            }
        };
        RawRecord {
            magic: u32_at(0),
            sequence: u32_at(4),
            time: u64_at(8),
            sector: u64_at(16),
            bytes: u32_at(24),
            action: u32_at(28),
            pid: u32_at(32),
            device: u32_at(36),
            cpu: u32_at(40),
            error: u16_at(44),
            pdu_len: u16_at(46),
        }
    }
}

/// The `action` word the kernel writes for `action` on an I/O of `op` with
/// `flags` (`__blk_add_trace`: the action's category and code, the
/// direction, and the flag categories).
pub fn action_word(action: TraceAction, op: Op, flags: BioFlags) -> u32 {
    let (code_, cat) = match action {
        TraceAction::Queue => (code::QUEUE, category::QUEUE),
        TraceAction::BackMerge | TraceAction::RqMerge => (code::BACKMERGE, category::QUEUE),
        TraceAction::FrontMerge => (code::FRONTMERGE, category::QUEUE),
        TraceAction::GetRq => (code::GETRQ, category::QUEUE),
        TraceAction::Insert => (code::INSERT, category::QUEUE),
        TraceAction::Issue => (code::ISSUE, category::ISSUE),
        TraceAction::Complete => (code::COMPLETE, category::COMPLETE),
        TraceAction::Requeue => (code::REQUEUE, category::REQUEUE),
        TraceAction::Plug => (code::PLUG, category::QUEUE),
        TraceAction::Unplug => (code::UNPLUG_IO, category::QUEUE),
        TraceAction::Split => (code::SPLIT, 0),
    };
    if matches!(action, TraceAction::Plug | TraceAction::Unplug) {
        return code_ | (cat << 16);
    }
    let mut cats = cat;
    match op {
        Op::Read => cats |= category::READ,
        Op::Write | Op::WriteZeroes => cats |= category::WRITE,
        Op::Discard => cats |= category::WRITE | category::DISCARD,
        // A flush bio is the kernel's empty preflush write (`FWS 0 + 0`);
        // the flush request made of it is a flush op, not a write (`FN`).
        Op::Flush if action.is_request() => cats |= category::FLUSH,
        Op::Flush => cats |= category::FLUSH | category::WRITE,
    }
    if flags.contains(BioFlags::PREFLUSH) {
        cats |= category::FLUSH;
    }
    if flags.contains(BioFlags::FUA) {
        cats |= category::FUA;
    }
    if flags.contains(BioFlags::SYNC) {
        cats |= category::SYNC;
    }
    if flags.contains(BioFlags::META) {
        cats |= category::META;
    }
    if action.is_request() {
        cats |= category::FS;
    }
    code_ | (cats << 16)
}

/// What an `action` word says: the action, operation and flags, for a
/// record of `bytes` bytes. `None` for codes elevator does not replay
/// (sleep, bounce, remap, abort, driver data, timer unplugs are
/// [`TraceAction::Unplug`]) and for notify records.
pub fn decode_action(word: u32, bytes: u32) -> Option<(TraceAction, Op, BioFlags)> {
    let cats = word >> 16;
    if cats & category::NOTIFY != 0 {
        return None;
    }
    let action = match word & 0xffff & !code::CGROUP {
        code::QUEUE => TraceAction::Queue,
        code::BACKMERGE => TraceAction::BackMerge,
        code::FRONTMERGE => TraceAction::FrontMerge,
        code::GETRQ => TraceAction::GetRq,
        code::INSERT => TraceAction::Insert,
        code::ISSUE => TraceAction::Issue,
        code::COMPLETE => TraceAction::Complete,
        code::REQUEUE => TraceAction::Requeue,
        code::PLUG => TraceAction::Plug,
        code::UNPLUG_IO | code::UNPLUG_TIMER => TraceAction::Unplug,
        code::SPLIT => TraceAction::Split,
        _ => return None,
    };
    let mut flags = BioFlags::NONE;
    for (cat, flag) in [
        (category::SYNC, BioFlags::SYNC),
        (category::META, BioFlags::META),
        (category::FUA, BioFlags::FUA),
        (category::FLUSH, BioFlags::PREFLUSH),
    ] {
        if cats & cat != 0 {
            flags |= flag;
        }
    }
    let op = if cats & category::DISCARD != 0 {
        Op::Discard
    } else if cats & category::WRITE != 0 {
        if bytes == 0 && flags.contains(BioFlags::PREFLUSH) {
            Op::Flush
        } else {
            Op::Write
        }
    } else if bytes > 0 {
        Op::Read
    } else if flags.contains(BioFlags::PREFLUSH) {
        Op::Flush
    } else {
        // Plug, unplug and other data-less events.
        Op::Write
    };
    Some((action, op, flags))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_encode_and_decode() {
        let r = RawRecord {
            magic: MAGIC | u32::from(VERSION),
            sequence: 7,
            time: 123_456_789,
            sector: 4_509_728,
            bytes: 28_672,
            action: action_word(TraceAction::Queue, Op::Write, BioFlags::SYNC),
            pid: 19_830,
            device: crate::record::dev_t(7, 0),
            cpu: 1,
            error: 0,
            pdu_len: 0,
        };
        let b = r.encode();
        let e = Endian::detect([b[0], b[1], b[2], b[3]]);
        assert_eq!(e, Some(Endian::NATIVE));
        assert_eq!(RawRecord::decode(&b, Endian::NATIVE), r);
    }

    #[test]
    fn actions_round_trip() {
        for action in TraceAction::ALL {
            for (op, flags, bytes) in [
                (Op::Write, BioFlags::SYNC | BioFlags::META, 4096),
                (Op::Read, BioFlags::NONE, 4096),
                (Op::Discard, BioFlags::NONE, 4096),
                (Op::Flush, BioFlags::PREFLUSH, 0),
                (
                    Op::Write,
                    BioFlags::PREFLUSH | BioFlags::FUA | BioFlags::SYNC,
                    4096,
                ),
            ] {
                if matches!(action, TraceAction::Plug | TraceAction::Unplug) {
                    continue;
                }
                let w = action_word(action, op, flags);
                let back = if action == TraceAction::RqMerge {
                    TraceAction::BackMerge
                } else {
                    action
                };
                assert_eq!(decode_action(w, bytes), Some((back, op, flags)));
            }
        }
    }
}
