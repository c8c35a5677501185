//! The drive's `State`: command slots, the event loop on the virtual clock
//! (`advance`, `step`), completions, flush barriers, routing each command
//! (`classify`), deciding the next media operation and ending one (`Media`).

use std::collections::VecDeque;

use elevator_core::{BioFlags, DeviceStats, Nanos, Op};

use super::NEVER;
use super::cache::{Ahead, Dirty};
use super::geometry::{Geo, Loc};
use super::queue::{Pick, QEnt};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SlotState {
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
pub(super) struct Slot {
    pub(super) tag: u32,
    pub(super) op: Op,
    pub(super) flags: BioFlags,
    pub(super) lba: u64,
    pub(super) n: u64,
    pub(super) seq: u64,
    pub(super) arrival: Nanos,
    pub(super) ready: Nanos,
    pub(super) state: SlotState,
    pub(super) preflush: bool,
    pub(super) loc: Loc,
}

impl Slot {
    pub(super) const FREE: Slot = Slot {
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
    };
}

/// A completion at a known time.
#[derive(Clone, Copy, Debug)]
pub(super) struct Timed {
    pub(super) t: Nanos,
    seq: u64,
    slot: u32,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Media {
    Idle,
    Req {
        slot: u32,
        end: Nanos,
        pos: u64,
        xfer: u64,
        cyl: u32,
        head: u32,
    },
    Destage {
        lba: u64,
        n: u64,
        end: Nanos,
        pos: u64,
        xfer: u64,
        cyl: u32,
        head: u32,
    },
    Ahead(Ahead),
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) slots: Vec<Slot>,
    pub(super) free: Vec<u32>,
    /// Commands queued for the media as `cylinder << 32 | slot`, sorted.
    pub(super) by_cyl: Vec<u64>,
    /// Their details, by slot.
    pub(super) qent: Vec<QEnt>,
    /// The same commands in arrival order, `(seq, slot)`. Entries of
    /// commands that have left the queue are dropped when they reach the
    /// front (which is therefore always a queued command) or on compaction.
    pub(super) fifo: VecDeque<(u64, u32)>,
    /// Cached writes waiting for room, in arrival order.
    pub(super) waiting: Vec<u32>,
    /// Commands held behind a barrier, in arrival order.
    held: Vec<u32>,
    /// Completions at known times, latest first.
    pub(super) timed: Vec<Timed>,
    /// Completed and not yet reported, in completion order.
    pub(super) done: Vec<(Nanos, u32)>,
    pub(super) dirty: Dirty,
    pub(super) barrier: Option<u32>,
    pub(super) media: Media,
    pub(super) cyl: u32,
    pub(super) head: u32,
    /// The read segment, `[start, end)`.
    pub(super) buf: (u64, u64),
    /// Where read-ahead would start after the last media read.
    pub(super) ra_from: Option<u64>,
    pub(super) iface_free: Nanos,
    pub(super) seq: u64,
    pub(super) clock: Nanos,
    pub(super) inflight: u32,
    pub(super) busy_since: Nanos,
    pub(super) stats: DeviceStats,
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
        self.by_cyl.clone_from(&o.by_cyl);
        self.qent.clone_from(&o.qent);
        self.fifo.clone_from(&o.fifo);
        self.waiting.clone_from(&o.waiting);
        self.held.clone_from(&o.held);
        self.timed.clone_from(&o.timed);
        self.done.clone_from(&o.done);
        self.dirty.clone_from(&o.dirty);
        self.barrier = o.barrier;
        self.media = o.media;
        self.cyl = o.cyl;
        self.head = o.head;
        self.buf = o.buf;
        self.ra_from = o.ra_from;
        self.iface_free = o.iface_free;
        self.seq = o.seq;
        self.clock = o.clock;
        self.inflight = o.inflight;
        self.busy_since = o.busy_since;
        self.stats = o.stats;
    }
}

impl State {
    pub(super) fn new(depth: usize, segments: usize) -> State {
        State {
            slots: vec![Slot::FREE; depth],
            free: (0..depth as u32).rev().collect(),
            by_cyl: Vec::with_capacity(depth),
            qent: vec![QEnt::default(); depth],
            fifo: VecDeque::with_capacity(4 * depth + 16),
            waiting: Vec::with_capacity(depth),
            held: Vec::with_capacity(depth),
            timed: Vec::with_capacity(depth),
            done: Vec::with_capacity(depth),
            dirty: Dirty {
                ext: Vec::with_capacity(segments + 1),
                sectors: 0,
            },
            barrier: None,
            media: Media::Idle,
            cyl: 0,
            head: 0,
            buf: (0, 0),
            ra_from: None,
            iface_free: 0,
            seq: 0,
            clock: 0,
            inflight: 0,
            busy_since: 0,
            stats: DeviceStats::default(),
        }
    }

