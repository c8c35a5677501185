//! Every block once per pass: fio's random map (a bitmap of the blocks a
//! random job has touched; a block already taken gives way to the next free
//! one after it, wrapping to the start) and `random_generator=lfsr`'s
//! full-period sequence (no map at all).
//!
//! [`RandomMap`] is a bitmap with summary levels above it (a bit per full
//! word of the level below), so finding the next free block costs a few
//! word operations per level (at most 6 levels for 2^31 blocks), never a
//! scan. It is allocated once per job clone and never grows.
//!
//! [`FullCycle`] walks a full-period linear congruential sequence modulo
//! the next power of two, scrambled by a bijection and with values past the
//! block count skipped: each block exactly once per pass, the same order
//! every pass (as fio's lfsr repeats). It is not fio's LFSR (fio's
//! sequence cannot be reproduced anyway); the property that matters,
//! every block once per pass without a map, is the same.

/// The largest random map a job clone may have, in bytes.
pub const MAX_MAP_BYTES: u64 = 256 << 20;

/// A bitmap of `bits` blocks with summary levels: the next free block after
/// any position in O(levels).
#[derive(Clone, Debug)]
pub struct RandomMap {
    /// Level 0: one bit per block (set: taken). Level `k + 1`: one bit per
    /// word of level `k` (set: that word is full). The last level is one
    /// word.
    levels: Vec<Vec<u64>>,
    bits: u64,
    taken: u64,
}

impl RandomMap {
    /// Heap bytes a map of `bits` blocks takes.
    pub fn bytes_for(bits: u64) -> u64 {
        let mut total = 0u64;
        let mut n = bits.max(1);
        loop {
            let words = n.div_ceil(64);
            total = total.saturating_add(words.saturating_mul(8));
            if words <= 1 {
                return total;
            }
            n = words;
        }
    }

    /// An empty map of `bits` blocks (`bits > 0`; callers bound it with
    /// [`RandomMap::bytes_for`]).
    pub fn new(bits: u64) -> RandomMap {
        let bits = bits.max(1);
        let mut levels = Vec::new();
        let mut n = bits;
        loop {
            let words = n.div_ceil(64);
            levels.push(vec![0u64; words as usize]);
            if words <= 1 {
                break;
            }
            n = words;
        }
        let mut map = RandomMap {
            levels,
            bits,
            taken: 0,
        };
        map.pad();
        map
    }

    /// Marks the bits past the end of each level as taken, so that they are
    /// never found free and full words propagate.
    fn pad(&mut self) {
        let mut n = self.bits;
        for level in &mut self.levels {
            let used = n % 64;
            if used != 0
                && let Some(last) = level.last_mut()
            {
                *last |= !0u64 << used;
            }
            n = level.len() as u64;
        }
        // A padded word that became full must show in the level above.
        for k in 0..self.levels.len() - 1 {
            let w = self.levels[k].len() - 1;
            if self.levels[k][w] == !0 {
                self.levels[k + 1][w / 64] |= 1 << (w % 64);
            }
        }
    }

    /// Blocks in the map.
    pub fn blocks(&self) -> u64 {
        self.bits
    }

    /// Whether every block is taken.
    #[inline]
    pub fn full(&self) -> bool {
        self.taken >= self.bits
    }

