//! The transmission phase: requests checked and handed to the export's
//! engine, completions turned into replies. Block status, cache and reads
//! of holes are answered at once by `status`.
//!
//! Checks, each answered with the error the protocol prescribes and the
//! connection going on: unknown commands and flags (`EINVAL`), reads and
//! writes of no bytes or over the request cap (`EINVAL`), ranges past the
//! end (`EINVAL` for reads and trims, `ENOSPC` for writes and write-zeroes),
//! offsets or lengths off the export's block size (`EINVAL`), changes to a
//! read-only export (`EPERM`). A request's offset and length become a
//! [`ByteRange`] in one place ([`request_range`]), so that nothing after
//! it can wrap. A refused write's payload is read and thrown away so the
//! stream stays in step. Bad magic closes the connection: after it nothing
//! in the stream can be trusted.
//!
//! Requests on the export's block size but below the device's alignment
//! are read-modify-writes ([`crate::rmw`]); on such an export every write
//! takes its range first, and one whose range is taken waits
//! ([`Blocked`]), its connection not read from.
//!
//! Memory: what a request will hold ([`need`]: its data buffer and its
//! reply) is reserved from the server's budget before the request is taken
//! from the input (the worker does it, with [`Conn::admit`]), carried with
//! the request while it runs, and given back once its reply is queued (the
//! reply then holds its own cost until it is sent).

use elevator_core::{BioFlags, ByteRange, Op, Status};
use elevator_io::{Completion, DioRequest, Slice};

use crate::conn::{Conn, HANDSHAKE_HELD, OUT_COST, Phase};
use crate::export::Export;
use crate::pool::{self, Buf};
use crate::proto::{self, Request, cflag, chunk, cmd, err};
use crate::rmw::{self, Held, Next, RmwOp};
use crate::shared::{InFlight, Shared, free_slot};
use crate::status;

/// A write that waits for its range (another write that overlaps it holds
/// it): its connection is not read from until it has gone ahead.
pub(crate) struct Blocked {
    r: Request,
    buf: Option<Buf>,
    reserved: u64,
    held: Held,
}

impl Blocked {
    /// Its data buffer and its reservation, given back (the connection is
    /// gone).
    pub(crate) fn abandon(self, c: &mut Conn, shared: &mut Shared) {
        if let Some(b) = self.buf {
            shared.pool.put(b);
        }
        c.release(self.reserved);
        c.inflight -= 1;
    }
}

/// Whether connection `c` must not be read from now: it has as many
/// requests in flight as it may, or its next request did not fit in the
/// memory budget and still would not, or the server is stopping; in the
/// handshake, it holds [`HANDSHAKE_HELD`] bytes of unsent replies.
pub(crate) fn throttled(c: &Conn, shared: &Shared) -> bool {
    match c.phase {
        Phase::Transmission(e) => {
            let starved = c.waiting.is_some_and(|n| !c.would_admit(n, shared.live()));
            let locked_out = c.blocked.as_ref().is_some_and(|b| {
                shared.exports[e]
                    .locks
                    .as_ref()
                    .is_some_and(|l| !l.would_take(b.held))
            });
            (!c.in_payload()
                && (c.inflight >= shared.cfg.max_inflight || shared.stopping || starved))
                || c.disc
                || locked_out
        }
        _ => c.held() >= HANDSHAKE_HELD,
    }
}

/// The most a reply without data costs: its header and its place in the
/// queue.
const REPLY: u64 = OUT_COST + 32;

/// The bytes request `r` on export `e` will hold at most while it runs and
/// until its reply is sent: its data buffer (a read's or a write's, if it
/// will be served) and its reply. Reserved before it is read.
pub(crate) fn need(c: &Conn, shared: &Shared, e: usize, r: &Request) -> u64 {
    let ex = &shared.exports[e];
    let served = || check(c, shared, e, r).is_none();
    match r.kind {
        cmd::DISC => 0,
        cmd::BLOCK_STATUS => REPLY + status::MAX_REPLY,
        cmd::READ | cmd::WRITE | cmd::WRITE_ZEROES if sub_block(ex, r) && served() => {
            REPLY + rmw::extra_bytes(r.kind, r.offset, u64::from(r.len), u64::from(ex.align))
        }
        cmd::READ | cmd::WRITE if served() => REPLY + pool::alloc_size(r.len as usize),
        _ => REPLY,
    }
}

