//! Merging: which bio may join which request, and which requests may join
//! each other, by the rules of Linux's blk-merge.
//!
//! - A bio may merge into a request if both are mergeable (not FLUSH or
//!   WRITE_ZEROES, no FUA / PREFLUSH / NOMERGE, the request not dispatched),
//!   they have the same operation and priority, the scheduler allows it, and
//!   the bio starts where the request ends (back) or ends where it starts
//!   (front).
//! - The merged request must keep `max_sectors` (per operation),
//!   `max_segments` and chunk boundaries. A merge that would break one fails
//!   and marks the request NOMERGE for good (clearing `last_merge` if it
//!   pointed there).
//! - Lookup order: the most recent plugged request; then, with an elevator,
//!   `last_merge`; (stop here if `nomerges=1`) the back-merge hash by the
//!   bio's start; the scheduler's front-merge lookup by the bio's end. Without
//!   an elevator (`none`), the most recent queued requests, newest first.
//! - After a bio merge through the elevator: a back merge tries to absorb the
//!   request's sort successor, a front merge tries to merge the request into
//!   its sort predecessor.
//! - When a request is inserted: (unless `nomerges=2`) try merging it onto
//!   `last_merge`; (unless `nomerges=1`) repeatedly onto the hashed request
//!   ending where it starts.

use super::Queue;
use crate::bio::{Bio, BioFlags};
use crate::index::NIL;
use crate::request::{BioSlot, Request, RequestId, RqState};
use crate::sched::{MergeKind, MergeLookup, Scheduler};
use crate::stats::QueueStats;
use crate::trace::TraceAction;

/// The result of trying to merge a bio.
pub(super) enum BioMerge {
    /// The bio joined a request.
    Merged(MergeKind),
    /// It did not. `insert_merge_futile`: the lookups already made prove an
    /// insert-time merge of a request made from this bio alone would find
    /// nothing, so it may be skipped.
    NotMerged { insert_merge_futile: bool },
}

/// Which end of `rq` `bio` is adjacent to (Linux `blk_try_merge`).
#[inline]
fn adjacency(rq: &Request, bio: &Bio) -> Option<MergeKind> {
    if rq.end() == bio.sector {
        Some(MergeKind::Back)
    } else if rq.sector == bio.end() {
        Some(MergeKind::Front)
    } else {
        None
    }
}

impl<S: Scheduler> Queue<S> {
    /// Linux `blk_rq_merge_ok`, for a bio already known to be mergeable.
    #[inline]
    fn merge_ok(&self, rq: RequestId, bio: &Bio) -> bool {
        let r = &self.rqs[rq];
        r.mergeable() && r.op == bio.op && r.prio == bio.prio
    }

    /// Whether `bio` fits into `rq` within the limits.
    #[inline]
    fn bio_fits(&self, rq: RequestId, bio: &Bio) -> bool {
        let r = &self.rqs[rq];
        let sectors = u64::from(r.sectors) + u64::from(bio.sectors());
        let segments = u32::from(r.segments) + self.limits.segments_for(bio.op, bio.len);
        sectors <= u64::from(self.limits.max_sectors_for(r.op))
            && segments <= u32::from(self.limits.max_segments)
            && !self.limits.crosses_chunk(r.sector.min(bio.sector), sectors)
    }

    /// A merge into `rq` would break a limit: never try it again.
    fn mark_nomerge(&mut self, rq: RequestId) {
        self.rqs.get_mut(rq).flags |= BioFlags::NOMERGE;
        self.hash.remove(&mut self.rqs, rq);
        if self.last_merge == Some(rq) {
            self.last_merge = None;
        }
        self.stats.merge_limit_hits += 1;
    }

    /// Put `rq` in the back-merge hash if it belongs there.
    #[inline]
    fn rehash(&mut self, rq: RequestId) {
        let r = &self.rqs[rq];
        if self.nomerges == 0 && r.state == RqState::Queued && r.mergeable() && !r.hashed {
            self.hash.insert(&mut self.rqs, rq);
        }
    }

