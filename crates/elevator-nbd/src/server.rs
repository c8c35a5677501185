//! The server: exports, listeners and worker threads.
//!
//! [`Server::bind`] opens every export for [`ServerConfig::threads`]
//! workers (a device handle and a software context of the export's
//! multi-queue layer each; see [`ExportSpec::open`](crate::ExportSpec::open)) and binds the
//! listeners. [`Server::run`] starts the workers (module `worker`),
//! each with its own epoll loop and io_uring rings, and waits for them.
//! Worker 0 runs on the caller's thread: it accepts every connection and
//! runs every handshake (module `accept`), then hands each
//! connection to the worker serving fewest connections among those that
//! serve its export. A connection's requests are its own I/O context, so
//! fair schedulers share the disk between clients; on an export with a
//! scheduler, the scheduler's queue is the export's, and any worker's
//! dispatch round may run any connection's requests on its own ring.
//!
//! Shutting down (the stop descriptor becomes readable): listeners close,
//! connections still in the handshake close, the others stop taking
//! requests; when everything in flight has completed and been answered,
//! every writable export is flushed, and the connections close.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::BorrowedFd;
use std::os::unix::net::UnixListener;
use std::sync::{Arc, Mutex};

use elevator_io::mq::{MqEngine, MultiQueue};
use elevator_io::spec::RealDevice;
use elevator_io::write_log::{WriteLog, WriteLogOptions};
use elevator_trace::tap::{CpuRule, SharedSink, TraceSummary, TraceTap, trace_dev};
use thiserror::Error;

pub use crate::config::{ConfigError, ServerConfig};
use crate::export::{Export, ExportError, Opened};
use crate::hub::Hub;
use crate::pool::{Buf, Pool};
use crate::shared::Shared;
use crate::unix_socket::{UnixSocketFile, bind_unix};
use crate::worker::Worker;

/// The server cannot start or go on.
#[derive(Debug, Error)]
pub enum ServerError {
    /// An export cannot be opened.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// The configuration cannot be served with.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A step of setting up was asked for out of turn (an export that is
    /// not there, a write log once the devices serve, a second run), or
    /// the write log cannot be created.
    #[error("{0}")]
    Setup(String),
    /// A listener cannot be set up.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The event loop failed.
    #[error("event loop: {0}")]
    Poll(io::Error),
    /// An engine failed.
    #[error("export '{export}'")]
    Engine {
        /// The export.
        export: String,
        /// Why.
        #[source]
        source: Box<elevator_io::EngineError>,
    },
    /// A worker's engine on an export cannot be made.
    #[error("export '{export}': worker {worker}")]
    Worker {
        /// The export.
        export: String,
        /// The worker.
        worker: usize,
        /// Why.
        #[source]
        source: Box<elevator_io::mq::MqError>,
    },
    /// A worker thread cannot be started, or panicked.
    #[error("worker thread: {0}")]
    Thread(String),
    /// An export's trace (`--trace-out`) could not be written.
    #[error("export '{export}': cannot write the trace")]
    Trace {
        /// The export.
        export: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Where the server's log lines go.
pub type Log = Box<dyn FnMut(&str) + Send>;

/// One worker's share of the exports: the layer and its device handle, for
/// each export it serves.
type Part = Vec<Option<(Arc<MultiQueue>, RealDevice)>>;

pub(crate) enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, UnixSocketFile),
}

/// An NBD server, bound and ready to run.
pub struct Server {
    cfg: Arc<ServerConfig>,
    exports: Arc<[Export]>,
    /// Each export's layer and per-worker handles, until the workers take
    /// them.
    engines: Vec<(Arc<MultiQueue>, Vec<Option<RealDevice>>)>,
    listeners: Vec<Listener>,
    log: Option<Log>,
    /// Each export's trace sink, if it is traced.
    traces: Vec<Option<SharedSink>>,
    /// What each export's trace held, added up as workers finish.
    trace_summaries: Mutex<Vec<Option<TraceSummary>>>,
    /// Each export's fault counts (`None` for an export without faults).
    faults: Vec<Option<elevator_io::FaultTally>>,
}

impl Server {
    /// Open the exports and bind the listeners. `log` gets one line per
    /// connection when it ends.
    pub fn bind(
        cfg: ServerConfig,
        log: Box<dyn FnMut(&str) + Send>,
    ) -> Result<Server, ServerError> {
        cfg.check()?;
        let mut exports = Vec::new();
        let mut engines = Vec::new();
        let mut faults = Vec::new();
        for spec in &cfg.exports {
            let Opened {
                export,
                mq,
                handles,
            } = spec.open(cfg.threads)?;
            exports.push(export);
            faults.push(handles.iter().flatten().next().and_then(|h| match h {
                RealDevice::Faulty(f) => Some(f.tally()),
                _ => None,
            }));
            engines.push((mq, handles));
        }
        let listen_err = |addr: String| move |source| ServerError::Listen { addr, source };
        let mut listeners = Vec::new();
        for addr in &cfg.tcp {
            let l = TcpListener::bind(addr).map_err(listen_err(addr.to_string()))?;
            l.set_nonblocking(true)
                .map_err(listen_err(addr.to_string()))?;
            listeners.push(Listener::Tcp(l));
        }
        for path in &cfg.unix {
            let name = path.display().to_string();
            // Refused if a server answers there; a stale socket is replaced.
            let (l, file) = bind_unix(path).map_err(|e| listen_err(name.clone())(e.into()))?;
            l.set_nonblocking(true).map_err(listen_err(name))?;
            listeners.push(Listener::Unix(l, file));
        }
        Ok(Server {
            cfg: Arc::new(cfg),
            exports: exports.into(),
            engines,
            listeners,
            log: Some(log),
            traces: Vec::new(),
            trace_summaries: Mutex::new(Vec::new()),
            faults,
        })
    }

