//! One item of a trace, whatever format it came from; the one checked
//! boundary where a record's stated sector and length become an event's
//! ([`Extent`], [`traced_event`]); and the rwbs text that blkparse and
//! tracefs use for an operation and its flags. Also the readers' common
//! `ItemSource` and `Iterator` impls, written once by `item_reader!`.

use elevator_core::range::{ByteRange, RangeError};
use elevator_core::{BioFlags, IoContext, Op, Sector, TraceAction, TraceEvent};
use thiserror::Error;

/// A device number as blktrace stores it: `major << 20 | minor`.
pub type DevT = u32;

/// Make a blktrace device number.
pub fn dev_t(major: u32, minor: u32) -> DevT {
    (major << 20) | (minor & 0xfffff)
}

/// One event of a trace: the queue's event (its `ctx` is the process id)
/// and where it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// The event. `time` is the trace's own nanoseconds.
    pub event: TraceEvent,
    /// The CPU (or submitting thread) that recorded it.
    pub cpu: u32,
    /// The device, `major << 20 | minor`.
    pub dev: DevT,
}

impl Record {
    /// The process id (the event's I/O context).
    pub fn pid(&self) -> u32 {
        self.event.ctx.0
    }

    /// A record of `event` on `cpu` and `dev`.
    pub fn new(event: TraceEvent, cpu: u32, dev: DevT) -> Record {
        Record { event, cpu, dev }
    }
}

/// One item read from a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// An event.
    Record(Record),
    /// A process's name (blktrace's notify record; tracefs' comm field).
    Process {
        /// Process id.
        pid: u32,
        /// Its name (up to 16 bytes, as the kernel's `comm`).
        name: String,
        /// When it was first seen.
        time: u64,
    },
}

/// The longest process name kept: the kernel's `comm` is 16 bytes; a
/// trace's longer name is cut here, so that names cost little however long
/// a line is.
pub const MAX_NAME_BYTES: usize = 64;

/// Processes whose names a reader remembers (to name each once): past
/// this many, it forgets them all and names each again when next seen.
pub const MAX_NAMED_PROCESSES: usize = 1 << 16;

/// The first [`MAX_NAME_BYTES`] of a name as a trace gives it.
pub fn name_prefix(name: &[u8]) -> &[u8] {
    &name[..name.len().min(MAX_NAME_BYTES)]
}

/// A process's name from a trace's bytes, cut at [`MAX_NAME_BYTES`].
pub fn process_name(name: &[u8]) -> String {
    String::from_utf8_lossy(name_prefix(name)).into_owned()
}

/// Text of at most 8 bytes, kept on the stack.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Rwbs {
    buf: [u8; 8],
    len: u8,
}

