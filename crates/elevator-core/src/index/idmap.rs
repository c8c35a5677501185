//! A small map from `u32` ids to `u32` handles (an I/O context to its
//! scheduler queue), by open addressing with linear probing.
//!
//! Deterministic (a fixed multiplicative hash; no random seed, unlike
//! `std::collections::HashMap`), and allocation-free except when it grows past
//! its capacity, which doubles, so a warm map never allocates.

use super::NIL;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Empty,
    Deleted,
    Full(u32, u32),
}

/// A map from `u32` keys to `u32` values.
#[derive(Clone, Debug)]
pub struct IdMap {
    slots: Vec<Slot>,
    len: usize,
    used: usize,
}

impl Default for IdMap {
    fn default() -> IdMap {
        IdMap::new()
    }
}

impl IdMap {
    /// An empty map.
    pub fn new() -> IdMap {
        IdMap {
            slots: vec![Slot::Empty; 16],
            len: 0,
            used: 0,
        }
    }

    #[inline]
    fn home(&self, key: u32) -> usize {
        let mask = self.slots.len() - 1;
        (key.wrapping_mul(0x9E37_79B1) as usize) & mask
    }

    /// The value for `key`.
    #[inline]
    pub fn get(&self, key: u32) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            match self.slots[i] {
                Slot::Empty => return None,
                Slot::Full(k, v) if k == key => return Some(v),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Set `key` to `value`.
    pub fn insert(&mut self, key: u32, value: u32) {
        debug_assert!(value != NIL);
        if (self.used + 1) * 4 > self.slots.len() * 3 {
            self.rehash();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        let mut tomb = None;
        loop {
            match self.slots[i] {
                Slot::Empty => {
                    let at = tomb.unwrap_or(i);
                    if tomb.is_none() {
                        self.used += 1;
                    }
                    self.slots[at] = Slot::Full(key, value);
                    self.len += 1;
                    return;
                }
                Slot::Deleted if tomb.is_none() => tomb = Some(i),
                Slot::Full(k, _) if k == key => {
                    self.slots[i] = Slot::Full(key, value);
                    return;
                }
                _ => {}
            }
            i = (i + 1) & mask;
        }
    }

    /// Remove `key`, returning its value.
    pub fn remove(&mut self, key: u32) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            match self.slots[i] {
                Slot::Empty => return None,
                Slot::Full(k, v) if k == key => {
                    self.slots[i] = Slot::Deleted;
                    self.len -= 1;
                    return Some(v);
                }
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn rehash(&mut self) {
        let cap = if self.len * 2 >= self.slots.len() {
            self.slots.len() * 2
        } else {
            self.slots.len()
        };
        let old = std::mem::replace(&mut self.slots, vec![Slot::Empty; cap]);
        self.len = 0;
        self.used = 0;
        for s in old {
            if let Slot::Full(k, v) = s {
                self.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn behaves_like_a_map() {
        let mut m = IdMap::new();
        let mut model = BTreeMap::new();
        let mut rng = crate::rng::Rng::new(12345);
        for step in 0..20_000u32 {
            let key = rng.below(300) as u32;
            if step % 3 == 0 {
                assert_eq!(m.remove(key), model.remove(&key));
            } else {
                m.insert(key, step);
                model.insert(key, step);
            }
            assert_eq!(m.len(), model.len());
            assert_eq!(m.get(key), model.get(&key).copied());
        }
        for (k, v) in &model {
            assert_eq!(m.get(*k), Some(*v));
        }
        assert_eq!(m.get(u32::MAX), None);
    }
}