/// Whether `r` (checked) is a read-modify-write on export `ex`: below its
/// device's alignment, where that is allowed.
fn sub_block(ex: &Export, r: &Request) -> bool {
    ex.locks.is_some() && rmw::below(r.offset, u64::from(r.len), u64::from(ex.align))
}

/// The range of request `r` on export `ex`, or the error the protocol
/// prescribes: off the export's block size (`EINVAL`), past its end or past
/// 2^64 (`ENOSPC` for writes and write-zeroes, `EINVAL` for the others).
/// The one place a request's offset and length from the wire are checked.
pub(crate) fn request_range(ex: &Export, r: &Request) -> Result<ByteRange, u32> {
    let block = u64::from(ex.min_block);
    if !r.offset.is_multiple_of(block) || !u64::from(r.len).is_multiple_of(block) {
        return Err(err::EINVAL);
    }
    let past = if matches!(r.kind, cmd::WRITE | cmd::WRITE_ZEROES) {
        err::ENOSPC
    } else {
        err::EINVAL
    };
    ByteRange::new(r.offset, u64::from(r.len))
        .and_then(|x| x.within(ex.size))
        .map_err(|_| past)
}

/// Answer `r` with error `errno`: a structured error chunk for the
/// commands whose replies the client reads as chunks (reads and block
/// status, once structured replies were negotiated), a simple reply
/// otherwise.
pub(crate) fn error_reply(c: &mut Conn, r: &Request, errno: u32) {
    c.stats.errors += 1;
    if c.negotiated.structured && matches!(r.kind, cmd::READ | cmd::BLOCK_STATUS) {
        let mut h = [0u8; proto::STRUCTURED_HEADER_LEN + 6];
        h[..proto::STRUCTURED_HEADER_LEN].copy_from_slice(&proto::structured_header(
            chunk::DONE,
            chunk::ERROR,
            r.cookie,
            6,
        ));
        h[proto::STRUCTURED_HEADER_LEN..proto::STRUCTURED_HEADER_LEN + 4]
            .copy_from_slice(&errno.to_be_bytes());
        c.send(&h, None);
    } else {
        c.send(&proto::simple_reply(errno, r.cookie), None);
    }
}

/// What is wrong with `r` on export `e`, if anything.
fn check(c: &Conn, shared: &Shared, e: usize, r: &Request) -> Option<u32> {
    let ex = &shared.exports[e];
    // FUA is accepted on every command once SEND_FUA is advertised (the
    // protocol says so; on reads and flushes it changes nothing).
    let allowed = match r.kind {
        cmd::READ => cflag::FUA | cflag::DF,
        cmd::WRITE | cmd::TRIM | cmd::FLUSH => cflag::FUA,
        cmd::WRITE_ZEROES => cflag::FUA | cflag::NO_HOLE,
        cmd::DISC => 0,
        _ => return Some(err::EINVAL),
    };
    if r.flags & !allowed != 0 {
        return Some(err::EINVAL);
    }
    if matches!(r.kind, cmd::FLUSH | cmd::DISC) {
        return None;
    }
    let _ = c;
    let writes = matches!(r.kind, cmd::WRITE | cmd::WRITE_ZEROES | cmd::TRIM);
    if writes && ex.read_only {
        return Some(err::EPERM);
    }
    if r.len == 0 || (matches!(r.kind, cmd::READ | cmd::WRITE) && r.len > shared.cfg.max_request) {
        return Some(err::EINVAL);
    }
    request_range(ex, r).err()
}

