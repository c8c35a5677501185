//! The write log of a simulated device, and the check of its media against
//! it. Owns [`WriteLogDevice`]: a [`SimDevice`] in front of any other that
//! records what the device sees as an `elevator_trace::write_log` (no data:
//! a write's number stands for its content; times in virtual ns), and, when
//! the run ends (after a power cut or a vanishing, if there was one), checks
//! the model's media ([`SimDevice::media`]) against the log
//! ([`WriteLogReport`]).
//!
//! # What is recorded
//!
//! As the format says: a write, write-zeroes or discard when it completes
//! `Ok` (with its FUA flag, and PREFLUSH, which is also recorded as a flush
//! when the write is submitted); a flush when it is submitted. A write that
//! fails (torn, timed out, offline) is not recorded: what it put on the
//! media is allowed, not required. Marks come from the run (`job NAME
//! start` / `job NAME end`).
//!
//! # The check
//!
//! - Durable: every write recorded before a flush that completed `Ok`, and
//!   every FUA write recorded, must be on the media in each of its sectors,
//!   unless a newer write (a higher write number) is there, or a discard
//!   completed since (the content is then undefined).
//! - Nothing unwritten: a media sector holding write `n` must be in the
//!   sectors write `n` was submitted for (a torn write's prefix is; a
//!   misdirected write is not).
//!
//! It also counts what was lost: completed writes whose content is neither
//! on the media nor replaced there by a newer write.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::io::{self, Write};

use elevator_core::{BioFlags, Device, DeviceIo, Nanos, Op, Outcome, Status};
use elevator_trace::write_log::{FLAG_FUA, Kind, LogHeader, Writer, flush_on_submit, record_of};

use super::media::{ExtentMap, SimDevice, WriteNo, numbered};
use elevator_core::fault::{FaultCounts, Gone};

/// At most this many violations are kept for the report (all are counted).
const KEEP_VIOLATIONS: usize = 8;

/// One way the media disagrees with the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Violation {
    /// A write that had to be durable is not on the media (nor a newer
    /// one) in `[lo, hi)`, which holds `found` (0: never written).
    Missing {
        /// First sector.
        lo: u64,
        /// End sector (exclusive).
        hi: u64,
        /// The write that had to be there.
        write: WriteNo,
        /// What is there.
        found: WriteNo,
    },
    /// `[lo, hi)` holds write `write`, which was never submitted for those
    /// sectors (it was for `submitted_for`, if it was submitted at all).
    Foreign {
        /// First sector.
        lo: u64,
        /// End sector (exclusive).
        hi: u64,
        /// The write found there.
        write: WriteNo,
        /// The sectors it was submitted for.
        submitted_for: Option<(u64, u64)>,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Violation::Missing {
                lo,
                hi,
                write,
                found,
            } => {
                write!(
                    f,
                    "sectors {lo}..{hi}: write {write} was flushed or FUA but the media holds "
                )?;
                if found == 0 {
                    write!(f, "nothing written")
                } else {
                    write!(f, "older write {found}")
                }
            }
            Violation::Foreign {
                lo,
                hi,
                write,
                submitted_for,
            } => match submitted_for {
                Some((a, b)) => write!(
                    f,
                    "sectors {lo}..{hi} hold write {write}, which was submitted for sectors \
                     {a}..{b} (a misdirected write)"
                ),
                None => write!(
                    f,
                    "sectors {lo}..{hi} hold write {write}, which was never submitted"
                ),
            },
        }
    }
}

/// The media against the log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MediaCheck {
    /// Writes that had to be durable (flushed or FUA).
    pub required_writes: u64,
    /// Completed writes not on the media (nor replaced by a newer write).
    pub lost_writes: u64,
    /// Their sectors.
    pub lost_sectors: u64,
    /// Violations found.
    pub violations: u64,
    /// The first few.
    pub first: Vec<Violation>,
}

/// What a tapped run wrote and found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteLogReport {
    /// Records written (writes, flushes, discards, marks).
    pub records: u64,
    /// Bytes of log.
    pub log_bytes: u64,
    /// Writes submitted (write numbers given).
    pub writes: u64,
    /// Writes recorded (completed `Ok`).
    pub recorded_writes: u64,
    /// When the media was checked (virtual ns): the cut or vanishing, or the
    /// end of the run.
    pub checked_at: Nanos,
    /// Whether and how the device went away.
    pub gone: Option<Gone>,
    /// What the faults did, if any were injected.
    pub faults: Option<FaultCounts>,
    /// The check, if the model tracks its media (every model here does).
    pub check: Option<MediaCheck>,
    /// The device, for messages.
    pub device: String,
}

