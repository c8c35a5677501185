//! `elevator serve`: exports over NBD until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use elevator_nbd::{ConfigError, ExportSpec, Server, ServerConfig, TlsConfig, TlsMode};
use elevator_sim::device::{ParamUnit, parse_param};

/// Options of `elevator serve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// An export: `NAME=DEVICE[,scheduler=S][,ro][,TUNABLE=VALUE...]`, where
    /// DEVICE is file:PATH, mem:SIZE or a simulated preset (hdd-7200, ...,
    /// run on the real clock). Repeatable; the first also answers to the
    /// empty export name. A file takes `cache=direct` (the default: O_DIRECT,
    /// the host's page cache out of the way) or `cache=page` (through the
    /// page cache, as nbdkit's file plugin serves files by default).
    #[arg(long = "export", value_name = "NAME=DEVICE[,OPTIONS]", required = true)]
    exports: Vec<String>,
    /// TCP address to listen on (repeatable). Default 127.0.0.1:10809 when
    /// neither --listen nor --unix is given.
    #[arg(long = "listen", value_name = "ADDR:PORT")]
    listen: Vec<SocketAddr>,
    /// Unix-domain socket to listen on (repeatable). A path a live server
    /// answers on, or that is not a socket, is refused; a stale socket is
    /// replaced. Removed at exit if it is still this server's.
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
    /// TLS (NBD STARTTLS): off; on (clients may use it); require (clients
    /// must: nothing but STARTTLS and ABORT is answered before it). Default:
    /// on when --tls-certificates is given, else off.
    #[arg(long, value_enum, value_name = "MODE")]
    tls: Option<TlsArg>,
    /// Directory of PEM files laid out as nbdkit's and libnbd's:
    /// server-cert.pem, server-key.pem, and ca-cert.pem (client certificates
    /// that are presented must be signed by it).
    #[arg(long, value_name = "DIR")]
    tls_certificates: Option<PathBuf>,
    /// Clients must present a certificate signed by ca-cert.pem (without
    /// it, clients need none, as with nbdkit).
    #[arg(long)]
    tls_verify_peer: bool,
    /// Bytes one connection may hold (its requests' data buffers and
    /// unsent replies, reserved before a request is read) before it is not
    /// read from; one request is let in when it holds nothing (e.g. 64m).
    #[arg(long, value_name = "BYTES", default_value = "64m")]
    max_conn_bytes: String,
    /// Bytes all connections together may hold (data buffers, unsent
    /// replies, TLS output), reserved before a request is read: a request
    /// that does not fit waits, unread, until bytes drain; a connection past
    /// its share (this over the connections) leaves a share free (e.g. 1g).
    #[arg(long, value_name = "BYTES", default_value = "1g")]
    max_total_bytes: String,
    /// Close a connection that has neither sent nor taken a byte for this
    /// many seconds while none of its requests runs. Default: never.
    #[arg(long, value_name = "SECONDS")]
    idle_timeout: Option<f64>,
    /// The longest a worker keeps looking for work without sleeping after a
    /// pass that did some, in microseconds (0: never look, sleep at once; at
    /// most 10000). Within it the look is adaptive: a worker spins only while
    /// most of its recent idle gaps were this short, for about twice their
    /// mean, and sleeps at once after spins that found nothing (gaps waiting
    /// for its devices' completions and gaps waiting for clients are
    /// counted apart).
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 50)]
    poll_us: u64,
    /// Write each export's queue events as blktrace does, one file per
    /// worker thread, each connection a process: `NAME.blktrace.N` for one
    /// export, `NAME-<export>.blktrace.N` for several. Written out when the
    /// server stops (SIGINT, SIGTERM).
    #[arg(long, value_name = "NAME")]
    trace_out: Option<String>,
    /// Record every write, discard, write-zeroes, flush and FUA the export
    /// receives, with the data, in a write log (one export only; see
    /// `elevator write-log` and `elevator crash-states`). Written out as
    /// the server runs; finished when it stops.
    #[arg(long, value_name = "FILE")]
    write_log: Option<PathBuf>,
    /// Take marks for the write log on this Unix socket (`elevator
    /// write-log mark PATH TEXT`), bound as --unix is; up to 64 clients
    /// at once, each with 5 s to send its mark.
    #[arg(long, value_name = "PATH", requires = "write_log")]
    mark_socket: Option<PathBuf>,
    /// Test-only: a broken device that records (and acknowledges) each
    /// flush before the writes it covers, so that crash checkers can be
    /// shown to fail. Never use it for anything else.
    #[arg(long, hide = true, requires = "write_log")]
    write_log_flush_before_data: bool,
}

