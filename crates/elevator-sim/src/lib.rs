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
//! - [`lockmodel`]: CPUs contending for locks on a virtual clock, to predict
//!   lock scaling past the host's cores.
//! - [`replay`]: a recorded trace replayed through the queue onto a device
//!   model (`elevator replay`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod device;
pub mod engine;
pub mod lockmodel;
pub mod replay;
