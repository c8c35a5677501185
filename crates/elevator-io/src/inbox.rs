//! Completions handed back to the thread that submitted them.
//!
//! [`Inbox`] owns a list of items pushed by any number of producer threads
//! (the threads that complete bios) and drained by one owner (the thread
//! that submitted them), and the eventfd that wakes the owner when it
//! sleeps elsewhere (in `io_uring_enter`, or `poll(2)` on [`Inbox::fd`]).
//! A producer writes the eventfd only when the owner has announced that it
//! sleeps: while the owner is awake a push is a short critical section and
//! one load, with no system call.
//!
//! The owner's loop:
//!
//! ```text
//! loop {
//!     inbox.drain(&mut done);            // handle `done`
//!     if inbox.prepare_sleep() {         // false: items are waiting, go round
//!         sleep until inbox.fd() is readable (or the ring has completions);
//!         inbox.woke();
//!     }
//! }
//! ```
//!
//! The owner's announcement is a state word: `AWAKE`, `SLEEPING` (set by
//! [`prepare_sleep`](Inbox::prepare_sleep)), `SIGNALLED` (set by the one
//! producer that moves it on from `SLEEPING`, which then writes the
//! eventfd). [`woke`](Inbox::woke) puts it back to `AWAKE`.
//!
//! Invariants:
//! - every item pushed is drained exactly once, and the items of one
//!   producer in the order it pushed them: items move only under the list's
//!   lock, appended by [`push`](Inbox::push), all taken by
//!   [`drain`](Inbox::drain);
//! - no lost wake-up: when `prepare_sleep` returns `true` the list was
//!   empty after the announcement, so the push of the next item sees
//!   `SLEEPING` (or a state the owner or another producer moved on from it,
//!   both of which mean the owner is or will be awake) and writes the
//!   eventfd;
//! - at most one eventfd write per announcement, none without one;
//! - every eventfd write is read back: the owner counts the writes owed to
//!   it (each `SIGNALLED` it finds) and `woke` reads the eventfd when that
//!   count is not zero, and only then, so a wake-up for another reason (a
//!   completion on the ring) costs no system call. A write that lands after
//!   `woke` read (its producer was between moving the state on and writing)
//!   is read by the next `woke`: at most a spurious wake-up, never a
//!   counter left set for ever.
//!
//! Memory orderings: the state word is `Relaxed` throughout; the list's
//! lock does the ordering. If the owner's check of the list (under the
//! lock, after its announcement) comes before a producer's push, the
//! producer's lock acquires the owner's unlock, so the announcement happens
//! before the producer's load of the state, which therefore reads
//! `SLEEPING` or a later value. If the push comes first, the owner sees the
//! item and does not sleep. Which producer wins an announcement is decided
//! by compare-and-swap on the one word, which needs no ordering with other
//! memory; the eventfd's write and read are system calls.
//!
//! Under `cfg(loom)` the eventfd is replaced by a counter under loom's mutex
//! and condition variable, and the model checks in this file run the
//! owner's loop against one and two producers (and a third thread that
//! wakes the owner for another reason): a lost wake-up shows as the owner
//! asleep with nobody left to wake it, which loom reports as a deadlock.

use crate::sync::{AtomicU32, Mutex, Ordering, lock};

/// The owner is awake (or has not announced that it sleeps).
const AWAKE: u32 = 0;
/// The owner announced it sleeps; the next push must wake it.
const SLEEPING: u32 = 1;
/// A producer took the announcement and writes (or wrote) the eventfd.
const SIGNALLED: u32 = 2;

