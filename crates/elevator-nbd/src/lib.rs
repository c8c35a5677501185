//! elevator-nbd: elevator as a disk over the Network Block Device protocol.
//!
//! A fixed-newstyle NBD server ([`server`]) in front of elevator's queue:
//! each export ([`export`]) is a device (a file or block device through
//! io_uring, memory, or a simulated disk on the real clock) with its own
//! scheduler and tunables; each client connection is its own I/O context.
//! [`proto`] is the wire format (pure, fuzzed), [`conn`] one connection's
//! buffers, `handshake` and `transmit` (private) the two phases of the
//! protocol, [`pool`] the reusable data buffers.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod conn;
pub mod export;
mod handshake;
pub mod pool;
pub mod proto;
pub mod server;
mod transmit;

pub use export::{ExportError, ExportSpec};
pub use server::{Server, ServerConfig, ServerError};
