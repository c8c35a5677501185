//! Helpers shared by the integration tests: a server on its own thread,
//! temporary directories, external commands run with a deadline, random
//! images compared without loading them whole, a raw NBD client speaking
//! bytes, and accessors for the tools' `--json` output.
//!
//! Nothing here sleeps for correctness: waits poll with generous deadlines.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use elevator_nbd::proto::{self, Request, cmd, info, opt, rep};
use elevator_nbd::{ExportSpec, Server, ServerConfig};
use elevator_testkit::TestRng;

/// How long anything may take before the test gives up on it (the machine
/// is shared and slow; this only bounds a hang).
pub const DEADLINE: Duration = Duration::from_secs(120);

/// The error chain of `e`, on one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Poll `f` until it gives a value, or panic after [`DEADLINE`] saying what
/// was awaited.
pub fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    elevator_testkit::wait_for(what, DEADLINE, f)
}

// ---------------------------------------------------------------------------
// Temporary directories.

pub use tempfile::TempDir;

/// A fresh directory under `/tmp` (short paths: Unix socket names must fit
/// in 108 bytes), removed with its contents when dropped.
pub fn temp_dir(tag: &str) -> TempDir {
    temp_dir_in(Path::new("/tmp"), tag)
}

/// A fresh directory under `base`, removed with its contents when dropped.
pub fn temp_dir_in(base: &Path, tag: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("elevator-{tag}-"))
        .tempdir_in(base)
        .unwrap_or_else(|e| panic!("creating a directory in {}: {e}", base.display()))
}

// ---------------------------------------------------------------------------
// The server on a thread.

/// An in-process server: bound and run on its own thread (a `Server` is not
/// `Send`, so it is built there), listening on a Unix socket in its own
/// temporary directory, and on TCP if asked.
pub struct TestServer {
    /// The Unix socket.
    pub sock: PathBuf,
    /// The TCP addresses bound (empty unless asked for).
    pub tcp: Vec<SocketAddr>,
    log: Arc<Mutex<Vec<String>>>,
    stop: Option<UnixStream>,
    thread: Option<JoinHandle<Result<(), String>>>,
    _dir: TempDir,
}

impl TestServer {
    /// Serve `exports` (`--export` syntax) on a Unix socket with the default
    /// limits.
    pub fn start(exports: &[&str]) -> TestServer {
        TestServer::start_with(exports, |_| {})
    }

    /// Serve `exports`, with `tweak` applied to the configuration (to add a
    /// TCP listener or change a limit).
    pub fn start_with(exports: &[&str], tweak: impl FnOnce(&mut ServerConfig)) -> TestServer {
        let dir = temp_dir("nbd");
        let sock = dir.path().join("nbd.sock");
        let mut cfg = ServerConfig {
            exports: exports
                .iter()
                .map(|e| ExportSpec::parse(e).unwrap_or_else(|err| panic!("{e}: {}", chain(&err))))
                .collect(),
            unix: vec![sock.clone()],
            ..ServerConfig::default()
        };
        tweak(&mut cfg);
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        let (stop_rx, stop_tx) = UnixStream::pair().expect("socket pair");
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("nbd-server".into())
            .spawn(move || {
                let log = Box::new(move |line: &str| {
                    sink.lock().expect("log lock").push(line.to_string())
                });
                let mut server = match Server::bind(cfg, log) {
                    Ok(s) => s,
                    Err(e) => {
                        let msg = chain(&e);
                        let _ = ready_tx.send(Err(msg.clone()));
                        return Err(msg);
                    }
                };
                let _ = ready_tx.send(Ok(server.tcp_addrs()));
                server.run(stop_rx.as_fd()).map_err(|e| chain(&e))
            })
            .expect("spawning the server thread");
        let tcp = match ready_rx.recv_timeout(DEADLINE) {
            Ok(Ok(tcp)) => tcp,
            Ok(Err(e)) => panic!("the server did not start: {e}"),
            Err(e) => panic!("the server thread did not report: {e}"),
        };
        TestServer {
            sock,
            tcp,
            log,
            stop: Some(stop_tx),
            thread: Some(thread),
            _dir: dir,
        }
    }

    /// The `nbd+unix` URI of `export`.
    pub fn uri(&self, export: &str) -> String {
        format!("nbd+unix:///{export}?socket={}", self.sock.display())
    }