/// A request header arrived on connection `c` (slot `index`), with what
/// the worker reserved for it ([`need`]) in `c.admitted`.
pub(crate) fn request(c: &mut Conn, index: u32, shared: &mut Shared, r: Request) {
    let reserved = std::mem::take(&mut c.admitted);
    let Phase::Transmission(e) = c.phase else {
        c.release(reserved);
        return;
    };
    if r.kind == cmd::DISC {
        c.disc = true;
        c.release(reserved);
        return;
    }
    if status::answers(r.kind) {
        status::request(c, shared, e, &r);
        c.release(reserved);
        return;
    }
    if let Some(errno) = check(c, shared, e, &r) {
        if r.kind == cmd::WRITE {
            c.skip(u64::from(r.len));
        }
        error_reply(c, &r, errno);
        c.release(reserved);
        return;
    }
    if r.kind == cmd::WRITE {
        // Into a buffer of its own, never straight into a memory export: a
        // write that does not arrive whole, or is refused, must leave the
        // export as it was.
        match shared.pool.get(r.len as usize) {
            Ok(buf) => {
                c.inflight += 1;
                c.expect_payload(r, buf, reserved);
            }
            Err(_) => {
                c.skip(u64::from(r.len));
                error_reply(c, &r, err::ENOMEM);
                c.release(reserved);
            }
        }
        return;
    }
    if r.kind == cmd::READ && status::hole_read(c, shared, e, &r) {
        c.release(reserved);
        return;
    }
    let mut r = r;
    let ex = &shared.exports[e];
    if sub_block(ex, &r) {
        let align = u64::from(ex.align);
        match r.kind {
            cmd::READ => {
                c.inflight += 1;
                start_rmw(c, index, shared, e, r, None, reserved, None);
                return;
            }
            cmd::TRIM => {
                // A hint: the whole blocks inside it, if any.
                let (t0, t1) = rmw::inside(r.offset, r.offset + u64::from(r.len), align);
                if t0 >= t1 {
                    c.stats.trims += 1;
                    c.send(&proto::simple_reply(0, r.cookie), None);
                    c.release(reserved);
                    return;
                }
                r.offset = t0;
                r.len = (t1 - t0) as u32;
            }
            _ => {}
        }
    }
    let buf = if r.kind == cmd::READ {
        match buffer(c.is_tls(), shared, e, &r) {
            Ok(b) => Some(b),
            Err(_) => {
                error_reply(c, &r, err::ENOMEM);
                c.release(reserved);
                return;
            }
        }
    } else {
        None
    };
    c.inflight += 1;
    submit(c, index, shared, e, r, buf, reserved);
}

/// Try again the write that waits for its range on connection `c`: whether
/// it went ahead (or there was none).
pub(crate) fn retry_blocked(c: &mut Conn, index: u32, shared: &mut Shared) -> bool {
    let Some(b) = c.blocked.take() else {
        return true;
    };
    let Phase::Transmission(e) = c.phase else {
        b.abandon(c, shared);
        return true;
    };
    submit(c, index, shared, e, b.r, b.buf, b.reserved);
    c.blocked.is_none()
}

/// A slot in the table of requests in flight.
fn slot(shared: &mut Shared) -> u32 {
    free_slot(
        &mut shared.inflight,
        &mut shared.free_inflight,
        InFlight::default,
    )
}

/// Give back range `held` of export `e`, and wake whoever waits for it.
fn give_back(shared: &Shared, e: usize, held: Option<Held>) {
    if let (Some(h), Some(locks)) = (held, shared.exports[e].locks.as_ref()) {
        locks.give_back(h);
        shared.hub.budget.wake_waiters();
    }
}

/// Start read-modify-write `r` on export `e` (counted in flight), with a
/// write's `payload`, `reserved` bytes of the budget and the range it holds.
#[allow(clippy::too_many_arguments)]
fn start_rmw(
    c: &mut Conn,
    index: u32,
    shared: &mut Shared,
    e: usize,
    r: Request,
    payload: Option<Buf>,
    reserved: u64,
    lock: Option<Held>,
) {
    let align = u64::from(shared.exports[e].align);
    let mut op = RmwOp::new((c.generation, c.ctx), e, &r, align, payload, lock, reserved);
    let ud = slot(shared);
    let id = free_slot(&mut shared.rmw, &mut shared.free_rmw, || None);
    shared.inflight[ud as usize] = InFlight {
        rmw: id + 1,
        ..InFlight::of(index, c.generation, e, &r)
    };
    let first = op.first(&mut shared.pool, u64::from(ud));
    shared.rmw[id as usize] = Some(op);
    go_on(Some(c), shared, ud, id, first);
}

