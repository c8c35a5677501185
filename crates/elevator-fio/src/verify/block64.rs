//! The Merkle–Damgård framing MD5 and SHA-256 share: data cut into 64-byte
//! blocks, the last one padded with a one bit, zeros to 56 mod 64 and the
//! message length in bits (little-endian for MD5, big-endian for SHA-256).

/// A partial 64-byte block and the message length so far.
#[derive(Clone, Debug)]
pub(super) struct Block64 {
    buf: [u8; 64],
    buf_len: usize,
    /// Message length in bytes.
    len: u64,
}

impl Block64 {
    /// Nothing fed yet.
    pub(super) fn new() -> Block64 {
        Block64 {
            buf: [0; 64],
            buf_len: 0,
            len: 0,
        }
    }

    /// Feeds `data`, calling `compress` on each complete block.
    pub(super) fn update(&mut self, mut data: &[u8], mut compress: impl FnMut(&[u8])) {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.buf_len > 0 {
            let n = (64 - self.buf_len).min(data.len());
            self.buf[self.buf_len..self.buf_len + n].copy_from_slice(&data[..n]);
            self.buf_len += n;
            data = &data[n..];
            if self.buf_len < 64 {
                return;
            }
            compress(&self.buf);
            self.buf_len = 0;
        }
        let mut blocks = data.chunks_exact(64);
        for b in &mut blocks {
            compress(b);
        }
        let rest = blocks.remainder();
        self.buf[..rest.len()].copy_from_slice(rest);
        self.buf_len = rest.len();
    }

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
