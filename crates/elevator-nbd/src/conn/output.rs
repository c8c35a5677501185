//! A connection's output: a queue of replies, each a short header and
//! perhaps a data buffer, written with one `sendmsg` for as many as fit
//! ([`SendList`], which hands windows lent on a memory export's bytes to the
//! kernel unread), or encrypted through TLS (never from a lent window); each
//! counted against the budget until it is sent.

use std::collections::VecDeque;
use std::io::{self, IoSlice};

use elevator_io::SendList;

use super::Conn;
use crate::pool::{self, Buf, Pool};
use crate::tls::{TLS_OUT_LIMIT, TlsConfig, TlsSession};

/// Parts per `sendmsg`.
const IOV: usize = SendList::MAX;
/// What TLS is given of a connection's output at a time when the budget is
/// full: one record's worth.
const TLS_RECORD: usize = 16 << 10;
/// What one queued reply costs besides its bytes: its place in the output
/// queue (twice its size: the queue grows by doubling).
pub(crate) const OUT_COST: u64 = 2 * std::mem::size_of::<Out>() as u64;

/// One reply (or part of one) waiting to be sent: its head (which is all
/// there is of a handshake reply) and perhaps a data buffer.
pub(super) struct Out {
    pub(super) head: OutHead,
    pub(super) data: Option<Buf>,
}

/// A queued reply without its data buffer: what crosses threads when a
/// connection moves (it then holds no data buffers).
pub(super) struct OutHead {
    head: [u8; 32],
    head_len: u8,
    /// Used instead of `head` when not empty (handshake replies).
    bytes: Vec<u8>,
    /// Bytes of this item already sent.
    pos: usize,
    /// What it holds of the budget until it is sent.
    cost: u64,
}

impl Out {
    fn head(&self) -> &[u8] {
        if self.head.bytes.is_empty() {
            &self.head.head[..usize::from(self.head.head_len)]
        } else {
            &self.head.bytes
        }
    }

    fn len(&self) -> usize {
        self.head().len() + self.data.as_ref().map_or(0, |d| d.len())
    }
}

