//! The elevator-sim integration tests: device models and the discrete-event engine.
//! One test binary for the crate (linking one is faster than one per file);
//! each module below was a test file of its own.

mod bfq_fairness;
mod cfq;
mod common;
mod engine;
mod exits;
mod fault_props;
mod faults;
mod fio_options;
mod hdd_model;
mod hdd_sata_2011;
mod head_log;
mod kyber;
mod latency_target;
mod lockmodel;
mod plugin;
mod power_cut;
mod read_iolog;
mod steady;
mod tag_fairness;
mod trace_out;
