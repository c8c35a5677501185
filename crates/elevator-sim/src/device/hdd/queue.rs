//! The command queue (NCQ / TCQ): queued commands by cylinder and in
//! arrival order (`QEnt`), the positioning cost, the shortest-positioning
//! pick over queued commands and dirty extents (`sweep`, `Pick`), the age
//! limit and FIFO, and starting the picked command on the media.

use elevator_core::Nanos;

use super::drive::{Media, SlotState, State};
use super::geometry::Geo;

/// What to do next on the media.
pub(super) enum Pick {
    None,
    /// Serve the queued command at this index of `by_cyl`; its positioning
    /// cost.
    Queued(usize, u64),
    /// Destage this dirty extent; its positioning cost.
    Dirty(usize, u64),
}

/// A command queued for the media: what choosing it needs (by slot).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct QEnt {
    head: u32,
    phase: u32,
    ready: Nanos,
    seq: u64,
    write: bool,
}

/// Shortest-positioning search over a list sorted by cylinder. It walks
/// outward from `cur`, first on the side whose nearest entry is closer, then
/// on the other, and on each side stops once the seek alone exceeds the best
/// cost found: the seek (non-decreasing with distance) is a lower bound of an
/// entry's cost, so the answer is a full scan's: the least `key(entry, seek)`
/// (cost, then tie-break), and its index, or `usize::MAX` if nothing beats
/// `best`. (Branch-free updates: this loop is the model's hot path.)
#[inline]
fn sweep<T>(
    g: &Geo,
    cur: u32,
    list: &[T],
    cyl: impl Fn(&T) -> u32,
    mut key: impl FnMut(&T, u32) -> (u64, u64),
    best: (u64, u64),
) -> ((u64, u64), usize) {
    let start = list.partition_point(|x| cyl(x) < cur);
    let (below, above) = list.split_at(start);
    let mut best = u128::from(best.0) << 64 | u128::from(best.1);
    let mut pick = usize::MAX;
    let mut visit = |i: usize, x: &T, d: u32| -> bool {
        let seek = g.seek.ns(d);
        if u64::from(seek) > (best >> 64) as u64 {
            return false;
        }
        let (c, t) = key(x, seek);
        let k = u128::from(c) << 64 | u128::from(t);
        pick = select(k < best, i as u64, pick as u64) as usize;
        best = best.min(k);
        true
    };
    let up_first = match (below.last(), above.first()) {
        (Some(b), Some(a)) => cyl(a) - cur <= cur - cyl(b),
        _ => true,
    };
    for pass in 0..2 {
        if (pass == 0) == up_first {
            for (k, x) in above.iter().enumerate() {
                if !visit(start + k, x, cyl(x) - cur) {
                    break;
                }
            }
        } else {
            for (k, x) in below.iter().enumerate().rev() {
                if !visit(k, x, cur - cyl(x)) {
                    break;
                }
            }
        }
    }
    (((best >> 64) as u64, best as u64), pick)
}

/// `if c { a } else { b }` without a branch.
#[inline(always)]
fn select(c: bool, a: u64, b: u64) -> u64 {
    let m = u64::from(c).wrapping_neg();
    (a & m) | (b & !m)
}

impl State {
    pub(super) fn queue_media(&mut self, g: &Geo, s: u32, write: bool) {
        let sl = &mut self.slots[s as usize];
        sl.state = SlotState::Queued;
        let e = QEnt {
            head: sl.loc.head,
            phase: g.phase(&sl.loc),
            ready: sl.ready,
            seq: sl.seq,
            write,
        };
        let key = u64::from(sl.loc.cyl) << 32 | u64::from(s);
        if self.qent.len() <= s as usize {
            self.qent.resize(s as usize + 1, QEnt::default());
        }
        self.qent[s as usize] = e;
        // An insertion-sort step: for a few dozen entries, cheaper than a
        // binary search and a call to memmove.
        self.by_cyl.push(key);
        let v = &mut self.by_cyl[..];
        let mut j = v.len() - 1;
        while j > 0 && v[j - 1] > key {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = key;
        self.fifo.push_back((e.seq, s));
    }

    /// Whether a `fifo` entry is still a queued command.
    fn in_queue(&self, (seq, s): (u64, u32)) -> bool {
        let sl = &self.slots[s as usize];
        sl.state == SlotState::Queued && sl.seq == seq
    }

    /// Positioning cost (overhead still to run, seek or switch, settle,
    /// rotational wait) from the head at `t` (`phase0 = t mod rev`) to a
    /// target `seek` away.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn cost(
        &self,
        g: &Geo,
        t: Nanos,
        phase0: u64,
        seek: u32,
        head: u32,
        phase: u32,
        write: bool,
        ready: Nanos,
    ) -> u64 {
        let lead = ready.saturating_sub(t) + u64::from(g.lead_after(seek, self.head, head, write));
        let y = u64::from(phase) + g.kt - (phase0 + lead);
        lead + u64::from(g.fastmod(y as u32))
    }

