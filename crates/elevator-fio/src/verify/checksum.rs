//! One running checksum for any digest [`VerifyKind`] ([`Running`]): the
//! hand-written ones of this module's siblings (crc32c, md5, sha256,
//! xxhash) and those taken from kept crates (RustCrypto's SHA-1, SHA-512 and
//! SHA-3; the `crc` crate's table CRCs for crc64, crc32, crc16 and crc7).
//!
//! The CRCs are fio's (its `crc/` directory): every one starts at 0 and has
//! no final xor, so each is a standard catalogue entry but crc32, which is
//! POSIX `cksum`'s polynomial without `cksum`'s final inversion and length.

use super::{Crc32c, Md5, Sha256, VerifyKind, Xxh32};
use crc::{Algorithm, CRC_7_MMC, CRC_16_ARC, CRC_64_REDIS, Crc, Digest as CrcDigest};
use sha1::Digest as _;

/// fio's crc32: polynomial 0x04C11DB7 most significant bit first, initial
/// value 0, no final xor.
const CRC_32_FIO: Algorithm<u32> = Algorithm {
    width: 32,
    poly: 0x04c1_1db7,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
    check: 0x89a1_897f,
    residue: 0,
};

static CRC64: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);
static CRC32: Crc<u32> = Crc::<u32>::new(&CRC_32_FIO);
static CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_ARC);
static CRC7: Crc<u8> = Crc::<u8>::new(&CRC_7_MMC);

/// The longest digest: SHA-512's and SHA3-512's 64 bytes.
pub(crate) const FULL_DIGEST_MAX: usize = 64;

/// A whole digest, up to [`FULL_DIGEST_MAX`] bytes: the CRCs and xxhash as
/// their integer in little-endian bytes, the hashes as their standard bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FullDigest {
    bytes: [u8; FULL_DIGEST_MAX],
    len: usize,
}

impl FullDigest {
    fn new(d: &[u8]) -> FullDigest {
        let mut bytes = [0u8; FULL_DIGEST_MAX];
        bytes[..d.len()].copy_from_slice(d);
        FullDigest {
            bytes,
            len: d.len(),
        }
    }

