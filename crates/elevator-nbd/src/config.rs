//! How to serve: the exports, where to listen, and the limits on
//! connections and requests, and TLS ([`ServerConfig`]).

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
    /// ring on every export. Default: the number of cores.
    pub threads: usize,
    /// TLS (`NBD_OPT_STARTTLS`), with its certificates loaded: `None` (the
    /// default) refuses `STARTTLS` with `NBD_REP_ERR_UNSUP`.
    pub tls: Option<TlsConfig>,
}

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
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tls: None,
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
