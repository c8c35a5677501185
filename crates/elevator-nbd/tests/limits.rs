//! The server's limits under hostile clients, on worker threads: a client
//! that sends requests and never reads the replies holds at most its byte
//! cap and does not stall others; idle and stalled connections time out
//! when asked; every connection is counted against `max_connections`
//! whichever worker serves it; bad thread and limit settings are refused
//! with a clear error.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{Client, TestServer, chain, pattern, wait_for};
use elevator_nbd::proto::cmd;
use elevator_nbd::{ExportSpec, Server, ServerConfig};

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
    let mut greedy = Client::open(&server.sock, "disk");
    greedy
        .s
        .set_write_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut sent = 0u64;
    for i in 0..2000u64 {
        let r = elevator_nbd::proto::encode_request(&elevator_nbd::proto::Request {
            flags: 0,
            kind: cmd::READ,
            cookie: i,
            offset: (i % 64) << 20,
            len: 1 << 20,
        });
        if greedy.s.write_all(&r).is_err() {
            break;
        }
        sent += 1;
    }
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
    let mut stalled = Client::open(&server.sock, "disk");
    stalled
        .s
        .set_write_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    for i in 0..256u64 {
        let r = elevator_nbd::proto::encode_request(&elevator_nbd::proto::Request {
            flags: 0,
            kind: cmd::READ,
            cookie: i,
            offset: (i % 16) << 20,
            len: 1 << 20,
        });
        if stalled.s.write_all(&r).is_err() {
            break;
        }
    }
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