/// `--tls`'s values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum TlsArg {
    /// No TLS: STARTTLS is refused.
    Off,
    /// Clients may use TLS.
    On,
    /// Clients must use TLS.
    Require,
}

/// The TLS configuration `--tls`, `--tls-certificates` and
/// `--tls-verify-peer` ask for, certificates loaded.
fn tls_config(args: &Args) -> Result<Option<TlsConfig>> {
    let default = if args.tls_certificates.is_some() {
        TlsArg::On
    } else {
        TlsArg::Off
    };
    let mode = match args.tls.unwrap_or(default) {
        TlsArg::Off => {
            if args.tls_verify_peer {
                anyhow::bail!("--tls-verify-peer needs TLS: give --tls=on or --tls=require");
            }
            return Ok(None);
        }
        TlsArg::On => TlsMode::On,
        TlsArg::Require => TlsMode::Require,
    };
    let Some(dir) = &args.tls_certificates else {
        anyhow::bail!(
            "--tls={} needs --tls-certificates DIR (a directory holding server-cert.pem, \
             server-key.pem and ca-cert.pem)",
            if mode == TlsMode::Require {
                "require"
            } else {
                "on"
            }
        );
    };
    if !dir.is_dir() {
        anyhow::bail!("--tls-certificates {}: not a directory", dir.display());
    }
    let cfg = TlsConfig::load(dir, mode, args.tls_verify_peer)
        .with_context(|| format!("--tls-certificates {}", dir.display()))?;
    Ok(Some(cfg))
}

/// A byte count option, at least 4 KiB.
fn bytes_option(flag: &str, text: &str) -> Result<u64> {
    let v = parse_param("serve", flag, ParamUnit::Bytes, text)?;
    if !(4096.0..=f64::from(u32::MAX) * 4096.0).contains(&v) {
        anyhow::bail!("{flag} {text}: must be 4k to 16t");
    }
    Ok(v as u64)
}

/// `v` seconds as a duration, for option `flag`: more than 0 and at most
/// a day (so that adding it to a clock never overflows).
pub(crate) fn seconds_option(flag: &str, v: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero() && *d <= Duration::from_secs(86_400))
        .with_context(|| format!("{flag} {v}: must be more than 0 and at most 86400 seconds"))
}

/// The error for a configuration the server refuses, in the words of the
/// option that gave it.
fn refused(e: ConfigError) -> anyhow::Error {
    match e {
        ConfigError::NoConnections => {
            anyhow::anyhow!("--max-connections 0: must be at least 1 (0 would refuse every client)")
        }
        ConfigError::NoInflight => anyhow::anyhow!(
            "--max-inflight 0: must be at least 1 (0 would never read a request from a client)"
        ),
        ConfigError::Threads(n) => {
            anyhow::anyhow!("--threads {n}: must be 1 to {}", elevator_nbd::MAX_THREADS)
        }
        other => other.into(),
    }
}

