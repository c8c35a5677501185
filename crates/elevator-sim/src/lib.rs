//! elevator-sim: disks and flash on a virtual clock, and the discrete-event
//! engine that runs fio workloads (from elevator-fio) through
//! elevator-core's queue on them.
//!
//! - [`device`]: device models (null, ssd, hdd, raid0) behind
//!   [`elevator_core::Device`], built from specs like `hdd-7200,rpm=5400`;
//!   faults on any of them (`torn_rate`, `vanish_at`, `power_cut_at`, ...);
//!   which write each media sector holds; the write log of a model and the
//!   check of its media against it.
//! - [`engine`]: the discrete-event loop.
//! - [`iolog_out`]: `write_iolog`, each job clone's I/Os as fio logs them,
//!   from the trace events.
//! - [`lockmodel`]: CPUs contending for locks on a virtual clock, to predict
//!   lock scaling past the host's cores.
//! - [`replay`]: a recorded trace replayed through the queue onto a device
//!   model (`elevator replay`).
//! - [`replay_logs`]: the logs jobs replay (`read_iolog`: fio iologs,
//!   blktraces), opened for both engines.
//! - [`trace_out`]: the queue's trace events on their way to a trace sink
//!   (blktrace files), for the simulator and the real-time engine alike.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod device;
pub mod engine;
pub mod iolog_out;
pub mod lockmodel;
pub mod replay;
pub mod replay_logs;
pub mod trace_out;
