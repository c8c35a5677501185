//! `mq-deadline`: a one-way sector sweep per direction, with FIFO deadlines
//! and I/O priority levels.
//!
//! For each priority level (RT, BE, IDLE) and each direction (read, write) the
//! scheduler keeps a sort structure of queued requests by start sector and a
//! FIFO in arrival order, each request stamped with `fifo_time = insert time +
//! read_expire / write_expire`.
//!
//! Dispatch (Linux `dd_dispatch_request`):
//! 1. **Aging.** When requests of two or more levels are outstanding (queued or
//!    in flight), a BE or IDLE request inserted at least `prio_aging_expire` ago
//!    is dispatched first, by the rules below restricted to such requests.
//! 2. **Levels in order.** RT, then BE, then IDLE; a level is served only if no
//!    higher level has requests outstanding (queued or in flight).
//! 3. **Within a level**: continue the current batch (the first request at or
//!    after the last dispatched position in the current direction) while fewer
//!    than `fifo_batch` requests have been dispatched in it. Otherwise choose a
//!    direction: reads, unless writes are queued and reads have been preferred
//!    `writes_starved` times in a row while writes waited. In that direction,
//!    start from the FIFO head if it has expired or nothing lies ahead of the
//!    sweep; else continue the sweep. Deadlines are soft: expiry only decides
//!    where the next batch starts.
//!
//! Merging: front merges look up the request starting at the bio's end sector
//! in the bio's level and direction (exact lookup, only if `front_merges`);
//! after a back merge the sort successor may merge in, after a front merge
//! the request may merge into its sort predecessor. When two requests merge,
//! the survivor keeps the earlier FIFO time and position.
//!
//! Tunables (Linux names and defaults, times in ms):
//! - `read_expire` 500: deadline of a read.
//! - `write_expire` 5000: deadline of a write.
//! - `writes_starved` 2: how many times reads may be preferred over waiting writes.
//! - `fifo_batch` 16: requests dispatched in one sweep batch.
//! - `front_merges` 1: look up front merges.
//! - `prio_aging_expire` 10000: age after which a lower-level request is served
//!   ahead of higher levels.
//!
//! Differences from Linux, on purpose: an aging pass that finds no request old
//! enough leaves the batch state untouched (Linux may reset it); `async_depth`
//! (a tag limit for async writes) and zoned-write handling are not modelled.
//!
//! The scheduler is generic over its sort structure ([`SortIndex`]), so that
//! three schedulers share this file's algorithm and differ only there:
//! - `mq-deadline`: B+trees ([`BTreeForest`]). A search touches three nodes at
//!   4096 queued requests where a red-black tree touches about twelve, and the
//!   front-merge lookup leaves the insert's leaf remembered, so a bio that does
//!   not merge is looked up and inserted with one descent.
//! - `deadline-rbtree`: red-black trees ([`RbForest`]), the structure Linux has
//!   used since 2002, kept to compare against.
//! - `deadline-list` (`deadline_list.rs`): the sorted linked lists of the
//!   pre-2002 deadline.
//!
//! Dispatch needs no search: each level and direction keeps its sweep cursor,
//! `lower_bound(latest_pos)`, up to date on every insert and removal.

use super::{MergeKind, SchedDispatch, Scheduler};
use crate::bio::{Bio, Dir, Nanos, Sector};
use crate::index::{BTreeForest, BTreeRoot, ListHead, ListLinks, NIL, RbForest, RbRoot};
use crate::request::{RequestId, Requests};
use crate::tunable::{self, Tunable, TunableSpec, Unit, specs, tunable};

/// A sorted index of handles by a `u64` key, with many sorted sequences
/// (`Root`s) sharing one link store. Equal keys keep insertion order; `find`
/// and `lower_bound` return the leftmost match.
pub trait SortIndex: Clone + std::fmt::Debug {
    /// One sorted sequence.
    type Root: Copy + Default + std::fmt::Debug;
    /// Link storage for handles `0..capacity`.
    fn with_capacity(capacity: usize) -> Self;
    /// Raise the number of handles.
    fn grow(&mut self, capacity: usize);
    /// Add `id` under `key`.
    fn insert(&mut self, root: &mut Self::Root, id: u32, key: u64);
    /// Remove `id` (found by its links, not its key).
    fn remove(&mut self, root: &mut Self::Root, id: u32);
    /// The leftmost handle with exactly `key`.
    fn find(&self, root: &Self::Root, key: u64) -> Option<u32>;
    /// The leftmost handle with a key at or after `key`.
    fn lower_bound(&self, root: &Self::Root, key: u64) -> Option<u32>;
    /// The handle after `id` in its sequence.
    fn next(&self, id: u32) -> Option<u32>;
    /// The handle before `id` in its sequence.
    fn prev(&self, id: u32) -> Option<u32>;
    /// The key `id` was inserted with.
    fn key(&self, id: u32) -> u64;
    /// Remove `id` and return the handle that followed it.
    fn remove_then_next(&mut self, root: &mut Self::Root, id: u32) -> Option<u32> {
        let next = self.next(id);
        self.remove(root, id);
        next
    }
}

