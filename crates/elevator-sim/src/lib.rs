//! elevator-sim: disks and flash on a virtual clock, fio workloads, and the
//! discrete-event engine that runs them through elevator-core's queue.
//!
//! - [`device`]: device models (null, ssd, hdd, raid0) behind
//!   [`elevator_core::Device`], built from specs like `hdd-7200,rpm=5400`.
//! - [`job`]: fio job files as data.
//! - [`workload`]: jobs as workers that generate fio's I/O patterns.
//! - [`engine`]: the discrete-event loop; [`result`]: what a run produced.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod device;
pub mod engine;
pub mod job;
pub mod result;
pub mod rng;
pub mod workload;
