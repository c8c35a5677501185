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
//! This is elevator's own format ([`BlockFormat::Elevator`], the default).
//! fio's on-disk format is the other ([`BlockFormat::Fio`], the job option
//! `verify_format=fio`; see [`fill_fio`] and [`check_fio`]): blocks fio
//! writes with `verify=` are checked in it, and fio's `verify_only` accepts
//! what elevator writes in it.
//!
//! A buffer is cut into intervals (`verify_interval`, by default the whole
//! buffer); each interval is a multiple of 512 bytes and starts with an
//! 80-byte header ([`HEADER_LEN`]), all integers little-endian:
//!
//! | bytes   | field                                                      |
//! |---------|------------------------------------------------------------|
//! | 0..8    | magic, [`MAGIC`] (`"ELVVRFY1"`; the `1` is the version)    |
//! | 8       | kind: 1 crc32c, 2 md5, 3 sha256, 4 xxhash, 5 pattern, 6 meta, 7 crc64, 8 crc32, 9 crc16, 10 crc7, 11 sha1, 12 sha512, 13 sha3-224, 14 sha3-256, 15 sha3-384, 16 sha3-512 |
//! | 9..12   | reserved, zero                                             |
//! | 12..16  | length of the interval in bytes (u32)                      |
//! | 16..24  | device byte offset of the interval (u64)                   |
//! | 24..32  | generation (u64)                                           |
//! | 32..40  | seed (u64)                                                 |
//! | 40..72  | digest, zero-padded: the CRCs and xxhash as their integer, little-endian (crc7 1 byte, crc16 2, crc32c, crc32 and xxhash 4, crc64 8), md5 16, sha1 20, sha3-224 28, sha256 and sha3-256 32, sha512, sha3-384 and sha3-512 their first 32 bytes; zero for pattern and meta |
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
//! Neither [`fill`] nor [`check`] allocates. `verify_dump` ([`dump_files`])
//! names and fills the files a failing block is dumped to.

mod block;
mod blocks;
mod checksum;
mod crc32c;
mod dump;
mod error;
mod fio_block;
mod md5;
mod sha256;
mod xxhash;

pub use block::{check, fill};
pub use blocks::{Compress64, Hash64};
pub use crc32c::{Crc32c, crc32c};
pub use dump::{DumpFile, dump_base, dump_files};
pub use error::{Digest, SpecError, VerifyError};
pub use fio_block::{FIO_HEADER_LEN, FIO_MAGIC, check_fio, fill_fio};
pub use md5::{Md5, Md5Rounds, md5};
pub use sha256::{Sha256, Sha256Rounds, sha256};
pub use xxhash::{Xxh32, xxh32};

use std::fmt;

/// The first eight bytes of every interval elevator's verify writes.
pub const MAGIC: [u8; 8] = *b"ELVVRFY1";
/// Length of the header at the start of every interval.
pub const HEADER_LEN: usize = 80;
/// Buffers and intervals are multiples of this many bytes (and at least it).
pub const BLOCK_ALIGN: usize = 512;
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
    /// `crc64`: fio's CRC-64 (the reflected polynomial 0x95AC9329AC4BC9B5,
    /// initial value 0, no final xor: CRC-64/REDIS).
    Crc64,
    /// `crc32`: fio's CRC-32 (POSIX `cksum`'s polynomial 0x04C11DB7, not
    /// reflected, initial value 0, no final xor, no length appended).
    Crc32,
    /// `crc16`: CRC-16/ARC (reflected 0x8005, initial value 0).
    Crc16,
    /// `crc7`: CRC-7/MMC (0x09, not reflected, initial value 0).
    Crc7,
    /// `sha1`: SHA-1.
    Sha1,
    /// `sha512`: SHA-512, its first 32 bytes stored (see [`DIGEST_MAX`]).
    Sha512,
    /// `sha3-224`: SHA3-224.
    Sha3_224,
    /// `sha3-256`: SHA3-256.
    Sha3_256,
    /// `sha3-384`: SHA3-384, its first 32 bytes stored.
    Sha3_384,
    /// `sha3-512`: SHA3-512, its first 32 bytes stored.
    Sha3_512,
}

/// The most digest bytes a header holds: longer digests (`sha512`,
/// `sha3-384`, `sha3-512`) are stored cut to their first 32 bytes (256
/// bits, as many as `sha256`'s).
pub const DIGEST_MAX: usize = 32;

/// fio's `verify=` names elevator accepts, with what they mean (`None`: no
/// verification).
const NAMES: [(&str, Option<VerifyKind>); 19] = [
    ("crc32c", Some(VerifyKind::Crc32c)),
    ("crc32c-intel", Some(VerifyKind::Crc32c)),
    ("md5", Some(VerifyKind::Md5)),
    ("sha256", Some(VerifyKind::Sha256)),
    ("xxhash", Some(VerifyKind::Xxhash)),
    ("pattern", Some(VerifyKind::Pattern)),
    ("meta", Some(VerifyKind::Meta)),
    ("crc64", Some(VerifyKind::Crc64)),
    ("crc32", Some(VerifyKind::Crc32)),
    ("crc16", Some(VerifyKind::Crc16)),
    ("crc7", Some(VerifyKind::Crc7)),
    ("sha1", Some(VerifyKind::Sha1)),
    ("sha512", Some(VerifyKind::Sha512)),
    ("sha3-224", Some(VerifyKind::Sha3_224)),
    ("sha3-256", Some(VerifyKind::Sha3_256)),
    ("sha3-384", Some(VerifyKind::Sha3_384)),
    ("sha3-512", Some(VerifyKind::Sha3_512)),
    ("null", None),
    ("0", None),
];

