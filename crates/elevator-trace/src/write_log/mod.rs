//! The write log: every write, discard, write-zeroes, flush and FUA a device
//! received, in the order it received them, with the data, plus the user's
//! marks. It is what elevator's `--write-log FILE` records and what
//! `elevator write-log` and `elevator crash-states` read: the idea of Linux's
//! dm-log-writes, in a format of our own with a checksum on every record.
//!
//! # Format (version 1, all integers little-endian)
//!
//! A file is a 64-byte header and then records, back to back.
//!
//! Header:
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `ELVWLOG\0` |
//! | 8..12 | version, 1 |
//! | 12..16 | flags: bit 0 set when write records carry their data |
//! | 16..24 | device capacity in 512-byte sectors (under 2^55) |
//! | 24..28 | logical block size in bytes (a power of two, 512 to 65536) |
//! | 28..60 | reserved, zero |
//! | 60..64 | CRC-32 (IEEE) of bytes 0..60 |
//!
//! Record (a 48-byte head, then `payload` bytes):
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | magic `WLR1` |
//! | 4 | kind: 1 write, 2 discard, 3 write-zeroes, 4 flush, 5 mark |
//! | 5 | flags: bit 0 FUA, bit 1 PREFLUSH, bit 2 the payload is the data |
//! | 6..8 | reserved, zero |
//! | 8..16 | sequence number: 0 for the first record, then +1 |
//! | 16..24 | first sector (512 bytes) |
//! | 24..28 | length in sectors (0 for a flush or mark, whose sector is 0 too) |
//! | 28..32 | payload length in bytes |
//! | 32..40 | time in nanoseconds since the log began (the device's clock: virtual in a simulation) |
//! | 40..44 | reserved, zero |
//! | 44..48 | CRC-32 (IEEE) of bytes 0..44 and then the payload |
//!
//! A write's payload is its data (`sectors * 512` bytes) when the log
//! carries data (a real device), and empty otherwise (a simulated device,
//! which moves no data: the write's sequence number stands for its content).
//! A mark's payload is its text, UTF-8. Discard, write-zeroes and flush have
//! none.
//!
//! # Order, and what a flush covers
//!
//! A write is recorded when the device completes it, so the log's order is
//! the order in which writes became visible. A flush is recorded when the
//! device receives it: it covers every write recorded before it (the writes
//! completed before it was issued, which is what a flush promises, as in
//! dm-log-writes). A write with PREFLUSH is recorded as a flush and then the
//! write. A FUA write is durable once recorded.
//!
//! [`Reader`] reads and checks a log, [`Writer`] writes one,
//! [`LoadedLog`] holds a log's record heads for planning, [`LogSummary`]
//! counts its records; [`record_of`] and [`flush_on_submit`] say what a
//! device's I/O becomes in one.

pub mod crash;
mod device_io;
mod loaded;
mod read;
mod summary;
mod write;

pub use device_io::{flush_on_submit, record_of};
pub use loaded::{LoadedLog, LoadedLogError};
pub use read::{Reader, RecordRef, WriteLogError};
pub use summary::{LISTED_MARKS, LogSummary, MARK_SHOWN_BYTES};
pub use write::Writer;

/// The file's magic.
pub const MAGIC: [u8; 8] = *b"ELVWLOG\0";
/// The format version this module reads and writes.
pub const VERSION: u32 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 64;
/// A record's magic.
pub const RECORD_MAGIC: [u8; 4] = *b"WLR1";
/// A record head's length in bytes.
pub const RECORD_HEAD_LEN: usize = 48;
/// Header flag: write records carry their data.
pub const HEADER_HAS_DATA: u32 = 1;
/// The longest payload a reader accepts (a write of 64 MiB, or a mark):
/// a longer length is corruption, not a record.
pub const MAX_PAYLOAD: u32 = 64 << 20;

/// The smallest logical block size a header may state (a sector).
pub const MIN_BLOCK_SIZE: u32 = 512;
/// The largest logical block size a header may state (NBD's largest
/// preferred block size; Linux's logical blocks are at most a page).
pub const MAX_BLOCK_SIZE: u32 = 64 << 10;

/// What a log is of: its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogHeader {
    /// Whether write records carry their data.
    pub has_data: bool,
    /// The device's capacity in 512-byte sectors.
    pub capacity: u64,
    /// The device's logical block size in bytes.
    pub block_size: u32,
}

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A write (with its data when the log carries data).
    Write,
    /// A discard: the range's content is undefined after it.
    Discard,
    /// Write-zeroes: the range reads as zeroes after it.
    WriteZeroes,
    /// A cache flush: every record before it is durable.
    Flush,
    /// A user's mark, with its text.
    Mark,
}

impl Kind {
    /// The byte that stands for it.
    pub fn code(self) -> u8 {
        match self {
            Kind::Write => 1,
            Kind::Discard => 2,
            Kind::WriteZeroes => 3,
            Kind::Flush => 4,
            Kind::Mark => 5,
        }
    }

    /// The kind a byte stands for.
    pub fn from_code(code: u8) -> Option<Kind> {
        Some(match code {
            1 => Kind::Write,
            2 => Kind::Discard,
            3 => Kind::WriteZeroes,
            4 => Kind::Flush,
            5 => Kind::Mark,
            _ => return None,
        })
    }

    /// Its name, as `elevator write-log show` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Write => "write",
            Kind::Discard => "discard",
            Kind::WriteZeroes => "write-zeroes",
            Kind::Flush => "flush",
            Kind::Mark => "mark",
        }
    }

    /// Whether it changes the device's content.
    pub fn changes_content(self) -> bool {
        matches!(self, Kind::Write | Kind::Discard | Kind::WriteZeroes)
    }
}

/// Record flag: force unit access (durable when completed).
pub const FLAG_FUA: u8 = 1;
/// Record flag: the write was preceded by a flush (recorded before it).
pub const FLAG_PREFLUSH: u8 = 2;
/// Record flag: the payload is the write's data.
pub const FLAG_DATA: u8 = 4;

/// A record's head: everything but the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHead {
    /// What it is.
    pub kind: Kind,
    /// `FLAG_*` bits.
    pub flags: u8,
    /// Its place in the log, from 0.
    pub seq: u64,
    /// First 512-byte sector.
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// Payload length in bytes.
    pub payload_len: u32,
    /// Nanoseconds since the log began.
    pub time_ns: u64,
}

impl RecordHead {
    /// Whether it was a FUA write.
    pub fn fua(&self) -> bool {
        self.flags & FLAG_FUA != 0
    }

    /// Whether the payload is the write's data.
    pub fn has_data(&self) -> bool {
        self.flags & FLAG_DATA != 0
    }
}

#[cfg(test)]
mod tests;
