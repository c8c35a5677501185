//! Marks in a write log from outside the server: `elevator serve
//! --write-log FILE --mark-socket PATH` listens on a Unix socket, and
//! `elevator write-log mark PATH TEXT` (or any client that writes one line
//! and reads one back) puts TEXT in the log at that point, after every
//! write the device completed before it and before every write after the
//! reply. A test that fsyncs a file and then marks it knows that the mark's
//! crash states must hold the file.
//!
//! The protocol: the client sends the text and a newline (at most 4 KiB,
//! UTF-8, no other newline); the server answers `ok SEQ` (the mark's record
//! number) or `error WHY`, and a newline.
//!
//! The server takes marks from many clients at once on one thread (poll),
//! within bounds: at most [`MAX_CLIENTS`] connections (more are answered
//! `error` and closed), [`MAX_MARK`] bytes each, and [`MARK_TIMEOUT`] to
//! send the mark, so an idle or slow client holds up no one. The client
//! gives up after its own timeout (`write-log mark --timeout`).

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use elevator_io::WriteLog;
use elevator_nbd::unix_socket::{UnixSocketFile, bind_unix};
use rustix::event::{PollFd, PollFlags, Timespec};

/// The longest mark text.
const MAX_MARK: usize = 4096;

/// Connections the mark socket serves at once.
pub const MAX_CLIENTS: usize = 64;

/// How long a connection may take to send its mark.
pub const MARK_TIMEOUT: Duration = Duration::from_secs(5);

/// How often the serving thread looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);

