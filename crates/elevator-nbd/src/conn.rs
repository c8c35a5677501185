//! One client connection: its socket, what it has sent that is not handled
//! yet, what is waiting to go back, and where it is in the protocol.
//!
//! Input is cut into messages ([`Conn::next_message`]): the client's flags,
//! options, requests, and write payloads. A write's payload goes straight
//! into the request's buffer (read from the socket into it when the input
//! buffer holds no more). Output is a queue of replies, each a short header
//! and perhaps a data buffer, written with one `writev` for as many as fit.
//!
//! After `STARTTLS` the same buffers go through the connection's
//! [`TlsSession`]: reads take its decrypted input, and the output queue is
//! encrypted into it and its records written out. A TLS connection stays
//! readable until a read would block (rustls may hold decrypted input after
//! the socket is drained), and its pending output counts what rustls holds.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Instant;

use elevator_core::IoContext;

use crate::budget::Budget;
use crate::pool::{self, Buf, Pool};
use crate::proto::{self, OptionHeader, ProtoError, Request};
use crate::tls::{TLS_OUT_LIMIT, TlsConfig, TlsSession};

/// Largest option data kept; longer options are skipped and refused.
pub const MAX_OPTION: u32 = 64 << 10;
const INBUF: usize = 256 << 10;
/// Payload bytes still to come above which they are read straight into the
/// request's buffer rather than through the input buffer.
const DIRECT: usize = 64 << 10;
/// iovecs per `writev`.
const IOV: usize = 64;
/// What TLS is given of a connection's output at a time when the budget is
/// full: one record's worth.
const TLS_RECORD: usize = 16 << 10;
/// What one queued reply costs besides its bytes: its place in the output
/// queue (twice its size: the queue grows by doubling).
pub(crate) const OUT_COST: u64 = 2 * std::mem::size_of::<Out>() as u64;
/// Bytes a connection in the handshake may hold (unsent option replies)
/// before its options are no longer read.
pub(crate) const HANDSHAKE_HELD: u64 = 64 << 10;

/// A connected socket.
pub enum Stream {
    /// TCP.
    Tcp(TcpStream),
    /// A Unix-domain socket.
    Unix(UnixStream),
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
        }
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Tcp(s) => s.as_fd(),
            Stream::Unix(s) => s.as_fd(),
        }
    }
}

/// For rustls, which reads and writes TLS records through `io` traits.
impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Stream::read(self, buf)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        Stream::write_vectored(self, bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Output queue `out`'s next slices to send, from its front, `limit` bytes
/// at most: how many of `slices` were filled.
fn gather<'a>(out: &'a VecDeque<Out>, slices: &mut [IoSlice<'a>; IOV], limit: usize) -> usize {
    let mut n = 0;
    let mut left = limit;
    for item in out {
        if n + 2 > IOV || left == 0 {
            break;
        }
        let head = item.head();
        let from = item.pos.saturating_sub(head.len());
        let parts = [
            head.get(item.pos..),
            item.data.as_ref().and_then(|d| d.get(from..)),
        ];
        for bytes in parts.into_iter().flatten() {
            if bytes.is_empty() || left == 0 {
                continue;
            }
            let bytes = &bytes[..bytes.len().min(left)];
            left -= bytes.len();
            slices[n] = IoSlice::new(bytes);
            n += 1;
        }
    }
    n
}

/// What `n` bytes of output cost once TLS holds them, as records.
fn tls_cost(n: usize) -> u64 {
    n as u64 + n as u64 / 512 + 64
}

/// Read from the socket, or through TLS once it is on.
#[inline]
fn receive(
    stream: &mut Stream,
    tls: &mut Option<Box<TlsSession>>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match tls {
        None => stream.read(buf),
        Some(t) => t.read(stream, buf),
    }
}

/// Where a connection is in the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the client's 4 flag bytes.
    ClientFlags,
    /// Haggling over options.
    Options,
    /// Serving requests for this export.
    Transmission(usize),
}

