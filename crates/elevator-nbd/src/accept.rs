//! Taking connections in (worker 0's): accepting them, and the bounds on
//! connections still in the handshake, so that sockets that connect and
//! say nothing cannot lock every other client out.
//!
//! Each connection in the handshake is closed once it has been there for
//! [`ServerConfig::handshake_timeout`](crate::ServerConfig::handshake_timeout)
//! (the worker's loop wakes for that: no extra thread). Together they may
//! hold at most
//! [`ServerConfig::handshake_slots`](crate::ServerConfig::handshake_slots)
//! of the slots, the rest being kept for clients past the handshake: a
//! connection that arrives when they hold that many (or when every slot, on
//! every worker, is taken) makes the connection that has been silent
//! longest (not even its flags sent) give way, so that a new client gets in
//! even while a flood of silent sockets holds the slots. It is refused,
//! with the reason logged, only when no connection is silent, or the
//! server is shutting down. Every handshake runs on worker 0, so it alone
//! decides whom to close.

use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rustix::event::epoll;

use elevator_core::IoContext;

use crate::conn::{Conn, Phase, Stream};
use crate::server::{Listener, ServerError};
use crate::worker::{LISTENER, Worker, in_handshake, token};

/// Socket send buffer asked for.
const SNDBUF: usize = 4 << 20;

/// How long the listeners rest after accept ran out of file descriptors
/// or memory.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Whether accept failed for want of descriptors or kernel memory: it
/// will fail again until something is freed.
fn out_of_resources(e: &io::Error) -> bool {
    use rustix::io::Errno;
    e.raw_os_error().is_some_and(|n| {
        [Errno::MFILE, Errno::NFILE, Errno::NOBUFS, Errno::NOMEM]
            .iter()
            .any(|x| x.raw_os_error() == n)
    })
}

impl Worker {
    /// Accept what listener `i` has waiting.
    pub(crate) fn accept(&mut self, i: usize) -> Result<(), ServerError> {
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
                Err(e) if out_of_resources(&e) => {
                    self.pause_accepting(&e);
                    return Ok(());
                }
                Err(e) => {
                    self.hub.log(&format!("accept failed: {e}"));
                    return Ok(());
                }
            };
            if self.shared.stopping {
                self.hub.log(&format!("{peer}: refused: shutting down"));
                continue;
            }
            if let Err(why) = self.make_room() {
                self.hub.log(&format!("{peer}: refused: {why}"));
                continue;
            }
            let nb = match &stream {
                Stream::Tcp(s) => s.set_nonblocking(true),
                Stream::Unix(s) => s.set_nonblocking(true),
            };
            if let Err(e) = nb {
                self.hub.log(&format!("{peer}: {e}"));
                continue;
            }
            // Room for many replies per write (read replies are big); the
            // kernel caps it at net.core.wmem_max.
            let _ = rustix::net::sockopt::set_socket_send_buffer_size(stream.fd(), SNDBUF);
            let ctx = IoContext(self.next_ctx);
            self.next_ctx = self.next_ctx.wrapping_add(1).max(1);
            let conn = Conn::new(stream, peer, 0, ctx, self.hub.budget.clone());
            self.hub.live.fetch_add(1, Ordering::Relaxed);
            self.insert(conn)?;
        }
    }

    /// Stop watching the listeners for [`ACCEPT_PAUSE`]: accept ran out of
    /// file descriptors or memory, and the connection it could not take
    /// stays in the kernel's backlog, so a listener watched for it would
    /// wake the loop at once, again and again. Logged at most once a
    /// second, with the count of failures since the last line.
    fn pause_accepting(&mut self, e: &io::Error) {
        for (i, l) in self.listeners.iter().enumerate() {
            let tok = epoll::EventData::new_u64(token(LISTENER, 0, i as u32));
            let _ = epoll::modify(&self.epoll, l.fd(), tok, epoll::EventFlags::empty());
        }
        let now = Instant::now();
        self.accept_paused = Some(now + ACCEPT_PAUSE);
        let (logged, failures) = &mut self.accept_failures;
        *failures += 1;
        if logged.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1)) {
            self.hub.log(&format!(
                "accept failed: {e} ({failures} time{} since the last such line); not accepting \
                 for {} ms: waiting connections stay in the backlog (raise the open-file limit, \
                 ulimit -n, or lower --max-connections)",
                if *failures == 1 { "" } else { "s" },
                ACCEPT_PAUSE.as_millis()
            ));
            *logged = Some(now);
            *failures = 0;
        }
    }

    /// Watch the listeners again once a pause has run its course.
    pub(crate) fn resume_accepting(&mut self) {
        if self
            .accept_paused
            .is_none_or(|until| Instant::now() < until)
        {
            return;
        }
        self.accept_paused = None;
        for (i, l) in self.listeners.iter().enumerate() {
            let tok = epoll::EventData::new_u64(token(LISTENER, 0, i as u32));
            let _ = epoll::modify(&self.epoll, l.fd(), tok, epoll::EventFlags::IN);
        }
    }

    /// Make room for one more connection. While connections in the
    /// handshake hold all the slots they may, or every slot is taken, the
    /// connection that has been silent longest (in the handshake and not
    /// even its flags sent) is closed to make room. `Err` says why there is
    /// no room: no connection is silent.
    fn make_room(&mut self) -> Result<(), String> {
        let cfg = &self.shared.cfg;
        let (max, cap) = (cfg.max_connections, cfg.handshake_slots());
        let live = self.hub.live.load(Ordering::Relaxed);
        if live < cap {
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
            let quiet = c.phase == Phase::ClientFlags && !c.socket.readable;
            if quiet && silent.is_none_or(|(_, t)| c.started < t) {
                silent = Some((i, c.started));
            }
        }
        let full = live >= max;
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
}