    /// The faults injected so far into each export's device, by kind
    /// (`None` for an export without fault options), over all its
    /// workers' handles.
    pub fn fault_counts(&self) -> Vec<Option<elevator_io::FaultCounts>> {
        self.faults
            .iter()
            .map(|t| t.as_ref().map(elevator_io::FaultTally::get))
            .collect()
    }

    /// Trace export `i`'s queue into `sink` (before [`Server::run`]): the
    /// events of worker `w` with `cpu` `w` (one file per worker), device
    /// `240,i`, each connection's I/O context as the process id (named
    /// `nbdN`), times in nanoseconds since the export was opened. The
    /// workers write what they hold when they stop; the sink is the
    /// caller's to finish after [`Server::run`] returns.
    pub fn trace_to(&mut self, i: usize, sink: SharedSink) {
        if self.traces.len() <= i {
            self.traces.resize(i + 1, None);
        }
        self.traces[i] = Some(sink);
    }

    /// Record export `i`'s writes, flushes and FUA, with their data, in a
    /// write log at `path` (before [`Server::run`]): every worker's handle
    /// records into the one log, in the order the device completed the
    /// writes. The log is the caller's to [`finish`](WriteLog::finish)
    /// after [`Server::run`] returns, and to put marks in meanwhile.
    pub fn log_writes(
        &mut self,
        i: usize,
        path: &std::path::Path,
        opts: WriteLogOptions,
    ) -> Result<Arc<WriteLog>, ServerError> {
        let Some((_, handles)) = self.engines.get_mut(i) else {
            return Err(ServerError::Setup(format!("no export number {i}")));
        };
        let Some(limits) = handles
            .iter()
            .flatten()
            .next()
            .map(elevator_core::Device::limits)
        else {
            return Err(ServerError::Setup(
                "the export's devices are already serving".into(),
            ));
        };
        let log =
            WriteLog::create(path, &limits, opts).map_err(|e| ServerError::Setup(e.to_string()))?;
        for h in handles.iter_mut() {
            if let Some(dev) = h.take() {
                *h = Some(dev.logged(Arc::clone(&log)));
            }
        }
        Ok(log)
    }

    /// What each export's trace held (`None` for an export not traced),
    /// once [`Server::run`] has returned.
    pub fn trace_summaries(&self) -> Vec<Option<TraceSummary>> {
        let mut all = lock_summaries(&self.trace_summaries).clone();
        all.resize(self.exports.len(), None);
        for (summary, (mq, _)) in all.iter_mut().zip(&self.engines) {
            if let Some(s) = summary {
                s.dropped += mq.trace_dropped();
            }
        }
        all
    }

