//! `elevator serve` as a process: it serves until SIGTERM or SIGINT, exits 0,
//! logs one line per connection with its counters and a last "stopped" line;
//! bad arguments fail at once with a message naming what is wrong.
//!
//! Waits poll with generous deadlines; nothing sleeps for correctness.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use elevator_nbd::proto::{self, Request, cmd, info, opt, rep};
use elevator_testkit as tools;

const DEADLINE: Duration = Duration::from_secs(120);

/// A fresh directory under /tmp, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = PathBuf::from(format!(
            "/tmp/elevator-cli-{tag}-{}-{nanos:x}",
            std::process::id()
        ));
        std::fs::create_dir(&path).expect("creating a temporary directory");
        TempDir(path)
    }

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Poll `f` until it gives a value; panic after [`DEADLINE`].
fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    elevator_testkit::wait_for(what, DEADLINE, f)
}

/// Wait for `child` to exit (killing it after [`DEADLINE`]).
fn wait_exit(child: &mut Child, what: &str) -> ExitStatus {
    elevator_testkit::wait_with_deadline(child, DEADLINE, &format!("{what}: elevator"))
}

/// `elevator serve` running in the background, its stderr going to a file.
struct Serve {
    child: Child,
    stderr: PathBuf,
    sock: PathBuf,
    dir: TempDir,
}

impl Serve {
    /// Start `elevator serve ARGS --unix SOCK` and wait until it listens.
    fn start(args: &[&str]) -> Serve {
        let dir = TempDir::new("serve");
        let sock = dir.join("nbd.sock");
        Serve::start_at(args, dir, sock)
    }

    /// Start `elevator serve ARGS --unix SOCK` (`sock` anywhere, `dir`
    /// holding its stderr) and wait until it listens.
    fn start_at(args: &[&str], dir: TempDir, sock: PathBuf) -> Serve {
        Serve::spawn(
            Command::new(env!("CARGO_BIN_EXE_elevator")),
            args,
            dir,
            sock,
        )
    }

    /// Start `elevator serve ARGS --unix SOCK` with at most `nofile` open
    /// files (through prlimit).
    fn start_with_nofile(nofile: u32, args: &[&str]) -> Serve {
        let dir = TempDir::new("serve");
        let sock = dir.join("nbd.sock");
        let mut cmd = Command::new("prlimit");
        cmd.arg(format!("--nofile={nofile}"))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_elevator"));
        Serve::spawn(cmd, args, dir, sock)
    }

    /// Start `CMD serve ARGS --unix SOCK` and wait until it listens.
    fn spawn(mut cmd: Command, args: &[&str], dir: TempDir, sock: PathBuf) -> Serve {
        let stderr = dir.join("stderr");
        let child = cmd
            .arg("serve")
            .args(args)
            .arg("--unix")
            .arg(&sock)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("running elevator serve");
        let mut s = Serve {
            child,
            stderr,
            sock,
            dir,
        };
        wait_for("elevator serve to listen", || {
            if let Ok(Some(status)) = s.child.try_wait() {
                panic!(
                    "elevator serve exited ({status}) before listening:\n{}",
                    s.log()
                );
            }
            UnixStream::connect(&s.sock).ok().map(|_| ())
        });
        // That probe was a connection too: wait for its line, so that the
        // tests below count only their own.
        wait_for("the probe connection's line", || {
            (s.lines("export '-'").len() == 1).then_some(())
        });
        s
    }