/// The media disagrees with the write log.
#[derive(Debug, thiserror::Error)]
#[error("write log check failed on {device}: {violations} violation(s); first: {first}")]
pub struct CheckFailed {
    /// The device.
    pub device: String,
    /// How many.
    pub violations: u64,
    /// The first, described.
    pub first: String,
}

impl WriteLogReport {
    /// `Err` when the media disagrees with the log.
    pub fn verdict(&self) -> Result<(), CheckFailed> {
        match &self.check {
            Some(c) if c.violations > 0 => Err(CheckFailed {
                device: self.device.clone(),
                violations: c.violations,
                first: c.first.first().map(|v| v.to_string()).unwrap_or_default(),
            }),
            _ => Ok(()),
        }
    }

    /// One line on the faults injected, if any were asked for (besides
    /// the cut or vanishing the summary tells).
    pub fn fault_line(&self) -> Option<String> {
        let f = self.faults?;
        let parts: Vec<String> = [
            (f.lse_reads, "reads failed on latent sector errors"),
            (f.lse_repaired, "latent sector errors repaired by writes"),
            (f.torn, "torn writes"),
            (f.misdirected, "misdirected writes"),
            (f.spikes, "latency spikes"),
            (f.timeouts, "timeouts"),
            (f.offline, "I/Os failed offline"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        (!parts.is_empty()).then(|| format!("faults injected: {}", parts.join(", ")))
    }

    /// One line: what was lost, and what the check found.
    pub fn summary(&self) -> String {
        let secs = |t: Nanos| format!("{:.3} s", t as f64 / 1e9);
        let (lost_w, lost_s) = self
            .check
            .as_ref()
            .map_or((0, 0), |c| (c.lost_writes, c.lost_sectors));
        let mut s = match (self.gone, self.check.is_some()) {
            (Some(g), false) => format!(
                "{} at {}",
                if g.power_cut {
                    "power cut"
                } else {
                    "device vanished"
                },
                secs(g.at)
            ),
            (None, false) => format!("end of run at {}", secs(self.checked_at)),
            (
                Some(Gone {
                    at,
                    power_cut: true,
                }),
                true,
            ) => format!(
                "power cut at {}: lost {lost_w} unflushed writes ({lost_s} sectors) from the \
                 write cache",
                secs(at)
            ),
            (
                Some(Gone {
                    at,
                    power_cut: false,
                }),
                true,
            ) => format!(
                "device vanished at {}: {lost_w} completed writes ({lost_s} sectors) not on \
                 the media",
                secs(at)
            ),
            (None, true) => format!(
                "end of run at {}: {lost_w} completed writes ({lost_s} sectors) not yet on the \
                 media",
                secs(self.checked_at)
            ),
        };
        match &self.check {
            None => {
                s.push_str("; write log check: not possible (this model does not track its media)")
            }
            Some(c) if c.violations == 0 => s.push_str(
                "; write log check: every flushed or FUA write survived, nothing unwritten \
                 appeared",
            ),
            Some(c) => {
                s.push_str(&format!(
                    "; write log check FAILED: {} violation(s), first: {}",
                    c.violations,
                    c.first.first().map(|v| v.to_string()).unwrap_or_default()
                ));
            }
        }
        if let Some(f) = &self.faults
            && f.misdirected > 0
        {
            s.push_str(&format!(" ({} misdirected writes injected)", f.misdirected));
        }
        s
    }
}

/// An I/O in flight through the device.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    op: Op,
    flags: BioFlags,
    sector: u64,
    sectors: u32,
    wn: WriteNo,
    /// Writes numbered so far when it was submitted.
    writes_before: WriteNo,
    /// A flush (or a write's preflush): the recorded writes it covers.
    covers: Option<usize>,
}

/// What the tap keeps to check the media, folded as the run goes: 16
/// bytes per write submitted (the sectors it was for), the extent maps of
/// what is required and what was completed (bounded by the extents
/// written), and the completed writes no flush has covered yet.
#[derive(Debug, Default)]
struct Ledger {
    /// Per write number (index `n - 1`): the sectors it was submitted for.
    submitted: Vec<(u64, u64)>,
    flying: HashMap<u32, InFlight>,
    /// Writes recorded so far.
    recorded: usize,
    /// Recorded writes not FUA and not yet covered by a completed flush:
    /// (place in the log among writes, write, lo, hi), in log order.
    pending: VecDeque<(usize, WriteNo, u64, u64)>,
    /// The newest write per sector that had to be durable.
    required: ExtentMap,
    /// Writes that had to be durable.
    required_writes: u64,
    /// The newest completed write per sector.
    acked: ExtentMap,
}

impl Ledger {
    /// Write `wn` of `[lo, hi)` completed `Ok` (FUA or not).
    fn recorded(&mut self, wn: WriteNo, fua: bool) {
        let (lo, hi) = self.submitted[(wn - 1) as usize];
        self.acked.set_newer(lo, hi, wn);
        if fua {
            self.required.set_newer(lo, hi, wn);
            self.required_writes += 1;
        } else {
            self.pending.push_back((self.recorded, wn, lo, hi));
        }
        self.recorded += 1;
    }

