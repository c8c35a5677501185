//! The arm. Owns where the heads are ([`Mechanics`]: cylinder and head, moved
//! only when a media operation ends), and answers positioning questions from
//! there: the positioning cost to a target (overhead still to run, seek or
//! head switch, settle, rotational wait), the shortest-positioning search
//! over a list sorted by cylinder ([`sweep`]), and when a read could start.
//! [`Run`] is a media transfer's timing: when it ends, where the head ends
//! up, and how its time splits into positioning and transfer.
//!
//! The seek curve, rotation and transfer times themselves are fixed at build
//! time in `Geo` (`seek`, `geometry`, `timing`). This module uses no other
//! part of the drive; the command queue (`queue`) and the caches (`cache`)
//! use it, and the drive (`drive`) moves the heads.

use elevator_core::Nanos;

use super::geometry::{Geo, Loc};

/// Where the heads are: over cylinder `cyl`, head `head` selected.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Mechanics {
    cyl: u32,
    head: u32,
}

/// A media transfer, timed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    /// When the last sector has passed under the head.
    pub(super) end: Nanos,
    /// Positioning (seek, switch, rotational waits, also inside the
    /// transfer) and transfer time.
    pub(super) pos: u64,
    pub(super) xfer: u64,
    /// Where the head is at the end.
    pub(super) cyl: u32,
    pub(super) head: u32,
    /// When the first sector came under the head, and its cylinder.
    pub(super) start: Nanos,
    pub(super) start_cyl: u32,
}

impl Run {
    /// `n` sectors from `loc`, the first under the head at `t1`, with
    /// positioning counted from `from`.
    #[inline]
    pub(super) fn new(g: &Geo, loc: Loc, n: u64, from: Nanos, t1: Nanos) -> Run {
        let x = g.transfer(loc, n, t1);
        Run {
            end: x.end,
            pos: t1 - from + x.gaps,
            xfer: x.end - t1 - x.gaps,
            cyl: x.cyl,
            head: x.head,
            start: t1,
            start_cyl: loc.cyl,
        }
    }
}

impl Mechanics {
    /// The head's cylinder.
    #[inline]
    pub(super) fn cyl(&self) -> u32 {
        self.cyl
    }

    /// A media operation has ended with the head over `cyl`, `head`.
    #[inline]
    pub(super) fn move_to(&mut self, cyl: u32, head: u32) {
        self.cyl = cyl;
        self.head = head;
    }

    /// When `loc`'s first sector comes under the head for a read that
    /// starts positioning at `t`.
    pub(super) fn read_start(&self, g: &Geo, t: Nanos, loc: &Loc) -> Nanos {
        let arr = t + u64::from(g.lead(self.cyl, self.head, loc.cyl, loc.head, false));
        arr + g.wait_at(g.phase(loc), arr)
    }

    /// Positioning cost (overhead still to run, seek or switch, settle,
    /// rotational wait) from the head at `t` (`phase0 = t mod rev`) to a
    /// target `seek` away.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cost(
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
}

/// Shortest-positioning search over a list sorted by cylinder. It walks
/// outward from `cur`, first on the side whose nearest entry is closer, then
/// on the other, and on each side stops once the seek alone exceeds the best
/// cost found: the seek (non-decreasing with distance) is a lower bound of an
/// entry's cost, so the answer is a full scan's: the least `key(entry, seek)`
/// (cost, then tie-break), and its index, or `usize::MAX` if nothing beats
/// `best`. (Branch-free updates: this loop is the model's hot path.)
#[inline]
pub(super) fn sweep<T>(
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