    fn uri(&self, export: &str) -> String {
        format!("nbd+unix:///{export}?socket={}", self.sock.display())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Logged lines containing `needle`.
    fn lines(&self, needle: &str) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_string)
            .collect()
    }

    /// Send `signal` (e.g. "TERM") and wait for the exit.
    fn signal_and_wait(&mut self, signal: &str) -> ExitStatus {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{signal} failed");
        wait_exit(&mut self.child, &format!("after SIG{signal}"))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---------------------------------------------------------------------------
// A minimal raw NBD client.

struct Client(UnixStream);

impl Client {
    /// Connect and `GO` to `export`.
    fn open(sock: &Path, export: &str) -> Client {
        let s = UnixStream::connect(sock).expect("connecting");
        s.set_read_timeout(Some(DEADLINE)).expect("timeout");
        let mut c = Client(s);
        let g = c.read(proto::GREETING_LEN);
        assert_eq!(&g[..8], b"NBDMAGIC");
        c.send(&(proto::CLIENT_FIXED_NEWSTYLE | proto::CLIENT_NO_ZEROES).to_be_bytes());
        let mut data = (export.len() as u32).to_be_bytes().to_vec();
        data.extend_from_slice(export.as_bytes());
        data.extend_from_slice(&1u16.to_be_bytes());
        data.extend_from_slice(&info::BLOCK_SIZE.to_be_bytes());
        let mut o = proto::IHAVEOPT.to_be_bytes().to_vec();
        o.extend_from_slice(&opt::GO.to_be_bytes());
        o.extend_from_slice(&(data.len() as u32).to_be_bytes());
        o.extend_from_slice(&data);
        c.send(&o);
        loop {
            let h = c.read(20);
            let kind = u32::from_be_bytes(h[12..16].try_into().expect("4"));
            let len = u32::from_be_bytes(h[16..20].try_into().expect("4")) as usize;
            c.read(len);
            match kind {
                rep::INFO => continue,
                rep::ACK => return c,
                k => panic!("GO {export} refused: {k:#x}"),
            }
        }
    }

    fn send(&mut self, b: &[u8]) {
        self.0.write_all(b).expect("sending");
    }

    fn read(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        self.0.read_exact(&mut v).expect("reading");
        v
    }

    /// Send a request (with `payload` for a write); read the simple reply
    /// and, for a successful read, `len` bytes of data.
    fn call(
        &mut self,
        kind: u16,
        cookie: u64,
        offset: u64,
        len: u32,
        payload: &[u8],
    ) -> (u32, Vec<u8>) {
        let r = Request {
            flags: 0,
            kind,
            cookie,
            offset,
            len,
        };
        let mut b = proto::encode_request(&r).to_vec();
        b.extend_from_slice(payload);
        self.send(&b);
        let h = self.read(proto::SIMPLE_REPLY_LEN);
        assert_eq!(
            u32::from_be_bytes(h[..4].try_into().expect("4")),
            proto::SIMPLE_REPLY_MAGIC
        );
        assert_eq!(u64::from_be_bytes(h[8..16].try_into().expect("8")), cookie);
        let error = u32::from_be_bytes(h[4..8].try_into().expect("4"));
        let data = if kind == cmd::READ && error == 0 {
            self.read(len as usize)
        } else {
            Vec::new()
        };
        (error, data)
    }

    /// Send DISC and see the server close.
    fn disc(mut self) {
        self.send(&proto::encode_request(&Request {
            flags: 0,
            kind: cmd::DISC,
            cookie: 0,
            offset: 0,
            len: 0,
        }));
        self.expect_closed();
    }

    fn expect_closed(&mut self) {
        let mut b = [0u8; 64];
        match self.0.read(&mut b) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            other => panic!("expected the server to close the connection, got {other:?}"),
        }
    }
}

fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    elevator_testkit::TestRng::new(seed).fill(&mut v);
    v
}

/// Run `cmd` to completion and return what it printed. A program that is
/// not installed fails the test with a message naming it, its Debian
/// package and `scripts/test` (never a skip).
fn output(cmd: &mut Command) -> std::process::Output {
    match cmd.output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("{}", tools::missing(&cmd.get_program().to_string_lossy()))
        }
        Err(e) => panic!("cannot run {cmd:?}: {e}"),
    }
}

