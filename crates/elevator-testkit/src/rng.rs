//! The tests' seeded randomness: [`elevator_core::rng::Rng`] (the one RNG
//! of the project), with the draws tests make of it.

pub use elevator_core::rng::{Rng, splitmix64};

/// A seeded generator for tests: the same seed gives the same inputs on
/// every run.
#[derive(Clone, Debug)]
pub struct TestRng(Rng);

impl TestRng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> TestRng {
        TestRng(Rng::new(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }

    /// A uniform index in `0..n` (`n > 0`).
    pub fn index(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }

    /// True with probability `percent` %.
    pub fn chance(&mut self, percent: u8) -> bool {
        self.0.percent(percent)
    }

    /// One of `items` (not empty), uniformly.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// Fill `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_repeats_its_draws() {
        let (mut a, mut b) = (TestRng::new(9), TestRng::new(9));
        let (mut x, mut y) = ([0u8; 13], [0u8; 13]);
        a.fill(&mut x);
        b.fill(&mut y);
        assert_eq!(x, y);
        assert_eq!(a.pick(&[1, 2, 3]), b.pick(&[1, 2, 3]));
        assert!(a.index(5) < 5);
    }
}