/// [`SortIndex`] for an index type whose inherent methods already have the
/// trait's names and signatures: each trait method calls the inherent one.
macro_rules! sort_index_by_inherent {
    ($forest:ident, $root:ident $(, $extra:ident)*) => {
        impl SortIndex for $forest {
            type Root = $root;
            fn with_capacity(capacity: usize) -> Self {
                $forest::new(capacity)
            }
            fn grow(&mut self, capacity: usize) {
                $forest::grow(self, capacity)
            }
            #[inline]
            fn insert(&mut self, root: &mut $root, id: u32, key: u64) {
                $forest::insert(self, root, id, key)
            }
            #[inline]
            fn remove(&mut self, root: &mut $root, id: u32) {
                $forest::remove(self, root, id)
            }
            #[inline]
            fn find(&self, root: &$root, key: u64) -> Option<u32> {
                $forest::find(self, root, key)
            }
            #[inline]
            fn lower_bound(&self, root: &$root, key: u64) -> Option<u32> {
                $forest::lower_bound(self, root, key)
            }
            #[inline]
            fn next(&self, id: u32) -> Option<u32> {
                $forest::next(self, id)
            }
            #[inline]
            fn prev(&self, id: u32) -> Option<u32> {
                $forest::prev(self, id)
            }
            #[inline]
            fn key(&self, id: u32) -> u64 {
                $forest::key(self, id)
            }
            $(sort_index_by_inherent!(@$extra $forest, $root);)*
        }
    };
    (@remove_then_next $forest:ident, $root:ident) => {
        #[inline]
        fn remove_then_next(&mut self, root: &mut $root, id: u32) -> Option<u32> {
            $forest::remove_then_next(self, root, id)
        }
    };
}

sort_index_by_inherent!(RbForest, RbRoot);
sort_index_by_inherent!(BTreeForest, BTreeRoot, remove_then_next);

/// `mq-deadline`: deadline over B+trees.
pub type MqDeadline = Deadline<BTreeForest>;

/// `mq-deadline` over red-black trees, as the kernel keeps it.
pub type RbDeadline = Deadline<RbForest>;

const LEVELS: usize = 3;
const RT: usize = 0;
const BE: usize = 1;
const IDLE: usize = 2;

/// mq-deadline's tunables, with Linux defaults (the same for
/// `deadline-rbtree` and `deadline-list`).
pub const TUNABLES: [TunableSpec; 6] = specs(&MqDeadline::TABLE);

#[derive(Clone, Copy, Debug)]
struct Level<R> {
    sort: [R; 2],
    fifo: [ListHead; 2],
    latest_pos: [Sector; 2],
    /// The sweep's next request: always `lower_bound(sort, latest_pos)`,
    /// kept current on every insert and removal so dispatch needs no search.
    cursor: [u32; 2],
    /// The cursor's key (`u64::MAX` without a cursor), so that an insert
    /// decides whether it becomes the cursor without touching the cursor.
    cursor_key: [u64; 2],
    /// Requests inserted at this level and not yet completed or merged away.
    outstanding: u32,
}

/// What one dispatch decision would do, computed before anything changes.
#[derive(Clone, Copy, Debug)]
struct Pick {
    rq: u32,
    dir: Dir,
    new_batch: bool,
    starved: u32,
}

/// The deadline scheduler over the sort structure `I`.
#[derive(Clone, Debug)]
pub struct Deadline<I: SortIndex> {
    name: &'static str,
    expire_ns: [Nanos; 2],
    writes_starved: u32,
    fifo_batch: u32,
    front_merges: bool,
    prio_aging_expire_ns: Nanos,
    index: I,
    fifo_links: ListLinks,
    fifo_time: Vec<Nanos>,
    levels: [Level<I::Root>; LEVELS],
    last_dir: Dir,
    batching: u32,
    starved: u32,
    queued: u32,
}