/// A unit of input.
#[derive(Debug)]
pub enum Message {
    /// The client's flags.
    ClientFlags([u8; 4]),
    /// An option and its data.
    Option(OptionHeader, Vec<u8>),
    /// An option too big to keep (its data is being skipped).
    OptionTooBig(OptionHeader),
    /// A request (for a write: its payload follows, unless the handler
    /// skips it).
    Request(Request),
    /// A write's payload, complete, with the bytes reserved for the write.
    Payload(Request, Buf, u64),
    /// Bytes that break the protocol.
    Broken(ProtoError),
}

/// One reply (or part of one) waiting to be sent.
struct Out {
    head: [u8; 32],
    head_len: u8,
    /// Used instead of `head` when not empty (handshake replies).
    bytes: Vec<u8>,
    data: Option<Buf>,
    /// Bytes of this item already sent.
    pos: usize,
    /// What it holds of the budget until it is sent.
    cost: u64,
}

impl Out {
    fn head(&self) -> &[u8] {
        if self.bytes.is_empty() {
            &self.head[..usize::from(self.head_len)]
        } else {
            &self.bytes
        }
    }

    fn len(&self) -> usize {
        self.head().len() + self.data.as_ref().map_or(0, |d| d.len())
    }
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

/// A client connection.
pub struct Conn {
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
    /// The client asked for no zeroes after `EXPORT_NAME`.
    pub no_zeroes: bool,
    /// Structured replies were negotiated.
    pub structured: bool,
    /// The id of `base:allocation` if `SET_META_CONTEXT` selected it.
    pub meta_allocation: Option<u32>,
    /// The export the last `SET_META_CONTEXT` was for.
    pub meta_export: Option<usize>,
    inbuf: Box<[u8]>,
    start: usize,
    end: usize,
    discard: u64,
    /// A write's payload arriving: the write, its buffer, bytes filled, and
    /// the bytes reserved for it.
    payload: Option<(Request, Buf, usize, u64)>,
    out: VecDeque<Out>,
    out_bytes: usize,
    /// Requests at the engine (and a write whose payload is arriving).
    pub inflight: u32,
    /// The server's memory budget.
    budget: Arc<Budget>,
    /// Bytes it holds of the budget: its requests' reservations, its
    /// queued replies, and what TLS holds of its output.
    reserved: u64,
    /// The reservation made for the request at the head of its input,
    /// before it was taken (see [`Conn::admit`]).
    pub(crate) admitted: u64,
    /// The bytes the request at the head of its input needs and could not
    /// reserve: it is not read from until they would fit.
    pub(crate) waiting: Option<u64>,
    /// What TLS holds of its output (encrypted, not yet written), counted.
    tls_held: u64,
    /// A write waiting for its range (another write that overlaps it holds
    /// it): the connection is not read from meanwhile.
    pub(crate) blocked: Option<crate::transmit::Blocked>,
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
    /// The socket may have input (edge-triggered: until a read would block).
    pub readable: bool,
    /// The client has shut its side, or the socket failed: read until end
    /// of stream, never stopping at a short read.
    pub hangup: bool,
    /// The socket may take output.
    pub writable: bool,
    /// The client closed its side, or the connection failed.
    pub eof: bool,
    /// Why the connection is ending, once it is.
    pub closing: Option<String>,
    /// The client sent `DISC`.
    pub disc: bool,
    /// Counters.
    pub stats: ConnStats,
    /// When it connected.
    pub started: Instant,
    /// The export it uses, once chosen.
    pub export_name: Option<String>,
    /// TLS, once `STARTTLS` has been accepted.
    tls: Option<Box<TlsSession>>,
    /// An option was refused because TLS is required and not on: a client
    /// that then leaves is logged as having left for that.
    pub(crate) refused_for_tls: bool,
}

impl Conn {
    /// A new connection, with the greeting queued.
    pub(crate) fn new(
        stream: Stream,
        peer: String,
        generation: u32,
        ctx: IoContext,
        budget: Arc<Budget>,
    ) -> Conn {
        let mut c = Conn {
            stream,
            peer,
            generation,
            ctx,
            phase: Phase::ClientFlags,
            no_zeroes: false,
            structured: false,
            meta_allocation: None,
            meta_export: None,
            inbuf: vec![0u8; INBUF].into_boxed_slice(),
            start: 0,
            end: 0,
            discard: 0,
            payload: None,
            out: VecDeque::new(),
            out_bytes: 0,
            inflight: 0,
            budget,
            reserved: 0,
            admitted: 0,
            waiting: None,
            tls_held: 0,
            blocked: None,
            placed: false,
            parked: false,
            progressed: false,
            last_io: Instant::now(),
            readable: true,
            hangup: false,
            writable: true,
            eof: false,
            closing: None,
            disc: false,
            stats: ConnStats::default(),
            started: Instant::now(),
            export_name: None,
            tls: None,
            refused_for_tls: false,
        };
        c.send_bytes(proto::greeting().to_vec());
        c
    }

