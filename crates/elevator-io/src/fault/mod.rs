//! A device that misbehaves on purpose, wrapping any [`DataDevice`]: it
//! fails, tears, misplaces, delays or never answers I/O, or vanishes, as a
//! [`FaultSpec`] says (the options and their defaults are listed in
//! [`options`]). Every random choice comes from `fail_seed`, so a failing
//! run can be repeated.
//!
//! What each fault does to the bytes on the device underneath:
//!
//! - `fail_rate`, `fail_sectors`: the I/O goes to the device whole; its
//!   completion is changed to `IoError`, reporting as good the bytes before
//!   the first bad sector it touches (none for `fail_rate`). A failed write's
//!   bytes did land.
//! - `lse_sectors` (latent sector errors): a read touching a bad sector
//!   fails with `IoError`, good bytes those before the first bad sector (the
//!   read itself goes to the device whole). A write or write-zeroes reaching
//!   a bad sector repairs it (a disk remaps it): later reads of it succeed.
//!   The bad sectors are the device's, shared by every share of it.
//! - `torn_rate`: a write is cut to a random prefix of whole logical blocks
//!   (none up to all but one), and only that prefix is submitted to the
//!   device underneath (nothing at all for an empty prefix); the rest of
//!   the range keeps its old bytes. It completes `IoError` with the prefix
//!   as good bytes.
//! - `misdirect_rate`: a write is submitted to another place (a random
//!   position, block-aligned, within the device, never its own unless the
//!   device has room for no other), so its data really lands there and the
//!   intended range keeps its old bytes; it completes `Ok`.
//! - `spike_rate`, `spike_ms`: the completion is held back `spike_ms` after
//!   the device underneath reported it.
//! - `timeout_rate`, `timeout_ms`: the I/O still goes to the device (so a
//!   timed-out write's data lands), but its completion is held until
//!   `timeout_ms` after its submission (or until the device reports it, if
//!   that is later: memory it moves must stay lent until then), and then
//!   completes `TimedOut` with no good bytes.
//! - `vanish_at`: from that time after the device was opened (on the real
//!   clock, the same moment for every share), new I/O is not sent to the
//!   device underneath, and everything, in flight, held back or new,
//!   completes `Offline` with no good bytes.
//!
//! A failure of the device underneath that comes first (at or before the
//! injected one's good bytes) is reported as it is. Held completions are
//! reported by [`Device::complete`] once `now` passes their time;
//! [`Device::next_completion`] and [`DataDevice::wait`] wake for them, and
//! [`DataDevice::cancel_all`] releases them at once (a timed-out one as
//! `Cancelled`). Each kind of fault is counted ([`FaultDevice::counts`]).

mod counts;
pub mod options;
mod sectors;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use elevator_core::{Device, DeviceIo, DeviceStats, Limits, Nanos, Op, Outcome, Sector, Status};
use elevator_fio::rng::Rng;

use crate::device::{Alignment, DataDevice, DataSegment, DeviceError};
pub use counts::FaultCounts;
use counts::{Kind, SharedCounts};
pub use options::{DEFAULT_SPIKE, DEFAULT_TIMEOUT, FAULT_OPTIONS, FaultSpec};
use sectors::SectorSet;

/// No injected failure.
const NONE: u64 = u64::MAX;

/// What every share of one device has in common: its media's latent bad
/// sectors, when it vanishes, and its fault counts.
struct Media {
    /// Latent bad sectors not yet repaired.
    lse: Mutex<SectorSet>,
    /// Whether there were any to begin with (no lock taken otherwise).
    has_lse: bool,
    /// When the device goes.
    vanish: Option<Instant>,
    totals: SharedCounts,
}

/// The fault counts of a device and all its shares, readable from any
/// thread, even once the device is gone ([`FaultDevice::tally`]).
#[derive(Clone)]
pub struct FaultTally(Arc<Media>);

impl FaultTally {
    /// The faults injected so far, by kind.
    pub fn get(&self) -> FaultCounts {
        self.0.totals.get()
    }
}

impl std::fmt::Debug for FaultTally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FaultTally").field(&self.get()).finish()
    }
}

/// What was decided for one I/O in flight at the device underneath.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Good bytes of an injected `IoError`, or [`NONE`].
    fail: u64,
    /// Which fault that is.
    kind: Kind,
    /// When it times out (`None`: it does not).
    timeout_at: Option<Nanos>,
    /// Whether its completion is held back by a spike.
    spike: bool,
}

impl Plan {
    const CLEAN: Plan = Plan {
        fail: NONE,
        kind: Kind::Failed,
        timeout_at: None,
        spike: false,
    };

    /// Fail at `good` bytes for `kind`, unless an earlier byte fails already.
    fn fail(&mut self, kind: Kind, good: u64) {
        if good < self.fail {
            self.fail = good;
            self.kind = kind;
        }
    }
}

