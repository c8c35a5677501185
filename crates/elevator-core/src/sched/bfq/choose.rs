//! Which request the queue in service dispatches next.
//!
//! Inside the queue in service, the next request is the better of the two
//! around the head position (the end of the last dispatched request), by
//! CFQ/BFQ's rule: sync before async, META before the rest, then the smaller
//! distance, where a request ahead counts its distance, one behind within
//! `back_seek_max` counts its distance × `back_seek_penalty`, and one further
//! behind only wins when both are (then the lower sector). Once per service
//! slot, at its first dispatch, an expired FIFO head is served first.

use super::Bfq;
use crate::bio::{BioFlags, Nanos, Sector};
use crate::request::{RequestId, Requests};

impl Bfq {
    /// CFQ/BFQ's choice between two queued requests of one queue, from head
    /// position `head`.
    fn choose_req(&self, rqs: &Requests, a: u32, b: u32, head: Sector) -> u32 {
        if a == b {
            return a;
        }
        let (ra, rb) = (&rqs[RequestId::from_raw(a)], &rqs[RequestId::from_raw(b)]);
        if ra.is_sync() != rb.is_sync() {
            return if ra.is_sync() { a } else { b };
        }
        let (ma, mb) = (
            ra.flags().contains(BioFlags::META),
            rb.flags().contains(BioFlags::META),
        );
        if ma != mb {
            return if ma { a } else { b };
        }
        let back_max = self.back_seek_max.saturating_mul(2);
        let distance = |s: Sector| -> Option<u64> {
            if s >= head {
                Some(s - head)
            } else if head - s <= back_max {
                Some((head - s).saturating_mul(self.back_seek_penalty))
            } else {
                None
            }
        };
        let (sa, sb) = (ra.sector(), rb.sector());
        match (distance(sa), distance(sb)) {
            (Some(x), Some(y)) => {
                if x <= y {
                    a
                } else {
                    b
                }
            }
            (Some(_), None) => a,
            (None, Some(_)) => b,
            (None, None) => {
                if sa <= sb {
                    a
                } else {
                    b
                }
            }
        }
    }

    /// The request in-service queue `h` should dispatch next.
    pub(super) fn choose(&mut self, rqs: &Requests, h: u32, now: Nanos) -> u32 {
        let q = &mut self.queues[h as usize];
        if !q.fifo_checked {
            q.fifo_checked = true;
            if let Some(f) = q.fifo.front()
                && now >= self.fifo_time[f as usize]
            {
                return f;
            }
        }
        self.nearest(rqs, h)
    }

    /// The request of queue `h` nearest the head position (by the rule
    /// above, FIFO aside).
    pub(super) fn nearest(&self, rqs: &Requests, h: u32) -> u32 {
        let q = &self.queues[h as usize];
        let head = self.last_pos;
        let ahead = self.sort.lower_bound(&q.sort, head);
        let behind = match ahead {
            Some(a) => self.sort.prev(a),
            None => self.sort.last(&q.sort),
        };
        // Nothing ahead: the sweep would wrap to the lowest sector.
        let ahead = ahead.or_else(|| self.sort.first(&q.sort));
        match (ahead, behind) {
            (Some(a), Some(b)) => self.choose_req(rqs, a, b, head),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => unreachable!("choosing from an empty queue"),
        }
    }
}
