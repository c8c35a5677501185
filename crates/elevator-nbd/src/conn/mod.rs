//! One client connection: its socket, what it has sent that is not handled
//! yet, what is waiting to go back, and where it is in the protocol.
//!
//! A connection ([`Conn`]) is a [`ConnCore`], everything that may cross
//! threads (`core`), and the parts that hold request data buffers (which
//! may be windows on memory that must stay on their worker's thread): a
//! write's payload arriving, the replies queued with data, a write waiting
//! for its range. Moving a connection to another worker ([`Conn::detach`],
//! [`Moving::attach`]) moves its core, with its queued replies' heads.
//!
//! Input is cut into messages ([`Conn::next_message`]): the client's flags,
//! options, requests, and write payloads. A write's payload goes straight
//! into the request's buffer (read from the socket into it when the input
//! buffer holds no more). Output (module `output`) is a queue of replies,
//! each a short header and perhaps a data buffer, written with one
//! `sendmsg` for as many as fit (a buffer may be a window on a memory
//! export's own bytes, which the kernel copies to the socket straight from
//! the export).
//!
//! After `STARTTLS` the same buffers go through the connection's
//! [`TlsSession`]: reads take its decrypted input, and the output queue is
//! encrypted into it and its records written out. A TLS connection stays
//! readable until a read would block (rustls may hold decrypted input after
//! the socket is drained), and its pending output counts what rustls holds.

mod core;
mod output;
mod stream;

use std::collections::VecDeque;
use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use elevator_core::IoContext;

use crate::budget::Budget;
use crate::pool::Buf;
use crate::proto::{self, OptionHeader, ProtoError, Request};
use crate::tls::TlsSession;
use crate::transmit::Blocked;

pub use self::core::{ConnCore, ConnStats, Negotiated, SocketState, WorkerMarks};
pub(crate) use self::output::OUT_COST;
use self::output::{Out, OutHead};
pub use self::stream::Stream;

/// Largest option data kept; longer options are skipped and refused.
pub const MAX_OPTION: u32 = 64 << 10;
const INBUF: usize = 256 << 10;
/// Payload bytes still to come above which they are read straight into the
/// request's buffer rather than through the input buffer.
const DIRECT: usize = 64 << 10;
/// The most read into the input buffer at once after a write whose payload
/// was big enough to go straight into its buffer ([`DIRECT`]), besides what
/// is left of a payload: a little more than the next request's header. A full read would take most of
/// the next write's payload into the input buffer, from which it is then
/// copied once more into that write's buffer.
const AFTER_DIRECT: usize = 4 << 10;
/// Bytes a connection in the handshake may hold (unsent option replies)
/// before its options are no longer read.
pub(crate) const HANDSHAKE_HELD: u64 = 64 << 10;

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

/// A client connection: its core, and what it holds of request data.
pub struct Conn {
    core: ConnCore,
    /// A write's payload arriving: the write, its buffer, bytes filled, and
    /// the bytes reserved for it.
    payload: Option<(Request, Buf, usize, u64)>,
    out: VecDeque<Out>,
    /// The reservation made for the request at the head of its input,
    /// before it was taken (see [`Conn::admit`]).
    pub(crate) admitted: u64,
    /// A write waiting for its range (another write that overlaps it holds
    /// it): the connection is not read from meanwhile.
    pub(crate) blocked: Option<Blocked>,
    /// Whether the last write's payload was at least [`DIRECT`] bytes (so
    /// the next may well be too: see [`AFTER_DIRECT`]).
    big_writes: bool,
}

/// A connection's core reads as the connection.
impl Deref for Conn {
    type Target = ConnCore;

    #[inline]
    fn deref(&self) -> &ConnCore {
        &self.core
    }
}

