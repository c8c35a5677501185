//! The state that handling a connection needs on one worker, whatever its
//! phase ([`Shared`]): the exports, this worker's engine on each, the
//! requests at those engines and whom to answer for each ([`InFlight`]),
//! the data buffer pool, the configuration, the hub (for the memory budget
//! and the connection count), and whether the server is stopping. The
//! worker owns it and lends it to the handshake and the transmission phase.

use std::sync::Arc;

use elevator_io::mq::MqEngine;
use elevator_io::spec::RealDevice;

use crate::config::ServerConfig;
use crate::export::Export;
use crate::hub::Hub;
use crate::pool::{Buf, Pool};
use crate::proto::Request;
use crate::rmw::{Held, RmwOp};

/// A request at an engine: whom to answer and how.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct InFlight {
    pub conn: u32,
    pub generation: u32,
    pub cookie: u64,
    pub kind: u16,
    pub offset: u64,
    /// Bytes of the budget reserved for it (its data and its reply),
    /// given back when it completes.
    pub reserved: u64,
    /// Its export.
    pub export: u32,
    /// The range it holds, if its export serialises writes.
    pub lock: Option<Held>,
    /// A step of read-modify-write `rmw - 1` (0: none).
    pub rmw: u32,
}

impl InFlight {
    /// Request `r` of connection `conn` (slot generation `generation`) on
    /// export `export`, holding nothing yet.
    pub fn of(conn: u32, generation: u32, export: usize, r: &Request) -> InFlight {
        InFlight {
            conn,
            generation,
            cookie: r.cookie,
            kind: r.kind,
            offset: r.offset,
            export: export as u32,
            ..InFlight::default()
        }
    }
}

/// A free slot of `table`, from its free list `free` or else a new one
/// made by `empty`: its index.
pub(crate) fn free_slot<T>(
    table: &mut Vec<T>,
    free: &mut Vec<u32>,
    empty: impl FnOnce() -> T,
) -> u32 {
    match free.pop() {
        Some(i) => i,
        None => {
            table.push(empty());
            table.len() as u32 - 1
        }
    }
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
    /// Read-modify-writes in flight, and their free slots.
    pub rmw: Vec<Option<RmwOp>>,
    pub free_rmw: Vec<u32>,
    pub pool: Pool,
    pub cfg: Arc<ServerConfig>,
    pub hub: Arc<Hub>,
    pub stopping: bool,
}

impl Shared {
    /// Connections open, on every worker.
    pub fn live(&self) -> u64 {
        u64::from(
            self.hub
                .live
                .load(std::sync::atomic::Ordering::Relaxed)
                .max(1),
        )
    }
}
