//! XXH32, as the xxHash specification (Yann Collet, "xxHash fast digest
//! algorithm", version 0.1.1) defines it: four lanes over 16-byte stripes,
//! then the remaining words and bytes, then the avalanche.

use super::blocks::Blocks;

const P1: u32 = 0x9E37_79B1;
const P2: u32 = 0x85EB_CA77;
const P3: u32 = 0xC2B2_AE3D;
const P4: u32 = 0x27D4_EB2F;
const P5: u32 = 0x1656_67B1;

#[inline]
fn round(acc: u32, lane: u32) -> u32 {
    acc.wrapping_add(lane.wrapping_mul(P2))
        .rotate_left(13)
        .wrapping_mul(P1)
}

#[inline]
fn word(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// A running XXH32: [`Xxh32::update`] with the data in any pieces, then
/// [`Xxh32::finish`].
#[derive(Clone, Debug)]
pub struct Xxh32 {
    seed: u32,
    lanes: [u32; 4],
    /// The partial stripe waiting for more bytes, and the length so far.
    stripes: Blocks<16>,
}

impl Xxh32 {
    /// An XXH32 with `seed` over no bytes yet.
    pub fn new(seed: u32) -> Xxh32 {
        Xxh32 {
            seed,
            lanes: [
                seed.wrapping_add(P1).wrapping_add(P2),
                seed.wrapping_add(P2),
                seed,
                seed.wrapping_sub(P1),
            ],
            stripes: Blocks::new(),
        }
    }

    fn stripe(lanes: &mut [u32; 4], s: &[u8]) {
        lanes[0] = round(lanes[0], word(&s[0..4]));
        lanes[1] = round(lanes[1], word(&s[4..8]));
        lanes[2] = round(lanes[2], word(&s[8..12]));
        lanes[3] = round(lanes[3], word(&s[12..16]));
    }

    /// Adds `data`.
    pub fn update(&mut self, data: &[u8]) {
        let lanes = &mut self.lanes;
        self.stripes.update(data, |s| Xxh32::stripe(lanes, s));
    }

    /// The hash of everything fed so far.
    pub fn finish(&self) -> u32 {
        let len = self.stripes.len();
        let mut acc = if len >= 16 {
            let [v1, v2, v3, v4] = self.lanes;
            v1.rotate_left(1)
                .wrapping_add(v2.rotate_left(7))
                .wrapping_add(v3.rotate_left(12))
                .wrapping_add(v4.rotate_left(18))
        } else {
            self.seed.wrapping_add(P5)
        };
        // The specification adds the length modulo 2^32.
        acc = acc.wrapping_add(len as u32);
        let rest = self.stripes.rest();
        let mut words = rest.chunks_exact(4);
        for w in &mut words {
            acc = acc
                .wrapping_add(word(w).wrapping_mul(P3))
                .rotate_left(17)
                .wrapping_mul(P4);
        }
        for &b in words.remainder() {
            acc = acc
                .wrapping_add(u32::from(b).wrapping_mul(P5))
                .rotate_left(11)
                .wrapping_mul(P1);
        }
        acc ^= acc >> 15;
        acc = acc.wrapping_mul(P2);
        acc ^= acc >> 13;
        acc = acc.wrapping_mul(P3);
        acc ^ (acc >> 16)
    }
}

/// The XXH32 of `data` with `seed`.
pub fn xxh32(data: &[u8], seed: u32) -> u32 {
    let mut h = Xxh32::new(seed);
    h.update(data);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_vectors() {
        assert_eq!(xxh32(b"", 0), 0x02CC_5D05);
        assert_eq!(xxh32(b"abc", 0), 0x32D1_53FF);
        // python-xxhash's README example: more than one stripe.
        assert_eq!(
            xxh32(b"Nobody inspects the spammish repetition", 0),
            0xE229_3B2F
        );
    }

    #[test]
    fn pieces_give_the_same_hash_as_the_whole() {
        let data: Vec<u8> = (0..200u32).map(|i| (i * 31 + 5) as u8).collect();
        for len in [0, 3, 4, 15, 16, 17, 33, 200] {
            for split in [0, 1, 5, 15, 16, 17, len] {
                let split = split.min(len);
                let mut h = Xxh32::new(9);
                h.update(&data[..split]);
                h.update(&data[split..len]);
                assert_eq!(
                    h.finish(),
                    xxh32(&data[..len], 9),
                    "len {len} split {split}"
                );
            }
        }
    }
}
