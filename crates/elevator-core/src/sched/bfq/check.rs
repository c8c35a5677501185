//! BFQ's internal invariants, checked in full on demand (tests).

use super::bfqq::{NO_SLOT, Place};
use super::queues::rq_key;
use super::raise::LARGE_BURST;
use super::{Bfq, WEIGHT_SLOTS};
use crate::request::{RequestId, Requests};

impl Bfq {
    /// Check the scheduler's internal invariants, panicking on the first
    /// broken one: per-queue counts against the sort trees and FIFOs, every
    /// queued request in exactly its queue, queue places against the service
    /// trees, weight sums, the asymmetry counters, the key table and the LRU
    /// list. O(requests + queues); for tests.
    pub fn check_invariants(&self, rqs: &Requests) {
        self.wf2q.check();
        let (mut queued, mut dispatched) = (0u32, 0u32);
        let mut counts = [0u32; WEIGHT_SLOTS];
        let (mut retained, mut free) = (0usize, 0usize);
        for (h, q) in self.queues.iter().enumerate() {
            let h = h as u32;
            if q.place == Place::Free {
                free += 1;
                continue;
            }
            assert_eq!(self.table.get(q.key), Some(h), "queue {h} not in the table");
            #[cfg(any(test, debug_assertions))]
            {
                self.sort.check(&q.sort);
                self.fifo.check(&q.fifo);
            }
            assert_eq!(
                q.sort.len(),
                q.queued as usize,
                "queue {h}: sort tree length"
            );
            assert_eq!(q.fifo.len(), q.queued as usize, "queue {h}: FIFO length");
            let mut cur = q.fifo.front();
            while let Some(id) = cur {
                assert_eq!(
                    self.rq_queue[id as usize], h,
                    "request {id} in the wrong queue"
                );
                let rq = RequestId::from_raw(id);
                assert_eq!(
                    rq_key(rqs, rq),
                    q.key,
                    "request {id}: key differs from its queue's"
                );
                assert_eq!(
                    self.sort.key(id),
                    rqs[rq].sector(),
                    "request {id}: stale sort key"
                );
                cur = self.fifo.next(id);
            }
            queued += q.queued;
            dispatched += q.dispatched;
            match q.place {
                Place::Retained => {
                    retained += 1;
                    assert!(q.queued == 0 && q.dispatched == 0, "freed queue {h} in use");
                }
                Place::Idle => assert!(q.queued == 0 && q.dispatched > 0, "idle queue {h}"),
                Place::Busy => assert!(q.queued > 0, "busy queue {h} with nothing queued"),
                Place::InService => assert_eq!(self.in_service, h, "two queues in service"),
                Place::Free => {}
            }
            assert_eq!(
                q.place == Place::InService,
                self.in_service == h,
                "queue {h}: in-service mark"
            );
            let active = matches!(q.place, Place::Busy | Place::InService);
            if q.sync && active {
                assert_ne!(q.weight_slot, NO_SLOT, "active sync queue {h} not counted");
                counts[usize::from(q.weight_slot)] += 1;
            } else {
                assert_eq!(q.weight_slot, NO_SLOT, "inactive queue {h} counted");
            }
        }
        assert_eq!(counts, self.weight_counts, "asymmetry counters");
        let mask = counts
            .iter()
            .enumerate()
            .fold(0u16, |m, (i, &c)| if c > 0 { m | 1 << i } else { m });
        assert_eq!(self.weight_mask, mask, "non-zero weight counters");
        assert_eq!(queued, self.queued, "queued count");
        assert_eq!(dispatched, self.dispatched, "dispatched count");
        assert_eq!(self.lru.len(), retained, "LRU list length");
        assert_eq!(self.free.len(), free, "free slot list length");
        assert!(
            self.burst.len() < LARGE_BURST as usize,
            "burst list too long"
        );
        #[cfg(any(test, debug_assertions))]
        self.lru_links.check(&self.lru);
    }
}