    /// The lines logged so far (one per connection that ended).
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().expect("log lock").clone()
    }

    /// Wait until `n` connection lines have been logged; return them all.
    pub fn wait_log_count(&self, n: usize) -> Vec<String> {
        wait_for(&format!("{n} connection lines in the server log"), || {
            let lines = self.log_lines();
            (lines.len() >= n).then_some(lines)
        })
    }

    /// Wait until a logged line contains `needle`; return it.
    pub fn wait_log(&self, needle: &str) -> String {
        wait_for(&format!("a server log line containing {needle:?}"), || {
            self.log_lines().into_iter().find(|l| l.contains(needle))
        })
    }

    /// Whether the server thread is still running.
    pub fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Ask the server to stop (as a signal does), without waiting.
    pub fn request_stop(&mut self) {
        if let Some(tx) = self.stop.as_mut() {
            tx.write_all(b"x").expect("writing to the stop socket");
        }
    }

    /// Stop the server and check that `run` returned `Ok`.
    pub fn stop(mut self) {
        if let Err(e) = self.shut_down() {
            panic!("the server failed: {e}");
        }
    }

    fn shut_down(&mut self) -> Result<(), String> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        if let Some(mut tx) = self.stop.take() {
            // The server may already have ended (and closed its end).
            let _ = tx.write_all(b"x");
        }
        // `run` waits for requests in flight; bound the wait anyway.
        let start = Instant::now();
        while !thread.is_finished() {
            if start.elapsed() > DEADLINE {
                return Err(format!("the server did not stop within {DEADLINE:?}"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        match thread.join() {
            Ok(r) => r,
            Err(_) => Err("the server thread panicked".into()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let r = self.shut_down();
        if !std::thread::panicking()
            && let Err(e) = r
        {
            panic!("the server failed: {e}");
        }
    }
}

// ---------------------------------------------------------------------------
// External commands.

pub use elevator_testkit::{skip, spawn};

pub mod ext4;

/// Whether `program` can be run (it is installed).
pub fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Fail the test, naming its package, unless `program` is installed
/// (for a tool that a test runs only in its clean-up).
pub fn require(program: &str) {
    spawn(
        Command::new(program)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .wait()
    .unwrap_or_else(|e| panic!("waiting for {program} --version: {e}"));
}

/// Run `cmd` to completion (killed and the test failed after [`DEADLINE`]).
/// A program that is not installed fails the test, naming its package.
pub fn run(cmd: &mut Command) -> Output {
    elevator_testkit::run_with_deadline(cmd, DEADLINE)
}

/// Run `cmd`, check it succeeded, and return its stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let what = format!("{cmd:?}");
    elevator_testkit::stdout_ok(&what, &run(cmd))
}

/// Run fio (`--output-format=json`), check it succeeded, and return its
/// report (what fio prints before the JSON, such as its nbd engine's
/// "connected" lines, is skipped).
pub fn run_fio(cmd: &mut Command) -> Json {
    let stdout = run_ok(cmd);
    let json = &stdout[stdout
        .find('{')
        .unwrap_or_else(|| panic!("no JSON from fio:\n{stdout}"))..];
    serde_json::from_str::<Json>(json).unwrap_or_else(|e| panic!("fio JSON: {e}:\n{json}"))
}

// ---------------------------------------------------------------------------
// Data.

/// `len` pseudo-random bytes from `seed` (deterministic).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    TestRng::new(seed).fill(&mut v);
    v
}

/// Write a file of `size` bytes (a multiple of 1 MiB) of random data, with
/// every eighth mebibyte zero (so clients that look for zeroes send
/// `WRITE_ZEROES` or `TRIM`), and its last mebibyte zero too.
pub fn write_image(path: &Path, size: u64, seed: u64) {
    const MIB: usize = 1 << 20;
    assert_eq!(size % MIB as u64, 0);
    let mut w = BufWriter::new(File::create(path).expect("creating the image"));
    let mut chunk = vec![0u8; MIB];
    let mut rng = TestRng::new(seed);
    let count = size / MIB as u64;
    for i in 0..count {
        if i % 8 == 3 || i + 1 == count {
            chunk.fill(0);
        } else {
            rng.fill(&mut chunk);
        }
        w.write_all(&chunk).expect("writing the image");
    }
    w.flush().expect("writing the image");
}

/// Check that two files have the same bytes, reading both a piece at a time.
pub fn assert_same_file(a: &Path, b: &Path) {
    let len_a = std::fs::metadata(a).expect("stat").len();
    let len_b = std::fs::metadata(b).expect("stat").len();
    assert_eq!(
        len_a,
        len_b,
        "{} and {} differ in size",
        a.display(),
        b.display()
    );
    let mut ra = BufReader::new(File::open(a).expect("open"));
    let mut rb = BufReader::new(File::open(b).expect("open"));
    let mut ba = vec![0u8; 1 << 20];
    let mut bb = vec![0u8; 1 << 20];
    let mut offset = 0u64;
    while offset < len_a {
        let n = (len_a - offset).min(ba.len() as u64) as usize;
        ra.read_exact(&mut ba[..n]).expect("read");
        rb.read_exact(&mut bb[..n]).expect("read");
        if ba[..n] != bb[..n] {
            let i = ba[..n]
                .iter()
                .zip(&bb[..n])
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            panic!(
                "{} and {} differ at byte {}",
                a.display(),
                b.display(),
                offset + i as u64
            );
        }
        offset += n as u64;
    }
}

// ---------------------------------------------------------------------------
// A raw client.

/// An option reply.
#[derive(Debug)]
pub struct OptReply {
    /// The option it answers.
    pub option: u32,
    /// Its type (`rep::*`).
    pub kind: u32,
    /// Its data.
    pub data: Vec<u8>,
}

/// A structured reply chunk.
#[derive(Debug)]
pub struct Chunk {
    /// Flags (`chunk::DONE`).
    pub flags: u16,
    /// Type (`chunk::*`).
    pub kind: u16,
    /// The cookie.
    pub cookie: u64,
    /// The payload.
    pub payload: Vec<u8>,
}

/// What a transmission reply (simple or structured) said.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// A simple reply: error, and a read's data when it succeeded.
    Simple {
        /// The cookie.
        cookie: u64,
        /// The error (0 for success).
        error: u32,
        /// A successful read's data.
        data: Option<Vec<u8>>,
    },
    /// A structured chunk.
    Chunk {
        /// The cookie.
        cookie: u64,
        /// Flags.
        flags: u16,
        /// Type.
        kind: u16,
        /// Payload.
        payload: Vec<u8>,
    },
}

impl Reply {
    /// The cookie it answers.
    pub fn cookie(&self) -> u64 {
        match self {
            Reply::Simple { cookie, .. } | Reply::Chunk { cookie, .. } => *cookie,
        }
    }
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().expect("8 bytes"))
}

/// The data of `INFO`/`GO` for `name`, asking for `requests`.
pub fn info_data(name: &str, requests: &[u16]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(requests.len() as u16).to_be_bytes());
    for r in requests {
        d.extend_from_slice(&r.to_be_bytes());
    }
    d
}