fn run_ok(cmd: &mut Command) {
    let what = format!("{cmd:?}");
    let out = output(cmd);
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The number right after `after` in a connection line: `counter(l, "writes
/// (")` is the bytes written.
fn counter(line: &str, after: &str) -> u64 {
    let rest = &line[line
        .find(after)
        .unwrap_or_else(|| panic!("no {after:?} in {line}"))
        + after.len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {after:?} in {line}"))
}

#[test]
fn serves_until_sigterm_and_logs_each_connection() {
    elevator_testkit::needs!("nbdinfo", "nbdcopy", "kill");
    let mut s = Serve::start(&[
        "--export",
        "disk=mem:8m",
        "--export",
        "ro=mem:1m,ro,scheduler=bfq",
    ]);
    let log = s.log();
    assert!(log.contains("listening on"), "{log}");
    assert!(log.contains("export 'disk': 8388608 bytes"), "{log}");
    assert!(
        log.contains("export 'ro': 1048576 bytes") && log.contains("read-only"),
        "{log}"
    );

    // Two raw clients with known traffic.
    let block = random_bytes(4096, 7);
    let mut a = Client::open(&s.sock, "disk");
    assert_eq!(a.call(cmd::WRITE, 1, 0, 4096, &block).0, 0);
    assert_eq!(a.call(cmd::READ, 2, 0, 4096, &[]), (0, block.clone()));
    a.disc();
    let mut b = Client::open(&s.sock, "disk");
    let (e, data) = b.call(cmd::READ, 1, 0, 8192, &[]);
    assert_eq!((e, &data[..4096]), (0, &block[..]));
    assert_eq!(b.call(cmd::FLUSH, 2, 0, 0, &[]).0, 0);
    assert_eq!(b.call(cmd::WRITE, 3, 0, 512, &[0; 512]).0, 0);
    b.disc();

    // Real clients: one connection each.
    run_ok(Command::new("nbdinfo").arg(s.uri("disk")));
    let img = s.dir.join("in.img");
    let out = s.dir.join("out.img");
    let image = random_bytes(8 << 20, 99);
    std::fs::write(&img, &image).expect("writing the image");
    run_ok(
        Command::new("nbdcopy")
            .args(["-C", "1", "--flush"])
            .arg(&img)
            .arg(s.uri("disk")),
    );
    run_ok(
        Command::new("nbdcopy")
            .args(["-C", "1"])
            .arg(s.uri("disk"))
            .arg(&out),
    );
    assert!(
        std::fs::read(&out).expect("reading the copy") == image,
        "nbdcopy round trip differs"
    );

    // One still connected when the signal comes.
    let mut idle = Client::open(&s.sock, "ro");
    assert_eq!(
        idle.call(cmd::WRITE, 1, 0, 512, &[0; 512]).0,
        proto::err::EPERM
    );
    let status = s.signal_and_wait("TERM");
    assert!(
        status.success(),
        "elevator serve exited with {status} after SIGTERM:\n{}",
        s.log()
    );
    idle.expect_closed();

    let log = s.log();
    let disk = s.lines("export 'disk' after");
    // a, b, nbdinfo, two nbdcopy: one line each, no more.
    assert_eq!(disk.len(), 5, "one line per connection to 'disk':\n{log}");
    for l in &disk {
        for word in [
            "reads (",
            "writes (",
            "flushes",
            "trims",
            "write-zeroes",
            "errors",
        ] {
            assert!(l.contains(word), "line without {word:?}: {l}");
        }
    }
    assert!(
        disk.iter().any(
            |l| l.contains("1 reads (4096 bytes), 1 writes (4096 bytes), 0 flushes")
                && l.contains("(DISC)")
        ),
        "client a's line:\n{log}"
    );
    assert!(
        disk.iter()
            .any(|l| l.contains("1 reads (8192 bytes), 1 writes (512 bytes), 1 flushes")),
        "client b's line:\n{log}"
    );
    let written: u64 = disk.iter().map(|l| counter(l, "writes (")).sum();
    assert_eq!(
        written,
        4096 + 512 + (8 << 20),
        "bytes written over all connections:\n{log}"
    );
    let read: u64 = disk.iter().map(|l| counter(l, "reads (")).sum();
    assert!(
        read >= 4096 + 8192 + (8 << 20),
        "bytes read over all connections:\n{log}"
    );
    let ro = s.lines("export 'ro' after");
    assert_eq!(ro.len(), 1, "{log}");
    assert!(
        ro[0].contains("1 errors") && ro[0].contains("server shut down"),
        "{}",
        ro[0]
    );
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.contains("stopped"),
        "the last line is the stop: {last:?}\n{log}"
    );
    assert!(!s.sock.exists(), "the socket file is removed");
}

#[test]
fn sigint_stops_too() {
    elevator_testkit::needs!("kill");
    let mut s = Serve::start(&["--export", "disk=hdd-7200"]);
    let mut c = Client::open(&s.sock, "disk");
    assert_eq!(c.call(cmd::READ, 1, 1 << 30, 4096, &[]).0, 0);
    let status = s.signal_and_wait("INT");
    assert!(status.success(), "exit {status} after SIGINT:\n{}", s.log());
    c.expect_closed();
    assert_eq!(s.lines("export 'disk' after").len(), 1, "{}", s.log());
    assert!(s.log().contains("stopped"), "{}", s.log());
}

/// Run `elevator ARGS`, which must fail at once; return (code, stderr).
fn fails(args: &[&str]) -> (Option<i32>, String) {
    let dir = TempDir::new("bad");
    let err = dir.join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("running elevator");
    let status = wait_exit(&mut child, &format!("{args:?}"));
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(!status.success(), "elevator {args:?} succeeded:\n{stderr}");
    (status.code(), stderr)
}

/// `elevator serve ARGS --unix SOCK`, which must fail at once: its stderr.
fn serve_fails(args: &[&str], sock: &str) -> String {
    fails(&[&["serve"], args, &["--unix", sock]].concat()).1
}

#[test]
fn bad_arguments_fail_with_a_clear_message() {
    let dir = TempDir::new("args");
    let sock = dir.join("s.sock");
    let sock = sock.to_str().expect("UTF-8 path");

    let (code, err) = fails(&["serve", "--unix", sock]);
    assert_eq!(code, Some(2), "clap's usage error: {err}");
    assert!(
        err.contains("--export") && err.contains("required"),
        "{err}"
    );

    let err = serve_fails(&["--export", "disk=floppy"], sock);
    assert!(
        err.contains("floppy") && err.contains("--export 'disk=floppy'"),
        "{err}"
    );

    let err = serve_fails(
        &["--export", "disk=mem:1m", "--export", "disk=mem:2m"],
        sock,
    );
    assert!(err.contains("two exports are called 'disk'"), "{err}");

    let nowhere = dir.join("no/such/dir/s.sock");
    let nowhere = nowhere.to_str().expect("UTF-8 path");
    let err = serve_fails(&["--export", "disk=mem:1m"], nowhere);
    assert!(
        err.contains(&format!("cannot listen on {nowhere}")),
        "{err}"
    );
    assert!(
        err.contains("No such file or directory"),
        "the reason is given: {err}"
    );

    let err = serve_fails(&["--export", "disk=mem:1m,colour=red"], sock);
    assert!(err.contains("colour"), "{err}");

    let err = serve_fails(&["--export", "disk=mem:1m", "--max-request", "1k"], sock);
    assert!(err.contains("--max-request"), "{err}");

    let (code, err) = fails(&[
        "serve",
        "--export",
        "disk=mem:1m",
        "--listen",
        "localhost:nbd",
    ]);
    assert_eq!(code, Some(2), "clap's usage error: {err}");
    assert!(err.contains("--listen"), "{err}");

    assert!(!Path::new(sock).exists(), "no socket left behind");
}

#[test]
fn a_missing_tool_names_its_package() {
    // nbdcopy where no PATH finds it.
    let empty = TempDir::new("nopath");
    let missing = std::panic::catch_unwind(|| {
        output(Command::new("nbdcopy").env("PATH", &empty.0));
    })
    .expect_err("running a program that is not installed must fail");
    let msg = missing
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        msg.contains("nbdcopy is not installed")
            && msg.contains("apt-get install libnbd-bin")
            && msg.contains("scripts/test"),
        "{msg}"
    );
}

