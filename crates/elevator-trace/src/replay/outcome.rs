//! What a replay produces, whichever driver runs it: the queue's events on
//! their way to the analyzer and an optional [`TraceSink`] ([`EventOut`]),
//! the result ([`ReplayResult`]) and why it stopped ([`ReplayError`]).

use elevator_core::{Nanos, QueueStats, RequestError, SubmitError, TraceEvent};
use thiserror::Error;

use crate::analyze::{Analysis, Analyzer};
use crate::error::TraceError;
use crate::record::{DevT, Record};
use crate::replay::RecordedAnalysis;
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
