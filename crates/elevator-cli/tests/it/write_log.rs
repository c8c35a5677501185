//! `--write-log` on simulated devices, power cuts and faults, end to end:
//! the summary line, the log file, the JSON field, and a failed check's
//! exit status; and `serve --mark-socket` with `write-log mark`: marks
//! served beside idle clients, within bounds, and the client's timeout.

use crate::common;

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::fio::TempDir;
use common::{elevator, fails_with, ok};
use elevator_trace::write_log::{Kind, Reader};

const JOB: [&str; 7] = [
    "--name=w",
    "--rw=randwrite",
    "--bs=16k",
    "--size=8m",
    "--ioengine=libaio",
    "--iodepth=8",
    "--fsync=16",
];

fn run(device: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run"];
    args.extend(JOB);
    args.extend(["--device", device]);
    args.extend(extra);
    elevator(&args)
}

/// `run` on `device` with `--write-log` to `w.wlog` in a new directory
/// tagged `tag`: the directory (the log lives as long as it), the log's
/// path, the output and its stderr.
fn run_logged(tag: &str, device: &str) -> (TempDir, PathBuf, std::process::Output, String) {
    let dir = TempDir::new(tag);
    let log = dir.path().join("w.wlog");
    let log_s = log.to_string_lossy().into_owned();
    let out = run(device, &["--write-log", &log_s]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (dir, log, out, err)
}

#[test]
fn a_power_cut_run_prints_what_was_lost_and_writes_the_log() {
    let (_dir, log, out, err) = run_logged("write-log-cut", "hdd-7200,power_cut_at=300ms");
    // The device is gone after the cut: the job ends at its first ENODEV,
    // as fio's does, and the run fails.
    assert!(
        !out.status.success() && err.contains("No such device"),
        "{err}"
    );
    let line = err
        .lines()
        .find(|l| l.starts_with("elevator: power cut at 0.300 s: lost "))
        .unwrap_or_else(|| panic!("no power cut line: {err}"));
    assert!(
        line.contains("unflushed writes (")
            && line.ends_with(
                "write log check: every flushed or FUA write survived, nothing unwritten \
                 appeared"
            ),
        "{line}"
    );
    // The log: a header, writes, flushes, and the job's marks.
    let bytes = std::fs::read(&log).expect("log written");
    let mut r = Reader::new(&bytes[..]).expect("header");
    assert!(!r.header().has_data);
    let (mut writes, mut flushes, mut marks) = (0, 0, Vec::new());
    while let Some(rec) = r.next_record().expect("record") {
        match rec.head.kind {
            Kind::Write => writes += 1,
            Kind::Flush => flushes += 1,
            Kind::Mark => marks.push(String::from_utf8_lossy(rec.payload).into_owned()),
            _ => {}
        }
    }
    assert!(
        writes > 0 && flushes > 0,
        "{writes} writes, {flushes} flushes"
    );
    assert_eq!(marks, vec!["job w start", "job w end"]);
}

#[test]
fn json_output_has_the_write_log_field() {
    let out = run("ssd-sata,power_cut_at=20ms", &["--output-format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let wl = &v["write_log"];
    assert_eq!(wl["power_cut"], true);
    assert_eq!(wl["check"], "passed");
    assert!(wl["lost_writes"].is_u64(), "{wl}");
    assert!(
        wl["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("power cut at 0.020 s")),
        "{wl}"
    );
    assert!(v["jobs"].is_array(), "the fio report is still there");
}

#[test]
fn a_misdirected_write_fails_the_run() {
    let out = run("hdd-7200,misdirect_rate=0.05,fail_seed=2", &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("write log check FAILED") && err.contains("misdirected"),
        "{err}"
    );
}

#[test]
fn a_vanished_device_ends_the_run_with_offline_errors() {
    let mut args = vec!["run"];
    args.extend(JOB);
    args.extend([
        "--time_based",
        "--runtime=2",
        "--device",
        "nvme,vanish_at=50ms",
        "--output-format",
        "json",
    ]);
    let out = common::elevator(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    // The job ends at its first ENODEV, as fio's does.
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("elevator: device vanished at 0.050 s"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        v["write_log"]["faults"]["offline"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{}",
        v["write_log"]
    );
}

#[test]
fn replay_takes_a_write_log_too() {
    let dir = TempDir::new("write-log-replay");
    let trace = dir.path().join("gen.trace");
    let t = trace.to_string_lossy().into_owned();
    ok(&["replay", "--generate", "2000", &t]);
    let log = dir.path().join("r.wlog");
    let l = log.to_string_lossy().into_owned();
    let out = ok(&[
        "replay",
        &t,
        "--device",
        "hdd-7200,power_cut_at=5ms",
        "--timing",
        "asap",
        "--write-log",
        &l,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("elevator: power cut at 0.005 s: lost "),
        "{err}"
    );
    assert!(std::fs::metadata(&log).is_ok_and(|m| m.len() >= 64));
    let out = ok(&[
        "replay",
        &t,
        "--device",
        "ssd-sata,power_cut_at=2ms",
        "--timing",
        "asap",
        "--output-format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["write_log"]["power_cut"], true, "{}", v["write_log"]);
    assert!(v["bios"].is_u64(), "the replay report is still there");
}

#[test]
fn a_real_device_logs_its_data_and_flushes() {
    let (_dir, log, out, err) = run_logged("write-log-real", "mem:16m");
    assert!(out.status.success(), "{err}");
    assert!(err.contains("elevator: write log "), "{err}");
    let bytes = std::fs::read(&log).expect("log written");
    let mut r = Reader::new(&bytes[..]).expect("header");
    assert!(r.header().has_data);
    assert_eq!(r.header().capacity, 16 << 11);
    let (mut data, mut flushes) = (0u64, 0);
    while let Some(rec) = r.next_record().expect("record") {
        match rec.head.kind {
            Kind::Write => {
                assert!(rec.head.has_data());
                data += rec.payload.len() as u64;
            }
            Kind::Flush => flushes += 1,
            _ => {}
        }
    }
    // 8 MiB of 16 KiB writes (merged or not), an fsync every 16.
    assert_eq!(data, 8 << 20);
    assert_eq!(flushes, 512 / 16);
}

#[test]
fn a_real_device_logs_one_device_only() {
    let mut args = vec!["run"];
    args.extend(JOB);
    args.extend([
        "--device",
        "mem:16m",
        "--also-device",
        "mem:16m",
        "--write-log",
        "/nonexistent/x",
    ]);
    fails_with(&args, "records one device");
}

/// `write-log show` streams: a log of 300,000 records shows under 128 MiB
/// of address space, as text and as JSON (which held every record's JSON
/// before writing any), and its summary lists the first 100 marks, cut at
/// 256 bytes, and counts the rest.
#[test]
fn show_streams_a_large_log_in_bounded_memory() {
    elevator_testkit::needs!("prlimit");
    use elevator_trace::write_log::{LogHeader, Writer};
    let dir = TempDir::new("show-large");
    let path = dir.path().join("large.wlog");
    let header = LogHeader {
        has_data: false,
        capacity: 1 << 20,
        block_size: 512,
    };
    let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut w = Writer::new(file, header).unwrap();
    let long = "m".repeat(1000);
    for i in 0..300_000u64 {
        if i % 1000 == 0 {
            w.mark(&format!("{i} {long}"), i).unwrap();
        } else {
            w.append(Kind::Write, 0, i % 1000 * 8, 8, i, &[]).unwrap();
        }
    }
    w.into_inner().unwrap();
    let p = path.to_string_lossy().into_owned();
    for format in ["text", "json"] {
        let out_path = dir.path().join(format!("show.{format}"));
        let status = std::process::Command::new("prlimit")
            .arg(format!("--as={}", 128u64 << 20))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_elevator"))
            .args(["write-log", "show", &p, "--output-format", format])
            .stdout(std::fs::File::create(&out_path).unwrap())
            .status();
        let status = match status {
            Ok(s) => s,
            Err(e) => return common::skip("show_streams", &format!("no prlimit: {e}")),
        };
        assert!(status.success(), "{format}: {status}");
        let out = std::fs::read_to_string(&out_path).unwrap();
        if format == "json" {
            let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(doc["records"].as_array().unwrap().len(), 300_000);
            assert_eq!(doc["summary"]["mark"], 300);
            assert_eq!(doc["summary"]["marks"].as_array().unwrap().len(), 100);
            assert_eq!(doc["summary"]["marks_not_listed"], 200);
        } else {
            let marks = out.lines().last().unwrap();
            assert!(marks.starts_with("  marks: \"0 mmm"), "{}", &marks[..80]);
            assert!(
                marks.ends_with("(and 200 more)"),
                "{}",
                &marks[marks.len() - 80..]
            );
            assert!(marks.len() < 100 * 270, "{}", marks.len());
        }
    }
}

#[test]
fn devices_lists_the_fault_options() {
    let out = ok(&["devices"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "power_cut_at",
        "vanish_at",
        "torn_rate",
        "misdirect_rate",
        "plp",
        "writeback",
    ] {
        assert!(text.contains(name), "{name} missing: {text}");
    }
}

// ---------------------------------------------------------------------------
// The mark socket (`serve --mark-socket`, `write-log mark`).

/// A guard against hangs, never a measure of time.
const GUARD: Duration = Duration::from_secs(120);

/// Wait for `child` to exit, killing it past [`GUARD`].
fn wait_guarded(child: &mut Child, what: &str) -> ExitStatus {
    elevator_testkit::wait_with_deadline(child, GUARD, &format!("{what}: elevator"))
}

/// `elevator serve` with a write log and a mark socket, killed when
/// dropped.
struct MarkServer {
    child: Child,
    stderr: PathBuf,
    marks: PathBuf,
    log: PathBuf,
}

impl MarkServer {
    /// Start it in `dir` and wait until it listens.
    fn start(dir: &TempDir) -> MarkServer {
        let marks = dir.path().join("marks.sock");
        let log = dir.path().join("w.wlog");
        let stderr = dir.path().join("serve.err");
        let nbd = dir.path().join("nbd.sock");
        let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
            .args(["serve", "--export", "d=mem:1m", "--write-log"])
            .arg(&log)
            .arg("--mark-socket")
            .arg(&marks)
            .arg("--unix")
            .arg(&nbd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("running elevator serve");
        let mut s = MarkServer {
            child,
            stderr,
            marks,
            log,
        };
        let start = Instant::now();
        while !std::fs::read_to_string(&s.stderr)
            .unwrap_or_default()
            .contains("taking write log marks")
        {
            if let Ok(Some(status)) = s.child.try_wait() {
                panic!("elevator serve exited ({status}):\n{}", s.log_text());
            }
            assert!(start.elapsed() < GUARD, "elevator serve did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        s
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// SIGTERM, and wait for the exit.
    fn stop(&mut self) -> ExitStatus {
        let status = Command::new("kill")
            .arg(self.child.id().to_string())
            .status()
            .expect("running kill");
        assert!(status.success());
        wait_guarded(&mut self.child, "after SIGTERM")
    }
}

impl Drop for MarkServer {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What a raw client of the mark socket is answered (one line).
fn answer(conn: &mut UnixStream) -> String {
    conn.set_read_timeout(Some(GUARD)).expect("read timeout");
    let mut text = String::new();
    conn.read_to_string(&mut text).expect("reading the answer");
    text
}

/// Idle clients of the mark socket hold up no one: with five connected
/// and silent, a mark goes through at once (the client's --timeout, 20 s,
/// is a guard: one client at a time with a 5 s read timeout each took
/// 25 s), and the idle ones are answered and closed at the server's 5 s.
/// Past 64 clients at once, the next is refused; a mark longer than 4 KiB
/// is refused; the socket goes when the server stops.
#[test]
fn idle_clients_do_not_hold_up_a_mark() {
    elevator_testkit::needs!("kill");
    let dir = TempDir::new("mark-idle");
    let mut s = MarkServer::start(&dir);
    let marks = s.marks.to_str().expect("UTF-8 path").to_string();
    let mut idle: Vec<UnixStream> = (0..5)
        .map(|_| UnixStream::connect(&s.marks).expect("connecting"))
        .collect();
    let out = elevator(&[
        "write-log",
        "mark",
        &marks,
        "after five idle",
        "--timeout",
        "20",
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.log_text()
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("mark "));
    for c in &mut idle {
        assert_eq!(answer(c), "error no mark (one line) within 5 s\n");
    }

    let mut many: Vec<UnixStream> = (0..65)
        .map(|_| UnixStream::connect(&s.marks).expect("connecting"))
        .collect();
    assert_eq!(
        answer(&mut many[64]),
        "error the mark socket serves 64 clients at once: try again\n"
    );
    drop(many);
    // The server frees the dropped clients' places when it sees them hang
    // up, which may be a moment after the drop: wait for a place (a probe
    // that sends nothing records nothing).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let mut probe = UnixStream::connect(&s.marks).expect("connecting");
        probe.shutdown(std::net::Shutdown::Write).expect("shutdown");
        let said = answer(&mut probe);
        if !said.contains("serves 64 clients at once") {
            assert_eq!(said, "error the mark ended before its newline\n");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the dropped clients' places never came back"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    let mut long = UnixStream::connect(&s.marks).expect("connecting");
    long.write_all(&[b'x'; 5000]).expect("sending");
    assert_eq!(answer(&mut long), "error a mark is at most 4096 bytes\n");

    // A client that gives up mid-mark (no newline) records nothing.
    let mut half = UnixStream::connect(&s.marks).expect("connecting");
    half.write_all(b"half a mark").expect("sending");
    half.shutdown(std::net::Shutdown::Write).expect("shutdown");
    assert_eq!(
        answer(&mut half),
        "error the mark ended before its newline\n"
    );

    assert!(s.stop().success(), "{}", s.log_text());
    assert!(!s.marks.exists(), "the mark socket goes with the server");
    let bytes = std::fs::read(&s.log).expect("the log");
    let mut r = Reader::new(&bytes[..]).expect("header");
    let mut texts = Vec::new();
    while let Some(rec) = r.next_record().expect("record") {
        if rec.head.kind == Kind::Mark {
            texts.push(String::from_utf8_lossy(rec.payload).into_owned());
        }
    }
    assert_eq!(texts, vec!["after five idle"]);
}

/// A mark client whose server never answers gives up at its --timeout
/// with a clear error; a --mark-socket that a live server answers on is
/// refused (and stays that server's).
#[test]
fn a_silent_mark_socket_times_out_and_a_live_one_is_not_taken() {
    let dir = TempDir::new("mark-silent");
    let path = dir.path().join("silent.sock");
    // Bound and listening, never accepting: connecting works, no answer.
    let silent = UnixListener::bind(&path).expect("binding");
    let p = path.to_str().expect("UTF-8 path");
    fails_with(
        &["write-log", "mark", p, "hello", "--timeout", "0.5"],
        &format!("no answer from {p} within 0.5 s (--timeout): is the server stuck?"),
    );
    fails_with(
        &["write-log", "mark", p, "hello", "--timeout", "0"],
        "--timeout 0: must be more than 0 and at most 86400 seconds",
    );

    let log = dir.file("w.wlog");
    let nbd = dir.file("nbd.sock");
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["serve", "--export", "d=mem:1m", "--write-log", &log])
        .args(["--mark-socket", p, "--unix", &nbd])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running elevator serve");
    let status = wait_guarded(&mut child, "serve on a live mark socket");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).expect("reading stderr");
    }
    assert!(!status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "--mark-socket {p}: a server is listening on it (Address already in use)"
        )),
        "{err}"
    );
    assert!(path.exists(), "the live socket stays");
    drop(silent);
}
