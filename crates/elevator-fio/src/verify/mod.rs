//! fio's `verify`: blocks that describe themselves, so that a later read can
//! tell whether it got what was written there.
//!
//! [`fill`] prepares a write buffer for a device offset and a generation (a
//! counter the engine bumps each time it rewrites a region); [`check`] looks
//! at a read buffer and says precisely what is wrong with it, as a
//! [`VerifyError`]. What goes in the buffer is chosen by a [`VerifySpec`]:
//! the [`VerifyKind`] (fio's `verify=`), the `verify_pattern` bytes, a seed
//! and fio's `verify_interval`.
//!
//! # Block format
//!
//! This is elevator's own format, **not fio's on-disk format**: data written
//! by fio with `verify=` cannot be checked by elevator, nor the reverse.
//!
//! A buffer is cut into intervals (`verify_interval`, by default the whole
//! buffer); each interval is a multiple of 512 bytes and starts with an
//! 80-byte header ([`HEADER_LEN`]), all integers little-endian:
//!
//! | bytes   | field                                                      |
//! |---------|------------------------------------------------------------|
//! | 0..8    | magic, [`MAGIC`] (`"ELVVRFY1"`; the `1` is the version)    |
//! | 8       | kind: 1 crc32c, 2 md5, 3 sha256, 4 xxhash, 5 pattern, 6 meta |
//! | 9..12   | reserved, zero                                             |
//! | 12..16  | length of the interval in bytes (u32)                      |
//! | 16..24  | device byte offset of the interval (u64)                   |
//! | 24..32  | generation (u64)                                           |
//! | 32..40  | seed (u64)                                                 |
//! | 40..72  | digest, zero-padded: crc32c and xxhash 4 bytes (the u32, little-endian), md5 16, sha256 32; zero for pattern and meta |
//! | 72..76  | reserved, zero                                             |
//! | 76..80  | CRC-32C of bytes 0..76: the header's own checksum           |
//!
//! The payload (bytes 80 to the end of the interval) is, for `pattern`, the
//! `verify_pattern` repeated from the start of the interval (byte `i` of the
//! interval is `pattern[i % pattern.len()]`, the header then written over the
//! first 80 bytes); for every other kind, pseudo-random bytes drawn from
//! (seed, offset, generation), so that each write of each block differs.
//!
//! The digest of the digest kinds covers bytes 0..40 of the header (magic,
//! kind, length, offset, generation, seed) followed by the payload. XXH32
//! uses seed 0 (the job's seed is already in the hashed header).
//!
//! # Checks
//!
//! [`check`] looks at each interval in turn and reports the first fault, in
//! this order: magic ([`VerifyError::BadMagic`]: never written, or written by
//! something else), header checksum, kind, length, seed, offset
//! ([`VerifyError::WrongOffset`]: a misdirected write), generation
//! ([`VerifyError::WrongGeneration`]: stale data), then the payload: digest
//! or pattern. `meta` checks the header only: its payload is not checked.
//! Every error names the device offset and length of the failing interval.
//!
//! Neither [`fill`] nor [`check`] allocates.

mod block64;
mod crc32c;
mod md5;
mod sha256;
mod xxhash;

pub use crc32c::{Crc32c, crc32c};
pub use md5::{Md5, md5};
pub use sha256::{Sha256, sha256};
pub use xxhash::{Xxh32, xxh32};

use crate::rng::Rng;
use std::fmt;
use thiserror::Error;

/// The first eight bytes of every interval elevator's verify writes.
pub const MAGIC: [u8; 8] = *b"ELVVRFY1";
/// Length of the header at the start of every interval.
pub const HEADER_LEN: usize = 80;
/// Buffers and intervals are multiples of this many bytes (and at least it).
pub const BLOCK_ALIGN: usize = 512;

