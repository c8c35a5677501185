//! The server against a raw client speaking bytes: every kind of bad input
//! the protocol allows for, checked against the answer `doc/proto.md`
//! prescribes; after each, a fresh well-behaved client must still be served
//! (a write and read round trip on a new connection).

use crate::common;

use std::io::Write;
use std::net::Shutdown;
use std::time::Duration;

use Ask::{Command, ReadAt, WriteAt};
use common::{
    Client, ExportInfo, Reply, TestServer, assert_one_reply_each, assert_serves, check_read,
    info_data, pattern,
};
use elevator_nbd::proto::{self, cflag, chunk, cmd, err, info, opt, rep, tflag};
use elevator_nbd::{ExportSpec, Server, ServerConfig, ServerError};

const MIB: u64 = 1 << 20;
const CAP: u32 = 32 << 20;

/// The exports most tests use: a plain disk (for the fresh-client check), a
/// read-only one, one with 4096-byte blocks, one that fails I/O touching
/// 512-byte sectors 2048-2055 (bytes 1 MiB to 1 MiB + 4 KiB), and a
/// simulated disk paced by the real clock.
const EXPORTS: [&str; 5] = [
    "disk=mem:64m",
    "ro=mem:16m,ro",
    "big=mem:64m,lbs=4096",
    "bad=mem:16m,fail_sectors=2048-2056",
    "slow=hdd-7200,scheduler=mq-deadline",
];

fn server() -> TestServer {
    TestServer::start(&EXPORTS)
}

/// One request of a table of refused requests.
enum Ask<'a> {
    /// READ with flags, at offset, of length.
    ReadAt(u16, u64, u32),
    /// WRITE with flags, at offset, of these bytes.
    WriteAt(u16, u64, &'a [u8]),
    /// Another command: flags, kind, offset, length.
    Command(u16, u16, u64, u32),
}

/// Send `asks` in order as cookies `first`, `first + 1`, ...; each must be
/// refused with error `want`, its `&str` naming it in a failure.
fn expect_refused(c: &mut Client, first: u64, want: u32, asks: &[(Ask, &str)]) {
    for (cookie, (ask, what)) in (first..).zip(asks) {
        match *ask {
            ReadAt(flags, offset, len) => {
                assert_eq!(c.read_at(cookie, flags, offset, len), Err(want), "{what}");
            }
            WriteAt(flags, offset, data) => {
                assert_eq!(c.write_at(cookie, flags, offset, data), want, "{what}");
            }
            Command(flags, kind, offset, len) => {
                assert_eq!(c.command(cookie, flags, kind, offset, len), want, "{what}");
            }
        }
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().expect("4 bytes"))
}

// ---------------------------------------------------------------------------
// Handshake.