/// What `GO` (or `INFO`) told about an export.
#[derive(Debug, Default)]
pub struct ExportInfo {
    /// Size in bytes.
    pub size: u64,
    /// Transmission flags.
    pub flags: u16,
    /// Block sizes (min, preferred, max), if sent.
    pub block: Option<(u32, u32, u32)>,
    /// The name, if sent.
    pub name: Option<String>,
    /// The description, if sent.
    pub description: Option<String>,
}

/// A client speaking raw NBD over a Unix socket.
pub struct Client {
    /// The socket.
    pub s: UnixStream,
    /// Whether structured replies were negotiated (reads are answered with
    /// chunks).
    pub structured: bool,
}

impl Client {
    /// Connect (nothing read or sent yet).
    pub fn connect(path: &Path) -> Client {
        let s = UnixStream::connect(path)
            .unwrap_or_else(|e| panic!("connecting to {}: {e}", path.display()));
        s.set_read_timeout(Some(DEADLINE)).expect("timeout");
        s.set_write_timeout(Some(DEADLINE)).expect("timeout");
        Client {
            s,
            structured: false,
        }
    }

    /// Give up on a reply after `t` instead of [`DEADLINE`].
    pub fn with_read_timeout(self, t: Duration) -> Client {
        self.s.set_read_timeout(Some(t)).expect("timeout");
        self
    }