/// A hand-off of items from any number of producer threads to one owner
/// thread, waking the owner through an eventfd only when it said it sleeps.
/// See the [module documentation](self) for the owner's loop.
pub struct Inbox<T> {
    /// What producers pushed and the owner has not drained.
    items: Mutex<Vec<T>>,
    /// The owner's empty list, swapped with `items` by `drain` so that the
    /// list is taken in a short critical section and neither list is
    /// allocated again once both have grown.
    spare: Mutex<Vec<T>>,
    /// `AWAKE`, `SLEEPING` or `SIGNALLED`.
    state: AtomicU32,
    /// 1 while `items` holds something: set and cleared under its lock,
    /// read without it by [`Inbox::is_empty`], so that an owner polling an
    /// empty inbox takes no lock (a hint: the owner's check before it
    /// sleeps takes the lock).
    pending: AtomicU32,
    /// Eventfd writes owed to the owner: `SIGNALLED` states it found, less
    /// the count it read back. Only the owner touches it, so loom need not
    /// see it.
    owed: std::sync::atomic::AtomicU64,
    signal: Signal,
}

impl<T> Inbox<T> {
    /// An empty inbox, its owner awake, with a new eventfd (non-blocking,
    /// close-on-exec).
    pub fn new() -> std::io::Result<Inbox<T>> {
        Ok(Inbox {
            items: Mutex::new(Vec::new()),
            spare: Mutex::new(Vec::new()),
            state: AtomicU32::new(AWAKE),
            pending: AtomicU32::new(0),
            owed: std::sync::atomic::AtomicU64::new(0),
            signal: Signal::new()?,
        })
    }

    /// Hands `item` to the owner, from any thread. Writes the eventfd only if
    /// the owner announced that it sleeps and no other producer has already
    /// taken that announcement.
    pub fn push(&self, item: T) {
        {
            let mut items = lock(&self.items);
            items.push(item);
            self.pending.store(1, Ordering::Relaxed);
        }
        // Relaxed: ordered by the lock (see the module documentation). The
        // load first, so that pushes to an awake owner do not write the
        // state's cache line.
        if self.state.load(Ordering::Relaxed) == SLEEPING
            && self
                .state
                .compare_exchange(SLEEPING, SIGNALLED, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.signal.raise();
        }
    }

    /// Appends every item waiting to `out`, each producer's in the order it
    /// pushed them. Meant for the owner; allocates nothing once the two
    /// internal lists and `out` have grown to the largest batch.
    pub fn drain(&self, out: &mut Vec<T>) {
        let mut spare = lock(&self.spare);
        debug_assert!(spare.is_empty(), "the spare list holds items");
        {
            let mut items = lock(&self.items);
            self.pending.store(0, Ordering::Relaxed);
            std::mem::swap(&mut *items, &mut *spare);
        }
        out.append(&mut spare);
    }

    /// The owner, before it sleeps: announces that it sleeps, so that the
    /// next push writes the eventfd. `false` means items are already waiting:
    /// the announcement is withdrawn and the owner should drain rather than
    /// sleep. After `true`, sleep (on [`fd`](Inbox::fd) and whatever else)
    /// and then call [`woke`](Inbox::woke), whatever woke the thread.
    pub fn prepare_sleep(&self) -> bool {
        self.note(self.state.swap(SLEEPING, Ordering::Relaxed));
        if lock(&self.items).is_empty() {
            return true;
        }
        self.note(self.state.swap(AWAKE, Ordering::Relaxed));
        false
    }

    /// The owner, after it slept (for whatever reason it woke): withdraws the
    /// announcement and reads the eventfd back to zero if a producer wrote
    /// it. Costs no system call when no producer did.
    pub fn woke(&self) {
        self.note(self.state.swap(AWAKE, Ordering::Relaxed));
        let owed = self.owed.load(Ordering::Relaxed);
        if owed > 0 {
            let read = self.signal.take();
            debug_assert!(read <= owed, "eventfd read {read} with {owed} writes owed");
            self.owed
                .store(owed.saturating_sub(read), Ordering::Relaxed);
        }
    }

    /// Whether no item is waiting (a momentary answer while producers push).
    pub fn is_empty(&self) -> bool {
        self.pending.load(Ordering::Relaxed) == 0
    }

