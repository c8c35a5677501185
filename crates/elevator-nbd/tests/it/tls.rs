//! TLS (`NBD_OPT_STARTTLS`) against real clients and raw ones: libnbd's
//! `nbdinfo` and `nbdcopy` over `nbds://` and `nbds+unix://`, certificates
//! made with `openssl` for each test (in nbdkit's and libnbd's directory
//! layout); `--tls=require` refusing clients that do not ask for TLS; and
//! handshakes that fail (plain bytes after `STARTTLS`, a CA the client does
//! not trust, a client certificate the server does not), each closing its
//! connection with a logged reason while the server goes on serving.
//!
//! They need `openssl` (and the NBD tools): the fast tier skips them, saying
//! so; the full tier (`scripts/test`) runs them.

use crate::common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::{Client, TempDir, TestServer, assert_same_file, run, run_ok, temp_dir, write_image};
use elevator_nbd::proto::{self, opt, rep};
use elevator_nbd::{ServerConfig, TlsConfig, TlsMode};

const MIB: u64 = 1 << 20;

/// Certificate directories, as libnbd and nbdkit lay them out.
struct Certs {
    /// The server's: ca-cert.pem, server-cert.pem, server-key.pem.
    server: PathBuf,
    /// A client's: ca-cert.pem, client-cert.pem, client-key.pem.
    client: PathBuf,
    /// A client that trusts another CA (and has a certificate from it).
    other_ca: PathBuf,
    /// A client that trusts the right CA but whose certificate another CA
    /// signed.
    foreign_client: PathBuf,
    _dir: TempDir,
}

fn openssl(dir: &Path, args: &[&str]) {
    run_ok(Command::new("openssl").current_dir(dir).args(args));
}

/// A CA in `dir`: `{name}-key.pem`, `{name}-cert.pem`.
fn make_ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN=elevator test {name}"),
            "-keyout",
            &format!("{name}-key.pem"),
            "-out",
            &format!("{name}-cert.pem"),
        ],
    );
}

/// A certificate for `role` (server or client) signed by CA `ca`, into
/// `out/{role}-cert.pem` and `out/{role}-key.pem`.
fn make_cert(dir: &Path, ca: &str, role: &str, out: &Path, serial: u32) {
    let ext = dir.join(format!("{role}.ext"));
    let usage = if role == "server" {
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
    } else {
        "extendedKeyUsage=clientAuth\n"
    };
    std::fs::write(
        &ext,
        format!("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n{usage}"),
    )
    .expect("writing the extensions file");
    let key = out.join(format!("{role}-key.pem"));
    let cert = out.join(format!("{role}-cert.pem"));
    let csr = dir.join(format!("{role}-{serial}.csr"));
    let (key, cert, csr) = (
        key.to_string_lossy(),
        cert.to_string_lossy(),
        csr.to_string_lossy(),
    );
    let subject = format!("/CN={}", if role == "server" { "localhost" } else { role });
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            &subject,
            "-keyout",
            &key,
            "-out",
            &csr,
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &format!("{ca}-cert.pem"),
            "-CAkey",
            &format!("{ca}-key.pem"),
            "-set_serial",
            &serial.to_string(),
            "-days",
            "2",
            "-extfile",
            &ext.to_string_lossy(),
            "-out",
            &cert,
        ],
    );
}

/// Fresh certificates, or `None` (the test skipped, saying why) without
/// `openssl`.
fn certs(test: &str) -> Option<Certs> {
    if !elevator_testkit::needs(test, &["openssl", "nbdinfo", "nbdcopy"]) {
        return None;
    }
    let dir = temp_dir("tls");
    let d = dir.path();
    make_ca(d, "ca");
    make_ca(d, "other");
    let sub = |name: &str| {
        let p = d.join(name);
        std::fs::create_dir(&p).expect("creating a certificates directory");
        p
    };
    let (server, client, other_ca, foreign_client) = (
        sub("server"),
        sub("client"),
        sub("other-ca"),
        sub("foreign-client"),
    );
    make_cert(d, "ca", "server", &server, 2);
    make_cert(d, "ca", "client", &client, 3);
    make_cert(d, "other", "client", &other_ca, 4);
    make_cert(d, "other", "client", &foreign_client, 5);
    for (dir, ca) in [
        (&server, "ca"),
        (&client, "ca"),
        (&other_ca, "other"),
        (&foreign_client, "ca"),
    ] {
        std::fs::copy(d.join(format!("{ca}-cert.pem")), dir.join("ca-cert.pem"))
            .expect("copying a CA certificate");
    }
    Some(Certs {
        server,
        client,
        other_ca,
        foreign_client,
        _dir: dir,
    })
}

