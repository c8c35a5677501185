//! The drive. Owns the commands (`Slot`s by slot number, free slots, their
//! sequence numbers), where each outstanding command is (held behind a flush
//! barrier, the barrier, waiting for room in the write cache, completing at
//! a known time, done), the interface (one transfer at a time), the current
//! media operation ([`Media`]), busy time and statistics, and the parts
//! below: the heads ([`Mechanics`]), the command queue ([`Queue`]) and the
//! caches ([`Cache`]), in [`State`]. It runs the event loop on the virtual
//! clock (`advance`, `step`), routes each command (`classify`), picks the
//! next media operation (`decide`, `choose`: queued commands against
//! destaging) and ends one (`end_media`), and answers when the next
//! completion will be (`predict`).
//!
//! Dependencies point one way: `drive` uses `queue`, `cache` and
//! `mechanics`; `queue` and `cache` use `mechanics` (not each other);
//! `mechanics` uses only the geometry and timing.

use elevator_core::{BioFlags, DeviceIo, DeviceStats, HeadSample, Nanos, Op};

use super::NEVER;
use super::cache::{Ahead, Cache, ReadFrom};
use super::geometry::{Geo, Loc};
use super::mechanics::{Mechanics, Run};
use super::queue::Queue;
use crate::device::media::{ExtentMap, WriteNo, numbered};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    /// Submitted behind a flush barrier.
    Held,
    /// A flush, or a write's preflush, waiting to run.
    Barrier,
    /// Waiting for the media.
    Queued,
    /// A cached write waiting for room.
    Waiting,
    /// Completes at a known time (in `timed`).
    Timed,
    /// Being served by the media.
    Media,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    tag: u32,
    op: Op,
    flags: BioFlags,
    lba: u64,
    n: u64,
    seq: u64,
    arrival: Nanos,
    ready: Nanos,
    state: SlotState,
    preflush: bool,
    loc: Loc,
    /// Its write number (0 for what is not a write).
    wn: WriteNo,
}

impl Slot {
    const FREE: Slot = Slot {
        tag: 0,
        op: Op::Read,
        flags: BioFlags::NONE,
        lba: 0,
        n: 0,
        seq: 0,
        arrival: 0,
        ready: 0,
        state: SlotState::Free,
        preflush: false,
        loc: Loc {
            zone: 0,
            cyl: 0,
            head: 0,
            sector: 0,
            off: 0,
        },
        wn: 0,
    };
}

/// A completion at a known time.
#[derive(Clone, Copy, Debug)]
struct Timed {
    t: Nanos,
    seq: u64,
    slot: u32,
}

/// What the media is doing.
#[derive(Clone, Copy, Debug)]
enum Media {
    Idle,
    /// Serving the command in `slot`.
    Req {
        slot: u32,
        run: Run,
    },
    /// Writing dirty data `[lba, lba + n)` back.
    Destage {
        lba: u64,
        n: u64,
        run: Run,
    },
    /// Reading ahead.
    Ahead(Ahead),
}

/// What to do next on the media.
enum Pick {
    None,
    /// Serve the queued command at this index of the queue; its
    /// positioning cost.
    Queued(usize, u64),
    /// Destage this dirty extent; its positioning cost.
    Dirty(usize, u64),
}

/// The last answer of the writes-waiting fast path of [`State::predict`]:
/// what it depends on, and whether the first waiting write fits.
pub(super) type FitsMemo = Option<([u64; 6], bool)>;

#[derive(Debug)]
pub(super) struct State {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Cached writes waiting for room, in arrival order.
    waiting: Vec<u32>,
    /// Commands held behind a barrier, in arrival order.
    held: Vec<u32>,
    /// Completions at known times, latest first.
    timed: Vec<Timed>,
    /// Completed and not yet reported, in completion order.
    done: Vec<(Nanos, u32)>,
    barrier: Option<u32>,
    media: Media,
    iface_free: Nanos,
    seq: u64,
    clock: Nanos,
    inflight: u32,
    busy_since: Nanos,
    stats: DeviceStats,
    mech: Mechanics,
    queue: Queue,
    cache: Cache,
    /// Where the heads went, if asked (not copied by `clone_from`: the
    /// scratch copy that predictions run on records nothing).
    heads: HeadLog,
    /// Write submissions so far (the last write's number).
    writes: WriteNo,
    /// Which write each sector of the cache and the media holds, if asked
    /// (not copied by `clone_from`, as `heads`).
    content: Option<Box<Content>>,
}

