//! `elevator serve`: exports over NBD until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use elevator_nbd::{ExportSpec, Server, ServerConfig};
use elevator_sim::device::{ParamUnit, parse_param};

/// Options of `elevator serve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// An export: `NAME=DEVICE[,scheduler=S][,ro][,TUNABLE=VALUE...]`, where
    /// DEVICE is file:PATH, mem:SIZE or a simulated preset (hdd-7200, ...,
    /// run on the real clock). Repeatable; the first also answers to the
    /// empty export name.
    #[arg(long = "export", value_name = "NAME=DEVICE[,OPTIONS]", required = true)]
    exports: Vec<String>,
    /// TCP address to listen on (repeatable). Default 127.0.0.1:10809 when
    /// neither --listen nor --unix is given.
    #[arg(long = "listen", value_name = "ADDR:PORT")]
    listen: Vec<SocketAddr>,
    /// Unix-domain socket to listen on (repeatable).
    #[arg(long = "unix", value_name = "PATH")]
    unix: Vec<PathBuf>,
    /// Requests in flight per connection before it is not read from (at
    /// least 1).
    #[arg(long, default_value_t = 128)]
    max_inflight: u32,
    /// Largest read or write request (e.g. 32m).
    #[arg(long, default_value = "32m")]
    max_request: String,
    /// Connections at once (at least 1). Connections still in the handshake
    /// may hold at most three quarters of them; the rest are kept for
    /// clients past it.
    #[arg(long, default_value_t = 256)]
    max_connections: u32,
    /// Seconds a connection may stay in the handshake before it is closed.
    #[arg(long, value_name = "SECONDS", default_value = "10")]
    handshake_timeout: f64,
    /// Worker threads (default: the number of cores, at most 64). Each has
    /// its own event loop and io_uring ring; connections are spread over
    /// them.
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Bytes one connection may hold (its requests' data and unsent
    /// replies) before it is not read from (e.g. 64m).
    #[arg(long, value_name = "BYTES", default_value = "64m")]
    max_conn_bytes: String,
    /// Bytes all connections together may hold; past it, connections
    /// holding more than their share are not read from (e.g. 1g).
    #[arg(long, value_name = "BYTES", default_value = "1g")]
    max_total_bytes: String,
    /// Close a connection that has neither sent nor taken a byte for this
    /// many seconds while none of its requests runs. Default: never.
    #[arg(long, value_name = "SECONDS")]
    idle_timeout: Option<f64>,
}

/// A byte count option, at least 4 KiB.
fn bytes_option(flag: &str, text: &str) -> Result<u64> {
    let v = parse_param("serve", flag, ParamUnit::Bytes, text)?;
    if !(4096.0..=f64::from(u32::MAX) * 4096.0).contains(&v) {
        anyhow::bail!("{flag} {text}: must be at least 4k");
    }
    Ok(v as u64)
}

/// A duration option in seconds: more than 0, at most a day.
fn seconds_option(flag: &str, v: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero() && *d <= Duration::from_secs(86_400))
        .with_context(|| format!("{flag} {v}: must be more than 0 and at most 86400 seconds"))
}

/// Run `elevator serve`.
pub fn run(args: &Args) -> Result<()> {
    let exports = args
        .exports
        .iter()
        .map(|e| ExportSpec::parse(e))
        .collect::<Result<Vec<_>, _>>()?;
    let max_request = parse_param(
        "serve",
        "--max-request",
        ParamUnit::Bytes,
        &args.max_request,
    )?;
    if !(4096.0..=f64::from(1u32 << 31)).contains(&max_request) {
        anyhow::bail!("--max-request {}: must be 4k to 2g", args.max_request);
    }
    if args.max_connections == 0 {
        anyhow::bail!("--max-connections 0: must be at least 1 (0 would refuse every client)");
    }
    if args.max_inflight == 0 {
        anyhow::bail!(
            "--max-inflight 0: must be at least 1 (0 would never read a request from a client)"
        );
    }
    let handshake_timeout = seconds_option("--handshake-timeout", args.handshake_timeout)?;
    let idle_timeout = args
        .idle_timeout
        .map(|v| seconds_option("--idle-timeout", v))
        .transpose()?;
    let max_conn_bytes = bytes_option("--max-conn-bytes", &args.max_conn_bytes)?;
    let max_total_bytes = bytes_option("--max-total-bytes", &args.max_total_bytes)?;
    let mut tcp = args.listen.clone();
    if tcp.is_empty() && args.unix.is_empty() {
        tcp.push(SocketAddr::from(([127, 0, 0, 1], 10809)));
    }
    let cfg = ServerConfig {
        exports,
        tcp,
        unix: args.unix.clone(),
        max_inflight: args.max_inflight,
        max_request: max_request as u32,
        max_connections: args.max_connections,
        handshake_timeout,
        threads: match args.threads {
            Some(n) if n == 0 || n > elevator_nbd::MAX_THREADS => anyhow::bail!(
                "--threads {n}: must be 1 to {}",
                elevator_nbd::MAX_THREADS
            ),
            Some(n) => n,
            None => ServerConfig::default().threads,
        },
        max_conn_bytes,
        max_total_bytes,
        idle_timeout,
    };
    let log = Box::new(|line: &str| eprintln!("elevator serve: {line}"));
    let mut server = Server::bind(cfg.clone(), log)?;
    // Signals write a byte into a socket pair the server waits on.
    let (stop_rx, stop_tx) = UnixStream::pair().context("creating the stop socket pair")?;
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let tx = stop_tx.try_clone().context("cloning the stop socket")?;
        signal_hook::low_level::pipe::register(sig, tx).context("installing a signal handler")?;
    }
    for addr in server.tcp_addrs() {
        eprintln!("elevator serve: listening on {addr} (nbd://{addr}/NAME)");
    }
    for path in &cfg.unix {
        eprintln!(
            "elevator serve: listening on {} (nbd+unix:///NAME?socket={})",
            path.display(),
            path.display()
        );
    }
    for line in server.describe() {
        eprintln!("elevator serve: {line}");
    }
    server.run(stop_rx.as_fd())?;
    eprintln!("elevator serve: stopped: in-flight requests finished, exports flushed");
    Ok(())
}
