//! PLACEHOLDER for `bfq`: a FIFO until the real scheduler lands.

use super::{MergeKind, MergeLookup, SchedDispatch, Scheduler};
use crate::bio::Nanos;
use crate::error::TunableError;
use crate::index::{ListHead, ListLinks};
use crate::request::{RequestId, Requests};
use crate::tunable::{TunableSpec, find_spec};

/// `bfq` (placeholder).
#[derive(Clone, Debug)]
pub struct Bfq {
    links: ListLinks,
    fifo: ListHead,
}

impl Bfq {
    /// A new scheduler.
    pub fn new() -> Bfq {
        Bfq {
            links: ListLinks::new(0),
            fifo: ListHead::EMPTY,
        }
    }
}

impl Default for Bfq {
    fn default() -> Bfq {
        Bfq::new()
    }
}

impl Scheduler for Bfq {
    fn name(&self) -> &'static str {
        "bfq"
    }
    fn resize(&mut self, nr_requests: u32) {
        self.links.grow(nr_requests as usize);
    }
    fn merge_lookup(&self) -> MergeLookup {
        MergeLookup::ScanRecent(0)
    }
    fn insert(&mut self, _rqs: &Requests, rq: RequestId, _now: Nanos) {
        self.links.push_back(&mut self.fifo, rq.raw());
    }
    fn bio_merged(&mut self, _rqs: &Requests, _rq: RequestId, _kind: MergeKind) {}
    fn requests_merged(&mut self, _: &Requests, _: RequestId, gone: RequestId, queued: bool) {
        if queued {
            self.links.remove(&mut self.fifo, gone.raw());
        }
    }
    fn dispatch(&mut self, _rqs: &Requests, _now: Nanos) -> SchedDispatch {
        match self.links.pop_front(&mut self.fifo) {
            Some(id) => SchedDispatch::Request(RequestId::from_raw(id)),
            None => SchedDispatch::Nothing,
        }
    }
    fn has_work(&self) -> bool {
        !self.fifo.is_empty()
    }
    fn queued(&self) -> u32 {
        self.fifo.len() as u32
    }
    fn tunables(&self) -> &'static [TunableSpec] {
        &[]
    }
    fn get_tunable(&self, name: &str) -> Result<u64, TunableError> {
        find_spec(&[], "bfq", name).map(|s| s.default)
    }
    fn set_tunable(&mut self, name: &str, _value: u64) -> Result<(), TunableError> {
        find_spec(&[], "bfq", name).map(|_| ())
    }
}
