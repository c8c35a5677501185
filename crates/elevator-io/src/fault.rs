//! A device that fails I/O on purpose: chosen sectors, or a fraction of
//! reads and writes, complete with EIO. Wraps any [`DataDevice`].
//!
//! The I/O still goes to the device underneath (so the bytes a failed request
//! reports as good really moved); the fault is applied to its completion:
//! - a request that touches a bad sector fails with `IoError`, reporting as
//!   good the bytes before the first bad sector it touches (like a disk with
//!   a medium error there);
//! - otherwise, with probability `fail_rate`, a read or write fails with
//!   `IoError` and no good bytes.
//!
//! The random choice comes from a seed, so a failing run can be repeated.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use elevator_core::{Device, DeviceIo, DeviceStats, Limits, Nanos, Op, Outcome, Sector, Status};
use elevator_fio::rng::Rng;

use crate::device::{Alignment, DataDevice, DataSegment, DeviceError};

/// Which I/O a [`FaultDevice`] fails.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultSpec {
    /// Sector ranges `start..end` (512-byte sectors) where every I/O fails.
    pub bad_sectors: Vec<(Sector, Sector)>,
    /// Fraction of reads and writes that fail, 0..=1.
    pub fail_rate: f64,
    /// Seed for the random choice.
    pub seed: u64,
}

impl FaultSpec {
    /// Whether it would fail anything.
    pub fn is_active(&self) -> bool {
        !self.bad_sectors.is_empty() || self.fail_rate > 0.0
    }
}

/// No fault recorded for a tag.
const NONE: u64 = u64::MAX;

/// A device whose I/O fails where and as often as told.
pub struct FaultDevice<D> {
    inner: D,
    /// As built (a share fails I/O the same way).
    spec: FaultSpec,
    /// Shares made so far (each gets its own seed).
    shares: AtomicU64,
    bad: Vec<(Sector, Sector)>,
    /// Failure probability in parts per 2^32.
    threshold: u64,
    rng: Rng,
    /// Good bytes of the fault injected into each tag in flight, or NONE.
    injected: Vec<u64>,
    count: u64,
}

impl<D: DataDevice> FaultDevice<D> {
    /// `inner`, failing I/O as `spec` says.
    pub fn new(inner: D, spec: &FaultSpec) -> FaultDevice<D> {
        let rate = if spec.fail_rate.is_finite() {
            spec.fail_rate.clamp(0.0, 1.0)
        } else {
            0.0
        };
        FaultDevice {
            inner,
            spec: spec.clone(),
            shares: AtomicU64::new(0),
            bad: spec.bad_sectors.clone(),
            threshold: (rate * (1u64 << 32) as f64) as u64,
            rng: Rng::new(spec.seed),
            injected: Vec::new(),
            count: 0,
        }
    }

    /// The device underneath.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// What it fails.
    pub fn spec(&self) -> &FaultSpec {
        &self.spec
    }

    /// The same faults over `inner` (a share of this device's own, for
    /// another thread): the same bad sectors and failure rate, with the
    /// random choice seeded anew, so that two shares do not fail the same
    /// sequence of I/Os. The `n`th share (from 1) of a device whose seed is
    /// `s` gets seed `s + n * 0x9E37_79B9_7F4A_7C15` (wrapping), so a run
    /// that shares the same way repeats. Its count of injected faults
    /// starts at 0: each share counts its own.
    pub fn share_with(&self, inner: D) -> FaultDevice<D> {
        let n = self.shares.fetch_add(1, Ordering::Relaxed) + 1;
        let spec = FaultSpec {
            seed: self
                .spec
                .seed
                .wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            ..self.spec.clone()
        };
        FaultDevice::new(inner, &spec)
    }

    /// I/Os failed on purpose so far.
    pub fn injected(&self) -> u64 {
        self.count
    }

    /// Decide the fault for `io`: the good bytes it will report, or NONE.
    fn choose(&mut self, io: &DeviceIo) -> u64 {
        let start = io.sector;
        let end = start + u64::from(io.sectors);
        let first_bad = self
            .bad
            .iter()
            .filter(|&&(s, e)| s < end && start < e && io.sectors > 0)
            .map(|&(s, _)| s.max(start))
            .min();
        if let Some(bad) = first_bad {
            return (bad - start) << 9;
        }
        if matches!(io.op, Op::Read | Op::Write)
            && self.threshold > 0
            && (self.rng.next_u64() >> 32) < self.threshold
        {
            return 0;
        }
        NONE
    }

    fn note(&mut self, tag: u32, good: u64) {
        let i = tag as usize;
        if i >= self.injected.len() {
            self.injected.resize(i + 1, NONE);
        }
        self.injected[i] = good;
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
        let good = self.choose(&io);
        self.note(io.tag, good);
        self.inner.submit(io, now);
    }
    fn next_completion(&self) -> Option<Nanos> {
        self.inner.next_completion()
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        let FaultDevice {
            inner,
            injected,
            count,
            ..
        } = self;
        inner.complete(now, &mut |tag, outcome| {
            let slot = injected.get_mut(tag as usize);
            let good = slot.map_or(NONE, |g| std::mem::replace(g, NONE));
            if good == NONE {
                done(tag, outcome);
                return;
            }
            match outcome {
                // The device's own failure comes first (or at the same
                // byte): its status is the one the caller must see (ENOSPC,
                // a cancellation at shutdown), not the injected EIO.
                Outcome::Failed { status, good_bytes }
                    if status != Status::Ok && good_bytes <= good =>
                {
                    done(tag, outcome);
                }
                _ => {
                    *count += 1;
                    done(
                        tag,
                        Outcome::Failed {
                            status: Status::IoError,
                            good_bytes: good,
                        },
                    );
                }
            }
        });
    }
    fn outstanding(&self) -> u32 {
        self.inner.outstanding()
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
}

impl<D: DataDevice> DataDevice for FaultDevice<D> {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        let good = self.choose(&io);
        self.note(io.tag, good);
        // SAFETY: passed through unchanged; our caller keeps the contract.
        unsafe { self.inner.submit_data(io, data, now) }
    }
    fn kick(&mut self) -> Result<(), DeviceError> {
        self.inner.kick()
    }
    fn wait(&mut self, timeout: Option<Duration>) -> Result<(), DeviceError> {
        self.inner.wait(timeout)
    }
    fn cancel_all(&mut self) {
        self.inner.cancel_all()
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
