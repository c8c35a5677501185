//! Trace replay on a real device (an O_DIRECT file or block device through
//! io_uring, or memory), on the real clock, through the [`Engine`]: each
//! planned bio is one request (writes write zeroes: replaying a trace's
//! writes overwrites the target), submitted when due (recorded times, sped
//! up, as fast as the engine takes them, or a closed loop), with the plan's
//! plugs, and the kernel's flush machinery as [`FlushModel`] says.
//!
//! The recorded bio stream is what the queue sees: the engine submits each
//! request as one bio ([`Engine::set_whole_bios`]), which the queue splits
//! as its limits require (`X`), merges and plugs as it does any bio, as the
//! simulated replay does; the engine then hands the resulting requests to
//! the device. So `Q` and `X` are the recording's whatever the timing, and
//! merges, inserts and issues depend on the timing as the recording's did.
//! At the recorded times, a bio that reaches the queue unplugged (and an
//! unplug) is dispatched before the next step, as the kernel runs the
//! hardware queue on submission, and the plan's plug is held while the
//! replay waits for the next step ([`Engine::set_plug_held_while_waiting`]):
//! the recording's task did not sleep between the bios of its plug.
//! The queue's own events go to the analyzer and to an optional
//! [`TraceSink`] as records of the trace's device on CPU 0, a flush
//! sequence shown as the recorded bio, as in simulation
//! ([`SequenceLabels`]).
//!
//! Data buffers are reused by size (at most [`MAX_POOLED_BYTES`] kept), so
//! a replay maps no new memory per bio once sizes repeat. What is in flight
//! is bounded: a bio waits for a completion while the engine has
//! `max_requests` in flight or [`MAX_IN_FLIGHT_BYTES`] of buffers out,
//! whatever the timing asks for.

use std::collections::HashMap;
use std::time::Duration;

use elevator_core::{Bio, BioError, IoContext, Nanos, Op, SubmitError, TraceLog};
use elevator_trace::error::{TraceError, TraceErrorKind};
use elevator_trace::replay::{
    EventOut, FlushModel, InFlight, PlannedBio, Planner, ReplayError, ReplayResult, SequenceLabels,
    Step, Timing,
};
use elevator_trace::{Item, TraceSink};
use thiserror::Error;

use crate::buf::{AlignedBuf, BufError};
use crate::device::DataDevice;
use crate::dio::{Completion, DioRequest};
use crate::engine::{Engine, EngineConfig, EngineError};

/// Why a real-device replay stopped.
#[derive(Debug, Error)]
pub enum RealReplayError {
    /// The engine could not be built, or the device failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The replay failed.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// A buffer could not be allocated.
    #[error("allocating a {len}-byte buffer: {error}")]
    Buffer {
        /// Its size.
        len: usize,
        /// Why not.
        error: BufError,
    },
}

/// How to replay on a real device.
#[derive(Clone, Debug)]
pub struct RealReplayConfig {
    /// The engine (scheduler, tunables).
    pub engine: EngineConfig,
    /// Timing.
    pub timing: Timing,
    /// What the device does with flushes.
    pub flush: FlushModel,
    /// Count bad records instead of stopping.
    pub skip_bad: bool,
    /// The trace's name, for errors.
    pub source_name: String,
}

/// Bytes of buffers kept for reuse at most.
pub const MAX_POOLED_BYTES: usize = 64 << 20;
/// Bytes of data buffers in flight at most (a bio needing more waits for
/// completions, unless nothing is in flight).
pub const MAX_IN_FLIGHT_BYTES: u64 = 256 << 20;

/// Buffers kept for reuse, by length, at most [`MAX_POOLED_BYTES`] in all
/// and [`MAX_POOLED_SIZES`] lengths: a trace of many sizes costs no more
/// than one of a few. A length's list stays when it empties, so that a
/// take and a give of a size in use allocate nothing.
#[derive(Default)]
struct BufferPool {
    by_len: HashMap<usize, Vec<AlignedBuf>>,
    bytes: usize,
}

/// Distinct buffer lengths the pool keeps lists for at most.
const MAX_POOLED_SIZES: usize = 4096;

impl BufferPool {
    /// A kept buffer of `len` bytes, if there is one.
    fn take(&mut self, len: usize) -> Option<AlignedBuf> {
        let b = self.by_len.get_mut(&len)?.pop();
        if b.is_some() {
            self.bytes -= len;
        }
        b
    }

    /// Keep `b` for reuse, if there is room (else it is freed).
    fn give(&mut self, b: AlignedBuf) {
        let len = b.len();
        if len == 0 || self.bytes + len > MAX_POOLED_BYTES {
            return;
        }
        if !self.by_len.contains_key(&len) && self.by_len.len() >= MAX_POOLED_SIZES {
            return;
        }
        self.bytes += len;
        self.by_len.entry(len).or_default().push(b);
    }
}

