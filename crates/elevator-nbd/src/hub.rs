//! What the server's worker threads share ([`Hub`]): the exports and the
//! configuration, the log, the connection counts that the limits and the
//! placement of connections read, each worker's mailbox of connections
//! handed over to it and the eventfd that wakes it, the memory budget every
//! connection reserves from ([`Budget`]), and the stop: whether the server
//! is stopping, the first error that stopped it, and how many workers are
//! done.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rustix::event::{EventfdFlags, eventfd};

use crate::budget::Budget;
use crate::config::ServerConfig;
use crate::conn::Moving;
use crate::export::Export;
use crate::server::{Log, ServerError};

/// One worker's share of the hub.
pub(crate) struct Seat {
    /// Connections past the handshake it serves.
    pub load: AtomicU32,
    /// Connections handed over to it, to adopt.
    pub mailbox: Mutex<Vec<Moving>>,
    /// Written to wake it.
    wake: OwnedFd,
}

/// What the workers share.
pub(crate) struct Hub {
    pub cfg: Arc<ServerConfig>,
    pub exports: Arc<[Export]>,
    log: Mutex<Log>,
    /// Connections open, on every worker.
    pub live: AtomicU32,
    pub seats: Vec<Seat>,
    /// The bytes connections hold, against `max_total_bytes`.
    pub budget: Arc<Budget>,
    stopping: AtomicBool,
    failure: Mutex<Option<ServerError>>,
    /// Workers whose connections have all closed.
    pub done: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker that panicked holding the lock left nothing half-done that
    // matters more than serving on.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Hub {
    /// A hub for `threads` workers.
    pub fn new(
        cfg: Arc<ServerConfig>,
        exports: Arc<[Export]>,
        log: Log,
        threads: usize,
    ) -> std::io::Result<Hub> {
        let seats = (0..threads)
            .map(|_| {
                Ok(Seat {
                    load: AtomicU32::new(0),
                    mailbox: Mutex::new(Vec::new()),
                    wake: eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?,
                })
            })
            .collect::<Result<Vec<_>, rustix::io::Errno>>()?;
        let wake = seats
            .iter()
            .map(|s| s.wake.try_clone())
            .collect::<std::io::Result<Vec<_>>>()?;
        let budget = Arc::new(Budget::new(cfg.max_total_bytes, cfg.max_conn_bytes, wake));
        Ok(Hub {
            cfg,
            exports,
            log: Mutex::new(log),
            live: AtomicU32::new(0),
            seats,
            budget,
            stopping: AtomicBool::new(false),
            failure: Mutex::new(None),
            done: AtomicUsize::new(0),
        })
    }

    /// Log one line.
    pub fn log(&self, line: &str) {
        (lock(&self.log))(line);
    }

    /// The eventfd that wakes worker `w`.
    pub fn wake_fd(&self, w: usize) -> BorrowedFd<'_> {
        self.seats[w].wake.as_fd()
    }

    /// Wake worker `w` from its sleep.
    pub fn wake(&self, w: usize) {
        let _ = rustix::io::write(&self.seats[w].wake, &1u64.to_ne_bytes());
    }

    /// Clear worker `w`'s wake-up (it is awake).
    pub fn clear_wake(&self, w: usize) {
        let mut b = [0u8; 8];
        let _ = rustix::io::read(&self.seats[w].wake, &mut b);
    }

    /// Hand connection `c` over to worker `w` and wake it.
    pub fn hand_over(&self, w: usize, c: Moving) {
        lock(&self.seats[w].mailbox).push(c);
        self.wake(w);
    }

    /// Connections handed over to worker `w`, taken.
    pub fn adopt(&self, w: usize, out: &mut Vec<Moving>) {
        out.append(&mut lock(&self.seats[w].mailbox));
    }

    /// Whether the server is stopping.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Stop the server: every worker finishes what is in flight.
    pub fn stop(&self) {
        if !self.stopping.swap(true, Ordering::AcqRel) {
            for w in 0..self.seats.len() {
                self.wake(w);
            }
        }
    }

    /// A worker cannot go on: keep the first error, and stop.
    pub fn fail(&self, e: ServerError) {
        lock(&self.failure).get_or_insert(e);
        self.stop();
    }

    /// The error that stopped the server, if one did.
    pub fn take_failure(&self) -> Option<ServerError> {
        lock(&self.failure).take()
    }
}