    /// The eventfd to sleep on: readable after a push to a sleeping owner,
    /// until [`woke`](Inbox::woke).
    #[cfg(not(loom))]
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.signal.fd.as_fd()
    }

    /// Counts the eventfd write owed when the state the owner replaced was
    /// `SIGNALLED`.
    fn note(&self, previous: u32) {
        debug_assert!(previous <= SIGNALLED, "inbox state {previous}");
        if previous == SIGNALLED {
            self.owed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl<T> std::fmt::Debug for Inbox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox")
            .field("waiting", &lock(&self.items).len())
            .field("state", &self.state.load(Ordering::Relaxed))
            .field("owed", &self.owed.load(Ordering::Relaxed))
            .finish()
    }
}

/// The eventfd that wakes the owner.
#[cfg(not(loom))]
struct Signal {
    fd: std::os::fd::OwnedFd,
}

#[cfg(not(loom))]
impl Signal {
    fn new() -> std::io::Result<Signal> {
        use rustix::event::{EventfdFlags, eventfd};
        let fd = eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC)?;
        Ok(Signal { fd })
    }

    /// Adds one to the counter, making the eventfd readable.
    fn raise(&self) {
        use rustix::io::{Errno, write};
        loop {
            match write(&self.fd, &1u64.to_ne_bytes()) {
                Err(Errno::INTR) => continue,
                // AGAIN: the counter is at its maximum, so already readable.
                Ok(_) | Err(Errno::AGAIN) => return,
                // The fd is ours and open, and 8 bytes is the size an
                // eventfd takes: nothing else can fail.
                Err(err) => {
                    debug_assert!(err == Errno::AGAIN, "eventfd write: {err}");
                    return;
                }
            }
        }
    }

    /// Reads the counter back to zero: its value (0 when it was zero).
    fn take(&self) -> u64 {
        use rustix::io::{Errno, read};
        let mut buf = [0u8; 8];
        loop {
            match read(&self.fd, &mut buf) {
                Err(Errno::INTR) => continue,
                Ok(8) => return u64::from_ne_bytes(buf),
                Ok(_) | Err(Errno::AGAIN) => return 0,
                Err(err) => {
                    debug_assert!(err == Errno::AGAIN, "eventfd read: {err}");
                    return 0;
                }
            }
        }
    }
}

/// Under loom, the eventfd's counter in a form loom sees: a count under a
/// mutex, and a condition variable the owner's model sleep waits on (with a
/// count of wake-ups from other sources, standing for the ring's
/// completions).
#[cfg(loom)]
struct Signal {
    state: Mutex<Model>,
    changed: crate::sync::Condvar,
}

#[cfg(loom)]
#[derive(Default)]
struct Model {
    /// The eventfd's counter.
    count: u64,
    /// Wake-ups from elsewhere not yet seen by the owner (the models'
    /// stand-in for completions on the owner's ring).
    #[cfg(test)]
    kicks: u64,
}

#[cfg(loom)]
impl Signal {
    fn new() -> std::io::Result<Signal> {
        Ok(Signal {
            state: Mutex::new(Model::default()),
            changed: crate::sync::Condvar::new(),
        })
    }

    fn raise(&self) {
        lock(&self.state).count += 1;
        self.changed.notify_all();
    }

