//! `deadline-list`: the deadline scheduler as it was before Linux 2.5.46, with
//! each direction's requests kept in a sector-sorted linked list.
//!
//! That list was slow (Jens Axboe, LKML 2002): every new bio walked it
//! backwards from the tail to find its insertion point and a front-merge
//! candidate, O(N) per bio, and `deadline_merge` topped the kernel profile at
//! 4096 queued requests. The fix replaced the lists with red-black trees: that
//! is `mq-deadline` (`deadline.rs`).
//!
//! This scheduler is `mq-deadline`'s algorithm, tunables and defaults exactly
//! (see `deadline.rs`), over [`SortedList`] instead of a tree, so that comparing
//! the two measures the sort structure and nothing else. The list's costs:
//! - insert: walk back from the tail past every request with a larger start
//!   sector (O(N); a random stream walks half the list on average);
//! - front-merge lookup: walk back from the tail to the bio's end sector (O(N));
//! - removal, successor, predecessor: O(1); the sweep's next request is kept
//!   by the scheduler (as the 2002 code kept `next_drq`), so dispatch is O(1).
//!
//! The back-merge hash is the queue's, as it was in 2002 (`deadline_find_hash`),
//! so back merges stay O(1).
//!
//! Tunables: as `mq-deadline` (`read_expire` 500 ms, `write_expire` 5000 ms,
//! `writes_starved` 2, `fifo_batch` 16, `front_merges` 1, `prio_aging_expire`
//! 10000 ms).

use super::deadline::{Deadline, SortIndex};
use crate::index::{ListHead, ListLinks};

/// `deadline-list`: deadline over sorted linked lists.
pub type DeadlineList = Deadline<SortedList>;

impl Deadline<SortedList> {
    /// `deadline-list` with the default tunables.
    pub fn new() -> Self {
        Deadline::with_name("deadline-list")
    }
}

impl Default for Deadline<SortedList> {
    fn default() -> Self {
        Self::new()
    }
}

/// Handles kept in ascending key order in doubly linked lists; every search
/// walks backwards from the tail, as the 2002 deadline did.
#[derive(Clone, Debug)]
pub struct SortedList {
    links: ListLinks,
    keys: Vec<u64>,
}

impl SortIndex for SortedList {
    type Root = ListHead;

    fn with_capacity(capacity: usize) -> Self {
        SortedList {
            links: ListLinks::new(capacity),
            keys: vec![0; capacity],
        }
    }

    fn grow(&mut self, capacity: usize) {
        self.links.grow(capacity);
        if self.keys.len() < capacity {
            self.keys.resize(capacity, 0);
        }
    }

    fn insert(&mut self, root: &mut ListHead, id: u32, key: u64) {
        self.keys[id as usize] = key;
        // Walk back past every larger key; equal keys stay in arrival order.
        let mut cur = root.back();
        while let Some(c) = cur {
            if self.keys[c as usize] <= key {
                self.links.insert_after(root, c, id);
                return;
            }
            cur = self.links.prev(c);
        }
        self.links.push_front(root, id);
    }

    #[inline]
    fn remove(&mut self, root: &mut ListHead, id: u32) {
        self.links.remove(root, id);
    }

    fn find(&self, root: &ListHead, key: u64) -> Option<u32> {
        let first = self.lower_bound(root, key)?;
        (self.keys[first as usize] == key).then_some(first)
    }

    fn lower_bound(&self, root: &ListHead, key: u64) -> Option<u32> {
        let mut found = None;
        let mut cur = root.back();
        while let Some(c) = cur {
            if self.keys[c as usize] < key {
                break;
            }
            found = Some(c);
            cur = self.links.prev(c);
        }
        found
    }

    #[inline]
    fn next(&self, id: u32) -> Option<u32> {
        self.links.next(id)
    }

    #[inline]
    fn prev(&self, id: u32) -> Option<u32> {
        self.links.prev(id)
    }

    #[inline]
    fn key(&self, id: u32) -> u64 {
        self.keys[id as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_list_keeps_order_and_finds_leftmost() {
        let mut s = SortedList::with_capacity(8);
        let mut r = ListHead::EMPTY;
        for (id, key) in [(0, 50), (1, 10), (2, 50), (3, 30), (4, 70)] {
            s.insert(&mut r, id, key);
        }
        let mut order = vec![];
        let mut c = r.front();
        while let Some(id) = c {
            order.push(id);
            c = s.next(id);
        }
        assert_eq!(order, vec![1, 3, 0, 2, 4]);
        assert_eq!(s.find(&r, 50), Some(0));
        assert_eq!(s.find(&r, 40), None);
        assert_eq!(s.lower_bound(&r, 31), Some(0));
        assert_eq!(s.lower_bound(&r, 0), Some(1));
        assert_eq!(s.lower_bound(&r, 71), None);
        s.remove(&mut r, 0);
        assert_eq!(s.find(&r, 50), Some(2));
    }
}
