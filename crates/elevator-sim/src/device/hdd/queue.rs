//! The command queue (NCQ / TCQ). Owns the commands queued for the media
//! ([`Queue`]): by cylinder (for the shortest-positioning pick) and in
//! arrival order (for the age limit and FIFO service), with what choosing
//! one needs (`QEnt`). It answers which queued command positions fastest
//! from where the heads are, or where the oldest one is, and hands a chosen
//! command over to the media.
//!
//! It knows commands only by slot number and uses only the arm
//! (`mechanics`); the drive (`drive`) queues commands, combines the pick
//! with destaging, and starts the media.

use std::collections::VecDeque;

use elevator_core::Nanos;

use super::geometry::{Geo, Loc};
use super::mechanics::{Mechanics, sweep};

/// A command queued for the media: what choosing it needs (by slot).
#[derive(Clone, Copy, Debug, Default)]
struct QEnt {
    cyl: u32,
    head: u32,
    phase: u32,
    /// Still queued (not yet handed to the media).
    queued: bool,
    write: bool,
    ready: Nanos,
    seq: u64,
}

/// The commands queued for the media.
#[derive(Debug)]
pub(super) struct Queue {
    /// Commands queued for the media as `cylinder << 32 | slot`, sorted.
    by_cyl: Vec<u64>,
    /// Their details, by slot.
    qent: Vec<QEnt>,
    /// The same commands in arrival order, `(seq, slot)`. Entries of
    /// commands that have left the queue are dropped when they reach the
    /// front (which is therefore always a queued command) or on compaction.
    fifo: VecDeque<(u64, u32)>,
}

impl Clone for Queue {
    fn clone(&self) -> Queue {
        let mut q = Queue::new(0);
        q.clone_from(self);
        q
    }

    /// Field by field, reusing the allocations.
    fn clone_from(&mut self, o: &Queue) {
        self.by_cyl.clone_from(&o.by_cyl);
        self.qent.clone_from(&o.qent);
        self.fifo.clone_from(&o.fifo);
    }
}

impl Queue {
    /// An empty queue with room for `depth` commands.
    pub(super) fn new(depth: usize) -> Queue {
        Queue {
            by_cyl: Vec::with_capacity(depth),
            qent: vec![QEnt::default(); depth],
            fifo: VecDeque::with_capacity(4 * depth + 16),
        }
    }