    fn take(&self) -> u64 {
        std::mem::take(&mut lock(&self.state).count)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use std::sync::Arc;

    /// Whether the inbox's eventfd is readable now (`poll(2)`, zero
    /// timeout: no waiting).
    fn readable<T>(inbox: &Inbox<T>) -> bool {
        let mut fds = [PollFd::new(&inbox.signal.fd, PollFlags::IN)];
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        poll(&mut fds, Some(&zero)).unwrap() == 1 && fds[0].revents().contains(PollFlags::IN)
    }

    /// Sleeps on the eventfd until it is readable: no timeout.
    fn sleep<T>(inbox: &Inbox<T>) {
        let fd = inbox.fd();
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        while poll(&mut fds, None).unwrap() == 0 {}
    }

    #[test]
    fn a_push_to_a_sleeping_owner_makes_the_eventfd_readable() {
        let inbox = Inbox::new().unwrap();
        assert!(inbox.is_empty());
        assert!(inbox.prepare_sleep());
        assert!(!readable(&inbox));
        inbox.push(7);
        assert!(readable(&inbox));
        assert!(!inbox.is_empty());
        // One write per announcement.
        inbox.push(8);
        assert_eq!(inbox.owed.load(Ordering::Relaxed), 0);
        inbox.woke();
        assert!(!readable(&inbox));
        assert_eq!(inbox.owed.load(Ordering::Relaxed), 0);
        let mut out = Vec::new();
        inbox.drain(&mut out);
        assert_eq!(out, [7, 8]);
        assert!(inbox.is_empty());
    }

    #[test]
    fn a_push_to_an_awake_owner_writes_nothing() {
        let inbox = Inbox::new().unwrap();
        inbox.push(1);
        assert!(!readable(&inbox));
        // Items are waiting: do not sleep, and the announcement is gone.
        assert!(!inbox.prepare_sleep());
        inbox.push(2);
        assert!(!readable(&inbox));
        let mut out = Vec::new();
        inbox.drain(&mut out);
        assert_eq!(out, [1, 2]);
    }

    #[test]
    fn waking_for_another_reason_reads_nothing_and_withdraws() {
        let inbox = Inbox::new().unwrap();
        assert!(inbox.prepare_sleep());
        // Woken by something else (the ring): nothing owed, no read.
        inbox.woke();
        assert_eq!(inbox.owed.load(Ordering::Relaxed), 0);
        inbox.push(1);
        assert!(!readable(&inbox));
        // A woke without a sleep, or two announcements in a row, are
        // harmless.
        inbox.woke();
        let mut out = Vec::new();
        inbox.drain(&mut out);
        assert!(inbox.prepare_sleep());
        assert!(inbox.prepare_sleep());
        inbox.push(2);
        assert!(readable(&inbox));
        assert!(!inbox.prepare_sleep());
        assert_eq!(inbox.owed.load(Ordering::Relaxed), 1);
        inbox.woke();
        assert!(!readable(&inbox));
        assert_eq!(inbox.owed.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn drain_appends_and_reuses_its_lists() {
        let inbox = Inbox::new().unwrap();
        let mut out = vec![0];
        for round in 0..4 {
            for i in 0..100 {
                inbox.push(round * 100 + i);
            }
            inbox.drain(&mut out);
            assert_eq!(out.len(), 101);
            assert_eq!(
                out[1..],
                (round * 100..round * 100 + 100).collect::<Vec<_>>()[..]
            );
            out.truncate(1);
        }
        // Warm: the two lists and `out` keep their buffers.
        let buffers = || {
            let mut ptrs = [lock(&inbox.items).as_ptr(), lock(&inbox.spare).as_ptr()];
            ptrs.sort();
            ptrs
        };
        let warm = buffers();
        let out_buffer = out.as_ptr();
        for _ in 0..4 {
            for i in 0..100 {
                inbox.push(i);
            }
            inbox.drain(&mut out);
            out.truncate(1);
            assert_eq!(buffers(), warm);
            assert_eq!(out.as_ptr(), out_buffer);
        }
    }

    /// Two producers push numbered items while the owner runs its loop,
    /// sleeping on the eventfd with no timeout: it gets every item once,
    /// each producer's in order, whatever the scheduling (a lost wake-up
    /// would hang the test).
    #[test]
    fn an_owner_gets_every_item_in_each_producers_order() {
        const EACH: u32 = 20_000;
        let inbox = Arc::new(Inbox::new().unwrap());
        let producers: Vec<_> = (0..2u32)
            .map(|p| {
                let inbox = Arc::clone(&inbox);
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        inbox.push((p, i));
                    }
                })
            })
            .collect();
        let mut next = [0u32; 2];
        let mut out = Vec::new();
        while next != [EACH; 2] {
            inbox.drain(&mut out);
            for (p, i) in out.drain(..) {
                assert_eq!(i, next[p as usize], "producer {p} out of order");
                next[p as usize] += 1;
            }
            if next != [EACH; 2] && inbox.prepare_sleep() {
                sleep(&inbox);
                inbox.woke();
            }
        }
        for producer in producers {
            producer.join().unwrap();
        }
        assert!(inbox.is_empty());
        // Quiet now: one more sleep cycle leaves the eventfd clear.
        assert!(inbox.prepare_sleep());
        inbox.woke();
        assert!(!readable(&inbox));
    }

