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

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use elevator_io::WriteLog;

/// The longest mark text.
const MAX_MARK: usize = 4096;

/// A thread that takes marks on a Unix socket until dropped.
pub struct MarkListener {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// A mark socket bound, not yet taking marks: bound before the server
/// listens, so that a client that sees the server can already connect to
/// it (its connections wait until [`MarkSocket::serve`]).
pub struct MarkSocket {
    path: PathBuf,
    listener: UnixListener,
}

impl MarkSocket {
    /// Bind `path` (a socket left there by an earlier run is replaced).
    pub fn bind(path: &Path) -> Result<MarkSocket> {
        if std::fs::symlink_metadata(path).is_ok_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            m.file_type().is_socket()
        }) {
            let _ = std::fs::remove_file(path);
        }
        let listener = UnixListener::bind(path)
            .with_context(|| format!("--mark-socket {}", path.display()))?;
        listener
            .set_nonblocking(true)
            .with_context(|| format!("--mark-socket {}", path.display()))?;
        Ok(MarkSocket {
            path: path.to_path_buf(),
            listener,
        })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Take marks into `log` on a thread of its own, until the listener
    /// is dropped.
    pub fn serve(self, log: Arc<WriteLog>) -> Result<MarkListener> {
        let MarkSocket { path, listener } = self;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("marks".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((conn, _)) => serve_one(conn, &log),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(e) => {
                            eprintln!("elevator serve: mark socket: {e}");
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                }
            })
            .context("starting the mark socket's thread")?;
        Ok(MarkListener {
            path,
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
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Take one mark from `conn` and answer.
fn serve_one(conn: UnixStream, log: &WriteLog) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut line = Vec::new();
    let reader = BufReader::new(&conn);
    let answer = match reader
        .take(MAX_MARK as u64 + 1)
        .read_until(b'\n', &mut line)
    {
        Err(e) => format!("error reading the mark: {e}"),
        Ok(_) => {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            match std::str::from_utf8(&line) {
                _ if line.len() > MAX_MARK => format!("error a mark is at most {MAX_MARK} bytes"),
                _ if line.is_empty() => "error an empty mark".to_string(),
                Err(_) => "error a mark must be UTF-8 text".to_string(),
                Ok(text) => match log.mark(text) {
                    Ok(seq) => format!("ok {seq}"),
                    Err(e) => format!("error the write log: {e}"),
                },
            }
        }
    };
    let _ = (&conn).write_all(format!("{answer}\n").as_bytes());
}

/// Put `text` in the log of the server listening on `socket`; returns the
/// mark's record number.
pub fn send(socket: &Path, text: &str) -> Result<u64> {
    if text.is_empty() || text.contains('\n') || text.len() > MAX_MARK {
        bail!("a mark is one line of 1 to {MAX_MARK} bytes");
    }
    let mut conn = UnixStream::connect(socket).with_context(|| {
        format!(
            "connecting to {} (is `elevator serve --mark-socket` running?)",
            socket.display()
        )
    })?;
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    conn.write_all(format!("{text}\n").as_bytes())
        .with_context(|| format!("sending the mark to {}", socket.display()))?;
    let mut answer = String::new();
    BufReader::new(&conn)
        .take(4096)
        .read_line(&mut answer)
        .with_context(|| format!("reading the answer from {}", socket.display()))?;
    let answer = answer.trim();
    if let Some(seq) = answer.strip_prefix("ok ") {
        return seq
            .parse()
            .with_context(|| format!("the server answered '{answer}'"));
    }
    match answer.strip_prefix("error ") {
        Some(why) => bail!("the server refused the mark: {why}"),
        None => bail!("the server answered '{answer}', not ok or error"),
    }
}

/// One line on what a write log holds, for the end of a run or a server.
pub fn counts_line(path: &Path, c: &elevator_io::WriteLogCounts) -> String {
    format!(
        "write log {}: {} writes, {} discards, {} write-zeroes, {} flushes, {} marks, {} bytes",
        path.display(),
        c.writes,
        c.discards,
        c.write_zeroes,
        c.flushes,
        c.marks,
        c.bytes
    )
}