    /// Whether no command is queued.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        debug_assert_eq!(self.fifo.is_empty(), self.by_cyl.is_empty());
        self.fifo.is_empty()
    }

    /// Queue slot `s`'s command (`seq`, at `loc`, ready to start at
    /// `ready`).
    pub(super) fn push(&mut self, g: &Geo, s: u32, loc: &Loc, ready: Nanos, seq: u64, write: bool) {
        let e = QEnt {
            cyl: loc.cyl,
            head: loc.head,
            phase: g.phase(loc),
            queued: true,
            write,
            ready,
            seq,
        };
        let key = u64::from(loc.cyl) << 32 | u64::from(s);
        if self.qent.len() <= s as usize {
            self.qent.resize(s as usize + 1, QEnt::default());
        }
        self.qent[s as usize] = e;
        // A binary search and one block move (keys are unique: the slot is
        // in the low half): fewer instructions than an insertion-sort step
        // over a few dozen entries.
        let j = self.by_cyl.partition_point(|&k| k < key);
        self.by_cyl.insert(j, key);
        self.fifo.push_back((e.seq, s));
    }

    /// The slot of the oldest queued command.
    #[inline]
    pub(super) fn oldest(&self) -> Option<u32> {
        self.fifo.front().map(|&(_, s)| s)
    }

    /// Whether a `fifo` entry is still a queued command.
    fn in_queue(&self, (seq, s): (u64, u32)) -> bool {
        let e = &self.qent[s as usize];
        e.queued && e.seq == seq
    }

    /// Queued slot `s`'s index (for [`Queue::take`]) and positioning cost
    /// from the head at `t`.
    pub(super) fn cost_of(&self, g: &Geo, m: &Mechanics, t: Nanos, s: u32) -> (usize, u64) {
        let phase0 = t % g.rev;
        let e = &self.qent[s as usize];
        let key = u64::from(e.cyl) << 32 | u64::from(s);
        let i = self.by_cyl.partition_point(|&k| k < key);
        let seek = g.seek.ns(e.cyl.abs_diff(m.cyl()));
        (
            i,
            m.cost(g, t, phase0, seek, e.head, e.phase, e.write, e.ready),
        )
    }

    /// The queued command with the shortest positioning time from the head
    /// at `t` (ties to the oldest): its `(cost, seq)` and index (for
    /// [`Queue::take`]), or `usize::MAX` if the queue is empty.
    pub(super) fn best(&self, g: &Geo, m: &Mechanics, t: Nanos) -> ((u64, u64), usize) {
        let phase0 = t % g.rev;
        sweep(
            g,
            m.cyl(),
            &self.by_cyl,
            |&k| (k >> 32) as u32,
            |&k, seek| {
                let e = &self.qent[k as u32 as usize];
                let c = m.cost(g, t, phase0, seek, e.head, e.phase, e.write, e.ready);
                (c, e.seq)
            },
            (u64::MAX, u64::MAX),
        )
    }

    /// Take the command at index `i` off the queue for the media: its
    /// slot, when it is ready, and whether it writes.
    pub(super) fn take(&mut self, i: usize) -> Option<(u32, Nanos, bool)> {
        if i >= self.by_cyl.len() {
            return None;
        }
        let key = self.by_cyl.remove(i);
        let s = key as u32;
        self.qent[s as usize].queued = false;
        let e = self.qent[s as usize];
        while let Some(&f) = self.fifo.front() {
            if self.in_queue(f) {
                break;
            }
            self.fifo.pop_front();
        }
        if self.fifo.len() > 4 * self.qent.len() + 8 {
            let mut fifo = std::mem::take(&mut self.fifo);
            fifo.retain(|&f| self.in_queue(f));
            self.fifo = fifo;
        }
        Some((s, e.ready, e.write))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::hdd::HddParams;

    /// The pruned, nearest-first search picks what a full scan with the
    /// plain formulas (`%`, no table tricks) picks, ties to the oldest.
    #[test]
    fn sweep_equals_a_full_scan() {
        for (name, over) in [("hdd-7200", "32"), ("hdd-sas-15k", "64")] {
            let mut p = HddParams::preset(name).unwrap();
            p.set("ncq", over).unwrap();
            let g = Geo::new(&p).unwrap();
            let mut rng = elevator_core::rng::Rng::new(0x9e37_79b9_7f4a_7c15);
            let mut rnd = move |n: u64| rng.below(n);
            for round in 0..3000 {
                let depth = 1 + rnd(u64::from(p.ncq)) as usize;
                let mut q = Queue::new(depth);
                let t = 1_000_000_000 + rnd(1 << 40);
                // Some rounds cluster the candidates (and duplicate them)
                // so that ties and equal cylinders occur.
                let span = if round % 3 == 0 { 50_000 } else { g.capacity };
                let mut prev = 0;
                for k in 0..depth as u32 {
                    let lba = if round % 5 == 0 && k % 2 == 1 {
                        prev
                    } else {
                        rnd(span)
                    };
                    prev = lba;
                    // Arrived up to three overheads ago.
                    let ready = t - rnd(3 * g.overhead) + g.overhead;
                    let write = rnd(2) == 0;
                    q.push(&g, k, &g.locate(lba), ready, u64::from(k), write);
                }
                let cur = g.locate(rnd(g.capacity));
                let mut m = Mechanics::default();
                m.move_to(cur.cyl, cur.head);
                let ((cost, _), i) = q.best(&g, &m, t);
                assert!(i != usize::MAX, "nothing picked");
                let picked = q.by_cyl[i] as u32;
                let brute = q
                    .by_cyl
                    .iter()
                    .map(|&k| {
                        let s = k as u32;
                        let e = &q.qent[s as usize];
                        let t0 = t.max(e.ready);
                        let l = g.lead(cur.cyl, cur.head, (k >> 32) as u32, e.head, e.write);
                        let arr = t0 + u64::from(l);
                        let w = (u64::from(e.phase) + g.rev - arr % g.rev) % g.rev;
                        (arr + w - t, e.seq, s)
                    })
                    .min()
                    .unwrap();
                assert_eq!((cost, picked), (brute.0, brute.2), "{name} round {round}");
            }
        }
    }
}
