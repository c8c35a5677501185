//! The block format: [`fill`] writes it, [`check`] reads it (the layout is
//! in the module's documentation).

use super::checksum::Running;
use super::{
    BlockFormat, Digest, HEADER_LEN, MAGIC, SpecError, VerifyError, VerifyKind, VerifySpec,
    check_fio, crc32c, fill_fio,
};
use elevator_core::rng::{Rng, splitmix64};

const KIND_AT: usize = 8;
const LENGTH_AT: usize = 12;
const OFFSET_AT: usize = 16;
const GENERATION_AT: usize = 24;
const SEED_AT: usize = 32;
/// The header fields the digest covers: `0..FIELDS_END`.
const FIELDS_END: usize = 40;
const DIGEST_AT: usize = 40;
const HCRC_AT: usize = 76;

/// Fills `buf`, a write buffer for device byte `offset`, with a header and
/// payload per interval for `generation` (in fio's format for
/// [`BlockFormat::Fio`], [`fill_fio`]). Fails only if `spec` does not fit
/// the buffer (see [`VerifySpec::interval_len`]); does not allocate.
pub fn fill(
    spec: &VerifySpec,
    buf: &mut [u8],
    offset: u64,
    generation: u64,
) -> Result<(), SpecError> {
    if spec.format == BlockFormat::Fio {
        // fio's numberio: the generation's low 16 bits.
        return fill_fio(spec, buf, offset, generation as u16);
    }
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
/// interval ([`check_fio`] for [`BlockFormat::Fio`], which ignores
/// `generation`). Does not allocate.
pub fn check(
    spec: &VerifySpec,
    buf: &[u8],
    offset: u64,
    generation: u64,
) -> Result<(), VerifyError> {
    if spec.format == BlockFormat::Fio {
        // fio does not compare numberio when it only checks.
        return check_fio(spec, buf, offset);
    }
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
            repeat_pattern(block, pattern);
        }
        _ => fill_random(&mut block[HEADER_LEN..], spec.seed, offset, generation),
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

/// Fills `buf` with `pattern` repeated from its first byte.
pub(super) fn repeat_pattern(buf: &mut [u8], pattern: &[u8]) {
    // Doubling copies.
    let length = buf.len();
    let n = pattern.len().min(length);
    buf[..n].copy_from_slice(&pattern[..n]);
    let mut filled = n;
    while filled < length {
        let k = filled.min(length - filled);
        buf.copy_within(..k, filled);
        filled += k;
    }
}

/// Fills `bytes` with the pseudo-random stream of (seed, offset,
/// generation).
pub(super) fn fill_random(bytes: &mut [u8], seed: u64, offset: u64, generation: u64) {
    let mut rng = Rng::new(payload_seed(seed, offset, generation));
    let mut words = bytes.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    let last = rng.next_u64().to_le_bytes();
    let rest = words.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&last[..n]);
}

/// The first payload byte of `block` that is not `pattern` repeated from the
/// start of the block: (index in the block, expected, found).
fn pattern_mismatch(block: &[u8], pattern: &[u8]) -> Option<(usize, u8, u8)> {
    pattern_mismatch_from(block, pattern, HEADER_LEN, 0)
}

/// The first byte of `block` from index `from` on that is not the pattern
/// whose byte `phase % len` is at the block's first byte: (index in the
/// block, expected, found).
pub(super) fn pattern_mismatch_from(
    block: &[u8],
    pattern: &[u8],
    from: usize,
    phase: usize,
) -> Option<(usize, u8, u8)> {
    let len = block.len();
    let p = pattern.len();
    if p == 0 || from >= len {
        return None;
    }
    let expect = |i: usize| pattern[(phase + i) % p];
    // The first period after `from`, byte by byte...
    let direct_end = (from + p).min(len);
    if let Some(i) = (from..direct_end).find(|&i| block[i] != expect(i)) {
        return Some((i, expect(i), block[i]));
    }
    if direct_end == len {
        return None;
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

/// The digest of `kind` over the header's fields and the payload, cut to
/// what a header stores ([`VerifyKind::digest_len`]). XXH32 uses seed 0.
fn digest(kind: VerifyKind, fields: &[u8], payload: &[u8]) -> Digest {
    let Some(mut h) = Running::new(kind, 0) else {
        return Digest::new(&[]);
    };
    h.update(fields);
    h.update(payload);
    let full = h.finish();
    Digest::new(&full.as_bytes()[..kind.digest_len()])
}

/// The random stream of one interval's payload: a different one for every
/// (seed, offset, generation).
fn payload_seed(seed: u64, offset: u64, generation: u64) -> u64 {
    mix64(mix64(seed ^ mix64(offset)) ^ generation)
}

/// SplitMix64's output for state `x` (a stateless hash of `x`).
fn mix64(x: u64) -> u64 {
    let mut state = x;
    splitmix64(&mut state)
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