/// Which write's content the write cache and the media hold.
#[derive(Debug, Default)]
pub(super) struct Content {
    /// Dirty data in the write cache.
    pub(super) cache: ExtentMap,
    /// The platters.
    pub(super) media: ExtentMap,
}

/// A bounded head-position log.
#[derive(Debug, Default)]
pub(super) struct HeadLog {
    cap: usize,
    samples: Vec<HeadSample>,
    dropped: u64,
}

impl HeadLog {
    fn push(&mut self, time: Nanos, cylinder: u32) {
        if self.cap == 0 {
            return;
        }
        if self.samples.len() < self.cap {
            self.samples.push(HeadSample { time, cylinder });
        } else {
            self.dropped += 1;
        }
    }
}

impl Clone for State {
    fn clone(&self) -> State {
        let mut s = State::new(0, 0);
        s.clone_from(self);
        s
    }

    /// Field by field, reusing the allocations (the scratch copy that
    /// predictions run on).
    fn clone_from(&mut self, o: &State) {
        self.slots.clone_from(&o.slots);
        self.free.clone_from(&o.free);
        self.waiting.clone_from(&o.waiting);
        self.held.clone_from(&o.held);
        self.timed.clone_from(&o.timed);
        self.done.clone_from(&o.done);
        self.barrier = o.barrier;
        self.media = o.media;
        self.iface_free = o.iface_free;
        self.seq = o.seq;
        self.writes = o.writes;
        self.clock = o.clock;
        self.inflight = o.inflight;
        self.busy_since = o.busy_since;
        self.stats = o.stats;
        self.mech = o.mech;
        self.queue.clone_from(&o.queue);
        self.cache.clone_from(&o.cache);
    }
}

impl State {
    pub(super) fn new(depth: usize, segments: usize) -> State {
        State {
            slots: vec![Slot::FREE; depth],
            free: (0..depth as u32).rev().collect(),
            waiting: Vec::with_capacity(depth),
            held: Vec::with_capacity(depth),
            timed: Vec::with_capacity(depth),
            done: Vec::with_capacity(depth),
            barrier: None,
            media: Media::Idle,
            iface_free: 0,
            seq: 0,
            clock: 0,
            inflight: 0,
            busy_since: 0,
            stats: DeviceStats::default(),
            mech: Mechanics::default(),
            queue: Queue::new(depth),
            cache: Cache::new(segments),
            heads: HeadLog::default(),
            writes: 0,
            content: None,
        }
    }

    /// Keep track of which write each cached and media sector holds.
    pub(super) fn track_content(&mut self) {
        self.content.get_or_insert_with(Box::default);
    }

    /// The content, if tracked.
    pub(super) fn content(&self) -> Option<&Content> {
        self.content.as_deref()
    }

    /// Power is lost: the write cache's content is gone.
    pub(super) fn lose_cache(&mut self) {
        if let Some(c) = &mut self.content {
            c.cache = ExtentMap::new();
        }
    }

    /// Record up to `cap` head samples from now on (0: stop recording).
    pub(super) fn record_heads(&mut self, cap: usize) {
        self.heads.cap = cap;
        self.heads.samples.reserve(cap.min(1 << 20));
    }

    /// Move the recorded samples to `out`; how many were dropped since the
    /// last call. The cap counts samples taken out too: recording stays
    /// bounded over a run.
    pub(super) fn take_heads(&mut self, out: &mut Vec<HeadSample>) -> u64 {
        let n = self.heads.samples.len();
        self.heads.cap = self.heads.cap.saturating_sub(n);
        out.append(&mut self.heads.samples);
        std::mem::take(&mut self.heads.dropped)
    }

    /// The time of the last call.
    #[inline]
    pub(super) fn clock(&self) -> Nanos {
        self.clock
    }

