//! The server's limits under hostile clients, on worker threads: a client
//! that sends requests and never reads the replies holds at most its byte
//! cap and does not stall others; many such clients together keep the
//! server's memory (its peak RSS, measured in a process of its own) within
//! `max_total_bytes` and a fixed margin; idle and stalled connections time
//! out when asked; every connection is counted against `max_connections`
//! whichever worker serves it; bad thread and limit settings are refused
//! with a clear error.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Client, TestServer, chain, pattern, wait_for};
use elevator_nbd::proto::{self, cmd};
use elevator_nbd::{ExportSpec, Server, ServerConfig};

/// A client of `server`'s export `disk` that sends up to `count` reads of
/// 1 MiB (over the first `span` MiB) and reads no reply, until a write of
/// its requests blocks for 200 ms: the client, and how many it sent.
fn read_without_reading_replies(server: &TestServer, count: u64, span: u64) -> (Client, u64) {
    let mut c = Client::open(&server.sock, "disk");
    c.s.set_write_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut sent = 0u64;
    for i in 0..count {
        let r = proto::encode_request(&proto::Request::unflagged(
            cmd::READ,
            i,
            (i % span) << 20,
            1 << 20,
        ));
        if c.s.write_all(&r).is_err() {
            break;
        }
        sent += 1;
    }
    (c, sent)
}

#[test]
fn a_client_that_reads_no_replies_holds_its_cap_and_stalls_nobody() {
    let server = TestServer::start_with(&["disk=mem:64m"], |c| {
        c.threads = 2;
        c.max_conn_bytes = 4 << 20;
        c.max_inflight = 1024;
    });
    // It asks for 1 MiB reads, one after another, and never reads: its
    // socket buffers fill, then the server holds replies up to its cap and
    // stops reading from it.
    let (greedy, sent) = read_without_reading_replies(&server, 2000, 64);
    assert!(
        sent < 2000,
        "the server read all {sent} requests of a client that takes no replies"
    );
    // Others are served meanwhile, on whichever worker they land.
    for k in 0..4u64 {
        let mut c = Client::open(&server.sock, "disk");
        let data = pattern(k, 64 << 10);
        assert_eq!(c.write_at(1, 0, k << 20, &data), 0);
        let got = c.read_at(2, 0, k << 20, 64 << 10);
        assert_eq!(got.as_deref(), Ok(&data[..]), "client {k}");
        c.disc();
    }
    drop(greedy);
    server.wait_log("unix:");
    server.stop();
}

#[test]
fn clients_sharing_a_tight_budget_all_finish() {
    let server = TestServer::start_with(&["disk=mem:64m"], |c| {
        c.threads = 2;
        c.max_total_bytes = 6 << 20;
    });
    // Alone, a request bigger than the whole budget is served.
    let mut c = Client::open(&server.sock, "disk");
    let big = pattern(7, 16 << 20);
    assert_eq!(c.write_at(1, 0, 0, &big), 0);
    let got = c.read_at(2, 0, 0, 16 << 20);
    assert!(
        got.as_deref() == Ok(&big[..]),
        "a 16 MiB read under a 6 MiB cap"
    );
    c.disc();
    // Clients on both workers pipeline more reads than fit at once: each
    // waits for bytes the others give back, and every one is answered.
    let clients: Vec<_> = (0..4u64)
        .map(|k| {
            let sock = server.sock.clone();
            let want = big.clone();
            std::thread::spawn(move || {
                let mut c = Client::open(&sock, "disk");
                for i in 0..16u64 {
                    c.request(0, cmd::READ, i, ((i + k) % 8) << 21, 2 << 20);
                }
                for _ in 0..16 {
                    match c.read_reply(|_| 2 << 20) {
                        common::Reply::Simple {
                            cookie,
                            error: 0,
                            data: Some(d),
                        } => {
                            let at = (((cookie + k) % 8) << 21) as usize;
                            assert!(d == want[at..at + (2 << 20)], "client {k} read {cookie}");
                        }
                        other => panic!("client {k}: {other:?}"),
                    }
                }
                c.disc();
            })
        })
        .collect();
    for t in clients {
        t.join().expect("a client failed");
    }
    server.stop();
}

