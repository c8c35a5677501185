//! fio's own on-disk verify format ([`BlockFormat::Fio`](super::BlockFormat)):
//! blocks fio 3.33 writes with `verify=`, and blocks its `--verify_only`
//! accepts. Learnt from fio's `verify.h`, `verify.c` and `crc/` (the layout
//! and each checksum's quirks), checked against files fio wrote.
//!
//! Each interval starts with fio's 40-byte header, all integers
//! little-endian:
//!
//! | bytes   | field                                                        |
//! |---------|--------------------------------------------------------------|
//! | 0..2    | magic, [`FIO_MAGIC`] (0xacca)                                |
//! | 2..4    | fio's verify type (1 meta, 2 md5, 3 crc64, 4 crc32, 5 crc32c, 6 crc32c-intel, 7 crc16, 8 crc7, 9 sha256, 10 sha512, 11..14 sha3-224..512, 15 xxhash, 16 sha1) |
//! | 4..8    | length of the interval (u32)                                 |
//! | 8..16   | random seed of the payload (u64; elevator writes its seed)   |
//! | 16..24  | device byte offset of the interval (u64)                     |
//! | 24..32  | time of the write (elevator writes zeros)                    |
//! | 32..34  | thread number (elevator writes 0)                            |
//! | 34..36  | `numberio` (u16; elevator writes its generation's low bits)  |
//! | 36..40  | fio's CRC-32C of bytes 0..36 (not inverted at the end)       |
//!
//! then the checksum's own field, then the payload it covers (to the end of
//! the interval): md5 16 bytes (the digest), crc64 8, crc32 and crc32c 4,
//! crc16 2, crc7 1 (each the integer, little-endian; fio's crc32c is not
//! inverted at the end), xxhash 4 (XXH32 with seed 1), sha1 20 (the five
//! state words little-endian), sha3-* the digest, sha256 64 bytes (fio's
//! own variant: the bit length appended little-endian, the low byte of each
//! of the eight state words, then the rest of the last padded block).
//!
//! fio's `verify=pattern` has no header: the buffer is `verify_pattern`
//! repeated from its first byte. `meta` is the header alone; with a
//! `verify_pattern` the payload is the pattern (repeated from the buffer's
//! first byte) and is checked too. A digest kind's payload is the pattern
//! when one is given, else pseudo-random bytes.
//!
//! As fio does for a job that only writes or only reads, the check takes the
//! seed from the header and does not compare `numberio`. fio's `sha512`
//! stores its hash's input buffer, never finished into a digest, so it
//! cannot be reproduced: [`SpecError::NotInFioFormat`] refuses it.

use super::block::{fill_random, pattern_mismatch_from, repeat_pattern};
use super::checksum::Running;
use super::{
    Compress64, Crc32c, Digest, SpecError, VerifyError, VerifyKind, VerifySpec,
    sha256::Sha256Rounds,
};

/// fio's header magic.
pub const FIO_MAGIC: u16 = 0xacca;
/// Length of fio's header.
pub const FIO_HEADER_LEN: usize = 40;
const CRC_AT: usize = 36;

/// fio's type code of `kind` and the length of its checksum field; `None`
/// for fio's headerless `pattern`.
fn fio_type(kind: VerifyKind) -> Result<Option<(u16, usize)>, SpecError> {
    Ok(Some(match kind {
        VerifyKind::Pattern => return Ok(None),
        VerifyKind::Meta => (1, 0),
        VerifyKind::Md5 => (2, 16),
        VerifyKind::Crc64 => (3, 8),
        VerifyKind::Crc32 => (4, 4),
        VerifyKind::Crc32c => (5, 4),
        VerifyKind::Crc16 => (7, 2),
        VerifyKind::Crc7 => (8, 1),
        VerifyKind::Sha256 => (9, 64),
        VerifyKind::Sha512 => {
            return Err(SpecError::NotInFioFormat {
                kind,
                why: "fio 3.33's sha512 stores the hash's unfinished input buffer, not a digest",
            });
        }
        VerifyKind::Sha3_224 => (11, 28),
        VerifyKind::Sha3_256 => (12, 32),
        VerifyKind::Sha3_384 => (13, 48),
        VerifyKind::Sha3_512 => (14, 64),
        VerifyKind::Xxhash => (15, 4),
        VerifyKind::Sha1 => (16, 20),
    }))
}

