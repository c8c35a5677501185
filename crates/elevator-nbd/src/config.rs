//! How to serve: the exports, where to listen, the worker threads, the
//! limits on connections, requests and memory, and TLS ([`ServerConfig`]);
//! and the one check of a configuration ([`ServerConfig::check`],
//! [`ConfigError`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

use crate::export::ExportSpec;
use crate::tls::TlsConfig;

/// A configuration the server cannot serve with.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    /// No exports.
    #[error("nothing to serve: give at least one --export")]
    NoExports,
    /// `max_connections` is 0.
    #[error("max_connections 0 would refuse every client: give at least 1")]
    NoConnections,
    /// `max_inflight` is 0.
    #[error("max_inflight 0 would never read a request: give at least 1")]
    NoInflight,
    /// `handshake_timeout` is 0.
    #[error("a handshake timeout of 0 would close every connection at once")]
    NoHandshakeTime,
    /// `threads` is 0 or more than [`MAX_THREADS`].
    #[error("{0} worker threads: give 1 to {MAX_THREADS}")]
    Threads(usize),
    /// `max_conn_bytes` or `max_total_bytes` is 0.
    #[error("a byte limit of 0 would never read a request: give at least 1")]
    NoBytes,
    /// `idle_timeout` is 0.
    #[error("an idle timeout of 0 would close every connection at once")]
    NoIdleTime,
    /// No TCP address and no Unix socket.
    #[error("nowhere to listen: give --listen or --unix")]
    Nowhere,
    /// Two exports have this name.
    #[error("two exports are called '{0}'")]
    SameName(String),
}

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
    /// sleeping for at most this long (each look is an `epoll_wait` that
    /// does not block): a sleep and a wake-up cost more than a look when
    /// requests follow each other closely. Within it the window adapts:
    /// only while most recent idle gaps were this short, for about twice
    /// their mean (the private `spin` module). Zero: sleep at once.
    /// Default 50 µs.
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
    /// Whether the server can serve with this configuration: the first
    /// setting it cannot, if any.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.exports.is_empty() {
            return Err(ConfigError::NoExports);
        }
        if self.max_connections == 0 {
            return Err(ConfigError::NoConnections);
        }
        if self.max_inflight == 0 {
            return Err(ConfigError::NoInflight);
        }
        if self.handshake_timeout.is_zero() {
            return Err(ConfigError::NoHandshakeTime);
        }
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(ConfigError::Threads(self.threads));
        }
        if self.max_conn_bytes == 0 || self.max_total_bytes == 0 {
            return Err(ConfigError::NoBytes);
        }
        if self.idle_timeout.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::NoIdleTime);
        }
        if self.tcp.is_empty() && self.unix.is_empty() {
            return Err(ConfigError::Nowhere);
        }
        let mut names: Vec<&str> = self.exports.iter().map(|e| e.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(ConfigError::SameName(w[0].to_string()));
        }
        Ok(())
    }

    /// How many connection slots connections still in the handshake may hold
    /// at once: `max_connections` less a reserve of a quarter (at least one
    /// when `max_connections` is above 1) kept for clients past it.
    pub fn handshake_slots(&self) -> u32 {
        let max = self.max_connections;
        if max > 1 { max - (max / 4).max(1) } else { max }
    }
}
