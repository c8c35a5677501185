//! What can go wrong: a spec that does not fit a buffer ([`SpecError`]) and
//! a block that fails its check ([`VerifyError`]).

use super::{MAGIC, VerifyKind};
use std::fmt;
use thiserror::Error;

/// A [`VerifySpec`](super::VerifySpec) that cannot fill or check a buffer of some length.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SpecError {
    /// The buffer is empty or not a multiple of 512 bytes.
    #[error(
        "verify: a buffer of {len} bytes cannot carry verify headers: it must be a non-zero multiple of 512 bytes"
    )]
    BadLength {
        /// The buffer's length.
        len: usize,
    },
    /// `verify_interval` is zero or not a multiple of 512.
    #[error("verify_interval={interval} must be a non-zero multiple of 512 bytes")]
    BadInterval {
        /// The interval.
        interval: usize,
    },
    /// `verify_interval` does not divide the buffer.
    #[error("verify_interval={interval} does not divide a block of {len} bytes")]
    IntervalDoesNotDivide {
        /// The interval.
        interval: usize,
        /// The buffer's length.
        len: usize,
    },
    /// An interval too long for the header's 32-bit length.
    #[error(
        "verify: an interval of {interval} bytes is longer than a header can describe (4 GiB - 1)"
    )]
    TooLong {
        /// The interval.
        interval: usize,
    },
    /// `verify=pattern` without a (non-empty) `verify_pattern`.
    #[error("verify=pattern needs a non-empty verify_pattern")]
    NoPattern,
    /// A kind fio's on-disk format cannot carry as fio does.
    #[error("verify={kind} cannot be written or checked in fio's format: {why}")]
    NotInFioFormat {
        /// The kind.
        kind: VerifyKind,
        /// Why.
        why: &'static str,
    },
}

/// A digest as stored in a header: up to 32 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    bytes: [u8; 32],
    len: u8,
}

impl Digest {
    pub(super) fn new(d: &[u8]) -> Digest {
        let mut bytes = [0u8; 32];
        let len = d.len().min(32);
        bytes[..len].copy_from_slice(&d[..len]);
        Digest {
            bytes,
            len: len as u8,
        }
    }