    /// Whether completions wait to be reported.
    #[inline]
    pub(super) fn has_done(&self) -> bool {
        !self.done.is_empty()
    }

    /// The tags of the completions not yet reported, in completion order.
    pub(super) fn take_done(&mut self) -> impl Iterator<Item = u32> + '_ {
        self.done.drain(..).map(|(_, tag)| tag)
    }

    /// The statistics, with the busy period under way counted up to the
    /// last call.
    pub(super) fn stats(&self) -> DeviceStats {
        let mut s = self.stats;
        if self.inflight > 0 {
            s.busy_ns += self.clock.saturating_sub(self.busy_since);
        }
        s
    }

    /// A command arrives at `now` (no earlier than the last call).
    pub(super) fn submit(&mut self, g: &Geo, io: DeviceIo, now: Nanos) {
        let now = now.max(self.clock);
        self.advance(g, now);
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                // More than the queue depth outstanding: keep going.
                self.slots.push(Slot::FREE);
                (self.slots.len() - 1) as u32
            }
        };
        let wn = if numbered(io.op) {
            self.writes += 1;
            self.writes
        } else {
            0
        };
        let (lba, n) = match io.op {
            Op::Flush => (0, 0),
            _ if io.sector >= g.capacity => (0, 0),
            _ => (io.sector, u64::from(io.sectors).min(g.capacity - io.sector)),
        };
        self.slots[s as usize] = Slot {
            tag: io.tag,
            op: io.op,
            flags: io.flags,
            lba,
            n,
            seq: self.seq,
            arrival: now,
            ready: now,
            state: SlotState::Free,
            preflush: io.flags.contains(BioFlags::PREFLUSH),
            loc: if n > 0 { g.locate(lba) } else { Loc::default() },
            wn,
        };
        self.seq += 1;
        if self.inflight == 0 {
            self.busy_since = now;
        }
        self.inflight += 1;
        self.classify(g, s, now);
        self.kick(g, now);
        self.advance(g, now);
    }

    /// Time of the next completion if nothing more is submitted; `scratch`
    /// is where a simulation runs if one is needed.
    pub(super) fn predict(
        &self,
        g: &Geo,
        scratch: &mut State,
        memo: &mut FitsMemo,
    ) -> Option<Nanos> {
        if let Some(&(t, _)) = self.done.first() {
            return Some(t);
        }
        if self.inflight == 0 {
            return None;
        }
        let m = self.timed.last().map_or(NEVER, |e| e.t);
        let end = self.media_end();
        match self.media {
            Media::Req { .. } => return Some(m.min(end)),
            Media::Idle if m != NEVER => return Some(m),
            Media::Destage { .. } | Media::Ahead(_) if m <= end => {
                return Some(m);
            }
            Media::Destage { lba, n, .. }
                if self.queue.is_empty() && self.barrier.is_none() && !self.waiting.is_empty() =>
            {
                // Only writes waiting for room: when this destage ends, the
                // first is accepted if it fits then, and nothing else can
                // complete before it.
                let w = &self.slots[self.waiting[0] as usize];
                // What the answer depends on. The dirty data changes with
                // its sector count, except in a destage's end, which also
                // starts a new operation (a new `end`).
                let (sectors, extents) = self.cache.dirt();
                let key = [end, w.seq, sectors, extents, self.iface_free, m];
                let fits = match *memo {
                    Some((k, f)) if k == key => f,
                    _ => {
                        let f = self.cache.fits_after(g, w.lba, w.lba + w.n, lba, lba + n);
                        *memo = Some((key, f));
                        f
                    }
                };
                if fits {
                    let t = end.max(w.ready).max(self.iface_free) + g.iface(w.n);
                    return Some(m.min(t));
                }
            }
            _ => {}
        }
        scratch.clone_from(self);
        // Every outstanding command completes within a bounded number of
        // events; the bound only guards against a modelling error.
        for _ in 0..100_000_000u64 {
            if let Some(&(t, _)) = scratch.done.first() {
                return Some(t);
            }
            if !scratch.step(g, NEVER) {
                break;
            }
        }
        debug_assert!(false, "hdd: an outstanding command never completes");
        None
    }

    fn media_end(&self) -> Nanos {
        match self.media {
            Media::Idle => NEVER,
            Media::Req { run, .. } | Media::Destage { run, .. } => run.end,
            Media::Ahead(ra) => ra.end(),
        }
    }

    /// Process every internal event up to `now`; whether there was any.
    pub(super) fn advance(&mut self, g: &Geo, now: Nanos) -> bool {
        let mut any = false;
        while self.step(g, now) {
            any = true;
        }
        self.clock = self.clock.max(now);
        any
    }

    /// Process the earliest internal event if it is due by `now`.
    fn step(&mut self, g: &Geo, now: Nanos) -> bool {
        let t_op = self.media_end();
        let t_c = self.timed.last().map_or(NEVER, |e| e.t);
        if t_c <= t_op {
            if t_c > now {
                return false;
            }
            if let Some(e) = self.timed.pop() {
                self.finish(g, e.slot, e.t);
                self.kick(g, e.t);
            }
        } else {
            if t_op > now {
                return false;
            }
            self.end_media(g, t_op);
            self.kick(g, t_op);
        }
        true
    }

    fn push_timed(&mut self, slot: u32, t: Nanos) {
        let seq = self.slots[slot as usize].seq;
        self.slots[slot as usize].state = SlotState::Timed;
        let i = self.timed.partition_point(|e| (e.t, e.seq) > (t, seq));
        self.timed.insert(i, Timed { t, seq, slot });
    }

    /// Complete through the interface: after the overhead, one transfer at
    /// a time.
    fn via_interface(&mut self, g: &Geo, slot: u32, t: Nanos) {
        let sl = &self.slots[slot as usize];
        let start = t.max(sl.ready).max(self.iface_free);
        let end = start + g.iface(sl.n);
        self.iface_free = end;
        self.push_timed(slot, end);
    }

    fn finish(&mut self, g: &Geo, slot: u32, t: Nanos) {
        let sl = &mut self.slots[slot as usize];
        sl.state = SlotState::Free;
        self.done.push((t, sl.tag));
        self.free.push(slot);
        self.stats.ios += 1;
        self.inflight = self.inflight.saturating_sub(1);
        if self.inflight == 0 {
            self.stats.busy_ns += t.saturating_sub(self.busy_since);
        }
        if self.barrier == Some(slot) {
            self.barrier = None;
            self.release_held(g, t);
        }
    }

    fn release_held(&mut self, g: &Geo, t: Nanos) {
        while self.barrier.is_none() && !self.held.is_empty() {
            let s = self.held.remove(0);
            self.classify(g, s, t);
        }
    }

    /// Commands older than the barrier `b` still outstanding.
    fn older_outstanding(&self, b: u32) -> usize {
        let seq = self.slots[b as usize].seq;
        self.slots
            .iter()
            .filter(|s| s.state != SlotState::Free && s.seq < seq)
            .count()
    }

    fn barrier_ready(&self) -> bool {
        match self.barrier {
            Some(b) => {
                self.slots[b as usize].state == SlotState::Barrier && self.older_outstanding(b) == 0
            }
            None => false,
        }
    }

    /// Route a command arriving (or released) at `t`.
    fn classify(&mut self, g: &Geo, s: u32, t: Nanos) {
        let si = s as usize;
        self.slots[si].ready = t + g.overhead;
        if self.barrier.is_some() {
            self.slots[si].state = SlotState::Held;
            self.held.push(s);
            return;
        }
        let sl = self.slots[si];
        if sl.op == Op::Flush || sl.preflush {
            self.slots[si].state = SlotState::Barrier;
            self.barrier = Some(s);
            return;
        }
        if sl.n == 0 || sl.op == Op::Discard {
            self.push_timed(s, sl.ready);
            return;
        }
        let (lo, hi) = (sl.lba, sl.lba + sl.n);
        match sl.op {
            Op::Read => {
                let ahead = match &mut self.media {
                    Media::Ahead(ra) => Some(ra),
                    _ => None,
                };
                match self.cache.read(g, ahead, lo, hi, t) {
                    ReadFrom::Cache => self.via_interface(g, s, t),
                    ReadFrom::Ahead(te) => self.push_timed(s, te.max(sl.ready)),
                    ReadFrom::Media => self.queue_media(g, s, false),
                }
            }
            Op::Write
                if g.write_cache
                    && !sl.flags.contains(BioFlags::FUA)
                    && sl.n <= g.cache_sectors =>
            {
                if self.waiting.is_empty() && self.cache.admit(g, lo, hi) {
                    self.cached(lo, hi, sl.wn);
                    self.via_interface(g, s, t);
                } else {
                    self.slots[si].state = SlotState::Waiting;
                    self.waiting.push(s);
                }
            }
            _ => self.queue_media(g, s, true),
        }
    }

    /// Write `wn` is in the write cache at `[lo, hi)`.
    #[inline]
    fn cached(&mut self, lo: u64, hi: u64, wn: WriteNo) {
        if let Some(c) = &mut self.content {
            c.cache.set(lo, hi, wn);
        }
    }

    fn queue_media(&mut self, g: &Geo, s: u32, write: bool) {
        let sl = &mut self.slots[s as usize];
        sl.state = SlotState::Queued;
        self.queue.push(g, s, &sl.loc, sl.ready, sl.seq, write);
    }

    /// Admit the waiting writes that fit, in arrival order.
    fn accept_waiting(&mut self, g: &Geo, t: Nanos) {
        while let Some(&s) = self.waiting.first() {
            let sl = &self.slots[s as usize];
            let (lo, hi, wn) = (sl.lba, sl.lba + sl.n, sl.wn);
            if !self.cache.admit(g, lo, hi) {
                break;
            }
            self.cached(lo, hi, wn);
            self.waiting.remove(0);
            self.via_interface(g, s, t);
        }
    }

    /// Something happened at `t`: start the media if it is idle, stop
    /// read-ahead if the media is needed.
    fn kick(&mut self, g: &Geo, t: Nanos) {
        match self.media {
            Media::Idle => self.decide(g, t),
            Media::Ahead(mut ra)
                if !ra.stopping()
                    && (!self.queue.is_empty()
                        || !self.waiting.is_empty()
                        || self.barrier_ready()) =>
            {
                ra.stop_at(g, t);
                self.media = Media::Ahead(ra);
            }
            _ => {}
        }
    }

    /// The media is free at `t`: start what comes next.
    fn decide(&mut self, g: &Geo, t: Nanos) {
        loop {
            if let Some(b) = self.barrier {
                if self.slots[b as usize].state != SlotState::Barrier {
                    // A flush completing: nothing may start.
                    return;
                }
                if self.older_outstanding(b) == 0 {
                    if let ((c, _), Some(j)) =
                        self.cache
                            .best_dirty(g, &self.mech, t, (u64::MAX, u64::MAX))
                    {
                        self.start_destage(g, t, j, c);
                        return;
                    }
                    let sl = self.slots[b as usize];
                    if sl.op == Op::Flush {
                        self.push_timed(b, t.max(sl.ready));
                        return;
                    }
                    // A preflush done: the write goes on as a write.
                    self.barrier = None;
                    self.slots[b as usize].preflush = false;
                    self.classify(g, b, t);
                    self.release_held(g, t);
                    continue;
                }
            }
            if !self.waiting.is_empty() && self.cache.is_clean() {
                self.accept_waiting(g, t);
            }
            if !self.queue.is_empty() || !self.waiting.is_empty() {
                match self.choose(g, t) {
                    Pick::Queued(i, c) => self.start_req(g, t, i, c),
                    Pick::Dirty(j, c) => self.start_destage(g, t, j, c),
                    Pick::None => {}
                }
                return;
            }
            if let Some(from) = self.cache.read_ahead_from(g) {
                self.media = Media::Ahead(Ahead::start(g, &self.mech, t, from));
                return;
            }
            if let ((c, _), Some(j)) = self
                .cache
                .best_dirty(g, &self.mech, t, (u64::MAX, u64::MAX))
            {
                self.start_destage(g, t, j, c);
            }
            return;
        }
    }

    /// The next media operation among queued commands and, while a write
    /// waits for room, dirty extents.
    fn choose(&self, g: &Geo, t: Nanos) -> Pick {
        let fq = self.queue.oldest().map(|s| (s, &self.slots[s as usize]));
        let fw = self.waiting.first().map(|&s| &self.slots[s as usize]);
        let (oldest_queued, arrival) = match (fq, fw) {
            (Some((s, q)), Some(w)) => {
                if q.seq < w.seq {
                    (Some(s), q.arrival)
                } else {
                    (None, w.arrival)
                }
            }
            (Some((s, q)), None) => (Some(s), q.arrival),
            (None, Some(w)) => (None, w.arrival),
            (None, None) => return Pick::None,
        };
        let aged = g.age_limit > 0 && arrival.saturating_add(g.age_limit) <= t;
        if g.ncq <= 1 || aged {
            return match oldest_queued {
                Some(s) => {
                    let (i, c) = self.queue.cost_of(g, &self.mech, t, s);
                    Pick::Queued(i, c)
                }
                None => match self
                    .cache
                    .best_dirty(g, &self.mech, t, (u64::MAX, u64::MAX))
                {
                    ((c, _), Some(j)) => Pick::Dirty(j, c),
                    _ => Pick::None,
                },
            };
        }
        let (best, q) = self.queue.best(g, &self.mech, t);
        if !self.waiting.is_empty()
            && let ((c, _), Some(j)) = self.cache.best_dirty(g, &self.mech, t, best)
        {
            return Pick::Dirty(j, c);
        }
        if q == usize::MAX {
            Pick::None
        } else {
            Pick::Queued(q, best.0)
        }
    }

    /// Serve the queued command at index `i`, whose first sector comes
    /// under the head `cost` after `t`.
    fn start_req(&mut self, g: &Geo, t: Nanos, i: usize, cost: u64) {
        let Some((s, ready, write)) = self.queue.take(i) else {
            return;
        };
        let sl = &mut self.slots[s as usize];
        sl.state = SlotState::Media;
        let run = Run::new(g, sl.loc, sl.n, t.max(ready), t + cost);
        self.cache.media_starts(write, sl.lba, sl.lba + sl.n);
        self.media = Media::Req { slot: s, run };
    }

    /// Destage (the start of) dirty extent `j`, whose first sector comes
    /// under the head `cost` after `t`.
    fn start_destage(&mut self, g: &Geo, t: Nanos, j: usize, cost: u64) {
        if let Some((lba, n, run)) = self.cache.destage(g, t, j, cost) {
            self.media = Media::Destage { lba, n, run };
        }
    }

    /// A media operation has ended: the heads are where it left them.
    fn ran(&mut self, run: &Run) {
        self.heads.push(run.start, run.start_cyl);
        if run.cyl != run.start_cyl {
            self.heads.push(run.end, run.cyl);
        }
        self.mech.move_to(run.cyl, run.head);
        self.stats.positioning_ns += run.pos;
        self.stats.transfer_ns += run.xfer;
    }

    fn end_media(&mut self, g: &Geo, t: Nanos) {
        match std::mem::replace(&mut self.media, Media::Idle) {
            Media::Idle => {}
            Media::Req { slot, run } => {
                self.ran(&run);
                let sl = self.slots[slot as usize];
                if sl.op == Op::Read {
                    self.cache.read_done(sl.lba, sl.lba + sl.n);
                }
                if let Some(c) = &mut self.content
                    && sl.wn > 0
                {
                    // On the media; older cached content of it is stale.
                    c.media.set_newer(sl.lba, sl.lba + sl.n, sl.wn);
                    c.cache.remove_older(sl.lba, sl.lba + sl.n, sl.wn);
                }
                self.finish(g, slot, t);
            }
            Media::Destage { lba, n, run } => {
                self.ran(&run);
                self.cache.destaged(g, lba, lba + n);
                if let Some(c) = &mut self.content {
                    let Content { cache, media } = &mut **c;
                    media.copy_from(cache, lba, lba + n);
                    cache.remove(lba, lba + n);
                }
                self.accept_waiting(g, t);
            }
            Media::Ahead(ra) => {
                let run = self.cache.ahead_done(g, &ra, t);
                self.ran(&run);
            }
        }
    }
}
