//! A soak: 64 real NBD clients (libnbd, driven from Python by
//! `tests/soak.py` with its asynchronous API) against a server with two
//! worker threads and a memory export, over TCP loopback and a Unix socket
//! at once, for [`SOAK_SECONDS`]. They read, write and flush at random, and
//! go away at random moments: with DISC once idle, with DISC while requests
//! are in flight, abruptly with requests in flight, possibly half-way
//! through sending a write, or in the handshake; new clients take their
//! places. Afterwards the server must still serve (a fresh `nbdinfo` on
//! both transports, and a raw client), its memory must have stayed within
//! [`rss_bound`], and every write a client saw complete must still be on the
//! export (a block may instead hold a write that was in flight when its
//! client vanished: such a write may land at any time).
//!
//! The clients need libnbd's Python bindings for Debian's `/usr/bin/python3`
//! (package python3-libnbd, which `scripts/test` installs); without them the
//! test fails, naming the package.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{Json, JsonExt, TestServer, assert_serves, run, run_ok, temp_dir};

const MIB: u64 = 1 << 20;

/// The export's size: 1 MiB (256 blocks of 4 KiB) for each client.
const EXPORT_BYTES: u64 = 64 * MIB;

/// Clients connected at once.
const CLIENTS: usize = 64;

/// How long the clients run, unless `ELEVATOR_SOAK_SECONDS` says otherwise
/// (for longer soaks by hand). The whole test takes a few seconds more.
const SOAK_SECONDS: f64 = 20.0;

/// The clients' random choices come from this seed (their timing does not).
const SEED: u64 = 0x50AC;

/// Debian's Python, which the python3-libnbd package serves (a `python3`
/// earlier on the `PATH`, from pyenv say, may not have the `nbd` module).
const PYTHON: &str = "/usr/bin/python3";

/// What the server's resident memory may grow to, from `start` (KiB): the
/// export's memory (filled by the clients' writes), plus 64 MiB for
/// everything else (buffers, connection state, the log).
fn rss_bound(start_kib: u64) -> u64 {
    start_kib + (EXPORT_BYTES + 64 * MIB) / 1024
}

/// This process's resident set (the server runs on one of its threads), in
/// KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/self/status:\n{status}"))
}

/// Fail, naming the package, unless [`PYTHON`] can import libnbd.
fn require_python_libnbd() {
    let ok = Command::new(PYTHON)
        .args(["-c", "import nbd"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{PYTHON} cannot import nbd, and this test needs it: install the Debian package \
         python3-libnbd (apt-get install python3-libnbd), or run the tests with scripts/test, \
         which installs every tool they use"
    );
}

/// Run `tests/soak.py` with `args`; return its JSON report, failing the
/// test (with its stderr) if it failed.
fn soak_py(args: &[&str]) -> Json {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/soak.py");
    let mut cmd = Command::new(PYTHON);
    cmd.arg(&script).args(args);
    let what = format!("{cmd:?}");
    let out = run(&mut cmd);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stderr}\n{stdout}",
        out.status
    );
    if !stderr.trim().is_empty() {
        eprintln!("{stderr}");
    }
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{what}: its report is not JSON: {e}:\n{stdout}"))
}

/// A count in a report (absent means none).
fn count(report: &Json, key: &str) -> u64 {
    report.get(key).map_or(0, |v| v.num() as u64)
}

#[test]
fn sixty_four_clients_come_and_go() {
    elevator_testkit::needs!("/usr/bin/python3", "nbdinfo");
    require_python_libnbd();
    let seconds = std::env::var("ELEVATOR_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(SOAK_SECONDS);
    let server = TestServer::start_with(&[&format!("soak=mem:{EXPORT_BYTES}")], |cfg| {
        cfg.threads = 2;
        cfg.tcp = vec!["127.0.0.1:0".parse().expect("address")];
    });
    let unix_uri = server.uri("soak");
    let tcp_uri = format!("nbd://{}/soak", server.tcp[0]);
    let dir = temp_dir("soak");
    let state = dir.path().join("state.json");
    let state = state.to_str().expect("a UTF-8 temporary path");
    let rss_start = rss_kib();

    let report = soak_py(&[
        "soak",
        "--uri",
        &unix_uri,
        "--uri",
        &tcp_uri,
        "--size",
        &EXPORT_BYTES.to_string(),
        "--clients",
        &CLIENTS.to_string(),
        "--seconds",
        &seconds.to_string(),
        "--seed",
        &SEED.to_string(),
        "--state",
        state,
    ]);
    let rss_after_soak = rss_kib();
    eprintln!("soak: {report}");
    let connections = count(&report, "connections");
    assert!(
        connections > CLIENTS as u64,
        "clients came and went: {report}"
    );
    for key in [
        "reads",
        "writes",
        "flushes",
        "connections_tcp",
        "connections_unix",
    ] {
        assert!(count(&report, key) > 0, "no {key}: {report}");
    }
    for key in [
        "ended_disc_idle",
        "ended_disc_in_flight",
        "ended_abruptly_in_flight",
        "ended_mid_request",
    ] {
        assert!(count(&report, key) > 0, "no client {key}: {report}");
    }
    for key in ["errors", "read_mismatches", "connections_lost"] {
        assert_eq!(count(&report, key), 0, "{key}: {report}");
    }

    // Every connection has ended on the server's side (it logs a line
    // once nothing of it is in flight), so nothing more will land.
    let lines = server.wait_log_count(connections as usize);
    let verify = soak_py(&["verify", "--uri", &unix_uri, "--state", state]);
    eprintln!("verify: {verify}");
    assert_eq!(
        count(&verify, "blocks_last_completed") + count(&verify, "blocks_ghost"),
        EXPORT_BYTES / 4096,
        "every block checked: {verify}"
    );

    // The server still serves, on both transports.
    for uri in [&unix_uri, &tcp_uri] {
        let out = run_ok(Command::new("nbdinfo").arg("--size").arg(uri));
        assert_eq!(out.trim(), EXPORT_BYTES.to_string(), "nbdinfo --size {uri}");
    }
    assert_serves(&server, "soak");

    // How the server saw the connections end; none was refused, and no
    // request got an error.
    let mut endings: BTreeMap<String, usize> = BTreeMap::new();
    for l in &lines {
        let why = l.rsplit_once("errors; ").map_or(l.as_str(), |(_, w)| w);
        *endings.entry(why.to_string()).or_default() += 1;
    }
    eprintln!(
        "the server's view of {} connections: {endings:#?}",
        lines.len()
    );
    assert!(
        lines.iter().all(|l| l.contains(" 0 errors")),
        "{:#?}",
        lines
            .iter()
            .filter(|l| !l.contains(" 0 errors"))
            .collect::<Vec<_>>()
    );

    let rss_end = rss_kib();
    let bound = rss_bound(rss_start);
    eprintln!(
        "server RSS: {rss_start} KiB at the start, {rss_after_soak} KiB after the soak, \
         {rss_end} KiB at the end (growth {} KiB; bound {bound} KiB)",
        rss_end.saturating_sub(rss_start)
    );
    for (when, rss) in [("after the soak", rss_after_soak), ("at the end", rss_end)] {
        assert!(
            rss <= bound,
            "RSS {when} is {rss} KiB: more than {bound} KiB (start {rss_start} KiB + the \
             export + 64 MiB)"
        );
    }
    assert!(server.running(), "the server stopped");
    server.stop();
}