    /// Add `bio` to `rq` at `kind`'s end if the limits allow (Linux
    /// `bio_attempt_back_merge` / `bio_attempt_front_merge`).
    fn attempt_bio(&mut self, rq: RequestId, bio: &Bio, kind: MergeKind) -> bool {
        if !self.bio_fits(rq, bio) {
            self.mark_nomerge(rq);
            return false;
        }
        let Some(b) = self.bios.alloc(BioSlot {
            token: bio.token,
            sector: bio.sector,
            len: bio.len,
            offset: 0,
            next: NIL,
            parent: NIL,
        }) else {
            // The caller checked for a free entry; nothing changed.
            return false;
        };
        if kind == MergeKind::Back {
            // The end moves: take it out of the hash under the old end.
            self.hash.remove(&mut self.rqs, rq);
        }
        let segments = self.limits.segments_for(bio.op, bio.len) as u16;
        self.stats.disk[QueueStats::disk_index(bio.op)].merges += 1;
        let action = match kind {
            MergeKind::Back => TraceAction::BackMerge,
            MergeKind::Front => TraceAction::FrontMerge,
        };
        self.trace_bio(action, bio, self.trace.now());
        let r = self.rqs.get_mut(rq);
        r.sectors += bio.sectors();
        r.segments += segments;
        r.nr_bios += 1;
        match kind {
            MergeKind::Back => {
                let tail = r.bio_tail;
                r.bio_tail = b;
                self.bios[tail].next = b;
                self.stats.back_merges += 1;
            }
            MergeKind::Front => {
                self.bios[b].next = r.bio_head;
                r.bio_head = b;
                r.sector = bio.sector;
                self.stats.front_merges += 1;
            }
        }
        true
    }

    /// Try to merge `bio` into an existing request.
    pub(super) fn bio_merge(&mut self, bio: &Bio) -> BioMerge {
        if self.plugged
            && let Some(&last) = self.plug.last()
            && self.merge_ok(last, bio)
            && let Some(kind) = adjacency(&self.rqs[last], bio)
            && self.attempt_bio(last, bio, kind)
        {
            self.stats.plug_merges += 1;
            return BioMerge::Merged(kind);
        }
        match self.sched.merge_lookup() {
            MergeLookup::Elevator => self.elevator_merge(bio),
            MergeLookup::ScanRecent(depth) => self.scan_merge(bio, depth),
        }
    }

    /// The elevator lookup (Linux `elv_merge` and `blk_mq_sched_try_merge`).
    fn elevator_merge(&mut self, bio: &Bio) -> BioMerge {
        let mut candidate = None;
        if let Some(lm) = self.last_merge
            && self.merge_ok(lm, bio)
            && self.sched.allow_bio_merge(&self.rqs, lm, bio)
            && let Some(kind) = adjacency(&self.rqs[lm], bio)
        {
            candidate = Some((lm, kind));
        }
        // With nomerges=1 an insert merge repeats the last_merge try; with 0 it
        // repeats the hash lookup, once the lookup below has run.
        let mut insert_merge_futile = self.nomerges == 1;
        if candidate.is_none() && self.nomerges == 0 {
            insert_merge_futile = true;
            if let Some(rq) = self.hash.find(&self.rqs, bio.sector)
                && self.merge_ok(rq, bio)
                && self.sched.allow_bio_merge(&self.rqs, rq, bio)
            {
                candidate = Some((rq, MergeKind::Back));
            } else if let Some(rq) = self.sched.front_merge_candidate(&self.rqs, bio)
                && self.merge_ok(rq, bio)
                && self.sched.allow_bio_merge(&self.rqs, rq, bio)
            {
                candidate = Some((rq, MergeKind::Front));
            }
        }
        let Some((rq, kind)) = candidate else {
            return BioMerge::NotMerged {
                insert_merge_futile,
            };
        };
        if !self.attempt_bio(rq, bio, kind) {
            // A limit failure changed what an insert merge might find.
            return BioMerge::NotMerged {
                insert_merge_futile: false,
            };
        }
        let neighbour_merged = match kind {
            MergeKind::Back => self
                .sched
                .next_request(&self.rqs, rq)
                .is_some_and(|next| self.attempt_request_merge(rq, next, true)),
            MergeKind::Front => self
                .sched
                .prev_request(&self.rqs, rq)
                .is_some_and(|prev| self.attempt_request_merge(prev, rq, true)),
        };
        if !neighbour_merged {
            if kind == MergeKind::Back {
                self.rehash(rq);
            }
            self.sched.bio_merged(&self.rqs, rq, kind);
            self.last_merge = Some(rq);
        }
        BioMerge::Merged(kind)
    }