    /// A flush covering the first `k` recorded writes completed.
    fn flushed(&mut self, k: usize) {
        while let Some(&(i, wn, lo, hi)) = self.pending.front()
            && i < k
        {
            self.pending.pop_front();
            self.required.set_newer(lo, hi, wn);
            if self.pending.front().is_none_or(|p| p.0 != i) {
                self.required_writes += 1;
            }
        }
    }

    /// A discard of `[lo, hi)` submitted after `before` writes completed:
    /// the content of those writes there is undefined.
    fn discarded(&mut self, lo: u64, hi: u64, before: WriteNo) {
        self.required.remove_older(lo, hi, before + 1);
        self.acked.remove_older(lo, hi, before + 1);
        let mut kept = VecDeque::with_capacity(self.pending.len());
        for &(i, wn, a, b) in &self.pending {
            if wn > before || b <= lo || hi <= a {
                kept.push_back((i, wn, a, b));
                continue;
            }
            if a < lo {
                kept.push_back((i, wn, a, lo));
            }
            if hi < b {
                kept.push_back((i, wn, hi, b));
            }
        }
        self.pending = kept;
    }
}

/// A device whose writes go to a write log, and whose media is checked
/// against it at the end. See the module documentation.
pub struct WriteLogDevice<W: Write> {
    inner: Box<dyn SimDevice + Send>,
    log: Writer<W>,
    error: Option<io::Error>,
    ledger: Ledger,
    /// The latest time it was called at.
    last: Nanos,
    /// Completions being passed on (kept to reuse its room).
    got: Vec<(u32, Outcome)>,
}

impl<W: Write> WriteLogDevice<W> {
    /// Tap `inner` (before its first I/O: it is told to track its media),
    /// writing the log to `out` (give it a `BufWriter`).
    pub fn new(mut inner: Box<dyn SimDevice + Send>, out: W) -> io::Result<WriteLogDevice<W>> {
        inner.track_media();
        let limits = inner.limits();
        let log = Writer::new(
            out,
            LogHeader {
                has_data: false,
                capacity: limits.capacity,
                block_size: limits.logical_block_size,
            },
        )?;
        Ok(WriteLogDevice {
            inner,
            log,
            error: None,
            ledger: Ledger::default(),
            last: 0,
            got: Vec::new(),
        })
    }

    /// The device underneath.
    pub fn inner(&self) -> &(dyn SimDevice + Send) {
        &*self.inner
    }

    /// End the run at `now` (or the last time the device was called at, if
    /// later): a cut set for later happens, the media is checked, the log
    /// flushed. Returns the report and the log's output; an `Err` only when
    /// the log could not be written.
    pub fn finish(mut self, now: Nanos) -> io::Result<(WriteLogReport, W)> {
        let now = now.max(self.last);
        self.inner.end_of_run(now);
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let faults = self.inner.fault_counts();
        let gone = faults.and_then(|f| f.gone);
        let faults = faults.map(|f| f.counts);
        let check = self.inner.media().map(|m| self.ledger.check(m));
        let report = WriteLogReport {
            records: self.log.records(),
            log_bytes: self.log.bytes(),
            writes: self.ledger.submitted.len() as u64,
            recorded_writes: self.ledger.recorded as u64,
            checked_at: gone.map_or(now, |g| g.at),
            gone,
            faults,
            check,
            device: self.inner.describe(),
        };
        let out = self.log.into_inner()?;
        Ok((report, out))
    }

    fn append(&mut self, kind: Kind, flags: u8, sector: u64, sectors: u32, now: Nanos) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.log.append(kind, flags, sector, sectors, now, &[]) {
            self.error = Some(e);
        }
    }
}

