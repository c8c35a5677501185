//! How a [`FaultDevice`] decides each I/O's faults as it is submitted
//! ([`Plan`]), sends on what reaches the device underneath (all of it,
//! its torn prefix, or the whole at a misdirected place), and makes the
//! device's completion into what the caller sees, and when.

use elevator_core::{DeviceIo, Nanos, Op, Outcome, Sector, Status};

use super::media::Media;
use super::{FaultDevice, failed};
use crate::device::{DataDevice, DataSegment};
use elevator_core::fault::{self, FaultCounts, FaultKind};

/// No injected failure.
const NONE: u64 = u64::MAX;

/// What was decided for one I/O in flight at the device underneath.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    /// Good bytes of an injected `IoError`, or [`NONE`].
    fail: u64,
    /// Which fault that is.
    kind: FaultKind,
    /// When it times out (`None`: it does not).
    timeout_at: Option<Nanos>,
    /// Whether its completion is held back by a spike.
    spike: bool,
}

impl Plan {
    pub(super) const CLEAN: Plan = Plan {
        fail: NONE,
        kind: FaultKind::Failed,
        timeout_at: None,
        spike: false,
    };

    /// Nobody waits for it any more: no timeout, no spike.
    pub(super) fn forget_waits(&mut self) {
        self.timeout_at = None;
        self.spike = false;
    }

    /// Fail at `good` bytes for `kind`, unless an earlier byte fails already.
    fn fail(&mut self, kind: FaultKind, good: u64) {
        if good < self.fail {
            self.fail = good;
            self.kind = kind;
        }
    }
}

impl<D: DataDevice> FaultDevice<D> {
    /// Latent bad sectors in `start..end` are repaired (a write reached
    /// them).
    fn repair(&mut self, start: Sector, end: Sector) {
        let n = self.media.repair(start, end);
        if n > 0 {
            self.bump(FaultKind::LseRepaired, n);
        }
    }

    /// Where a misdirected write of `io` lands: another block-aligned
    /// place of its length inside the device.
    fn misplace(&mut self, io: &DeviceIo) -> Sector {
        let limits = self.inner.limits();
        let block = u64::from(limits.logical_block_size.max(512) >> 9);
        let len = u64::from(io.sectors);
        if len > limits.capacity {
            return io.sector;
        }
        let slots = (limits.capacity - len) / block + 1;
        if slots < 2 {
            return io.sector;
        }
        let own = io.sector / block;
        let mut pick = self.rng.below(slots - 1);
        if pick >= own {
            pick += 1;
        }
        pick * block
    }