    /// The next complete message in the input, if there is one.
    pub fn next_message(&mut self) -> Option<Message> {
        if self.discard > 0 {
            let n = (self.discard as usize).min(self.end - self.start);
            self.start += n;
            self.discard -= n as u64;
            if self.discard > 0 {
                return None;
            }
        }
        if let Some((_, buf, filled, _)) = &mut self.payload {
            let n = (buf.len() - *filled).min(self.end - self.start);
            buf[*filled..*filled + n].copy_from_slice(&self.inbuf[self.start..self.start + n]);
            *filled += n;
            self.start += n;
            if *filled < buf.len() {
                return None;
            }
            let (req, buf, _, reserved) = self.payload.take()?;
            return Some(Message::Payload(req, buf, reserved));
        }
        let avail = self.end - self.start;
        let input = &self.inbuf[self.start..self.end];
        match self.phase {
            Phase::ClientFlags => {
                let flags: [u8; 4] = input.get(..4)?.try_into().ok()?;
                self.start += 4;
                Some(Message::ClientFlags(flags))
            }
            Phase::Options => {
                let head: [u8; proto::OPTION_HEADER_LEN] =
                    input.get(..proto::OPTION_HEADER_LEN)?.try_into().ok()?;
                let h = match proto::option_header(&head) {
                    Ok(h) => h,
                    Err(e) => return Some(Message::Broken(e)),
                };
                if h.len > MAX_OPTION {
                    self.start += proto::OPTION_HEADER_LEN;
                    self.discard = u64::from(h.len);
                    return Some(Message::OptionTooBig(h));
                }
                let total = proto::OPTION_HEADER_LEN + h.len as usize;
                if avail < total {
                    return None;
                }
                let data = input[proto::OPTION_HEADER_LEN..total].to_vec();
                self.start += total;
                Some(Message::Option(h, data))
            }
            Phase::Transmission(_) => {
                let head: [u8; proto::REQUEST_LEN] =
                    input.get(..proto::REQUEST_LEN)?.try_into().ok()?;
                self.start += proto::REQUEST_LEN;
                Some(match proto::request(&head) {
                    Ok(r) => Message::Request(r),
                    Err(e) => Message::Broken(e),
                })
            }
        }
    }

    /// The request [`Conn::next_message`] would give next, without taking
    /// it (in the transmission phase, when the header is all there and
    /// sound): what it needs is reserved before it is taken.
    pub(crate) fn peek_request(&self) -> Option<Request> {
        if !matches!(self.phase, Phase::Transmission(_))
            || self.discard > 0
            || self.payload.is_some()
        {
            return None;
        }
        let head: [u8; proto::REQUEST_LEN] = self
            .inbuf
            .get(self.start..self.end)?
            .get(..proto::REQUEST_LEN)?
            .try_into()
            .ok()?;
        proto::request(&head).ok()
    }

    /// Reserve `need` bytes of the budget for the request at the head of
    /// the input, `live` connections being open: whether they were (see
    /// [`crate::budget::admits`]).
    pub(crate) fn admit(&mut self, need: u64, live: u64) -> bool {
        if !self.budget.try_reserve(need, self.reserved, live) {
            return false;
        }
        self.reserved += need;
        self.admitted += need;
        self.waiting = None;
        true
    }