/// A server of a 64 MiB `disk` on a Unix socket and on TCP (loopback),
/// with TLS `mode` and the certificates in `certs.server`, on two worker
/// threads (so that connections, their TLS sessions with them, move from
/// the worker that ran their handshake to another).
fn tls_server(certs: &Certs, mode: TlsMode, verify_peer: bool) -> TestServer {
    let tls = TlsConfig::load(&certs.server, mode, verify_peer)
        .unwrap_or_else(|e| panic!("loading the certificates: {}", common::chain(&e)));
    TestServer::start_with(&["disk=mem:64m"], |c: &mut ServerConfig| {
        c.tcp = vec![SocketAddr::from(([127, 0, 0, 1], 0))];
        c.tls = Some(tls);
        c.threads = 2;
    })
}

fn tcp_uri(server: &TestServer, client: &Path) -> String {
    format!(
        "nbds://localhost:{}/disk?tls-certificates={}",
        server.tcp[0].port(),
        client.display()
    )
}

fn unix_uri(server: &TestServer, client: &Path) -> String {
    format!(
        "nbds+unix:///disk?socket={}&tls-certificates={}",
        server.sock.display(),
        client.display()
    )
}

fn nbdinfo_size(uri: &str) -> u64 {
    let out = run_ok(Command::new("nbdinfo").arg("--size").arg(uri));
    out.trim()
        .parse()
        .unwrap_or_else(|e| panic!("nbdinfo --size {uri}: {e}: {out:?}"))
}