impl Ledger {
    /// The media against the log.
    fn check(&self, media: &ExtentMap) -> MediaCheck {
        let mut c = MediaCheck::default();
        let violation = |c: &mut MediaCheck, v: Violation| {
            c.violations += 1;
            if c.first.len() < KEEP_VIOLATIONS {
                c.first.push(v);
            }
        };
        c.required_writes = self.required_writes;
        let (required, acked) = (&self.required, &self.acked);
        for (lo, hi, w) in media.iter() {
            let sub = self.submitted.get((w as usize).wrapping_sub(1)).copied();
            match sub {
                Some((a, b)) if a <= lo && hi <= b => {}
                _ => violation(
                    &mut c,
                    Violation::Foreign {
                        lo,
                        hi,
                        write: w,
                        submitted_for: sub,
                    },
                ),
            }
        }
        for (lo, hi, w) in required.iter() {
            for (a, b, found) in older_than(media, lo, hi, w) {
                violation(
                    &mut c,
                    Violation::Missing {
                        lo: a,
                        hi: b,
                        write: w,
                        found,
                    },
                );
            }
        }
        let mut lost = HashSet::new();
        for (lo, hi, w) in acked.iter() {
            for (a, b, _) in older_than(media, lo, hi, w) {
                c.lost_sectors += b - a;
                lost.insert(w);
            }
        }
        c.lost_writes = lost.len() as u64;
        c
    }
}

/// The parts of `[lo, hi)` where `media` holds a write older than `w`
/// (or nothing): `(lo, hi, what is there)`.
fn older_than(media: &ExtentMap, lo: u64, hi: u64, w: WriteNo) -> Vec<(u64, u64, WriteNo)> {
    let mut out = Vec::new();
    let mut at = lo;
    for (a, b, m) in media.within(lo, hi) {
        if at < a {
            out.push((at, a, 0));
        }
        if m < w {
            out.push((a, b, m));
        }
        at = b;
    }
    if at < hi {
        out.push((at, hi, 0));
    }
    out
}

impl<W: Write> Device for WriteLogDevice<W> {
    elevator_core::forward_device!(inner: describe, limits, queue_depth, rotational,
        next_completion, outstanding, stats, record_heads, take_heads);

    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.last = self.last.max(now);
        let l = &mut self.ledger;
        let writes_before = l.submitted.len() as WriteNo;
        let wn = if numbered(io.op) {
            l.submitted
                .push((io.sector, io.sector + u64::from(io.sectors)));
            l.submitted.len() as WriteNo
        } else {
            0
        };
        let flush = flush_on_submit(&io);
        let covers = flush.then_some(l.recorded);
        l.flying.insert(
            io.tag,
            InFlight {
                op: io.op,
                flags: io.flags,
                sector: io.sector,
                sectors: io.sectors,
                wn,
                writes_before,
                covers,
            },
        );
        if flush {
            self.append(Kind::Flush, 0, 0, 0, now);
        }
        self.inner.submit(io, now);
    }

    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        self.last = self.last.max(now);
        let mut got = std::mem::take(&mut self.got);
        got.clear();
        self.inner.complete(now, &mut |tag, o| got.push((tag, o)));
        for &(tag, o) in &got {
            let Some(f) = self.ledger.flying.remove(&tag) else {
                debug_assert!(false, "write log device: completion of a tag not in flight");
                continue;
            };
            let ok = match o {
                Outcome::Done => true,
                Outcome::Failed { status, .. } => status == Status::Ok,
            };
            if !ok {
                continue;
            }
            if let Some(k) = f.covers {
                // The flush (or the preflush before this write) is done.
                self.ledger.flushed(k);
            }
            let Some((kind, flags)) = record_of(f.op, f.flags) else {
                continue;
            };
            self.append(kind, flags, f.sector, f.sectors, now);
            if f.op == Op::Discard {
                let lo = f.sector;
                self.ledger
                    .discarded(lo, lo + u64::from(f.sectors), f.writes_before);
            } else {
                self.ledger.recorded(f.wn, flags & FLAG_FUA != 0);
            }
        }
        for &(tag, o) in &got {
            done(tag, o);
        }
        self.got = got;
    }
}

impl<W: Write> SimDevice for WriteLogDevice<W> {
    crate::forward_sim_device!(inner: media, volatile_cache, end_of_run, power_cut, fault_counts);

    fn mark(&mut self, text: &str, now: Nanos) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.log.mark(text, now) {
            self.error = Some(e);
        }
    }
}

#[cfg(test)]
mod tests;
