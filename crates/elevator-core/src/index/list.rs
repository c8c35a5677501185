//! Intrusive doubly linked lists over index handles.
//!
//! [`ListLinks`] owns one `(prev, next)` pair per handle (0..capacity); a
//! [`ListHead`] names one list threaded through them. Several lists share one
//! `ListLinks`, and each handle is on at most one of them at a time. All
//! operations are O(1) and allocation-free.

use super::NIL;

/// `prev` of a handle that is on no list.
const DETACHED: u32 = NIL - 1;

#[derive(Clone, Copy, Debug)]
struct Link {
    prev: u32,
    next: u32,
}

const FREE_LINK: Link = Link {
    prev: DETACHED,
    next: NIL,
};

/// One list: its ends and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListHead {
    head: u32,
    tail: u32,
    len: u32,
}

impl ListHead {
    /// An empty list.
    pub const EMPTY: ListHead = ListHead {
        head: NIL,
        tail: NIL,
        len: 0,
    };

    /// First handle.
    #[inline]
    pub fn front(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// Last handle.
    #[inline]
    pub fn back(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }
}

counted_root!(ListHead, "on the list");

/// The link storage shared by a set of lists.
#[derive(Clone, Debug)]
pub struct ListLinks {
    links: Vec<Link>,
}

impl ListLinks {
    /// Links for handles `0..capacity`, all detached.
    pub fn new(capacity: usize) -> ListLinks {
        ListLinks {
            links: vec![FREE_LINK; capacity],
        }
    }

    /// Number of handles.
    pub fn capacity(&self) -> usize {
        self.links.len()
    }

    /// Raise the number of handles; new ones are detached.
    pub fn grow(&mut self, capacity: usize) {
        if capacity > self.links.len() {
            self.links.resize(capacity, FREE_LINK);
        }
    }

    /// Whether `id` is on some list.
    #[inline]
    pub fn is_linked(&self, id: u32) -> bool {
        self.links[id as usize].prev != DETACHED
    }

    /// The handle after `id` on its list.
    #[inline]
    pub fn next(&self, id: u32) -> Option<u32> {
        let n = self.links[id as usize].next;
        (n != NIL).then_some(n)
    }

    /// The handle before `id` on its list.
    #[inline]
    pub fn prev(&self, id: u32) -> Option<u32> {
        let p = self.links[id as usize].prev;
        debug_assert!(p != DETACHED, "prev of detached handle {id}");
        (p != NIL).then_some(p)
    }

    /// Append `id` to `list`.
    #[inline]
    pub fn push_back(&mut self, list: &mut ListHead, id: u32) {
        debug_assert!(!self.is_linked(id), "handle {id} is already on a list");
        self.links[id as usize] = Link {
            prev: list.tail,
            next: NIL,
        };
        if list.tail == NIL {
            list.head = id;
        } else {
            self.links[list.tail as usize].next = id;
        }
        list.tail = id;
        list.len += 1;
    }

    /// Prepend `id` to `list`.
    #[inline]
    pub fn push_front(&mut self, list: &mut ListHead, id: u32) {
        debug_assert!(!self.is_linked(id), "handle {id} is already on a list");
        self.links[id as usize] = Link {
            prev: NIL,
            next: list.head,
        };
        if list.head == NIL {
            list.tail = id;
        } else {
            self.links[list.head as usize].prev = id;
        }
        list.head = id;
        list.len += 1;
    }

    /// Insert `id` right after `at` (which is on `list`).
    #[inline]
    pub fn insert_after(&mut self, list: &mut ListHead, at: u32, id: u32) {
        debug_assert!(!self.is_linked(id), "handle {id} is already on a list");
        debug_assert!(self.is_linked(at), "anchor {at} is not on a list");
        let next = self.links[at as usize].next;
        self.links[id as usize] = Link { prev: at, next };
        self.links[at as usize].next = id;
        if next == NIL {
            list.tail = id;
        } else {
            self.links[next as usize].prev = id;
        }
        list.len += 1;
    }

    /// Insert `id` right before `at` (which is on `list`).
    #[inline]
    pub fn insert_before(&mut self, list: &mut ListHead, at: u32, id: u32) {
        debug_assert!(!self.is_linked(id), "handle {id} is already on a list");
        debug_assert!(self.is_linked(at), "anchor {at} is not on a list");
        let prev = self.links[at as usize].prev;
        self.links[id as usize] = Link { prev, next: at };
        self.links[at as usize].prev = id;
        if prev == NIL {
            list.head = id;
        } else {
            self.links[prev as usize].next = id;
        }
        list.len += 1;
    }

    /// Remove `id` from `list` (it must be on it).
    #[inline]
    pub fn remove(&mut self, list: &mut ListHead, id: u32) {
        debug_assert!(self.is_linked(id), "handle {id} is not on a list");
        let Link { prev, next } = self.links[id as usize];
        if prev == NIL {
            list.head = next;
        } else {
            self.links[prev as usize].next = next;
        }
        if next == NIL {
            list.tail = prev;
        } else {
            self.links[next as usize].prev = prev;
        }
        list.len -= 1;
        self.links[id as usize] = FREE_LINK;
    }

    /// Remove and return the first handle of `list`.
    #[inline]
    pub fn pop_front(&mut self, list: &mut ListHead) -> Option<u32> {
        let id = list.front()?;
        self.remove(list, id);
        Some(id)
    }

    /// Walk `list` front to back, checking its links and length (tests and
    /// debug builds).
    #[cfg(any(test, debug_assertions))]
    pub fn check(&self, list: &ListHead) {
        let mut n = 0u32;
        let mut prev = NIL;
        let mut cur = list.head;
        while cur != NIL {
            assert_eq!(
                self.links[cur as usize].prev, prev,
                "bad prev link at {cur}"
            );
            prev = cur;
            cur = self.links[cur as usize].next;
            n += 1;
            assert!(n <= list.len, "list longer than its length {}", list.len);
        }
        assert_eq!(prev, list.tail, "tail does not end the walk");
        assert_eq!(n, list.len, "list length mismatch");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(l: &ListLinks, h: &ListHead) -> Vec<u32> {
        let mut v = vec![];
        let mut c = h.front();
        while let Some(id) = c {
            v.push(id);
            c = l.next(id);
        }
        v
    }

    #[test]
    fn push_remove_insert() {
        let mut l = ListLinks::new(8);
        let mut a = ListHead::EMPTY;
        let mut b = ListHead::EMPTY;
        l.push_back(&mut a, 1);
        l.push_back(&mut a, 2);
        l.push_front(&mut a, 0);
        l.push_back(&mut b, 5);
        l.insert_after(&mut a, 2, 3);
        l.insert_before(&mut a, 0, 4);
        assert_eq!(collect(&l, &a), vec![4, 0, 1, 2, 3]);
        l.remove(&mut a, 4);
        l.remove(&mut a, 3);
        l.remove(&mut a, 1);
        assert_eq!(collect(&l, &a), vec![0, 2]);
        assert_eq!(a.back(), Some(2));
        assert!(!l.is_linked(1));
        assert_eq!(l.pop_front(&mut a), Some(0));
        assert_eq!(l.pop_front(&mut a), Some(2));
        assert_eq!(l.pop_front(&mut a), None);
        assert!(a.is_empty());
        l.check(&a);
        l.check(&b);
        assert_eq!(collect(&l, &b), vec![5]);
        l.grow(16);
        l.push_back(&mut b, 15);
        assert_eq!(collect(&l, &b), vec![5, 15]);
    }
}