impl Rwbs {
    fn push(&mut self, c: u8) {
        if (self.len as usize) < self.buf.len() {
            self.buf[self.len as usize] = c;
            self.len += 1;
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // Only ASCII letters are pushed.
        std::str::from_utf8(&self.buf[..self.len as usize]).unwrap_or("")
    }
}

impl std::fmt::Display for Rwbs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl std::fmt::Debug for Rwbs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kernel's rwbs text for an operation and flags (`blk_fill_rwbs`):
/// `F` for a preflush, then the operation (`W`, `R`, `D`, `F` for a flush,
/// `N` otherwise: write-zeroes), then `F` for FUA, `S` for sync, `M` for
/// metadata. A flush request is `FF`.
pub fn rwbs(op: Op, flags: BioFlags) -> Rwbs {
    let mut r = Rwbs {
        buf: [0; 8],
        len: 0,
    };
    if flags.contains(BioFlags::PREFLUSH) || op == Op::Flush {
        r.push(b'F');
    }
    r.push(match op {
        Op::Write => b'W',
        Op::Read => b'R',
        Op::Discard => b'D',
        Op::Flush => b'F',
        Op::WriteZeroes => b'N',
    });
    if flags.contains(BioFlags::FUA) {
        r.push(b'F');
    }
    if flags.contains(BioFlags::SYNC) {
        r.push(b'S');
    }
    if flags.contains(BioFlags::META) {
        r.push(b'M');
    }
    r
}

/// Read rwbs text (tracefs' or blkparse's) into an operation and flags.
///
/// `bytes` is the I/O's size: a write or `N` of no bytes with a preflush is a
/// flush (the kernel's empty `FWS 0 + 0` bio), `N` with bytes is
/// write-zeroes, and blkparse's `FN` is a flush. Readahead (`A`) and secure
/// erase (`E`) are accepted and dropped. `None` when the text is not rwbs.
pub fn parse_rwbs(text: &str, bytes: u64) -> Option<(Op, BioFlags)> {
    parse_rwbs_bytes(text.as_bytes(), bytes)
}

/// [`parse_rwbs`] of the text's bytes (rwbs is ASCII: other bytes are not
/// rwbs), for readers that have not checked their line is UTF-8.
pub fn parse_rwbs_bytes(b: &[u8], bytes: u64) -> Option<(Op, BioFlags)> {
    let mut i = 0;
    let mut flags = BioFlags::NONE;
    // A leading F is a preflush when an operation letter follows it.
    if b.len() >= 2 && b[0] == b'F' && matches!(b[1], b'W' | b'R' | b'D' | b'F' | b'N') {
        flags |= BioFlags::PREFLUSH;
        i = 1;
    }
    let mut op = match b.get(i)? {
        b'W' => Op::Write,
        b'R' => Op::Read,
        b'D' => Op::Discard,
        b'F' => Op::Flush,
        b'N' if bytes > 0 => Op::WriteZeroes,
        b'N' => Op::Flush,
        _ => return None,
    };
    i += 1;
    if op == Op::Discard && b.get(i) == Some(&b'E') {
        i += 1;
    }
    for &c in &b[i..] {
        match c {
            b'F' => flags |= BioFlags::FUA,
            b'S' => flags |= BioFlags::SYNC,
            b'M' => flags |= BioFlags::META,
            b'A' => {}
            _ => return None,
        }
    }
    if bytes == 0 && op != Op::Flush && flags.contains(BioFlags::PREFLUSH) {
        op = Op::Flush;
    }
    if op == Op::Flush {
        flags |= BioFlags::PREFLUSH;
    }
    Some((op, flags))
}

/// The kernel's "no sector" (`(sector_t)-1`): where a flush request is
/// queued and completes, in tracefs' text and older blktraces.
pub const NO_SECTOR: Sector = u64::MAX;

/// Where an I/O lies, as a trace record states it: numbers from outside,
/// not yet checked. [`Extent::place`] is the only way from one to an
/// event's sector and byte count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// A first sector and a length in sectors (blkparse, tracefs).
    Sectors {
        /// First sector.
        sector: u64,
        /// Length in 512-byte sectors.
        sectors: u64,
    },
    /// A first sector and a length in bytes (blktrace's binary records).
    SectorBytes {
        /// First sector.
        sector: u64,
        /// Length in bytes.
        bytes: u64,
    },
    /// A split, `SECTOR / NEW_SECTOR` (blkparse, tracefs): the piece before
    /// the cut, as the kernel's `block_split` records it.
    Split {
        /// First sector of the bio split.
        sector: u64,
        /// Where the second piece starts.
        new_sector: u64,
    },
    /// A byte offset and a length in bytes (fio's iologs); the offset is
    /// rounded down to its sector.
    Bytes {
        /// First byte.
        offset: u64,
        /// Length in bytes.
        len: u64,
    },
}

/// Why a record's stated extent is refused.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum RangeRefusal {
    /// It ends past 2^64 bytes, or one bio cannot carry it.
    #[error(transparent)]
    Range(#[from] RangeError),
    /// A split whose cut is before the bio's start.
    #[error("a split at sector {new_sector} cuts before its bio's start (sector {sector})")]
    SplitBefore {
        /// First sector of the bio.
        sector: u64,
        /// Where the record says the second piece starts.
        new_sector: u64,
    },
}

impl Extent {
    /// The stated length, in the record's own unit (0: no data).
    fn is_empty(self) -> bool {
        match self {
            Extent::Sectors { sectors: n, .. }
            | Extent::SectorBytes { bytes: n, .. }
            | Extent::Bytes { len: n, .. } => n == 0,
            Extent::Split { .. } => false,
        }
    }