#[test]
fn idle_and_stalled_connections_time_out_when_asked() {
    let server = TestServer::start_with(&["disk=mem:16m"], |c| {
        c.threads = 2;
        c.idle_timeout = Some(Duration::from_millis(300));
        c.max_conn_bytes = 1 << 20;
    });
    let mut idle = Client::open(&server.sock, "disk");
    let line = server.wait_log("sent nothing");
    assert!(line.contains("idle timeout"), "{line}");
    idle.expect_closed("an idle connection past the idle timeout");
    // One that asks and never reads its replies.
    let (_stalled, _) = read_without_reading_replies(&server, 256, 16);
    let line = server.wait_log("took none of its replies");
    assert!(line.contains("idle timeout"), "{line}");
    // A busy one is not idle.
    let mut busy = Client::open(&server.sock, "disk");
    for i in 0..20u64 {
        assert_eq!(busy.write_at(i, 0, 0, &pattern(i, 4096)), 0);
        std::thread::sleep(Duration::from_millis(30));
    }
    busy.disc();
    server.stop();
}

#[test]
fn connections_on_every_worker_count_against_the_cap() {
    let server = TestServer::start_with(&["disk=mem:16m"], |c| {
        c.threads = 4;
        c.max_connections = 4;
    });
    // Three past the handshake (spread over workers); the fourth slot is
    // the reserve for clients past the handshake, so a fifth is refused.
    let open: Vec<Client> = (0..4).map(|_| Client::open(&server.sock, "disk")).collect();
    let mut extra = Client::connect(&server.sock);
    let refused = wait_for("the fifth connection refused", || {
        server
            .log_lines()
            .into_iter()
            .find(|l| l.contains("refused: too many connections"))
    });
    assert!(refused.contains("all 4 connection slots"), "{refused}");
    extra.expect_closed("a connection past max_connections");
    drop(open);
    server.stop();
}

#[test]
fn bad_thread_and_limit_settings_are_refused() {
    let dir = common::temp_dir("limits");
    let sock = dir.path().join("s.sock");
    let disk = ExportSpec::parse("disk=mem:1m").expect("parses");
    type Tweak = fn(&mut ServerConfig);
    let cases: [(Tweak, &str); 5] = [
        (|c| c.threads = 0, "0 worker threads"),
        (|c| c.threads = 65, "65 worker threads"),
        (|c| c.max_conn_bytes = 0, "byte limit of 0"),
        (|c| c.max_total_bytes = 0, "byte limit of 0"),
        (
            |c| c.idle_timeout = Some(Duration::ZERO),
            "idle timeout of 0",
        ),
    ];
    for (tweak, needle) in cases {
        let mut cfg = ServerConfig {
            exports: vec![disk.clone()],
            unix: vec![sock.clone()],
            ..ServerConfig::default()
        };
        tweak(&mut cfg);
        let e = Server::bind(cfg, Box::new(|_: &str| {}))
            .map(|_| ())
            .expect_err(needle);
        let msg = chain(&e);
        assert!(msg.contains(needle), "{msg}");
    }
}

const MIB: u64 = 1 << 20;
/// Set in the environment of the child process that
/// [`rss_probe_in_a_process_of_its_own`] runs: what it serves and sends.
const PROBE: &str = "ELEVATOR_NBD_RSS_PROBE";