/// Run `nbdinfo --size uri`, which must fail; return its stderr.
fn nbdinfo_fails(uri: &str) -> String {
    let out = run(Command::new("nbdinfo").arg("--size").arg(uri));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "nbdinfo {uri} must fail; it printed {}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// After a failure, the server still serves a TLS client.
/// A raw client of `server` that has asked for STARTTLS and had it
/// acknowledged; the TLS handshake is the caller's.
fn starttls_acked(server: &TestServer) -> Client {
    let mut c = Client::start(&server.sock);
    let r = c.opt(opt::STARTTLS, &[]);
    assert_eq!((r.option, r.kind), (opt::STARTTLS, rep::ACK));
    c
}

fn still_serves(server: &TestServer, certs: &Certs) {
    assert_eq!(nbdinfo_size(&unix_uri(server, &certs.client)), 64 * MIB);
    assert!(server.running(), "the server stopped");
}

#[test]
fn nbdinfo_and_nbdcopy_over_tls() {
    let Some(certs) = certs("nbdinfo_and_nbdcopy_over_tls") else {
        return;
    };
    let server = tls_server(&certs, TlsMode::On, false);
    let tcp = tcp_uri(&server, &certs.client);
    assert_eq!(nbdinfo_size(&tcp), 64 * MIB, "over TCP");
    assert_eq!(
        nbdinfo_size(&unix_uri(&server, &certs.client)),
        64 * MIB,
        "over the Unix socket"
    );
    let out = run_ok(Command::new("nbdinfo").arg(&tcp));
    assert!(out.contains("with TLS"), "nbdinfo says no TLS:\n{out}");
    // A copy in and out through TLS: big enough for many records, read
    // replies bigger than rustls's buffer.
    let dir = temp_dir("tlscopy");
    let img = dir.path().join("in.img");
    let back = dir.path().join("out.img");
    write_image(&img, 64 * MIB, 0x715);
    run_ok(Command::new("nbdcopy").arg("--flush").arg(&img).arg(&tcp));
    run_ok(Command::new("nbdcopy").arg(&tcp).arg(&back));
    assert_same_file(&img, &back);
    let back2 = dir.path().join("out2.img");
    run_ok(
        Command::new("nbdcopy")
            .arg(unix_uri(&server, &certs.client))
            .arg(&back2),
    );
    assert_same_file(&img, &back2);
    // Plain clients are still served when TLS is only offered.
    assert_eq!(nbdinfo_size(&server.uri("disk")), 64 * MIB);
    server.stop();
}

#[test]
fn require_refuses_a_plain_nbdinfo() {
    let Some(certs) = certs("require_refuses_a_plain_nbdinfo") else {
        return;
    };
    let server = tls_server(&certs, TlsMode::Require, false);
    let err = nbdinfo_fails(&server.uri("disk"));
    assert!(err.to_lowercase().contains("tls"), "nbdinfo said: {err}");
    let line = server.wait_log("TLS is required");
    assert!(line.contains("--tls=require"), "{line}");
    still_serves(&server, &certs);
    server.stop();
}

/// Option replies until `ACK` or an error, for a raw client.
fn replies_until_final(c: &mut Client) -> Vec<common::OptReply> {
    let mut all = Vec::new();
    loop {
        let r = c.read_opt_reply();
        let last = r.kind == rep::ACK || r.kind & 0x8000_0000 != 0;
        all.push(r);
        if last {
            return all;
        }
    }
}

#[test]
fn require_answers_every_option_but_starttls_with_tls_reqd() {
    let Some(certs) = certs("require_answers_every_option_but_starttls_with_tls_reqd") else {
        return;
    };
    let server = tls_server(&certs, TlsMode::Require, false);
    let mut c = Client::start(&server.sock);
    let info = common::info_data("disk", &[proto::info::NAME, proto::info::DESCRIPTION]);
    for (option, data) in [
        (opt::LIST, Vec::new()),
        (opt::INFO, info.clone()),
        (opt::GO, info.clone()),
        (opt::STRUCTURED_REPLY, Vec::new()),
        (opt::LIST_META_CONTEXT, Vec::new()),
        (99, Vec::new()),
    ] {
        c.send_option(option, &data);
        let replies = replies_until_final(&mut c);
        assert_eq!(replies.len(), 1, "option {option}: {replies:?}");
        let r = &replies[0];
        assert_eq!(
            (r.option, r.kind),
            (option, rep::ERR_TLS_REQD),
            "option {option}"
        );
        let text = String::from_utf8_lossy(&r.data);
        assert!(
            !text.contains("disk") && !text.contains("mem"),
            "option {option} told: {text}"
        );
    }
    // STARTTLS with data is malformed, TLS or not.
    let r = c.opt(opt::STARTTLS, b"x");
    assert_eq!((r.option, r.kind), (opt::STARTTLS, rep::ERR_INVALID));
    // EXPORT_NAME has no error reply: the connection closes, with no size.
    c.send_option(opt::EXPORT_NAME, b"disk");
    c.expect_closed("EXPORT_NAME without TLS, TLS required");
    server.wait_log("EXPORT_NAME without STARTTLS");
    // ABORT is answered.
    let mut c = Client::start(&server.sock);
    let r = c.opt(opt::ABORT, &[]);
    assert_eq!((r.option, r.kind), (opt::ABORT, rep::ACK));
    c.expect_closed("after ABORT");
    still_serves(&server, &certs);
    server.stop();
}

#[test]
fn starttls_is_refused_when_tls_is_off() {
    let server = TestServer::start(&["disk=mem:1m"]);
    let mut c = Client::start(&server.sock);
    let r = c.opt(opt::STARTTLS, &[]);
    assert_eq!((r.option, r.kind), (opt::STARTTLS, rep::ERR_UNSUP));
    // The haggling goes on in clear.
    c.send_option(opt::LIST, &[]);
    let replies = replies_until_final(&mut c);
    assert_eq!(replies.last().map(|r| r.kind), Some(rep::ACK));
    let e = c.go("disk");
    assert_eq!(e.size, MIB);
    server.stop();
}

#[test]
fn plain_bytes_after_starttls_close_the_connection() {
    let Some(certs) = certs("plain_bytes_after_starttls_close_the_connection") else {
        return;
    };
    let server = tls_server(&certs, TlsMode::Require, false);
    let mut c = starttls_acked(&server);
    // An option in clear where the TLS ClientHello should be.
    c.send_lenient(&Client::option_bytes(opt::LIST, &[]));
    let mut rest = Vec::new();
    let _ = c.s.read_to_end(&mut rest);
    assert!(
        !String::from_utf8_lossy(&rest).contains("disk"),
        "the export list leaked: {rest:02x?}"
    );
    let line = server.wait_log("TLS handshake failed");
    assert!(line.contains("unix:"), "{line}");
    still_serves(&server, &certs);
    server.stop();
}

#[test]
fn a_client_that_distrusts_the_server_fails_cleanly() {
    let Some(certs) = certs("a_client_that_distrusts_the_server_fails_cleanly") else {
        return;
    };
    let server = tls_server(&certs, TlsMode::Require, false);
    let err = nbdinfo_fails(&tcp_uri(&server, &certs.other_ca));
    assert!(err.contains("certificate"), "nbdinfo said: {err}");
    server.wait_log("TLS handshake failed");
    still_serves(&server, &certs);
    server.stop();
}

#[test]
fn a_client_certificate_from_another_ca_is_refused() {
    let Some(certs) = certs("a_client_certificate_from_another_ca_is_refused") else {
        return;
    };
    // Not required, but checked when presented. (GnuTLS presents only a
    // certificate from a CA the server names, so the raw client here.)
    let server = tls_server(&certs, TlsMode::Require, false);
    let c = starttls_acked(&server);
    let mut t = raw_tls_client(
        c.s,
        &certs.client.join("ca-cert.pem"),
        Some(&certs.foreign_client),
    );
    let sent = t.write_all(&Client::option_bytes(opt::LIST, &[]));
    let mut got = [0u8; 20];
    let read = t.read_exact(&mut got);
    assert!(
        sent.is_err() || read.is_err(),
        "the server answered a client whose certificate it cannot check: {got:02x?}"
    );
    let line = server.wait_log("TLS handshake failed");
    assert!(line.contains("certificate"), "{line}");
    still_serves(&server, &certs);
    server.stop();
}

#[test]
fn verify_peer_requires_a_client_certificate() {
    let Some(certs) = certs("verify_peer_requires_a_client_certificate") else {
        return;
    };
    let server = tls_server(&certs, TlsMode::Require, true);
    // A client with the CA but no certificate of its own, and one whose
    // certificate another CA signed (which GnuTLS then does not present).
    let anon = temp_dir("tlsanon");
    std::fs::copy(
        certs.client.join("ca-cert.pem"),
        anon.path().join("ca-cert.pem"),
    )
    .expect("copying the CA certificate");
    for (n, dir) in [anon.path(), certs.foreign_client.as_path()]
        .into_iter()
        .enumerate()
    {
        nbdinfo_fails(&tcp_uri(&server, dir));
        server.wait_log_count(n + 1);
    }
    for line in server.log_lines() {
        assert!(line.contains("TLS handshake failed"), "{line}");
    }
    // The client with its certificate is served.
    still_serves(&server, &certs);
    server.stop();
}

/// A raw client through TLS, over the Unix socket: rustls's client side,
/// trusting `ca`.
fn raw_tls_client(
    sock: UnixStream,
    ca: &Path,
    cert_dir: Option<&Path>,
) -> rustls::StreamOwned<rustls::ClientConnection, UnixStream> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).expect("reading the CA") {
        roots
            .add(cert.expect("a CA certificate"))
            .expect("adding the CA");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots);
    let config = match cert_dir {
        None => config.with_no_client_auth(),
        Some(dir) => {
            let chain = CertificateDer::pem_file_iter(dir.join("client-cert.pem"))
                .expect("reading the client certificate")
                .collect::<Result<Vec<_>, _>>()
                .expect("the client certificate");
            let key = PrivateKeyDer::from_pem_file(dir.join("client-key.pem"))
                .expect("reading the client key");
            config
                .with_client_auth_cert(chain, key)
                .expect("the client certificate and key")
        }
    };
    let name = "localhost".try_into().expect("a server name");
    let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("a TLS client");
    rustls::StreamOwned::new(conn, sock)
}

