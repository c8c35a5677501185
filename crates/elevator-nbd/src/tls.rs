//! TLS for NBD (`NBD_OPT_STARTTLS`): the certificates a server presents,
//! loaded from a directory laid out as nbdkit's and libnbd's
//! ([`TlsConfig`]), and one connection's TLS session over its non-blocking
//! socket ([`TlsSession`]), which [`crate::conn::Conn`] reads and writes
//! through once the client has sent `STARTTLS`.
//!
//! The directory holds `server-cert.pem` (the server's certificate chain),
//! `server-key.pem` (its private key) and, optionally, `ca-cert.pem`: when
//! it is there, a client that presents a certificate must present one that
//! `ca-cert.pem` signed, or the handshake fails; a client without one is
//! let in, as nbdkit does, unless [`TlsConfig::verify_peer`] asks for one.
//!
//! The option side (`gate`): `STARTTLS` is acknowledged in clear, then
//! the TLS handshake runs over the same socket and option haggling goes on
//! inside TLS. With [`TlsMode::Require`], nothing but `STARTTLS` and `ABORT`
//! is answered before TLS is on.
//!
//! Only certificates: rustls has no external pre-shared keys (TLS-PSK), so
//! the PSK files of GnuTLS-based servers are not supported.

use std::io::{self, IoSlice, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConnection};
use thiserror::Error;

use crate::conn::Conn;
use crate::handshake;
use crate::proto::{OptionHeader, opt, rep};

/// The CA certificate, in the certificates directory.
pub const CA_CERT: &str = "ca-cert.pem";
/// The server's certificate chain, in the certificates directory.
pub const SERVER_CERT: &str = "server-cert.pem";
/// The server's private key, in the certificates directory.
pub const SERVER_KEY: &str = "server-key.pem";

/// Encrypted output rustls may hold for a connection before it takes no
/// more plaintext (rustls's default is 64 KiB: more means fewer writes for
/// big read replies).
pub(crate) const TLS_OUT_LIMIT: usize = 1 << 20;
/// Bytes read from the socket at a time, then handed to rustls (which reads
/// 4 KiB at a time itself: one system call per 4 KiB).
const TLS_IN: usize = 64 << 10;

/// The TLS settings cannot be used.
#[derive(Debug, Error)]
pub enum TlsError {
    /// A file the directory must hold is not there.
    #[error(
        "{}: missing (the --tls-certificates directory must hold {SERVER_CERT} and \
         {SERVER_KEY}, and {CA_CERT} to check client certificates)",
        path.display()
    )]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// A file cannot be read, or is not PEM.
    #[error("{}: not a readable PEM file", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: pem::Error,
    },
    /// A PEM file holds none of what it should.
    #[error("{}: holds no {what}", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
        /// What it should hold.
        what: &'static str,
    },
    /// rustls refuses the certificates (say, a key that is not the
    /// certificate's).
    #[error("{what}")]
    Refused {
        /// What was being set up.
        what: String,
        /// Why.
        #[source]
        source: rustls::Error,
    },
    /// The CA certificate cannot check client certificates.
    #[error("{}: cannot check client certificates with it", path.display())]
    Verifier {
        /// The CA file.
        path: PathBuf,
        /// Why.
        #[source]
        source: rustls::server::VerifierBuilderError,
    },
}

/// Whether clients may, or must, use TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    /// Clients may send `STARTTLS`; those that do not are served in clear.
    On,
    /// Clients must send `STARTTLS` before anything else: every other
    /// option but `ABORT` is refused with `NBD_REP_ERR_TLS_REQD`, and
    /// `EXPORT_NAME` closes the connection.
    Require,
}

/// TLS, loaded and ready: what [`crate::ServerConfig::tls`] holds.
#[derive(Clone, Debug)]
pub struct TlsConfig {
    /// May or must clients use it.
    pub mode: TlsMode,
    /// The directory the certificates came from.
    pub certificates: PathBuf,
    /// Clients must present a certificate signed by `ca-cert.pem`.
    pub verify_peer: bool,
    rustls: Arc<rustls::ServerConfig>,
}

fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|source| pem_error(path, source))?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            path: path.to_path_buf(),
            what: "certificate",
        });
    }
    Ok(certs)
}

fn pem_error(path: &Path, source: pem::Error) -> TlsError {
    match &source {
        pem::Error::Io(e) if e.kind() == io::ErrorKind::NotFound => TlsError::Missing {
            path: path.to_path_buf(),
        },
        pem::Error::NoItemsFound => TlsError::Empty {
            path: path.to_path_buf(),
            what: "private key",
        },
        _ => TlsError::Pem {
            path: path.to_path_buf(),
            source,
        },
    }
}

