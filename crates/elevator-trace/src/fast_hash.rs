//! A fast hash for the small integer keys of the readers, planner and
//! analyzer (pids, devices, sizes): one multiply per word, as rustc's
//! FxHash. Not for keys an adversary picks to collide: a hostile trace can
//! only make its own replay slower.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher of integers: rotate, xor, multiply.
#[derive(Clone, Copy, Debug, Default)]
pub struct IntHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for IntHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(SEED);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

/// A hash map with [`IntHasher`].
pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;