#[test]
fn zero_limits_are_refused() {
    let dir = TempDir::new("zero");
    let sock = dir.join("s.sock");
    let sock = sock.to_str().expect("UTF-8 path");
    for (flag, value, needle) in [
        (
            "--max-connections",
            "0",
            "--max-connections 0: must be at least 1",
        ),
        (
            "--max-inflight",
            "0",
            "--max-inflight 0: must be at least 1",
        ),
        (
            "--handshake-timeout",
            "0",
            "--handshake-timeout 0: must be more than 0",
        ),
        (
            "--handshake-timeout",
            "-1",
            "--handshake-timeout -1: must be more than 0",
        ),
        (
            "--handshake-timeout",
            "NaN",
            "--handshake-timeout NaN: must be more than 0",
        ),
    ] {
        let arg = format!("{flag}={value}");
        let (code, err) = fails(&["serve", "--export", "disk=mem:1m", &arg, "--unix", sock]);
        assert_eq!(code, Some(1), "{flag} {value}: {err}");
        assert!(err.contains(needle), "{flag} {value}: {err}");
    }
    assert!(!Path::new(sock).exists(), "no socket left behind");
}

#[test]
fn handshake_timeout_closes_silent_connections() {
    let s = Serve::start(&["--export", "disk=mem:1m", "--handshake-timeout", "0.5"]);
    let mut silent = UnixStream::connect(&s.sock).expect("connecting");
    silent
        .set_read_timeout(Some(DEADLINE))
        .expect("read timeout");
    // The greeting, then nothing until the server gives up.
    let mut buf = Vec::new();
    silent
        .read_to_end(&mut buf)
        .expect("reading until the server closes");
    assert_eq!(buf.len(), proto::GREETING_LEN, "only the greeting");
    let line = wait_for("the silent connection's line", || {
        s.lines("handshake timed out").into_iter().next()
    });
    assert!(
        line.contains("export '-'") && line.contains("handshake timed out after 0.5 s"),
        "{line}"
    );
    // A client that chose its export is not bound by it.
    let mut c = Client::open(&s.sock, "disk");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(c.call(cmd::READ, 1, 0, 512, &[]), (0, vec![0; 512]));
    c.disc();
}