    /// The TCP addresses actually bound (a port of 0 becomes a real one).
    pub fn tcp_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| match l {
                Listener::Tcp(t) => t.local_addr().ok(),
                Listener::Unix(..) => None,
            })
            .collect()
    }

    /// One line per export, for the startup message.
    pub fn describe(&self) -> Vec<String> {
        self.exports
            .iter()
            .map(|e| {
                format!(
                    "export '{}': {} bytes, {}{}",
                    e.name,
                    e.size,
                    e.description,
                    if e.read_only { ", read-only" } else { "" }
                )
            })
            .collect()
    }

    /// Serve until `stop` becomes readable (write a byte to its other end, as
    /// a signal handler does), then shut down cleanly. Runs worker 0 on this
    /// thread and the others on threads of their own; a worker that fails
    /// stops the server, and its error is returned.
    pub fn run(&mut self, stop: BorrowedFd<'_>) -> Result<(), ServerError> {
        let Some(log) = self.log.take() else {
            return Err(ServerError::Setup("the server has already run".into()));
        };
        let threads = self.cfg.threads;
        let hub = Arc::new(
            Hub::new(self.cfg.clone(), self.exports.clone(), log, threads)
                .map_err(ServerError::Poll)?,
        );
        // Each worker's part: its handle on each export, with the layer.
        let mut parts: Vec<Part> = (0..threads).map(|_| Vec::new()).collect();
        for (mq, handles) in &mut self.engines {
            for (w, part) in parts.iter_mut().enumerate() {
                let handle = handles.get_mut(w).and_then(Option::take);
                part.push(handle.map(|h| (mq.clone(), h)));
            }
        }
        let listeners = std::mem::take(&mut self.listeners);
        let traces = &self.traces;
        let summaries = &self.trace_summaries;
        std::thread::scope(|scope| {
            let mut parts = parts.into_iter();
            let first = parts.next().unwrap_or_default();
            let mut joins = Vec::new();
            for (i, part) in parts.enumerate() {
                let w = i + 1;
                let mine = hub.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("nbd-worker-{w}"))
                    .spawn_scoped(scope, move || {
                        let _guard = StopOnPanic(&mine, w);
                        let served =
                            start(w, &mine, part, Vec::new(), traces).and_then(|mut worker| {
                                let ran = worker.run(None);
                                let traced = finish_traces(&mut worker, summaries);
                                ran.and(traced)
                            });
                        if let Err(e) = served {
                            mine.fail(e);
                        }
                    });
                match spawned {
                    Ok(j) => joins.push(j),
                    Err(e) => hub.fail(ServerError::Thread(e.to_string())),
                }
            }
            let served = start(0, &hub, first, listeners, traces).and_then(|mut worker| {
                let ran = worker.run(Some(stop));
                let traced = finish_traces(&mut worker, summaries);
                ran.and(traced)
            });
            if let Err(e) = served {
                hub.fail(e);
            }
            for j in joins {
                if j.join().is_err() {
                    hub.fail(ServerError::Thread("a worker panicked".into()));
                }
            }
        });
        match hub.take_failure() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Worker `w`, with its engines made on its own thread.
fn start(
    w: usize,
    hub: &Arc<Hub>,
    part: Part,
    listeners: Vec<Listener>,
    traces: &[Option<SharedSink>],
) -> Result<Worker, ServerError> {
    let mut engines = Vec::with_capacity(part.len());
    for (e, p) in part.into_iter().enumerate() {
        let Some((mq, handle)) = p else {
            engines.push(None);
            continue;
        };
        // An export one worker serves alone has one context: its 0.
        let context = if hub.exports[e].home.is_some() { 0 } else { w };
        let mut engine: MqEngine<RealDevice, Buf> =
            mq.engine(context, 0, handle)
                .map_err(|source| ServerError::Worker {
                    export: hub.exports[e].name.clone(),
                    worker: w,
                    source: Box::new(source),
                })?;
        if let Some(Some(sink)) = traces.get(e) {
            let tap =
                TraceTap::new(trace_dev(e as u32), CpuRule::Fixed(w as u32), 0).unnamed("nbd");
            engine.trace_to(tap, sink.clone());
        }
        engines.push(Some(engine));
    }
    let shared = Shared {
        exports: hub.exports.clone(),
        engines,
        inflight: Vec::new(),
        free_inflight: Vec::new(),
        rmw: Vec::new(),
        free_rmw: Vec::new(),
        pool: Pool::keeping(pool_keep(&hub.cfg)),
        cfg: hub.cfg.clone(),
        hub: hub.clone(),
        stopping: false,
    };
    Worker::new(w, hub.clone(), shared, listeners)
}

/// Bytes of free buffers each worker's pool keeps for reuse: at most 32 MiB,
/// and all workers' pools together at most an eighth of `max_total_bytes`
/// (they are memory the server holds beyond what connections reserve).
fn pool_keep(cfg: &ServerConfig) -> usize {
    let share = cfg.max_total_bytes / 8 / cfg.threads.max(1) as u64;
    usize::try_from(share.min(32 << 20)).unwrap_or(32 << 20)
}

fn lock_summaries(
    m: &Mutex<Vec<Option<TraceSummary>>>,
) -> std::sync::MutexGuard<'_, Vec<Option<TraceSummary>>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A stopped worker writes what its trace taps hold and adds up what they
/// wrote, export by export.
fn finish_traces(
    worker: &mut Worker,
    summaries: &Mutex<Vec<Option<TraceSummary>>>,
) -> Result<(), ServerError> {
    let mut result = Ok(());
    for (e, engine) in worker.shared.engines.iter_mut().enumerate() {
        let Some(done) = engine.as_mut().and_then(MqEngine::finish_trace) else {
            continue;
        };
        match done {
            Ok(summary) => {
                let mut all = lock_summaries(summaries);
                if all.len() <= e {
                    all.resize(e + 1, None);
                }
                all[e]
                    .get_or_insert_with(TraceSummary::default)
                    .merge(&summary);
            }
            Err(source) => {
                if result.is_ok() {
                    result = Err(ServerError::Trace {
                        export: worker.shared.exports[e].name.clone(),
                        source,
                    });
                }
            }
        }
    }
    result
}

/// Stops the server if its worker's thread panics (the others would
/// otherwise serve on, and the server never return).
struct StopOnPanic<'a>(&'a Hub, usize);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0
                .fail(ServerError::Thread(format!("worker {} panicked", self.1)));
        }
    }
}
