//! Metadata contexts, block status, cache and reads of holes against a raw
//! client speaking bytes: what `doc/proto.md` prescribes for each, good
//! and bad input alike; after the bad, a fresh client must still be served.

use crate::common;

use common::{Chunk, Client, TestServer, assert_serves, check_read, pattern};
use elevator_nbd::proto::meta::{self, BASE_ALLOCATION, MetaQuery, state};
use elevator_nbd::proto::{cflag, chunk, cmd, err, opt, rep, tflag};

const MIB: u64 = 1 << 20;
const HZ: u32 = state::HOLE | state::ZERO;

fn server() -> TestServer {
    TestServer::start(&["disk=mem:64m", "big=mem:16m,lbs=4096", "other=mem:8m"])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().expect("4 bytes"))
}

fn query(export: &str, queries: &[&str]) -> Vec<u8> {
    meta::encode_meta_query(&MetaQuery {
        export: export.into(),
        queries: queries.iter().map(|q| q.to_string()).collect(),
    })
}

/// Send a metadata context option; return the contexts it named (id,
/// name) and the final reply type.
fn meta_option(c: &mut Client, option: u32, data: &[u8]) -> (Vec<(u32, String)>, u32) {
    c.send_option(option, data);
    let mut contexts = Vec::new();
    loop {
        let r = c.read_opt_reply();
        assert_eq!(r.option, option, "reply to the wrong option");
        if r.kind != rep::META_CONTEXT {
            return (contexts, r.kind);
        }
        let name = String::from_utf8(r.data[4..].to_vec()).expect("UTF-8 context name");
        contexts.push((be32(&r.data), name));
    }
}