impl TlsConfig {
    /// Load the certificates in `dir` (see the module documentation). With
    /// `verify_peer`, clients must present a certificate that `ca-cert.pem`
    /// signed (which must then be there).
    pub fn load(dir: &Path, mode: TlsMode, verify_peer: bool) -> Result<TlsConfig, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cert_path = dir.join(SERVER_CERT);
        let key_path = dir.join(SERVER_KEY);
        let ca_path = dir.join(CA_CERT);
        let chain = load_certs(&cert_path)?;
        let key = PrivateKeyDer::from_pem_file(&key_path).map_err(|e| pem_error(&key_path, e))?;
        let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|source| TlsError::Refused {
                what: "no TLS version to offer".into(),
                source,
            })?;
        let builder = if verify_peer || ca_path.exists() {
            let mut roots = RootCertStore::empty();
            for cert in load_certs(&ca_path)? {
                roots.add(cert).map_err(|source| TlsError::Refused {
                    what: format!("{}: not a usable CA certificate", ca_path.display()),
                    source,
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if verify_peer {
                verifier
            } else {
                verifier.allow_unauthenticated()
            };
            let verifier = verifier.build().map_err(|source| TlsError::Verifier {
                path: ca_path.clone(),
                source,
            })?;
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let mut config =
            builder
                .with_single_cert(chain, key)
                .map_err(|source| TlsError::Refused {
                    what: format!(
                        "{} and {} do not make a usable certificate and key",
                        cert_path.display(),
                        key_path.display()
                    ),
                    source,
                })?;
        // NBD clients do not resume sessions: no tickets to keep.
        config.send_tls13_tickets = 0;
        Ok(TlsConfig {
            mode,
            certificates: dir.to_path_buf(),
            verify_peer,
            rustls: Arc::new(config),
        })
    }

    /// A new server-side session for one connection.
    pub(crate) fn session(&self) -> Result<ServerConnection, rustls::Error> {
        let mut tls = ServerConnection::new(Arc::clone(&self.rustls))?;
        tls.set_buffer_limit(Some(TLS_OUT_LIMIT));
        Ok(tls)
    }
}

/// One connection's TLS: the rustls session, the plain bytes (the
/// `STARTTLS` reply and any replies before it) that must reach the socket
/// before the first TLS record, and what was read from the socket and not
/// yet handed to rustls.
pub struct TlsSession {
    tls: ServerConnection,
    plain: Vec<u8>,
    plain_sent: usize,
    rx: Box<[u8]>,
    rx_start: usize,
    rx_end: usize,
}

impl TlsSession {
    /// A session that first sends `plain` in clear, then TLS. `early` is
    /// input that came after `STARTTLS` before the session existed: it is
    /// the start of the client's TLS handshake (or a client that did not
    /// wait for the reply, which the handshake then refuses).
    pub(crate) fn start(
        mut tls: ServerConnection,
        plain: Vec<u8>,
        mut early: &[u8],
    ) -> Result<TlsSession, String> {
        while !early.is_empty() {
            match tls.read_tls(&mut early) {
                Ok(_) => {}
                Err(e) => return Err(format!("TLS handshake failed: {e}")),
            }
            tls.process_new_packets()
                .map_err(|e| format!("TLS handshake failed: {e}"))?;
        }
        Ok(TlsSession {
            tls,
            plain,
            plain_sent: 0,
            rx: vec![0u8; TLS_IN].into_boxed_slice(),
            rx_start: 0,
            rx_end: 0,
        })
    }

    fn failure(&self, e: &dyn std::fmt::Display) -> io::Error {
        let what = if self.tls.is_handshaking() {
            "TLS handshake failed"
        } else {
            "TLS error"
        };
        io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {e}"))
    }

    /// Decrypted input into `buf`: what rustls already holds, else what the
    /// socket has (read 64 KiB at a time), decrypted. `Ok(0)` is the end of the stream;
    /// `WouldBlock` means the socket is drained and rustls holds nothing.
    /// A TLS failure is `InvalidData`, saying why (after a try at sending
    /// the alert that tells the client).
    pub(crate) fn read(
        &mut self,
        sock: &mut (impl Read + Write),
        buf: &mut [u8],
    ) -> io::Result<usize> {
        loop {
            match self.tls.reader().read(buf) {
                Ok(n) => return Ok(n),
                // Closed without close_notify: clients often just close.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            let got = if self.rx_start < self.rx_end {
                let mut pending = &self.rx[self.rx_start..self.rx_end];
                let taken = self.tls.read_tls(&mut pending)?;
                self.rx_start += taken;
                taken
            } else {
                let n = sock.read(&mut self.rx)?;
                self.rx_start = 0;
                self.rx_end = n;
                if n > 0 {
                    continue;
                }
                // End of the stream: rustls learns it from a read of 0.
                self.tls.read_tls(&mut io::empty())?
            };
            if let Err(e) = self.tls.process_new_packets() {
                let err = self.failure(&e);
                // The alert rustls queued; the connection ends anyway.
                let _ = self.send(sock);
                return Err(err);
            }
            if got == 0 {
                if self.tls.is_handshaking() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "TLS handshake failed: the client closed the connection during it \
                         (did it reject the server's certificate?)",
                    ));
                }
                // End of the stream: what rustls still holds, then 0.
                return match self.tls.reader().read(buf) {
                    Ok(n) => Ok(n),
                    Err(_) => Ok(0),
                };
            }
        }
    }

    /// Encrypt as much of `bufs` as rustls takes; the number of bytes taken
    /// (0 when its output is full: [`TlsSession::send`] first).
    pub(crate) fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.tls.writer().write_vectored(bufs)
    }

    /// Write the plain prefix and rustls's records to the socket: `Ok(true)`
    /// when all is out, `Ok(false)` when the socket took what it could.
    pub(crate) fn send(&mut self, sock: &mut impl Write) -> io::Result<bool> {
        while self.plain_sent < self.plain.len() {
            match sock.write(&self.plain[self.plain_sent..]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => self.plain_sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if !self.plain.is_empty() {
            self.plain = Vec::new();
            self.plain_sent = 0;
        }
        while self.tls.wants_write() {
            match self.tls.write_tls(sock) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Whether output waits in the session (its byte count is not known:
    /// rustls does not say how much it holds).
    pub(crate) fn has_output(&self) -> bool {
        self.plain_sent < self.plain.len() || self.tls.wants_write()
    }

    /// Whether the TLS handshake is still under way.
    pub fn is_handshaking(&self) -> bool {
        self.tls.is_handshaking()
    }
}

/// What [`gate`] did with an option.
pub(crate) enum TlsGate {
    /// Not its business: the handshake handles the option.
    Pass,
    /// Answered (or the connection failed): nothing more to do.
    Handled,
}

/// The TLS side of option haggling, before any other handling of option
/// `h`: `STARTTLS` itself, and, when TLS is required and not yet on, the
/// refusal of every option but `ABORT` (`NBD_REP_ERR_TLS_REQD`; for
/// `EXPORT_NAME`, which has no error reply, the connection closes).
pub(crate) fn gate(
    c: &mut Conn,
    config: Option<&TlsConfig>,
    h: OptionHeader,
    data: &[u8],
) -> TlsGate {
    if h.option == opt::STARTTLS {
        starttls(c, config, data);
        return TlsGate::Handled;
    }
    let required = config.is_some_and(|t| t.mode == TlsMode::Require);
    if !required || c.is_tls() {
        return TlsGate::Pass;
    }
    if h.option == opt::ABORT {
        if c.negotiated.refused_for_tls {
            handshake::reply(c, h.option, rep::ACK, &[]);
            c.closing = Some(
                "client aborted the handshake after its options were refused: TLS is \
                 required (--tls=require) and it did not send STARTTLS"
                    .into(),
            );
            return TlsGate::Handled;
        }
        return TlsGate::Pass;
    }
    c.negotiated.refused_for_tls = true;
    if h.option == opt::EXPORT_NAME {
        c.fail("EXPORT_NAME without STARTTLS, and TLS is required (--tls=require)");
    } else {
        handshake::reply(
            c,
            h.option,
            rep::ERR_TLS_REQD,
            b"TLS is required: send STARTTLS first",
        );
    }
    TlsGate::Handled
}

/// `STARTTLS`: refused if it has data, if TLS is already on, or if the
/// server has no TLS; else acknowledged (in clear) and the connection
/// switches to TLS.
fn starttls(c: &mut Conn, config: Option<&TlsConfig>, data: &[u8]) {
    let option = opt::STARTTLS;
    if !data.is_empty() {
        handshake::reply(c, option, rep::ERR_INVALID, b"STARTTLS takes no data");
        return;
    }
    // ERR_UNSUP, as for any option the server does not do (nbdkit says
    // ERR_POLICY when built with TLS; clients treat both alike).
    let Some(config) = config else {
        handshake::reply(
            c,
            option,
            rep::ERR_UNSUP,
            b"TLS is off on this server (elevator serve --tls=off)",
        );
        return;
    };
    if c.is_tls() {
        handshake::reply(c, option, rep::ERR_INVALID, b"TLS is already on");
        return;
    }
    handshake::reply(c, option, rep::ACK, &[]);
    c.start_tls(config);
}