/// The server's peak RSS while `readers` connections each send 8 reads of
/// 32 MiB and `writers` connections each send 2 writes of 32 MiB, none of
/// them reading a reply, against `--max-total-bytes` of `cap_mib`, with
/// `threads` workers: measured in a child process running only
/// [`rss_probe_in_a_process_of_its_own`] (its peak is the server's; the
/// clients hold next to nothing). In MiB.
fn peak_rss_mib(readers: u32, writers: u32, cap_mib: u64, threads: usize) -> u64 {
    let exe = std::env::current_exe().expect("the test binary");
    let out = Command::new(exe)
        .args([
            "--exact",
            "limits::rss_probe_in_a_process_of_its_own",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE, format!("{readers},{writers},{cap_mib},{threads}"))
        .output()
        .expect("running the probe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the probe failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // (The harness may print the test's name on the same line.)
    stdout
        .split("peak_rss_mib=")
        .nth(1)
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no peak in the probe's output: {stdout}"))
}

#[test]
fn clients_that_never_read_their_replies_keep_the_server_within_its_total_cap() {
    // The case: 16 connections, 8 reads of 32 MiB each, 64 MiB.
    let peak = peak_rss_mib(16, 0, 64, 2);
    eprintln!("16 readers, 64 MiB cap: peak RSS {peak} MiB");
    assert!(
        peak <= 64 + 256,
        "16 readers that never read: peak RSS {peak} MiB, over --max-total-bytes 64 MiB + 256 MiB"
    );
    // Readers and writers mixed, more connections, more workers.
    let peak = peak_rss_mib(32, 8, 128, 4);
    eprintln!("32 readers and 8 writers, 128 MiB cap: peak RSS {peak} MiB");
    assert!(
        peak <= 128 + 256,
        "32 readers and 8 writers that never read: peak RSS {peak} MiB, over \
         --max-total-bytes 128 MiB + 256 MiB"
    );
}

/// Run by [`peak_rss_mib`] in a process of its own (it does nothing
/// otherwise): serve a sparse 1 GiB file (reads of its holes fill whole
/// buffers) to the clients [`PROBE`] names, watch the process's peak RSS
/// until it has not grown for 2 s (or is over any bound the test could
/// accept), print it, and exit without tidying up (the clients never read).
#[test]
fn rss_probe_in_a_process_of_its_own() {
    let Ok(spec) = std::env::var(PROBE) else {
        return;
    };
    let v: Vec<u64> = spec.split(',').filter_map(|x| x.parse().ok()).collect();
    let [readers, writers, cap_mib, threads] = v[..] else {
        panic!("{PROBE}={spec}: expected READERS,WRITERS,CAP_MIB,THREADS");
    };
    let dir = common::temp_dir_in(Path::new(env!("CARGO_TARGET_TMPDIR")), "rss");
    let backing = dir.path().join("disk.img");
    std::fs::File::create(&backing)
        .and_then(|f| f.set_len(1 << 30))
        .expect("the backing file");
    let server = TestServer::start_with(&[&format!("disk=file:{}", backing.display())], |c| {
        c.threads = threads as usize;
        c.max_total_bytes = cap_mib * MIB;
    });
    let request = |kind: u16, i: u64, j: u64| {
        elevator_nbd::proto::encode_request(&elevator_nbd::proto::Request {
            flags: 0,
            kind,
            cookie: i << 8 | j,
            offset: ((i * 8 + j) * 32 * MIB) % (1 << 30),
            len: 32 << 20,
        })
    };
    let mut held = Vec::new();
    for i in 0..readers {
        let mut c = Client::open(&server.sock, "disk");
        for j in 0..8 {
            c.send(&request(cmd::READ, i, j));
        }
        held.push(c);
    }
    // Writers send their payloads on threads of their own: the server
    // stops reading them when they do not fit.
    for i in readers..readers + writers {
        let mut c = Client::open(&server.sock, "disk");
        std::thread::spawn(move || {
            let chunk = vec![0x5au8; MIB as usize];
            for j in 0..2 {
                c.send(&request(cmd::WRITE, i, j));
                for _ in 0..32 {
                    if c.s.write_all(&chunk).is_err() {
                        return;
                    }
                }
            }
            // Keep the connection open, never reading.
            std::thread::park();
        });
    }
    let hwm = || -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmHWM")
            / 1024
    };
    let (mut peak, mut since, start) = (hwm(), Instant::now(), Instant::now());
    while since.elapsed() < Duration::from_secs(2)
        && start.elapsed() < common::DEADLINE
        && peak <= cap_mib + 1024
    {
        std::thread::sleep(Duration::from_millis(50));
        let now = hwm();
        if now > peak {
            (peak, since) = (now, Instant::now());
        }
    }
    println!("peak_rss_mib={peak}");
    let _ = std::io::stdout().flush();
    drop(held);
    std::process::exit(0);
}