/// A thread that takes marks on a Unix socket until dropped.
pub struct MarkListener {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// A mark socket bound, not yet taking marks: bound before the server
/// listens, so that a client that sees the server can already connect to
/// it (its connections wait until [`MarkSocket::serve`]).
pub struct MarkSocket {
    file: UnixSocketFile,
    listener: UnixListener,
}

impl MarkSocket {
    /// Bind `path`: refused if a server answers there or if it is not a
    /// socket; a stale socket left by an earlier run is replaced.
    pub fn bind(path: &Path) -> Result<MarkSocket> {
        let (listener, file) =
            bind_unix(path).with_context(|| format!("--mark-socket {}", path.display()))?;
        listener
            .set_nonblocking(true)
            .with_context(|| format!("--mark-socket {}", path.display()))?;
        Ok(MarkSocket { file, listener })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Take marks into `log` on a thread of its own, until the listener
    /// is dropped (which removes the socket, if it is still ours).
    pub fn serve(self, log: Arc<WriteLog>) -> Result<MarkListener> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("marks".into())
            .spawn(move || {
                let mut server = MarkServer {
                    listener: self.listener,
                    clients: Vec::with_capacity(MAX_CLIENTS),
                };
                while !flag.load(Ordering::Relaxed) {
                    server.turn(&log);
                }
                // The socket file goes with `self.file`, here.
                drop(self.file);
            })
            .context("starting the mark socket's thread")?;
        Ok(MarkListener {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for MarkListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One client of the mark socket, its mark on the way.
struct MarkClient {
    conn: UnixStream,
    line: Vec<u8>,
    since: Instant,
}

/// The mark socket's listener and its clients.
struct MarkServer {
    listener: UnixListener,
    clients: Vec<MarkClient>,
}

impl MarkServer {
    /// Wait (at most [`STOP_POLL`]) for something to do and do it: take
    /// new connections, read marks, answer those complete, drop those
    /// past [`MARK_TIMEOUT`].
    fn turn(&mut self, log: &WriteLog) {
        let mut ready = [false; MAX_CLIENTS + 1];
        {
            let mut fds = Vec::with_capacity(self.clients.len() + 1);
            fds.push(PollFd::new(&self.listener, PollFlags::IN));
            for c in &self.clients {
                fds.push(PollFd::new(&c.conn, PollFlags::IN));
            }
            let wait = Timespec::try_from(STOP_POLL).unwrap_or_default();
            match rustix::event::poll(&mut fds, Some(&wait)) {
                Ok(_) => {
                    for (r, fd) in ready.iter_mut().zip(&fds) {
                        *r = !fd.revents().is_empty();
                    }
                }
                Err(rustix::io::Errno::INTR) => return,
                Err(e) => {
                    log_line!("elevator serve: mark socket: poll: {e}");
                    std::thread::sleep(STOP_POLL);
                    return;
                }
            }
        }
        // Clients first (their indices are those polled), then new ones.
        let mut i = self.clients.len();
        while i > 0 {
            i -= 1;
            let mut answer = if ready[i + 1] {
                self.clients[i].read(log)
            } else {
                None
            };
            // A client that sends a byte now and then is bound too.
            if answer.is_none() && self.clients[i].since.elapsed() >= MARK_TIMEOUT {
                answer = Some(format!(
                    "error no mark (one line) within {} s",
                    MARK_TIMEOUT.as_secs()
                ));
            }
            if let Some(answer) = answer {
                let c = self.clients.swap_remove(i);
                answer_and_close(c.conn, &answer);
            }
        }
        if ready[0] {
            self.accept();
        }
    }

    /// Take every connection waiting; past [`MAX_CLIENTS`], answer
    /// `error` and close.
    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((conn, _)) => {
                    if self.clients.len() >= MAX_CLIENTS {
                        answer_and_close(
                            conn,
                            &format!(
                                "error the mark socket serves {MAX_CLIENTS} clients at once: try again"
                            ),
                        );
                    } else if conn.set_nonblocking(true).is_ok() {
                        self.clients.push(MarkClient {
                            conn,
                            line: Vec::with_capacity(256),
                            since: Instant::now(),
                        });
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    // Out of descriptors, say: wait rather than spin.
                    log_line!("elevator serve: mark socket: {e}");
                    std::thread::sleep(STOP_POLL);
                    return;
                }
            }
        }
    }
}

impl MarkClient {
    /// Read what has come; the answer once the mark is whole (its
    /// newline) or cannot be. A stream that ends before the newline is a
    /// client that gave up mid-mark: nothing is recorded.
    fn read(&mut self, log: &WriteLog) -> Option<String> {
        let mut buf = [0u8; 1024];
        loop {
            let room = (MAX_MARK + 1 - self.line.len()).min(buf.len());
            match self.conn.read(&mut buf[..room]) {
                Ok(0) => return Some("error the mark ended before its newline".into()),
                Ok(n) => {
                    if let Some(end) = buf[..n].iter().position(|&b| b == b'\n') {
                        self.line.extend_from_slice(&buf[..end]);
                        return Some(take_mark(&self.line, log));
                    }
                    self.line.extend_from_slice(&buf[..n]);
                    if self.line.len() > MAX_MARK {
                        return Some(format!("error a mark is at most {MAX_MARK} bytes"));
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Some(format!("error reading the mark: {e}")),
            }
        }
    }
}

/// Put the mark `line` (without its newline) in `log`; the answer.
fn take_mark(line: &[u8], log: &WriteLog) -> String {
    match std::str::from_utf8(line) {
        _ if line.len() > MAX_MARK => format!("error a mark is at most {MAX_MARK} bytes"),
        _ if line.is_empty() => "error an empty mark".to_string(),
        Err(_) => "error a mark must be UTF-8 text".to_string(),
        Ok(text) => match log.mark(text) {
            Ok(seq) => format!("ok {seq}"),
            Err(e) => format!("error the write log: {e}"),
        },
    }
}

/// Send `answer` and a newline, without waiting (a short line fits a new
/// socket's buffer; a client that is gone misses it), and close. What the
/// client sent that was not read (the rest of a mark too long) is read
/// first, up to [`DISCARDED`] bytes: closing a Unix socket with unread
/// data resets the connection, and the client could lose the answer.
fn answer_and_close(mut conn: UnixStream, answer: &str) {
    let _ = conn.set_nonblocking(true);
    let _ = conn.write_all(format!("{answer}\n").as_bytes());
    let mut buf = [0u8; 1024];
    let mut discarded = 0;
    while discarded < DISCARDED {
        match conn.read(&mut buf) {
            Ok(n) if n > 0 => discarded += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            _ => break,
        }
    }
}

/// The most unread input [`answer_and_close`] reads before closing.
const DISCARDED: usize = 64 << 10;

/// Put `text` in the log of the server listening on `socket`, waiting at
/// most `timeout` for the whole exchange; returns the mark's record
/// number.
pub fn send(socket: &Path, text: &str, timeout: Duration) -> Result<u64> {
    if text.is_empty() || text.contains('\n') || text.len() > MAX_MARK {
        bail!("a mark is one line of 1 to {MAX_MARK} bytes");
    }
    let deadline = Instant::now() + timeout;
    let timed_out = || {
        anyhow::anyhow!(
            "no answer from {} within {} s (--timeout): is the server stuck?",
            socket.display(),
            timeout.as_secs_f64()
        )
    };
    let mut conn = connect_by(socket, deadline)?.ok_or_else(timed_out)?;
    let left = |deadline: Instant| {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    };
    conn.set_write_timeout(Some(left(deadline).ok_or_else(timed_out)?))?;
    match conn.write_all(format!("{text}\n").as_bytes()) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            return Err(timed_out());
        }
        r => r.with_context(|| format!("sending the mark to {}", socket.display()))?,
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 256];
    while !answer.contains(&b'\n') && answer.len() < 4096 {
        conn.set_read_timeout(Some(left(deadline).ok_or_else(timed_out)?))?;
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(timed_out());
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("reading the answer from {}", socket.display()));
            }
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    let answer = answer.lines().next().unwrap_or("").trim();
    if let Some(seq) = answer.strip_prefix("ok ") {
        return seq
            .parse()
            .with_context(|| format!("the server answered '{answer}'"));
    }
    match answer.strip_prefix("error ") {
        Some(why) => bail!("the server refused the mark: {why}"),
        None if answer.is_empty() => bail!(
            "{} closed the connection without an answer",
            socket.display()
        ),
        None => bail!("the server answered '{answer}', not ok or error"),
    }
}

/// Connect to `socket` before `deadline` (`None` past it): a server whose
/// backlog is full makes a Unix connect wait, so it is tried without
/// waiting, again every few milliseconds.
fn connect_by(socket: &Path, deadline: Instant) -> Result<Option<UnixStream>> {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
    let addr = SocketAddrUnix::new(socket)
        .with_context(|| format!("{}: not a usable socket path", socket.display()))?;
    loop {
        let fd = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )
        .context("creating a socket")?;
        match rustix::net::connect(&fd, &addr) {
            Ok(()) => {
                let conn = UnixStream::from(fd);
                conn.set_nonblocking(false)?;
                return Ok(Some(conn));
            }
            Err(rustix::io::Errno::AGAIN) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(rustix::io::Errno::AGAIN) => return Ok(None),
            Err(e) => {
                return Err(std::io::Error::from(e)).with_context(|| {
                    format!(
                        "connecting to {} (is `elevator serve --mark-socket` running?)",
                        socket.display()
                    )
                });
            }
        }
    }
}
