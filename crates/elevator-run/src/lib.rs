//! elevator-run: run a workload on a target.
//!
//! The one layer every front end (the `elevator` command, the Python
//! bindings) calls to run fio jobs, replay a trace, advise on a scheduler or
//! run an experiment, on a device model (virtual clock) or on real devices
//! (io_uring), with the same taps either way.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod crash_states;
pub mod experiment;
pub mod microbench;
pub mod observe;
pub mod write_log;
