//! The server: listeners, connections and exports, driven by one thread.
//!
//! One epoll loop waits on the listeners, every connection (edge-triggered),
//! a stop descriptor, and each export's device when it has a descriptor (an
//! io_uring); its timeout is the earliest time an export needs attention
//! (a scheduler's idle timer, a paced model's next completion). Each pass
//! reads what connections sent, hands requests to their export's engine, polls
//! every engine, turns completions into replies, and writes what sockets
//! take. Requests from one connection are its own I/O context, so fair
//! schedulers share the disk between clients.
//!
//! Connections still in the handshake (not yet past `GO` or `EXPORT_NAME`)
//! are bounded twice, so that sockets that connect and say nothing cannot
//! lock every other client out. Each is closed once it has been in the
//! handshake for [`ServerConfig::handshake_timeout`] (the loop's timeout
//! wakes it for that: no extra thread). And together they may hold at most
//! [`ServerConfig::handshake_slots`] of the slots, the rest being kept for
//! clients past the handshake: a connection that arrives when they hold
//! that many (or when every slot is taken) makes the connection that has
//! been silent longest (not even its flags sent) give way, so that a new
//! client gets in even while a flood of silent sockets holds the slots. It
//! is refused, with the reason logged, only when no connection is silent,
//! or the server is shutting down.
//!
//! Shutting down (the stop descriptor becomes readable): listeners close,
//! connections still in the handshake close, the others stop taking
//! requests; when everything in flight has completed and been answered, every
//! writable export is flushed, and the connections close.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use elevator_core::IoContext;
use elevator_io::{Completion, DataDevice};
use rustix::event::{Timespec, epoll};
use thiserror::Error;

pub use crate::config::ServerConfig;
use crate::conn::{Conn, Message, Phase, Stream};
use crate::export::{ExportError, ExportSpec};
use crate::pool::{Buf, Pool};
use crate::shared::Shared;
use crate::{handshake, proto, transmit};

