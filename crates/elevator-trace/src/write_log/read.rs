//! Reading and checking a write log: every header field and every record
//! head is checked before it is believed (reserved bytes zero, a block size
//! a power of two from [`MIN_BLOCK_SIZE`] to [`MAX_BLOCK_SIZE`], a capacity
//! and each record's sectors within 2^64 bytes through
//! [`elevator_core::ByteRange`], then within the device), and refused with
//! the field named.

use std::io::{self, Read};

use elevator_core::range::ByteRange;
use thiserror::Error;

use super::{
    FLAG_DATA, HEADER_HAS_DATA, HEADER_LEN, Kind, LogHeader, MAGIC, MAX_BLOCK_SIZE, MAX_PAYLOAD,
    MIN_BLOCK_SIZE, RECORD_HEAD_LEN, RECORD_MAGIC, RecordHead, VERSION,
};

/// A log that cannot be read past some point. Every variant past the
/// header names the record and its byte offset; the records before it
/// were whole and their checksums right, so that prefix is usable.
#[derive(Debug, Error)]
pub enum WriteLogError {
    /// The file does not start with a write log's header.
    #[error("not an elevator write log: {why}")]
    Header {
        /// What was wrong.
        why: String,
    },
    /// The file ends inside a record.
    #[error(
        "record {record} at byte {offset} is cut short ({have} of {need} bytes): the log is truncated; the {record} records before it are whole"
    )]
    Truncated {
        /// The record's sequence number.
        record: u64,
        /// Its first byte.
        offset: u64,
        /// Bytes of it the file has.
        have: u64,
        /// Bytes it needs.
        need: u64,
    },
    /// A record's checksum does not match its bytes.
    #[error(
        "record {record} at byte {offset}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x}): the log is corrupt there; the {record} records before it are whole"
    )]
    Checksum {
        /// The record's sequence number.
        record: u64,
        /// Its first byte.
        offset: u64,
        /// The checksum the record holds.
        stored: u32,
        /// The checksum of its bytes.
        computed: u32,
    },
    /// A record's fields make no sense.
    #[error("record {record} at byte {offset}: {why}; the {record} records before it are whole")]
    Malformed {
        /// The record's sequence number.
        record: u64,
        /// Its first byte.
        offset: u64,
        /// What was wrong.
        why: String,
    },
    /// Reading failed.
    #[error("reading the write log: {0}")]
    Io(#[from] io::Error),
}

impl WriteLogError {
    /// The byte where the valid prefix ends, for errors past the header.
    pub fn valid_bytes(&self) -> Option<u64> {
        match self {
            WriteLogError::Truncated { offset, .. }
            | WriteLogError::Checksum { offset, .. }
            | WriteLogError::Malformed { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}

/// One record, borrowed from the reader until the next is read.
#[derive(Clone, Copy, Debug)]
pub struct RecordRef<'a> {
    /// Everything but the payload.
    pub head: RecordHead,
    /// The payload: a write's data, a mark's text, or nothing.
    pub payload: &'a [u8],
    /// The record's first byte in the file.
    pub offset: u64,
}

impl RecordRef<'_> {
    /// The byte in the file where the payload starts.
    pub fn payload_offset(&self) -> u64 {
        self.offset + RECORD_HEAD_LEN as u64
    }

    /// A mark's text (lossy if it is not UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(self.payload).into_owned()
    }
}

/// Reads a log record by record, checking each.
pub struct Reader<R: Read> {
    input: R,
    header: LogHeader,
    seq: u64,
    offset: u64,
    payload: Vec<u8>,
    failed: bool,
}

/// Read as many bytes as there are up to `buf.len()`; returns how many.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(v)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