/// A completion held back until `due`.
#[derive(Clone, Copy, Debug)]
struct Held {
    tag: u32,
    outcome: Outcome,
    due: Nanos,
}

/// A device whose I/O misbehaves as told.
pub struct FaultDevice<D> {
    inner: D,
    /// As built (a share misbehaves the same way).
    spec: FaultSpec,
    /// Shares made so far (each gets its own seed).
    shares: AtomicU64,
    media: Arc<Media>,
    bad: Vec<(Sector, Sector)>,
    /// Probabilities in parts per 2^32.
    fail: u64,
    torn: u64,
    misdirect: u64,
    spike: u64,
    timeout: u64,
    rng: Rng,
    /// The plan of each tag at the device underneath, by tag.
    plans: Vec<Option<Plan>>,
    /// Completions decided without the device underneath (not sent: the
    /// device had vanished, or a torn write kept nothing), with their plans.
    unsent: VecDeque<(u32, Outcome)>,
    /// Completions held back, in no order.
    held: Vec<Held>,
    /// Torn writes' shortened segments.
    segs: Vec<DataSegment>,
    /// Completions being resolved by `complete` (kept for its capacity).
    got: Vec<(u32, Outcome)>,
    /// Whether any fault depends on time (so the clock is read).
    timed: bool,
    /// The last `now` given and the real time it was given at, to tell the
    /// time between calls.
    anchor: (Nanos, Instant),
    counts: FaultCounts,
}

/// A probability in parts per 2^32.
fn threshold(rate: f64) -> u64 {
    let rate = if rate.is_finite() {
        rate.clamp(0.0, 1.0)
    } else {
        0.0
    };
    (rate * (1u64 << 32) as f64) as u64
}

fn failed(status: Status, good_bytes: u64) -> Outcome {
    Outcome::Failed { status, good_bytes }
}

impl<D: DataDevice> FaultDevice<D> {
    /// `inner`, misbehaving as `spec` says; `vanish_at` counts from now.
    pub fn new(inner: D, spec: &FaultSpec) -> FaultDevice<D> {
        let media = Arc::new(Media {
            lse: Mutex::new(SectorSet::new(&spec.lse_sectors)),
            has_lse: !spec.lse_sectors.is_empty(),
            vanish: spec.vanish_at.and_then(|t| Instant::now().checked_add(t)),
            totals: SharedCounts::default(),
        });
        FaultDevice::on(inner, spec, media)
    }

    fn on(inner: D, spec: &FaultSpec, media: Arc<Media>) -> FaultDevice<D> {
        let depth = inner.queue_depth() as usize;
        let segs = usize::from(inner.limits().max_segments);
        FaultDevice {
            spec: spec.clone(),
            shares: AtomicU64::new(0),
            media,
            bad: spec.bad_sectors.clone(),
            fail: threshold(spec.fail_rate),
            torn: threshold(spec.torn_rate),
            misdirect: threshold(spec.misdirect_rate),
            spike: threshold(spec.spike_rate),
            timeout: threshold(spec.timeout_rate),
            rng: Rng::new(spec.seed),
            plans: Vec::with_capacity(depth),
            unsent: VecDeque::with_capacity(depth),
            held: Vec::with_capacity(depth),
            segs: Vec::with_capacity(segs),
            got: Vec::with_capacity(depth),
            timed: spec.spike_rate > 0.0 || spec.timeout_rate > 0.0 || spec.vanish_at.is_some(),
            anchor: (0, Instant::now()),
            counts: FaultCounts::default(),
            inner,
        }
    }

    /// The device underneath.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// What it does.
    pub fn spec(&self) -> &FaultSpec {
        &self.spec
    }

    /// The same faults over `inner` (a share of this device's own, for
    /// another thread): the same media (its latent bad sectors, as writes
    /// through any share repair them, and the moment it vanishes), the
    /// same rates, with the random choices seeded anew, so that two shares
    /// do not misbehave on the same sequence of I/Os. Share number `n`
    /// (the first is 1) of a device whose seed is `s` gets seed
    /// `s + n * 0x9E37_79B9_7F4A_7C15` (wrapping), so a run that shares the
    /// same way repeats. Its counts start at 0: each share counts its own
    /// ([`FaultDevice::device_counts`] adds up all of them).
    pub fn share_with(&self, inner: D) -> FaultDevice<D> {
        let n = self.shares.fetch_add(1, Ordering::Relaxed) + 1;
        let spec = FaultSpec {
            seed: self
                .spec
                .seed
                .wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            ..self.spec.clone()
        };
        FaultDevice::on(inner, &spec, Arc::clone(&self.media))
    }

    /// Completions whose status a fault changed, through this handle.
    pub fn injected(&self) -> u64 {
        self.counts.injected()
    }

