//! The map from a queue key to a queue handle: open addressing with linear
//! probing and backward-shift deletion, sized once for the most queues the
//! scheduler can hold, so lookups, inserts and removals never allocate.
//!
//! Keys are any `u64` except [`EMPTY`] (BFQ's keys use 40 bits); I/O context
//! ids are chosen by callers, so nothing here assumes they are small or dense.

/// The key of an unused slot.
pub(super) const EMPTY: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
struct Slot {
    key: u64,
    handle: u32,
}

const FREE: Slot = Slot {
    key: EMPTY,
    handle: u32::MAX,
};

/// Key → handle, at most half full.
#[derive(Clone, Debug)]
pub(super) struct QueueTable {
    slots: Vec<Slot>,
    shift: u32,
    len: usize,
}

impl QueueTable {
    /// A table for up to `entries` keys.
    pub(super) fn with_capacity(entries: usize) -> QueueTable {
        let size = (entries.max(4) * 2).next_power_of_two();
        QueueTable {
            slots: vec![FREE; size],
            shift: 64 - size.trailing_zeros(),
            len: 0,
        }
    }

    /// How many keys it may hold.
    pub(super) fn capacity(&self) -> usize {
        self.slots.len() / 2
    }

    /// Number of keys held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        // Fibonacci hashing: the top bits of the product spread any key set.
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The handle stored under `key`.
    #[inline]
    pub(super) fn get(&self, key: u64) -> Option<u32> {
        let mask = self.mask();
        let mut i = self.home(key);
        loop {
            let s = self.slots[i];
            if s.key == key {
                return Some(s.handle);
            }
            if s.key == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Store `handle` under `key`, which must not be present; the table must
    /// have room (the caller sizes it for the most queues it can hold).
    #[inline]
    pub(super) fn insert(&mut self, key: u64, handle: u32) {
        debug_assert!(key != EMPTY, "the empty key cannot be stored");
        debug_assert!(self.len < self.capacity(), "queue table full");
        let mask = self.mask();
        let mut i = self.home(key);
        while self.slots[i].key != EMPTY {
            debug_assert!(self.slots[i].key != key, "key {key:#x} stored twice");
            i = (i + 1) & mask;
        }
        self.slots[i] = Slot { key, handle };
        self.len += 1;
    }

    /// Remove `key`, returning its handle.
    pub(super) fn remove(&mut self, key: u64) -> Option<u32> {
        let mask = self.mask();
        let mut i = self.home(key);
        loop {
            let s = self.slots[i];
            if s.key == key {
                break;
            }
            if s.key == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
        let handle = self.slots[i].handle;
        // Backward shift: pull later entries of the probe run into the hole
        // when the hole lies on their probe path, so no tombstones are needed.
        let mut hole = i;
        let mut j = (i + 1) & mask;
        loop {
            let s = self.slots[j];
            if s.key == EMPTY {
                break;
            }
            let home = self.home(s.key);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = s;
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = FREE;
        self.len -= 1;
        Some(handle)
    }

    /// Every `(key, handle)` held, for rebuilding into a larger table.
    pub(super) fn entries(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.slots
            .iter()
            .filter(|s| s.key != EMPTY)
            .map(|s| (s.key, s.handle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn matches_a_hash_map_under_churn() {
        let mut t = QueueTable::with_capacity(64);
        let mut m = HashMap::new();
        let mut rng = crate::rng::Rng::new(0x1234_5678_9ABC_DEF0);
        for step in 0..20_000u32 {
            let x = rng.next_u64();
            // Few distinct keys, some colliding in the low bits, some huge.
            let key = match x % 3 {
                0 => x % 97,
                1 => (x % 50) << 32,
                _ => u64::from(u32::MAX) - x % 40,
            };
            if m.contains_key(&key) {
                assert_eq!(t.remove(key), m.remove(&key));
            } else if m.len() < t.capacity() {
                t.insert(key, step);
                m.insert(key, step);
            }
            assert_eq!(t.len(), m.len());
            if step.is_multiple_of(97) {
                for (&k, &v) in &m {
                    assert_eq!(t.get(k), Some(v));
                }
                assert_eq!(t.entries().count(), m.len());
            }
        }
        assert_eq!(t.get(12_345_678), m.get(&12_345_678).copied());
    }
}