const KIND_AT: usize = 8;
const LENGTH_AT: usize = 12;
const OFFSET_AT: usize = 16;
const GENERATION_AT: usize = 24;
const SEED_AT: usize = 32;
/// The header fields the digest covers: `0..FIELDS_END`.
const FIELDS_END: usize = 40;
const DIGEST_AT: usize = 40;
const HCRC_AT: usize = 76;

/// fio's `verify=`: what makes a block self-describing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VerifyKind {
    /// `crc32c` (also fio's `crc32c-intel`): CRC-32C of header and payload.
    Crc32c,
    /// `md5`: MD5 of header and payload.
    Md5,
    /// `sha256`: SHA-256 of header and payload.
    Sha256,
    /// `xxhash`: XXH32 of header and payload.
    Xxhash,
    /// `pattern`: the payload is `verify_pattern` repeated, compared byte by
    /// byte.
    Pattern,
    /// `meta`: the header only (magic, offset, generation); the payload is
    /// not checked.
    Meta,
}

/// fio's `verify=` names elevator accepts, with what they mean (`None`: no
/// verification).
const NAMES: [(&str, Option<VerifyKind>); 9] = [
    ("crc32c", Some(VerifyKind::Crc32c)),
    ("crc32c-intel", Some(VerifyKind::Crc32c)),
    ("md5", Some(VerifyKind::Md5)),
    ("sha256", Some(VerifyKind::Sha256)),
    ("xxhash", Some(VerifyKind::Xxhash)),
    ("pattern", Some(VerifyKind::Pattern)),
    ("meta", Some(VerifyKind::Meta)),
    ("null", None),
    ("0", None),
];

/// fio's `verify=` names elevator knows but does not implement.
const NOT_IMPLEMENTED: [&str; 13] = [
    "crc64",
    "crc32",
    "crc16",
    "crc7",
    "sha1",
    "sha224",
    "sha384",
    "sha512",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "pattern_no_hdr",
];

impl VerifyKind {
    /// The kind fio's `verify=name` asks for. `null` and `0` (no
    /// verification) are refused here: use [`VerifyKind::parse_option`]
    /// where they are allowed.
    pub fn parse(name: &str) -> Result<VerifyKind, String> {
        match VerifyKind::parse_option(name)? {
            Some(kind) => Ok(kind),
            None => Err(format!(
                "verify={} turns verification off: it names no verify method",
                name.trim()
            )),
        }
    }

    /// fio's `verify=name`: `Ok(None)` for `null` or `0` (no
    /// verification). Names are matched ignoring ASCII case; fio's methods
    /// elevator does not implement are refused by name.
    pub fn parse_option(name: &str) -> Result<Option<VerifyKind>, String> {
        let name = name.trim();
        if let Some((_, kind)) = NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return Ok(*kind);
        }
        if NOT_IMPLEMENTED.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            return Err(format!(
                "verify={name} is not implemented: elevator verifies with crc32c, md5, sha256, \
                 xxhash, pattern or meta"
            ));
        }
        Err(format!(
            "verify={name}: unknown verify method; elevator accepts crc32c (or crc32c-intel), \
             md5, sha256, xxhash, pattern, meta, or null/0 for none"
        ))
    }

    /// fio's name for it.
    pub fn name(self) -> &'static str {
        match self {
            VerifyKind::Crc32c => "crc32c",
            VerifyKind::Md5 => "md5",
            VerifyKind::Sha256 => "sha256",
            VerifyKind::Xxhash => "xxhash",
            VerifyKind::Pattern => "pattern",
            VerifyKind::Meta => "meta",
        }
    }

    /// Bytes of digest stored in the header (0 for `pattern` and `meta`).
    pub fn digest_len(self) -> usize {
        match self {
            VerifyKind::Crc32c | VerifyKind::Xxhash => 4,
            VerifyKind::Md5 => 16,
            VerifyKind::Sha256 => 32,
            VerifyKind::Pattern | VerifyKind::Meta => 0,
        }
    }

    fn code(self) -> u8 {
        match self {
            VerifyKind::Crc32c => 1,
            VerifyKind::Md5 => 2,
            VerifyKind::Sha256 => 3,
            VerifyKind::Xxhash => 4,
            VerifyKind::Pattern => 5,
            VerifyKind::Meta => 6,
        }
    }

    fn from_code(code: u8) -> Option<VerifyKind> {
        [
            VerifyKind::Crc32c,
            VerifyKind::Md5,
            VerifyKind::Sha256,
            VerifyKind::Xxhash,
            VerifyKind::Pattern,
            VerifyKind::Meta,
        ]
        .into_iter()
        .find(|k| k.code() == code)
    }
}