    /// Whether the request held back for want of bytes would fit now.
    pub(crate) fn would_admit(&self, need: u64, live: u64) -> bool {
        self.budget.would_admit(need, self.reserved, live)
    }

    /// Count `n` bytes spent without asking (small, bounded by the caller).
    fn force(&mut self, n: u64) {
        self.budget.force(n);
        self.reserved += n;
    }

    /// Give back `n` bytes of what it holds.
    pub(crate) fn release(&mut self, n: u64) {
        let n = n.min(self.reserved);
        self.reserved -= n;
        self.budget.release(n);
    }

    /// Give back all it holds (it is closing).
    pub(crate) fn release_all(&mut self) {
        self.admitted = 0;
        self.tls_held = 0;
        self.release(self.reserved);
    }

    /// The payload of write `req` goes into `buf` (its length), as it comes;
    /// `reserved` bytes are held for the write.
    pub(crate) fn expect_payload(&mut self, req: Request, buf: Buf, reserved: u64) {
        self.payload = Some((req, buf, 0, reserved));
    }

    /// Skip the next `n` bytes of input (a refused write's payload).
    pub fn skip(&mut self, n: u64) {
        self.discard += n;
    }

    /// Read what the socket has: into the pending payload's buffer if the
    /// input buffer is drained, else into the input buffer. Returns false
    /// when nothing more can be read now.
    pub fn fill(&mut self) -> bool {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        let result = match &mut self.payload {
            // A big payload goes straight into its buffer; small ones come
            // through the input buffer, several requests per read.
            Some((_, buf, filled, _))
                if self.start == self.end && buf.len() - *filled >= DIRECT =>
            {
                let want = buf.len() - *filled;
                let r = receive(&mut self.stream, &mut self.tls, &mut buf[*filled..]);
                if let Ok(n) = r {
                    *filled += n;
                }
                (r, want)
            }
            _ => {
                if self.end == self.inbuf.len() {
                    // Keep the unread tail at the front.
                    self.inbuf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                }
                let want = self.inbuf.len() - self.end;
                let r = receive(&mut self.stream, &mut self.tls, &mut self.inbuf[self.end..]);
                if let Ok(n) = r {
                    self.end += n;
                }
                (r, want)
            }
        };
        match result {
            (Ok(0), _) => {
                self.eof = true;
                self.readable = false;
                if self.refused_for_tls && self.tls.is_none() {
                    self.closing.get_or_insert_with(|| {
                        "client left after its options were refused: TLS is required \
                         (--tls=require) and it did not send STARTTLS"
                            .into()
                    });
                }
                false
            }
            // A short read drained the socket: with edge-triggered epoll,
            // data that arrives later raises a new event, so asking again
            // now would only cost a system call that answers EAGAIN. Not so
            // the end of the stream: a hangup that came with the data raises
            // no new event, so then read on until the read answers 0. Nor
            // TLS: rustls may hold decrypted input the socket no longer has.
            (Ok(n), want) => {
                self.progressed = true;
                if n < want && !self.hangup && self.tls.is_none() {
                    self.readable = false;
                }
                true
            }
            (Err(e), _) if e.kind() == io::ErrorKind::WouldBlock => {
                self.readable = false;
                false
            }
            (Err(e), _) if e.kind() == io::ErrorKind::Interrupted => true,
            (Err(e), _) => {
                self.eof = true;
                self.readable = false;
                // TLS failures say what failed themselves.
                let tls_failure = self.tls.is_some() && e.kind() == io::ErrorKind::InvalidData;
                self.closing.get_or_insert_with(|| {
                    if tls_failure {
                        e.to_string()
                    } else {
                        format!("read failed: {e}")
                    }
                });
                false
            }
        }
    }

    /// Whether input has been read from the socket and not yet handled
    /// (requests a throttled connection sent ahead).
    pub fn buffered_input(&self) -> bool {
        self.start < self.end
    }

    /// Whether a write's payload is being collected.
    pub fn in_payload(&self) -> bool {
        self.payload.is_some()
    }

    /// Take back a pending payload's buffer (the connection is closing), and
    /// give back what was reserved for its write.
    pub fn take_payload(&mut self) -> Option<Buf> {
        let (_, b, _, reserved) = self.payload.take()?;
        self.release(reserved);
        Some(b)
    }

