//! Faults injected under an export reach NBD clients as errors, and never
//! hang them: latent sector errors fail reads there (and data elsewhere
//! reads back) until a write repairs them; completions held back by spikes
//! and timeouts are answered when their time comes (the server's event
//! loop wakes for them); a device that vanishes fails every later request.

use crate::common;

use std::time::{Duration, Instant};

use common::{Client, TestServer, pattern};
use elevator_nbd::proto::cmd;

/// NBD's EIO.
const EIO: u32 = 5;

#[test]
fn latent_sector_errors_fail_reads_there_and_nowhere_else() {
    // Sectors 64..72: the 4 KiB block at byte 32768.
    let server = TestServer::start(&["disk=mem:1m,lse_sectors=64-72"]);
    for structured in [false, true] {
        let mut c = if structured {
            Client::open_structured(&server.sock, "disk")
        } else {
            Client::open(&server.sock, "disk")
        };
        let data = pattern(1, 4096);
        assert_eq!(c.write_at(1, 0, 0, &data), 0);
        assert_eq!(c.read_at(2, 0, 0, 4096), Ok(data.clone()), "data elsewhere");
        assert_eq!(c.read_at(3, 0, 32768, 4096), Err(EIO), "the bad block");
        assert_eq!(c.read_at(4, 0, 30720, 4096), Err(EIO), "across its start");
        assert_eq!(c.read_at(5, 0, 36864, 4096).map(|d| d.len()), Ok(4096));
        c.disc();
    }
    // A write over the bad sectors repairs them.
    let mut c = Client::open(&server.sock, "disk");
    let data = pattern(2, 4096);
    assert_eq!(c.write_at(6, 0, 32768, &data), 0);
    assert_eq!(c.read_at(7, 0, 32768, 4096), Ok(data));
    c.disc();
    server.stop();
}

#[test]
fn held_completions_are_answered_when_their_time_comes() {
    let server = TestServer::start(&[
        "spiky=mem:1m,spike_rate=1,spike_ms=20",
        "slow=mem:1m,timeout_rate=1,timeout_ms=50",
    ]);
    let mut c = Client::open(&server.sock, "spiky").with_read_timeout(Duration::from_secs(30));
    let data = pattern(3, 8192);
    assert_eq!(c.write_at(1, 0, 4096, &data), 0);
    assert_eq!(c.read_at(2, 0, 4096, 8192), Ok(data));
    c.disc();
    let mut c = Client::open(&server.sock, "slow").with_read_timeout(Duration::from_secs(30));
    assert_eq!(c.read_at(3, 0, 0, 4096), Err(EIO), "timed out");
    assert_eq!(c.command(4, 0, cmd::FLUSH, 0, 0), EIO, "timed out");
    c.disc();
    server.stop();
}

#[test]
fn a_vanished_export_fails_every_later_request_without_hanging() {
    let started = Instant::now();
    let server = TestServer::start(&["gone=mem:1m,vanish_at=1s"]);
    let mut c = Client::open(&server.sock, "gone").with_read_timeout(Duration::from_secs(30));
    // Right after the start: still there (this takes far less than 1 s).
    let data = pattern(4, 4096);
    assert_eq!(c.write_at(1, 0, 0, &data), 0);
    let wait = Duration::from_millis(1100).saturating_sub(started.elapsed());
    std::thread::sleep(wait);
    assert_eq!(c.read_at(2, 0, 0, 4096), Err(EIO));
    assert_eq!(c.write_at(3, 0, 0, &data), EIO);
    assert_eq!(c.command(4, 0, cmd::FLUSH, 0, 0), EIO);
    assert_eq!(c.command(5, 0, cmd::TRIM, 0, 4096), EIO);
    // Many at once: every one answered.
    for cookie in 10..42 {
        c.request(0, cmd::READ, cookie, cookie * 4096, 4096);
    }
    let mut answered = 0;
    for _ in 10..42 {
        let (_, error) = c.read_simple();
        assert_eq!(error, EIO);
        answered += 1;
    }
    assert_eq!(answered, 32);
    // A new connection fails too.
    let mut d = Client::open(&server.sock, "gone").with_read_timeout(Duration::from_secs(30));
    assert_eq!(d.read_at(1, 0, 0, 512), Err(EIO));
    c.disc();
    d.disc();
    server.stop();
}