fn read_reply(s: &mut impl Read) -> (u32, u32, Vec<u8>) {
    let mut h = [0u8; 20];
    s.read_exact(&mut h).expect("reading an option reply");
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let mut data = vec![0u8; be32(&h[16..]) as usize];
    s.read_exact(&mut data).expect("reading an option reply");
    (be32(&h[8..]), be32(&h[12..]), data)
}

#[test]
fn options_go_on_inside_tls_and_a_second_starttls_is_invalid() {
    let Some(certs) = certs("options_go_on_inside_tls_and_a_second_starttls_is_invalid") else {
        return;
    };
    let server = tls_server(&certs, TlsMode::Require, false);
    let c = starttls_acked(&server);
    let mut t = raw_tls_client(c.s, &certs.client.join("ca-cert.pem"), None);
    t.write_all(&Client::option_bytes(opt::STARTTLS, &[]))
        .expect("sending STARTTLS again");
    let (option, kind, _) = read_reply(&mut t);
    assert_eq!((option, kind), (opt::STARTTLS, rep::ERR_INVALID));
    t.write_all(&Client::option_bytes(opt::LIST, &[]))
        .expect("sending LIST");
    let (option, kind, data) = read_reply(&mut t);
    assert_eq!((option, kind), (opt::LIST, rep::SERVER));
    assert!(data.ends_with(b"disk"), "{data:02x?}");
    let (_, kind, _) = read_reply(&mut t);
    assert_eq!(kind, rep::ACK);
    t.write_all(&Client::option_bytes(opt::ABORT, &[]))
        .expect("sending ABORT");
    let (option, kind, _) = read_reply(&mut t);
    assert_eq!((option, kind), (opt::ABORT, rep::ACK));
    server.stop();
}

