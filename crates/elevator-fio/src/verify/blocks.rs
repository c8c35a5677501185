//! Data cut into fixed-size blocks as it arrives in pieces ([`Blocks`]):
//! the buffering every block hash here shares (XXH32's 16-byte stripes,
//! MD5's and SHA-256's 64-byte blocks), and for the last two the
//! Merkle–Damgård framing and running state they share ([`Hash64`]): the
//! last block padded with a one bit, zeros to 56 mod 64 and the message
//! length in bits (little-endian for MD5, big-endian for SHA-256).

/// A partial block of `N` bytes and the message length so far.
#[derive(Clone, Debug)]
pub(super) struct Blocks<const N: usize> {
    buf: [u8; N],
    buf_len: usize,
    /// Message length in bytes.
    len: u64,
}

impl<const N: usize> Blocks<N> {
    /// Nothing fed yet.
    pub(super) fn new() -> Blocks<N> {
        Blocks {
            buf: [0; N],
            buf_len: 0,
            len: 0,
        }
    }

    /// Feeds `data`, calling `compress` on each complete block.
    #[inline]
    pub(super) fn update(&mut self, mut data: &[u8], mut compress: impl FnMut(&[u8])) {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.buf_len > 0 {
            let n = (N - self.buf_len).min(data.len());
            self.buf[self.buf_len..self.buf_len + n].copy_from_slice(&data[..n]);
            self.buf_len += n;
            data = &data[n..];
            if self.buf_len < N {
                return;
            }
            compress(&self.buf);
            self.buf_len = 0;
        }
        let mut blocks = data.chunks_exact(N);
        for b in &mut blocks {
            compress(b);
        }
        let rest = blocks.remainder();
        self.buf[..rest.len()].copy_from_slice(rest);
        self.buf_len = rest.len();
    }

    /// Bytes fed so far.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// The bytes of the partial block, waiting for more.
    pub(super) fn rest(&self) -> &[u8] {
        &self.buf[..self.buf_len]
    }
}

impl Blocks<64> {
    /// Pads the message, calling `compress` on the last one or two blocks.
    pub(super) fn finish(mut self, big_endian: bool, mut compress: impl FnMut(&[u8])) {
        let bits = self.len.wrapping_mul(8);
        let pad_len = if self.buf_len < 56 {
            56 - self.buf_len
        } else {
            120 - self.buf_len
        };
        let mut pad = [0u8; 72];
        pad[0] = 0x80;
        let bits = if big_endian {
            bits.to_be_bytes()
        } else {
            bits.to_le_bytes()
        };
        pad[pad_len..pad_len + 8].copy_from_slice(&bits);
        self.update(&pad[..pad_len + 8], &mut compress);
        debug_assert_eq!(self.buf_len, 0);
    }
}

/// A hash's step over one 64-byte block, what [`Hash64`] runs.
pub trait Compress64 {
    /// The running state: 32-bit words.
    type State: Copy + std::fmt::Debug + AsRef<[u32]>;
    /// The digest: the final state's words as bytes.
    type Digest: Default + AsMut<[u8]>;
    /// The state before any data.
    const INIT: Self::State;
    /// Whether the length and the digest's words are big-endian.
    const BIG_ENDIAN: bool;
    /// One 64-byte block into `state`.
    fn compress(state: &mut Self::State, block: &[u8]);
}

/// A running MD5 or SHA-256: `update` with the data in any pieces, then
/// `finish`.
#[derive(Clone, Debug)]
pub struct Hash64<C: Compress64> {
    state: C::State,
    blocks: Blocks<64>,
}

impl<C: Compress64> Default for Hash64<C> {
    fn default() -> Self {
        Hash64::new()
    }
}

impl<C: Compress64> Hash64<C> {
    /// A hash over no bytes yet.
    pub fn new() -> Hash64<C> {
        Hash64 {
            state: C::INIT,
            blocks: Blocks::new(),
        }
    }

    /// Adds `data`.
    pub fn update(&mut self, data: &[u8]) {
        let state = &mut self.state;
        self.blocks.update(data, |b| C::compress(state, b));
    }

    /// The digest of everything fed so far (the running state is consumed).
    pub fn finish(self) -> C::Digest {
        let mut state = self.state;
        self.blocks
            .finish(C::BIG_ENDIAN, |b| C::compress(&mut state, b));
        let mut out = C::Digest::default();
        for (o, &w) in out.as_mut().chunks_exact_mut(4).zip(state.as_ref()) {
            o.copy_from_slice(&if C::BIG_ENDIAN {
                w.to_be_bytes()
            } else {
                w.to_le_bytes()
            });
        }
        out
    }

    /// The digest of `data`.
    pub fn digest(data: &[u8]) -> C::Digest {
        let mut h = Hash64::<C>::new();
        h.update(data);
        h.finish()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::{Compress64, Hash64};

    /// Asserts that `data` fed in two pieces, cut anywhere around the block
    /// boundaries, gives the digest of the whole.
    pub(in super::super) fn pieces_agree<C: Compress64>(data: &[u8])
    where
        C::Digest: PartialEq + std::fmt::Debug,
    {
        for split in [0, 1, 55, 56, 63, 64, 65, 128, 299, 300] {
            let mut h = Hash64::<C>::new();
            h.update(&data[..split]);
            h.update(&data[split..]);
            assert_eq!(h.finish(), Hash64::<C>::digest(data), "split {split}");
        }
    }

    /// `d` in lower-case hex.
    pub(in super::super) fn hex(d: &[u8]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }
}