/// Run `elevator serve`.
pub fn run(args: &Args) -> Result<()> {
    let exports = args
        .exports
        .iter()
        .map(|e| ExportSpec::parse(e))
        .collect::<Result<Vec<_>, _>>()?;
    for e in &exports {
        for warning in e.device.warnings() {
            log_line!("elevator serve: warning: export '{}': {warning}", e.name);
        }
    }
    let max_request = parse_param(
        "serve",
        "--max-request",
        ParamUnit::Bytes,
        &args.max_request,
    )?;
    if !(4096.0..=f64::from(1u32 << 31)).contains(&max_request) {
        anyhow::bail!("--max-request {}: must be 4k to 2g", args.max_request);
    }
    let handshake_timeout = seconds_option("--handshake-timeout", args.handshake_timeout)?;
    let idle_timeout = args
        .idle_timeout
        .map(|v| seconds_option("--idle-timeout", v))
        .transpose()?;
    let max_conn_bytes = bytes_option("--max-conn-bytes", &args.max_conn_bytes)?;
    let max_total_bytes = bytes_option("--max-total-bytes", &args.max_total_bytes)?;
    if max_request > max_total_bytes as f64 {
        anyhow::bail!(
            "--max-request {} is more than --max-total-bytes {}: a request that large could \
             only run while no other request holds memory",
            args.max_request,
            args.max_total_bytes
        );
    }
    let mut tcp = args.listen.clone();
    if tcp.is_empty() && args.unix.is_empty() {
        tcp.push(SocketAddr::from(([127, 0, 0, 1], 10809)));
    }
    let tls = tls_config(args)?;
    if args.poll_us > 10_000 {
        anyhow::bail!("--poll-us {}: must be 0 to 10000", args.poll_us);
    }
    let cfg = ServerConfig {
        exports,
        tcp,
        unix: args.unix.clone(),
        max_inflight: args.max_inflight,
        max_request: max_request as u32,
        max_connections: args.max_connections,
        handshake_timeout,
        threads: args
            .threads
            .unwrap_or_else(|| ServerConfig::default().threads),
        tls,
        max_conn_bytes,
        max_total_bytes,
        idle_timeout,
        poll_spin: Duration::from_micros(args.poll_us),
    };
    cfg.check().map_err(refused)?;
    for addr in cfg.tcp.iter().filter(|a| !a.ip().is_loopback()) {
        match cfg.tls.as_ref().map(|t| t.mode) {
            None => log_line!(
                "elevator serve: warning: listening on {addr} without TLS: clients' data \
                 crosses the network in clear: use --tls=require --tls-certificates DIR"
            ),
            Some(TlsMode::On) => log_line!(
                "elevator serve: warning: listening on {addr} with TLS optional: clients \
                 that do not ask for it send their data in clear: use --tls=require"
            ),
            Some(TlsMode::Require) => {}
        }
    }
    open_files_for(&cfg);
    let log = Box::new(|line: &str| log_line!("elevator serve: {line}"));
    // The mark socket is there before the server listens: a client that
    // sees the server can mark at once.
    let mark_socket = args
        .mark_socket
        .as_deref()
        .map(crate::mark::MarkSocket::bind)
        .transpose()?;
    let mut server = Server::bind(cfg.clone(), log)?;
    let mut traces = Vec::new();
    if let Some(name) = &args.trace_out {
        for (i, export) in cfg.exports.iter().enumerate() {
            let prefix = if cfg.exports.len() == 1 {
                name.clone()
            } else {
                format!("{name}-{}", export.name)
            };
            let sink = elevator_run::taps::blktrace::open_shared(&prefix)?;
            server.trace_to(i, sink.clone());
            traces.push((prefix, sink));
        }
    }
    let write_log = match &args.write_log {
        None => None,
        Some(_) if cfg.exports.len() > 1 => anyhow::bail!(
            "--write-log records one export: {} are given",
            cfg.exports.len()
        ),
        Some(path) => {
            let opts = elevator_io::WriteLogOptions {
                flush_before_data: args.write_log_flush_before_data,
            };
            let log = server.log_writes(0, path, opts).context("--write-log")?;
            log_line!(
                "elevator serve: recording writes and flushes in {}{}",
                path.display(),
                if opts.flush_before_data {
                    " (BROKEN on purpose: flushes recorded before their data, for testing checkers)"
                } else {
                    ""
                }
            );
            Some((path, log))
        }
    };
    let marks = match (mark_socket, &write_log) {
        (Some(socket), Some((_, log))) => {
            log_line!(
                "elevator serve: taking write log marks on {}",
                socket.path().display()
            );
            Some(socket.serve(log.clone())?)
        }
        _ => None,
    };
    // Signals write a byte into a socket pair the server waits on.
    let (stop_rx, stop_tx) = UnixStream::pair().context("creating the stop socket pair")?;
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let tx = stop_tx.try_clone().context("cloning the stop socket")?;
        signal_hook::low_level::pipe::register(sig, tx).context("installing a signal handler")?;
    }
    let scheme = if cfg.tls.is_some() { "nbds" } else { "nbd" };
    for addr in server.tcp_addrs() {
        log_line!("elevator serve: listening on {addr} ({scheme}://{addr}/NAME)");
    }
    for path in &cfg.unix {
        log_line!(
            "elevator serve: listening on {} ({scheme}+unix:///NAME?socket={})",
            path.display(),
            path.display()
        );
    }
    if let Some(t) = &cfg.tls {
        log_line!(
            "elevator serve: TLS {} with the certificates in {}{}",
            if t.mode == TlsMode::Require {
                "required"
            } else {
                "offered"
            },
            t.certificates.display(),
            if t.verify_peer {
                ", client certificates required"
            } else {
                ""
            }
        );
    }
    for line in server.describe() {
        log_line!("elevator serve: {line}");
    }
    let served = server.run(stop_rx.as_fd());
    // The traces are written out whatever the end: blkparse reads what
    // there is.
    let summaries = server.trace_summaries();
    for (i, (prefix, sink)) in traces.iter().enumerate() {
        elevator_run::taps::blktrace::finish_shared(sink, prefix)?;
        if let Some(Some(summary)) = summaries.get(i) {
            log_line!(
                "{}",
                elevator_run::taps::blktrace::summary_line(prefix, summary)
            );
        }
    }
    let names = cfg.exports.iter().map(|e| e.name.as_str());
    for (name, counts) in names.zip(server.fault_counts()) {
        if let Some(counts) = counts {
            log_line!("elevator serve: export '{name}': faults injected: {counts}");
        }
    }
    drop(marks);
    if let Some((path, log)) = &write_log {
        let c = log
            .finish()
            .with_context(|| format!("--write-log {}", path.display()))?;
        log_line!(
            "elevator serve: {}",
            elevator_run::taps::write_log::counts_line(path, &c)
        );
    }
    served?;
    log_line!("elevator serve: stopped: in-flight requests finished, exports flushed");
    Ok(())
}