impl Deadline<BTreeForest> {
    /// `mq-deadline` with Linux's default tunables.
    pub fn new() -> Self {
        Deadline::with_name("mq-deadline")
    }
}

impl Default for Deadline<BTreeForest> {
    fn default() -> Self {
        Self::new()
    }
}

impl Deadline<RbForest> {
    /// `deadline-rbtree` with Linux's default tunables.
    pub fn new() -> Self {
        Deadline::with_name("deadline-rbtree")
    }
}

impl Default for Deadline<RbForest> {
    fn default() -> Self {
        Self::new()
    }
}

impl<I: SortIndex> Deadline<I> {
    /// The tunables, declared once: listing, defaults, get and set come from
    /// here. Times are kept in nanoseconds.
    const TABLE: [Tunable<Self>; 6] = [
        tunable!(ms, "read_expire", 500, 0, 3_600_000, Unit::Millis,
            "deadline of a read", d => d.expire_ns[0]),
        tunable!(ms, "write_expire", 5000, 0, 3_600_000, Unit::Millis,
            "deadline of a write", d => d.expire_ns[1]),
        // The ranges of the counts keep them within u32.
        tunable!(count, "writes_starved", 2, 0, 1_000_000, Unit::Count,
            "times reads may be preferred over waiting writes", d => d.writes_starved),
        tunable!(count, "fifo_batch", 16, 0, 1_000_000, Unit::Count,
            "requests dispatched in one sweep batch", d => d.fifo_batch),
        tunable!(flag, "front_merges", 1, 0, 1, Unit::Bool,
            "look up front merges in the sort tree", d => d.front_merges),
        tunable!(ms, "prio_aging_expire", 10_000, 0, 3_600_000, Unit::Millis,
            "age after which lower-priority requests are served first", d => d.prio_aging_expire_ns),
    ];

    /// The deadline scheduler over `I`, reporting itself as `name`.
    pub(crate) fn with_name(name: &'static str) -> Self {
        let level = Level {
            sort: [I::Root::default(); 2],
            fifo: [ListHead::EMPTY; 2],
            latest_pos: [0; 2],
            cursor: [NIL; 2],
            cursor_key: [u64::MAX; 2],
            outstanding: 0,
        };
        let mut d = Deadline {
            name,
            // Tunables: set from the table's defaults below.
            expire_ns: [0; 2],
            writes_starved: 0,
            fifo_batch: 0,
            front_merges: false,
            prio_aging_expire_ns: 0,
            index: I::with_capacity(0),
            fifo_links: ListLinks::new(0),
            fifo_time: Vec::new(),
            levels: [level; LEVELS],
            last_dir: Dir::Read,
            batching: 0,
            starved: 0,
            queued: 0,
        };
        tunable::apply_defaults(&Self::TABLE, &mut d);
        d
    }

    #[inline]
    fn level_of(rqs: &Requests, rq: RequestId) -> usize {
        rqs[rq].prio().class().index()
    }

    /// The first request at or after the sweep position of `dir` at level `p`.
    #[inline]
    fn next_in_sweep(&self, p: usize, dir: Dir) -> Option<u32> {
        let lvl = &self.levels[p];
        let c = lvl.cursor[dir.index()];
        debug_assert_eq!(
            lvl.cursor_key[dir.index()],
            if c == NIL {
                u64::MAX
            } else {
                self.index.key(c)
            },
            "cached cursor key out of date"
        );
        debug_assert_eq!(
            (c != NIL).then_some(c),
            self.index
                .lower_bound(&lvl.sort[dir.index()], lvl.latest_pos[dir.index()]),
            "sweep cursor out of date"
        );
        (c != NIL).then_some(c)
    }

    /// Add `id` to the sort structure of level `p`, direction `dir`.
    #[inline]
    fn sort_insert(&mut self, p: usize, dir: Dir, id: u32, key: Sector) {
        let d = dir.index();
        let lvl = &mut self.levels[p];
        self.index.insert(&mut lvl.sort[d], id, key);
        // Equal keys go after the cursor, so only a smaller key displaces it.
        if key >= lvl.latest_pos[d] && key < lvl.cursor_key[d] {
            lvl.cursor[d] = id;
            lvl.cursor_key[d] = key;
        }
    }

