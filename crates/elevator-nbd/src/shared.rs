//! The state that handling a connection needs on one worker, whatever its
//! phase ([`Shared`]): the exports, this worker's engine on each, the
//! requests at those engines and whom to answer for each ([`InFlight`]),
//! the data buffer pool, the configuration, whether the server is
//! stopping, and whether connections hold too much memory. The worker owns
//! it and lends it to the handshake and the transmission phase.

use std::sync::Arc;

use elevator_io::mq::MqEngine;
use elevator_io::spec::RealDevice;

use crate::config::ServerConfig;
use crate::export::Export;
use crate::pool::{Buf, Pool};

/// A request at an engine: whom to answer and how.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct InFlight {
    pub conn: u32,
    pub generation: u32,
    pub cookie: u64,
    pub kind: u16,
    pub offset: u64,
    /// Data bytes it holds (counted in its connection's
    /// [`Conn::inflight_bytes`](crate::conn::Conn::inflight_bytes)).
    pub len: u32,
}

/// The state every connection's handling needs, on one worker.
pub(crate) struct Shared {
    /// Every export, as all workers see it.
    pub exports: Arc<[Export]>,
    /// This worker's engine on each export (`None` where another worker
    /// serves the export alone).
    pub engines: Vec<Option<MqEngine<RealDevice, Buf>>>,
    pub inflight: Vec<InFlight>,
    pub free_inflight: Vec<u32>,
    pub pool: Pool,
    pub cfg: Arc<ServerConfig>,
    pub stopping: bool,
    /// Connections together hold more than
    /// [`ServerConfig::max_total_bytes`]: those holding more than
    /// `fair_share` are not read from.
    pub over_budget: bool,
    /// See `over_budget`.
    pub fair_share: u64,
}
