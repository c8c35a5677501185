//! elevator-fio: fio's language, for every engine of elevator.
//!
//! What the simulator, the real-time engine and the NBD server share about
//! workloads, so that none of them depends on another for it:
//!
//! - [`errno`]: error numbers by fio's names, and their text.
//! - [`job`]: fio job files as data (the parser, its errors and warnings).
//! - [`workload`]: jobs as workers that generate fio's I/O patterns, with
//!   their files laid out on a device (their seeded random streams are
//!   `elevator_core::rng`'s).
//! - [`RunConfig`] (scheduler, tunables, seed) and [`Progress`]: what an
//!   engine is given and what it reports while it runs.
//! - [`result`]: what a run produced; [`report`]: fio's text and JSON
//!   output of it, and the lock statistics' reports (lockmeter's table,
//!   `/proc/lock_stat`'s counts, JSON: [`report::locks`]).
//! - [`verify`]: fio's `verify=`: self-describing blocks that a write fills
//!   and a later read checks (crc32c, md5, sha256, xxhash, pattern, meta),
//!   and the digests they use.
//!
//! Pure: no clock, no I/O. Time is a number an engine passes in.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod errno;
pub mod job;
pub mod report;
pub mod result;
mod run;
pub mod verify;
pub mod workload;

pub use run::{Progress, RunConfig};