/// Hand read-modify-write `id` (slot `ud`) its next step, or end it.
fn go_on(c: Option<&mut Conn>, shared: &mut Shared, ud: u32, id: u32, next: Next) {
    let errno = match next {
        Next::Submit(req) => {
            let e = shared.rmw[id as usize].as_ref().map_or(0, |op| op.export);
            match shared.engines[e].as_mut().map(|engine| engine.submit(req)) {
                Some(Ok(())) => return,
                Some(Err(rejected)) => {
                    shared.pool.put_list(rejected.request.bufs);
                    err::ENOMEM
                }
                None => err::EIO,
            }
        }
        Next::NoMemory => err::ENOMEM,
        Next::Done(data) => {
            finish_rmw(c, shared, ud, id, Ok(data));
            return;
        }
    };
    finish_rmw(c, shared, ud, id, Err(errno));
}

/// Read-modify-write `id` (slot `ud`) is over: give back its range, its
/// buffers and its slots, and answer its connection `c` (if still there):
/// `Ok` with a read's aligned blocks, or an error.
fn finish_rmw(
    c: Option<&mut Conn>,
    shared: &mut Shared,
    ud: u32,
    id: u32,
    outcome: Result<Option<Buf>, u32>,
) {
    shared.free_inflight.push(ud);
    let Some(mut op) = shared.rmw.get_mut(id as usize).and_then(Option::take) else {
        return;
    };
    shared.free_rmw.push(id);
    op.drop_buffers(&mut shared.pool);
    give_back(shared, op.export, op.lock);
    let Some(c) = c.filter(|c| c.generation == op.generation) else {
        if let Ok(Some(d)) = outcome {
            shared.pool.put(d);
        }
        return;
    };
    c.inflight -= 1;
    let r = Request::unflagged(op.kind, op.cookie, op.offset, op.len as u32);
    match outcome {
        Ok(data) if op.kind == cmd::READ => {
            c.stats.reads += 1;
            // Its part of the aligned blocks read.
            let align = u64::from(shared.exports[op.export].align);
            let (a0, a1) = rmw::aligned(op.offset, op.offset + op.len, align);
            let part = data.and_then(Buf::into_buf).and_then(|s| {
                Slice::new(s.into_inner(), (op.offset - a0) as usize, op.len as usize).ok()
            });
            match part {
                Some(p) => {
                    c.stats.read_bytes += op.len;
                    let held = pool::alloc_size((a1 - a0) as usize);
                    read_reply(c, op.cookie, op.offset, Buf::Buf(p), held);
                }
                None => error_reply(c, &r, err::EIO),
            }
        }
        Ok(_) => {
            if op.kind == cmd::WRITE {
                c.stats.writes += 1;
                c.stats.write_bytes += op.len;
            } else {
                c.stats.zeroes += 1;
            }
            c.send(&proto::simple_reply(0, op.cookie), None);
        }
        Err(errno) => error_reply(c, &r, errno),
    }
    c.release(op.reserved);
}

/// Queue read `cookie`'s reply, its `data` from `offset`, the data counted
/// as `held` bytes.
fn read_reply(c: &mut Conn, cookie: u64, offset: u64, data: Buf, held: u64) {
    if c.negotiated.structured {
        let mut h = [0u8; proto::STRUCTURED_HEADER_LEN + 8];
        h[..proto::STRUCTURED_HEADER_LEN].copy_from_slice(&proto::structured_header(
            chunk::DONE,
            chunk::OFFSET_DATA,
            cookie,
            8 + data.len() as u32,
        ));
        h[proto::STRUCTURED_HEADER_LEN..].copy_from_slice(&offset.to_be_bytes());
        c.send_costed(&h, Some(data), held);
    } else {
        c.send_costed(&proto::simple_reply(0, cookie), Some(data), held);
    }
}

/// Memory for the data of read `r` on export `e`: a window on the export's
/// own memory when it is a memory device (the reply then goes to the socket
/// straight from the device: the kernel's copy is the only one), else a
/// pooled buffer. Through TLS, whose encryption reads the reply's bytes in
/// this process, a window only while the device has one handle (`map`).
fn buffer(
    tls: bool,
    shared: &mut Shared,
    e: usize,
    r: &Request,
) -> Result<Buf, elevator_io::BufError> {
    let window = shared.engines[e].as_ref().and_then(|engine| {
        let device = engine.device();
        if tls {
            device.map(r.offset, r.len as usize).map(Buf::Window)
        } else {
            device.lend(r.offset, r.len as usize).map(Buf::Lent)
        }
    });
    match window {
        Some(w) => Ok(w),
        None => shared.pool.get(r.len as usize),
    }
}