impl<R: Read> Reader<R> {
    /// Read and check the header.
    pub fn new(mut input: R) -> Result<Reader<R>, WriteLogError> {
        let mut h = [0u8; HEADER_LEN];
        let got = read_full(&mut input, &mut h)?;
        let bad = |why: String| WriteLogError::Header { why };
        if got < MAGIC.len() || h[0..8] != MAGIC {
            return Err(bad("the file does not start with ELVWLOG".into()));
        }
        if got < HEADER_LEN {
            return Err(bad(format!(
                "the header is cut short ({got} of {HEADER_LEN} bytes)"
            )));
        }
        let stored = u32_at(&h, 60);
        let computed = crc32fast::hash(&h[0..60]);
        if stored != computed {
            return Err(bad(format!(
                "header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            )));
        }
        let version = u32_at(&h, 8);
        if version != VERSION {
            return Err(bad(format!(
                "version {version}; this elevator reads version {VERSION}"
            )));
        }
        let flags = u32_at(&h, 12);
        if flags & !HEADER_HAS_DATA != 0 {
            return Err(bad(format!(
                "header flags {flags:#x}: only bit 0 (the log carries data) is defined"
            )));
        }
        let capacity = u64_at(&h, 16);
        if let Err(e) = ByteRange::from_sectors(0, capacity) {
            return Err(bad(format!(
                "header field device capacity {capacity} sectors: {e}"
            )));
        }
        let block_size = u32_at(&h, 24);
        if !block_size.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&block_size)
        {
            return Err(bad(format!(
                "header field logical block size {block_size}: not a power of two from \
                 {MIN_BLOCK_SIZE} to {MAX_BLOCK_SIZE} bytes"
            )));
        }
        if let Some(at) = (28..60).find(|&i| h[i] != 0) {
            return Err(bad(format!(
                "header reserved bytes 28..60 (byte {at} is {}) are not zero",
                h[at]
            )));
        }
        let header = LogHeader {
            has_data: flags & HEADER_HAS_DATA != 0,
            capacity,
            block_size,
        };
        Ok(Reader {
            input,
            header,
            seq: 0,
            offset: HEADER_LEN as u64,
            payload: Vec::new(),
            failed: false,
        })
    }

    /// What the log is of.
    pub fn header(&self) -> LogHeader {
        self.header
    }

    /// Records read and found whole so far.
    pub fn records(&self) -> u64 {
        self.seq
    }

    /// Bytes of whole records (and the header) read so far: the valid
    /// prefix.
    pub fn valid_bytes(&self) -> u64 {
        self.offset
    }

    /// The next record, `None` at a clean end of the log, or why the log
    /// cannot be read further (then `None` on every later call).
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, WriteLogError> {
        if self.failed {
            return Ok(None);
        }
        match self.read_one() {
            Ok(Some(head)) => {
                let offset = self.offset;
                self.offset += (RECORD_HEAD_LEN + self.payload.len()) as u64;
                self.seq += 1;
                Ok(Some(RecordRef {
                    head,
                    payload: &self.payload,
                    offset,
                }))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    fn read_one(&mut self) -> Result<Option<RecordHead>, WriteLogError> {
        let (record, offset) = (self.seq, self.offset);
        let mut h = [0u8; RECORD_HEAD_LEN];
        let got = read_full(&mut self.input, &mut h)?;
        if got == 0 {
            return Ok(None);
        }
        let truncated = |have: usize, need: usize| WriteLogError::Truncated {
            record,
            offset,
            have: have as u64,
            need: need as u64,
        };
        let malformed = |why: String| WriteLogError::Malformed {
            record,
            offset,
            why,
        };
        if got < RECORD_HEAD_LEN {
            return Err(truncated(got, RECORD_HEAD_LEN));
        }
        if h[0..4] != RECORD_MAGIC {
            return Err(malformed(format!(
                "no record starts here (found {:02x?}, expected \"WLR1\")",
                &h[0..4]
            )));
        }
        let payload_len = u32_at(&h, 28);
        if payload_len > MAX_PAYLOAD {
            return Err(malformed(format!(
                "a payload of {payload_len} bytes is over the {MAX_PAYLOAD}-byte limit"
            )));
        }
        // Grown as bytes arrive, not to the length the head claims: a
        // corrupt length in a short file costs nothing.
        self.payload.clear();
        // (`read_to_end` retries interrupted reads itself.)
        let got_payload = (&mut self.input)
            .take(u64::from(payload_len))
            .read_to_end(&mut self.payload)?;
        if got_payload < payload_len as usize {
            return Err(truncated(
                RECORD_HEAD_LEN + got_payload,
                RECORD_HEAD_LEN + payload_len as usize,
            ));
        }
        let stored = u32_at(&h, 44);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&h[0..44]);
        crc.update(&self.payload);
        let computed = crc.finalize();
        if stored != computed {
            return Err(WriteLogError::Checksum {
                record,
                offset,
                stored,
                computed,
            });
        }
        let kind = Kind::from_code(h[4])
            .ok_or_else(|| malformed(format!("unknown record kind {}", h[4])))?;
        let head = RecordHead {
            kind,
            flags: h[5],
            seq: u64_at(&h, 8),
            sector: u64_at(&h, 16),
            sectors: u32_at(&h, 24),
            payload_len,
            time_ns: u64_at(&h, 32),
        };
        if head.seq != record {
            return Err(malformed(format!(
                "sequence number {} where {record} was due: a record is missing or repeated",
                head.seq
            )));
        }
        let data = head.flags & FLAG_DATA != 0;
        if data && u64::from(payload_len) != u64::from(head.sectors) << 9 {
            return Err(malformed(format!(
                "a write of {} sectors carries {payload_len} bytes of data",
                head.sectors
            )));
        }
        if data && kind != Kind::Write {
            return Err(malformed(format!("a {} carries data", kind.name())));
        }
        if kind != Kind::Mark && !data && payload_len != 0 {
            return Err(malformed(format!(
                "a {} carries a {payload_len}-byte payload",
                kind.name()
            )));
        }
        for (from, to) in [(6, 8), (40, 44)] {
            if let Some(at) = (from..to).find(|&i| h[i] != 0) {
                return Err(malformed(format!(
                    "reserved bytes {from}..{to} (byte {at} is {}) are not zero",
                    h[at]
                )));
            }
        }
        if kind.changes_content() {
            // The one boundary: the range's end in bytes, then the device's.
            let capacity = self.header.capacity << 9;
            if let Err(e) = ByteRange::from_sectors(head.sector, u64::from(head.sectors))
                .and_then(|r| r.within(capacity))
            {
                return Err(malformed(format!(
                    "sectors {}+{} are past the device's end ({} sectors): {e}",
                    head.sector, head.sectors, self.header.capacity
                )));
            }
        } else if head.sector != 0 || head.sectors != 0 {
            return Err(malformed(format!(
                "a {} names no sectors, but this one names {}+{}",
                kind.name(),
                head.sector,
                head.sectors
            )));
        }
        Ok(Some(head))
    }
}