#[test]
fn running_out_of_file_descriptors_pauses_accepting_instead_of_spinning() {
    elevator_testkit::needs!("prlimit");
    // 40 descriptors: about two dozen for the server's own (the listener,
    // the epoll, the ring, the export, eventfds), the rest for clients.
    let s = Serve::start_with_nofile(40, &["--export", "disk=mem:1m", "--threads", "1"]);
    let held: Vec<UnixStream> = (0..60)
        .map(|_| UnixStream::connect(&s.sock).expect("connecting into the backlog"))
        .collect();
    wait_for("accept to run out of descriptors", || {
        (!s.lines("accept failed").is_empty()).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    // Before, the listener woke the loop at once for every failure: tens
    // of thousands of lines a second. Now a line at most each second.
    let lines = s.lines("accept failed");
    assert!(
        lines.len() <= 10,
        "{} accept lines:\n{}",
        lines.len(),
        lines[..3].join("\n")
    );
    assert!(
        lines[0].contains("Too many open files") && lines[0].contains("--max-connections"),
        "{}",
        lines[0]
    );
    // Descriptors come back as clients leave; those in the backlog, and new
    // ones, are served.
    drop(held);
    let mut c = Client::open(&s.sock, "disk");
    assert_eq!(c.call(cmd::READ, 1, 0, 512, &[]), (0, vec![0; 512]));
    c.disc();
}

#[test]
fn a_closed_stderr_loses_log_lines_not_the_write_log() {
    elevator_testkit::needs!("kill");
    // `elevator serve ... 2>&1 | head -1`: stderr's reader is gone after
    // the first line. The server must go on, and stop in order: every
    // write it acknowledged in its write log.
    let dir = TempDir::new("closed-stderr");
    let sock = dir.join("nbd.sock");
    let log = dir.join("w.wlog");
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["serve", "--export", "disk=mem:1m", "--write-log"])
        .arg(&log)
        .arg("--unix")
        .arg(&sock)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running elevator serve");
    drop(child.stderr.take());
    wait_for("elevator serve to listen", || {
        UnixStream::connect(&sock).ok().map(|_| ())
    });
    for k in 0..3u64 {
        let mut c = Client::open(&sock, "disk");
        assert_eq!(c.call(cmd::WRITE, k, k * 4096, 4096, &[7; 4096]).0, 0);
        assert_eq!(c.call(cmd::FLUSH, 9, 0, 0, &[]).0, 0);
        c.disc();
    }
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .expect("running kill");
    assert!(status.success());
    let status = wait_exit(&mut child, "after SIGTERM");
    assert!(status.success(), "serve ended with {status}");
    let shown = output(
        Command::new(env!("CARGO_BIN_EXE_elevator"))
            .args(["write-log", "show"])
            .arg(&log),
    );
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("3 write (0 FUA)"), "{text}");
}

#[test]
fn partial_blocks_are_refused_or_reported() {
    elevator_testkit::needs!("nbdkit");
    let dir = TempDir::new("partial");
    let sock = dir.join("s.sock");
    let sock = sock.to_str().expect("UTF-8 path");
    // Memory: the size must be whole blocks.
    let err = serve_fails(&["--export", "d=mem:1000"], sock);
    assert!(
        err.contains("mem:1000 is 1000 bytes, not a multiple of the 512-byte block size"),
        "{err}"
    );
    let err = serve_fails(&["--export", "d=mem:6k,lbs=4096"], sock);
    assert!(
        err.contains("mem:6k is 6144 bytes, not a multiple of the 4096-byte block size"),
        "{err}"
    );
    // A file: served up to its last whole block, and the log says what is
    // left out (100 bytes past 1 MiB: less than any block).
    let img = dir.join("odd.img");
    std::fs::File::create(&img)
        .and_then(|f| f.set_len((1 << 20) + 100))
        .expect("creating the image");
    let img = img.to_str().expect("UTF-8 path");
    let s = Serve::start(&["--export", &format!("f=file:{img}")]);
    let log = s.log();
    let line = log
        .lines()
        .find(|l| l.contains("export 'f':"))
        .unwrap_or_else(|| panic!("no line for export 'f':\n{log}"));
    assert!(
        line.contains("export 'f': 1048576 bytes")
            && line.contains("the file's last 100 bytes are not served"),
        "{line}"
    );
}