/// A structured client on `export` with `base:allocation` selected; returns
/// it and the context id.
fn with_allocation(server: &TestServer, export: &str) -> (Client, u32) {
    let mut c = Client::start(&server.sock);
    assert_eq!(c.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
    c.structured = true;
    let (got, last) = meta_option(
        &mut c,
        opt::SET_META_CONTEXT,
        &query(export, &[BASE_ALLOCATION]),
    );
    assert_eq!(last, rep::ACK);
    assert_eq!(got.len(), 1, "one context selected: {got:?}");
    assert_eq!(got[0].1, BASE_ALLOCATION);
    c.go(export);
    (c, got[0].0)
}

/// The one chunk answering a block status request: its descriptors, or
/// the error.
fn block_status(
    c: &mut Client,
    cookie: u64,
    flags: u16,
    offset: u64,
    len: u32,
) -> Result<(u32, Vec<(u32, u32)>), u32> {
    c.request(flags, cmd::BLOCK_STATUS, cookie, offset, len);
    let Chunk {
        cookie: got,
        flags,
        kind,
        payload,
    } = c.read_chunk();
    assert_eq!(got, cookie, "chunk for the wrong request");
    assert!(flags & chunk::DONE != 0, "one chunk, with DONE");
    match kind {
        chunk::BLOCK_STATUS => {
            assert!(payload.len() >= 12 && (payload.len() - 4) % 8 == 0);
            let list = payload[4..]
                .chunks_exact(8)
                .map(|d| (be32(d), be32(&d[4..])))
                .collect();
            Ok((be32(&payload), list))
        }
        chunk::ERROR => Err(be32(&payload)),
        k => panic!("unexpected chunk type {k:#x}"),
    }
}

#[test]
fn list_meta_context_names_base_allocation() {
    let server = server();
    let mut c = Client::start(&server.sock);
    // No queries: every context. The namespace alone, or the full name:
    // it. Anything else: nothing, and still ACK.
    for (queries, want) in [
        (&[][..], 1),
        (&["base:"][..], 1),
        (&[BASE_ALLOCATION][..], 1),
        (&["qemu:dirty-bitmap:x", "base:nothing"][..], 0),
    ] {
        let (got, last) = meta_option(&mut c, opt::LIST_META_CONTEXT, &query("disk", queries));
        assert_eq!(last, rep::ACK, "{queries:?}");
        assert_eq!(got.len(), want, "{queries:?}: {got:?}");
        if want == 1 {
            // LIST's context ids are reserved: zero.
            assert_eq!(got[0], (0, BASE_ALLOCATION.to_string()));
        }
    }
    let (got, last) = meta_option(&mut c, opt::LIST_META_CONTEXT, &query("nope", &[]));
    assert_eq!((got.len(), last), (0, rep::ERR_UNKNOWN));
    // Malformed: a query count that lies.
    let mut bad = query("disk", &[BASE_ALLOCATION]);
    bad[8] = 9;
    let (_, last) = meta_option(&mut c, opt::LIST_META_CONTEXT, &bad);
    assert_eq!(last, rep::ERR_INVALID);
    c.go("disk");
    drop(c);
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn set_meta_context_before_structured_replies_is_invalid() {
    let server = server();
    let mut c = Client::start(&server.sock);
    let (got, last) = meta_option(
        &mut c,
        opt::SET_META_CONTEXT,
        &query("disk", &[BASE_ALLOCATION]),
    );
    assert_eq!((got.len(), last), (0, rep::ERR_INVALID));
    // The handshake goes on; without a context, BLOCK_STATUS is EINVAL.
    c.go("disk");
    assert_eq!(c.command(1, 0, cmd::BLOCK_STATUS, 0, 4096), err::EINVAL);
    drop(c);
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn unknown_contexts_select_nothing_and_each_set_replaces_the_last() {
    let server = server();
    let mut c = Client::start(&server.sock);
    assert_eq!(c.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
    c.structured = true;
    let sel = |c: &mut Client, export: &str, q: &[&str]| {
        meta_option(c, opt::SET_META_CONTEXT, &query(export, q))
    };
    assert_eq!(
        sel(&mut c, "disk", &["qemu:dirty-bitmap:x"]),
        (vec![], rep::ACK)
    );
    let (got, last) = sel(&mut c, "disk", &[BASE_ALLOCATION, BASE_ALLOCATION]);
    assert_eq!((got.len(), last), (1, rep::ACK));
    assert_eq!(sel(&mut c, "nope", &[BASE_ALLOCATION]).1, rep::ERR_UNKNOWN);
    // The failed SET dropped the selection; the next one names nothing.
    assert_eq!(sel(&mut c, "disk", &["base:"]), (vec![], rep::ACK));
    c.go("disk");
    assert_eq!(block_status(&mut c, 1, 0, 0, 4096), Err(err::EINVAL));
    drop(c);
    // A selection for one export does not carry over to another.
    let mut c = Client::start(&server.sock);
    assert_eq!(c.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
    c.structured = true;
    assert_eq!(sel(&mut c, "other", &[BASE_ALLOCATION]).0.len(), 1);
    c.go("disk");
    assert_eq!(block_status(&mut c, 2, 0, 0, 4096), Err(err::EINVAL));
    drop(c);
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn extended_headers_are_refused_and_the_handshake_goes_on() {
    let server = server();
    let mut c = Client::start(&server.sock);
    let r = c.opt(opt::EXTENDED_HEADERS, &[]);
    assert_eq!((r.option, r.kind), (opt::EXTENDED_HEADERS, rep::ERR_UNSUP));
    assert_eq!(c.opt(opt::STRUCTURED_REPLY, &[]).kind, rep::ACK);
    c.structured = true;
    let info = c.go("disk");
    assert!(info.flags & tflag::SEND_CACHE != 0, "SEND_CACHE advertised");
    let data = pattern(3, 4096);
    assert_eq!(c.write_at(1, 0, 0, &data), 0);
    check_read(c.read_at(2, 0, 0, 4096), &data, "READ back");
    server.stop();
}

#[test]
fn block_status_reports_holes_and_data() {
    let server = server();
    let (mut c, id) = with_allocation(&server, "disk");
    assert_eq!(
        block_status(&mut c, 1, 0, 0, 4 << 20),
        Ok((id, vec![(4 << 20, HZ)]))
    );
    assert_eq!(c.write_at(2, 0, MIB, &pattern(4, 8192)), 0);
    assert_eq!(
        c.command(3, 0, cmd::WRITE_ZEROES, MIB + 4096, 4096),
        0,
        "write-zeroes"
    );
    assert_eq!(
        block_status(&mut c, 4, 0, 0, 4 << 20),
        Ok((
            id,
            vec![
                (MIB as u32, HZ),
                (4096, 0),
                (4096, HZ),
                ((3 * MIB - 8192) as u32, HZ)
            ]
            .into_iter()
            .fold(Vec::new(), |mut v: Vec<(u32, u32)>, (l, f)| {
                match v.last_mut() {
                    Some((ll, lf)) if *lf == f => *ll += l,
                    _ => v.push((l, f)),
                }
                v
            })
        ))
    );
    // REQ_ONE: just the first extent, within the range.
    assert_eq!(
        block_status(&mut c, 5, cflag::REQ_ONE, 0, 4 << 20),
        Ok((id, vec![(MIB as u32, HZ)]))
    );
    assert_eq!(
        block_status(&mut c, 6, cflag::REQ_ONE, MIB, 512),
        Ok((id, vec![(512, 0)]))
    );
    // FUA is accepted, and changes nothing.
    assert_eq!(
        block_status(&mut c, 8, cflag::FUA | cflag::REQ_ONE, MIB, 512),
        Ok((id, vec![(512, 0)]))
    );
    // The end of the export.
    assert_eq!(
        block_status(&mut c, 7, 0, 64 * MIB - 4096, 4096),
        Ok((id, vec![(4096, HZ)]))
    );
    server.stop();
}

#[test]
fn bad_block_status_requests_are_einval() {
    let server = server();
    // Without a context (structured replies, nothing selected).
    let mut c = Client::open_structured(&server.sock, "disk");
    assert_eq!(block_status(&mut c, 1, 0, 0, 4096), Err(err::EINVAL));
    drop(c);
    let (mut c, _) = with_allocation(&server, "disk");
    for (cookie, flags, offset, len) in [
        (2, 0, 0, 0),                 // zero length
        (3, 0, 64 * MIB, 512),        // starting at the end
        (4, 0, 64 * MIB - 512, 1024), // running past it
        (5, 0, u64::MAX - 511, 1024), // overflowing
        (6, 0, 100, 512),             // off the block size
        (7, cflag::DF, 0, 512),       // a flag it does not take
    ] {
        assert_eq!(
            block_status(&mut c, cookie, flags, offset, len),
            Err(err::EINVAL),
            "request {cookie}"
        );
    }
    // 4 KiB blocks: 512-byte ranges are off the block size.
    let (mut b, _) = with_allocation(&server, "big");
    assert_eq!(block_status(&mut b, 8, 0, 0, 512), Err(err::EINVAL));
    assert!(block_status(&mut b, 9, 0, 0, 4096).is_ok());
    // The connection goes on.
    let data = pattern(5, 4096);
    assert_eq!(c.write_at(10, 0, 0, &data), 0);
    check_read(c.read_at(11, 0, 0, 4096), &data, "READ back");
    drop((b, c));
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn cache_is_checked_like_a_read() {
    let server = server();
    let mut c = Client::open(&server.sock, "disk");
    assert_eq!(c.command(1, 0, cmd::CACHE, 0, 1 << 20), 0);
    assert_eq!(c.command(2, 0, cmd::CACHE, 0, 0), err::EINVAL);
    assert_eq!(c.command(3, 0, cmd::CACHE, 64 * MIB, 512), err::EINVAL);
    assert_eq!(c.command(4, 0, cmd::CACHE, 7, 512), err::EINVAL);
    assert_eq!(
        c.command(5, cflag::REQ_ONE, cmd::CACHE, 0, 512),
        err::EINVAL
    );
    assert_eq!(
        c.command(6, cflag::FUA, cmd::CACHE, 0, 512),
        0,
        "FUA is accepted"
    );
    drop(c);
    assert_serves(&server, "disk");
    server.stop();
}

#[test]
fn reads_of_holes_are_offset_hole_chunks_unless_df() {
    let server = server();
    let mut c = Client::open_structured(&server.sock, "disk");
    // A hole, without DF: one OFFSET_HOLE chunk.
    c.request(0, cmd::READ, 1, 2 * MIB, 65536);
    let ch = c.read_chunk();
    assert_eq!((ch.cookie, ch.kind), (1, chunk::OFFSET_HOLE));
    assert!(ch.flags & chunk::DONE != 0);
    assert_eq!(ch.payload.len(), 12);
    assert_eq!(
        u64::from_be_bytes(ch.payload[..8].try_into().expect("8")),
        2 * MIB
    );
    assert_eq!(be32(&ch.payload[8..]), 65536);
    // With DF: the zeroes as data.
    c.request(cflag::DF, cmd::READ, 2, 2 * MIB, 4096);
    let ch = c.read_chunk();
    assert_eq!((ch.cookie, ch.kind), (2, chunk::OFFSET_DATA));
    assert!(ch.payload[8..].iter().all(|&b| b == 0) && ch.payload.len() == 8 + 4096);
    // Data read back, hole or not, is what was written.
    let data = pattern(6, 8192);
    assert_eq!(c.write_at(3, 0, 2 * MIB + 4096, &data), 0);
    let mut want = vec![0u8; 16384];
    want[4096..12288].copy_from_slice(&data);
    check_read(c.read_at(4, 0, 2 * MIB, 16384), &want, "data between holes");
    server.stop();
}

#[test]
fn the_selection_moves_with_a_connection_to_another_worker() {
    // Two workers: of three connections open at once, one at least is
    // served by a worker other than the one that ran its handshake.
    let server = TestServer::start_with(&["disk=mem:64m"], |cfg| cfg.threads = 2);
    let mut clients: Vec<(Client, u32)> =
        (0..3).map(|_| with_allocation(&server, "disk")).collect();
    let (c0, _) = &mut clients[0];
    assert_eq!(c0.write_at(1, 0, 2 * MIB, &pattern(8, 4096)), 0);
    for (i, (c, id)) in clients.iter_mut().enumerate() {
        assert_eq!(
            block_status(c, 10 + i as u64, 0, 2 * MIB - 4096, 12288),
            Ok((*id, vec![(4096, HZ), (4096, 0), (4096, HZ)])),
            "connection {i}"
        );
    }
    drop(clients);
    server.stop();
}