    #[test]
    fn the_inbox_is_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Inbox<Box<u32>>>();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;

    impl Signal {
        /// The owner's sleep: returns when the counter is not zero (as poll
        /// on the eventfd would) or another source woke it.
        fn sleep(&self) {
            let mut model = lock(&self.state);
            while model.count == 0 && model.kicks == 0 {
                model = self
                    .changed
                    .wait(model)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            model.kicks = 0;
        }

        /// Wakes the owner for another reason (a completion on its ring).
        fn kick(&self) {
            lock(&self.state).kicks += 1;
            self.changed.notify_all();
        }

        fn count(&self) -> u64 {
            lock(&self.state).count
        }
    }

    /// Runs `body` under loom, with at most `preemptions` preemptions per
    /// interleaving (`None`: every interleaving) unless
    /// `LOOM_MAX_PREEMPTIONS` says otherwise.
    fn check(preemptions: Option<usize>, body: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = preemptions;
        }
        builder.check(body);
    }

    /// `pushes[p]` items from producer `p`, `kickers` threads waking the
    /// owner for other reasons; the owner runs its loop until it has every
    /// item, checks each came once and in its producer's order, and that a
    /// last sleep cycle once everyone is done leaves the counter clear.
    fn run(pushes: &'static [u32], kickers: usize, preemptions: Option<usize>) {
        check(preemptions, move || {
            let inbox = Arc::new(Inbox::new().unwrap());
            let mut threads = Vec::new();
            for (p, &count) in pushes.iter().enumerate() {
                let inbox = Arc::clone(&inbox);
                threads.push(loom::thread::spawn(move || {
                    for i in 0..count {
                        inbox.push((p, i));
                    }
                }));
            }
            for _ in 0..kickers {
                let inbox = Arc::clone(&inbox);
                threads.push(loom::thread::spawn(move || inbox.signal.kick()));
            }
            let total: u32 = pushes.iter().sum();
            let mut next = vec![0u32; pushes.len()];
            let mut got = 0;
            let mut out = Vec::new();
            loop {
                inbox.drain(&mut out);
                for (p, i) in out.drain(..) {
                    assert_eq!(i, next[p], "producer {p}'s items out of order or twice");
                    next[p] += 1;
                    got += 1;
                }
                if got == total {
                    break;
                }
                if inbox.prepare_sleep() {
                    // A lost wake-up blocks here for ever: loom reports a
                    // deadlock once the producers are done.
                    inbox.signal.sleep();
                    inbox.woke();
                }
            }
            assert_eq!(next, pushes);
            for thread in threads {
                thread.join().unwrap();
            }
            assert!(inbox.is_empty());
            assert!(inbox.prepare_sleep());
            inbox.woke();
            assert_eq!(inbox.signal.count(), 0, "eventfd left readable");
            assert_eq!(inbox.owed.load(Ordering::Relaxed), 0);
        });
    }

    #[test]
    fn loom_inbox_one_producer_two_items() {
        run(&[2], 0, None);
    }

    #[test]
    fn loom_inbox_two_producers() {
        run(&[1, 1], 0, Some(4));
    }

    #[test]
    fn loom_inbox_two_producers_two_items_each() {
        run(&[2, 2], 0, Some(3));
    }

    #[test]
    fn loom_inbox_woken_by_another_source() {
        run(&[2], 1, Some(4));
    }
}