    /// The scan without an elevator (Linux `blk_bio_list_merge`).
    fn scan_merge(&mut self, bio: &Bio, depth: u8) -> BioMerge {
        let mut cur = self.sched.newest();
        let mut left = depth;
        while let Some(rq) = cur {
            if left == 0 {
                break;
            }
            left -= 1;
            if self.merge_ok(rq, bio)
                && let Some(kind) = adjacency(&self.rqs[rq], bio)
            {
                if self.sched.allow_bio_merge(&self.rqs, rq, bio) && self.attempt_bio(rq, bio, kind)
                {
                    return BioMerge::Merged(kind);
                }
                break;
            }
            cur = self.sched.older(rq);
        }
        BioMerge::NotMerged {
            insert_merge_futile: true,
        }
    }

    /// Merge request `next` onto the end of `into` if allowed (Linux
    /// `attempt_merge`). `next_queued`: the scheduler holds `next`. A failure
    /// here marks nothing.
    pub(super) fn attempt_request_merge(
        &mut self,
        into: RequestId,
        next: RequestId,
        next_queued: bool,
    ) -> bool {
        let (a, b) = (&self.rqs[into], &self.rqs[next]);
        if into == next
            || !a.mergeable()
            || !b.mergeable()
            || a.op != b.op
            || a.prio != b.prio
            || a.end() != b.sector
        {
            return false;
        }
        let sectors = u64::from(a.sectors) + u64::from(b.sectors);
        let segments = u32::from(a.segments) + u32::from(b.segments);
        if sectors > u64::from(self.limits.max_sectors_for(a.op))
            || segments > u32::from(self.limits.max_segments)
            || self.limits.crosses_chunk(a.sector, sectors)
            || !self.sched.allow_request_merge(&self.rqs, into, next)
        {
            return false;
        }
        let b = *b;
        self.trace_rq(TraceAction::RqMerge, next, self.trace.now(), 0);
        self.hash.remove(&mut self.rqs, into);
        self.hash.remove(&mut self.rqs, next);
        let a = self.rqs.get_mut(into);
        let tail = a.bio_tail;
        a.bio_tail = b.bio_tail;
        a.sectors += b.sectors;
        a.segments += b.segments;
        a.nr_bios += b.nr_bios;
        a.alloc_time = a.alloc_time.min(b.alloc_time);
        self.bios[tail].next = b.bio_head;
        self.sched
            .requests_merged(&self.rqs, into, next, next_queued);
        let gone = self.rqs.get_mut(next);
        gone.bio_head = NIL;
        gone.bio_tail = NIL;
        gone.nr_bios = 0;
        self.rqs.free(next);
        self.last_merge = Some(into);
        self.rehash(into);
        self.stats.request_merges += 1;
        self.stats.disk[QueueStats::disk_index(self.rqs[into].op)].merges += 1;
        true
    }

    /// Insert-time merge of a request not yet given to the scheduler (Linux
    /// `elv_attempt_insert_merge`). Returns whether `id` merged away.
    pub(super) fn insert_merge(&mut self, id: RequestId) -> bool {
        if let Some(lm) = self.last_merge
            && self.attempt_request_merge(lm, id, false)
        {
            return true;
        }
        if self.nomerges != 0 {
            return false;
        }
        let mut rq = id;
        let mut queued = false;
        let mut merged = false;
        while let Some(c) = self.hash.find(&self.rqs, self.rqs[rq].sector) {
            if !self.attempt_request_merge(c, rq, queued) {
                break;
            }
            merged = true;
            rq = c;
            queued = true;
        }
        merged
    }
}
