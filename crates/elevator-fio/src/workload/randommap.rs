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
//! Beside the levels, a bit per pair of bitmap words says whether either
//! has any block taken (`touched`). It is 128 times smaller than the bitmap
//! (240 KiB for a 1 TB disk in 4 KiB blocks, where the bitmap is 30 MiB), so
//! it stays in cache while the bitmap does not: while the map is sparse,
//! most draws land in an untouched pair, are answered from `touched` alone,
//! and are taken without reading the bitmap. Such a take is written to the
//! bitmap later, with up to [`PENDING`] others (`pending`): a burst of
//! independent stores, whose page walks and cache misses overlap, in place
//! of one stall per I/O. A question about a pair with a take still pending,
//! or that reads past its word, writes them first. The answers are the
//! same as without either.
//!
//! [`FullCycle`] walks a full-period linear congruential sequence modulo
//! the next power of two, scrambled by a bijection and with values past the
//! block count skipped: each block exactly once per pass, the same order
//! every pass (as fio's lfsr repeats). It is not fio's LFSR (fio's
//! sequence cannot be reproduced anyway); the property that matters,
//! every block once per pass without a map, is the same.

/// The largest random map a job clone may have, in bytes.
pub const MAX_MAP_BYTES: u64 = 256 << 20;

/// Words of the bitmap per bit of [`RandomMap`]'s `touched` summary.
const TOUCH_SPAN: usize = 2;

/// Takes into untouched pairs held before they are written to the bitmap.
const PENDING: usize = 32;

/// A bitmap of `bits` blocks with summary levels: the next free block after
/// any position in O(levels).
#[derive(Clone, Debug)]
pub struct RandomMap {
    /// Level 0: one bit per block (set: taken). Level `k + 1`: one bit per
    /// word of level `k` (set: that word is full). The last level is one
    /// word.
    levels: Vec<Vec<u64>>,
    /// One bit per [`TOUCH_SPAN`] words of level 0 (set: some block in
    /// them is taken, or they hold padding past the end).
    touched: Vec<u64>,
    /// Takes into untouched pairs not yet written to level 0 (block
    /// numbers; one per pair at most, never more than [`PENDING`]).
    pending: Vec<u64>,
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
                break;
            }
            n = words;
        }
        total
            .saturating_add(Self::touched_words(bits.max(1).div_ceil(64)).saturating_mul(8))
            .saturating_add(PENDING as u64 * 8)
    }

    /// Words of `touched` for `words` words of level 0.
    fn touched_words(words: u64) -> u64 {
        words.div_ceil(TOUCH_SPAN as u64).div_ceil(64)
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
        let touched = vec![0u64; Self::touched_words(levels[0].len() as u64) as usize];
        let mut map = RandomMap {
            levels,
            touched,
            pending: Vec::with_capacity(PENDING),
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
        if !self.bits.is_multiple_of(64) {
            self.touch(self.levels[0].len() - 1);
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
        i < self.bits
            && (self.levels[0][(i / 64) as usize] & (1 << (i % 64)) != 0
                || self.pending.contains(&i))
    }

    /// Writes the pending takes to level 0 (each is a word's only bit).
    #[inline(never)]
    fn write_pending(&mut self) {
        let row = &mut self.levels[0];
        for &i in &self.pending {
            row[(i / 64) as usize] = 1 << (i % 64);
        }
        self.pending.clear();
    }

    /// Makes level 0's word `w` exact: writes the pending takes if one is
    /// in its pair.
    #[inline]
    fn settle(&mut self, w: usize) {
        let t = (w / TOUCH_SPAN) as u64;
        let per = 64 * TOUCH_SPAN as u64;
        if self.pending.iter().any(|&i| i / per == t) {
            self.write_pending();
        }
    }

    /// Whether word `w` of level 0 and the others of its span have no
    /// block taken (and no padding): whether they are all 0.
    #[inline]
    fn untouched(&self, w: usize) -> bool {
        let t = w / TOUCH_SPAN;
        self.touched[t / 64] & (1 << (t % 64)) == 0
    }

    /// Marks word `w` of level 0's span as touched.
    #[inline]
    fn touch(&mut self, w: usize) {
        let t = w / TOUCH_SPAN;
        self.touched[t / 64] |= 1 << (t % 64);
    }

    /// Marks block `i` taken (no-op past the end or when already taken).
    #[inline]
    pub fn take(&mut self, i: u64) {
        if i >= self.bits {
            return;
        }
        let w = (i / 64) as usize;
        if self.untouched(w) {
            // The word is known to be 0: its one bit is written later,
            // without reading it (one bit of 64 never fills it).
            if self.pending.len() == PENDING {
                self.write_pending();
            }
            self.touch(w);
            self.pending.push(i);
            self.taken += 1;
            return;
        }
        self.settle(w);
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
    pub fn next_free(&mut self, i: u64) -> Option<u64> {
        if self.full() {
            return None;
        }
        let i = i.min(self.bits - 1);
        let w = (i / 64) as usize;
        if self.untouched(w) {
            return Some(i);
        }
        self.settle(w);
        let free = !self.levels[0][w] & (!0u64 << (i % 64));
        if free != 0 {
            return Some(w as u64 * 64 + u64::from(free.trailing_zeros()));
        }
        // Past this word: every word read must be exact.
        if !self.pending.is_empty() {
            self.write_pending();
        }
        self.free_from(i).or_else(|| self.free_from(0))
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
        self.touched.fill(0);
        self.pending.clear();
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

    /// The answers (with the `touched` summary's shortcuts) are a plain
    /// bitmap's: the nearest free block at or after, wrapping.
    #[test]
    fn next_free_matches_a_plain_bitmap() {
        let mut rng = elevator_core::rng::Rng::new(7);
        for bits in [1u64, 63, 64, 65, 127, 128, 129, 1000, 8191, 8192, 9000] {
            let mut m = RandomMap::new(bits);
            let mut plain = vec![false; bits as usize];
            for round in 0..3 * bits {
                // Some takes cluster, so words and spans fill up.
                let p = if round % 2 == 0 {
                    rng.below(bits)
                } else {
                    rng.below(bits.min(200))
                };
                let want = (p..bits).chain(0..p).find(|&b| !plain[b as usize]);
                assert_eq!(m.next_free(p), want, "{bits} blocks, from {p}");
                let Some(b) = want else { break };
                m.take(b);
                plain[b as usize] = true;
                assert!(m.is_taken(b));
            }
        }
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
