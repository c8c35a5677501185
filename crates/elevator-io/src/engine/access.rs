//! Who holds the queue an [`Engine`](super::Engine) submits to, and how it
//! is reached.
//!
//! A queue and its bio table ([`QueueState`]) belong either to one engine
//! alone ([`QueueState`] itself, the single-threaded engine and each
//! hardware context of `--lock mq` with `none`), or to several engines on
//! several threads behind a lock ([`SharedQueue`]): one lock per device
//! queue (`--lock queue`, and a scheduler's lock under `--lock mq`), or one
//! lock over every device's queue (`--lock global`, Linux 2.4's
//! `io_request_lock`). The engine reaches it only through
//! [`QueueAccess::with`], so the lock is held exactly as long as the
//! closure runs.
//!
//! A bio in a shared queue may be completed by another thread than the one
//! that submitted it (whoever dispatched its request owns the ring it ran
//! on), so each bio's slot names its owner; the completing engine hands a
//! bio it does not own to its owner's [`Inbox`] as a [`Handoff`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use elevator_core::{Queue, Status};

use crate::inbox::Inbox;
use crate::lockstat::StatLock;
use crate::tags::{TagHint, TagSet};

/// A bio in the queue: whose it is, which of the owner's records, where in
/// it, where its memory is.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BioSlot {
    /// The owning engine's index among the engines sharing the queue.
    pub owner: u16,
    pub record: u32,
    pub off: u64,
    pub addr: usize,
}

/// A queue and the table its bios' tokens index.
pub struct QueueState {
    pub(crate) queue: Queue,
    pub(crate) bios: Vec<BioSlot>,
    pub(crate) free_bios: Vec<u32>,
    /// Engines (a bit each, by index modulo 64) that may sleep while
    /// requests wait here that they could not take: they found no free tag,
    /// or their last dispatch round left requests queued (the scheduler
    /// held them back, or the device's depth was reached). Whoever next
    /// changes what can be dispatched (a completion, a submitter gone)
    /// wakes them, so that a request never waits for an engine that sleeps.
    pub(crate) sleepers: u64,
}

impl QueueState {
    /// State around `queue`, with no bio in it.
    pub fn new(queue: Queue) -> QueueState {
        QueueState {
            queue,
            bios: Vec::new(),
            free_bios: Vec::new(),
            sleepers: 0,
        }
    }

    /// The queue.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// The queue, to change tunables (never to submit or complete: its
    /// requests point at buffers only the engines may release).
    pub fn queue_mut(&mut self) -> &mut Queue {
        &mut self.queue
    }
}

/// How an engine reaches its queue.
pub trait QueueAccess {
    /// Run `f` on the queue state, holding whatever guards it.
    fn with<R>(&mut self, f: impl FnOnce(&mut QueueState) -> R) -> R;

    /// Whether other engines share the queue (so bios may belong to them,
    /// and requests of this engine's may complete elsewhere).
    fn shared(&self) -> bool;

    /// Whether to take the lock once per request, held across dispatch and
    /// the device's submission, as the single-queue kernels did (`false`:
    /// once per batch, with the device's submission outside).
    fn per_request(&self) -> bool;
}

impl QueueAccess for QueueState {
    #[inline]
    fn with<R>(&mut self, f: impl FnOnce(&mut QueueState) -> R) -> R {
        f(self)
    }

    fn shared(&self) -> bool {
        false
    }

    fn per_request(&self) -> bool {
        false
    }
}

/// A queue shared by the engines of several threads.
#[derive(Clone)]
pub enum SharedQueue {
    /// One lock per device queue. `per_request`: taken per request and
    /// held across the device's submission (`--lock queue`, Linux 2.5-3.x's
    /// `queue_lock`), or per batch (`--lock mq`'s scheduler lock).
    Device {
        /// The queue behind its lock.
        lock: Arc<StatLock<QueueState>>,
        /// Lock per request (legacy) or per batch (multi-queue).
        per_request: bool,
    },
    /// One lock over every device's queue (`--lock global`, Linux 2.4's
    /// `io_request_lock`); this engine's queue is `index`.
    Global {
        /// Every device's queue behind the one lock.
        lock: Arc<StatLock<Vec<QueueState>>>,
        /// This engine's device.
        index: usize,
    },
}

impl QueueAccess for SharedQueue {
    #[inline]
    fn with<R>(&mut self, f: impl FnOnce(&mut QueueState) -> R) -> R {
        match self {
            SharedQueue::Device { lock, .. } => f(&mut lock.lock()),
            SharedQueue::Global { lock, index } => f(&mut lock.lock()[*index]),
        }
    }

