//! The state that handling a connection needs, whatever its phase
//! ([`Shared`]): the exports, the requests at their engines and whom to
//! answer for each ([`InFlight`]), the data buffer pool, the configuration,
//! and whether the server is stopping. The server owns it and lends it to
//! the handshake and the transmission phase.

use crate::config::ServerConfig;
use crate::export::Export;
use crate::pool::Pool;

/// A request at an engine: whom to answer and how.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct InFlight {
    pub conn: u32,
    pub generation: u32,
    pub cookie: u64,
    pub kind: u16,
    pub offset: u64,
}

/// The state every connection's handling needs.
pub(crate) struct Shared {
    pub exports: Vec<Export>,
    pub inflight: Vec<InFlight>,
    pub free_inflight: Vec<u32>,
    pub pool: Pool,
    pub cfg: ServerConfig,
    pub stopping: bool,
}