#[test]
fn missing_or_bad_certificate_files_are_named() {
    let dir = temp_dir("tlsbad");
    let e = TlsConfig::load(dir.path(), TlsMode::On, false).expect_err("an empty directory");
    let msg = common::chain(&e);
    assert!(
        msg.contains("server-cert.pem") && msg.contains("missing"),
        "{msg}"
    );
    std::fs::write(dir.path().join("server-cert.pem"), "not PEM\n").expect("writing");
    let msg = common::chain(&TlsConfig::load(dir.path(), TlsMode::On, false).expect_err("bad"));
    assert!(msg.contains("server-cert.pem"), "{msg}");
    let Some(certs) = certs("missing_or_bad_certificate_files_are_named") else {
        return;
    };
    std::fs::copy(
        certs.server.join("server-cert.pem"),
        dir.path().join("server-cert.pem"),
    )
    .expect("copying");
    let msg = common::chain(&TlsConfig::load(dir.path(), TlsMode::On, false).expect_err("no key"));
    assert!(
        msg.contains("server-key.pem") && msg.contains("missing"),
        "{msg}"
    );
    // A key that is not the certificate's.
    std::fs::copy(
        certs.client.join("client-key.pem"),
        dir.path().join("server-key.pem"),
    )
    .expect("copying");
    let msg =
        common::chain(&TlsConfig::load(dir.path(), TlsMode::On, false).expect_err("wrong key"));
    assert!(msg.contains("do not make a usable"), "{msg}");
    // --tls-verify-peer needs the CA.
    std::fs::copy(
        certs.server.join("server-key.pem"),
        dir.path().join("server-key.pem"),
    )
    .expect("copying");
    TlsConfig::load(dir.path(), TlsMode::On, false).expect("cert and key suffice");
    let msg = common::chain(&TlsConfig::load(dir.path(), TlsMode::On, true).expect_err("no CA"));
    assert!(
        msg.contains("ca-cert.pem") && msg.contains("missing"),
        "{msg}"
    );
}

/// One request's bytes.
fn request_bytes(kind: u16, cookie: u64, offset: u64, len: u32) -> Vec<u8> {
    let mut b = proto::REQUEST_MAGIC.to_be_bytes().to_vec();
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&len.to_be_bytes());
    b
}