    /// Whether block `i` is taken.
    #[cfg(test)]
    pub fn is_taken(&self, i: u64) -> bool {
        i < self.bits && self.levels[0][(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    /// Marks block `i` taken (no-op past the end or when already taken).
    #[inline]
    pub fn take(&mut self, i: u64) {
        if i >= self.bits {
            return;
        }
        let mut idx = i;
        for k in 0..self.levels.len() {
            let w = (idx / 64) as usize;
            let bit = 1u64 << (idx % 64);
            let word = &mut self.levels[k][w];
            if *word & bit != 0 {
                return;
            }
            *word |= bit;
            if k == 0 {
                self.taken += 1;
            }
            if *word != !0 {
                return;
            }
            idx = w as u64;
        }
    }

    /// The first free block at or after `i`, wrapping to the start; `None`
    /// when every block is taken.
    #[inline]
    pub fn next_free(&self, i: u64) -> Option<u64> {
        if self.full() {
            return None;
        }
        self.free_from(i.min(self.bits - 1))
            .or_else(|| self.free_from(0))
    }

    fn free_from(&self, i: u64) -> Option<u64> {
        let top = self.levels.len() - 1;
        let (mut level, mut idx) = (0usize, i);
        loop {
            let row = &self.levels[level];
            let w = (idx / 64) as usize;
            if w >= row.len() {
                return None;
            }
            let free = !row[w] & (!0u64 << (idx % 64));
            if free != 0 {
                idx = w as u64 * 64 + u64::from(free.trailing_zeros());
                break;
            }
            if level == top {
                return None;
            }
            idx = w as u64 + 1;
            level += 1;
        }
        while level > 0 {
            level -= 1;
            let word = !self.levels[level][idx as usize];
            idx = idx * 64 + u64::from(word.trailing_zeros());
        }
        Some(idx)
    }

    /// Frees every block (a new pass).
    pub fn clear(&mut self) {
        for level in &mut self.levels {
            level.fill(0);
        }
        self.taken = 0;
        self.pad();
    }
}

/// A full-period sequence over `0..n`: every value once per `n` draws.
#[derive(Clone, Debug)]
pub struct FullCycle {
    n: u64,
    mask: u64,
    half: u32,
    state: u64,
    mul: u64,
    add: u64,
}

impl FullCycle {
    /// A sequence over `0..n` (`n > 0`) whose order depends on `seed`.
    pub fn new(n: u64, seed: u64) -> FullCycle {
        let n = n.max(1);
        let bits = (64 - (n - 1).leading_zeros()).max(2);
        let mask = if bits == 64 { !0 } else { (1u64 << bits) - 1 };
        let mut r = elevator_core::rng::Rng::new(seed);
        FullCycle {
            n,
            mask,
            half: bits.div_ceil(2),
            state: r.next_u64() & mask,
            // Hull–Dobell: modulo 2^k, an increment that is odd and a
            // multiplier that is 1 modulo 4 give the full period 2^k.
            mul: ((r.next_u64() << 2) | 1) & mask,
            add: (r.next_u64() | 1) & mask,
        }
    }

    /// The next value.
    #[inline]
    pub fn next(&mut self) -> u64 {
        loop {
            self.state = self.state.wrapping_mul(self.mul).wrapping_add(self.add) & self.mask;
            // A bijection on k bits, so the order looks random while the
            // period stays full.
            let mut x = self.state;
            x ^= x >> self.half;
            x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15) & self.mask;
            x ^= x >> self.half;
            if x < self.n {
                return x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_free_wraps_and_fills() {
        for bits in [1u64, 5, 64, 65, 4096, 4097, 300_000] {
            let mut m = RandomMap::new(bits);
            let mut seen = 0;
            let mut pos = bits / 3;
            while let Some(b) = m.next_free(pos) {
                assert!(!m.is_taken(b) && b < bits);
                m.take(b);
                seen += 1;
                pos = (b * 7 + 3) % bits;
            }
            assert_eq!(seen, bits);
            assert!(m.full());
            m.clear();
            assert_eq!(m.next_free(bits - 1), Some(bits - 1));
            m.take(bits - 1);
            assert_eq!(m.next_free(bits - 1), if bits > 1 { Some(0) } else { None });
        }
    }

    #[test]
    fn next_free_is_the_nearest_after() {
        let mut m = RandomMap::new(1000);
        for i in 100..900 {
            m.take(i);
        }
        assert_eq!(m.next_free(100), Some(900));
        assert_eq!(m.next_free(50), Some(50));
        for i in 900..1000 {
            m.take(i);
        }
        assert_eq!(m.next_free(500), Some(0));
        assert!(RandomMap::bytes_for(1 << 31) <= MAX_MAP_BYTES + MAX_MAP_BYTES / 32);
    }

    #[test]
    fn full_cycle_is_a_permutation_each_pass() {
        for n in [1u64, 2, 3, 17, 1000, 4096, 4097] {
            let mut c = FullCycle::new(n, 42);
            let first: Vec<u64> = (0..n).map(|_| c.next()).collect();
            let mut sorted = first.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>());
            let second: Vec<u64> = (0..n).map(|_| c.next()).collect();
            assert_eq!(first, second);
        }
    }
}
