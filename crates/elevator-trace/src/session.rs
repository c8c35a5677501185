//! One replay's queue side, shared by the simulated and the real-device
//! drivers: planned bios go into elevator's queue (through the flush
//! machinery of [`FlushModel`]), the queue's own trace events go to the
//! analyzer and to an optional [`TraceSink`], and completions come back.
//! The drivers own time and the device; nothing here reads a clock.
//!
//! Bios the queue cannot take for lack of a tag wait, in order, and are
//! retried after completions ([`Session::retry`]). A bio beyond the device's
//! capacity, or one the queue refuses as malformed, is an error naming its
//! trace record, or with `skip_bad` is counted and left out.

use std::collections::VecDeque;

use elevator_core::{
    Bio, BioCompletion, BioFlags, DeviceIo, Dispatch, IoContext, Nanos, Op, Outcome, Queue,
    QueueStats, RequestError, RequestId, SubmitError, TraceAction, TraceEvent, TraceLog,
};
use thiserror::Error;

use crate::analyze::{Analysis, Analyzer};
use crate::error::TraceError;
use crate::record::{DevT, Record};
use crate::replay::{FlushModel, FlushParts, PlannedBio, RecordedAnalysis, Step, Timing};
use crate::sink::TraceSink;

/// Why a replay stopped.
#[derive(Debug, Error)]
pub enum ReplayError {
    /// The trace could not be read, or a record cannot be replayed here.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The queue refused a bio.
    #[error("{source_name}: record {record}: the queue refused the bio: {error}")]
    Refused {
        /// The trace.
        source_name: String,
        /// Its record number.
        record: u64,
        /// Why.
        error: SubmitError,
    },
    /// The device reported a request the queue does not have in flight.
    #[error("the device reported a completion the queue does not expect: {0}")]
    Completion(#[from] RequestError),
    /// Writing the trace out failed.
    #[error("writing the trace out: {0}")]
    Sink(std::io::Error),
    /// The replay can make no progress (a bug, reported rather than hung).
    #[error("replay stalled at {now} ns: {why}")]
    Stalled {
        /// The driver's time.
        now: Nanos,
        /// What was stuck.
        why: String,
    },
}

/// What a replay did.
#[derive(Clone, Debug)]
pub struct ReplayResult {
    /// The trace's device replayed (its events carry it).
    pub device: DevT,
    /// The analysis of the queue's own events.
    pub analysis: Analysis,
    /// The queue's counters.
    pub queue: QueueStats,
    /// Bios of the trace replayed (submitted, or completed at once).
    pub bios: u64,
    /// Bios left out as bad (`skip_bad`).
    pub skipped: u64,
    /// Driver time from the first submission to the last completion.
    pub elapsed: Nanos,
    /// Trace events the queue emitted.
    pub events: u64,
    /// Queue events lost (never, unless the queue's buffer overflowed).
    pub events_dropped: u64,
    /// The recording's plugs replayed (see [`crate::replay::Planner::plugs`]).
    pub plugs: u64,
    /// Steps that waited behind another task's plug.
    pub waited: u64,
    /// The recording's own events, if the plan analysed them
    /// ([`crate::replay::Planner::analyze_recorded`]).
    pub recorded: Option<RecordedAnalysis>,
}

/// Where a replay's queue events go: the analyzer, and the trace sink if
/// there is one (the first write error is kept and reported at the end).
pub struct EventOut<'s> {
    analyzer: Analyzer,
    sink: Option<&'s mut dyn TraceSink>,
    sink_error: Option<std::io::Error>,
    dev: DevT,
    events: u64,
}