impl fmt::Display for VerifyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a job verifies: fio's `verify`, `verify_pattern` and
/// `verify_interval`, and the seed its random payloads come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifySpec {
    /// `verify=`.
    pub kind: VerifyKind,
    /// `verify_pattern` as bytes: required (non-empty) for
    /// [`VerifyKind::Pattern`], ignored by the other kinds.
    pub pattern: Option<Vec<u8>>,
    /// Seed of the random payloads, also stored in every header: a block
    /// written under another seed fails with [`VerifyError::WrongSeed`].
    pub seed: u64,
    /// `verify_interval`: bytes per header, a multiple of 512 dividing every
    /// buffer; `None` for one header per buffer (fio's default: the block
    /// size).
    pub interval: Option<usize>,
}

impl VerifySpec {
    /// A spec of `kind` with `seed`, no pattern and one header per buffer.
    pub fn new(kind: VerifyKind, seed: u64) -> VerifySpec {
        VerifySpec {
            kind,
            pattern: None,
            seed,
            interval: None,
        }
    }

    /// The interval length used for a buffer of `len` bytes, or why this
    /// spec cannot fill or check such a buffer. An engine can call it once
    /// per block size when it sets a job up.
    pub fn interval_len(&self, len: usize) -> Result<usize, SpecError> {
        if len == 0 || !len.is_multiple_of(BLOCK_ALIGN) {
            return Err(SpecError::BadLength { len });
        }
        if self.kind == VerifyKind::Pattern && self.pattern.as_ref().is_none_or(|p| p.is_empty()) {
            return Err(SpecError::NoPattern);
        }
        let interval = match self.interval {
            None => len,
            Some(interval) => {
                if interval == 0 || !interval.is_multiple_of(BLOCK_ALIGN) {
                    return Err(SpecError::BadInterval { interval });
                }
                if !len.is_multiple_of(interval) {
                    return Err(SpecError::IntervalDoesNotDivide { interval, len });
                }
                interval
            }
        };
        if u32::try_from(interval).is_err() {
            return Err(SpecError::TooLong { interval });
        }
        Ok(interval)
    }
}

/// A [`VerifySpec`] that cannot fill or check a buffer of some length.
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
}

/// A digest as stored in a header: up to 32 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    bytes: [u8; 32],
    len: u8,
}