/// fio's CRC-32C: the standard one without the final inversion.
fn fio_crc32c(data: &[u8]) -> u32 {
    let mut c = Crc32c::new();
    c.update(data);
    !c.finish()
}

/// Writes fio's checksum field of `kind` over `payload` into `field`
/// (exactly the field's length).
fn checksum(kind: VerifyKind, payload: &[u8], field: &mut [u8]) {
    if kind == VerifyKind::Sha256 {
        fio_sha256(payload, field);
        return;
    }
    let Some(mut h) = Running::new(kind, 1) else {
        return;
    };
    h.update(payload);
    let full = h.finish();
    let d = &full.as_bytes()[..field.len()];
    match kind {
        VerifyKind::Crc32c => {
            let v = !u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
            field.copy_from_slice(&v.to_le_bytes());
        }
        VerifyKind::Sha1 => {
            for (o, w) in field.chunks_exact_mut(4).zip(d.chunks_exact(4)) {
                o.copy_from_slice(&[w[3], w[2], w[1], w[0]]);
            }
        }
        _ => field.copy_from_slice(d),
    }
}

/// fio's sha256 field (64 bytes) of `data`: SHA-256's blocks with the bit
/// length appended little-endian; the low byte of each state word, then the
/// rest of the last block.
fn fio_sha256(data: &[u8], field: &mut [u8]) {
    let mut state = Sha256Rounds::INIT;
    let mut blocks = data.chunks_exact(64);
    for b in &mut blocks {
        Sha256Rounds::compress(&mut state, b);
    }
    let rest = blocks.remainder();
    let mut tail = [0u8; 128];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()] = 0x80;
    let end = if rest.len() < 56 { 64 } else { 128 };
    let bits = (data.len() as u64).wrapping_mul(8);
    tail[end - 8..end].copy_from_slice(&bits.to_le_bytes());
    for b in tail[..end].chunks_exact(64) {
        Sha256Rounds::compress(&mut state, b);
    }
    field.copy_from_slice(&tail[end - 64..end]);
    for (f, s) in field.iter_mut().zip(state) {
        *f = s as u8;
    }
}

/// The length of each interval of a `len`-byte buffer, checked for fio's
/// format: long enough for the header and the checksum field.
fn interval(spec: &VerifySpec, len: usize) -> Result<(usize, Option<(u16, usize)>), SpecError> {
    let interval = spec.interval_len(len)?;
    let ty = fio_type(spec.kind)?;
    Ok((interval, ty))
}