impl DerefMut for Conn {
    #[inline]
    fn deref_mut(&mut self) -> &mut ConnCore {
        &mut self.core
    }
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
        let mut c = Conn::with_core(
            ConnCore::new(stream, peer, generation, ctx, budget),
            VecDeque::new(),
        );
        c.send_bytes(proto::greeting().to_vec());
        c
    }

    /// A connection of `core` and output queue `out`, holding no request
    /// data.
    fn with_core(core: ConnCore, out: VecDeque<Out>) -> Conn {
        Conn {
            core,
            payload: None,
            big_writes: false,
            out,
            admitted: 0,
            blocked: None,
        }
    }

    /// The next complete message in the input, if there is one.
    pub fn next_message(&mut self) -> Option<Message> {
        let input = &mut self.core.input;
        if input.discard > 0 {
            let n = (input.discard as usize).min(input.end - input.start);
            input.start += n;
            input.discard -= n as u64;
            if input.discard > 0 {
                return None;
            }
        }
        if let Some((_, buf, filled, _)) = &mut self.payload {
            let n = (buf.len() - *filled).min(input.end - input.start);
            buf[*filled..*filled + n].copy_from_slice(&input.buf[input.start..input.start + n]);
            *filled += n;
            input.start += n;
            if *filled < buf.len() {
                return None;
            }
            let (req, buf, _, reserved) = self.payload.take()?;
            return Some(Message::Payload(req, buf, reserved));
        }
        let avail = input.end - input.start;
        let bytes = &input.buf[input.start..input.end];
        match self.core.phase {
            Phase::ClientFlags => {
                let flags: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
                input.start += 4;
                Some(Message::ClientFlags(flags))
            }
            Phase::Options => {
                let head: [u8; proto::OPTION_HEADER_LEN] =
                    bytes.get(..proto::OPTION_HEADER_LEN)?.try_into().ok()?;
                let h = match proto::option_header(&head) {
                    Ok(h) => h,
                    Err(e) => return Some(Message::Broken(e)),
                };
                if h.len > MAX_OPTION {
                    input.start += proto::OPTION_HEADER_LEN;
                    input.discard = u64::from(h.len);
                    return Some(Message::OptionTooBig(h));
                }
                let total = proto::OPTION_HEADER_LEN + h.len as usize;
                if avail < total {
                    return None;
                }
                let data = bytes[proto::OPTION_HEADER_LEN..total].to_vec();
                input.start += total;
                Some(Message::Option(h, data))
            }
            Phase::Transmission(_) => {
                let head: [u8; proto::REQUEST_LEN] =
                    bytes.get(..proto::REQUEST_LEN)?.try_into().ok()?;
                input.start += proto::REQUEST_LEN;
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
        let input = &self.core.input;
        if !matches!(self.core.phase, Phase::Transmission(_))
            || input.discard > 0
            || self.payload.is_some()
        {
            return None;
        }
        let head: [u8; proto::REQUEST_LEN] = input
            .buf
            .get(input.start..input.end)?
            .get(..proto::REQUEST_LEN)?
            .try_into()
            .ok()?;
        proto::request(&head).ok()
    }

    /// Reserve `need` bytes of the budget for the request at the head of
    /// the input, `live` connections being open: whether they were (see
    /// [`crate::budget::admits`]).
    pub(crate) fn admit(&mut self, need: u64, live: u64) -> bool {
        if !self.core.reserve(need, live) {
            return false;
        }
        self.admitted += need;
        true
    }

    /// Give back all it holds (it is closing).
    pub(crate) fn release_all(&mut self) {
        self.admitted = 0;
        self.core.tls_held = 0;
        let all = self.core.held();
        self.core.release(all);
    }

    /// The payload of write `req` goes into `buf` (its length), as it comes;
    /// `reserved` bytes are held for the write.
    pub(crate) fn expect_payload(&mut self, req: Request, buf: Buf, reserved: u64) {
        self.big_writes = buf.len() >= DIRECT;
        self.payload = Some((req, buf, 0, reserved));
    }

    /// Skip the next `n` bytes of input (a refused write's payload).
    pub fn skip(&mut self, n: u64) {
        self.core.input.discard += n;
    }

    /// Read what the socket has: into the pending payload's buffer if the
    /// input buffer is drained, else into the input buffer. Returns false
    /// when nothing more can be read now.
    pub fn fill(&mut self) -> bool {
        let core = &mut self.core;
        let input = &mut core.input;
        if input.start == input.end {
            input.start = 0;
            input.end = 0;
        }
        // What is left of the payload being read, if any.
        let pending = self
            .payload
            .as_ref()
            .map_or(0, |(_, buf, filled, _)| buf.len() - filled);
        let result = match &mut self.payload {
            // A big payload goes straight into its buffer; small ones come
            // through the input buffer, several requests per read.
            Some((_, buf, filled, _))
                if input.start == input.end && buf.len() - *filled >= DIRECT =>
            {
                let want = buf.len() - *filled;
                let r = receive(&mut core.stream, &mut core.tls, &mut buf[*filled..]);
                if let Ok(n) = r {
                    *filled += n;
                }
                (r, want)
            }
            _ => {
                if input.end == input.buf.len() {
                    // Keep the unread tail at the front.
                    input.buf.copy_within(input.start..input.end, 0);
                    input.end -= input.start;
                    input.start = 0;
                }
                let mut want = input.buf.len() - input.end;
                if self.big_writes && input.start == input.end {
                    want = want.min(pending + AFTER_DIRECT);
                }
                let to = &mut input.buf[input.end..input.end + want];
                let r = receive(&mut core.stream, &mut core.tls, to);
                if let Ok(n) = r {
                    input.end += n;
                }
                (r, want)
            }
        };
        let socket = &mut core.socket;
        match result {
            (Ok(0), _) => {
                socket.eof = true;
                socket.readable = false;
                if core.negotiated.refused_for_tls && core.tls.is_none() {
                    core.closing.get_or_insert_with(|| {
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
                core.worker.progressed = true;
                if n < want && !socket.hangup && core.tls.is_none() {
                    socket.readable = false;
                }
                true
            }
            (Err(e), _) if e.kind() == io::ErrorKind::WouldBlock => {
                socket.readable = false;
                false
            }
            (Err(e), _) if e.kind() == io::ErrorKind::Interrupted => true,
            (Err(e), _) => {
                socket.eof = true;
                socket.readable = false;
                // TLS failures say what failed themselves.
                let tls_failure = core.tls.is_some() && e.kind() == io::ErrorKind::InvalidData;
                core.closing.get_or_insert_with(|| {
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

    /// Whether a write's payload is being collected.
    pub fn in_payload(&self) -> bool {
        self.payload.is_some()
    }

    /// Take back a pending payload's buffer (the connection is closing), and
    /// give back what was reserved for its write.
    pub fn take_payload(&mut self) -> Option<Buf> {
        let (_, b, _, reserved) = self.payload.take()?;
        self.core.release(reserved);
        Some(b)
    }

    /// Ready the connection to move to another worker: `Err` gives it back
    /// if it holds request data (a write's payload arriving, a write
    /// waiting for its range, or a reply with data).
    pub fn detach(self) -> Result<Moving, Box<Conn>> {
        if self.payload.is_some()
            || self.blocked.is_some()
            || self.out.iter().any(|o| o.data.is_some())
        {
            return Err(Box::new(self));
        }
        Ok(Moving {
            core: self.core,
            out: output::heads(self.out),
        })
    }
}

/// A connection on its way to another worker: its core and its queued
/// replies, which hold no request data, so it may cross threads. A
/// connection is handed over just after it has chosen its export, before
/// any request.
pub struct Moving {
    core: ConnCore,
    out: Vec<OutHead>,
}

// Compile-time check that what crosses threads may.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Stream>();
    send::<Moving>();
};

impl Moving {
    /// The connection, arrived.
    pub fn attach(self) -> Conn {
        Conn::with_core(self.core, output::from_heads(self.out))
    }
}