impl Digest {
    fn new(d: &[u8]) -> Digest {
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

/// Four-byte digests (crc32c, xxhash) print as their `u32` value in hex
/// (`0xe3069283`), longer ones as their bytes in hex, as `md5sum` and
/// `sha256sum` print them.
impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [a, b, c, d] = *self.as_bytes() {
            return write!(f, "0x{:08x}", u32::from_le_bytes([a, b, c, d]));
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

/// What [`check`] found wrong with a read buffer. Every variant but
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
            | VerifyError::PatternMismatch { offset, .. } => Some(*offset),
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

/// Fills `buf`, a write buffer for device byte `offset`, with a header and
/// payload per interval for `generation`. Fails only if `spec` does not fit
/// the buffer (see [`VerifySpec::interval_len`]); does not allocate.
pub fn fill(
    spec: &VerifySpec,
    buf: &mut [u8],
    offset: u64,
    generation: u64,
) -> Result<(), SpecError> {
    let interval = spec.interval_len(buf.len())?;
    let mut at = offset;
    for block in buf.chunks_exact_mut(interval) {
        fill_interval(spec, block, at, generation);
        at = at.wrapping_add(interval as u64);
    }
    Ok(())
}

/// Checks `buf`, read from device byte `offset`, against what [`fill`]
/// writes for `generation` under `spec`: the first fault found, interval by
/// interval. Does not allocate unless it fails.
pub fn check(
    spec: &VerifySpec,
    buf: &[u8],
    offset: u64,
    generation: u64,
) -> Result<(), VerifyError> {
    let interval = spec.interval_len(buf.len())?;
    let mut at = offset;
    for block in buf.chunks_exact(interval) {
        check_interval(spec, block, at, generation)?;
        at = at.wrapping_add(interval as u64);
    }
    Ok(())
}

fn fill_interval(spec: &VerifySpec, block: &mut [u8], offset: u64, generation: u64) {
    let length = block.len();
    match (spec.kind, spec.pattern.as_deref()) {
        (VerifyKind::Pattern, Some(pattern)) if !pattern.is_empty() => {
            // Repeat the pattern from the interval's start, doubling.
            let n = pattern.len().min(length);
            block[..n].copy_from_slice(&pattern[..n]);
            let mut filled = n;
            while filled < length {
                let k = filled.min(length - filled);
                block.copy_within(..k, filled);
                filled += k;
            }
        }
        _ => {
            let mut rng = Rng::new(payload_seed(spec.seed, offset, generation));
            let mut words = block[HEADER_LEN..].chunks_exact_mut(8);
            for w in &mut words {
                w.copy_from_slice(&rng.next_u64().to_le_bytes());
            }
            let last = rng.next_u64().to_le_bytes();
            let rest = words.into_remainder();
            let n = rest.len();
            rest.copy_from_slice(&last[..n]);
        }
    }
    let header = &mut block[..HEADER_LEN];
    header.fill(0);
    header[..8].copy_from_slice(&MAGIC);
    header[KIND_AT] = spec.kind.code();
    // `interval_len` guarantees the length fits.
    header[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&(length as u32).to_le_bytes());
    header[OFFSET_AT..OFFSET_AT + 8].copy_from_slice(&offset.to_le_bytes());
    header[GENERATION_AT..GENERATION_AT + 8].copy_from_slice(&generation.to_le_bytes());
    header[SEED_AT..SEED_AT + 8].copy_from_slice(&spec.seed.to_le_bytes());
    let d = digest(spec.kind, &block[..FIELDS_END], &block[HEADER_LEN..]);
    let d = d.as_bytes();
    block[DIGEST_AT..DIGEST_AT + d.len()].copy_from_slice(d);
    let hcrc = crc32c(&block[..HCRC_AT]);
    block[HCRC_AT..HEADER_LEN].copy_from_slice(&hcrc.to_le_bytes());
}

fn check_interval(
    spec: &VerifySpec,
    block: &[u8],
    offset: u64,
    generation: u64,
) -> Result<(), VerifyError> {
    let length = block.len();
    let mut found = [0u8; 8];
    found.copy_from_slice(&block[..8]);
    if found != MAGIC {
        return Err(VerifyError::BadMagic {
            offset,
            length,
            found,
        });
    }
    let stored = le32(block, HCRC_AT);
    let computed = crc32c(&block[..HCRC_AT]);
    if stored != computed {
        return Err(VerifyError::HeaderCorrupt {
            offset,
            length,
            stored,
            computed,
        });
    }
    if block[KIND_AT] != spec.kind.code() {
        return Err(VerifyError::WrongKind {
            offset,
            length,
            expected: spec.kind,
            found: block[KIND_AT],
        });
    }
    let found = le32(block, LENGTH_AT);
    if usize::try_from(found).ok() != Some(length) {
        return Err(VerifyError::WrongLength {
            offset,
            length,
            found,
        });
    }
    let found = le64(block, SEED_AT);
    if found != spec.seed {
        return Err(VerifyError::WrongSeed {
            offset,
            length,
            expected: spec.seed,
            found,
        });
    }
    let found = le64(block, OFFSET_AT);
    if found != offset {
        return Err(VerifyError::WrongOffset {
            offset,
            length,
            found,
        });
    }
    let found = le64(block, GENERATION_AT);
    if found != generation {
        return Err(VerifyError::WrongGeneration {
            offset,
            length,
            expected: generation,
            found,
        });
    }
    match spec.kind {
        VerifyKind::Meta => Ok(()),
        VerifyKind::Pattern => {
            let pattern = spec.pattern.as_deref().unwrap_or_default();
            match pattern_mismatch(block, pattern) {
                None => Ok(()),
                Some((at, expected, found)) => Err(VerifyError::PatternMismatch {
                    offset,
                    length,
                    at,
                    expected,
                    found,
                }),
            }
        }
        kind => {
            let computed = digest(kind, &block[..FIELDS_END], &block[HEADER_LEN..]);
            let stored = Digest::new(&block[DIGEST_AT..DIGEST_AT + kind.digest_len()]);
            if stored == computed {
                Ok(())
            } else {
                Err(VerifyError::DigestMismatch {
                    offset,
                    length,
                    kind,
                    stored,
                    computed,
                })
            }
        }
    }
}

/// The first payload byte of `block` that is not `pattern` repeated from the
/// start of the block: (index in the block, expected, found).
fn pattern_mismatch(block: &[u8], pattern: &[u8]) -> Option<(usize, u8, u8)> {
    let len = block.len();
    let p = pattern.len();
    if p == 0 {
        return None;
    }
    let expect = |i: usize| pattern[i % p];
    // The first period after the header, byte by byte...
    let direct_end = (HEADER_LEN + p).min(len);
    if let Some(i) = (HEADER_LEN..direct_end).find(|&i| block[i] != expect(i)) {
        return Some((i, expect(i), block[i]));
    }
    // ...then every byte must equal the one a period before it: one memcmp.
    // The first byte that does not is the first that differs from the pattern.
    let earlier = &block[direct_end - p..len - p];
    let later = &block[direct_end..];
    if earlier != later {
        let j = earlier.iter().zip(later).position(|(a, b)| a != b)?;
        let i = direct_end + j;
        return Some((i, expect(i), block[i]));
    }
    None
}

/// The digest of `kind` over the header's fields and the payload.
fn digest(kind: VerifyKind, fields: &[u8], payload: &[u8]) -> Digest {
    match kind {
        VerifyKind::Crc32c => {
            let mut h = Crc32c::new();
            h.update(fields);
            h.update(payload);
            Digest::new(&h.finish().to_le_bytes())
        }
        VerifyKind::Md5 => {
            let mut h = Md5::new();
            h.update(fields);
            h.update(payload);
            Digest::new(&h.finish())
        }
        VerifyKind::Sha256 => {
            let mut h = Sha256::new();
            h.update(fields);
            h.update(payload);
            Digest::new(&h.finish())
        }
        VerifyKind::Xxhash => {
            let mut h = Xxh32::new(0);
            h.update(fields);
            h.update(payload);
            Digest::new(&h.finish().to_le_bytes())
        }
        VerifyKind::Pattern | VerifyKind::Meta => Digest::new(&[]),
    }
}

/// The random stream of one interval's payload: a different one for every
/// (seed, offset, generation).
fn payload_seed(seed: u64, offset: u64, generation: u64) -> u64 {
    mix64(mix64(seed ^ mix64(offset)) ^ generation)
}

/// SplitMix64's finaliser.
fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn le32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}