    /// The event's first sector and byte count for an I/O of `op`, checked
    /// through [`ByteRange`]: the end must fit in 2^64 bytes and the length
    /// in one bio (`u32` bytes). An empty flush at [`NO_SECTOR`] (the
    /// kernel's flush request) is at sector 0; anything else at 2^64-1 is
    /// refused, as blkparse refuses it.
    pub fn place(self, op: Op) -> Result<(Sector, u32), RangeRefusal> {
        let range = match self {
            Extent::Sectors { sector, .. } | Extent::SectorBytes { sector, .. }
                if op == Op::Flush && sector == NO_SECTOR && self.is_empty() =>
            {
                return Ok((0, 0));
            }
            Extent::Sectors { sector, sectors } => ByteRange::from_sectors(sector, sectors)?,
            Extent::SectorBytes { sector, bytes } => ByteRange::at_sector(sector, bytes)?,
            Extent::Split { sector, new_sector } => {
                let sectors = new_sector
                    .checked_sub(sector)
                    .ok_or(RangeRefusal::SplitBefore { sector, new_sector })?;
                ByteRange::from_sectors(sector, sectors)?
            }
            Extent::Bytes { offset, len } => {
                let range = ByteRange::new(offset, len)?;
                // Rounded down to its sector: an end no later than stated.
                ByteRange::at_sector(range.sector(), len)?
            }
        };
        Ok((range.sector(), range.bio_bytes()?))
    }
}

/// A trace event of an I/O, from a record's fields: the one constructor
/// every reader calls for an event that has a place on the device (see
/// [`Extent::place`]). A split's `extra` is where its second piece starts.
pub fn traced_event(
    time: u64,
    action: TraceAction,
    op: Op,
    flags: BioFlags,
    extent: Extent,
    pid: u32,
) -> Result<TraceEvent, RangeRefusal> {
    let (sector, bytes) = extent.place(op)?;
    let mut e = event(time, action, op, flags, sector, bytes, pid);
    if let Extent::Split { new_sector, .. } = extent {
        e.extra = new_sector;
    }
    Ok(e)
}

/// A trace event with the given fields and no error or extra, as code
/// makes it (not a reader: see [`traced_event`]).
pub fn event(
    time: u64,
    action: TraceAction,
    op: Op,
    flags: BioFlags,
    sector: u64,
    bytes: u32,
    pid: u32,
) -> TraceEvent {
    TraceEvent {
        time,
        action,
        op,
        flags,
        sector,
        bytes,
        ctx: IoContext(pid),
        error: 0,
        extra: 0,
    }
}

/// A trace reader's `ItemSource` and `Iterator` impls, the same for every
/// reader: `item_reader!(Reader<R: Bound>)` for a reader with an inherent
/// `read_item`, and `done`, `skip_bad` and `skipped` fields.
macro_rules! item_reader {
    ($reader:ident<R: $bound:path>) => {
        impl<R: $bound> $crate::error::ItemSource for $reader<R> {
            fn read_next(
                &mut self,
            ) -> Result<Option<$crate::record::Item>, $crate::error::TraceError> {
                self.read_item()
            }

            fn read_state(&mut self) -> (&mut bool, bool, &mut u64) {
                (&mut self.done, self.skip_bad, &mut self.skipped)
            }
        }

        impl<R: $bound> Iterator for $reader<R> {
            type Item = Result<$crate::record::Item, $crate::error::TraceError>;

            fn next(&mut self) -> Option<Self::Item> {
                $crate::error::next_item(self)
            }
        }
    };
}
pub(crate) use item_reader;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwbs_round_trips() {
        for (text, bytes, op, flags) in [
            ("W", 4096, Op::Write, BioFlags::NONE),
            ("WS", 4096, Op::Write, BioFlags::SYNC),
            ("WSM", 4096, Op::Write, BioFlags::SYNC | BioFlags::META),
            (
                "FWFSM",
                4096,
                Op::Write,
                BioFlags::PREFLUSH | BioFlags::FUA | BioFlags::SYNC | BioFlags::META,
            ),
            ("FF", 0, Op::Flush, BioFlags::PREFLUSH),
            ("R", 4096, Op::Read, BioFlags::NONE),
            ("D", 4096, Op::Discard, BioFlags::NONE),
            ("N", 4096, Op::WriteZeroes, BioFlags::NONE),
        ] {
            assert_eq!(parse_rwbs(text, bytes), Some((op, flags)), "{text}");
            assert_eq!(rwbs(op, flags).as_str(), text);
        }
        assert_eq!(
            parse_rwbs("FWS", 0),
            Some((Op::Flush, BioFlags::PREFLUSH | BioFlags::SYNC))
        );
        assert_eq!(parse_rwbs("FN", 0), Some((Op::Flush, BioFlags::PREFLUSH)));
        assert_eq!(parse_rwbs("X", 0), None);
        assert_eq!(parse_rwbs("", 0), None);
        assert_eq!(parse_rwbs("WQ", 0), None);
    }
}
