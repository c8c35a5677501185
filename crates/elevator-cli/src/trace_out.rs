//! `--trace-out NAME` on `run`, `compare` and `serve`: the queue's events
//! written as blktrace writes them (`NAME.blktrace.N`, one file per
//! submitting job clone in a simulation, per worker thread on a real device
//! or an NBD export), so that `blkparse -i NAME`, `btt` and
//! `fio --read_iolog` read them.
//!
//! The engines write to any [`TraceSink`]; this module opens the files and
//! reports what went into them (`trace: N events in K files, D dropped`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use elevator_trace::TraceSink;
use elevator_trace::blktrace_write::BlktraceSet;
use elevator_trace::tap::{SharedSink, TraceSummary};

/// The blktrace files for `prefix` (`prefix.blktrace.N`, created as the
/// first event of CPU `N` arrives).
pub fn open_sink(prefix: &str) -> Result<Box<dyn TraceSink + Send>> {
    let set = BlktraceSet::create(Path::new(prefix))
        .with_context(|| format!("--trace-out {prefix}: cannot write the trace there"))?;
    Ok(Box::new(set))
}

/// [`open_sink`], to be shared by the threads of a run.
pub fn open_shared(prefix: &str) -> Result<SharedSink> {
    Ok(Arc::new(Mutex::new(open_sink(prefix)?)))
}

/// Flush and close a shared sink.
pub fn finish_shared(sink: &SharedSink, prefix: &str) -> Result<()> {
    let mut guard = sink.lock().unwrap_or_else(|e| e.into_inner());
    guard
        .finish()
        .with_context(|| format!("--trace-out {prefix}: writing the trace"))
}

/// The trace files' prefix for one scheduler of `compare`:
/// `NAME-<scheduler>`.
pub fn compare_prefix(prefix: &str, scheduler: &str) -> String {
    format!("{prefix}-{scheduler}")
}

/// The summary line printed on stderr after a traced run; events dropped
/// are said loudly.
pub fn summary_line(prefix: &str, summary: &TraceSummary) -> String {
    let mut line = format!(
        "elevator: trace: {}.blktrace.*: {summary}",
        Path::new(prefix).display()
    );
    if summary.dropped > 0 {
        line.push_str(&format!(
            "\nelevator: warning: trace: {} events were dropped (the queue's trace buffer \
             filled between drains); the trace is incomplete",
            summary.dropped
        ));
    }
    line
}