/// A write's payload is complete; `reserved` bytes are held for the write.
pub(crate) fn payload(
    c: &mut Conn,
    index: u32,
    shared: &mut Shared,
    r: Request,
    buf: Buf,
    reserved: u64,
) {
    let Phase::Transmission(e) = c.phase else {
        shared.pool.put(buf);
        c.release(reserved);
        return;
    };
    submit(c, index, shared, e, r, Some(buf), reserved);
}

/// Hand `r` to export `e`'s engine, with `reserved` bytes of the budget
/// held for it. The caller has counted it in flight.
fn submit(
    c: &mut Conn,
    index: u32,
    shared: &mut Shared,
    e: usize,
    r: Request,
    buf: Option<Buf>,
    reserved: u64,
) {
    // On an export where requests may be below the alignment, a write
    // takes its range first: alone for a read-modify-write, shared for the
    // others.
    let ex = &shared.exports[e];
    let rmw = sub_block(ex, &r) && matches!(r.kind, cmd::WRITE | cmd::WRITE_ZEROES);
    let mut lock = None;
    if let Some(locks) = ex.locks.as_ref()
        && matches!(r.kind, cmd::WRITE | cmd::WRITE_ZEROES | cmd::TRIM)
    {
        let end = r.offset + u64::from(r.len);
        let (start, end) = if rmw {
            rmw::aligned(r.offset, end, u64::from(ex.align))
        } else {
            (r.offset, end)
        };
        let held = Held {
            start,
            end,
            exclusive: rmw,
        };
        if !locks.try_take(held) {
            c.blocked = Some(Blocked {
                r,
                buf,
                reserved,
                held,
            });
            return;
        }
        lock = Some(held);
    }
    if rmw {
        start_rmw(c, index, shared, e, r, buf, reserved, lock);
        return;
    }
    let ud = slot(shared);
    shared.inflight[ud as usize] = InFlight {
        reserved,
        lock,
        ..InFlight::of(index, c.generation, e, &r)
    };
    let mut list = shared.pool.list();
    if let Some(b) = buf {
        list.push(b);
    }
    let u = u64::from(ud);
    let mut req = match r.kind {
        cmd::READ => DioRequest::read(r.offset, list, u),
        cmd::WRITE => DioRequest::write(r.offset, list, u),
        cmd::FLUSH => {
            shared.pool.put_list(list);
            DioRequest::flush(u)
        }
        cmd::TRIM => {
            shared.pool.put_list(list);
            DioRequest::discard(r.offset, u64::from(r.len), u)
        }
        _ => {
            shared.pool.put_list(list);
            DioRequest::write_zeroes(r.offset, u64::from(r.len), u)
        }
    }
    .with_ctx(c.ctx);
    if r.flags & cflag::FUA != 0 {
        req = req.with_flags(BioFlags::FUA);
    }
    let Some(engine) = shared.engines[e].as_mut() else {
        // Connections reach the worker that serves their export before
        // they send a request: this cannot happen, but fails soft.
        shared.pool.put_list(req.bufs);
        shared.free_inflight.push(ud);
        give_back(shared, e, lock);
        c.inflight -= 1;
        error_reply(c, &r, err::EIO);
        c.release(reserved);
        return;
    };
    if let Err(rejected) = engine.submit(req) {
        // The checks above keep the engine's own rules, so this is the
        // engine being full (or stopping).
        shared.pool.put_list(rejected.request.bufs);
        shared.free_inflight.push(ud);
        give_back(shared, e, lock);
        c.inflight -= 1;
        let errno = match rejected.error {
            elevator_io::DioError::Busy { .. } => err::ENOMEM,
            elevator_io::DioError::ShuttingDown => err::ESHUTDOWN,
            elevator_io::DioError::ReadOnly { .. } => err::EPERM,
            _ => err::EINVAL,
        };
        error_reply(c, &r, errno);
        c.release(reserved);
    }
}