/// The server cannot start or go on.
#[derive(Debug, Error)]
pub enum ServerError {
    /// An export cannot be opened.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// Nothing to serve, or nowhere to listen.
    #[error("{0}")]
    Config(String),
    /// A listener cannot be set up.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The event loop failed.
    #[error("event loop: {0}")]
    Poll(io::Error),
    /// An engine failed.
    #[error("export '{export}'")]
    Engine {
        /// The export.
        export: String,
        /// Why.
        #[source]
        source: Box<elevator_io::EngineError>,
    },
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

const KIND_SHIFT: u32 = 60;
const LISTENER: u64 = 1;
const STOP: u64 = 2;
const DEVICE: u64 = 3;
const CONN: u64 = 4;
/// Socket send buffer asked for.
const SNDBUF: usize = 4 << 20;
/// How long a stop waits for requests in flight before cancelling them.
const STOP_GRACE: Duration = Duration::from_secs(30);

fn token(kind: u64, generation: u32, index: u32) -> u64 {
    (kind << KIND_SHIFT) | (u64::from(generation & 0x0FFF_FFFF) << 32) | u64::from(index)
}

/// An NBD server, bound and ready to run.
pub struct Server {
    shared: Shared,
    listeners: Vec<Listener>,
    conns: Vec<Option<Conn>>,
    gens: Vec<u32>,
    free_conns: Vec<u32>,
    live: u32,
    next_ctx: u32,
    epoll: OwnedFd,
    completions: Vec<Completion<Buf>>,
    log: Box<dyn FnMut(&str) + Send>,
    stop_since: Option<Instant>,
}

impl Server {
    /// Open the exports and bind the listeners. `log` gets one line per
    /// connection when it ends.
    pub fn bind(
        cfg: ServerConfig,
        log: Box<dyn FnMut(&str) + Send>,
    ) -> Result<Server, ServerError> {
        if cfg.exports.is_empty() {
            return Err(ServerError::Config(
                "nothing to serve: give at least one --export".into(),
            ));
        }
        if cfg.max_connections == 0 {
            return Err(ServerError::Config(
                "max_connections 0 would refuse every client: give at least 1".into(),
            ));
        }
        if cfg.max_inflight == 0 {
            return Err(ServerError::Config(
                "max_inflight 0 would never read a request: give at least 1".into(),
            ));
        }
        if cfg.handshake_timeout.is_zero() {
            return Err(ServerError::Config(
                "a handshake timeout of 0 would close every connection at once".into(),
            ));
        }
        if cfg.tcp.is_empty() && cfg.unix.is_empty() {
            return Err(ServerError::Config(
                "nowhere to listen: give --listen or --unix".into(),
            ));
        }
        let mut names: Vec<&str> = cfg.exports.iter().map(|e| e.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(ServerError::Config(format!(
                "two exports are called '{}'",
                w[0]
            )));
        }
        let exports = cfg
            .exports
            .iter()
            .map(ExportSpec::open)
            .collect::<Result<Vec<_>, _>>()?;
        let listen_err = |addr: String| move |source| ServerError::Listen { addr, source };
        let mut listeners = Vec::new();
        for addr in &cfg.tcp {
            let l = TcpListener::bind(addr).map_err(listen_err(addr.to_string()))?;
            l.set_nonblocking(true)
                .map_err(listen_err(addr.to_string()))?;
            listeners.push(Listener::Tcp(l));
        }
        for path in &cfg.unix {
            let name = path.display().to_string();
            if std::fs::symlink_metadata(path).is_ok_and(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.file_type().is_socket()
            }) {
                // A socket left by an earlier run.
                let _ = std::fs::remove_file(path);
            }
            let l = UnixListener::bind(path).map_err(listen_err(name.clone()))?;
            l.set_nonblocking(true).map_err(listen_err(name))?;
            listeners.push(Listener::Unix(l, path.clone()));
        }
        let epoll =
            epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| ServerError::Poll(e.into()))?;
        Ok(Server {
            shared: Shared {
                exports,
                inflight: Vec::new(),
                free_inflight: Vec::new(),
                pool: Pool::default(),
                cfg,
                stopping: false,
            },
            listeners,
            conns: Vec::new(),
            gens: Vec::new(),
            free_conns: Vec::new(),
            live: 0,
            next_ctx: 1,
            epoll,
            completions: Vec::new(),
            log,
            stop_since: None,
        })
    }

    /// The TCP addresses actually bound (a port of 0 becomes a real one).
    pub fn tcp_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| match l {
                Listener::Tcp(t) => t.local_addr().ok(),
                Listener::Unix(..) => None,
            })
            .collect()
    }

    /// One line per export, for the startup message.
    pub fn describe(&self) -> Vec<String> {
        self.shared
            .exports
            .iter()
            .map(|e| {
                format!(
                    "export '{}': {} bytes, {}{}",
                    e.name,
                    e.size,
                    e.description,
                    if e.read_only { ", read-only" } else { "" }
                )
            })
            .collect()
    }

    fn add(
        &self,
        fd: BorrowedFd<'_>,
        tok: u64,
        flags: epoll::EventFlags,
    ) -> Result<(), ServerError> {
        epoll::add(&self.epoll, fd, epoll::EventData::new_u64(tok), flags)
            .map_err(|e| ServerError::Poll(e.into()))
    }

    /// Serve until `stop` becomes readable (write a byte to its other end, as
    /// a signal handler does), then shut down cleanly.
    pub fn run(&mut self, stop: BorrowedFd<'_>) -> Result<(), ServerError> {
        for (i, l) in self.listeners.iter().enumerate() {
            let fd = match l {
                Listener::Tcp(t) => t.as_fd(),
                Listener::Unix(u, _) => u.as_fd(),
            };
            self.add(fd, token(LISTENER, 0, i as u32), epoll::EventFlags::IN)?;
        }
        self.add(stop, token(STOP, 0, 0), epoll::EventFlags::IN)?;
        for (i, e) in self.shared.exports.iter().enumerate() {
            if let Some(fd) = e.engine.device().poll_fd() {
                self.add(fd, token(DEVICE, 0, i as u32), epoll::EventFlags::IN)?;
            }
        }
        let mut events: Vec<epoll::Event> = Vec::with_capacity(256);
        loop {
            let timeout = self.timeout();
            events.clear();
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                timeout.as_ref(),
            ) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(ServerError::Poll(e.into())),
            }
            for ev in &events {
                let t = ev.data.u64();
                let index = (t & 0xFFFF_FFFF) as u32;
                match t >> KIND_SHIFT {
                    // Below, once every connection's news is in: whether a
                    // connection is silent decides who makes room.
                    LISTENER => {}
                    STOP => {
                        let mut sink = [0u8; 64];
                        let _ = rustix::io::read(stop, &mut sink);
                        self.begin_stop();
                    }
                    CONN => {
                        let generation = ((t >> 32) & 0x0FFF_FFFF) as u32;
                        if let Some(Some(c)) = self.conns.get_mut(index as usize)
                            && (c.generation & 0x0FFF_FFFF) == generation
                        {
                            let f = ev.flags;
                            if f.intersects(
                                epoll::EventFlags::HUP
                                    | epoll::EventFlags::RDHUP
                                    | epoll::EventFlags::ERR,
                            ) {
                                c.hangup = true;
                            }
                            if f.intersects(
                                epoll::EventFlags::IN
                                    | epoll::EventFlags::HUP
                                    | epoll::EventFlags::RDHUP
                                    | epoll::EventFlags::ERR,
                            ) {
                                c.readable = true;
                            }
                            if f.intersects(
                                epoll::EventFlags::OUT
                                    | epoll::EventFlags::HUP
                                    | epoll::EventFlags::ERR,
                            ) {
                                c.writable = true;
                            }
                        }
                    }
                    _ => {}
                }
            }
            for ev in &events {
                let t = ev.data.u64();
                if t >> KIND_SHIFT == LISTENER {
                    self.accept((t & 0xFFFF_FFFF) as usize)?;
                }
            }
            self.expire_handshakes();
            self.service()?;
            if self.shared.stopping && self.finish_stop()? {
                return Ok(());
            }
        }
    }

    /// How long the loop may sleep.
    fn timeout(&self) -> Option<Timespec> {
        let busy = self.shared.exports.iter().any(|e| e.engine.has_finished())
            || self.conns.iter().flatten().any(|c| self.can_progress(c));
        if busy {
            return Some(Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            });
        }
        let mut wait: Option<Duration> = None;
        for e in &self.shared.exports {
            if let Some(at) = e.engine.next_deadline() {
                let d = Duration::from_nanos(at.saturating_sub(e.engine.now()));
                wait = Some(wait.map_or(d, |w| w.min(d)));
            }
        }
        if self.shared.stopping {
            wait = Some(wait.map_or(Duration::from_millis(100), |w| {
                w.min(Duration::from_millis(100))
            }));
        }
        // Wake up for the first handshake to time out.
        let limit = self.shared.cfg.handshake_timeout;
        for c in self.conns.iter().flatten() {
            if in_handshake(c) {
                let d = limit.saturating_sub(c.started.elapsed());
                wait = Some(wait.map_or(d, |w| w.min(d)));
            }
        }
        wait.map(|d| Timespec {
            tv_sec: d.as_secs() as i64,
            tv_nsec: i64::from(d.subsec_nanos()),
        })
    }

    /// Whether a connection has work that needs no new event.
    fn can_progress(&self, c: &Conn) -> bool {
        (c.readable && !transmit::throttled(c, &self.shared))
            || (c.writable && c.pending_output() > 0)
    }

    fn accept(&mut self, i: usize) -> Result<(), ServerError> {
        loop {
            // A stop in the same wake-up has closed the listeners.
            let Some(listener) = self.listeners.get(i) else {
                return Ok(());
            };
            let accepted = match listener {
                Listener::Tcp(l) => l.accept().map(|(s, a)| {
                    let _ = s.set_nodelay(true);
                    (Stream::Tcp(s), a.to_string())
                }),
                Listener::Unix(l, p) => l
                    .accept()
                    .map(|(s, _)| (Stream::Unix(s), format!("unix:{}", p.display()))),
            };
            let (stream, peer) = match accepted {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    (self.log)(&format!("accept failed: {e}"));
                    return Ok(());
                }
            };
            if self.shared.stopping {
                (self.log)(&format!("{peer}: refused: shutting down"));
                continue;
            }
            if let Err(why) = self.make_room() {
                (self.log)(&format!("{peer}: refused: {why}"));
                continue;
            }
            let nb = match &stream {
                Stream::Tcp(s) => s.set_nonblocking(true),
                Stream::Unix(s) => s.set_nonblocking(true),
            };
            if let Err(e) = nb {
                (self.log)(&format!("{peer}: {e}"));
                continue;
            }
            // Room for many replies per write (read replies are big); the
            // kernel caps it at net.core.wmem_max.
            let _ = rustix::net::sockopt::set_socket_send_buffer_size(stream.fd(), SNDBUF);
            let index = match self.free_conns.pop() {
                Some(i) => i,
                None => {
                    self.conns.push(None);
                    self.gens.push(0);
                    self.conns.len() as u32 - 1
                }
            };
            let generation = self.gens[index as usize];
            let ctx = IoContext(self.next_ctx);
            self.next_ctx = self.next_ctx.wrapping_add(1).max(1);
            let conn = Conn::new(stream, peer, generation, ctx);
            let flags = epoll::EventFlags::IN
                | epoll::EventFlags::OUT
                | epoll::EventFlags::RDHUP
                | epoll::EventFlags::ET;
            self.add(conn.stream.fd(), token(CONN, generation, index), flags)?;
            self.conns[index as usize] = Some(conn);
            self.live += 1;
        }
    }

    /// Make room for one more connection. While connections in the
    /// handshake hold all the slots they may ([`ServerConfig::handshake_slots`]),
    /// or every slot is taken, the connection that has been silent longest
    /// (in the handshake and not even its flags sent) is closed to make
    /// room. `Err` says why there is no room: no connection is silent.
    fn make_room(&mut self) -> Result<(), String> {
        let cfg = &self.shared.cfg;
        let (max, cap) = (cfg.max_connections, cfg.handshake_slots());
        if self.live < cap {
            return Ok(());
        }
        let mut handshaking = 0u32;
        let mut silent: Option<(usize, Instant)> = None;
        for (i, c) in self.conns.iter().enumerate() {
            let Some(c) = c else { continue };
            if !in_handshake(c) {
                continue;
            }
            handshaking += 1;
            // Not even the client's flags yet, and nothing known to be
            // waiting to be read.
            let quiet = c.phase == Phase::ClientFlags && !c.readable;
            if quiet && silent.is_none_or(|(_, t)| c.started < t) {
                silent = Some((i, c.started));
            }
        }
        let full = self.live >= max;
        if !full && handshaking < cap {
            return Ok(());
        }
        let reserve = max - cap;
        let limit = if full {
            format!("all {max} connection slots (max_connections) are taken")
        } else {
            format!(
                "the connections in the handshake hold {handshaking} slot{}, the most they \
                 may (max_connections {max} less {reserve} kept for clients past the \
                 handshake)",
                if handshaking == 1 { "" } else { "s" }
            )
        };
        let Some((victim, since)) = silent else {
            return Err(format!(
                "too many connections: {limit}, and none of those in the handshake is silent"
            ));
        };
        if let Some(c) = self.conns[victim].as_mut() {
            c.fail(&format!(
                "closed to make room for a new connection: silent in the handshake for \
                 {:.3} s, the longest, while {limit}",
                since.elapsed().as_secs_f64()
            ));
        }
        self.close(victim);
        Ok(())
    }

    /// Fail every connection that has been in the handshake too long.
    fn expire_handshakes(&mut self) {
        let limit = self.shared.cfg.handshake_timeout;
        for c in self.conns.iter_mut().flatten() {
            if in_handshake(c) && c.started.elapsed() >= limit {
                c.fail(&format!(
                    "handshake timed out after {} s",
                    limit.as_secs_f64()
                ));
            }
        }
    }

    /// Read, submit, complete, reply, write, close: one pass.
    fn service(&mut self) -> Result<(), ServerError> {
        for _ in 0..4 {
            let mut progress = false;
            for i in 0..self.conns.len() {
                if let Some(mut c) = self.conns[i].take() {
                    progress |= self.pump(&mut c, i as u32);
                    self.conns[i] = Some(c);
                }
            }
            progress |= self.complete()?;
            for c in self.conns.iter_mut().flatten() {
                if c.writable && c.pending_output() > 0 {
                    c.flush(&mut self.shared.pool);
                }
            }
            if !progress {
                break;
            }
        }
        self.reap_closed();
        Ok(())
    }

    /// Handle what connection `c` (slot `index`) sent, while it may.
    fn pump(&mut self, c: &mut Conn, index: u32) -> bool {
        let mut progress = false;
        loop {
            if c.closing.is_some() || transmit::throttled(c, &self.shared) {
                return progress;
            }
            match c.next_message() {
                Some(m) => {
                    progress = true;
                    self.handle(c, index, m);
                }
                None => {
                    if !(c.readable && c.fill()) {
                        return progress;
                    }
                }
            }
        }
    }

    fn handle(&mut self, c: &mut Conn, index: u32, m: Message) {
        match m {
            Message::ClientFlags(f) => match proto::client_flags(f) {
                Ok(no_zeroes) => {
                    c.no_zeroes = no_zeroes;
                    c.phase = Phase::Options;
                }
                Err(e) => c.fail(&format!("handshake: {e}")),
            },
            Message::Option(h, data) => handshake::option(c, &self.shared, h, &data),
            Message::OptionTooBig(h) => handshake::too_big(c, h),
            Message::Request(r) => transmit::request(c, index, &mut self.shared, r),
            Message::Payload(r, buf) => transmit::payload(c, index, &mut self.shared, r, buf),
            Message::Broken(e) => c.fail(&format!("protocol error: {e}")),
        }
    }

    /// Poll every engine and answer what completed.
    fn complete(&mut self) -> Result<bool, ServerError> {
        let mut any = false;
        for e in 0..self.shared.exports.len() {
            let mut done = std::mem::take(&mut self.completions);
            let polled = self.shared.exports[e]
                .engine
                .poll(Some(Duration::ZERO), &mut done);
            if let Err(source) = polled {
                self.completions = done;
                return Err(ServerError::Engine {
                    export: self.shared.exports[e].name.clone(),
                    source: Box::new(source),
                });
            }
            any |= !done.is_empty();
            for comp in done.drain(..) {
                transmit::completed(&mut self.conns, &mut self.shared, comp);
            }
            self.completions = done;
        }
        Ok(any)
    }

    /// Close connections that are finished.
    fn reap_closed(&mut self) {
        // A write whose payload will never arrive (the client is gone) is
        // no longer in flight.
        for c in self.conns.iter_mut().flatten() {
            if c.eof
                && let Some(b) = c.take_payload()
            {
                self.shared.pool.put(b);
                c.inflight -= 1;
            }
        }
        for i in 0..self.conns.len() {
            let done = self.conns[i].as_ref().is_some_and(|c| {
                let quiet = c.inflight == 0 && !c.in_payload();
                let flushed = c.pending_output() == 0;
                quiet
                    && (c.eof
                        || (c.closing.is_some() && (flushed || !c.writable))
                        || (c.disc && flushed))
            });
            if done {
                self.close(i);
            }
        }
    }

    /// Close the connection in slot `i` now, log its line and free the slot.
    /// It must have nothing in flight.
    fn close(&mut self, i: usize) {
        let Some(mut c) = self.conns[i].take() else {
            return;
        };
        let _ = epoll::delete(&self.epoll, c.stream.fd());
        c.drop_output(&mut self.shared.pool);
        if let Phase::Transmission(e) = c.phase {
            self.shared.exports[e].engine.context_gone(c.ctx);
        }
        let reason = c.closing.clone().unwrap_or_else(|| {
            if c.disc {
                "client disconnected (DISC)".into()
            } else {
                "client closed the connection".into()
            }
        });
        (self.log)(&transmit::summary(&c, &reason));
        self.gens[i] = self.gens[i].wrapping_add(1);
        self.free_conns.push(i as u32);
        self.live -= 1;
    }

    fn begin_stop(&mut self) {
        if self.shared.stopping {
            return;
        }
        self.shared.stopping = true;
        self.stop_since = Some(Instant::now());
        for l in self.listeners.drain(..) {
            match l {
                Listener::Tcp(t) => {
                    let _ = epoll::delete(&self.epoll, &t);
                }
                Listener::Unix(u, path) => {
                    let _ = epoll::delete(&self.epoll, &u);
                    let _ = std::fs::remove_file(path);
                }
            }
        }
        for c in self.conns.iter_mut().flatten() {
            if !matches!(c.phase, Phase::Transmission(_)) {
                c.fail("server shutting down");
            } else if c.in_payload() {
                // A write still arriving never reached the device: it ends
                // with the connection (the client learns nothing of it, as
                // when the connection drops).
                c.fail("server shutting down during a write's payload");
            }
        }
    }

    /// Once nothing is in flight: flush every writable export, close every
    /// connection, and report whether the server is done.
    fn finish_stop(&mut self) -> Result<bool, ServerError> {
        let busy = self
            .conns
            .iter()
            .flatten()
            .any(|c| c.inflight > 0 || (c.pending_output() > 0 && c.writable && !c.eof));
        if busy {
            if self.stop_since.is_some_and(|t| t.elapsed() > STOP_GRACE) {
                for e in &mut self.shared.exports {
                    e.engine.cancel();
                }
            }
            return Ok(false);
        }
        for e in &mut self.shared.exports {
            if e.read_only {
                continue;
            }
            let mut out = Vec::new();
            let flushed = e
                .engine
                .submit(elevator_io::DioRequest::flush(u64::MAX))
                .is_ok();
            if flushed {
                e.engine
                    .drain(&mut out)
                    .map_err(|source| ServerError::Engine {
                        export: e.name.clone(),
                        source: Box::new(source),
                    })?;
            }
        }
        for c in self.conns.iter_mut().flatten() {
            c.closing.get_or_insert_with(|| "server shut down".into());
            c.eof = true;
        }
        self.reap_closed();
        Ok(true)
    }
}

/// Whether `c` is still in the handshake (and not already closing).
fn in_handshake(c: &Conn) -> bool {
    c.closing.is_none() && !matches!(c.phase, Phase::Transmission(_))
}