    /// The digest's bytes as stored in the header.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// The CRCs and xxhash (1, 2, 4 or 8 bytes) print as their integer in hex
/// (`0xe3069283`), the hashes as their bytes in hex, as `md5sum` and
/// `sha256sum` print them.
impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self.as_bytes() {
            [a] => return write!(f, "0x{a:02x}"),
            [a, b] => return write!(f, "0x{:04x}", u16::from_le_bytes([a, b])),
            [a, b, c, d] => return write!(f, "0x{:08x}", u32::from_le_bytes([a, b, c, d])),
            [a, b, c, d, e, g, h, i] => {
                return write!(f, "0x{:016x}", u64::from_le_bytes([a, b, c, d, e, g, h, i]));
            }
            _ => {}
        }
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What [`check`](super::check) found wrong with a read buffer. Every variant but
/// [`VerifyError::Spec`] names the device `offset` and `length` of the
/// failing interval.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum VerifyError {
    /// The spec does not fit the buffer.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The interval does not start with [`MAGIC`].
    #[error(
        "verify: bad magic header at offset {offset}, length {length}: found {}, wanted {} (\"ELVVRFY1\"): \
         never written, or written by something other than elevator's verify",
        magic_hex(.found),
        magic_hex(&MAGIC)
    )]
    BadMagic {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval.
        length: usize,
        /// The first eight bytes found.
        found: [u8; 8],
    },
    /// The header's own CRC-32C does not match its bytes.
    #[error(
        "verify: corrupt header at offset {offset}, length {length}: header checksum holds \
         0x{stored:08x}, its bytes give 0x{computed:08x}"
    )]
    HeaderCorrupt {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval.
        length: usize,
        /// The checksum stored in the header.
        stored: u32,
        /// The checksum of the header's bytes.
        computed: u32,
    },
    /// Written with another `verify=` method.
    #[error(
        "verify: block at offset {offset}, length {length} was written with verify={}, \
         checked with verify={expected}",
        kind_name(*.found)
    )]
    WrongKind {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval.
        length: usize,
        /// The kind checked for.
        expected: VerifyKind,
        /// The kind code in the header.
        found: u8,
    },
    /// Written with another interval or block size.
    #[error(
        "verify: block at offset {offset} was written as {found} bytes, checked as {length}: \
         the block size or verify_interval differs from the write's"
    )]
    WrongLength {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval checked.
        length: usize,
        /// The length in the header.
        found: u32,
    },
    /// Written under another seed: by another job or run.
    #[error(
        "verify: block at offset {offset}, length {length} was written with seed {found}, \
         expected {expected}: written by another job or run"
    )]
    WrongSeed {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval.
        length: usize,
        /// The seed checked for.
        expected: u64,
        /// The seed in the header.
        found: u64,
    },
    /// The header is that of another offset: a misdirected write (or read).
    #[error(
        "verify: misdirected write at offset {offset}, length {length}: it holds the block \
         written for offset {found}"
    )]
    WrongOffset {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval.
        length: usize,
        /// The offset in the header.
        found: u64,
    },
    /// Another write of this offset: stale data if older.
    #[error(
        "verify: {} at offset {offset}, length {length}: generation {found}, expected {expected}",
        generation_words(*.found, *.expected)
    )]
    WrongGeneration {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval.
        length: usize,
        /// The generation checked for.
        expected: u64,
        /// The generation in the header.
        found: u64,
    },
    /// The payload (or the hashed header fields) changed since the write.
    #[error(
        "verify: {kind} mismatch at offset {offset}, length {length}: header holds {stored}, \
         data gives {computed}"
    )]
    DigestMismatch {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval.
        length: usize,
        /// The digest kind.
        kind: VerifyKind,
        /// The digest stored in the header.
        stored: Digest,
        /// The digest of what was read.
        computed: Digest,
    },
    /// fio's format: the interval does not start with fio's magic.
    #[error(
        "verify: bad magic header {found:x}, wanted acca at offset {offset}, length {length}: \
         never written, or not written by fio's verify"
    )]
    FioBadMagic {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval.
        length: usize,
        /// The two bytes found, little-endian.
        found: u16,
    },
    /// fio's format: the header names another verify type than the job's.
    #[error(
        "verify: type mismatch at offset {offset}, length {length}: the header holds fio's \
         verify type {found}, the job verifies with type {expected}"
    )]
    FioWrongType {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval.
        length: usize,
        /// fio's type code of the job's kind.
        expected: u16,
        /// The type code in the header.
        found: u16,
    },
    /// A payload byte differs from `verify_pattern`.
    #[error(
        "verify: pattern mismatch at offset {offset}, length {length}: byte {at} of the block \
         (device byte {}) is 0x{found:02x}, expected 0x{expected:02x}",
        device_byte(*.offset, *.at)
    )]
    PatternMismatch {
        /// Device offset of the interval.
        offset: u64,
        /// Length of the interval.
        length: usize,
        /// The first differing byte, counted from the start of the interval.
        at: usize,
        /// The pattern's byte.
        expected: u8,
        /// The byte read.
        found: u8,
    },
}

impl VerifyError {
    /// Device offset of the failing interval (`None` for
    /// [`VerifyError::Spec`]).
    pub fn offset(&self) -> Option<u64> {
        match self {
            VerifyError::Spec(_) => None,
            VerifyError::BadMagic { offset, .. }
            | VerifyError::HeaderCorrupt { offset, .. }
            | VerifyError::WrongKind { offset, .. }
            | VerifyError::WrongLength { offset, .. }
            | VerifyError::WrongSeed { offset, .. }
            | VerifyError::WrongOffset { offset, .. }
            | VerifyError::WrongGeneration { offset, .. }
            | VerifyError::DigestMismatch { offset, .. }
            | VerifyError::PatternMismatch { offset, .. }
            | VerifyError::FioBadMagic { offset, .. }
            | VerifyError::FioWrongType { offset, .. } => Some(*offset),
        }
    }
}

fn magic_hex(m: &[u8; 8]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect()
}

fn kind_name(code: u8) -> String {
    match VerifyKind::from_code(code) {
        Some(k) => k.name().to_string(),
        None => format!("<unknown kind {code}>"),
    }
}

fn generation_words(found: u64, expected: u64) -> &'static str {
    if found < expected {
        "stale data (an older write)"
    } else {
        "unexpected data (a newer write than expected)"
    }
}

fn device_byte(offset: u64, at: usize) -> u64 {
    offset.wrapping_add(at as u64)
}