impl<'s> EventOut<'s> {
    /// Events of device `dev` into a new analyzer and `sink`.
    pub fn new(dev: DevT, sink: Option<&'s mut dyn TraceSink>) -> EventOut<'s> {
        EventOut {
            analyzer: Analyzer::new(),
            sink,
            sink_error: None,
            dev,
            events: 0,
        }
    }

    /// Pass on one queue event, as a record of the device on CPU 0.
    pub fn event(&mut self, event: TraceEvent) {
        self.events += 1;
        let record = Record::new(event, 0, self.dev);
        self.analyzer.record(&record);
        if let Some(sink) = self.sink.as_deref_mut()
            && self.sink_error.is_none()
            && let Err(e) = sink.record(&record)
        {
            self.sink_error = Some(e);
        }
    }

    /// Name a process in the sink.
    pub fn process(&mut self, pid: u32, name: &str, time: Nanos) {
        if let Some(sink) = self.sink.as_deref_mut()
            && self.sink_error.is_none()
            && let Err(e) = sink.process(pid, name, time)
        {
            self.sink_error = Some(e);
        }
    }

    /// Events passed on.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The device the events are recorded on.
    pub fn dev(&self) -> DevT {
        self.dev
    }

    /// Finish the sink; the analysis, or the first write error.
    pub fn finish(mut self) -> Result<Analysis, ReplayError> {
        if let Some(sink) = self.sink.as_deref_mut()
            && self.sink_error.is_none()
            && let Err(e) = sink.finish()
        {
            self.sink_error = Some(e);
        }
        match self.sink_error {
            Some(e) => Err(ReplayError::Sink(e)),
            None => Ok(self.analyzer.analysis()),
        }
    }
}

/// One recorded bio in flight: its parts and which one is running.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    parts: FlushParts,
    next: u8,
    pid: u32,
    record: u64,
    original: Option<(Op, BioFlags, u64, u32)>,
}

/// The queue side of a replay.
pub struct Session<'s> {
    queue: Queue,
    out: EventOut<'s>,
    source_name: String,
    flush: FlushModel,
    /// The device's size in bytes.
    capacity: u64,
    skip_bad: bool,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Slots whose next part waits to be submitted, oldest first.
    ready: VecDeque<u32>,
    outstanding: u64,
    bios: u64,
    skipped: u64,
    first: Option<Nanos>,
    last: Nanos,
    done: Vec<u64>,
}

