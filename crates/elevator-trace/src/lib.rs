//! Block traces: the formats storage engineers record and read, and what
//! elevator makes of them.
//!
//! - [`record`]: one trace item ([`Record`]: an event with its CPU, process
//!   and device; or a process name), and rwbs text (`WS`, `FWFSM`, `R`).
//! - [`blktrace`]: blktrace's binary format (48-byte `blk_io_trace` records,
//!   version 0x07), read (one file or a per-CPU set merged by time) and
//!   written (one file per submitting thread, as `blktrace -o NAME`).
//! - [`tracefs`]: the kernel's block tracepoints as tracefs prints them.
//! - [`analyze`]: a btt-style analysis of any record stream (counts, sizes,
//!   Q2G ... Q2C, percentiles), in memory bounded by what is in flight.
//! - [`replay`]: replay planning (which events, which device, the
//!   recording's plugs, timing, the kernel's flush machinery), and
//!   [`session`]: the queue side of a replay, shared by the simulated and
//!   real-device drivers (elevator-sim's and elevator-io's `replay`).
//! - `blkparse` / `iolog` text formats, format detection and decompression:
//!   added module by module.
//!
//! Nothing here has threads or clocks: readers take any `Read`, writers any
//! `Write`, and times are the trace's own.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod analyze;
pub mod blktrace;
pub mod error;
pub mod fast_hash;
pub mod record;
pub mod replay;
pub mod session;
pub mod sink;
pub mod tracefs;

pub use error::{TraceError, TraceErrorKind};
pub use record::{DevT, Item, Record, dev_t, parse_rwbs, rwbs};
pub use sink::{MemorySink, TraceSink};