/// A part of a queued reply to send: bytes of its head, or `len` bytes of
/// its data buffer from byte `from`.
enum Part<'a> {
    Head(&'a [u8]),
    Data(&'a Buf, usize, usize),
}

/// Output queue `out`'s next parts to send, from its front, `limit` bytes
/// and [`IOV`] parts at most, each handed to `take` in order.
fn gather<'a>(out: &'a VecDeque<Out>, limit: usize, mut take: impl FnMut(Part<'a>)) {
    let mut n = 0;
    let mut left = limit;
    for item in out {
        if n + 2 > IOV || left == 0 {
            break;
        }
        let head = item.head();
        let pos = item.head.pos;
        if let Some(bytes) = head.get(pos..).filter(|b| !b.is_empty()) {
            let bytes = &bytes[..bytes.len().min(left)];
            left -= bytes.len();
            take(Part::Head(bytes));
            n += 1;
        }
        if let Some(d) = &item.data {
            let from = pos.saturating_sub(head.len());
            let len = d.len().saturating_sub(from).min(left);
            if len > 0 {
                left -= len;
                take(Part::Data(d, from, len));
                n += 1;
            }
        }
    }
}

/// What `n` bytes of output cost once TLS holds them, as records.
fn tls_cost(n: usize) -> u64 {
    n as u64 + n as u64 / 512 + 64
}

impl Conn {
    /// Queue bytes (a handshake reply, or a block status reply): counted
    /// against the budget as they are queued.
    pub fn send_bytes(&mut self, bytes: Vec<u8>) {
        let cost = bytes.len() as u64 + OUT_COST;
        self.core.force(cost);
        self.core.out_bytes += bytes.len();
        self.out.push_back(Out {
            head: OutHead {
                head: [0; 32],
                head_len: 0,
                bytes,
                pos: 0,
                cost,
            },
            data: None,
        });
    }

    /// Queue a reply: a header of at most 32 bytes, and data. It is counted
    /// against the budget (a data buffer at the size the pool allocates)
    /// until it is sent: the caller then gives back its request's
    /// reservation, which covered it.
    pub fn send(&mut self, head: &[u8], data: Option<Buf>) {
        let held = data.as_ref().map_or(0, |d| match d {
            Buf::Buf(_) => pool::alloc_size(d.len()),
            Buf::Window(_) | Buf::Lent(_) => d.len() as u64,
        });
        self.send_costed(head, data, held);
    }

    /// [`Conn::send`], with its data buffer counted as `held` bytes (a
    /// reply that is part of a bigger buffer).
    pub(crate) fn send_costed(&mut self, head: &[u8], data: Option<Buf>, held: u64) {
        let mut h = [0u8; 32];
        h[..head.len()].copy_from_slice(head);
        let cost = OUT_COST + head.len() as u64 + held;
        self.core.force(cost);
        let item = Out {
            head: OutHead {
                head: h,
                head_len: head.len() as u8,
                bytes: Vec::new(),
                pos: 0,
                cost,
            },
            data,
        };
        self.core.out_bytes += item.len();
        self.out.push_back(item);
    }

    /// Switch to TLS (`STARTTLS` was accepted, and its reply queued): the
    /// output queued so far goes out in clear, then everything is TLS. Input
    /// already read goes to the session as the start of the client's TLS
    /// handshake. A session that cannot start fails the connection.
    pub(crate) fn start_tls(&mut self, config: &TlsConfig) {
        let mut plain = Vec::with_capacity(self.core.out_bytes);
        let mut freed = 0;
        for item in self.out.drain(..) {
            let pos = item.head.pos;
            plain.extend_from_slice(&item.head()[pos.min(item.head().len())..]);
            if let Some(d) = &item.data {
                plain.extend_from_slice(&d[pos.saturating_sub(item.head().len())..]);
            }
            freed += item.head.cost;
        }
        let core = &mut self.core;
        core.out_bytes = 0;
        // The queued replies are now TLS's plaintext: counted as TLS's
        // output is, until it is written.
        core.release(freed);
        let cost = tls_cost(plain.len());
        core.force(cost);
        core.tls_held += cost;
        let early = &core.input.buf[core.input.start..core.input.end];
        let started = config
            .session()
            .map_err(|e| format!("TLS session cannot start: {e}"))
            .and_then(|tls| TlsSession::start(tls, plain, early));
        core.input.start = core.input.end;
        match started {
            Ok(t) => {
                core.tls = Some(Box::new(t));
                core.socket.readable = true;
            }
            Err(why) => core.fail(&why),
        }
    }

    /// `sent` bytes from the queue's front are gone: fully sent data buffers
    /// go back to `pool`, and their replies' costs to the budget.
    fn consume(&mut self, mut sent: usize, pool: &mut Pool) {
        self.core.worker.progressed = true;
        self.core.out_bytes -= sent;
        let mut freed = 0;
        while sent > 0 {
            let Some(front) = self.out.front_mut() else {
                break;
            };
            let left = front.len() - front.head.pos;
            if sent < left {
                front.head.pos += sent;
                break;
            }
            sent -= left;
            if let Some(item) = self.out.pop_front() {
                freed += item.head.cost;
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
        self.core.release(freed);
    }

    /// Send what the socket takes. Data buffers fully sent go back to `pool`.
    pub fn flush(&mut self, pool: &mut Pool) {
        if self.core.tls.is_some() {
            self.flush_tls(pool);
            return;
        }
        while self.core.socket.writable && !self.out.is_empty() {
            // Data goes to the kernel as it is, windows lent on a memory
            // device's bytes included (which this process does not read).
            let mut list = SendList::new();
            gather(&self.out, usize::MAX, |part| {
                let room = match part {
                    Part::Head(bytes) => list.push(bytes),
                    Part::Data(d, from, len) => list.push_mem(d, from, len),
                };
                debug_assert!(room, "IOV parts at most");
            });
            match list.send(self.core.stream.fd()) {
                Ok(0) => {
                    self.core.fail("the socket took no bytes");
                    return;
                }
                Ok(sent) => self.consume(sent, pool),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.core.socket.writable = false
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.core.fail(&format!("write failed: {e}"));
                    return;
                }
            }
        }
    }

    /// [`Conn::flush`] through TLS: write out what rustls holds, encrypt
    /// more of the queue into it, until the socket or rustls takes no more.
    fn flush_tls(&mut self, pool: &mut Pool) {
        while self.core.socket.writable {
            let core = &mut self.core;
            let Some(t) = core.tls.as_mut() else {
                return;
            };
            match t.send(&mut core.stream) {
                Ok(true) => {
                    // All written: what TLS held is gone.
                    let held = std::mem::take(&mut core.tls_held);
                    core.release(held);
                }
                Ok(false) => {
                    core.socket.writable = false;
                    return;
                }
                Err(e) => {
                    core.fail(&format!("write failed: {e}"));
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
            let (limit, reserved) = if self.core.try_add(fill_cost) {
                (TLS_OUT_LIMIT, fill_cost)
            } else {
                (TLS_RECORD, 0)
            };
            // rustls reads the bytes: a reply through TLS never holds a
            // lent window (`transmit` gives it a buffer or an ordinary
            // window).
            let mut slices: [IoSlice<'_>; IOV] = [IoSlice::new(&[]); IOV];
            let mut n = 0;
            gather(&self.out, limit, |part| {
                slices[n] = IoSlice::new(match part {
                    Part::Head(bytes) => bytes,
                    Part::Data(d, from, len) => &d[from..from + len],
                });
                n += 1;
            });
            let core = &mut self.core;
            let Some(t) = core.tls.as_mut() else {
                core.release(reserved);
                return;
            };
            match t.write_vectored(&slices[..n]) {
                // rustls is full even though its output is all out: it is
                // still in the handshake, which must finish first.
                Ok(0) => {
                    core.release(reserved);
                    return;
                }
                Ok(taken) => {
                    let held = tls_cost(taken);
                    if reserved >= held {
                        core.release(reserved - held);
                    } else {
                        core.release(reserved);
                        core.force(held);
                    }
                    core.tls_held += held;
                    self.consume(taken, pool);
                }
                Err(e) => {
                    core.release(reserved);
                    core.fail(&format!("TLS error: {e}"));
                    return;
                }
            }
        }
    }

    /// Drop unsent output, returning its buffers and its costs.
    pub fn drop_output(&mut self, pool: &mut Pool) {
        let mut freed = std::mem::take(&mut self.core.tls_held);
        for item in self.out.drain(..) {
            freed += item.head.cost;
            if let Some(d) = item.data {
                pool.put(d);
            }
        }
        self.core.out_bytes = 0;
        self.core.release(freed);
    }
}

/// The output queue's heads, to move with its connection (the caller has
/// checked that no reply holds a data buffer).
pub(super) fn heads(out: VecDeque<Out>) -> Vec<OutHead> {
    out.into_iter().map(|o| o.head).collect()
}

/// The output queue again, once moved.
pub(super) fn from_heads(heads: Vec<OutHead>) -> VecDeque<Out> {
    heads
        .into_iter()
        .map(|head| Out { head, data: None })
        .collect()
}
