//! The part of a connection that holds no request data, and so may cross
//! threads ([`ConnCore`]): its socket, its place in the protocol, what it
//! negotiated, its input buffer, its share of the memory budget, its
//! socket's readiness and its worker's marks.

use std::sync::Arc;
use std::time::Instant;

use elevator_core::IoContext;

use super::{Phase, Stream};
use crate::budget::Budget;
use crate::tls::TlsSession;

/// What the client chose in the handshake.
#[derive(Clone, Debug, Default)]
pub struct Negotiated {
    /// The client asked for no zeroes after `EXPORT_NAME`.
    pub no_zeroes: bool,
    /// Structured replies were negotiated.
    pub structured: bool,
    /// The id of `base:allocation` if `SET_META_CONTEXT` selected it.
    pub meta_allocation: Option<u32>,
    /// The export the last `SET_META_CONTEXT` was for.
    pub meta_export: Option<usize>,
    /// The export it uses, once chosen.
    pub export_name: Option<String>,
    /// An option was refused because TLS is required and not on: a client
    /// that then leaves is logged as having left for that.
    pub(crate) refused_for_tls: bool,
}

/// What the socket may do now (edge-triggered: each holds until a call
/// says otherwise), and whether it has ended.
#[derive(Clone, Copy, Debug)]
pub struct SocketState {
    /// The socket may have input (until a read would block).
    pub readable: bool,
    /// The socket may take output.
    pub writable: bool,
    /// The client has shut its side, or the socket failed: read until end
    /// of stream, never stopping at a short read.
    pub hangup: bool,
    /// The client closed its side, or the connection failed.
    pub eof: bool,
}

/// What the worker that serves the connection notes about it.
#[derive(Clone, Copy, Debug)]
pub struct WorkerMarks {
    /// Placed on the worker that serves it (counted in its load), once
    /// past the handshake.
    pub placed: bool,
    /// Input was left unhandled in the buffer when the connection was last
    /// held back (throttled): handle it when it may go on.
    pub parked: bool,
    /// Bytes went in or out since the worker last looked.
    pub progressed: bool,
    /// When bytes last went in or out (as of the worker's last look).
    pub last_io: Instant,
}

/// Per-connection counters, for the line logged at disconnect.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConnStats {
    /// Reads done, and bytes.
    pub reads: u64,
    /// See `reads`.
    pub read_bytes: u64,
    /// Writes done, and bytes.
    pub writes: u64,
    /// See `writes`.
    pub write_bytes: u64,
    /// Flushes.
    pub flushes: u64,
    /// Trims.
    pub trims: u64,
    /// Write-zeroes.
    pub zeroes: u64,
    /// Requests answered with an error.
    pub errors: u64,
}

/// Input read from the socket and not yet handled.
pub(super) struct Input {
    pub(super) buf: Box<[u8]>,
    /// Where unhandled input starts in `buf`.
    pub(super) start: usize,
    /// Where it ends.
    pub(super) end: usize,
    /// Bytes of input still to skip (a refused option's or write's data).
    pub(super) discard: u64,
}

/// A connection without its request data: everything of it that may move
/// to another worker's thread (see [`super::Moving`]).
pub struct ConnCore {
    /// The socket.
    pub stream: Stream,
    /// Who it is.
    pub peer: String,
    /// Generation of its slot (so stale completions are recognised).
    pub generation: u32,
    /// Its I/O context: schedulers keep one queue per connection.
    pub ctx: IoContext,
    /// Protocol phase.
    pub phase: Phase,
    /// What the client chose in the handshake.
    pub negotiated: Negotiated,
    pub(super) input: Input,
    /// Bytes in the output queue not yet sent.
    pub(super) out_bytes: usize,
    /// Requests at the engine (and a write whose payload is arriving).
    pub inflight: u32,
    /// The server's memory budget.
    budget: Arc<Budget>,
    /// Bytes it holds of the budget: its requests' reservations, its
    /// queued replies, and what TLS holds of its output.
    reserved: u64,
    /// The bytes the request at the head of its input needs and could not
    /// reserve: it is not read from until they would fit.
    pub(crate) waiting: Option<u64>,
    /// What TLS holds of its output (encrypted, not yet written), counted.
    pub(super) tls_held: u64,
    /// What its socket may do now.
    pub socket: SocketState,
    /// Its worker's marks.
    pub worker: WorkerMarks,
    /// Why the connection is ending, once it is.
    pub closing: Option<String>,
    /// The client sent `DISC`.
    pub disc: bool,
    /// Counters.
    pub stats: ConnStats,
    /// When it connected.
    pub started: Instant,
    /// TLS, once `STARTTLS` has been accepted.
    pub(super) tls: Option<Box<TlsSession>>,
}