    /// The next media operation among queued commands and, while a write
    /// waits for room, dirty extents.
    pub(super) fn choose(&self, g: &Geo, t: Nanos) -> Pick {
        let fq = self
            .fifo
            .front()
            .map(|&(_, s)| (s, &self.slots[s as usize]));
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
            let phase0 = t % g.rev;
            return match oldest_queued {
                Some(s) => {
                    let cyl = self.slots[s as usize].loc.cyl;
                    let key = u64::from(cyl) << 32 | u64::from(s);
                    let i = self.by_cyl.partition_point(|&k| k < key);
                    let e = &self.qent[s as usize];
                    let seek = g.seek.ns(cyl.abs_diff(self.cyl));
                    Pick::Queued(
                        i,
                        self.cost(g, t, phase0, seek, e.head, e.phase, e.write, e.ready),
                    )
                }
                None => match self.best_dirty(g, t, (u64::MAX, u64::MAX)) {
                    ((c, _), Some(j)) => Pick::Dirty(j, c),
                    _ => Pick::None,
                },
            };
        }
        let phase0 = t % g.rev;
        let (best, q) = sweep(
            g,
            self.cyl,
            &self.by_cyl,
            |&k| (k >> 32) as u32,
            |&k, seek| {
                let e = &self.qent[k as u32 as usize];
                let c = self.cost(g, t, phase0, seek, e.head, e.phase, e.write, e.ready);
                (c, e.seq)
            },
            (u64::MAX, u64::MAX),
        );
        if !self.waiting.is_empty()
            && let ((c, _), Some(j)) = self.best_dirty(g, t, best)
        {
            return Pick::Dirty(j, c);
        }
        if q == usize::MAX {
            Pick::None
        } else {
            Pick::Queued(q, best.0)
        }
    }

    /// The dirty extent with the shortest positioning time, if it beats
    /// `best` (ties: queued commands first, then the lower LBA).
    pub(super) fn best_dirty(
        &self,
        g: &Geo,
        t: Nanos,
        best: (u64, u64),
    ) -> ((u64, u64), Option<usize>) {
        let phase0 = t % g.rev;
        let ext = &self.dirty.ext;
        let (best, j) = sweep(
            g,
            self.cyl,
            ext,
            |x| x.loc.cyl,
            |x, seek| {
                let c = self.cost(g, t, phase0, seek, x.loc.head, x.phase, true, 0);
                (c, (1 << 63) | x.lba)
            },
            best,
        );
        (best, (j != usize::MAX).then_some(j))
    }

    /// Serve `by_cyl[i]`, whose first sector comes under the head `cost`
    /// after `t`.
    pub(super) fn start_req(&mut self, g: &Geo, t: Nanos, i: usize, cost: u64) {
        let Some(&key) = self.by_cyl.get(i) else {
            return;
        };
        let v = &mut self.by_cyl[..];
        for j in i + 1..v.len() {
            v[j - 1] = v[j];
        }
        self.by_cyl.pop();
        let s = key as u32;
        let e = self.qent[s as usize];
        self.slots[s as usize].state = SlotState::Media;
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
        let sl = &self.slots[s as usize];
        let t0 = t.max(e.ready);
        let t1 = t + cost;
        let x = g.transfer(sl.loc, sl.n, t1);
        if e.write && sl.lba < self.buf.1 && self.buf.0 < sl.lba + sl.n {
            self.buf = (0, 0);
        }
        self.media = Media::Req {
            slot: s,
            end: x.end,
            pos: t1 - t0 + x.gaps,
            xfer: x.end - t1 - x.gaps,
            cyl: x.cyl,
            head: x.head,
        };
        self.ra_from = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::hdd::HddParams;
    use crate::device::hdd::drive::Slot;
    use elevator_core::Op;

    /// The pruned, nearest-first search picks what a full scan with the
    /// plain formulas (`%`, no table tricks) picks, ties to the oldest.
    #[test]
    fn sweep_equals_a_full_scan() {
        for (name, over) in [("hdd-7200", "32"), ("hdd-sas-15k", "64")] {
            let mut p = HddParams::preset(name).unwrap();
            p.set("ncq", over).unwrap();
            let g = Geo::new(&p).unwrap();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut rnd = move |n: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % n
            };
            for round in 0..3000 {
                let depth = 1 + rnd(u64::from(p.ncq)) as usize;
                let mut st = State::new(depth, 64);
                let t = 1_000_000_000 + rnd(1 << 40);
                // Some rounds cluster the candidates (and duplicate them)
                // so that ties and equal cylinders occur.
                let span = if round % 3 == 0 { 50_000 } else { g.capacity };
                for k in 0..depth as u32 {
                    let s = st.free.pop().unwrap();
                    let lba = if round % 5 == 0 && k % 2 == 1 {
                        st.slots[(s - 1) as usize].lba
                    } else {
                        rnd(span)
                    };
                    st.slots[s as usize] = Slot {
                        lba,
                        n: 8,
                        seq: u64::from(k),
                        arrival: t,
                        loc: g.locate(lba),
                        ..Slot::FREE
                    };
                    st.classify(&g, s, t - rnd(3 * g.overhead));
                    if st.slots[s as usize].state != SlotState::Queued {
                        // A read-buffer hit; make it a media write instead.
                        st.slots[s as usize].op = Op::Write;
                        st.queue_media(&g, s, true);
                    }
                    if rnd(2) == 0 {
                        st.qent[s as usize].write = true;
                    }
                }
                let cur = g.locate(rnd(g.capacity));
                st.cyl = cur.cyl;
                st.head = cur.head;
                let Pick::Queued(i, cost) = st.choose(&g, t) else {
                    panic!("nothing picked");
                };
                let picked = st.by_cyl[i] as u32;
                let brute = st
                    .by_cyl
                    .iter()
                    .map(|&k| {
                        let s = k as u32;
                        let e = &st.qent[s as usize];
                        let t0 = t.max(e.ready);
                        let l = g.lead(st.cyl, st.head, (k >> 32) as u32, e.head, e.write);
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