impl<'s> Session<'s> {
    /// A session over `queue` (built for the device), replaying device `dev`
    /// of the trace named `source_name`.
    pub fn new(
        mut queue: Queue,
        dev: DevT,
        source_name: &str,
        flush: FlushModel,
        skip_bad: bool,
        sink: Option<&'s mut dyn TraceSink>,
    ) -> Session<'s> {
        queue.set_tracing(true, TraceLog::DEFAULT_LIMIT);
        // In bytes (a queue's capacity in sectors is under 2^55).
        let capacity = queue.limits().capacity.saturating_mul(512);
        Session {
            queue,
            out: EventOut::new(dev, sink),
            source_name: source_name.to_string(),
            flush,
            capacity,
            skip_bad,
            slots: Vec::new(),
            free: Vec::new(),
            ready: VecDeque::new(),
            outstanding: 0,
            bios: 0,
            skipped: 0,
            first: None,
            last: 0,
            done: Vec::new(),
        }
    }

    /// The queue.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Bios started and not yet completed.
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }

    /// Bios replayed so far.
    pub fn bios(&self) -> u64 {
        self.bios
    }

    /// Whether a new step may start under `timing`: nothing waits for a tag
    /// and fewer than its depth are outstanding.
    pub fn may_start(&self, timing: &Timing) -> bool {
        self.ready.is_empty() && self.outstanding < timing.max_outstanding()
    }

    /// Whether everything started has completed.
    pub fn is_idle(&self) -> bool {
        self.outstanding == 0 && self.ready.is_empty() && self.queue.is_idle()
    }

    /// Carry out `step` at `now` (a bio may end up waiting for a tag).
    pub fn step(&mut self, step: &Step, now: Nanos) -> Result<(), ReplayError> {
        match step {
            Step::Bio(b) => self.start(b, now),
            Step::Plug { .. } => {
                self.queue.plug();
                Ok(())
            }
            Step::Unplug { .. } => {
                self.queue.unplug(now);
                self.drain(None);
                Ok(())
            }
            Step::Process { pid, name } => {
                self.out.process(*pid, name, now);
                Ok(())
            }
        }
    }

    fn start(&mut self, b: &PlannedBio, now: Nanos) -> Result<(), ReplayError> {
        if let Err(kind) = b.on_device(self.capacity) {
            if self.skip_bad {
                self.skipped += 1;
                return Ok(());
            }
            return Err(TraceError::at_record(&self.source_name, b.record, kind).into());
        }
        self.first.get_or_insert(now);
        self.bios += 1;
        let parts = self.flush.parts(b);
        if parts.parts[0].is_none() {
            return Ok(()); // a flush with nothing to flush
        }
        let slot = Slot {
            parts,
            next: 0,
            pid: b.pid,
            record: b.record,
            original: (!parts.is_single()).then_some((b.op, b.flags, b.sector, b.bytes)),
        };
        let s = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = slot;
                s
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        self.outstanding += 1;
        if !self.submit_part(s, now)? {
            self.ready.push_back(s);
        }
        Ok(())
    }

    /// Submit slot `s`'s next part; false if it must wait for a tag.
    fn submit_part(&mut self, s: u32, now: Nanos) -> Result<bool, ReplayError> {
        let slot = self.slots[s as usize];
        let Some((op, flags, sector, bytes)) = slot.parts.parts[slot.next as usize] else {
            return Ok(true);
        };
        let bio = Bio::new(op, sector, bytes, u64::from(s))
            .with_flags(flags)
            .with_ctx(IoContext(slot.pid));
        match self.queue.submit(&bio, now) {
            Ok(_) => {
                // A sequence shows as the recorded bio (its first part's Q
                // and G), as the kernel's flush machinery does.
                let relabel = match (slot.original, slot.next) {
                    (None, _) => None,
                    (Some(o), 0) => Some(Some(o)),
                    (Some(_), _) => Some(None),
                };
                self.drain(relabel);
                Ok(true)
            }
            Err(SubmitError::NoTag { .. } | SubmitError::NoBioSlot { .. }) => {
                self.drain(None);
                Ok(false)
            }
            Err(error) => {
                self.drain(None);
                if self.skip_bad {
                    self.skipped += 1;
                    self.release(s);
                    return Ok(true);
                }
                Err(ReplayError::Refused {
                    source_name: self.source_name.clone(),
                    record: slot.record,
                    error,
                })
            }
        }
    }

    fn release(&mut self, s: u32) {
        self.outstanding -= 1;
        self.free.push(s);
    }

    /// Submit what waits (after completions freed tags), in order.
    pub fn retry(&mut self, now: Nanos) -> Result<(), ReplayError> {
        while let Some(&s) = self.ready.front() {
            if !self.submit_part(s, now)? {
                break;
            }
            self.ready.pop_front();
        }
        Ok(())
    }

    /// The next request for the device, as [`Queue::dispatch`] answers,
    /// with the I/O to give the device.
    pub fn dispatch(&mut self, now: Nanos) -> (Dispatch, Option<DeviceIo>) {
        let d = self.queue.dispatch(now);
        let io = match d {
            Dispatch::Request(id) => {
                let rq = self.queue.request(id);
                Some(DeviceIo {
                    tag: id.raw(),
                    op: rq.op(),
                    sector: rq.sector(),
                    sectors: rq.sectors(),
                    flags: rq.flags(),
                })
            }
            _ => None,
        };
        if io.is_some() {
            self.drain(None);
        }
        (d, io)
    }

    /// The device ended request `tag` at `now`.
    pub fn complete(&mut self, tag: u32, outcome: Outcome, now: Nanos) -> Result<(), ReplayError> {
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        let r = self.queue.complete(
            RequestId::from_raw(tag),
            outcome,
            now,
            &mut |c: BioCompletion| done.push(c.token),
        );
        self.drain(None);
        r?;
        self.last = now;
        for &token in &done {
            let s = token as u32;
            let Some(slot) = self.slots.get_mut(s as usize) else {
                continue;
            };
            slot.next += 1;
            let more = slot
                .parts
                .parts
                .get(slot.next as usize)
                .is_some_and(Option::is_some);
            if more {
                self.ready.push_back(s);
            } else {
                self.release(s);
            }
        }
        self.done = done;
        Ok(())
    }

    /// Pass the queue's events on; `relabel`: `Some(Some(bio))` shows the
    /// Q and G as that bio's, `Some(None)` leaves them out.
    fn drain(&mut self, relabel: Option<Option<(Op, BioFlags, u64, u32)>>) {
        for mut event in self.queue.drain_trace() {
            if matches!(event.action, TraceAction::Queue | TraceAction::GetRq)
                && let Some(r) = relabel
            {
                let Some((op, flags, sector, bytes)) = r else {
                    continue;
                };
                event.op = op;
                event.flags = flags;
                event.sector = sector;
                event.bytes = bytes;
            }
            self.out.event(event);
        }
    }

    /// End the replay: flush the sink and report.
    pub fn finish(self) -> Result<ReplayResult, ReplayError> {
        let events = self.out.events();
        let device = self.out.dev();
        let events_dropped = self.queue.trace_dropped();
        Ok(ReplayResult {
            device,
            analysis: self.out.finish()?,
            queue: self.queue.stats().clone(),
            bios: self.bios,
            skipped: self.skipped,
            elapsed: self.last.saturating_sub(self.first.unwrap_or(0)),
            events,
            events_dropped,
            plugs: 0,
            waited: 0,
            recorded: None,
        })
    }
}