    /// The digest's bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A checksum being computed over data fed in pieces.
pub(crate) enum Running {
    Crc32c(Crc32c),
    Md5(Md5),
    Sha256(Sha256),
    Xxhash(Xxh32),
    Crc64(CrcDigest<'static, u64>),
    Crc32(CrcDigest<'static, u32>),
    Crc16(CrcDigest<'static, u16>),
    Crc7(CrcDigest<'static, u8>),
    Sha1(sha1::Sha1),
    Sha512(sha2::Sha512),
    Sha3_224(sha3::Sha3_224),
    Sha3_256(sha3::Sha3_256),
    Sha3_384(sha3::Sha3_384),
    Sha3_512(sha3::Sha3_512),
}

impl Running {
    /// A checksum of `kind` over no bytes yet; `None` for `pattern` and
    /// `meta`, which have none. `xxhash_seed` is XXH32's seed.
    pub(crate) fn new(kind: VerifyKind, xxhash_seed: u32) -> Option<Running> {
        Some(match kind {
            VerifyKind::Pattern | VerifyKind::Meta => return None,
            VerifyKind::Crc32c => Running::Crc32c(Crc32c::new()),
            VerifyKind::Md5 => Running::Md5(Md5::new()),
            VerifyKind::Sha256 => Running::Sha256(Sha256::new()),
            VerifyKind::Xxhash => Running::Xxhash(Xxh32::new(xxhash_seed)),
            VerifyKind::Crc64 => Running::Crc64(CRC64.digest()),
            VerifyKind::Crc32 => Running::Crc32(CRC32.digest()),
            VerifyKind::Crc16 => Running::Crc16(CRC16.digest()),
            VerifyKind::Crc7 => Running::Crc7(CRC7.digest()),
            VerifyKind::Sha1 => Running::Sha1(sha1::Sha1::new()),
            VerifyKind::Sha512 => Running::Sha512(sha2::Sha512::new()),
            VerifyKind::Sha3_224 => Running::Sha3_224(sha3::Sha3_224::new()),
            VerifyKind::Sha3_256 => Running::Sha3_256(sha3::Sha3_256::new()),
            VerifyKind::Sha3_384 => Running::Sha3_384(sha3::Sha3_384::new()),
            VerifyKind::Sha3_512 => Running::Sha3_512(sha3::Sha3_512::new()),
        })
    }

    /// Adds `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        match self {
            Running::Crc32c(h) => h.update(data),
            Running::Md5(h) => h.update(data),
            Running::Sha256(h) => h.update(data),
            Running::Xxhash(h) => h.update(data),
            Running::Crc64(h) => h.update(data),
            Running::Crc32(h) => h.update(data),
            Running::Crc16(h) => h.update(data),
            Running::Crc7(h) => h.update(data),
            Running::Sha1(h) => h.update(data),
            Running::Sha512(h) => h.update(data),
            Running::Sha3_224(h) => h.update(data),
            Running::Sha3_256(h) => h.update(data),
            Running::Sha3_384(h) => h.update(data),
            Running::Sha3_512(h) => h.update(data),
        }
    }

    /// The digest of everything fed.
    pub(crate) fn finish(self) -> FullDigest {
        match self {
            Running::Crc32c(h) => FullDigest::new(&h.finish().to_le_bytes()),
            Running::Md5(h) => FullDigest::new(&h.finish()),
            Running::Sha256(h) => FullDigest::new(&h.finish()),
            Running::Xxhash(h) => FullDigest::new(&h.finish().to_le_bytes()),
            Running::Crc64(h) => FullDigest::new(&h.finalize().to_le_bytes()),
            Running::Crc32(h) => FullDigest::new(&h.finalize().to_le_bytes()),
            Running::Crc16(h) => FullDigest::new(&h.finalize().to_le_bytes()),
            Running::Crc7(h) => FullDigest::new(&[h.finalize()]),
            Running::Sha1(h) => FullDigest::new(&h.finalize()),
            Running::Sha512(h) => FullDigest::new(&h.finalize()),
            Running::Sha3_224(h) => FullDigest::new(&h.finalize()),
            Running::Sha3_256(h) => FullDigest::new(&h.finalize()),
            Running::Sha3_384(h) => FullDigest::new(&h.finalize()),
            Running::Sha3_512(h) => FullDigest::new(&h.finalize()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Running, VerifyKind};

    fn hex(kind: VerifyKind, data: &[u8]) -> String {
        let mut h = Running::new(kind, 0).expect("a digest kind");
        h.update(&data[..data.len() / 2]);
        h.update(&data[data.len() / 2..]);
        h.finish()
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The catalogue's check values (the digest of "123456789") and the
    /// standard test vectors of the hashes.
    #[test]
    fn check_values() {
        let nine = b"123456789";
        assert_eq!(hex(VerifyKind::Crc64, nine), "cad9b8c414d9c6e9");
        assert_eq!(hex(VerifyKind::Crc32, nine), "7f89a189");
        assert_eq!(hex(VerifyKind::Crc16, nine), "3dbb");
        assert_eq!(hex(VerifyKind::Crc7, nine), "75");
        assert_eq!(
            hex(VerifyKind::Sha1, b"abc"),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert!(hex(VerifyKind::Sha512, b"abc").starts_with("ddaf35a193617aba"));
        assert!(hex(VerifyKind::Sha3_256, b"abc").starts_with("3a985da74fe225b2"));
        assert_eq!(hex(VerifyKind::Sha3_224, b"").len(), 56);
        assert_eq!(hex(VerifyKind::Sha3_384, b"").len(), 96);
        assert_eq!(hex(VerifyKind::Sha3_512, b"").len(), 128);
        assert!(Running::new(VerifyKind::Meta, 0).is_none());
    }
}
