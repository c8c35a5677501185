//! The queue's structural invariants, checked in full on demand (tests, and
//! debugging with a seed that reproduces a problem).

use super::Queue;
use crate::bio::{Op, SECTOR_SHIFT};
use crate::index::NIL;
use crate::limits::Limits;
use crate::request::{RequestId, RqState};
use crate::sched::Scheduler;

impl<S: Scheduler> Queue<S> {
    /// Check every invariant of the queue, panicking with a message that names
    /// the broken one:
    /// - tags balance: requests in use = plugged + queued + bypass + in flight;
    /// - each request's bios are contiguous, of its length, and counted right;
    /// - no request exceeds `max_sectors` (for its op), `max_segments`, or
    ///   crosses a chunk boundary;
    /// - hashed requests are queued, mergeable, and findable by their end;
    /// - `last_merge` names a queued request;
    /// - every bio entry in use belongs to exactly one live request.
    ///
    /// O(requests + bios); meant for tests, not the hot path.
    pub fn check_invariants(&self) {
        let mut counts = [0u32; 5];
        let mut bios_seen = 0u32;
        for raw in 0..self.rqs.slab.high_water() {
            let id = RequestId::from_raw(raw);
            let rq = &self.rqs[id];
            let state_index = match rq.state {
                RqState::Free => continue,
                RqState::Plugged => 0,
                RqState::Queued => 1,
                RqState::Bypass => 2,
                RqState::InFlight => 3,
            };
            counts[state_index] += 1;
            let mut cur = rq.bio_head;
            let mut sector = rq.sector;
            let mut n = 0u32;
            let mut last = NIL;
            while cur != NIL {
                let b = &self.bios[cur];
                assert_eq!(
                    b.sector, sector,
                    "request {raw}: bio {n} starts at {} not {sector} (bios not contiguous)",
                    b.sector
                );
                sector += u64::from(b.len >> SECTOR_SHIFT);
                n += 1;
                last = cur;
                cur = b.next;
            }
            assert_eq!(last, rq.bio_tail, "request {raw}: bio tail mismatch");
            assert_eq!(n, rq.nr_bios, "request {raw}: nr_bios mismatch");
            assert_eq!(
                sector,
                rq.end(),
                "request {raw}: bios do not add up to its length"
            );
            bios_seen += n;
            if rq.op != Op::Flush {
                // Against the hardware limit: max_sectors_kb may have been
                // lowered after the request was built.
                let hw = Limits {
                    max_sectors: self.max_hw_sectors,
                    ..self.limits
                };
                assert!(
                    rq.sectors <= hw.max_sectors_for(rq.op),
                    "request {raw}: {} sectors exceed the limit",
                    rq.sectors
                );
            }
            assert!(
                rq.segments <= self.limits.max_segments,
                "request {raw}: {} segments exceed max_segments",
                rq.segments
            );
            assert!(
                !self.limits.crosses_chunk(rq.sector, u64::from(rq.sectors)),
                "request {raw} crosses a chunk boundary"
            );
            if rq.hashed {
                assert_eq!(
                    rq.state,
                    RqState::Queued,
                    "request {raw} hashed but not queued"
                );
                assert!(rq.mergeable(), "request {raw} hashed but unmergeable");
                assert!(
                    self.hash.contains(&self.rqs, id),
                    "request {raw} marked hashed but not in its bucket"
                );
            }
        }
        let [plugged, queued, bypass, in_flight, _] = counts;
        assert_eq!(plugged as usize, self.plug.len(), "plug count mismatch");
        assert_eq!(bypass as usize, self.bypass.len(), "bypass count mismatch");
        assert_eq!(in_flight, self.in_flight, "in-flight count mismatch");
        assert_eq!(
            queued,
            self.sched.queued(),
            "scheduler holds {} but {queued} are queued",
            self.sched.queued()
        );
        assert_eq!(
            self.rqs.in_use(),
            plugged + queued + bypass + in_flight,
            "tags do not balance"
        );
        assert_eq!(bios_seen, self.bios.used(), "bio entries leaked or shared");
        if let Some(lm) = self.last_merge {
            assert_eq!(
                self.rqs[lm].state,
                RqState::Queued,
                "last_merge names a request not queued"
            );
        }
        for &id in &self.plug {
            assert_eq!(
                self.rqs[id].state,
                RqState::Plugged,
                "plug holds a request not plugged"
            );
        }
        for &id in &self.bypass {
            assert_eq!(
                self.rqs[id].state,
                RqState::Bypass,
                "bypass list holds a request not on it"
            );
        }
    }
}