#[test]
fn bad_client_flags_close_the_connection() {
    let server = server();
    // Not fixed newstyle; an unknown flag; both known flags plus junk.
    for flags in [0u32, proto::CLIENT_NO_ZEROES, 1 | 4, 0xFFFF_FFFF] {
        let mut c = Client::connect(&server.sock);
        c.greeting();
        c.send(&flags.to_be_bytes());
        c.expect_closed(&format!("client flags {flags:#x}"));
    }
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn wrong_option_magic_closes_the_connection() {
    let server = server();
    let mut c = Client::start(&server.sock);
    let mut bad = Client::option_bytes(opt::LIST, &[]);
    bad[0] ^= 0x80;
    c.send(&bad);
    c.expect_closed("option with a bad magic");
    // Also after a good option.
    let mut c = Client::start(&server.sock);
    assert_eq!(c.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
    c.send(&[0u8; proto::OPTION_HEADER_LEN]);
    c.expect_closed("option header of zeroes");
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn wrong_request_magic_closes_the_connection() {
    let server = server();
    let mut c = Client::open(&server.sock, "disk");
    assert_eq!(c.write_at(1, 0, 0, &pattern(1, 4096)), 0);
    let mut r = proto::encode_request(&proto::Request {
        flags: 0,
        kind: cmd::READ,
        cookie: 2,
        offset: 0,
        len: 4096,
    });
    r[3] ^= 1;
    c.send(&r);
    c.expect_closed("request with a bad magic");
    assert_serves(&server, "disk");
    server.stop();
}

/// Send the start of a message, as truncated-message case `case` says.
fn send_truncated(c: &mut Client, case: usize) {
    let go = Client::option_bytes(opt::GO, &info_data("disk", &[]));
    let read = proto::encode_request(&proto::Request {
        flags: 0,
        kind: cmd::READ,
        cookie: 7,
        offset: 0,
        len: 4096,
    });
    if case == 0 {
        return; // nothing at all
    }
    c.greeting();
    match case {
        1 => c.send(&[0, 0]), // half the client flags
        2 => {
            // half an option header
            c.send(&3u32.to_be_bytes());
            c.send(&Client::option_bytes(opt::LIST, &[])[..10]);
        }
        3 => {
            // an option without the end of its data
            c.send(&3u32.to_be_bytes());
            c.send(&go[..go.len() - 3]);
        }
        _ => {
            // half a request
            c.send(&3u32.to_be_bytes());
            c.send(&go);
            c.send(&read[..11]);
        }
    }
}

#[test]
fn truncated_messages_then_disconnect() {
    let server = server();
    for case in 0..5 {
        let before = server.log_lines().len();
        let mut c = Client::connect(&server.sock);
        send_truncated(&mut c, case);
        drop(c);
        // The server notices, logs the connection's end, and goes on.
        let lines = server.wait_log_count(before + 1);
        eprintln!("case {case}: {}", lines[before]);
        assert_serves(&server, "disk");
    }
    server.stop();
}

#[test]
fn unknown_options_are_unsupported_and_the_handshake_goes_on() {
    let server = server();
    let mut c = Client::start(&server.sock);
    for (option, data) in [
        (42u32, &b"whatever"[..]),
        (opt::STARTTLS, &[][..]),
        (4, &[][..]),
        (opt::EXTENDED_HEADERS, &[][..]),
        (0, &[][..]),
        (0xFFFF_FFFF, &[1, 2, 3][..]),
    ] {
        let r = c.opt(option, data);
        assert_eq!(
            (r.option, r.kind),
            (option, rep::ERR_UNSUP),
            "option {option}"
        );
    }
    let r = c.opt(opt::STRUCTURED_REPLY, &[]);
    assert_eq!(r.kind, rep::ACK);
    c.structured = true;
    c.go("disk");
    let data = pattern(2, 8192);
    assert_eq!(c.write_at(1, 0, 4096, &data), 0);
    check_read(c.read_at(2, 0, 4096, 8192), &data, "READ back");
    c.disc();
    c.expect_closed("after DISC");
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn oversized_options_are_too_big_and_the_handshake_goes_on() {
    let server = server();
    let mut c = Client::start(&server.sock);
    let max = elevator_nbd::conn::MAX_OPTION as usize;
    for (option, len) in [
        (42u32, max + 1),
        (opt::GO, max + 1),
        (opt::INFO, 4 << 20),
        (opt::LIST, 1 << 20),
    ] {
        let r = c.opt(option, &vec![0xA5; len]);
        assert_eq!(
            (r.option, r.kind),
            (option, rep::ERR_TOO_BIG),
            "option {option} of {len} bytes"
        );
    }
    // The largest option kept is parsed (and refused for what it is).
    let r = c.opt(opt::LIST, &vec![0; max]);
    assert_eq!(r.kind, rep::ERR_INVALID);
    c.go("disk");
    let data = pattern(3, 4096);
    assert_eq!(c.write_at(1, 0, 0, &data), 0);
    check_read(c.read_at(2, 0, 0, 4096), &data, "READ back");
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn malformed_info_and_go_are_invalid() {
    let server = server();
    let mut c = Client::start(&server.sock);
    let mut lie_count = info_data("disk", &[info::NAME]);
    let n = lie_count.len();
    lie_count[n - 3] = 2; // says two requests, has one
    let mut trailing = info_data("disk", &[]);
    trailing.push(0);
    let mut long_name = info_data("disk", &[]);
    long_name[..4].copy_from_slice(&100u32.to_be_bytes());
    let mut huge_name = info_data("disk", &[]);
    huge_name[..4].copy_from_slice(&u32::MAX.to_be_bytes());
    let mut not_utf8 = 2u32.to_be_bytes().to_vec();
    not_utf8.extend_from_slice(&[0xC3, 0x28, 0, 0]);
    let cases: [(&str, Vec<u8>); 7] = [
        ("empty", Vec::new()),
        ("shorter than 6 bytes", vec![0, 0, 0, 0, 0]),
        ("request count that lies", lie_count),
        ("a trailing byte", trailing),
        ("name length past the end", long_name),
        ("name length 2^32-1", huge_name),
        ("name not UTF-8", not_utf8),
    ];
    for option in [opt::INFO, opt::GO] {
        for (what, data) in &cases {
            let r = c.opt(option, data);
            assert_eq!(
                (r.option, r.kind),
                (option, rep::ERR_INVALID),
                "option {option}, {what}"
            );
        }
    }
    for option in [opt::LIST, opt::STRUCTURED_REPLY] {
        let r = c.opt(option, b"junk");
        assert_eq!(
            (r.option, r.kind),
            (option, rep::ERR_INVALID),
            "option {option} with data"
        );
    }
    // Still negotiating: INFO then GO work.
    let i = c.info(opt::INFO, "disk", &[]).expect("INFO");
    assert_eq!(i.size, 64 * MIB);
    c.go("disk");
    let data = pattern(4, 4096);
    assert_eq!(c.write_at(1, 0, 0, &data), 0);
    check_read(c.read_at(2, 0, 0, 4096), &data, "READ back");
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn unknown_export_via_info_or_go_is_unknown() {
    let server = server();
    let mut c = Client::start(&server.sock);
    for option in [opt::INFO, opt::GO] {
        for name in ["nope", "DISK", "disk ", "disk\u{e9}"] {
            let r = c
                .info(option, name, &[info::BLOCK_SIZE])
                .expect_err("unknown export");
            assert_eq!(r.kind, rep::ERR_UNKNOWN, "option {option} for {name:?}");
        }
    }
    c.go("disk");
    assert_eq!(c.write_at(1, 0, 0, &pattern(5, 512)), 0);
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn unknown_export_via_export_name_closes() {
    let server = server();
    let mut c = Client::start(&server.sock);
    c.send_option(opt::EXPORT_NAME, b"nope");
    c.expect_closed("EXPORT_NAME of an unknown export");
    assert_serves(&server, "disk");
    server.stop();
}

/// `NBD_OPT_EXPORT_NAME` cannot be answered with an option reply (the client
/// reads size and flags): an export name the server cannot take must end
/// the session.
#[test]
fn export_name_that_is_not_utf8_closes() {
    let server = server();
    let mut c = Client::start(&server.sock);
    c.send_option(opt::EXPORT_NAME, &[0xFF, 0xFE, b'd']);
    c.expect_closed("EXPORT_NAME that is not UTF-8");
    assert_serves(&server, "disk");
    server.stop();
}

/// As above, for an export name longer than the server keeps.
#[test]
fn export_name_too_long_closes() {
    let server = server();
    let mut c = Client::start(&server.sock);
    let max = elevator_nbd::conn::MAX_OPTION as usize;
    c.send_option(opt::EXPORT_NAME, &vec![b'd'; max + 1]);
    c.expect_closed("EXPORT_NAME longer than the server keeps");
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn export_name_enters_transmission() {
    let server = server();
    let flags = tflag::HAS_FLAGS
        | tflag::SEND_FLUSH
        | tflag::SEND_FUA
        | tflag::SEND_TRIM
        | tflag::SEND_WRITE_ZEROES
        | tflag::SEND_CACHE
        | tflag::CAN_MULTI_CONN;
    // With NO_ZEROES: size and flags only.
    let mut c = Client::start(&server.sock);
    c.send_option(opt::EXPORT_NAME, b"disk");
    let r = c.read_vec(10);
    assert_eq!(u64::from_be_bytes(r[..8].try_into().expect("8")), 64 * MIB);
    assert_eq!(u16::from_be_bytes([r[8], r[9]]), flags);
    let data = pattern(6, 4096);
    assert_eq!(c.write_at(1, 0, 0, &data), 0);
    check_read(c.read_at(2, 0, 0, 4096), &data, "READ back");
    // Without it: 124 zeroes follow. The empty name is the first export.
    let mut c = Client::connect(&server.sock);
    c.greeting();
    c.send(&proto::CLIENT_FIXED_NEWSTYLE.to_be_bytes());
    c.send_option(opt::EXPORT_NAME, b"");
    let r = c.read_vec(134);
    assert_eq!(u64::from_be_bytes(r[..8].try_into().expect("8")), 64 * MIB);
    assert_eq!(u16::from_be_bytes([r[8], r[9]]), flags);
    assert!(r[10..].iter().all(|&b| b == 0), "124 zero bytes");
    check_read(
        c.read_at(3, 0, 0, 4096),
        &data,
        "READ after EXPORT_NAME of the default export",
    );
    // Other exports' flags.
    for (name, extra) in [("ro", tflag::READ_ONLY), ("slow", tflag::ROTATIONAL)] {
        let mut c = Client::start(&server.sock);
        c.send_option(opt::EXPORT_NAME, name.as_bytes());
        let r = c.read_vec(10);
        assert_eq!(u16::from_be_bytes([r[8], r[9]]), flags | extra, "{name}");
    }
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn info_and_list_describe_the_exports() {
    let server = server();
    let mut c = Client::start(&server.sock);
    let i: ExportInfo = c
        .info(
            opt::INFO,
            "big",
            &[info::NAME, info::DESCRIPTION, info::BLOCK_SIZE, 99],
        )
        .expect("INFO big");
    assert_eq!(i.size, 64 * MIB);
    assert_eq!(i.flags & tflag::HAS_FLAGS, tflag::HAS_FLAGS);
    assert_eq!(i.name.as_deref(), Some("big"));
    assert!(
        i.description
            .as_deref()
            .is_some_and(|d| d.contains("4096-byte")),
        "{:?}",
        i.description
    );
    assert_eq!(i.block, Some((4096, 4096, CAP)));
    c.send_option(opt::LIST, &[]);
    let mut names = Vec::new();
    loop {
        let r = c.read_opt_reply();
        assert_eq!(r.option, opt::LIST);
        match r.kind {
            rep::SERVER => {
                let n = be32(&r.data) as usize;
                assert_eq!(n + 4, r.data.len(), "SERVER reply length");
                names.push(String::from_utf8(r.data[4..].to_vec()).expect("UTF-8"));
            }
            rep::ACK => break,
            k => panic!("unexpected reply {k:#x} to LIST"),
        }
    }
    assert_eq!(names, ["disk", "ro", "big", "bad", "slow"]);
    // The empty name is the first export; block sizes come unasked (the
    // server enforces them).
    let i = c
        .info(opt::INFO, "", &[])
        .expect("INFO of the default export");
    assert_eq!(i.size, 64 * MIB);
    assert_eq!(i.block, Some((512, 4096, CAP)));
    // INFO and GO give the same flags.
    let go = c.go("slow");
    assert_eq!(go.flags & tflag::ROTATIONAL, tflag::ROTATIONAL);
    assert_serves(&server, "disk");
    server.stop();
}

/// proto.md, `NBD_OPT_ABORT`: "The server MUST reply with `NBD_REP_ACK`"
/// (and a server "SHOULD ignore any data sent by the client").
#[test]
fn abort_is_acknowledged_then_closed() {
    let server = server();
    for data in [&b""[..], &b"bye"[..]] {
        let mut c = Client::start(&server.sock);
        assert_eq!(c.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
        let r = c.opt(opt::ABORT, data);
        assert_eq!((r.option, r.kind, r.data.len()), (opt::ABORT, rep::ACK, 0));
        c.expect_closed("after ABORT");
    }
    assert_serves(&server, "disk");
    server.stop();
}

// ---------------------------------------------------------------------------
// Transmission: refusals.

#[test]
fn unknown_commands_are_einval_and_the_connection_goes_on() {
    let server = server();
    let mut c = Client::open(&server.sock, "disk");
    // BLOCK_STATUS is known, but without a metadata context it is EINVAL.
    for (i, kind) in [cmd::BLOCK_STATUS, 8, 9, 99, 0x7FFF, 0xFFFF]
        .into_iter()
        .enumerate()
    {
        assert_eq!(
            c.command(i as u64, 0, kind, 0, 4096),
            err::EINVAL,
            "command {kind}"
        );
    }
    let data = pattern(7, 4096);
    assert_eq!(c.write_at(100, 0, 0, &data), 0);
    check_read(c.read_at(101, 0, 0, 4096), &data, "READ back");
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn unknown_command_flags_are_einval() {
    let server = server();
    let mut c = Client::open(&server.sock, "disk");
    let data = pattern(8, 4096);
    let (z, t, f) = (cmd::WRITE_ZEROES, cmd::TRIM, cmd::FLUSH);
    expect_refused(
        &mut c,
        1,
        err::EINVAL,
        &[
            (ReadAt(cflag::NO_HOLE, 0, 4096), "READ with NO_HOLE"),
            (ReadAt(0x8000, 0, 4096), "READ with bit 15"),
            // A refused write's payload is read and thrown away.
            (WriteAt(cflag::DF, 0, &data), "WRITE with DF"),
            (WriteAt(cflag::NO_HOLE, 0, &data), "WRITE with NO_HOLE"),
            // FAST_ZERO is not advertised.
            (
                Command(cflag::FAST_ZERO, z, 0, 4096),
                "WRITE_ZEROES with FAST_ZERO",
            ),
            (Command(cflag::NO_HOLE, t, 0, 4096), "TRIM with NO_HOLE"),
            (Command(cflag::REQ_ONE, f, 0, 0), "FLUSH with REQ_ONE"),
        ],
    );
    // Nothing was written by the refused writes.
    check_read(c.read_at(8, 0, 0, 4096), &[0; 4096], "READ back");
    assert_eq!(c.write_at(9, 0, 0, &data), 0);
    check_read(c.read_at(10, 0, 0, 4096), &data, "READ back");
    assert_serves(&server, "disk");
    server.stop();
}

/// proto.md: `NBD_CMD_FLAG_FUA` "is valid for all commands, provided
/// `NBD_FLAG_SEND_FUA` has been negotiated, in which case the server MUST
/// accept all commands with this bit set (even by ignoring the bit)";
/// "existing clients are known to set this bit on other commands".
#[test]
fn fua_is_accepted_on_every_command() {
    let server = server();
    let mut c = Client::open(&server.sock, "disk");
    let data = pattern(9, 4096);
    assert_eq!(c.write_at(1, cflag::FUA, 0, &data), 0, "WRITE with FUA");
    assert_eq!(
        c.command(2, cflag::FUA, cmd::WRITE_ZEROES, 4096, 4096),
        0,
        "WRITE_ZEROES with FUA"
    );
    assert_eq!(
        c.command(3, cflag::FUA, cmd::TRIM, 8192, 4096),
        0,
        "TRIM with FUA"
    );
    check_read(c.read_at(4, cflag::FUA, 0, 4096), &data, "READ with FUA");
    assert_eq!(
        c.command(5, cflag::FUA, cmd::FLUSH, 0, 0),
        0,
        "FLUSH with FUA"
    );
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn requests_over_the_cap_are_einval_and_the_cap_itself_works() {
    let server = server();
    let mut c = Client::open(&server.sock, "disk");
    assert_eq!(
        c.read_at(1, 0, 0, CAP + 512),
        Err(err::EINVAL),
        "READ over the cap"
    );
    assert_eq!(
        c.read_at(2, 0, 0, u32::MAX - 511),
        Err(err::EINVAL),
        "READ of 4 GiB"
    );
    // The payload of a refused write is consumed: the next request parses.
    let big = pattern(10, (CAP + 512) as usize);
    assert_eq!(c.write_at(3, 0, 0, &big), err::EINVAL, "WRITE over the cap");
    check_read(
        c.read_at(4, 0, 0, 4096),
        &[0; 4096],
        "the refused write wrote nothing",
    );
    // Exactly the cap: one request the queue splits into several.
    let full = &big[..CAP as usize];
    assert_eq!(c.write_at(5, 0, MIB, full), 0, "WRITE of the cap");
    let back = c.read_at(6, 0, MIB, CAP).expect("READ of the cap");
    assert!(back == full, "32 MiB came back different");
    // Trim and write-zeroes have no payload and no cap.
    assert_eq!(c.command(7, 0, cmd::WRITE_ZEROES, 0, 64 << 20), 0);
    check_read(c.read_at(8, 0, MIB, 4096), &[0; 4096], "READ back");
    assert_eq!(c.command(9, 0, cmd::TRIM, 0, 64 << 20), 0);
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn a_smaller_cap_is_advertised_and_enforced() {
    let server = TestServer::start_with(&["disk=mem:16m"], |cfg| cfg.max_request = 1 << 20);
    let mut c = Client::start(&server.sock);
    let i = c.go("disk");
    assert_eq!(i.block, Some((512, 4096, 1 << 20)));
    assert_eq!(c.read_at(1, 0, 0, (1 << 20) + 512), Err(err::EINVAL));
    assert_eq!(
        c.write_at(2, 0, 0, &pattern(11, (1 << 20) + 512)),
        err::EINVAL
    );
    let data = pattern(12, 1 << 20);
    assert_eq!(c.write_at(3, 0, 0, &data), 0);
    check_read(c.read_at(4, 0, 0, 1 << 20), &data, "READ back");
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn zero_length_requests_are_einval() {
    let server = server();
    let mut c = Client::open(&server.sock, "disk");
    assert_eq!(c.read_at(1, 0, 0, 0), Err(err::EINVAL), "READ of 0 bytes");
    assert_eq!(c.write_at(2, 0, 0, &[]), err::EINVAL, "WRITE of 0 bytes");
    assert_eq!(
        c.command(3, 0, cmd::TRIM, 0, 0),
        err::EINVAL,
        "TRIM of 0 bytes"
    );
    assert_eq!(
        c.command(4, 0, cmd::WRITE_ZEROES, 0, 0),
        err::EINVAL,
        "WRITE_ZEROES of 0 bytes"
    );
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn u64_extremes_are_refused_and_the_connection_goes_on() {
    let server = server();
    for (export, block) in [("disk", 512), ("big", 4096), ("slow", 512)] {
        common::assert_extremes_refused(&server, export, block);
    }
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn ranges_past_the_end() {
    let server = server();
    let mut c = Client::open(&server.sock, "disk");
    let size = 64 * MIB;
    let block = pattern(13, 1024);
    let huge = u64::MAX - 511;
    expect_refused(
        &mut c,
        1,
        err::EINVAL,
        &[
            (ReadAt(0, size - 512, 1024), "READ across the end"),
            (ReadAt(0, size, 512), "READ at the end"),
            (ReadAt(0, huge, 512), "READ whose end overflows"),
            (
                Command(0, cmd::TRIM, size - 512, 1024),
                "TRIM across the end",
            ),
            (
                Command(0, cmd::TRIM, huge, 1024),
                "TRIM whose end overflows",
            ),
        ],
    );
    expect_refused(
        &mut c,
        6,
        err::ENOSPC,
        &[
            (WriteAt(0, size - 512, &block), "WRITE across the end"),
            (WriteAt(0, huge, &block), "WRITE whose end overflows"),
            (
                Command(0, cmd::WRITE_ZEROES, size, 512),
                "WRITE_ZEROES past the end",
            ),
            (
                Command(0, cmd::WRITE_ZEROES, huge, 1024),
                "WRITE_ZEROES overflowing",
            ),
        ],
    );
    // The last block itself is fine.
    assert_eq!(c.write_at(10, 0, size - 1024, &block), 0);
    check_read(c.read_at(11, 0, size - 1024, 1024), &block, "READ back");
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn unaligned_requests_on_a_4k_export_are_einval() {
    let server = server();
    let mut c = Client::open(&server.sock, "big");
    let data = pattern(14, 4096);
    expect_refused(
        &mut c,
        1,
        err::EINVAL,
        &[
            (ReadAt(0, 512, 4096), "READ at 512"),
            (ReadAt(0, 0, 512), "READ of 512"),
            (WriteAt(0, 512, &data), "WRITE at 512"),
            (WriteAt(0, 0, &data[..1024]), "WRITE of 1024"),
            (Command(0, cmd::TRIM, 0, 512), "TRIM of 512"),
            (
                Command(0, cmd::WRITE_ZEROES, 2048, 4096),
                "WRITE_ZEROES at 2048",
            ),
        ],
    );
    check_read(
        c.read_at(7, 0, 0, 8192),
        &[0; 8192],
        "the refused writes wrote nothing",
    );
    assert_eq!(c.write_at(8, 0, 4096, &data), 0);
    check_read(c.read_at(9, 0, 4096, 4096), &data, "READ back");
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn read_only_export_refuses_changes() {
    let server = server();
    let mut c = Client::open(&server.sock, "ro");
    let data = pattern(15, 8192);
    expect_refused(
        &mut c,
        1,
        err::EPERM,
        &[
            (WriteAt(0, 0, &data), "WRITE"),
            (WriteAt(cflag::FUA, 4096, &data), "WRITE with FUA"),
            (Command(0, cmd::TRIM, 0, 4096), "TRIM"),
            (Command(0, cmd::WRITE_ZEROES, 0, 4096), "WRITE_ZEROES"),
        ],
    );
    assert_eq!(c.command(5, 0, cmd::FLUSH, 0, 0), 0, "FLUSH is harmless");
    check_read(c.read_at(6, 0, 0, 8192), &[0; 8192], "nothing changed");
    c.disc();
    c.expect_closed("after DISC");
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn commands_do_what_they_say() {
    let server = server();
    let mut c = Client::open(&server.sock, "disk");
    let data = pattern(16, 64 << 10);
    assert_eq!(c.write_at(1, 0, 0, &data), 0);
    assert_eq!(c.command(2, 0, cmd::WRITE_ZEROES, 4096, 4096), 0);
    assert_eq!(
        c.command(3, cflag::NO_HOLE, cmd::WRITE_ZEROES, 16384, 8192),
        0
    );
    let mut want = data.clone();
    want[4096..8192].fill(0);
    want[16384..24576].fill(0);
    check_read(c.read_at(4, 0, 0, 64 << 10), &want, "READ back");
    // After a trim the contents are unspecified, but a write is a write.
    assert_eq!(c.command(5, 0, cmd::TRIM, 0, 64 << 10), 0);
    assert_eq!(c.write_at(6, 0, 0, &data[..8192]), 0);
    check_read(c.read_at(7, 0, 0, 8192), &data[..8192], "READ back");
    assert_eq!(c.command(8, 0, cmd::FLUSH, 0, 0), 0);
    // Another connection sees the same data (one device per export).
    let mut d = Client::open(&server.sock, "disk");
    check_read(d.read_at(1, 0, 0, 8192), &data[..8192], "READ back");
    assert_serves(&server, "disk");
    server.stop();
}

// ---------------------------------------------------------------------------
// Transmission: failures and disconnects.

#[test]
fn failing_sectors_answer_eio_and_the_stream_stays_in_step() {
    let server = server();
    let mut c = Client::open(&server.sock, "bad");
    let data = pattern(17, 8192);
    // Sectors 2048..2056 fail: a read or write touching byte 1 MiB.
    assert_eq!(
        c.read_at(1, 0, MIB - 4096, 8192),
        Err(err::EIO),
        "READ over bad sectors"
    );
    assert_eq!(
        c.write_at(2, 0, MIB, &data),
        err::EIO,
        "WRITE over bad sectors"
    );
    assert_eq!(c.write_at(3, 0, 0, &data), 0, "WRITE elsewhere");
    check_read(c.read_at(4, 0, 0, 8192), &data, "READ elsewhere");
    assert_serves(&server, "disk");
    server.stop();
}

/// Open `export`, send a write of `len` bytes at 0 with only `sent` bytes
/// of its payload, and hang up; wait for the server to log the connection's
/// end and return that line.
fn hang_up_mid_payload(server: &TestServer, export: &str, len: u32, sent: usize) -> String {
    let before = server.log_lines().len();
    let mut c = Client::open(&server.sock, export);
    c.request(0, cmd::WRITE, 1, 0, len);
    c.send(&pattern(18, sent));
    drop(c);
    let line = server.wait_log_count(before + 1)[before].clone();
    assert!(line.contains(&format!("export '{export}'")), "{line}");
    line
}

const MID_PAYLOAD: [(&str, u32, usize); 4] = [
    ("disk", 1 << 20, 100 << 10),
    ("disk", 8192, 100),
    ("big", 4 << 20, 3 << 20),
    ("slow", 1 << 20, 512 << 10),
];

#[test]
fn client_disconnects_mid_write_payload() {
    let server = server();
    for (export, len, sent) in MID_PAYLOAD {
        let line = hang_up_mid_payload(&server, export, len, sent);
        assert!(
            line.contains(" 0 writes (0 bytes)"),
            "no write was done: {line}"
        );
        assert!(line.contains("client closed the connection"), "{line}");
        assert_serves(&server, export);
    }
    assert_serves(&server, "disk");
    server.stop();
}

/// A write whose payload never fully arrived was never done: the export
/// must not hold any of it (as with nbd-server, nbdkit or qemu-nbd, which
/// read the whole payload before writing). A client reading the range, or
/// reconnecting after a crash, must not see a torn, unacknowledged write.
#[test]
fn unfinished_write_leaves_the_export_unchanged() {
    let server = server();
    for (export, len, sent) in MID_PAYLOAD {
        hang_up_mid_payload(&server, export, len, sent);
        let mut d = Client::open(&server.sock, export);
        check_read(
            d.read_at(1, 0, 0, 8192),
            &[0; 8192],
            &format!("{export}: after {sent} of {len} bytes of a write's payload"),
        );
        d.disc();
        d.expect_closed("after DISC");
    }
    server.stop();
}

#[test]
fn many_requests_in_flight_then_an_abrupt_close() {
    let server = server();
    let mut expected_lines = 0;
    for export in ["disk", "slow"] {
        let mut c = Client::open(&server.sock, export);
        let mut burst = Vec::new();
        for i in 0..300u64 {
            let offset = (i * 7919 % 4096) * 64 * 1024;
            let r = proto::Request {
                flags: if i % 10 == 0 { cflag::FUA } else { 0 },
                kind: if i % 3 == 0 { cmd::WRITE } else { cmd::READ },
                cookie: i,
                offset,
                len: 16384,
            };
            burst.extend_from_slice(&proto::encode_request(&r));
            if r.kind == cmd::WRITE {
                burst.extend_from_slice(&pattern(i, 16384));
            }
        }
        c.send(&burst);
        // Gone without reading a reply, with requests queued, in flight and
        // unread.
        let _ = c.s.shutdown(Shutdown::Both);
        drop(c);
        expected_lines += 1;
        server.wait_log_count(expected_lines);
        assert_serves(&server, export);
        expected_lines += 1;
    }
    assert_serves(&server, "disk");
    server.stop();
}

// ---------------------------------------------------------------------------
// Structured replies.

#[test]
fn structured_replies_for_reads() {
    let server = server();
    let mut c = Client::open_structured(&server.sock, "disk");
    let data = pattern(19, 12288);
    assert_eq!(
        c.write_at(1, 0, 4096, &data),
        0,
        "writes get simple replies"
    );
    // A read: one OFFSET_DATA chunk, flagged DONE.
    c.request(0, cmd::READ, 2, 4096, 12288);
    let ch = c.read_chunk();
    assert_eq!(
        (ch.cookie, ch.flags, ch.kind),
        (2, chunk::DONE, chunk::OFFSET_DATA)
    );
    assert_eq!(ch.payload.len(), 8 + 12288);
    assert_eq!(
        u64::from_be_bytes(ch.payload[..8].try_into().expect("8")),
        4096
    );
    assert_eq!(&ch.payload[8..], &data[..]);
    // DF (one chunk at most) is honoured the same way.
    c.request(cflag::DF, cmd::READ, 3, 8192, 4096);
    let ch = c.read_chunk();
    assert_eq!(
        (ch.cookie, ch.flags, ch.kind),
        (3, chunk::DONE, chunk::OFFSET_DATA)
    );
    assert_eq!(&ch.payload[8..], &data[4096..8192]);
    // Early refusals of reads are error chunks too, never simple replies.
    for (cookie, flags, offset, len, errno) in [
        (4u64, 0u16, 64 * MIB, 512u32, err::EINVAL),
        (5, 0, 0, 0, err::EINVAL),
        (6, 0, 0, CAP + 512, err::EINVAL),
        (7, cflag::NO_HOLE, 0, 512, err::EINVAL),
    ] {
        c.request(flags, cmd::READ, cookie, offset, len);
        let ch = c.read_chunk();
        assert_eq!(
            (ch.cookie, ch.flags, ch.kind),
            (cookie, chunk::DONE, chunk::ERROR),
            "read {cookie}"
        );
        assert!(ch.payload.len() >= 6);
        assert_eq!(be32(&ch.payload), errno, "read {cookie}");
        let msg = usize::from(u16::from_be_bytes([ch.payload[4], ch.payload[5]]));
        assert_eq!(
            6 + msg,
            ch.payload.len(),
            "read {cookie}: error message length"
        );
    }
    c.disc();
    c.expect_closed("after DISC");

    // A read that fails at the device: an error chunk with EIO.
    let mut c = Client::open_structured(&server.sock, "bad");
    assert_eq!(c.read_at(1, 0, MIB, 4096), Err(err::EIO));
    c.request(0, cmd::READ, 2, MIB - 512, 1024);
    let ch = c.read_chunk();
    assert_eq!(
        (ch.cookie, ch.flags, ch.kind),
        (2, chunk::DONE, chunk::ERROR)
    );
    assert_eq!(be32(&ch.payload), err::EIO);
    // A good read on the same connection.
    check_read(c.read_at(3, 0, 0, 4096), &[0; 4096], "READ back");
    assert_serves(&server, "disk");
    server.stop();
}

// ---------------------------------------------------------------------------
// Many requests: DISC, order, several connections, shutdown.

/// Send a burst of writes then reads of the written blocks, a flush, and
/// maybe DISC, all in one go; return the cookies sent and the data each
/// read must return.
fn burst(c: &mut Client, count: u64, len: u32, disc: bool) -> (Vec<u64>, Vec<(u64, Vec<u8>)>) {
    let mut bytes = Vec::new();
    let mut cookies = Vec::new();
    let mut reads = Vec::new();
    for i in 0..count {
        let offset = i * 1_048_576 + (i % 7) * 4096;
        let data = pattern(1000 + i, len as usize);
        bytes.extend_from_slice(&proto::encode_request(&proto::Request {
            flags: 0,
            kind: cmd::WRITE,
            cookie: 1000 + i,
            offset,
            len,
        }));
        bytes.extend_from_slice(&data);
        cookies.push(1000 + i);
        reads.push((offset, data));
    }
    bytes.extend_from_slice(&proto::encode_request(&proto::Request {
        flags: 0,
        kind: cmd::FLUSH,
        cookie: 1,
        offset: 0,
        len: 0,
    }));
    cookies.push(1);
    // Reads go in reverse order, after everything they read was written
    // (and answered: the flush covers what was answered before it).
    c.send(&bytes);
    let mut got = Vec::new();
    for _ in 0..cookies.len() {
        let (cookie, e) = c.read_simple();
        assert_eq!(e, 0, "request {cookie} failed");
        got.push(cookie);
    }
    assert_one_reply_each(&cookies, &got);
    let mut bytes = Vec::new();
    let mut expect = Vec::new();
    for (i, (offset, data)) in reads.into_iter().enumerate().rev() {
        let cookie = 5000 + i as u64;
        bytes.extend_from_slice(&proto::encode_request(&proto::Request {
            flags: 0,
            kind: cmd::READ,
            cookie,
            offset,
            len,
        }));
        expect.push((cookie, data));
    }
    if disc {
        bytes.extend_from_slice(&proto::encode_request(&proto::Request {
            flags: 0,
            kind: cmd::DISC,
            cookie: 9,
            offset: 0,
            len: 0,
        }));
    }
    c.send(&bytes);
    (got, expect)
}

/// Read the replies to reads `expect` (in any order); check each cookie
/// comes once with its data; return the order they came in.
fn read_replies(c: &mut Client, expect: &[(u64, Vec<u8>)]) -> Vec<u64> {
    let len = expect.first().map_or(0, |(_, d)| d.len());
    let mut order = Vec::new();
    for _ in 0..expect.len() {
        match c.read_reply(|_| len) {
            Reply::Simple {
                cookie,
                error: 0,
                data: Some(d),
            } => {
                let (_, want) = expect
                    .iter()
                    .find(|(k, _)| *k == cookie)
                    .unwrap_or_else(|| panic!("reply to unknown cookie {cookie}"));
                assert!(d == *want, "read {cookie} returned the wrong data");
                order.push(cookie);
            }
            other => panic!("unexpected reply {other:?}"),
        }
    }
    let cookies: Vec<u64> = expect.iter().map(|(k, _)| *k).collect();
    assert_one_reply_each(&cookies, &order);
    order
}

#[test]
fn disc_after_requests_answers_everything_then_closes() {
    let server = server();
    for export in ["disk", "slow"] {
        let mut c = Client::open(&server.sock, export);
        let (_, expect) = burst(&mut c, 24, 65536, true);
        read_replies(&mut c, &expect);
        c.expect_closed("after DISC");
        let line = server.wait_log(&format!("export '{export}'"));
        assert!(line.contains("(DISC)"), "{line}");
        assert!(
            line.contains("24 reads (1572864 bytes), 24 writes (1572864 bytes), 1 flushes"),
            "{line}"
        );
    }
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn replies_out_of_order_each_cookie_once() {
    // A paced disk with a real seek model: reads at scattered offsets are
    // reordered by the scheduler and the disk, so replies come back in
    // whatever order they complete.
    let server = TestServer::start(&[
        "slow=hdd-7200,scheduler=mq-deadline",
        "disk=mem:64m,scheduler=bfq",
    ]);
    let mut handles = Vec::new();
    for (n, export) in ["slow", "slow", "disk", "disk"].into_iter().enumerate() {
        let sock = server.sock.clone();
        handles.push(std::thread::spawn(move || {
            let mut c = Client::open(&sock, export);
            let (_, expect) = burst(&mut c, 48, 4096 * (n as u32 + 1), false);
            let order = read_replies(&mut c, &expect);
            let sent: Vec<u64> = expect.iter().map(|(k, _)| *k).collect();
            let moved = order.iter().zip(&sent).filter(|(a, b)| a != b).count();
            eprintln!(
                "{export}: {moved} of {} replies out of request order",
                sent.len()
            );
            c.disc();
            c.expect_closed("after DISC");
        }));
    }
    for h in handles {
        h.join().expect("a client failed");
    }
    assert_serves(&server, "disk");
    server.stop();
}

/// A request the queue splits into more pieces than the device takes at
/// once must still complete: the memory device completes each piece at
/// once, and the event loop must come back for the rest.
#[test]
fn requests_split_across_a_shallow_device_queue_complete() {
    let server = TestServer::start(&[
        "disk=mem:64m",
        "shallow=mem:64m,queue_depth=1",
        "small=mem:64m,queue_depth=2,max_sectors_kb=64",
    ]);
    for export in ["shallow", "small"] {
        // A memory device answers in microseconds: a minute is ample.
        let mut c = Client::open(&server.sock, export).with_read_timeout(Duration::from_secs(60));
        let data = pattern(20, 8 << 20);
        assert_eq!(c.write_at(1, 0, 0, &data), 0, "{export}: WRITE of 8 MiB");
        check_read(
            c.read_at(2, 0, 0, 8 << 20),
            &data,
            &format!("{export}: READ of 8 MiB"),
        );
    }
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn connection_limit_refuses_extra_connections() {
    let server = TestServer::start_with(&["disk=mem:16m"], |cfg| cfg.max_connections = 2);
    let a = Client::open(&server.sock, "disk");
    let mut b = Client::start(&server.sock);
    // The third is closed at once, without a greeting.
    let mut c = Client::connect(&server.sock);
    c.expect_closed("a connection over the limit");
    server.wait_log("too many connections");
    drop(a);
    server.wait_log("export 'disk'");
    // A slot is free, but it is the one kept for clients past the
    // handshake: b, mid-handshake, holds the only other one.
    let mut e = Client::connect(&server.sock);
    e.expect_closed("a connection over the handshake's share");
    server.wait_log("the connections in the handshake hold 1 slot, the most they may");
    // Room again once b is past the handshake.
    b.go("disk");
    let mut d = Client::open(&server.sock, "disk");
    assert_eq!(d.write_at(1, 0, 0, &pattern(21, 4096)), 0);
    drop(d);
    check_read(b.read_at(1, 0, 0, 4096), &pattern(21, 4096), "READ back");
    server.stop();
}

/// Connect `n` sockets that say nothing, and wait until the server has
/// dealt with each: sent it the greeting (and found it silent), or closed it.
fn silent_sockets(server: &TestServer, n: usize) -> Vec<std::os::unix::net::UnixStream> {
    use std::io::Read;
    let socks: Vec<_> = (0..n)
        .map(|_| {
            std::os::unix::net::UnixStream::connect(&server.sock).expect("connecting a socket")
        })
        .collect();
    for s in &socks {
        s.set_read_timeout(Some(common::DEADLINE))
            .expect("read timeout");
        let mut greeting = [0u8; proto::GREETING_LEN];
        // The greeting, or the end of the stream for a refused socket.
        let _ = (&*s).read_exact(&mut greeting);
    }
    socks
}

/// Whether the server has closed `s` (it reads end of stream, after
/// whatever the server had sent).
fn closed(s: &std::os::unix::net::UnixStream) -> bool {
    use std::io::Read;
    let mut buf = [0u8; 64];
    loop {
        match (&*s).read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn silent_sockets_cannot_lock_clients_out_before_the_timeout() {
    // A timeout far away: only the reserve can let a client in.
    let server = TestServer::start_with(&["disk=mem:16m"], |cfg| {
        cfg.max_connections = 4;
        cfg.handshake_timeout = Duration::from_secs(3600);
    });
    let silent = silent_sockets(&server, 4);
    // At most 3 of the 4 slots may be in the handshake: the fourth socket
    // took the place of the first, or was refused (if the server had not
    // yet seen the first three say nothing). Either way 3 silent sockets
    // hold every slot the handshake may have, yet a real client gets in
    // (one of them gives way) and is served.
    assert_serves(&server, "disk");
    let evicted = server.wait_log("closed to make room for a new connection");
    assert!(
        evicted.contains("silent in the handshake")
            && evicted.contains("the connections in the handshake hold 3 slots, the most"),
        "{evicted}"
    );
    let mut a = Client::open(&server.sock, "disk");
    assert_eq!(a.write_at(1, 0, 0, &pattern(31, 4096)), 0);
    // Two clients past the handshake (a, and b once it has chosen) and two
    // clients mid-handshake that have sent their flags: no slot left, and
    // no silent connection to give way, so the next one is refused.
    // (Each option round trip makes sure the server has seen the flags.)
    let mut b = Client::start(&server.sock);
    let mut c = Client::start(&server.sock);
    assert_eq!(c.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
    b.go("disk");
    let mut d = Client::start(&server.sock);
    assert_eq!(d.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
    let mut e = Client::connect(&server.sock);
    e.expect_closed("a connection with every slot taken and none silent");
    let refused = server.wait_log("refused: too many connections: all 4 connection slots");
    assert!(
        refused.contains("none of those in the handshake is silent"),
        "{refused}"
    );
    check_read(b.read_at(1, 0, 0, 4096), &pattern(31, 4096), "READ on b");
    let gone = silent.iter().filter(|s| closed(s)).count();
    assert_eq!(gone, 4, "every silent socket gave way or was refused");
    drop(silent);
    server.stop();
}

#[test]
fn handshake_times_out() {
    let server = TestServer::start_with(&["disk=mem:16m"], |cfg| {
        cfg.max_connections = 8;
        cfg.handshake_timeout = Duration::from_secs(1);
    });
    // Three silent sockets and a client stalled mid-options.
    let silent = silent_sockets(&server, 3);
    let mut stalled = Client::start(&server.sock);
    assert_eq!(stalled.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
    // With no other connection coming, each is closed once its time is up.
    let lines = server.wait_log_count(4);
    for l in &lines {
        assert!(l.contains("handshake timed out after 1 s"), "{lines:#?}");
    }
    for s in &silent {
        assert!(closed(s), "a silent socket is closed after the timeout");
    }
    stalled.expect_closed("a client stalled in the handshake");
    // Then a client is served, and a slow one that has chosen its export
    // is not bound by the timeout.
    let mut a = Client::open(&server.sock, "disk");
    assert_serves(&server, "disk");
    server.wait_log_count(5);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        a.write_at(1, 0, 0, &pattern(32, 4096)),
        0,
        "after 1.5 s idle"
    );
    check_read(a.read_at(2, 0, 0, 4096), &pattern(32, 4096), "READ back");
    server.stop();
}

#[test]
fn stop_answers_requests_in_flight_then_closes() {
    let mut server = TestServer::start(&["slow=hdd-7200", "disk=mem:16m"]);
    // In transmission, with reads queued on a disk that takes milliseconds
    // each.
    let mut c = Client::open(&server.sock, "slow");
    let mut bytes = Vec::new();
    for i in 0..16u64 {
        bytes.extend_from_slice(&proto::encode_request(&proto::Request {
            flags: 0,
            kind: cmd::READ,
            cookie: i,
            offset: i * 37 * 1_000_000_000,
            len: 4096,
        }));
    }
    c.send(&bytes);
    // Mid-handshake: closed on stop.
    let mut h = Client::start(&server.sock);
    assert_eq!(h.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
    // Idle in transmission.
    let mut idle = Client::open(&server.sock, "disk");
    server.request_stop();
    let mut got = Vec::new();
    for _ in 0..16 {
        match c.read_reply(|_| 4096) {
            Reply::Simple { cookie, error, .. } => {
                assert!(
                    error == 0 || error == err::ESHUTDOWN,
                    "read {cookie}: error {error}"
                );
                got.push(cookie);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_one_reply_each(&(0..16).collect::<Vec<_>>(), &got);
    c.expect_closed("after the server stopped");
    h.expect_closed("mid-handshake when the server stopped");
    idle.expect_closed("idle when the server stopped");
    let sock = server.sock.clone();
    server.stop();
    assert!(!sock.exists(), "the socket file is removed");
}

/// A client stalled in the middle of a write's payload must not keep a
/// stop from finishing: the server waits at most its 30-second grace for
/// requests in flight, and this one never reaches the device.
#[test]
fn stop_is_not_held_up_by_a_stalled_write_payload() {
    let mut server = TestServer::start(&["disk=mem:16m"]);
    let mut stalled = Client::open(&server.sock, "disk");
    stalled.request(0, cmd::WRITE, 1, 0, 1 << 20);
    stalled.send(&pattern(22, 1000));
    // A round trip on another connection after that: the server reads every
    // connection on each pass, so it has read the write's header by now.
    let mut other = Client::open(&server.sock, "disk");
    assert_eq!(other.command(1, 0, cmd::FLUSH, 0, 0), 0);
    server.request_stop();
    // The grace, and as long again for a slow machine.
    let limit = Duration::from_secs(30 + 45);
    let start = std::time::Instant::now();
    while server.running() && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
    }
    let stopped = !server.running();
    // Let it go either way (a gone client unblocks it), then judge.
    drop(stalled);
    other.expect_closed("after the stop");
    server.stop();
    assert!(
        stopped,
        "the server was still running {limit:?} after the stop, held by a write \
         whose payload never came"
    );
}

/// proto.md, `NBD_FLAG_SEND_DF`: "The server MUST set this transmission
/// flag to 1 if the `NBD_CMD_READ` request supports the `NBD_CMD_FLAG_DF`
/// flag". The server takes DF on reads once structured replies are
/// negotiated, so it must say so.
#[test]
fn df_is_advertised_when_it_is_accepted() {
    let server = server();
    let mut c = Client::start(&server.sock);
    assert_eq!(c.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
    c.structured = true;
    let i = c.go("disk");
    let accepted = c.read_at(1, cflag::DF, 0, 4096).is_ok();
    const SEND_DF: u16 = 1 << 7;
    assert!(
        !accepted || i.flags & SEND_DF != 0,
        "READ with DF is accepted, but the transmission flags {:#x} lack NBD_FLAG_SEND_DF",
        i.flags
    );
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn bind_rejects_bad_configurations() {
    let dir = common::temp_dir("bind");
    let sock = dir.path().join("s.sock");
    let disk = ExportSpec::parse("disk=mem:1m").expect("parses");
    let log = || Box::new(|_: &str| {}) as Box<dyn FnMut(&str) + Send>;
    let bind = |exports: Vec<ExportSpec>, unix: Vec<std::path::PathBuf>| {
        Server::bind(
            ServerConfig {
                exports,
                unix,
                ..ServerConfig::default()
            },
            log(),
        )
        .map(|_| ())
    };
    let msg = |r: Result<(), ServerError>| common::chain(&r.expect_err("must fail"));
    assert!(msg(bind(vec![], vec![sock.clone()])).contains("nothing to serve"));
    assert!(msg(bind(vec![disk.clone()], vec![])).contains("nowhere to listen"));
    let twice = msg(bind(vec![disk.clone(), disk.clone()], vec![sock.clone()]));
    assert!(twice.contains("two exports are called 'disk'"), "{twice}");
    for (tweak, needle) in [
        (
            (|c: &mut ServerConfig| c.max_connections = 0) as fn(&mut ServerConfig),
            "max_connections 0",
        ),
        (|c| c.max_inflight = 0, "max_inflight 0"),
        (
            |c| c.handshake_timeout = Duration::ZERO,
            "handshake timeout of 0",
        ),
    ] {
        let mut cfg = ServerConfig {
            exports: vec![disk.clone()],
            unix: vec![sock.clone()],
            ..ServerConfig::default()
        };
        tweak(&mut cfg);
        let e = msg(Server::bind(cfg, log()).map(|_| ()));
        assert!(e.contains(needle), "{e}");
    }
    let nodir = dir.path().join("no/such/dir/s.sock");
    let e = msg(bind(vec![disk.clone()], vec![nodir.clone()]));
    assert!(e.contains(&nodir.display().to_string()), "{e}");
    let e = common::chain(&ExportSpec::parse("disk=floppy").expect_err("floppy"));
    assert!(e.contains("floppy"), "{e}");
    // A regular file where the socket should go is not removed.
    std::fs::File::create(&sock)
        .and_then(|mut f| f.write_all(b"keep"))
        .expect("file");
    assert!(bind(vec![disk.clone()], vec![sock.clone()]).is_err());
    assert_eq!(std::fs::read(&sock).expect("still there"), b"keep");
    // A socket left by an earlier run is replaced.
    std::fs::remove_file(&sock).expect("rm");
    drop(std::os::unix::net::UnixListener::bind(&sock).expect("stale socket"));
    assert!(sock.exists());
    bind(vec![disk], vec![sock.clone()]).expect("binds over a stale socket");
}
