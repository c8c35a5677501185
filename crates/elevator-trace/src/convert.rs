//! Converting a trace and timing the formats: every item of a reader
//! copied into a sink, keeping one kind of event or dropping discards if
//! asked ([`copy`], what `elevator trace convert` runs), and the events per
//! second of CPU of each reader and writer on a synthetic trace in memory
//! ([`bench_formats`], what `elevator trace bench-convert` prints).

use std::io;
use std::path::{Path, PathBuf};

use elevator_core::{Op, TraceAction};
use thiserror::Error;

use crate::blkparse::{BlkparseReader, TextWriter};
use crate::blktrace_read::BlktraceReader;
use crate::blktrace_write::BlktraceWriter;
use crate::iolog::{IologReader, IologVersion, IologWriter};
use crate::synthetic::{PROCESSES, SyntheticTrace};
use crate::{Item, Record, TraceError, TraceSink};

/// Why a conversion stopped.
#[derive(Debug, Error)]
pub enum ConvertError {
    /// The input could not be read.
    #[error(transparent)]
    Read(#[from] TraceError),
    /// The output could not be written.
    #[error("cannot write {}", output.display())]
    Write {
        /// The output.
        output: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// Which events a conversion passes on (every process name goes through).
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// Only events of this action, if given.
    pub action: Option<TraceAction>,
    /// Whether discards are dropped.
    pub no_trim: bool,
}

/// Events read from the input and written to the output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Copied {
    /// Events read.
    pub read: u64,
    /// Events passed on to the sink.
    pub written: u64,
}

/// Copy every item of `input` into `sink` (named `output` in errors),
/// passing on the events `keep` keeps, then finish the sink.
pub fn copy<S: TraceSink + ?Sized>(
    input: impl Iterator<Item = Result<Item, TraceError>>,
    sink: &mut S,
    keep: Keep,
    output: &Path,
) -> Result<Copied, ConvertError> {
    let write_error = |source| ConvertError::Write {
        output: output.to_path_buf(),
        source,
    };
    let mut copied = Copied::default();
    for item in input {
        let written = match item? {
            Item::Record(r) => {
                copied.read += 1;
                if keeps(keep, &r) {
                    copied.written += 1;
                    sink.record(&r)
                } else {
                    Ok(())
                }
            }
            Item::Process { pid, name, time } => sink.process(pid, &name, time),
        };
        written.map_err(write_error)?;
    }
    sink.finish().map_err(write_error)?;
    Ok(copied)
}

/// Whether `keep` passes `record` on.
fn keeps(keep: Keep, record: &Record) -> bool {
    let e = &record.event;
    !(keep.action.is_some_and(|a| a != e.action) || (keep.no_trim && e.op == Op::Discard))
}

/// Why a format benchmark failed.
#[derive(Debug, Error)]
pub enum BenchError {
    /// A reader refused what a writer wrote.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A writer failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Converting blktrace to text failed.
    #[error(transparent)]
    Convert(#[from] ConvertError),
    /// A pass saw another number of events than it was given.
    #[error("expected {expected} events, got {got}")]
    Count {
        /// Events given.
        expected: u64,
        /// Events seen.
        got: u64,
    },
    /// Converting blktrace to text gave other text than writing it.
    #[error("blktrace -> text differs from the text written directly")]
    Differs,
}

/// Events per second of CPU for `work` over `events`, with `cpu_ns` the
/// calling thread's CPU time.
fn timed(
    cpu_ns: &impl Fn() -> u64,
    events: u64,
    work: impl FnOnce() -> Result<u64, BenchError>,
) -> Result<f64, BenchError> {
    let start = cpu_ns();
    let n = work()?;
    let ns = cpu_ns().saturating_sub(start).max(1);
    if n != events {
        return Err(BenchError::Count {
            expected: events,
            got: n,
        });
    }
    Ok(events as f64 * 1e9 / ns as f64)
}

/// The records among `items`.
fn count_records(items: impl Iterator<Item = Result<Item, TraceError>>) -> Result<u64, BenchError> {
    let mut n = 0;
    for item in items {
        if let Item::Record(_) = item? {
            n += 1;
        }
    }
    Ok(n)
}

/// Write the synthetic trace of `events` events into `sink`.
fn write_all(sink: &mut dyn TraceSink, events: u64) -> Result<u64, BenchError> {
    for (pid, name) in PROCESSES {
        sink.process(pid, name, 0)?;
    }
    let mut n = 0;
    for r in SyntheticTrace::new(events) {
        sink.record(&r)?;
        n += 1;
    }
    sink.finish()?;
    Ok(n)
}

/// Generate `n` events and time writing and reading blktrace binary,
/// blkparse text and iologs in memory, and converting blktrace to text:
/// each pass's name and events per second of CPU, `cpu_ns` being the
/// calling thread's CPU time in nanoseconds.
pub fn bench_formats(
    n: u64,
    cpu_ns: impl Fn() -> u64,
) -> Result<Vec<(&'static str, f64)>, BenchError> {
    let mut binary = Vec::new();
    let w_bin = timed(&cpu_ns, n, || {
        write_all(&mut BlktraceWriter::new(&mut binary), n)
    })?;
    let r_bin = timed(&cpu_ns, n, || {
        count_records(BlktraceReader::new(&binary[..], "memory", false))
    })?;
    let mut text = Vec::new();
    let w_text = timed(&cpu_ns, n, || write_all(&mut TextWriter::new(&mut text), n))?;
    let r_text = timed(&cpu_ns, n, || {
        count_records(BlkparseReader::new(&text[..], "memory", false))
    })?;
    let mut converted = Vec::new();
    let convert = timed(&cpu_ns, n, || {
        let mut w = TextWriter::new(&mut converted);
        let input = BlktraceReader::new(&binary[..], "memory", false);
        Ok(copy(input, &mut w, Keep::default(), Path::new("memory"))?.read)
    })?;
    if converted != text {
        return Err(BenchError::Differs);
    }
    drop(converted);
    let mut log = Vec::new();
    let queued = SyntheticTrace::new(n)
        .filter(|r| r.event.action == TraceAction::Queue)
        .count() as u64;
    let w_log = timed(&cpu_ns, n, || {
        let mut w = IologWriter::new(&mut log, IologVersion::V3, TraceAction::Queue, "/dev/sdb");
        write_all(&mut w, n)
    })?;
    let r_log = timed(&cpu_ns, queued, || {
        count_records(IologReader::new(&log[..], "memory", false))
    })?;
    Ok(vec![
        ("blktrace binary write", w_bin),
        ("blktrace binary read", r_bin),
        ("blkparse text write", w_text),
        ("blkparse text read", r_text),
        ("convert blktrace -> text", convert),
        ("iolog v3 write (all events offered)", w_log),
        ("iolog v3 read (Q events)", r_log),
    ])
}
