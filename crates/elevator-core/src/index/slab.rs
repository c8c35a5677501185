//! A bounded slab: values stored in a `Vec` and named by `u32` handles, with a
//! free list of released handles.
//!
//! The slab preallocates `initial` entries and may grow to `limit`; growth is a
//! warm-up cost only (a `Vec` push within reserved capacity once warm). Freed
//! handles are reused last-in first-out, which keeps hot entries in cache.

/// A bounded store of `T` named by `u32` handles.
#[derive(Clone, Debug)]
pub struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
    limit: u32,
    used: u32,
}

impl<T: Clone> Slab<T> {
    /// A slab that reserves `initial` entries and may hold up to `limit`.
    pub fn new(initial: u32, limit: u32) -> Slab<T> {
        let initial = initial.min(limit);
        Slab {
            items: Vec::with_capacity(initial as usize),
            free: Vec::with_capacity(initial as usize),
            limit,
            used: 0,
        }
    }

    /// Store `value`; `None` when the slab holds `limit` values.
    #[inline]
    pub fn alloc(&mut self, value: T) -> Option<u32> {
        if let Some(id) = self.free.pop() {
            self.items[id as usize] = value;
            self.used += 1;
            return Some(id);
        }
        if self.items.len() as u32 >= self.limit {
            return None;
        }
        let id = self.items.len() as u32;
        self.items.push(value);
        self.used += 1;
        Some(id)
    }

    /// Release `id`. Its value stays readable until reused; callers must not
    /// free a handle twice (checked in debug builds by the owners' invariants).
    #[inline]
    pub fn free(&mut self, id: u32) {
        debug_assert!(
            (id as usize) < self.items.len(),
            "freeing unknown handle {id}"
        );
        debug_assert!(self.used > 0, "freeing handle {id} from an empty slab");
        self.free.push(id);
        self.used -= 1;
    }

    /// Number of values held.
    #[inline]
    pub fn used(&self) -> u32 {
        self.used
    }

    /// Number of further values it can take.
    #[inline]
    pub fn available(&self) -> u32 {
        self.limit - self.used
    }

    /// The most it can hold.
    #[inline]
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Change the limit. Only raising it, or lowering it to at least the
    /// number of entries ever allocated, is possible; returns whether it took.
    pub fn set_limit(&mut self, limit: u32) -> bool {
        if (limit as usize) < self.items.len() {
            return false;
        }
        self.limit = limit;
        true
    }

    /// Reserve memory for `n` entries in all (a warm-up step).
    pub fn reserve_total(&mut self, n: u32) {
        let n = n.min(self.limit) as usize;
        if n > self.items.len() {
            self.items.reserve(n - self.items.len());
            self.free.reserve(n.saturating_sub(self.free.len()));
        }
    }

    /// Number of entries ever allocated (the high-water mark).
    #[inline]
    pub fn high_water(&self) -> u32 {
        self.items.len() as u32
    }
}

impl<T> std::ops::Index<u32> for Slab<T> {
    type Output = T;
    #[inline]
    fn index(&self, id: u32) -> &T {
        &self.items[id as usize]
    }
}

impl<T> std::ops::IndexMut<u32> for Slab<T> {
    #[inline]
    fn index_mut(&mut self, id: u32) -> &mut T {
        &mut self.items[id as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_reused() {
        let mut s: Slab<u64> = Slab::new(2, 3);
        let a = s.alloc(10).unwrap();
        let b = s.alloc(11).unwrap();
        let c = s.alloc(12).unwrap();
        assert_eq!(s.alloc(13), None);
        assert_eq!(s.available(), 0);
        s.free(b);
        assert_eq!(s.alloc(14), Some(b));
        assert_eq!((s[a], s[b], s[c]), (10, 14, 12));
        assert!(!s.set_limit(2));
        assert!(s.set_limit(5));
        assert_eq!(s.available(), 2);
    }
}