    /// This handle's faults, by kind.
    pub fn counts(&self) -> FaultCounts {
        self.counts
    }

    /// The device's faults, by kind, over every share of it.
    pub fn device_counts(&self) -> FaultCounts {
        self.media.totals.get()
    }

    /// A handle on [`FaultDevice::device_counts`] that outlives the device
    /// and its shares (for a run that hands its devices over and reports
    /// the faults after).
    pub fn tally(&self) -> FaultTally {
        FaultTally(Arc::clone(&self.media))
    }

    /// Whether the device has vanished (`vanish_at` has passed).
    pub fn vanished(&self) -> bool {
        self.media.vanish.is_some_and(|t| Instant::now() >= t)
    }

    fn bump(&mut self, kind: Kind, n: u64) {
        self.counts.bump(kind, n);
        self.media.totals.bump(kind, n);
    }

    /// Whether a choice with probability `t` (parts per 2^32) comes up; no
    /// random number is drawn for a probability of 0.
    fn chance(&mut self, t: u64) -> bool {
        t > 0 && (self.rng.next_u64() >> 32) < t
    }

    fn note_time(&mut self, now: Nanos) {
        if self.timed {
            self.anchor = (now, Instant::now());
        }
    }

    /// The time now on the clock `now` is given by, from the last one given.
    fn estimated_now(&self) -> Nanos {
        self.anchor
            .0
            .saturating_add(self.anchor.1.elapsed().as_nanos() as Nanos)
    }

    /// When the device vanishes on that clock, if it has not yet.
    fn vanish_nanos(&self) -> Option<Nanos> {
        let t = self.media.vanish?;
        let left = t.checked_duration_since(Instant::now())?;
        Some(
            self.estimated_now()
                .saturating_add(left.as_nanos() as Nanos),
        )
    }

    /// Latent bad sectors in `start..end` are repaired (a write reached
    /// them).
    fn repair(&mut self, start: Sector, end: Sector) {
        if !self.media.has_lse {
            return;
        }
        let n = self
            .media
            .lse
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(start, end);
        if n > 0 {
            self.bump(Kind::LseRepaired, n);
        }
    }

