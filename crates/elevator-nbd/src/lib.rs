//! elevator-nbd: elevator as a disk over the Network Block Device protocol.
//!
//! A fixed-newstyle NBD server ([`server`]) in front of elevator's queue:
//! each export ([`export`]) is a device (a file or block device through
//! io_uring, memory, or a simulated disk on the real clock) with its own
//! scheduler and tunables; each client connection is its own I/O context.
//!
//! The modules, each using only those listed after it:
//! - [`server`]: the exports, the listeners and the worker threads;
//! - `worker` (private): one worker's event loop, its connections and its
//!   engines; it hands each message to the phase it belongs to; `accept`
//!   (private), worker 0's taking connections in; `hub` (private), what
//!   the workers share;
//! - `handshake` and `transmit` (private): the two phases of the protocol,
//!   option haggling, then requests and their replies; `meta_context` and
//!   `status` (private) answer the metadata context options and the
//!   block status and cache commands for them; `rmw` (private) serves
//!   requests below the device's alignment by read-modify-write;
//! - `shared` (private): the state both phases work on (exports, requests
//!   in flight, the buffer pool, the configuration); `budget` (private),
//!   the bytes connections may hold, reserved before a request is read;
//! - [`ServerConfig`] (`config`, private): how to serve;
//! - [`conn`]: one connection's socket and buffers;
//! - [`tls`]: `STARTTLS`'s certificates and a connection's TLS session;
//! - [`export`]: what `--export` names, opened;
//! - [`pool`]: the reusable data buffers;
//! - [`unix_socket`]: binding a Unix socket's path without taking a live
//!   server's, and removing it only while it is still ours;
//! - [`proto`]: the wire format (pure, fuzzed).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod accept;
mod budget;
mod config;
pub mod conn;
pub mod export;
mod handshake;
mod hub;
mod meta_context;
pub mod pool;
pub mod proto;
mod rmw;
pub mod server;
mod shared;
mod spin;
mod status;
pub mod tls;
mod transmit;
pub mod unix_socket;
mod worker;

pub use config::MAX_THREADS;
pub use export::{ExportError, ExportSpec};
pub use server::{ConfigError, Log, Server, ServerConfig, ServerError};
pub use tls::{TlsConfig, TlsError, TlsMode};