/// fio's `verify=` names elevator knows but does not implement, with why.
const NOT_IMPLEMENTED: [(&str, &str); 1] = [(
    "pattern_no_hdr",
    "elevator's blocks always carry a header (it is what names a misdirected or stale write)",
)];

impl VerifyKind {
    /// Every kind, in the order of their codes.
    pub const ALL: [VerifyKind; 16] = [
        VerifyKind::Crc32c,
        VerifyKind::Md5,
        VerifyKind::Sha256,
        VerifyKind::Xxhash,
        VerifyKind::Pattern,
        VerifyKind::Meta,
        VerifyKind::Crc64,
        VerifyKind::Crc32,
        VerifyKind::Crc16,
        VerifyKind::Crc7,
        VerifyKind::Sha1,
        VerifyKind::Sha512,
        VerifyKind::Sha3_224,
        VerifyKind::Sha3_256,
        VerifyKind::Sha3_384,
        VerifyKind::Sha3_512,
    ];

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
        if let Some((n, why)) = NOT_IMPLEMENTED
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            return Err(format!("verify={n} is not implemented: {why}"));
        }
        Err(format!(
            "verify={name}: unknown verify method; elevator accepts {}, or null/0 for none",
            NAMES
                .iter()
                .filter(|(_, k)| k.is_some())
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
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
            VerifyKind::Crc64 => "crc64",
            VerifyKind::Crc32 => "crc32",
            VerifyKind::Crc16 => "crc16",
            VerifyKind::Crc7 => "crc7",
            VerifyKind::Sha1 => "sha1",
            VerifyKind::Sha512 => "sha512",
            VerifyKind::Sha3_224 => "sha3-224",
            VerifyKind::Sha3_256 => "sha3-256",
            VerifyKind::Sha3_384 => "sha3-384",
            VerifyKind::Sha3_512 => "sha3-512",
        }
    }

    /// Bytes of digest stored in the header (0 for `pattern` and `meta`; at
    /// most [`DIGEST_MAX`]).
    pub fn digest_len(self) -> usize {
        match self {
            VerifyKind::Crc7 => 1,
            VerifyKind::Crc16 => 2,
            VerifyKind::Crc32c | VerifyKind::Xxhash | VerifyKind::Crc32 => 4,
            VerifyKind::Crc64 => 8,
            VerifyKind::Md5 => 16,
            VerifyKind::Sha1 => 20,
            VerifyKind::Sha3_224 => 28,
            VerifyKind::Sha256
            | VerifyKind::Sha512
            | VerifyKind::Sha3_256
            | VerifyKind::Sha3_384
            | VerifyKind::Sha3_512 => DIGEST_MAX,
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
            VerifyKind::Crc64 => 7,
            VerifyKind::Crc32 => 8,
            VerifyKind::Crc16 => 9,
            VerifyKind::Crc7 => 10,
            VerifyKind::Sha1 => 11,
            VerifyKind::Sha512 => 12,
            VerifyKind::Sha3_224 => 13,
            VerifyKind::Sha3_256 => 14,
            VerifyKind::Sha3_384 => 15,
            VerifyKind::Sha3_512 => 16,
        }
    }

    fn from_code(code: u8) -> Option<VerifyKind> {
        VerifyKind::ALL.into_iter().find(|k| k.code() == code)
    }
}

impl fmt::Display for VerifyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which layout the blocks have: elevator's own (the default) or fio's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BlockFormat {
    /// elevator's format (this module's documentation): an 80-byte header
    /// naming the kind, the offset, the generation and the seed.
    #[default]
    Elevator,
    /// fio 3.33's on-disk format ([`fill_fio`], [`check_fio`]): blocks fio's
    /// `verify_only` accepts, and blocks fio wrote are checked.
    Fio,
}

impl BlockFormat {
    /// `verify_format=`'s value: `elevator` or `fio`.
    pub fn parse(v: &str) -> Result<BlockFormat, String> {
        match v.trim() {
            "elevator" => Ok(BlockFormat::Elevator),
            "fio" => Ok(BlockFormat::Fio),
            other => Err(format!(
                "verify_format={other}: the block format is elevator (elevator's own) or fio \
                 (fio's on-disk format)"
            )),
        }
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
    /// The blocks' layout.
    pub format: BlockFormat,
    /// `verify_dump`: the base of the names of the files a failed block is
    /// dumped to ([`dump_files`]); `None`: no dump.
    pub dump: Option<String>,
}

impl VerifySpec {
    /// A spec of `kind` with `seed`, no pattern and one header per buffer.
    pub fn new(kind: VerifyKind, seed: u64) -> VerifySpec {
        VerifySpec {
            kind,
            pattern: None,
            seed,
            interval: None,
            format: BlockFormat::Elevator,
            dump: None,
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
