//! The queues: which one a request or bio goes to (its key), and their
//! lifetime: creating a queue (or taking back a freed one with its history),
//! freeing it, and forgetting its history.
//!
//! Queues live in a slab sized by [`Scheduler::resize`] (twice the tags plus
//! 66), found by key in an open-addressing table (`table.rs`): contexts are
//! arbitrary `u32`s. A queue is freed when it has nothing queued, nothing
//! dispatched and is not in service: it leaves every scheduling structure and
//! its slot may be reused; its history (think time, seeks, budget, raising,
//! finish time) stays in the slot, on an LRU list, until the slot is needed,
//! like Linux keeps a process's queue while the process lives. The idle wait
//! belongs to the queue in service, which is never freed, and nothing else
//! refers to a queue by handle, so a timer that fires late acts on nothing
//! stale. Nothing allocates per I/O once sized.
//!
//! When a context is gone ([`Scheduler::context_gone`]), its sync queues are
//! never idled for again (an idle wait for one in service ends at once),
//! their requests still queued are served, and their history is dropped once
//! they are freed.
//!
//! [`Scheduler::resize`]: crate::sched::Scheduler::resize
//! [`Scheduler::context_gone`]: crate::sched::Scheduler::context_gone

use super::Bfq;
use super::bfqq::{Bfqq, NEVER, NO_SLOT, Place};
use crate::bio::{Bio, BioFlags, IoPrio, Op};
use crate::request::{RequestId, Requests};

/// Queue slots beyond twice the tags.
pub(super) const EXTRA_QUEUES: usize = 66;

/// The queue a request goes to: sync queues by context and priority, async
/// queues by priority alone.
#[inline]
pub(super) fn queue_key(ctx: u32, sync: bool, prio: IoPrio) -> u64 {
    key_of(ctx, sync, prio.class().index(), prio.level())
}

/// The key of a queue from its context, sync-ness, class index and level.
#[inline]
pub(super) fn key_of(ctx: u32, sync: bool, class: usize, level: u8) -> u64 {
    let p = ((class as u64) << 3) | u64::from(level & 7);
    if sync {
        (1 << 40) | (p << 32) | u64::from(ctx)
    } else {
        p << 32
    }
}

/// Linux `op_is_sync` for a bio.
#[inline]
pub(super) fn bio_is_sync(bio: &Bio) -> bool {
    bio.op == Op::Read
        || bio
            .flags
            .intersects(BioFlags::SYNC | BioFlags::FUA | BioFlags::PREFLUSH)
}

/// The key of the queue request `rq` belongs to.
#[inline]
pub(super) fn rq_key(rqs: &Requests, rq: RequestId) -> u64 {
    let r = &rqs[rq];
    queue_key(r.ctx().0, r.is_sync(), r.prio())
}

impl Bfq {
    /// The queue for `key`, created (or taken back from the freed ones) if
    /// needed.
    pub(super) fn get_queue(&mut self, key: u64, sync: bool, prio: IoPrio) -> u32 {
        if let Some(h) = self.table.get(key) {
            let q = &mut self.queues[h as usize];
            if q.place == Place::Retained {
                self.lru_links.remove(&mut self.lru, h);
                q.place = Place::Idle;
            }
            return h;
        }
        let h = match self.free.pop() {
            Some(h) => h,
            None => {
                // Live queues never outnumber the tags plus one, and the slab
                // holds twice as many: a freed queue is always there.
                let h = self
                    .lru_links
                    .pop_front(&mut self.lru)
                    .expect("bfq: every queue slot is live (resize not called?)");
                self.table.remove(self.queues[h as usize].key);
                if self.burst_links.is_linked(h) {
                    self.burst_links.remove(&mut self.burst, h);
                }
                h
            }
        };
        let q = Bfqq::new(key, sync, prio);
        self.wf2q.reset(h, usize::from(q.class));
        self.queues[h as usize] = q;
        self.table.insert(key, h);
        h
    }

    /// Free queue `h`: it leaves every scheduling structure; its history stays
    /// until the slot is reused.
    pub(super) fn release(&mut self, h: u32) {
        let q = &mut self.queues[h as usize];
        debug_assert!(
            q.queued == 0 && q.dispatched == 0 && self.in_service != h,
            "freeing a queue in use"
        );
        debug_assert_eq!(q.weight_slot, NO_SLOT);
        q.idle_until = NEVER;
        if q.exited {
            self.forget(h);
            return;
        }
        q.place = Place::Retained;
        self.lru_links.push_back(&mut self.lru, h);
    }

    /// Drop freed queue `h`'s history: its slot is free again.
    pub(super) fn forget(&mut self, h: u32) {
        let q = &mut self.queues[h as usize];
        debug_assert!(q.queued == 0 && q.dispatched == 0 && self.in_service != h);
        if q.place == Place::Retained {
            self.lru_links.remove(&mut self.lru, h);
        }
        if self.burst_links.is_linked(h) {
            self.burst_links.remove(&mut self.burst, h);
        }
        self.table.remove(q.key);
        *q = Bfqq::FREE;
        self.free.push(h);
    }
}
