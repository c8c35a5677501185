//! The elevator-trace integration tests: trace formats read and written.
//! One test binary for the crate (linking one is faster than one per file);
//! each module below was a test file of its own.

mod formats;
mod never_panics;
mod reorder;