    fn media_end(&self) -> Nanos {
        match self.media {
            Media::Idle => NEVER,
            Media::Req { end, .. } | Media::Destage { end, .. } => end,
            Media::Ahead(ra) => ra.end,
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
    pub(super) fn step(&mut self, g: &Geo, now: Nanos) -> bool {
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

    pub(super) fn push_timed(&mut self, slot: u32, t: Nanos) {
        let seq = self.slots[slot as usize].seq;
        self.slots[slot as usize].state = SlotState::Timed;
        let i = self.timed.partition_point(|e| (e.t, e.seq) > (t, seq));
        self.timed.insert(i, Timed { t, seq, slot });
    }

    /// Complete through the interface: after the overhead, one transfer at
    /// a time.
    pub(super) fn via_interface(&mut self, g: &Geo, slot: u32, t: Nanos) {
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
    pub(super) fn classify(&mut self, g: &Geo, s: u32, t: Nanos) {
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
            Op::Read => self.classify_read(g, s, t),
            Op::Write
                if g.write_cache
                    && !sl.flags.contains(BioFlags::FUA)
                    && sl.n <= g.cache_sectors =>
            {
                if self.waiting.is_empty() && self.dirty.fits(g, lo, hi) {
                    self.dirty.add(g, lo, hi);
                    self.via_interface(g, s, t);
                } else {
                    self.slots[si].state = SlotState::Waiting;
                    self.waiting.push(s);
                }
            }
            _ => self.queue_media(g, s, true),
        }
    }

    /// Something happened at `t`: start the media if it is idle, stop
    /// read-ahead if the media is needed.
    pub(super) fn kick(&mut self, g: &Geo, t: Nanos) {
        match self.media {
            Media::Idle => self.decide(g, t),
            Media::Ahead(mut ra)
                if ra.stop.is_none()
                    && (!self.fifo.is_empty()
                        || !self.waiting.is_empty()
                        || self.barrier_ready()) =>
            {
                // Riders' data is read by `end`, and the checkpoint is the
                // end of the last rider (or the start).
                let end = t.max(ra.rider_end);
                let stop = if end >= ra.ck_t {
                    g.reached(ra.ck_lba, ra.ck_t, end, ra.target)
                } else {
                    ra.ck_lba.min(ra.target)
                };
                ra.stop = Some(stop);
                ra.end = end;
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
                    if let ((c, _), Some(j)) = self.best_dirty(g, t, (u64::MAX, u64::MAX)) {
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
            if !self.waiting.is_empty() && self.dirty.ext.is_empty() {
                self.accept_waiting(g, t);
            }
            if !self.fifo.is_empty() || !self.waiting.is_empty() {
                match self.choose(g, t) {
                    Pick::Queued(i, c) => self.start_req(g, t, i, c),
                    Pick::Dirty(j, c) => self.start_destage(g, t, j, c),
                    Pick::None => {}
                }
                return;
            }
            if let Some(from) = self.ra_from.take()
                && g.read_ahead > 0
                && from < g.capacity
            {
                self.start_ahead(g, t, from);
                return;
            }
            if let ((c, _), Some(j)) = self.best_dirty(g, t, (u64::MAX, u64::MAX)) {
                self.start_destage(g, t, j, c);
            }
            return;
        }
    }

    fn end_media(&mut self, g: &Geo, t: Nanos) {
        match std::mem::replace(&mut self.media, Media::Idle) {
            Media::Idle => {}
            Media::Req {
                slot,
                pos,
                xfer,
                cyl,
                head,
                ..
            } => {
                self.cyl = cyl;
                self.head = head;
                self.stats.positioning_ns += pos;
                self.stats.transfer_ns += xfer;
                let sl = self.slots[slot as usize];
                if sl.op == Op::Read {
                    self.buf = (sl.lba, sl.lba + sl.n);
                    self.ra_from = Some(sl.lba + sl.n);
                }
                self.finish(g, slot, t);
            }
            Media::Destage {
                lba,
                n,
                pos,
                xfer,
                cyl,
                head,
                ..
            } => {
                self.cyl = cyl;
                self.head = head;
                self.stats.positioning_ns += pos;
                self.stats.transfer_ns += xfer;
                self.dirty.clean(g, lba, lba + n);
                self.accept_waiting(g, t);
            }
            Media::Ahead(ra) => {
                let reached = ra.stop.unwrap_or(ra.target);
                let last = if reached > ra.lba0 {
                    reached - 1
                } else {
                    ra.lba0
                };
                let loc = g.locate(last.min(g.capacity - 1));
                self.cyl = loc.cyl;
                self.head = loc.head;
                let t0 = ra.t0.min(t);
                self.stats.positioning_ns += t0 - ra.start.min(t0);
                self.stats.transfer_ns += t - t0;
                if self.buf.1 == ra.lba0 {
                    self.buf.1 = reached;
                } else {
                    self.buf = (ra.lba0, reached);
                }
            }
        }
    }
}
