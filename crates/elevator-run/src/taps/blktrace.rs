//! The queue's events written as blktrace writes them (`NAME.blktrace.N`,
//! one file per submitting job clone in a simulation, per worker thread on
//! a real device or an NBD export), so that `blkparse -i NAME`, `btt` and
//! `fio --read_iolog` read them; and what went into them (`trace: N events
//! in K files, D dropped`).
//!
//! The engines write to any [`TraceSink`]; this module opens the files.

use std::path::Path;
use std::sync::{Arc, Mutex};

use elevator_trace::TraceSink;
use elevator_trace::blktrace_write::BlktraceSet;
use elevator_trace::tap::{SharedSink, TraceSummary};

use crate::error::RunError;

/// The blktrace files for `prefix` (`prefix.blktrace.N`, created as the
/// first event of CPU `N` arrives).
pub fn open_sink(prefix: &str) -> Result<Box<dyn TraceSink + Send>, RunError> {
    let set = BlktraceSet::create(Path::new(prefix)).map_err(RunError::io(format!(
        "--trace-out {prefix}: cannot write the trace there"
    )))?;
    Ok(Box::new(set))
}

/// [`open_sink`], to be shared by the threads of a run.
pub fn open_shared(prefix: &str) -> Result<SharedSink, RunError> {
    Ok(Arc::new(Mutex::new(open_sink(prefix)?)))
}

/// Flush and close a shared sink.
pub fn finish_shared(sink: &SharedSink, prefix: &str) -> Result<(), RunError> {
    let mut guard = sink.lock().unwrap_or_else(|e| e.into_inner());
    guard.finish().map_err(RunError::io(format!(
        "--trace-out {prefix}: writing the trace"
    )))
}

/// The trace files' prefix for one scheduler of `compare`:
/// `NAME-<scheduler>`.
pub fn compare_prefix(prefix: &str, scheduler: &str) -> String {
    format!("{prefix}-{scheduler}")
}

/// The notes on a traced run: the files and counts, and events dropped,
/// said loudly.
pub fn summary_notes(prefix: &str, summary: &TraceSummary) -> Vec<String> {
    let mut notes = vec![format!(
        "trace: {}.blktrace.*: {summary}",
        Path::new(prefix).display()
    )];
    if summary.dropped > 0 {
        notes.push(format!(
            "warning: trace: {} events were dropped (the queue's trace buffer filled between \
             drains); the trace is incomplete",
            summary.dropped
        ));
    }
    notes
}

/// [`summary_notes`] as the lines printed on stderr, each after
/// `elevator: `.
pub fn summary_line(prefix: &str, summary: &TraceSummary) -> String {
    summary_notes(prefix, summary)
        .iter()
        .map(|n| format!("elevator: {n}"))
        .collect::<Vec<_>>()
        .join("\n")
}