/// Fills `buf`, a write buffer for device byte `offset`, as fio writes it
/// for `spec`, with `numberio` in each header. Does not allocate.
pub fn fill_fio(
    spec: &VerifySpec,
    buf: &mut [u8],
    offset: u64,
    numberio: u16,
) -> Result<(), SpecError> {
    let (interval, ty) = interval(spec, buf.len())?;
    match spec.pattern.as_deref() {
        Some(p) if !p.is_empty() => repeat_pattern(buf, p),
        _ => fill_random(buf, spec.seed, offset, u64::from(numberio)),
    }
    let Some((code, field)) = ty else {
        return Ok(());
    };
    let mut at = offset;
    for block in buf.chunks_exact_mut(interval) {
        let h = &mut block[..FIO_HEADER_LEN];
        h[0..2].copy_from_slice(&FIO_MAGIC.to_le_bytes());
        h[2..4].copy_from_slice(&code.to_le_bytes());
        // `interval_len` guarantees the length fits.
        h[4..8].copy_from_slice(&(interval as u32).to_le_bytes());
        h[8..16].copy_from_slice(&spec.seed.to_le_bytes());
        h[16..24].copy_from_slice(&at.to_le_bytes());
        h[24..34].fill(0);
        h[34..36].copy_from_slice(&numberio.to_le_bytes());
        let crc = fio_crc32c(&h[..CRC_AT]);
        h[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        let (head, payload) = block.split_at_mut(FIO_HEADER_LEN + field);
        checksum(spec.kind, payload, &mut head[FIO_HEADER_LEN..]);
        at = at.wrapping_add(interval as u64);
    }
    Ok(())
}

/// Checks `buf`, read from device byte `offset`, as fio's verify would for
/// `spec`: the first fault found, interval by interval. Does not allocate.
pub fn check_fio(spec: &VerifySpec, buf: &[u8], offset: u64) -> Result<(), VerifyError> {
    let (interval, ty) = interval(spec, buf.len())?;
    let pattern = spec.pattern.as_deref().filter(|p| !p.is_empty());
    let Some((code, field)) = ty else {
        // fio's headerless pattern: the whole buffer.
        return match pattern.and_then(|p| pattern_mismatch_from(buf, p, 0, 0)) {
            None => Ok(()),
            Some((at, expected, found)) => {
                let start = at / interval * interval;
                Err(VerifyError::PatternMismatch {
                    offset: offset.wrapping_add(start as u64),
                    length: interval,
                    at: at - start,
                    expected,
                    found,
                })
            }
        };
    };
    for (i, block) in buf.chunks_exact(interval).enumerate() {
        let start = i * interval;
        let at = offset.wrapping_add(start as u64);
        check_header(block, at, code)?;
        let payload = &block[FIO_HEADER_LEN + field..];
        if spec.kind == VerifyKind::Meta {
            let from = FIO_HEADER_LEN;
            if let Some((j, expected, found)) =
                pattern.and_then(|p| pattern_mismatch_from(block, p, from, start))
            {
                return Err(VerifyError::PatternMismatch {
                    offset: at,
                    length: interval,
                    at: j,
                    expected,
                    found,
                });
            }
            continue;
        }
        let mut computed = [0u8; 64];
        let computed = &mut computed[..field];
        checksum(spec.kind, payload, computed);
        let stored = &block[FIO_HEADER_LEN..FIO_HEADER_LEN + field];
        if stored != computed {
            return Err(VerifyError::DigestMismatch {
                offset: at,
                length: interval,
                kind: spec.kind,
                stored: Digest::new(stored),
                computed: Digest::new(computed),
            });
        }
    }
    Ok(())
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// fio's header checks, in fio's order: magic, length, offset, header CRC;
/// then the type (fio checks the job's checksum whatever the header says,
/// and names a different type when it fails).
fn check_header(block: &[u8], offset: u64, code: u16) -> Result<(), VerifyError> {
    let length = block.len();
    let magic = le16(block, 0);
    if magic != FIO_MAGIC {
        return Err(VerifyError::FioBadMagic {
            offset,
            length,
            found: magic,
        });
    }
    let found = le32(block, 4);
    if usize::try_from(found).ok() != Some(length) {
        return Err(VerifyError::WrongLength {
            offset,
            length,
            found,
        });
    }
    let found = le64(block, 16);
    if found != offset {
        return Err(VerifyError::WrongOffset {
            offset,
            length,
            found,
        });
    }
    let stored = le32(block, CRC_AT);
    let computed = fio_crc32c(&block[..CRC_AT]);
    if stored != computed {
        return Err(VerifyError::HeaderCorrupt {
            offset,
            length,
            stored,
            computed,
        });
    }
    let found = le16(block, 2);
    // crc32c-intel (6) is crc32c written by fio's hardware-assisted path.
    if found != code && !(code == 5 && found == 6) {
        return Err(VerifyError::FioWrongType {
            offset,
            length,
            expected: code,
            found,
        });
    }
    Ok(())
}