    /// Connect, read the greeting, send fixed newstyle with no zeroes.
    pub fn start(path: &Path) -> Client {
        let mut c = Client::connect(path);
        let flags = c.greeting();
        assert_eq!(
            flags,
            proto::FLAG_FIXED_NEWSTYLE | proto::FLAG_NO_ZEROES,
            "handshake flags"
        );
        c.send(&(proto::CLIENT_FIXED_NEWSTYLE | proto::CLIENT_NO_ZEROES).to_be_bytes());
        c
    }

    /// Connect and `GO` to `export`.
    pub fn open(path: &Path, export: &str) -> Client {
        let mut c = Client::start(path);
        c.go(export);
        c
    }

    /// Connect, negotiate structured replies, and `GO` to `export`.
    pub fn open_structured(path: &Path, export: &str) -> Client {
        let mut c = Client::start(path);
        let r = c.opt(opt::STRUCTURED_REPLY, &[]);
        assert_eq!(
            (r.option, r.kind, r.data.len()),
            (opt::STRUCTURED_REPLY, rep::ACK, 0)
        );
        c.structured = true;
        c.go(export);
        c
    }

    /// Read the server's greeting, check its magics, return its flags.
    pub fn greeting(&mut self) -> u16 {
        let g = self.read_vec(proto::GREETING_LEN);
        assert_eq!(be64(&g), proto::NBDMAGIC, "greeting magic");
        assert_eq!(be64(&g[8..]), proto::IHAVEOPT, "greeting IHAVEOPT");
        be16(&g[16..])
    }