    /// The first latent bad sector in `start..end`.
    fn latent(&self, start: Sector, end: Sector) -> Option<Sector> {
        if !self.media.has_lse {
            return None;
        }
        self.media
            .lse
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .first_in(start, end)
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
    unsafe fn route(&mut self, io: DeviceIo, data: Option<&[DataSegment]>, now: Nanos) {
        self.note_time(now);
        let i = io.tag as usize;
        if i >= self.plans.len() {
            self.plans.resize(i + 1, None);
        }
        if self.vanished() {
            self.plans[i] = Some(Plan::CLEAN);
            self.unsent.push_back((io.tag, failed(Status::Offline, 0)));
            return;
        }
        let start = io.sector;
        let end = start + u64::from(io.sectors);
        let mut plan = Plan::CLEAN;
        if io.sectors > 0
            && let Some(bad) = self
                .bad
                .iter()
                .filter(|&&(s, e)| s < end && start < e)
                .map(|&(s, _)| s.max(start))
                .min()
        {
            plan.fail(Kind::Failed, (bad - start) << 9);
        }
        let rw = matches!(io.op, Op::Read | Op::Write);
        if rw && self.chance(self.fail) {
            plan.fail(Kind::Failed, 0);
        }
        let mut sent = io;
        if io.op == Op::Write && data.is_some() && io.sectors > 0 {
            if self.chance(self.torn) {
                let block = u64::from(self.inner.limits().logical_block_size.max(512));
                let blocks = (io.bytes() / block).max(1);
                let keep = self.rng.below(blocks) * block;
                sent.sectors = (keep >> 9) as u32;
                plan.fail(Kind::Torn, keep);
                self.bump(Kind::Torn, 1);
            } else if self.chance(self.misdirect) {
                sent.sector = self.misplace(&io);
                self.bump(Kind::Misdirected, 1);
            }
        }
        if io.op == Op::Read
            && io.sectors > 0
            && let Some(bad) = self.latent(start, end)
        {
            plan.fail(Kind::LseRead, (bad - start) << 9);
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
    fn resolve(&mut self, tag: u32, outcome: Outcome, now: Nanos, gone: bool) -> (Outcome, Nanos) {
        let plan = self
            .plans
            .get_mut(tag as usize)
            .and_then(Option::take)
            .unwrap_or(Plan::CLEAN);
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
                if plan.kind != Kind::Torn {
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
            self.bump(Kind::Spike, 1);
            due = due.max(now.saturating_add(self.spec.spike.as_nanos() as Nanos));
        }
        (outcome, due)
    }

    /// Report `outcome` for `tag`, counting what a fault made of it.
    fn report(
        counts: &mut FaultCounts,
        media: &Media,
        tag: u32,
        outcome: Outcome,
        done: &mut dyn FnMut(u32, Outcome),
    ) {
        if let Outcome::Failed { status, .. } = outcome {
            let kind = match status {
                Status::TimedOut => Some(Kind::Timeout),
                Status::Offline => Some(Kind::Offline),
                _ => None,
            };
            if let Some(kind) = kind {
                counts.bump(kind, 1);
                media.totals.bump(kind, 1);
            }
        }
        done(tag, outcome);
    }

    /// The earliest held completion's time.
    fn earliest_held(&self) -> Option<Nanos> {
        self.held.iter().map(|h| h.due).min()
    }
}

impl<D: DataDevice> Device for FaultDevice<D> {
    fn describe(&self) -> String {
        format!("{} with faults", self.inner.describe())
    }
    fn limits(&self) -> Limits {
        self.inner.limits()
    }
    fn queue_depth(&self) -> u32 {
        self.inner.queue_depth()
    }
    fn rotational(&self) -> bool {
        self.inner.rotational()
    }
    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        // SAFETY: no data to keep valid.
        unsafe { self.route(io, None, now) }
    }
    fn next_completion(&self) -> Option<Nanos> {
        if !self.unsent.is_empty() {
            return Some(0);
        }
        let mut at = self.inner.next_completion();
        let mut sooner = |t: Nanos| at = Some(at.map_or(t, |a| a.min(t)));
        if let Some(t) = self.earliest_held() {
            sooner(t);
            if self.vanished() {
                sooner(0);
            } else if let Some(v) = self.vanish_nanos() {
                sooner(v);
            }
        }
        at
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        self.note_time(now);
        let gone = self.vanished();
        let mut got = std::mem::take(&mut self.got);
        got.clear();
        got.extend(self.unsent.drain(..));
        self.inner
            .complete(now, &mut |tag, outcome| got.push((tag, outcome)));
        for &(tag, outcome) in &got {
            let (outcome, due) = self.resolve(tag, outcome, now, gone);
            if due > now {
                debug_assert!(
                    !self.held.iter().any(|h| h.tag == tag),
                    "tag {tag} held twice"
                );
                self.held.push(Held { tag, outcome, due });
            } else {
                Self::report(&mut self.counts, &self.media, tag, outcome, done);
            }
        }
        self.got = got;
        let mut k = 0;
        while k < self.held.len() {
            let h = self.held[k];
            if gone || h.due <= now {
                self.held.swap_remove(k);
                let outcome = if gone {
                    failed(Status::Offline, 0)
                } else {
                    h.outcome
                };
                Self::report(&mut self.counts, &self.media, h.tag, outcome, done);
            } else {
                k += 1;
            }
        }
    }
    fn outstanding(&self) -> u32 {
        self.inner.outstanding() + (self.held.len() + self.unsent.len()) as u32
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
}

impl<D: DataDevice> DataDevice for FaultDevice<D> {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        // SAFETY: passed on; our caller keeps the contract.
        unsafe { self.route(io, Some(data), now) }
    }
    fn kick(&mut self) -> Result<(), DeviceError> {
        self.inner.kick()
    }
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        if !self.unsent.is_empty() {
            return Ok(());
        }
        let mut cap: Option<Duration> = None;
        if let Some(due) = self.earliest_held() {
            let now = self.estimated_now();
            if due <= now || self.vanished() {
                return Ok(());
            }
            cap = Some(Duration::from_nanos(due - now));
            if let Some(t) = self.media.vanish {
                let left = t.saturating_duration_since(Instant::now());
                cap = cap.map(|c| c.min(left));
            }
        }
        let wait = match (timeout, cap) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.inner.wait(wait)
    }
    fn cancel_all(&mut self) {
        self.inner.cancel_all();
        // Nothing waits any more: what the device underneath still has
        // completes as it reports it, what is held is released now.
        for plan in self.plans.iter_mut().flatten() {
            plan.timeout_at = None;
            plan.spike = false;
        }
        for h in &mut self.held {
            h.due = 0;
            if matches!(
                h.outcome,
                Outcome::Failed {
                    status: Status::TimedOut,
                    ..
                }
            ) {
                h.outcome = failed(Status::Cancelled, 0);
            }
        }
    }
    fn alignment(&self) -> Alignment {
        self.inner.alignment()
    }
    fn poll_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.inner.poll_fd()
    }
    fn watch(&mut self, fd: std::os::fd::RawFd) -> Result<(), DeviceError> {
        self.inner.watch(fd)
    }
    fn extents(
        &self,
        offset: u64,
        len: u64,
        max: usize,
    ) -> Result<Vec<crate::Extent>, DeviceError> {
        self.inner.extents(offset, len, max)
    }
}
