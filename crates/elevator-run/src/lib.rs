//! elevator-run: run a workload on a target.
//!
//! The one layer every front end (the `elevator` command, the Python
//! bindings) calls to run fio jobs ([`jobs::JobsRequest`]), replay a trace
//! ([`replay::replay`]) or advise on a scheduler ([`advise::advise`]), on a
//! device model (virtual clock) or on real devices (io_uring), the
//! [`Target`], with the same [`Taps`] either way. Plain types go in, result
//! structs come out; nothing is printed: progress and notes go to a
//! [`Listener`]; every failure is a [`RunError`].
//!
//! - [`target`]: where a workload runs, and the checks before it does;
//!   [`names`]: the scheduler and tunable names a user types.
//! - [`job_text`]: the job a user gives (file, command-line options).
//! - [`taps`]: blktrace files, an observer, iologs, the write log.
//! - [`jobs`], [`replay`], [`advise`]: the entry points; [`sweep`]: one
//!   workload over a grid of configurations, on threads, to a CSV;
//!   [`json`]: the JSON documents they give, rendered once for every
//!   front end.
//! - [`experiment`]: the measurements from the Linux discussions the
//!   project grew from, each with its expected shapes; [`observe`]: the
//!   trace sink their plots (and `run --report`'s) are drawn from.
//! - [`microbench`]: the CPU per bio of elevator-core's path, no device.
//! - [`write_log`]: a write log applied to image files;
//!   [`crash_states`]: the crash states of a write log, built and checked.
//! - [`listener`]: progress and notes; [`error`]: what can fail.
//! - [`cpu_time`]: the host CPU a run took; [`cost`]: the instructions
//!   the hot paths take, counted under callgrind, and their baselines.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod advise;
pub mod cost;
pub mod cpu_time;
pub mod crash_states;
pub mod error;
pub mod experiment;
pub mod job_text;
pub mod jobs;
pub mod json;
pub mod listener;
pub mod microbench;
pub mod names;
pub mod observe;
pub mod replay;
pub mod sweep;
pub mod taps;
pub mod target;
pub mod write_log;

pub use error::{Failure, RunError};
pub use listener::{Listener, Progress, Quiet};
pub use taps::{Observer, Taps};
pub use target::{Target, Threads};