/// `nbdkit --unix PATH memory 1M` in the background, killed when dropped.
struct Nbdkit(Child);

impl Nbdkit {
    fn start(sock: &Path) -> Nbdkit {
        let child = Command::new("nbdkit")
            .args(["--foreground", "--unix"])
            .arg(sock)
            .args(["memory", "1M"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} ({e})", tools::missing("nbdkit")));
        let mut n = Nbdkit(child);
        wait_for("nbdkit to listen", || {
            if let Ok(Some(status)) = n.0.try_wait() {
                panic!("nbdkit exited ({status}) before listening");
            }
            UnixStream::connect(sock).ok().map(|_| ())
        });
        n
    }
}

impl Drop for Nbdkit {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A Unix socket a live server answers on (elevator's or nbdkit's) is
/// refused, as TCP refuses an address in use, and stays that server's;
/// anything that is not a socket is refused and left as it was; a stale
/// socket (its server gone) is replaced.
#[test]
fn a_unix_socket_a_live_server_holds_is_refused() {
    elevator_testkit::needs!("kill");
    let first = Serve::start(&["--export", "disk=mem:1m"]);
    let sock = first.sock.to_str().expect("UTF-8 path");
    let (code, err) = fails(&["serve", "--export", "disk=mem:1m", "--unix", sock]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "cannot listen on {sock}: a server is listening on it (Address already in use)"
        )),
        "{err}"
    );
    assert!(
        first.sock.exists(),
        "the first server's socket is still there"
    );
    let mut c = Client::open(&first.sock, "disk");
    assert_eq!(c.call(cmd::READ, 1, 0, 512, &[]), (0, vec![0; 512]));
    c.disc();

    let dir = TempDir::new("unix-taken");
    let nbdkit_sock = dir.join("nbdkit.sock");
    let nbdkit = Nbdkit::start(&nbdkit_sock);
    let path = nbdkit_sock.to_str().expect("UTF-8 path");
    let err = serve_fails(&["--export", "disk=mem:1m"], path);
    assert!(
        err.contains("a server is listening on it (Address already in use)"),
        "{err}"
    );
    UnixStream::connect(&nbdkit_sock).expect("nbdkit still answers on its socket");
    drop(nbdkit);

    let file = dir.join("notes.txt");
    std::fs::write(&file, "not a socket").expect("writing a file");
    let path = file.to_str().expect("UTF-8 path");
    let err = serve_fails(&["--export", "disk=mem:1m"], path);
    assert!(
        err.contains(&format!(
            "cannot listen on {path}: it is a regular file, not a socket: refusing to replace it"
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).ok().as_deref(),
        Some("not a socket")
    );

    // A socket whose server is gone (as one killed with SIGKILL leaves).
    let stale = dir.join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).expect("binding"));
    let mut s = Serve::start_at(&["--export", "disk=mem:1m"], dir, stale);
    assert!(s.signal_and_wait("TERM").success(), "{}", s.log());
    assert!(!s.sock.exists(), "its own socket goes when it stops");
}

/// A server removes its Unix socket when it stops only if the path is
/// still its socket: one that another server has put there stays.
#[test]
fn a_stopping_server_leaves_a_socket_that_is_not_its_own() {
    elevator_testkit::needs!("kill");
    let mut s = Serve::start(&["--export", "disk=mem:1m"]);
    // Another socket takes the path: bound beside it and renamed over it
    // (so that it cannot have the first one's inode number).
    let beside = s.dir.join("other.sock");
    let other = std::os::unix::net::UnixListener::bind(&beside).expect("another server binds");
    std::fs::rename(&beside, &s.sock).expect("renaming over the socket");
    assert!(s.signal_and_wait("TERM").success(), "{}", s.log());
    assert!(s.sock.exists(), "the other server's socket is left alone");
    drop(other);
}