    /// Remove `id` from the sort structure of level `p`, direction `dir`.
    #[inline]
    fn sort_remove(&mut self, p: usize, dir: Dir, id: u32) {
        let d = dir.index();
        let lvl = &mut self.levels[p];
        let next = self.index.remove_then_next(&mut lvl.sort[d], id);
        if lvl.cursor[d] == id {
            // The cursor was the leftmost at or after the position: its
            // successor is the next.
            self.set_cursor(p, d, next);
        }
    }

    /// Decide what level `p` would dispatch, without changing anything. With
    /// `latest_start`, only a request inserted at or before it qualifies.
    fn select(&self, p: usize, now: Nanos, latest_start: Option<Nanos>) -> Option<Pick> {
        let lvl = &self.levels[p];
        let mut pick = None;
        if self.batching < self.fifo_batch
            && let Some(rq) = self.next_in_sweep(p, self.last_dir)
        {
            pick = Some(Pick {
                rq,
                dir: self.last_dir,
                new_batch: false,
                starved: self.starved,
            });
        }
        if pick.is_none() {
            let reads = !lvl.fifo[Dir::Read.index()].is_empty();
            let writes = !lvl.fifo[Dir::Write.index()].is_empty();
            let (dir, starved) = match (reads, writes) {
                (true, true) if self.starved >= self.writes_starved => (Dir::Write, 0),
                (true, true) => (Dir::Read, self.starved + 1),
                (true, false) => (Dir::Read, self.starved),
                (false, true) => (Dir::Write, 0),
                (false, false) => return None,
            };
            let head = lvl.fifo[dir.index()].front()?;
            let expired = now >= self.fifo_time[head as usize];
            let rq = match self.next_in_sweep(p, dir) {
                Some(next) if !expired => next,
                _ => head,
            };
            pick = Some(Pick {
                rq,
                dir,
                new_batch: true,
                starved,
            });
        }
        let pick = pick?;
        if let Some(latest) = latest_start {
            let inserted =
                self.fifo_time[pick.rq as usize].saturating_sub(self.expire_ns[pick.dir.index()]);
            if inserted > latest {
                return None;
            }
        }
        Some(pick)
    }

    /// Carry out a pick made by `select` at level `p`.
    fn commit(&mut self, rqs: &Requests, p: usize, pick: Pick) -> RequestId {
        if pick.new_batch {
            self.last_dir = pick.dir;
            self.batching = 0;
        }
        self.starved = pick.starved;
        self.batching += 1;
        let id = RequestId::from_raw(pick.rq);
        let key = rqs[id].sector();
        debug_assert_eq!(key, self.index.key(pick.rq), "sort key out of date");
        let d = pick.dir.index();
        // The new position is `key`; the next request is the leftmost one at or
        // after it once `id` is gone. If `id` was the cursor (the sweep went
        // on), that is its successor. If it came from the FIFO, requests with
        // the same key may sit left of it, and the first of them is next.
        let lvl = &mut self.levels[p];
        let cursor = if lvl.cursor[d] == pick.rq {
            self.index.remove_then_next(&mut lvl.sort[d], pick.rq)
        } else {
            let mut leftmost = pick.rq;
            while let Some(prev) = self.index.prev(leftmost)
                && self.index.key(prev) == key
            {
                leftmost = prev;
            }
            let after = self.index.remove_then_next(&mut lvl.sort[d], pick.rq);
            if leftmost != pick.rq {
                Some(leftmost)
            } else {
                after
            }
        };
        self.fifo_links.remove(&mut lvl.fifo[d], pick.rq);
        self.queued -= 1;
        lvl.latest_pos[d] = key;
        self.set_cursor(p, d, cursor);
        id
    }

    #[inline]
    fn set_cursor(&mut self, p: usize, d: usize, cursor: Option<u32>) {
        let lvl = &mut self.levels[p];
        lvl.cursor[d] = cursor.unwrap_or(NIL);
        lvl.cursor_key[d] = cursor.map_or(u64::MAX, |c| self.index.key(c));
    }

    /// Remove `id` from its sort structure and FIFO.
    #[inline]
    fn take(&mut self, p: usize, dir: Dir, id: RequestId) {
        self.sort_remove(p, dir, id.raw());
        self.fifo_links
            .remove(&mut self.levels[p].fifo[dir.index()], id.raw());
        self.queued -= 1;
    }
}