    fn shared(&self) -> bool {
        true
    }

    fn per_request(&self) -> bool {
        match self {
            SharedQueue::Device { per_request, .. } => *per_request,
            SharedQueue::Global { .. } => true,
        }
    }
}

/// A bio completion handed to the engine that owns the bio.
#[derive(Clone, Copy, Debug)]
pub struct Handoff {
    /// The owner's record ([`Handoff::WAKE`]: nothing, just wake up).
    pub(crate) record: u32,
    pub(crate) off: u64,
    pub(crate) status: Status,
    pub(crate) bytes: u32,
}

impl Handoff {
    /// The record of a hand-off that only wakes its owner (to see a stop
    /// flag, or a freed tag).
    pub const WAKE: u32 = u32::MAX;

    /// A hand-off that only wakes its owner.
    pub fn wake() -> Handoff {
        Handoff {
            record: Handoff::WAKE,
            off: 0,
            status: Status::Ok,
            bytes: 0,
        }
    }
}

/// The engines that share queues or tags, and how to reach each one: the
/// inboxes of every engine of a run, by index.
pub struct Peers {
    /// This engine's index.
    pub me: u16,
    /// Every engine's inbox.
    pub inboxes: Arc<[Inbox<Handoff>]>,
}

impl Peers {
    /// Wake the engines of `mask` (a bit each, by index modulo 64), but
    /// this one.
    pub(crate) fn wake(&self, mut mask: u64) {
        mask &= !(1 << (self.me % 64));
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if let Some(inbox) = self.inboxes.get(i) {
                inbox.push(Handoff::wake());
            }
        }
    }
}

/// A device's driver tags, shared by the hardware contexts of `--lock mq`
/// with `none` (each of which has a queue of its own): a request needs one
/// to be dispatched, and gives it back when it completes.
pub struct DriverTags {
    set: Arc<TagSet>,
    waiters: Arc<AtomicU64>,
    hint: TagHint,
    /// The tag of each in-flight request, by request slot.
    of_request: Vec<u32>,
}

impl DriverTags {
    /// This engine's view of `set`; `waiters` is a mask of the engines
    /// (by index, below 64) sleeping for a tag, shared by all users of
    /// `set`.
    pub fn new(set: Arc<TagSet>, waiters: Arc<AtomicU64>) -> DriverTags {
        DriverTags {
            set,
            waiters,
            hint: TagHint::default(),
            of_request: Vec::new(),
        }
    }

    /// A free tag, if there is one.
    pub(crate) fn take(&mut self) -> Option<u32> {
        self.set.get(&mut self.hint)
    }

    /// Give back a tag from [`DriverTags::take`] that no request used.
    pub(crate) fn untake(&mut self, tag: u32) {
        self.set.put(tag, &mut self.hint);
    }

    /// Tag `tag` (from [`DriverTags::take`]) is request slot `rq`'s until it
    /// completes.
    pub(crate) fn bind(&mut self, tag: u32, rq: u32) {
        let i = rq as usize;
        if self.of_request.len() <= i {
            self.of_request.resize(i + 1, u32::MAX);
        }
        debug_assert_eq!(self.of_request[i], u32::MAX, "request holds a tag already");
        self.of_request[i] = tag;
    }

    /// Request slot `rq` completed: its tag goes back. Returns the engines
    /// that waited for one (a bit each), for the caller to wake
    /// ([`Peers::wake`]).
    #[must_use]
    pub(crate) fn put(&mut self, rq: u32) -> u64 {
        let Some(t) = self.of_request.get_mut(rq as usize) else {
            debug_assert!(false, "request {rq} completed without a tag");
            return 0;
        };
        let tag = std::mem::replace(t, u32::MAX);
        debug_assert_ne!(tag, u32::MAX, "request completed without a tag");
        if tag == u32::MAX {
            return 0;
        }
        self.set.put(tag, &mut self.hint);
        if self.waiters.load(Ordering::SeqCst) == 0 {
            return 0;
        }
        self.waiters.swap(0, Ordering::SeqCst)
    }

    /// Engine `me` found no tag: ask to be woken when one is put back.
    /// Returns whether one is free after all (try again instead of
    /// sleeping).
    pub(crate) fn wait_for_tag(&self, me: u16) -> bool {
        if me < 64 {
            self.waiters.fetch_or(1 << me, Ordering::SeqCst);
        }
        self.set.in_use() < self.set.depth()
    }
}
