//! The elevator-nbd integration tests: the server against raw clients and real NBD tools.
//! One test binary for the crate (linking one is faster than one per file);
//! each module below was a test file of its own.

mod bad_input;
mod block_status;
mod common;
mod faults;
mod interop;
mod limits;
mod multi_conn;
mod soak;
mod sparse;
mod tls;
