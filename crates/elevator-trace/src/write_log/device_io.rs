//! What a device's I/O becomes in a write log: the one rule both write-log
//! devices (the simulated and the real) record by. A flush, or a write
//! with PREFLUSH, is recorded as a flush when the device receives it
//! ([`flush_on_submit`]); a write, discard or write-zeroes when it
//! completes, as the record [`record_of`] says.

use elevator_core::{BioFlags, DeviceIo, Op};

use super::{FLAG_FUA, FLAG_PREFLUSH, Kind};

/// Whether the device receiving `io` records a flush first (a flush, or a
/// write with PREFLUSH).
#[inline]
pub fn flush_on_submit(io: &DeviceIo) -> bool {
    io.op == Op::Flush || io.flags.contains(BioFlags::PREFLUSH)
}

/// The record an I/O of `op` with bio `flags` makes when it completes: its
/// kind and its `FLAG_FUA` and `FLAG_PREFLUSH` bits (a log that carries
/// data adds `FLAG_DATA` to a write's); `None` for a read or a flush.
#[inline]
pub fn record_of(op: Op, flags: BioFlags) -> Option<(Kind, u8)> {
    let kind = match op {
        Op::Write => Kind::Write,
        Op::WriteZeroes => Kind::WriteZeroes,
        Op::Discard => Kind::Discard,
        Op::Read | Op::Flush => return None,
    };
    let mut bits = 0;
    if flags.contains(BioFlags::FUA) {
        bits |= FLAG_FUA;
    }
    if flags.contains(BioFlags::PREFLUSH) {
        bits |= FLAG_PREFLUSH;
    }
    Some((kind, bits))
}
