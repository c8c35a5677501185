//! The queue side of a simulated replay: planned bios go into elevator's
//! queue (through the flush machinery of [`FlushModel`]), the queue's own
//! trace events go to the analyzer and to an optional [`TraceSink`]
//! ([`EventOut`]), and completions come back. The driver
//! ([`super::replay_on`]) owns time and the device; nothing here reads a
//! clock. (A real-device replay drives elevator-io's engine instead, which
//! holds its own queue; both share elevator-trace's replay core.)
//!
//! Bios the queue cannot take for lack of a tag wait, in order, and are
//! retried after completions ([`Session::retry`]). A bio beyond the device's
//! capacity, or one the queue refuses as malformed, is an error naming its
//! trace record, or with `skip_bad` is counted and left out.

use std::collections::VecDeque;

use elevator_core::{
    Bio, BioCompletion, DeviceIo, Dispatch, IoContext, Nanos, Outcome, Queue, RequestId,
    SubmitError, TraceAction, TraceLog,
};
use elevator_trace::error::TraceError;
use elevator_trace::record::DevT;
use elevator_trace::replay::{
    EventOut, FlushModel, InFlight, Part, PlannedBio, ReplayError, ReplayResult, Step, Timing,
};
use elevator_trace::sink::TraceSink;

/// The queue side of a simulated replay.
pub struct Session<'s> {
    queue: Queue,
    out: EventOut<'s>,
    source_name: String,
    flush: FlushModel,
    /// The device's size in bytes.
    capacity: u64,
    skip_bad: bool,
    in_flight: InFlight,
    /// Bios whose next part waits to be submitted, oldest first.
    ready: VecDeque<u32>,
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
            in_flight: InFlight::new(),
            ready: VecDeque::new(),
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
        self.in_flight.outstanding()
    }

    /// Bios replayed so far.
    pub fn bios(&self) -> u64 {
        self.bios
    }

    /// Whether a new step may start under `timing`: nothing waits for a tag
    /// and fewer than its depth are outstanding.
    pub fn may_start(&self, timing: &Timing) -> bool {
        self.ready.is_empty() && self.outstanding() < timing.max_outstanding()
    }

    /// Whether everything started has completed.
    pub fn is_idle(&self) -> bool {
        self.outstanding() == 0 && self.ready.is_empty() && self.queue.is_idle()
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
        let s = self.in_flight.start(b, parts);
        if !self.submit_part(s, now)? {
            self.ready.push_back(s);
        }
        Ok(())
    }

    /// Submit slot `s`'s next part; false if it must wait for a tag.
    fn submit_part(&mut self, s: u32, now: Nanos) -> Result<bool, ReplayError> {
        let Some(&slot) = self.in_flight.get(s) else {
            return Ok(true);
        };
        let Some((op, flags, sector, bytes)) = slot.part() else {
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
                    self.in_flight.release(s);
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
            if self.in_flight.part_done(s) == Some(true) {
                self.ready.push_back(s);
            }
        }
        self.done = done;
        Ok(())
    }

    /// Pass the queue's events on; `relabel`: `Some(Some(bio))` shows the
    /// Q and G as that bio's, `Some(None)` leaves them out.
    fn drain(&mut self, relabel: Option<Option<Part>>) {
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