    /// Decide `io`'s faults and send it (or what is left of it) on.
    ///
    /// # Safety
    ///
    /// As [`DataDevice::submit_data`] for `data`, if given.
    pub(super) unsafe fn route(&mut self, io: DeviceIo, data: Option<&[DataSegment]>, now: Nanos) {
        self.note_time(now);
        let i = io.tag as usize;
        if i >= self.plans.len() {
            self.plans.resize(i + 1, None);
        }
        debug_assert!(
            self.plans[i].is_none(),
            "tag {} submitted while in flight",
            io.tag
        );
        if self.vanished() {
            self.plans[i] = Some(Plan::CLEAN);
            self.unsent.push_back((io.tag, failed(Status::Offline, 0)));
            return;
        }
        let start = io.sector;
        let end = start + u64::from(io.sectors);
        let mut plan = Plan::CLEAN;
        if io.sectors > 0
            && let Some(bad) = fault::first_in(&self.bad, start, end)
        {
            plan.fail(FaultKind::Failed, (bad - start) << 9);
        }
        let rw = matches!(io.op, Op::Read | Op::Write);
        if rw && self.chance(self.fail) {
            plan.fail(FaultKind::Failed, 0);
        }
        let mut sent = io;
        if io.op == Op::Write && data.is_some() && io.sectors > 0 {
            if self.chance(self.torn) {
                let block = u64::from(self.inner.limits().logical_block_size.max(512) >> 9);
                let keep = fault::torn_prefix(&mut self.rng, u64::from(io.sectors), block) << 9;
                sent.sectors = (keep >> 9) as u32;
                plan.fail(FaultKind::Torn, keep);
                self.bump(FaultKind::Torn, 1);
            } else if self.chance(self.misdirect) {
                sent.sector = self.misplace(&io);
                self.bump(FaultKind::Misdirected, 1);
            }
        }
        if io.op == Op::Read
            && io.sectors > 0
            && let Some(bad) = self.media.latent(start, end)
        {
            plan.fail(FaultKind::LseRead, (bad - start) << 9);
        }
        if self.chance(self.timeout) {
            plan.timeout_at = Some(now.saturating_add(self.spec.timeout.as_nanos() as Nanos));
        }
        plan.spike = self.chance(self.spike);
        if matches!(io.op, Op::Write | Op::WriteZeroes) && (data.is_some() || io.op != Op::Write) {
            self.repair(sent.sector, sent.sector + u64::from(sent.sectors));
        }
        self.plans[i] = Some(plan);
        if io.op == Op::Write && sent.sectors == 0 && io.sectors > 0 {
            // Torn before its first block: nothing reaches the device.
            self.unsent.push_back((io.tag, failed(Status::IoError, 0)));
            return;
        }
        match data {
            None => self.inner.submit(sent, now),
            Some(data) if sent.sectors == io.sectors => {
                // SAFETY: passed through unchanged; our caller keeps the
                // contract.
                unsafe { self.inner.submit_data(sent, data, now) }
            }
            Some(data) => {
                let mut segs = std::mem::take(&mut self.segs);
                segs.clear();
                let mut left = sent.bytes();
                for s in data {
                    if left == 0 {
                        break;
                    }
                    let len = u64::from(s.len).min(left);
                    segs.push(DataSegment {
                        addr: s.addr,
                        len: len as u32,
                    });
                    left -= len;
                }
                // SAFETY: a leading part of the caller's segments, which it
                // keeps valid until this tag completes.
                unsafe { self.inner.submit_data(sent, &segs, now) };
                self.segs = segs;
            }
        }
    }

    /// What the caller sees of the device underneath's `outcome` for `tag`
    /// at `now`, and when (`now` or later).
    pub(super) fn resolve(
        &mut self,
        tag: u32,
        outcome: Outcome,
        now: Nanos,
        gone: bool,
    ) -> (Outcome, Nanos) {
        let plan = self.plans.get_mut(tag as usize).and_then(Option::take);
        debug_assert!(plan.is_some(), "tag {tag} completed but not in flight");
        let plan = plan.unwrap_or(Plan::CLEAN);
        if gone {
            return (failed(Status::Offline, 0), now);
        }
        let mut outcome = match outcome {
            _ if plan.fail == NONE => outcome,
            // The device's own failure comes first (or at the same byte):
            // its status is the one the caller must see (ENOSPC, a
            // cancellation at shutdown), not the injected one.
            Outcome::Failed { status, good_bytes }
                if status != Status::Ok && good_bytes <= plan.fail =>
            {
                outcome
            }
            _ => {
                if plan.kind != FaultKind::Torn {
                    self.bump(plan.kind, 1);
                }
                failed(Status::IoError, plan.fail)
            }
        };
        let mut due = now;
        if let Some(at) = plan.timeout_at {
            outcome = failed(Status::TimedOut, 0);
            due = due.max(at);
        }
        if plan.spike {
            self.bump(FaultKind::Spike, 1);
            due = due.max(now.saturating_add(self.spec.spike.as_nanos() as Nanos));
        }
        (outcome, due)
    }

    /// Report `outcome` for `tag`, counting what a fault made of it.
    pub(super) fn report(
        counts: &mut FaultCounts,
        media: &Media,
        tag: u32,
        outcome: Outcome,
        done: &mut dyn FnMut(u32, Outcome),
    ) {
        if let Outcome::Failed { status, .. } = outcome {
            let kind = match status {
                Status::TimedOut => Some(FaultKind::Timeout),
                Status::Offline => Some(FaultKind::Offline),
                _ => None,
            };
            if let Some(kind) = kind {
                counts.bump(kind, 1);
                media.bump(kind, 1);
            }
        }
        done(tag, outcome);
    }
}