    /// Send bytes.
    pub fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("sending to the server");
    }

    /// Send bytes; the server may already have closed the connection.
    pub fn send_lenient(&mut self, bytes: &[u8]) {
        let _ = self.s.write_all(bytes);
    }

    /// Read exactly `n` bytes.
    pub fn read_vec(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        self.s
            .read_exact(&mut v)
            .unwrap_or_else(|e| panic!("reading {n} bytes from the server: {e}"));
        v
    }

    /// An option header and its data.
    pub fn option_bytes(option: u32, data: &[u8]) -> Vec<u8> {
        let mut b = proto::IHAVEOPT.to_be_bytes().to_vec();
        b.extend_from_slice(&option.to_be_bytes());
        b.extend_from_slice(&(data.len() as u32).to_be_bytes());
        b.extend_from_slice(data);
        b
    }

    /// Send an option.
    pub fn send_option(&mut self, option: u32, data: &[u8]) {
        self.send(&Client::option_bytes(option, data));
    }

    /// Read one option reply.
    pub fn read_opt_reply(&mut self) -> OptReply {
        let h = self.read_vec(20);
        assert_eq!(
            be64(&h),
            proto::OPTION_REPLY_MAGIC,
            "option reply magic in {h:02x?}"
        );
        let len = be32(&h[16..]) as usize;
        assert!(len <= 1 << 20, "option reply of {len} bytes");
        OptReply {
            option: be32(&h[8..]),
            kind: be32(&h[12..]),
            data: self.read_vec(len),
        }
    }

    /// Send an option and read its (first) reply.
    pub fn opt(&mut self, option: u32, data: &[u8]) -> OptReply {
        self.send_option(option, data);
        self.read_opt_reply()
    }

    /// Send `INFO` or `GO` and read every reply up to the final one; return
    /// what the `INFO` replies said, or the final error reply.
    pub fn info(
        &mut self,
        option: u32,
        name: &str,
        requests: &[u16],
    ) -> Result<ExportInfo, OptReply> {
        self.send_option(option, &info_data(name, requests));
        let mut out = ExportInfo::default();
        let mut saw_export = false;
        loop {
            let r = self.read_opt_reply();
            assert_eq!(r.option, option, "reply to the wrong option: {r:?}");
            match r.kind {
                rep::INFO => {
                    assert!(r.data.len() >= 2, "short INFO reply {r:?}");
                    match be16(&r.data) {
                        info::EXPORT => {
                            assert_eq!(r.data.len(), 12, "INFO_EXPORT length");
                            out.size = be64(&r.data[2..]);
                            out.flags = be16(&r.data[10..]);
                            saw_export = true;
                        }
                        info::BLOCK_SIZE => {
                            assert_eq!(r.data.len(), 14, "INFO_BLOCK_SIZE length");
                            out.block =
                                Some((be32(&r.data[2..]), be32(&r.data[6..]), be32(&r.data[10..])));
                        }
                        info::NAME => {
                            out.name = Some(String::from_utf8(r.data[2..].to_vec()).expect("UTF-8"))
                        }
                        info::DESCRIPTION => {
                            out.description =
                                Some(String::from_utf8(r.data[2..].to_vec()).expect("UTF-8"))
                        }
                        other => panic!("unknown information type {other}"),
                    }
                }
                rep::ACK => {
                    assert!(r.data.is_empty(), "ACK with data");
                    assert!(saw_export, "ACK without INFO_EXPORT");
                    return Ok(out);
                }
                k if k & 0x8000_0000 != 0 => return Err(r),
                k => panic!("unexpected reply type {k:#x} to INFO/GO"),
            }
        }
    }

    /// `GO` to `export`, asking for block sizes; panic if refused.
    pub fn go(&mut self, export: &str) -> ExportInfo {
        self.info(opt::GO, export, &[info::BLOCK_SIZE])
            .unwrap_or_else(|r| {
                panic!(
                    "GO {export:?} refused: {r:?} ({})",
                    String::from_utf8_lossy(&r.data)
                )
            })
    }

    /// Send a request header.
    pub fn request(&mut self, flags: u16, kind: u16, cookie: u64, offset: u64, len: u32) {
        let r = Request {
            flags,
            kind,
            cookie,
            offset,
            len,
        };
        self.send(&proto::encode_request(&r));
    }

    /// Read one reply (simple, or one structured chunk). `read_len` says,
    /// for a simple reply, how many data bytes follow a successful one
    /// (zero for anything but a read).
    pub fn read_reply(&mut self, read_len: impl Fn(u64) -> usize) -> Reply {
        let m = self.read_vec(4);
        match be32(&m) {
            proto::SIMPLE_REPLY_MAGIC => {
                let rest = self.read_vec(12);
                let error = be32(&rest);
                let cookie = be64(&rest[4..]);
                let n = read_len(cookie);
                let data = (error == 0 && n > 0).then(|| self.read_vec(n));
                Reply::Simple {
                    cookie,
                    error,
                    data,
                }
            }
            proto::STRUCTURED_REPLY_MAGIC => {
                let rest = self.read_vec(16);
                let len = be32(&rest[12..]) as usize;
                assert!(len <= 64 << 20, "chunk of {len} bytes");
                Reply::Chunk {
                    flags: be16(&rest),
                    kind: be16(&rest[2..]),
                    cookie: be64(&rest[4..]),
                    payload: self.read_vec(len),
                }
            }
            other => panic!("bad reply magic {other:#x}"),
        }
    }

    /// Read a simple reply that carries no data; return (cookie, error).
    pub fn read_simple(&mut self) -> (u64, u32) {
        match self.read_reply(|_| 0) {
            Reply::Simple { cookie, error, .. } => (cookie, error),
            other => panic!("expected a simple reply, got {other:?}"),
        }
    }

    /// Read one structured chunk.
    pub fn read_chunk(&mut self) -> Chunk {
        match self.read_reply(|_| 0) {
            Reply::Chunk {
                cookie,
                flags,
                kind,
                payload,
            } => Chunk {
                flags,
                kind,
                cookie,
                payload,
            },
            other => panic!("expected a structured chunk, got {other:?}"),
        }
    }

    /// Write `data` at `offset` (with `flags`); return the error.
    pub fn write_at(&mut self, cookie: u64, flags: u16, offset: u64, data: &[u8]) -> u32 {
        let mut b = proto::encode_request(&Request {
            flags,
            kind: cmd::WRITE,
            cookie,
            offset,
            len: data.len() as u32,
        })
        .to_vec();
        b.extend_from_slice(data);
        self.send(&b);
        let (c, e) = self.read_simple();
        assert_eq!(c, cookie, "reply to the wrong request");
        e
    }

    /// Read `len` bytes at `offset` (with `flags`): the data, or the error.
    pub fn read_at(
        &mut self,
        cookie: u64,
        flags: u16,
        offset: u64,
        len: u32,
    ) -> Result<Vec<u8>, u32> {
        self.request(flags, cmd::READ, cookie, offset, len);
        self.read_answer(cookie, offset, len)
    }

    /// Read the whole answer to read `cookie` of `len` bytes at `offset`.
    pub fn read_answer(&mut self, cookie: u64, offset: u64, len: u32) -> Result<Vec<u8>, u32> {
        if !self.structured {
            return match self.read_reply(|_| len as usize) {
                Reply::Simple {
                    cookie: c,
                    error,
                    data,
                } => {
                    assert_eq!(c, cookie, "reply to the wrong request");
                    if error == 0 {
                        Ok(data.unwrap_or_default())
                    } else {
                        Err(error)
                    }
                }
                other => panic!("structured reply without negotiation: {other:?}"),
            };
        }
        let mut data = vec![0u8; len as usize];
        let mut error = None;
        loop {
            let c = self.read_chunk();
            assert_eq!(c.cookie, cookie, "chunk for the wrong request");
            match c.kind {
                proto::chunk::OFFSET_DATA => {
                    let at = be64(&c.payload) - offset;
                    let body = &c.payload[8..];
                    data[at as usize..at as usize + body.len()].copy_from_slice(body);
                }
                proto::chunk::ERROR => {
                    assert!(c.payload.len() >= 6, "short error chunk");
                    let msg_len = usize::from(be16(&c.payload[4..]));
                    assert!(
                        msg_len + 6 <= c.payload.len(),
                        "error message longer than its chunk"
                    );
                    error = Some(be32(&c.payload));
                }
                proto::chunk::OFFSET_HOLE => {
                    assert_eq!(c.payload.len(), 12, "OFFSET_HOLE payload");
                    let at = (be64(&c.payload) - offset) as usize;
                    let n = be32(&c.payload[8..]) as usize;
                    data[at..at + n].fill(0);
                }
                proto::chunk::NONE => assert!(c.payload.is_empty()),
                k => panic!("unexpected chunk type {k:#x}"),
            }
            if c.flags & proto::chunk::DONE != 0 {
                return error.map_or(Ok(data), Err);
            }
        }
    }

    /// A command without payload (flush, trim, write-zeroes); return the
    /// error.
    pub fn command(&mut self, cookie: u64, flags: u16, kind: u16, offset: u64, len: u32) -> u32 {
        self.request(flags, kind, cookie, offset, len);
        let (c, e) = self.read_simple();
        assert_eq!(c, cookie, "reply to the wrong request");
        e
    }

    /// Send `NBD_CMD_DISC`.
    pub fn disc(&mut self) {
        self.request(0, cmd::DISC, 0xD15C, 0, 0);
    }

    /// Check the server closes the connection without sending anything more.
    pub fn expect_closed(&mut self, why: &str) {
        let mut buf = [0u8; 4096];
        match self.s.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => panic!(
                "{why}: expected the server to close, got {n} bytes: {:02x?}",
                &buf[..n.min(64)]
            ),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("{why}: expected the server to close, got {e}"),
        }
    }
}