    /// Queue bytes (a handshake reply, or a block status reply): counted
    /// against the budget as they are queued.
    pub fn send_bytes(&mut self, bytes: Vec<u8>) {
        let cost = bytes.len() as u64 + OUT_COST;
        self.force(cost);
        self.out_bytes += bytes.len();
        self.out.push_back(Out {
            head: [0; 32],
            head_len: 0,
            bytes,
            data: None,
            pos: 0,
            cost,
        });
    }

    /// Queue a reply: a header of at most 32 bytes, and data. It is counted
    /// against the budget (a data buffer at the size the pool allocates)
    /// until it is sent: the caller then gives back its request's
    /// reservation, which covered it.
    pub fn send(&mut self, head: &[u8], data: Option<Buf>) {
        let held = data.as_ref().map_or(0, |d| match d {
            Buf::Buf(_) => pool::alloc_size(d.len()),
            Buf::Window(_) => d.len() as u64,
        });
        self.send_costed(head, data, held);
    }

    /// [`Conn::send`], with its data buffer counted as `held` bytes (a
    /// reply that is part of a bigger buffer).
    pub(crate) fn send_costed(&mut self, head: &[u8], data: Option<Buf>, held: u64) {
        let mut h = [0u8; 32];
        h[..head.len()].copy_from_slice(head);
        let cost = OUT_COST + head.len() as u64 + held;
        self.force(cost);
        let item = Out {
            head: h,
            head_len: head.len() as u8,
            bytes: Vec::new(),
            data,
            pos: 0,
            cost,
        };
        self.out_bytes += item.len();
        self.out.push_back(item);
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

    /// Switch to TLS (`STARTTLS` was accepted, and its reply queued): the
    /// output queued so far goes out in clear, then everything is TLS. Input
    /// already read goes to the session as the start of the client's TLS
    /// handshake. A session that cannot start fails the connection.
    pub(crate) fn start_tls(&mut self, config: &TlsConfig) {
        let mut plain = Vec::with_capacity(self.out_bytes);
        let mut freed = 0;
        for item in self.out.drain(..) {
            plain.extend_from_slice(&item.head()[item.pos.min(item.head().len())..]);
            if let Some(d) = &item.data {
                plain.extend_from_slice(&d[item.pos.saturating_sub(item.head().len())..]);
            }
            freed += item.cost;
        }
        self.out_bytes = 0;
        // The queued replies are now TLS's plaintext: counted as TLS's
        // output is, until it is written.
        self.release(freed);
        let cost = tls_cost(plain.len());
        self.force(cost);
        self.tls_held += cost;
        let early = &self.inbuf[self.start..self.end];
        let started = config
            .session()
            .map_err(|e| format!("TLS session cannot start: {e}"))
            .and_then(|tls| TlsSession::start(tls, plain, early));
        self.start = self.end;
        match started {
            Ok(t) => {
                self.tls = Some(Box::new(t));
                self.readable = true;
            }
            Err(why) => self.fail(&why),
        }
    }

    /// `sent` bytes from the queue's front are gone: fully sent data buffers
    /// go back to `pool`, and their replies' costs to the budget.
    fn consume(&mut self, mut sent: usize, pool: &mut Pool) {
        self.progressed = true;
        self.out_bytes -= sent;
        let mut freed = 0;
        while sent > 0 {
            let Some(front) = self.out.front_mut() else {
                break;
            };
            let left = front.len() - front.pos;
            if sent < left {
                front.pos += sent;
                break;
            }
            sent -= left;
            if let Some(item) = self.out.pop_front() {
                freed += item.cost;
                if let Some(d) = item.data {
                    pool.put(d);
                }
            }
        }
        if self.out.is_empty() && self.out.capacity() > 1024 {
            // A large burst of replies is over: its queue shrinks back to
            // what an ordinary one needs.
            self.out.shrink_to(256);
        }
        self.release(freed);
    }

    /// Bytes the connection holds of the server's budget: its requests'
    /// reservations, its unsent replies, and what TLS holds of its output.
    pub fn held(&self) -> u64 {
        self.reserved
    }

    /// Send what the socket takes. Data buffers fully sent go back to `pool`.
    pub fn flush(&mut self, pool: &mut Pool) {
        if self.tls.is_some() {
            self.flush_tls(pool);
            return;
        }
        while self.writable && !self.out.is_empty() {
            let mut slices: [IoSlice<'_>; IOV] = [IoSlice::new(&[]); IOV];
            let n = gather(&self.out, &mut slices, usize::MAX);
            match self.stream.write_vectored(&slices[..n]) {
                Ok(0) => {
                    self.fail("the socket took no bytes");
                    return;
                }
                Ok(sent) => self.consume(sent, pool),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(&format!("write failed: {e}"));
                    return;
                }
            }
        }
    }

    /// [`Conn::flush`] through TLS: write out what rustls holds, encrypt
    /// more of the queue into it, until the socket or rustls takes no more.
    fn flush_tls(&mut self, pool: &mut Pool) {
        while self.writable {
            let Some(t) = self.tls.as_mut() else {
                return;
            };
            match t.send(&mut self.stream) {
                Ok(true) => {
                    // All written: what TLS held is gone.
                    let held = std::mem::take(&mut self.tls_held);
                    self.release(held);
                }
                Ok(false) => {
                    self.writable = false;
                    return;
                }
                Err(e) => {
                    self.fail(&format!("write failed: {e}"));
                    return;
                }
            }
            if self.out.is_empty() {
                return;
            }
            // What rustls takes is records in it until written, counted
            // until then: a fill of its buffer while the budget has room,
            // else one record (so that a connection alone still moves).
            let fill_cost = tls_cost(TLS_OUT_LIMIT);
            let (limit, reserved) = if self.budget.try_add(fill_cost) {
                self.reserved += fill_cost;
                (TLS_OUT_LIMIT, fill_cost)
            } else {
                (TLS_RECORD, 0)
            };
            let mut slices: [IoSlice<'_>; IOV] = [IoSlice::new(&[]); IOV];
            let n = gather(&self.out, &mut slices, limit);
            let Some(t) = self.tls.as_mut() else {
                self.release(reserved);
                return;
            };
            match t.write_vectored(&slices[..n]) {
                // rustls is full even though its output is all out: it is
                // still in the handshake, which must finish first.
                Ok(0) => {
                    self.release(reserved);
                    return;
                }
                Ok(taken) => {
                    let held = tls_cost(taken);
                    if reserved >= held {
                        self.release(reserved - held);
                    } else {
                        self.release(reserved);
                        self.force(held);
                    }
                    self.tls_held += held;
                    self.consume(taken, pool);
                }
                Err(e) => {
                    self.release(reserved);
                    self.fail(&format!("TLS error: {e}"));
                    return;
                }
            }
        }
    }

    /// The connection cannot go on.
    pub fn fail(&mut self, why: &str) {
        self.eof = true;
        self.readable = false;
        self.writable = false;
        self.closing.get_or_insert_with(|| why.to_string());
    }

    /// Drop unsent output, returning its buffers and its costs.
    pub fn drop_output(&mut self, pool: &mut Pool) {
        let mut freed = std::mem::take(&mut self.tls_held);
        for item in self.out.drain(..) {
            freed += item.cost;
            if let Some(d) = item.data {
                pool.put(d);
            }
        }
        self.out_bytes = 0;
        self.release(freed);
    }
}

/// A reply waiting to be sent that holds no data buffer (a handshake
/// reply), as a [`Moving`] connection carries it.
struct OutBytes {
    head: [u8; 32],
    head_len: u8,
    bytes: Vec<u8>,
    pos: usize,
    cost: u64,
}

/// A connection on its way to another worker. It holds no request data
/// (a data buffer may be a window on memory that must stay on its
/// worker's thread), so it may cross threads: a connection is handed over
/// just after it has chosen its export, before any request.
pub struct Moving {
    stream: Stream,
    peer: String,
    generation: u32,
    ctx: IoContext,
    phase: Phase,
    no_zeroes: bool,
    structured: bool,
    meta_allocation: Option<u32>,
    meta_export: Option<usize>,
    inbuf: Box<[u8]>,
    start: usize,
    end: usize,
    discard: u64,
    out_bytes: usize,
    inflight: u32,
    budget: Arc<Budget>,
    reserved: u64,
    waiting: Option<u64>,
    tls_held: u64,
    placed: bool,
    parked: bool,
    progressed: bool,
    last_io: Instant,
    readable: bool,
    hangup: bool,
    writable: bool,
    eof: bool,
    closing: Option<String>,
    disc: bool,
    stats: ConnStats,
    started: Instant,
    export_name: Option<String>,
    tls: Option<Box<TlsSession>>,
    refused_for_tls: bool,
    out: Vec<OutBytes>,
}

// Compile-time check that what crosses threads may.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Stream>();
    send::<Moving>();
};

impl Conn {
    /// Ready the connection to move to another worker: `Err` gives it back
    /// if it holds request data (a write's payload arriving, or a reply
    /// with data).
    pub fn detach(self) -> Result<Moving, Box<Conn>> {
        if self.payload.is_some()
            || self.blocked.is_some()
            || self.out.iter().any(|o| o.data.is_some())
        {
            return Err(Box::new(self));
        }
        let Conn {
            stream,
            peer,
            generation,
            ctx,
            phase,
            no_zeroes,
            structured,
            meta_allocation,
            meta_export,
            inbuf,
            start,
            end,
            discard,
            out_bytes,
            inflight,
            budget,
            reserved,
            waiting,
            tls_held,
            placed,
            parked,
            progressed,
            last_io,
            readable,
            hangup,
            writable,
            eof,
            closing,
            disc,
            stats,
            started,
            export_name,
            tls,
            refused_for_tls,
            out,
            payload: _,
            admitted: _,
            blocked: _,
        } = self;
        let out = out
            .into_iter()
            .map(|o| OutBytes {
                head: o.head,
                head_len: o.head_len,
                bytes: o.bytes,
                pos: o.pos,
                cost: o.cost,
            })
            .collect();
        Ok(Moving {
            stream,
            peer,
            generation,
            ctx,
            phase,
            no_zeroes,
            structured,
            meta_allocation,
            meta_export,
            inbuf,
            start,
            end,
            discard,
            out_bytes,
            inflight,
            budget,
            reserved,
            waiting,
            tls_held,
            placed,
            parked,
            progressed,
            last_io,
            readable,
            hangup,
            writable,
            eof,
            closing,
            disc,
            stats,
            started,
            export_name,
            tls,
            refused_for_tls,
            out,
        })
    }
}

impl Moving {
    /// The connection, arrived.
    pub fn attach(self) -> Conn {
        let Moving {
            stream,
            peer,
            generation,
            ctx,
            phase,
            no_zeroes,
            structured,
            meta_allocation,
            meta_export,
            inbuf,
            start,
            end,
            discard,
            out_bytes,
            inflight,
            budget,
            reserved,
            waiting,
            tls_held,
            placed,
            parked,
            progressed,
            last_io,
            readable,
            hangup,
            writable,
            eof,
            closing,
            disc,
            stats,
            started,
            export_name,
            tls,
            refused_for_tls,
            out,
        } = self;
        let out = out
            .into_iter()
            .map(|o| Out {
                head: o.head,
                head_len: o.head_len,
                bytes: o.bytes,
                data: None,
                pos: o.pos,
                cost: o.cost,
            })
            .collect();
        Conn {
            stream,
            peer,
            generation,
            ctx,
            phase,
            no_zeroes,
            structured,
            meta_allocation,
            meta_export,
            inbuf,
            start,
            end,
            discard,
            out_bytes,
            inflight,
            budget,
            reserved,
            waiting,
            tls_held,
            placed,
            parked,
            progressed,
            last_io,
            readable,
            hangup,
            writable,
            eof,
            closing,
            disc,
            stats,
            started,
            export_name,
            tls,
            refused_for_tls,
            payload: None,
            admitted: 0,
            blocked: None,
            out,
        }
    }
}
