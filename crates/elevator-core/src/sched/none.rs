//! `none`: first in, first out.
//!
//! Linux's `none` is the absence of an elevator: requests go to the hardware
//! queue in the order they were made. This scheduler keeps one FIFO of queued
//! requests and dispatches from its head.
//!
//! Merging follows Linux without an elevator: no `last_merge` cache, no
//! back-merge hash, no front-merge lookup, no request-into-request merges.
//! Instead a bio is tried against the most recently queued requests, newest
//! first, at most 8 of them (Linux `blk_bio_list_merge` over the software
//! queue); the first one that the bio fits at either end takes it, and a
//! candidate that fails a merge limit ends the scan. Plug merges still happen
//! in the queue. `nomerges=2` turns the scan off.
//!
//! Tunables: none.

use super::{MergeKind, MergeLookup, SchedDispatch, Scheduler};
use crate::bio::Nanos;
use crate::index::{ListHead, ListLinks};
use crate::request::{RequestId, Requests};
use crate::tunable::{Tunable, TunableSpec, specs};

/// How many recent requests a bio is tried against (Linux: 8).
pub const SCAN_DEPTH: u8 = 8;

/// `none` has no tunables: an empty table, so that reading or setting a name
/// says which names exist (none).
const TABLE: [Tunable<Noop>; 0] = [];

/// `none`'s tunables: none.
const TUNABLES: [TunableSpec; 0] = specs(&TABLE);

/// The `none` scheduler: a FIFO.
#[derive(Clone, Debug)]
pub struct Noop {
    links: ListLinks,
    fifo: ListHead,
}

impl Noop {
    /// An empty FIFO.
    pub fn new() -> Noop {
        Noop {
            links: ListLinks::new(0),
            fifo: ListHead::EMPTY,
        }
    }
}

impl Default for Noop {
    fn default() -> Noop {
        Noop::new()
    }
}

impl Scheduler for Noop {
    fn name(&self) -> &'static str {
        "none"
    }

    fn resize(&mut self, nr_requests: u32) {
        self.links.grow(nr_requests as usize);
    }

    scan_recent_merges!(fifo, links);

    #[inline]
    fn insert(&mut self, _rqs: &Requests, rq: RequestId, _now: Nanos) {
        self.links.push_back(&mut self.fifo, rq.raw());
    }

    #[inline]
    fn bio_merged(&mut self, _rqs: &Requests, _rq: RequestId, _kind: MergeKind) {}

    fn requests_merged(&mut self, _: &Requests, _: RequestId, gone: RequestId, queued: bool) {
        if queued {
            self.links.remove(&mut self.fifo, gone.raw());
        }
    }

    #[inline]
    fn dispatch(&mut self, _rqs: &Requests, _now: Nanos) -> SchedDispatch {
        match self.links.pop_front(&mut self.fifo) {
            Some(id) => SchedDispatch::Request(RequestId::from_raw(id)),
            None => SchedDispatch::Nothing,
        }
    }

    #[inline]
    fn queued(&self) -> u32 {
        self.fifo.len() as u32
    }

    table_tunables!(lookup_only: TABLE, TUNABLES);
}