impl<I: SortIndex> Scheduler for Deadline<I> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn resize(&mut self, nr_requests: u32) {
        let n = nr_requests as usize;
        self.index.grow(n);
        self.fifo_links.grow(n);
        if self.fifo_time.len() < n {
            self.fifo_time.resize(n, 0);
        }
    }

    #[inline]
    fn front_merge_candidate(&self, rqs: &Requests, bio: &Bio) -> Option<RequestId> {
        if !self.front_merges {
            return None;
        }
        let lvl = &self.levels[bio.prio.class().index()];
        let id = self
            .index
            .find(&lvl.sort[bio.op.dir().index()], bio.end())?;
        debug_assert_eq!(rqs[RequestId::from_raw(id)].sector(), bio.end());
        Some(RequestId::from_raw(id))
    }

    #[inline]
    fn next_request(&self, _rqs: &Requests, rq: RequestId) -> Option<RequestId> {
        self.index.next(rq.raw()).map(RequestId::from_raw)
    }

    #[inline]
    fn prev_request(&self, _rqs: &Requests, rq: RequestId) -> Option<RequestId> {
        self.index.prev(rq.raw()).map(RequestId::from_raw)
    }

    #[inline]
    fn insert(&mut self, rqs: &Requests, rq: RequestId, now: Nanos) {
        let r = &rqs[rq];
        let dir = r.op().dir();
        let p = r.prio().class().index();
        self.sort_insert(p, dir, rq.raw(), r.sector());
        self.fifo_time[rq.index()] = now.saturating_add(self.expire_ns[dir.index()]);
        let lvl = &mut self.levels[p];
        self.fifo_links
            .push_back(&mut lvl.fifo[dir.index()], rq.raw());
        lvl.outstanding += 1;
        self.queued += 1;
    }

    #[inline]
    fn bio_merged(&mut self, rqs: &Requests, rq: RequestId, kind: MergeKind) {
        if kind == MergeKind::Front {
            let r = &rqs[rq];
            let (p, dir) = (r.prio().class().index(), r.op().dir());
            self.sort_remove(p, dir, rq.raw());
            self.sort_insert(p, dir, rq.raw(), r.sector());
        }
    }

    fn requests_merged(
        &mut self,
        rqs: &Requests,
        into: RequestId,
        gone: RequestId,
        gone_queued: bool,
    ) {
        if !gone_queued {
            return;
        }
        let p = Self::level_of(rqs, gone);
        let dir = rqs[gone].op().dir();
        if self.fifo_time[gone.index()] < self.fifo_time[into.index()] {
            // The survivor takes the earlier deadline and FIFO position.
            let fifo = &mut self.levels[p].fifo[dir.index()];
            self.fifo_links.remove(fifo, into.raw());
            self.fifo_links.insert_after(fifo, gone.raw(), into.raw());
            self.fifo_time[into.index()] = self.fifo_time[gone.index()];
        }
        self.take(p, dir, gone);
        self.levels[p].outstanding -= 1;
    }

    fn dispatch(&mut self, rqs: &Requests, now: Nanos) -> SchedDispatch {
        if self.queued == 0 {
            return SchedDispatch::Nothing;
        }
        let busy_levels = self.levels.iter().filter(|l| l.outstanding > 0).count();
        if busy_levels >= 2
            && let Some(latest) = now.checked_sub(self.prio_aging_expire_ns)
        {
            for p in [BE, IDLE] {
                if let Some(pick) = self.select(p, now, Some(latest)) {
                    return SchedDispatch::Request(self.commit(rqs, p, pick));
                }
            }
        }
        for p in [RT, BE, IDLE] {
            if let Some(pick) = self.select(p, now, None) {
                return SchedDispatch::Request(self.commit(rqs, p, pick));
            }
            if self.levels[p].outstanding > 0 {
                break;
            }
        }
        SchedDispatch::Nothing
    }

    #[inline]
    fn completed(&mut self, rqs: &Requests, rq: RequestId, _now: Nanos) {
        let lvl = &mut self.levels[Self::level_of(rqs, rq)];
        debug_assert!(
            lvl.outstanding > 0,
            "completion at a level with nothing outstanding"
        );
        lvl.outstanding -= 1;
    }

    table_tunables!(Self::TABLE, TUNABLES);
}