#[test]
fn pipelined_requests_through_tls_while_throttled_all_get_answers() {
    let Some(certs) = certs("pipelined_requests_through_tls_while_throttled_all_get_answers")
    else {
        return;
    };
    // One request in flight at a time: the rest wait decrypted in rustls
    // (or in the input buffer) after the socket is drained, and must still
    // be read once the throttle lifts, with no new socket event.
    let tls = TlsConfig::load(&certs.server, TlsMode::Require, false).expect("certificates");
    let server = TestServer::start_with(&["disk=mem:4m"], |c: &mut ServerConfig| {
        c.tls = Some(tls);
        c.max_inflight = 1;
    });
    let c = starttls_acked(&server);
    let mut t = raw_tls_client(c.s, &certs.client.join("ca-cert.pem"), None);
    t.write_all(&Client::option_bytes(
        opt::GO,
        &common::info_data("disk", &[]),
    ))
    .expect("sending GO");
    loop {
        let (_, kind, _) = read_reply(&mut t);
        assert!(
            kind == rep::INFO || kind == rep::ACK,
            "GO answered {kind:#x}"
        );
        if kind == rep::ACK {
            break;
        }
    }
    const N: u64 = 300;
    let block = |i: u64| common::pattern(i, 4096);
    let mut out = Vec::new();
    for i in 0..N {
        out.extend(request_bytes(proto::cmd::WRITE, i, i * 4096, 4096));
        out.extend(block(i));
    }
    for i in 0..N {
        out.extend(request_bytes(proto::cmd::READ, N + i, i * 4096, 4096));
    }
    // One write of it all, while nothing is read back: the socket buffers
    // are big enough for the replies of the writes; the reads' data waits.
    let mut sender = t.sock.try_clone().expect("cloning the socket");
    let mut conn = t.conn;
    let mut pending = &out[..];
    let mut tls_out = Vec::new();
    while !pending.is_empty() {
        let n = conn.writer().write(pending).expect("encrypting");
        pending = &pending[n..];
        while conn.wants_write() {
            conn.write_tls(&mut tls_out).expect("encrypting");
        }
    }
    let writer = std::thread::spawn(move || {
        sender.write_all(&tls_out).expect("sending the requests");
    });
    let mut t = rustls::StreamOwned::new(conn, t.sock);
    let mut seen = vec![false; 2 * N as usize];
    for _ in 0..2 * N {
        let mut h = [0u8; 16];
        t.read_exact(&mut h).expect("reading a reply");
        let error = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
        let cookie = u64::from_be_bytes(h[8..16].try_into().expect("8 bytes"));
        assert_eq!(error, 0, "request {cookie} failed");
        assert!(cookie < 2 * N && !seen[cookie as usize], "cookie {cookie}");
        seen[cookie as usize] = true;
        if cookie >= N {
            let mut data = vec![0u8; 4096];
            t.read_exact(&mut data).expect("reading a read's data");
            assert!(
                data == block(cookie - N),
                "read {} came back wrong",
                cookie - N
            );
        }
    }
    writer.join().expect("the writer thread");
    server.stop();
}

/// TLS with every device kind (a file, memory, a simulated disk that one
/// worker serves alone) on two workers: 4 MiB in with nbdcopy, and back
/// out with libnbd's Python bindings (the exports are bigger).
#[test]
fn tls_works_with_every_device_kind() {
    let Some(certs) = certs("tls_works_with_every_device_kind") else {
        return;
    };
    let dir = temp_dir("tlskinds");
    let backing = dir.path().join("backing.img");
    std::fs::File::create(&backing)
        .and_then(|f| f.set_len(16 * MIB))
        .expect("backing file");
    let file = format!("file=file:{}", backing.display());
    let tls = TlsConfig::load(&certs.server, TlsMode::Require, false)
        .unwrap_or_else(|e| panic!("loading the certificates: {}", common::chain(&e)));
    let server = TestServer::start_with(
        &[&file, "mem=mem:16m", "disk=ssd-sata,scheduler=bfq"],
        |c: &mut ServerConfig| {
            c.tls = Some(tls);
            c.threads = 2;
        },
    );
    let img = dir.path().join("in.img");
    write_image(&img, 4 * MIB, 0x7150);
    for export in ["file", "mem", "disk"] {
        let uri = format!(
            "nbds+unix:///{export}?socket={}&tls-certificates={}",
            server.sock.display(),
            certs.client.display()
        );
        assert!(nbdinfo_size(&uri) >= 4 * MIB, "{export}");
        run_ok(Command::new("nbdcopy").arg("--flush").arg(&img).arg(&uri));
        let back = dir.path().join(format!("{export}.img"));
        let script = format!(
            "import nbd\nh = nbd.NBD()\nh.set_uri_allow_local_file(True)\nh.connect_uri({uri:?})\n\
             open({out:?}, 'wb').write(h.pread({len}, 0))\nh.shutdown()\n",
            out = back.display().to_string(),
            len = 4 * MIB
        );
        run_ok(Command::new("/usr/bin/python3").arg("-c").arg(script));
        assert_same_file(&img, &back);
    }
    server.stop();
}