/// Check a read's result against `want` without printing megabytes: the
/// error, or the first byte that differs.
#[track_caller]
pub fn check_read(got: Result<Vec<u8>, u32>, want: &[u8], what: &str) {
    match got {
        Err(e) => panic!("{what}: the read failed with error {e}"),
        Ok(d) if d.len() != want.len() => {
            panic!("{what}: {} bytes read, {} expected", d.len(), want.len())
        }
        Ok(d) => {
            if let Some(i) = d.iter().zip(want).position(|(a, b)| a != b) {
                panic!(
                    "{what}: byte {i} of {} is {:#04x}, expected {:#04x}",
                    d.len(),
                    d[i],
                    want[i]
                );
            }
        }
    }
}

/// Requests at `u64` extremes on `export` (offsets 2^64 - 1, 2^64 - 512,
/// 2^63, ranges whose end wraps past 2^64, lengths near 2^32): each is
/// refused with the error the protocol prescribes (`EINVAL`, or `ENOSPC`
/// for a write or write-zeroes on the export's `block` size that runs past
/// the end), on the same connection, which then still reads and writes
/// (at 1 MiB less 8 KiB).
pub fn assert_extremes_refused(server: &TestServer, export: &str, block: u64) {
    let mut c = Client::open(&server.sock, export);
    let top = u64::MAX;
    let ranges = [
        (top, 512u32),
        (top - 511, 512),
        (top - 511, 1024),
        (top - 4095, 8192),
        (1 << 63, 512),
        (1 << 63, 4096),
        ((1 << 63) + 512, 1 << 20),
        (top - 511, u32::MAX - 511),
        (1 << 62, u32::MAX - 511),
    ];
    let mut cookie = 0;
    for (offset, len) in ranges {
        let aligned = offset % block == 0 && u64::from(len) % block == 0;
        for kind in [
            cmd::READ,
            cmd::TRIM,
            cmd::WRITE_ZEROES,
            cmd::CACHE,
            cmd::BLOCK_STATUS,
        ] {
            cookie += 1;
            let got = c.command(cookie, 0, kind, offset, len);
            let ok = match kind {
                cmd::WRITE_ZEROES if aligned => got == proto::err::ENOSPC,
                _ => got == proto::err::EINVAL,
            };
            assert!(ok, "command {kind} at {offset} of {len}: error {got}");
        }
        if len <= 1 << 20 {
            cookie += 1;
            let got = c.write_at(cookie, 0, offset, &vec![0xA5; len as usize]);
            let want = if aligned {
                proto::err::ENOSPC
            } else {
                proto::err::EINVAL
            };
            assert_eq!(got, want, "WRITE at {offset} of {len}");
        }
    }
    // The same connection goes on.
    let (data, at) = (pattern(0xE7, 4096), (1 << 20) - 8192);
    assert_eq!(c.write_at(cookie + 1, 0, at, &data), 0);
    check_read(
        c.read_at(cookie + 2, 0, at, 4096),
        &data,
        "after the extremes",
    );
    c.disc();
}

