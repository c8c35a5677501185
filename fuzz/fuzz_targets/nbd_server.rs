//! The NBD server itself, handshake and transmission, on arbitrary client
//! bytes: a real `elevator_nbd::Server` (one worker, a 1 MiB memory export
//! and a 64 KiB one that fails some I/O) listens on a Unix socket in this
//! process; each input is one connection that sends the input and closes
//! its side. The server must answer and close the connection within a few
//! seconds (no hang), never panic, and keep serving: every input starts
//! with a fresh connection to the same server. What it sends starts with
//! the greeting (a client that breaks the protocol before the greeting is
//! out may be closed without it).
//!
//! The first byte splits the input into the pieces the client sends
//! (several `write`s, so that messages arrive cut at odd places).
//!
//! Run: `cargo +nightly fuzz run nbd_server` (from the repository root).

#![no_main]

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use elevator_nbd::{ExportSpec, Server, ServerConfig};
use libfuzzer_sys::fuzz_target;

/// The server's last log line (one per connection), for a failure's
/// message.
static LAST: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

/// Where the server listens.
fn socket() -> &'static PathBuf {
    static SOCKET: OnceLock<PathBuf> = OnceLock::new();
    SOCKET.get_or_init(|| {
        let path =
            std::env::temp_dir().join(format!("elevator-fuzz-nbd-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let cfg = ServerConfig {
            exports: vec![
                ExportSpec::parse("mem:1m,scheduler=mq-deadline").expect("export"),
                ExportSpec::parse("bad=mem:64k,fail_sectors=8-16,scheduler=none").expect("export"),
            ],
            unix: vec![path.clone()],
            threads: 1,
            max_request: 1 << 20,
            handshake_timeout: Duration::from_secs(2),
            idle_timeout: Some(Duration::from_secs(2)),
            poll_spin: Duration::ZERO,
            ..ServerConfig::default()
        };
        let log = Box::new(|line: &str| {
            if let Ok(mut last) = LAST.lock() {
                *last = line.to_string();
            }
        });
        let mut server = Server::bind(cfg, log).expect("bind");
        let (stop_rx, stop_tx) = UnixStream::pair().expect("pair");
        std::thread::spawn(move || {
            let _keep = stop_tx;
            server.run(stop_rx.as_fd()).expect("the server stopped");
            panic!("the server stopped");
        });
        path
    })
}

fuzz_target!(|data: &[u8]| {
    let path = socket();
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let mut conn = UnixStream::connect(path).expect("the server is gone");
    conn.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut reader = conn.try_clone().expect("clone");
    // Read replies on another thread while sending, so that a server
    // blocked on a full socket is not taken for a hang.
    let drain = std::thread::spawn(move || {
        let start = Instant::now();
        let mut buf = [0u8; 64 << 10];
        let mut total = 0usize;
        let mut first = Vec::new();
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return (total, first),
                Ok(n) => {
                    if first.len() < 8 {
                        first.extend_from_slice(&buf[..n.min(8 - first.len())]);
                    }
                    total += n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // Closed with our bytes unread: a close, as far as we are
                // concerned.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    return (total, first);
                }
                Err(e) => panic!(
                    "the server neither answered nor closed within {:?}: {e}",
                    start.elapsed()
                ),
            }
        }
    });
    let piece = usize::from(split).max(1) * 4;
    for chunk in rest.chunks(piece) {
        if conn.write_all(chunk).is_err() {
            break; // the server closed first: that is its right
        }
    }
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let (got, first) = drain.join().expect("reader");
    // The greeting comes first, whatever the client sends (a client that
    // breaks the protocol before reading it may be closed without it).
    if got > 0 && !first.starts_with(&elevator_nbd::proto::NBDMAGIC.to_be_bytes()[..first.len()]) {
        let last = LAST.lock().map(|l| l.clone()).unwrap_or_default();
        panic!("{got} bytes that do not start with the greeting; the server's last word: {last}");
    }
});
