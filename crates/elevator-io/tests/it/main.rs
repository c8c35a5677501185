//! The elevator-io integration tests: engines, real and memory devices, faults and tracing.
//! One test binary for the crate (linking one is faster than one per file);
//! each module below was a test file of its own.

mod allocation;
mod common;
mod completion;
mod depths;
mod device_options;
mod engine;
mod exactly_once;
mod extents;
mod faults;
mod file_device;
mod fio_verify;
mod mq_integrity;
mod plug;
mod random_mix;
mod replay_trace;
mod share;
mod splitting;
mod threads;
mod trace_out;