fn errno(status: Status, stopping: bool) -> u32 {
    match status {
        Status::Ok => 0,
        Status::NoSpace => err::ENOSPC,
        Status::NotSupported => err::ENOTSUP,
        Status::Cancelled if stopping => err::ESHUTDOWN,
        // NBD has no ETIMEDOUT or ENODEV: the client sees EIO, as a
        // kernel sees a timed-out or removed disk.
        Status::IoError | Status::Cancelled | Status::TimedOut | Status::Offline => err::EIO,
    }
}

/// A request completed at an engine: answer it, if its connection is still
/// there.
pub(crate) fn completed(
    conns: &mut [Option<Conn>],
    shared: &mut Shared,
    mut comp: Completion<Buf>,
) {
    let Some(rec) = shared.inflight.get(comp.user_data as usize).copied() else {
        shared.pool.put_list(comp.bufs);
        return;
    };
    let conn = conns
        .get_mut(rec.conn as usize)
        .and_then(Option::as_mut)
        .filter(|c| c.generation == rec.generation);
    if rec.rmw != 0 {
        // A step of a read-modify-write: on to the next, or the end.
        let (ud, id) = (comp.user_data as u32, rec.rmw - 1);
        let buf = comp.bufs.pop();
        shared.pool.put_list(comp.bufs);
        let next = match (comp.result, shared.rmw.get_mut(id as usize)) {
            (Ok(_), Some(Some(op))) => op.advance(buf, &mut shared.pool, u64::from(ud)),
            (result, _) => {
                if let Some(b) = buf {
                    shared.pool.put(b);
                }
                let errno = result
                    .err()
                    .map_or(err::EIO, |f| errno(f.status, shared.stopping));
                finish_rmw(conn, shared, ud, id, Err(errno));
                return;
            }
        };
        go_on(conn, shared, ud, id, next);
        return;
    }
    shared.free_inflight.push(comp.user_data as u32);
    give_back(shared, rec.export as usize, rec.lock);
    let Some(c) = conn else {
        shared.pool.put_list(comp.bufs);
        return;
    };
    c.inflight -= 1;
    let r = Request::unflagged(rec.kind, rec.cookie, rec.offset, 0);
    let stats = &mut c.stats;
    match comp.op {
        Op::Read => stats.reads += 1,
        Op::Write => stats.writes += 1,
        Op::Flush => stats.flushes += 1,
        Op::Discard => stats.trims += 1,
        Op::WriteZeroes => stats.zeroes += 1,
    }
    match comp.result {
        Ok(n) if rec.kind == cmd::READ => {
            c.stats.read_bytes += n;
            let data = comp.bufs.pop();
            shared.pool.put_list(comp.bufs);
            match data {
                Some(d) => {
                    let held = match &d {
                        Buf::Buf(_) => pool::alloc_size(d.len()),
                        Buf::Window(_) | Buf::Lent(_) => d.len() as u64,
                    };
                    read_reply(c, rec.cookie, rec.offset, d, held);
                }
                None => error_reply(c, &r, err::EIO),
            }
        }
        Ok(n) => {
            if rec.kind == cmd::WRITE {
                c.stats.write_bytes += n;
            }
            shared.pool.put_list(comp.bufs);
            c.send(&proto::simple_reply(0, rec.cookie), None);
        }
        Err(f) => {
            shared.pool.put_list(comp.bufs);
            error_reply(c, &r, errno(f.status, shared.stopping));
        }
    }
    // Its reply is queued, and holds its own cost.
    c.release(rec.reserved);
}

/// The line logged when a connection ends.
pub(crate) fn summary(c: &Conn, reason: &str) -> String {
    let s = &c.stats;
    format!(
        "{} export '{}' after {:.3} s: {} reads ({} bytes), {} writes ({} bytes), {} flushes, \
         {} trims, {} write-zeroes, {} errors; {}",
        c.peer,
        c.negotiated.export_name.as_deref().unwrap_or("-"),
        c.started.elapsed().as_secs_f64(),
        s.reads,
        s.read_bytes,
        s.writes,
        s.write_bytes,
        s.flushes,
        s.trims,
        s.zeroes,
        s.errors,
        reason
    )
}