/// A new, well-behaved client can still use `export` on `server`: GO, write
/// a block, read it back, flush, DISC.
pub fn assert_serves(server: &TestServer, export: &str) {
    let mut c = Client::open(&server.sock, export);
    let data = pattern(0xF8E5, 4096);
    assert_eq!(
        c.write_at(1, 0, 8192, &data),
        0,
        "write on a fresh connection"
    );
    check_read(
        c.read_at(2, 0, 8192, 4096),
        &data,
        "read back on a fresh connection",
    );
    assert_eq!(
        c.command(3, 0, cmd::FLUSH, 0, 0),
        0,
        "flush on a fresh connection"
    );
    c.disc();
    c.expect_closed("after DISC");
    assert!(server.running(), "the server stopped");
}

/// Count each cookie's replies; panic unless every one in `expected` got
/// exactly one and nothing else came.
pub fn assert_one_reply_each(expected: &[u64], got: &[u64]) {
    let mut counts: HashMap<u64, u32> = HashMap::new();
    for c in got {
        *counts.entry(*c).or_default() += 1;
    }
    for c in expected {
        assert_eq!(
            counts.remove(c),
            Some(1),
            "cookie {c:#x}: not exactly one reply"
        );
    }
    assert!(
        counts.is_empty(),
        "replies to cookies never sent: {counts:?}"
    );
}

// ---------------------------------------------------------------------------
// JSON: the tools' `--json` output, read with serde_json.

/// A JSON value.
pub type Json = serde_json::Value;

/// Accessors that fail the test, saying what was there, when the value is
/// not what the tools are documented to print.
pub trait JsonExt {
    /// A member that must be there.
    fn at(&self, key: &str) -> &Json;
    /// As a bool.
    fn bool(&self) -> bool;
    /// As a number.
    fn num(&self) -> f64;
    /// As a string.
    fn str(&self) -> &str;
    /// As an array.
    fn arr(&self) -> &[Json];
}

impl JsonExt for Json {
    fn at(&self, key: &str) -> &Json {
        self.get(key)
            .unwrap_or_else(|| panic!("no {key:?} in {self:?}"))
    }

    fn bool(&self) -> bool {
        self.as_bool()
            .unwrap_or_else(|| panic!("not a bool: {self:?}"))
    }

    fn num(&self) -> f64 {
        self.as_f64()
            .unwrap_or_else(|| panic!("not a number: {self:?}"))
    }

    fn str(&self) -> &str {
        self.as_str()
            .unwrap_or_else(|| panic!("not a string: {self:?}"))
    }

    fn arr(&self) -> &[Json] {
        self.as_array()
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("not an array: {self:?}"))
    }
}