struct Replayer<'s, D: DataDevice> {
    engine: Engine<D>,
    out: EventOut<'s>,
    cfg: RealReplayConfig,
    in_flight: InFlight,
    labels: SequenceLabels,
    bufs: BufferPool,
    /// Bytes of data buffers given to the engine and not back yet.
    in_flight_bytes: u64,
    align: usize,
    /// Whether the plan holds a plug.
    plugged: bool,
    bios: u64,
    skipped: u64,
}

/// Replay `plan` on `device` through an engine built with `cfg.engine`.
pub fn replay<D, I>(
    mut plan: Planner<I>,
    device: D,
    cfg: &RealReplayConfig,
    sink: Option<&mut dyn TraceSink>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ReplayResult, RealReplayError>
where
    D: DataDevice,
    I: Iterator<Item = Result<Item, TraceError>>,
{
    let mut engine: Engine<D> = Engine::new(device, &cfg.engine)?;
    engine.set_tracing(true, TraceLog::DEFAULT_LIMIT);
    engine.set_whole_bios(true);
    engine.set_plug_held_while_waiting(true);
    let align = engine.alignment().memory.max(512) as usize;
    let mut next = plan.next().transpose().map_err(ReplayError::from)?;
    let dev = plan.device().unwrap_or(0);
    let mut r = Replayer {
        engine,
        out: EventOut::new(dev, sink),
        cfg: cfg.clone(),
        in_flight: InFlight::new(),
        labels: SequenceLabels::new(),
        bufs: BufferPool::default(),
        in_flight_bytes: 0,
        align,
        plugged: false,
        bios: 0,
        skipped: 0,
    };
    let t0 = r.engine.now();
    let timing = cfg.timing;
    let mut done: Vec<Completion<AlignedBuf>> = Vec::new();
    let mut turns = 0u64;
    loop {
        let now = r.engine.now().saturating_sub(t0);
        let mut wait: Option<Duration> = None;
        while let Some(step) = &next {
            let due = step.due(&timing);
            if due.is_some_and(|t| t > now) {
                wait = due.map(|t| Duration::from_nanos(t - now));
                break;
            }
            if let Step::Bio(b) = step
                && !r.has_room(b, &timing)
            {
                break;
            }
            // At the recorded times a bio that reaches the queue unplugged
            // (or an unplug) is dispatched at once, as the kernel runs the
            // hardware queue on submission: the next step waits for that.
            let dispatch = match step {
                Step::Bio(_) => !r.plugged,
                Step::Unplug { .. } => true,
                _ => false,
            } && matches!(timing, Timing::Recorded(_));
            r.step(step, now)?;
            next = plan.next().transpose().map_err(ReplayError::from)?;
            if dispatch {
                wait = Some(Duration::ZERO);
                break;
            }
        }
        if next.is_none() && r.in_flight.outstanding() == 0 && r.engine.is_idle() {
            break;
        }
        if r.in_flight.outstanding() == 0 && wait.is_none() && next.is_some() {
            wait = Some(Duration::ZERO);
        }
        done.clear();
        r.engine.poll(wait, &mut done)?;
        r.drain();
        for c in done.drain(..) {
            r.completed(c)?;
        }
        turns += 1;
        if turns & 0xFFF == 0 {
            progress(plan.records(), r.bios);
        }
    }
    progress(plan.records(), r.bios);
    let elapsed = r.engine.now().saturating_sub(t0);
    let queue = r.engine.with_queue(|q| q.stats().clone());
    let dropped = r.engine.with_queue(|q| q.trace_dropped());
    let events = r.out.events();
    Ok(ReplayResult {
        device: dev,
        analysis: r.out.finish()?,
        queue,
        bios: r.bios,
        skipped: r.skipped,
        elapsed,
        events,
        events_dropped: dropped,
        plugs: plan.plugs(),
        waited: plan.waited(),
        recorded: plan.recorded(),
    })
}

impl<D: DataDevice> Replayer<'_, D> {
    fn drain(&mut self) {
        let out = &mut self.out;
        let labels = &mut self.labels;
        self.engine.drain_trace(&mut |mut e| {
            if labels.apply(&mut e) {
                out.event(e);
            }
        });
    }

    fn step(&mut self, step: &Step, now: Nanos) -> Result<(), RealReplayError> {
        match step {
            Step::Plug { .. } => {
                self.plugged = true;
                self.engine.plug();
            }
            Step::Unplug { .. } => {
                self.plugged = false;
                self.engine.unplug();
            }
            Step::Process { pid, name } => self.out.process(*pid, name, now),
            Step::Bio(b) => {
                if let Err(kind) = b.on_device(self.engine.capacity()) {
                    if self.cfg.skip_bad {
                        self.skipped += 1;
                        return Ok(());
                    }
                    return Err(ReplayError::from(TraceError::at_record(
                        &self.cfg.source_name,
                        b.record,
                        kind,
                    ))
                    .into());
                }
                self.bios += 1;
                let parts = self.cfg.flush.parts(b);
                if parts.parts[0].is_none() {
                    return Ok(());
                }
                let s = self.in_flight.start(b, parts);
                self.submit_part(s)?;
            }
        }
        self.drain();
        Ok(())
    }

    /// Whether `b` may start now: fewer than the timing's depth and the
    /// engine's `max_requests` in flight, and room for its data (a bio
    /// larger than the bound goes alone).
    fn has_room(&self, b: &PlannedBio, timing: &Timing) -> bool {
        let requests = u64::from(self.cfg.engine.max_requests.max(1));
        let outstanding = self.in_flight.outstanding();
        let data = u64::from(b.bytes);
        outstanding < timing.max_outstanding()
            && outstanding < requests
            && (outstanding == 0 || self.in_flight_bytes + data <= MAX_IN_FLIGHT_BYTES)
    }

    fn buffer(&mut self, len: usize) -> Result<AlignedBuf, RealReplayError> {
        let b = match self.bufs.take(len) {
            Some(b) => b,
            None => AlignedBuf::new(len, self.align)
                .map_err(|error| RealReplayError::Buffer { len, error })?,
        };
        self.in_flight_bytes += len as u64;
        Ok(b)
    }

    fn submit_part(&mut self, s: u32) -> Result<(), RealReplayError> {
        let Some(&slot) = self.in_flight.get(s) else {
            return Ok(());
        };
        let Some((op, flags, sector, bytes)) = slot.part() else {
            return Ok(());
        };
        if op != Op::Flush
            && let Some(error) =
                self.queue_refuses(&Bio::new(op, sector, bytes, 0).with_flags(flags))
        {
            if self.cfg.skip_bad {
                self.skipped += 1;
                self.in_flight.release(s);
                return Ok(());
            }
            return Err(ReplayError::Refused {
                source_name: self.cfg.source_name.clone(),
                record: slot.record,
                error,
            }
            .into());
        }
        let offset = sector * 512;
        let user = u64::from(s);
        let req = match op {
            Op::Read => DioRequest::read(offset, vec![self.buffer(bytes as usize)?], user),
            Op::Write => DioRequest::write(offset, vec![self.buffer(bytes as usize)?], user),
            Op::Flush => DioRequest::flush(user),
            Op::Discard => DioRequest::discard(offset, u64::from(bytes), user),
            Op::WriteZeroes => DioRequest::write_zeroes(offset, u64::from(bytes), user),
        }
        .with_flags(flags)
        .with_ctx(IoContext(slot.pid));
        if let Err(rejected) = self.engine.submit(req) {
            self.recycle(rejected.request.bufs);
            if self.cfg.skip_bad {
                self.skipped += 1;
                self.labels.forget(s);
                self.in_flight.release(s);
                return Ok(());
            }
            return Err(ReplayError::from(TraceError::at_record(
                &self.cfg.source_name,
                slot.record,
                TraceErrorKind::Parse {
                    why: "the engine refused the bio".into(),
                    text: rejected.error.to_string(),
                },
            ))
            .into());
        }
        self.labels.submitted(s, &slot);
        Ok(())
    }

    /// Why the queue would refuse `bio` whole, if it would: a bio it cannot
    /// take, or one that splits into more requests than it has tags. (The
    /// engine would fail the request with an I/O error; the replay names
    /// the record, as the simulated replay does.)
    fn queue_refuses(&mut self, bio: &Bio) -> Option<SubmitError> {
        self.engine.with_queue(|q| {
            let limits = q.limits();
            if let Err(e) = limits.check_bio(bio) {
                return Some(SubmitError::Bio(e));
            }
            let pieces = limits.pieces(bio);
            let tags = q.requests().capacity();
            (pieces > tags).then(|| {
                SubmitError::Bio(BioError::TooLarge {
                    op: bio.op,
                    len: bio.len,
                    pieces,
                    max_piece: limits.max_piece_bytes(bio.op),
                    limit: format!("nr_requests={tags}"),
                })
            })
        })
    }

    fn recycle(&mut self, bufs: Vec<AlignedBuf>) {
        for b in bufs {
            self.in_flight_bytes = self.in_flight_bytes.saturating_sub(b.len() as u64);
            self.bufs.give(b);
        }
    }

    fn completed(&mut self, c: Completion<AlignedBuf>) -> Result<(), RealReplayError> {
        self.recycle(c.bufs);
        let s = c.user_data as u32;
        self.labels.forget(s);
        if self.in_flight.part_done(s) == Some(true) {
            self.submit_part(s)?;
            self.drain();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
