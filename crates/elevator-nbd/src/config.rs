//! How to serve: the exports, where to listen, the worker threads, the
//! limits on connections, requests and memory, and TLS ([`ServerConfig`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::export::ExportSpec;
use crate::tls::TlsConfig;

/// How to serve.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The exports; the first also answers to the empty name.
    pub exports: Vec<ExportSpec>,
    /// TCP addresses to listen on.
    pub tcp: Vec<SocketAddr>,
    /// Unix-domain socket paths to listen on.
    pub unix: Vec<PathBuf>,
    /// Requests in flight per connection before the server stops reading
    /// from it. Default 128.
    pub max_inflight: u32,
    /// Largest read or write, in bytes. Default 32 MiB.
    pub max_request: u32,
    /// Connections at once. Default 256.
    pub max_connections: u32,
    /// How long a connection may stay in the handshake (from accept until
    /// it chooses an export) before it is closed. Default 10 s.
    pub handshake_timeout: Duration,
    /// Worker threads, each with its own event loop and its own io_uring
    /// ring on every export. Default: the number of cores. At most
    /// [`MAX_THREADS`].
    pub threads: usize,
    /// TLS (`NBD_OPT_STARTTLS`), with its certificates loaded: `None` (the
    /// default) refuses `STARTTLS` with `NBD_REP_ERR_UNSUP`.
    pub tls: Option<TlsConfig>,
    /// Bytes one connection may hold (the data buffers of its requests in
    /// flight and its replies not yet sent, reserved before a request is
    /// read) before the server stops reading from it. A request is let in
    /// when the connection holds nothing, however big (within
    /// `max_total_bytes`). Default 64 MiB.
    pub max_conn_bytes: u64,
    /// Bytes every connection together may hold: data buffers, replies
    /// not yet sent, and output TLS holds. A request's bytes are reserved
    /// before it is read; one that does not fit is left unread, its
    /// connection not read from, until bytes drain (on any worker). A
    /// connection holding more than its share (this divided by the
    /// connections) may take more only while a share stays free, so a
    /// client that stops reading its replies does not take everything.
    /// When nothing at all is held, a request is let in however big, so a
    /// connection alone always moves. Default 1 GiB.
    pub max_total_bytes: u64,
    /// Close a connection past the handshake that has neither sent a byte
    /// nor taken one for this long, while nothing of its own is running
    /// (an idle client, or one that stopped reading its replies). `None`
    /// (the default): never.
    pub idle_timeout: Option<Duration>,
    /// After a pass that did work, a worker looks for more without
    /// sleeping for this long (each look is an `epoll_wait` that does not
    /// block): a sleep and a wake-up cost more than a look when requests
    /// follow each other closely. Zero: sleep at once. Default 50 µs.
    pub poll_spin: Duration,
}

/// The most worker threads a server runs.
pub const MAX_THREADS: usize = 64;

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            exports: Vec::new(),
            tcp: Vec::new(),
            unix: Vec::new(),
            max_inflight: 128,
            max_request: 32 << 20,
            max_connections: 256,
            handshake_timeout: Duration::from_secs(10),
            threads: std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(MAX_THREADS),
            tls: None,
            max_conn_bytes: 64 << 20,
            max_total_bytes: 1 << 30,
            idle_timeout: None,
            poll_spin: Duration::from_micros(50),
        }
    }
}

impl ServerConfig {
    /// How many connection slots connections still in the handshake may hold
    /// at once: `max_connections` less a reserve of a quarter (at least one
    /// when `max_connections` is above 1) kept for clients past it.
    pub fn handshake_slots(&self) -> u32 {
        let max = self.max_connections;
        if max > 1 { max - (max / 4).max(1) } else { max }
    }
}
