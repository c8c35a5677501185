//! The elevator-core integration tests: queues, merging and schedulers through the public API.
//! One test binary for the crate (linking one is faster than one per file);
//! each module below was a test file of its own.

mod bfq;
mod bfq_idling;
mod common;
mod deadline_order;
mod disk_stats;
mod kyber;
mod merge_rules;
mod no_allocation;
mod properties;
mod tag_exhaustion;
mod tunables;
