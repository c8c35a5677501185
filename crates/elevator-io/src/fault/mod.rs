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
//!
//! Here: the device and its trait methods. Its parts: [`options`] (the
//! spec and its options), `route` (each I/O's faults, decided at
//! submission, and its completion as the caller sees it), `held`
//! (completions held back), `media` (what the shares of a device have in
//! common), `counts` and `sectors` (the latent bad sectors left).

mod counts;
mod held;
mod media;
pub mod options;
mod route;
mod sectors;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use elevator_core::rng::Rng;
use elevator_core::{Device, DeviceIo, Nanos, Outcome, Sector, Status};

use crate::device::{DataDevice, DataSegment, DeviceError};
pub use elevator_core::fault::FaultCounts;
use elevator_core::fault::FaultKind;
use held::HeldBack;
pub use media::FaultTally;
use media::Media;
pub use options::{DEFAULT_SPIKE, DEFAULT_TIMEOUT, FAULT_OPTIONS, FaultSpec, fault_option_names};
use route::Plan;

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
    /// Completions held back.
    held: HeldBack,
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
        let vanish = spec.vanish_at.and_then(|t| Instant::now().checked_add(t));
        let media = Arc::new(Media::new(&spec.lse_sectors, vanish));
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
            held: HeldBack::with_capacity(depth),
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
        self.media.vanished()
    }

    fn bump(&mut self, kind: FaultKind, n: u64) {
        self.counts.bump(kind, n);
        self.media.bump(kind, n);
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
}

impl<D: DataDevice> Device for FaultDevice<D> {
    fn describe(&self) -> String {
        format!("{} with faults", self.inner.describe())
    }
    elevator_core::forward_device!(inner: limits, queue_depth, rotational, stats);
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
        if let Some(t) = self.held.earliest() {
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
                self.held.hold(tag, outcome, due);
            } else {
                Self::report(&mut self.counts, &self.media, tag, outcome, done);
            }
        }
        self.got = got;
        let FaultDevice {
            held,
            counts,
            media,
            ..
        } = self;
        held.release(now, gone, &mut |tag, outcome| {
            Self::report(counts, media, tag, outcome, done)
        });
    }
    fn outstanding(&self) -> u32 {
        self.inner.outstanding() + (self.held.len() + self.unsent.len()) as u32
    }
}

impl<D: DataDevice> DataDevice for FaultDevice<D> {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        // SAFETY: passed on; our caller keeps the contract.
        unsafe { self.route(io, Some(data), now) }
    }
    crate::forward_data_device!(inner: kick, alignment, poll_fd, watch, extents);
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        if !self.unsent.is_empty() {
            return Ok(());
        }
        let mut cap: Option<Duration> = None;
        if let Some(due) = self.held.earliest() {
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
            plan.forget_waits();
        }
        self.held.cancel();
    }
}
