//! Block traces: the formats storage engineers record and read, and what
//! elevator makes of them.
//!
//! - [`record`]: one trace item ([`Record`]: an event with its CPU, process
//!   and device; or a process name), and rwbs text (`WS`, `FWFSM`, `R`).
//! - [`blktrace`]: blktrace's binary format (48-byte `blk_io_trace` records,
//!   version 0x07), read (one file or a per-CPU set merged by time) and
//!   written (one file per submitting thread, as `blktrace -o NAME`).
//!   Reading is in [`blktrace_read`], writing in [`blktrace_write`] (one
//!   stream) and [`blktrace_set`] (a per-CPU set), both encoding through
//!   [`blktrace_encode`].
//! - [`blkparse`]: blkparse's default text, read and written.
//! - [`tracefs`]: tracefs block tracepoint text, read.
//! - [`reorder`]: the text readers' reorder window, which puts lines a
//!   little out of time order (CPUs interleaved) back in order.
//! - [`iolog`]: fio's iolog v2/v3, read and written.
//! - [`mod@open`]: one entry point, [`open()`], that finds the format (and gzip
//!   or xz compression) from the content and returns a [`TraceReader`].
//! - [`convert`]: a trace copied from a reader into a writer (one kind of
//!   event kept, discards dropped, if asked), and the formats' speed
//!   figures (the caller's CPU clock passed in).
//! - [`synthetic`]: a generated trace of any length, for tests and speed
//!   figures; [`text_fields`]: byte-level parsing and formatting shared by
//!   the text formats.
//! - [`tap`]: [`tap::TraceTap`], the queue's trace events on their way to a
//!   trace sink (`--trace-out`), for the simulator and the real-time engine
//!   alike.
//! - [`read_iolog`]: the logs fio jobs replay (`read_iolog`: fio iologs,
//!   blktraces), opened for both engines.
//! - [`write_iolog`]: [`write_iolog::JobIologs`], each job clone's I/Os as
//!   fio logs them (`write_iolog`), from the trace events.
//! - [`analyze`]: a btt-style analysis of any record stream (counts, sizes,
//!   Q2G ... Q2C, percentiles), in memory bounded by what is in flight.
//! - [`replay`]: the replay core both drivers (elevator-sim's and
//!   elevator-io's `replay`) share: planning (which events, which device,
//!   the recording's plugs, timing, the kernel's flush machinery), the
//!   recorded bios in flight, where the queue's events go, and the result.
//!
//! Nothing here has threads or clocks: readers take any `Read`, writers any
//! `Write`, and times are the trace's own (a tap's sink may be shared by an
//! engine's threads behind a lock, [`tap::SharedSink`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod analyze;
pub mod blkparse;
pub mod blktrace;
pub mod blktrace_encode;
pub mod blktrace_read;
pub mod blktrace_set;
pub mod blktrace_write;
pub mod convert;
pub mod error;
pub mod fast_hash;
pub mod iolog;
pub mod open;
pub mod read_iolog;
pub mod record;
pub mod reorder;
pub mod replay;
pub mod sink;
pub mod synthetic;
pub mod tap;
pub mod text_fields;
pub mod tracefs;
pub mod write_iolog;
pub mod write_log;

pub use error::{TraceError, TraceErrorKind};
pub use open::{Format, TraceReader, detect, open};
pub use record::{DevT, Item, Record, dev_t, parse_rwbs, rwbs};
pub use sink::{MemorySink, Tee, TraceSink};
