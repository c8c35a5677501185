//! The NBD server's scenario (`nbd/mem-rw`): an [`elevator_nbd::Server`]
//! with one worker on a 64 MiB memory export, on a Unix socket in a
//! temporary directory, and a client thread in this process sending 4 KiB
//! reads and writes, one at a time (a write every fourth request), at
//! positions from a fixed seed. The client's own instructions are left out
//! of the count ([`CLIENT_SYMBOL`]); the server's (its worker's event
//! loop, the protocol, the queue, the memory device) are the count.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use elevator_core::rng::Rng;
use elevator_nbd::proto::{self, cmd, opt};
use elevator_nbd::{ExportSpec, Server, ServerConfig};

/// The client's function: the count leaves out the thread that ran it.
pub const CLIENT_SYMBOL: &str = "elevator_run::cost::nbd::client*";

/// The export's size.
const EXPORT_BYTES: u64 = 64 << 20;
/// Bytes per request.
const BS: u32 = 4096;

/// Why the scenario failed.
#[derive(Debug, thiserror::Error)]
pub enum NbdError {
    /// The server could not be set up or failed.
    #[error("the server: {0}")]
    Server(String),
    /// The client's socket failed.
    #[error("the client: {0}")]
    Client(#[from] std::io::Error),
    /// The server answered something unexpected.
    #[error("the server answered {0}")]
    Protocol(String),
}

/// A scratch directory for the socket, removed when dropped.
struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Scratch: failing to remove it changes nothing measured.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Serve, run `ops` requests from a client thread, stop the server; return
/// the requests answered.
pub fn run(ops: u64) -> Result<u64, NbdError> {
    let dir =
        ScratchDir(std::env::temp_dir().join(format!("elevator-cost-nbd-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0)?;
    let sock = dir.0.join("nbd.sock");
    let export = ExportSpec::parse(&format!("mem:{}", EXPORT_BYTES))
        .map_err(|e| NbdError::Server(e.to_string()))?;
    let cfg = ServerConfig {
        exports: vec![export],
        unix: vec![sock.clone()],
        threads: 1,
        // No spinning between passes: a spin's length is the wall clock's.
        poll_spin: Duration::ZERO,
        ..ServerConfig::default()
    };
    let mut server =
        Server::bind(cfg, Box::new(|_: &str| {})).map_err(|e| NbdError::Server(e.to_string()))?;
    let (stop_rx, mut stop_tx) = UnixStream::pair()?;
    std::thread::scope(|s| {
        let serving = s.spawn(move || server.run(stop_rx.as_fd()));
        let sock = sock.as_path();
        let answered = s
            .spawn(move || client(sock, ops))
            .join()
            .unwrap_or_else(|_| Err(NbdError::Protocol("a panic in the client".into())));
        // The server may have ended already (and closed its end).
        let _ = stop_tx.write_all(b"x");
        let served = serving
            .join()
            .map_err(|_| NbdError::Server("a panic in the server".into()))?;
        served.map_err(|e| NbdError::Server(e.to_string()))?;
        answered
    })
}

/// The client: handshake (fixed newstyle, `EXPORT_NAME`), `ops` requests,
/// then `DISC`. Never inlined: its symbol is what the count leaves out.
#[inline(never)]
fn client(sock: &Path, ops: u64) -> Result<u64, NbdError> {
    let mut s = UnixStream::connect(sock)?;
    s.set_read_timeout(Some(Duration::from_secs(600)))?;
    let mut greeting = [0u8; proto::GREETING_LEN];
    s.read_exact(&mut greeting)?;
    if greeting[..8] != proto::NBDMAGIC.to_be_bytes() {
        return Err(NbdError::Protocol(format!("the greeting {greeting:02x?}")));
    }
    s.write_all(&(proto::CLIENT_FIXED_NEWSTYLE | proto::CLIENT_NO_ZEROES).to_be_bytes())?;
    let mut option = proto::IHAVEOPT.to_be_bytes().to_vec();
    option.extend_from_slice(&opt::EXPORT_NAME.to_be_bytes());
    option.extend_from_slice(&0u32.to_be_bytes());
    s.write_all(&option)?;
    let mut export = [0u8; 10];
    s.read_exact(&mut export)?;
    let size = u64::from_be_bytes(export[..8].try_into().unwrap_or_default());
    if size != EXPORT_BYTES {
        return Err(NbdError::Protocol(format!("an export of {size} bytes")));
    }
    let mut rng = Rng::new(0x0000_284E_4244);
    // A request and its payload go out in one write, so that the server
    // finds a request whole, as often in every run: a request in two parts
    // would cost it a pass of its loop more or less by the scheduling.
    let mut request = vec![0x5Au8; 28 + BS as usize];
    let mut data = vec![0u8; BS as usize];
    let mut reply = [0u8; 16];
    let blocks = EXPORT_BYTES / u64::from(BS);
    for cookie in 0..ops {
        let write = cookie % 4 == 3;
        let kind = if write { cmd::WRITE } else { cmd::READ };
        let offset = rng.below(blocks) * u64::from(BS);
        request[..4].copy_from_slice(&proto::REQUEST_MAGIC.to_be_bytes());
        request[4..6].copy_from_slice(&0u16.to_be_bytes());
        request[6..8].copy_from_slice(&kind.to_be_bytes());
        request[8..16].copy_from_slice(&cookie.to_be_bytes());
        request[16..24].copy_from_slice(&offset.to_be_bytes());
        request[24..28].copy_from_slice(&BS.to_be_bytes());
        s.write_all(if write { &request } else { &request[..28] })?;
        s.read_exact(&mut reply)?;
        let ok = reply[..4] == proto::SIMPLE_REPLY_MAGIC.to_be_bytes()
            && reply[4..8] == [0; 4]
            && reply[8..16] == cookie.to_be_bytes();
        if !ok {
            return Err(NbdError::Protocol(format!(
                "{reply:02x?} to request {cookie}"
            )));
        }
        if !write {
            s.read_exact(&mut data)?;
        }
    }
    let mut disc = [0u8; 28];
    disc[..4].copy_from_slice(&proto::REQUEST_MAGIC.to_be_bytes());
    disc[6..8].copy_from_slice(&cmd::DISC.to_be_bytes());
    s.write_all(&disc)?;
    Ok(ops)
}