impl ConnCore {
    /// A new connection's core, nothing read or queued yet.
    pub(super) fn new(
        stream: Stream,
        peer: String,
        generation: u32,
        ctx: IoContext,
        budget: Arc<Budget>,
    ) -> ConnCore {
        let now = Instant::now();
        ConnCore {
            stream,
            peer,
            generation,
            ctx,
            phase: Phase::ClientFlags,
            negotiated: Negotiated::default(),
            input: Input {
                buf: vec![0u8; super::INBUF].into_boxed_slice(),
                start: 0,
                end: 0,
                discard: 0,
            },
            out_bytes: 0,
            inflight: 0,
            budget,
            reserved: 0,
            waiting: None,
            tls_held: 0,
            socket: SocketState {
                readable: true,
                writable: true,
                hangup: false,
                eof: false,
            },
            worker: WorkerMarks {
                placed: false,
                parked: false,
                progressed: false,
                last_io: now,
            },
            closing: None,
            disc: false,
            stats: ConnStats::default(),
            started: now,
            tls: None,
        }
    }

    /// Reserve `need` bytes of the budget, `live` connections being open:
    /// whether they were (see [`crate::budget::admits`]).
    pub(super) fn reserve(&mut self, need: u64, live: u64) -> bool {
        if !self.budget.try_reserve(need, self.reserved, live) {
            return false;
        }
        self.reserved += need;
        self.waiting = None;
        true
    }

    /// Whether the request held back for want of bytes would fit now.
    pub(crate) fn would_admit(&self, need: u64, live: u64) -> bool {
        self.budget.would_admit(need, self.reserved, live)
    }

    /// Count `n` bytes spent without asking (small, bounded by the caller).
    pub(super) fn force(&mut self, n: u64) {
        self.budget.force(n);
        self.reserved += n;
    }

    /// Count `n` bytes if the budget has room for them: whether it had.
    pub(super) fn try_add(&mut self, n: u64) -> bool {
        let added = self.budget.try_add(n);
        if added {
            self.reserved += n;
        }
        added
    }

    /// Give back `n` bytes of what it holds.
    pub(crate) fn release(&mut self, n: u64) {
        let n = n.min(self.reserved);
        self.reserved -= n;
        self.budget.release(n);
    }

    /// Bytes the connection holds of the server's budget: its requests'
    /// reservations, its unsent replies, and what TLS holds of its output.
    pub fn held(&self) -> u64 {
        self.reserved
    }

    /// Bytes waiting to be sent (with TLS, at least 1 more while rustls
    /// holds output: it does not say how much).
    pub fn pending_output(&self) -> usize {
        match &self.tls {
            None => self.out_bytes,
            Some(t) => self.out_bytes + usize::from(t.has_output()),
        }
    }

    /// Whether the connection has switched to TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether input has been read from the socket and not yet handled
    /// (requests a throttled connection sent ahead).
    pub fn buffered_input(&self) -> bool {
        self.input.start < self.input.end
    }

    /// The connection cannot go on.
    pub fn fail(&mut self, why: &str) {
        self.socket.eof = true;
        self.socket.readable = false;
        self.socket.writable = false;
        self.closing.get_or_insert_with(|| why.to_string());
    }
}