/// Raise the soft open-file limit (up to the hard one) so that
/// `--max-connections` clients fit beside the server's own descriptors,
/// and warn when even the hard limit leaves room for fewer: the clients
/// past it wait in the kernel's backlog while accept pauses.
fn open_files_for(cfg: &ServerConfig) {
    use rustix::process::{Resource, getrlimit, setrlimit};
    // Per worker and export a ring, an eventfd and the export's file; per
    // worker an epoll and an eventfd; and a margin for listeners, the
    // write log, the mark socket, standard streams and the libraries'.
    let own =
        (cfg.threads * (2 + 3 * cfg.exports.len()) + cfg.tcp.len() + cfg.unix.len() + 16) as u64;
    let want = own + u64::from(cfg.max_connections);
    let mut limit = getrlimit(Resource::Nofile);
    let current = limit.current.unwrap_or(u64::MAX);
    if current >= want {
        return;
    }
    let raised = limit.maximum.map_or(want, |max| want.min(max));
    if raised > current {
        limit.current = Some(raised);
        if setrlimit(Resource::Nofile, limit).is_err() {
            limit.current = Some(current);
        }
    }
    let have = limit.current.unwrap_or(u64::MAX);
    if have < want {
        log_line!(
            "elevator serve: warning: the open-file limit ({have}, ulimit -n) leaves room for \
             about {} connections, fewer than --max-connections {}: the others wait until \
             some close",
            have.saturating_sub(own),
            cfg.max_connections
        );
    }
}
