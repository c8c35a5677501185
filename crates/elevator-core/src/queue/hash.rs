//! The back-merge hash: mergeable queued requests keyed by their end sector, so
//! that a bio starting where a request ends finds it in O(1).
//!
//! Chains are singly linked through the requests' own `hash_next`, newest
//! first: adding touches only the bucket and the request itself, and with at
//! least twice as many buckets as requests a request being unhashed is almost
//! always its chain's head. Linux
//! uses 64 buckets whatever the queue depth (the 2002 discussion of deadline's
//! rbtree saw its chains grow long at 4096 requests); here the table has one bucket per request tag, rounded up
//! to a power of two. A request is rehashed eagerly when its end moves and
//! removed when it stops being mergeable, so lookups never meet stale entries.

use crate::bio::Sector;
use crate::index::NIL;
use crate::request::{RequestId, Requests};

/// The back-merge hash table.
#[derive(Clone, Debug)]
pub(crate) struct MergeHash {
    heads: Vec<u32>,
    shift: u32,
}

impl MergeHash {
    /// A table sized for `nr_requests` requests.
    pub fn new(nr_requests: u32) -> MergeHash {
        let buckets = (2 * nr_requests).next_power_of_two();
        MergeHash {
            heads: vec![NIL; buckets as usize],
            shift: 64 - buckets.trailing_zeros(),
        }
    }

    #[inline]
    fn bucket(&self, end: Sector) -> usize {
        // Fibonacci hashing: the top bits of a multiplicative hash.
        (end.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Add `id` under its current end sector.
    #[inline]
    pub fn insert(&mut self, rqs: &mut Requests, id: RequestId) {
        let b = self.bucket(rqs[id].end());
        let rq = rqs.get_mut(id);
        debug_assert!(!rq.hashed, "request {} hashed twice", id.raw());
        rq.hashed = true;
        rq.hash_next = self.heads[b];
        self.heads[b] = id.raw();
    }

    /// Remove `id` if it is hashed. `end` is the end sector it was hashed
    /// under (callers that just moved the end pass the old one).
    #[inline]
    pub fn remove_at(&mut self, rqs: &mut Requests, id: RequestId, end: Sector) {
        let rq = rqs.get_mut(id);
        if !rq.hashed {
            return;
        }
        rq.hashed = false;
        let next = rq.hash_next;
        rq.hash_next = NIL;
        let b = self.bucket(end);
        if self.heads[b] == id.raw() {
            self.heads[b] = next;
            return;
        }
        let mut cur = self.heads[b];
        while cur != NIL {
            let c = rqs.get_mut(RequestId::from_raw(cur));
            if c.hash_next == id.raw() {
                c.hash_next = next;
                return;
            }
            cur = c.hash_next;
        }
        debug_assert!(false, "hashed request {} not on its chain", id.raw());
    }

    /// Remove `id` if it is hashed, under its current end sector.
    #[inline]
    pub fn remove(&mut self, rqs: &mut Requests, id: RequestId) {
        let end = rqs[id].end();
        self.remove_at(rqs, id, end);
    }

    /// The first hashed request ending at `end`.
    #[inline]
    pub fn find(&self, rqs: &Requests, end: Sector) -> Option<RequestId> {
        let mut cur = self.heads[self.bucket(end)];
        while cur != NIL {
            let id = RequestId::from_raw(cur);
            let rq = &rqs[id];
            if rq.end() == end {
                return Some(id);
            }
            cur = rq.hash_next;
        }
        None
    }

    /// Whether `id` is on the chain of its current end sector.
    pub fn contains(&self, rqs: &Requests, id: RequestId) -> bool {
        let mut cur = self.heads[self.bucket(rqs[id].end())];
        while cur != NIL {
            if cur == id.raw() {
                return true;
            }
            cur = rqs[RequestId::from_raw(cur)].hash_next;
        }
        false
    }
}
