//! One worker thread of the server: its epoll loop, the connections it
//! serves, and its engine on each export (its own device handle, so its
//! own io_uring ring for a file), submitting through its own software
//! context of each export's multi-queue layer.
//!
//! One epoll per worker waits on its connections (edge-triggered), its
//! devices' descriptors, its engines' inboxes (where other workers hand it
//! completions of its requests that their rings ran, or wake it to
//! dispatch from a shared queue), and its own eventfd (connections handed
//! over, a stop). Worker 0 also waits on the listeners and the stop
//! descriptor: it accepts every connection and runs every handshake
//! ([`accept`](crate::accept)), then hands each connection, once it has
//! chosen its export, to the worker serving fewest connections among those
//! that serve that export (possibly itself). Each pass reads what
//! connections sent, hands requests to the worker's engines, polls them,
//! turns completions into replies, and writes what sockets take.
//!
//! Stopping: listeners close, connections in the handshake close, the
//! others stop taking requests; when a worker's requests have all been
//! answered it flushes every writable export through its own handle and
//! closes its connections; then it polls its engines until they are idle
//! and every worker is done (a shared queue may have handed its ring
//! another worker's requests), for at most [`DRAIN_LIMIT`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use elevator_io::{Completion, DataDevice};
use rustix::event::{Timespec, epoll};

use crate::conn::{Conn, Message, Moving, Phase};
use crate::hub::Hub;
use crate::pool::Buf;
use crate::server::{Listener, ServerError};
use crate::shared::Shared;
use crate::spin::Spinner;
use crate::{handshake, proto, transmit};

pub(crate) const KIND_SHIFT: u32 = 60;
pub(crate) const LISTENER: u64 = 1;
const STOP: u64 = 2;
const DEVICE: u64 = 3;
const CONN: u64 = 4;
const INBOX: u64 = 5;
const WAKE: u64 = 6;
/// How long a stop waits for requests in flight before cancelling them.
const STOP_GRACE: Duration = Duration::from_secs(30);
/// How long a stopped worker keeps polling its engines for other
/// workers' requests its ring holds.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

pub(crate) fn token(kind: u64, generation: u32, index: u32) -> u64 {
    (kind << KIND_SHIFT) | (u64::from(generation & 0x0FFF_FFFF) << 32) | u64::from(index)
}

/// One worker.
pub(crate) struct Worker {
    pub(crate) id: usize,
    pub(crate) hub: Arc<Hub>,
    pub(crate) shared: Shared,
    /// Worker 0's: the listeners.
    pub(crate) listeners: Vec<Listener>,
    pub(crate) conns: Vec<Option<Conn>>,
    gens: Vec<u32>,
    free_conns: Vec<u32>,
    pub(crate) next_ctx: u32,
    pub(crate) epoll: OwnedFd,
    completions: Vec<Completion<Buf>>,
    adopted: Vec<Moving>,
    stop_since: Option<Instant>,
    /// Connections that have just chosen their export, to place.
    placing: Vec<u32>,
    /// Until when the loop looks again rather than sleeps.
    busy_until: Option<Instant>,
    /// How long it looks again after a pass that did work.
    spin: Spinner,
    /// Worker 0's: until when the listeners are not watched, after accept
    /// ran out of file descriptors or memory (see `accept.rs`).
    pub(crate) accept_paused: Option<Instant>,
    /// When such a failure was last logged, and how many since.
    pub(crate) accept_failures: (Option<Instant>, u64),
}

impl Worker {
    /// Worker `id`, with its engines (built on this thread).
    pub(crate) fn new(
        id: usize,
        hub: Arc<Hub>,
        shared: Shared,
        listeners: Vec<Listener>,
    ) -> Result<Worker, ServerError> {
        let epoll =
            epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| ServerError::Poll(e.into()))?;
        let spin = Spinner::new(shared.cfg.poll_spin);
        Ok(Worker {
            id,
            hub,
            shared,
            listeners,
            conns: Vec::new(),
            gens: Vec::new(),
            free_conns: Vec::new(),
            next_ctx: 1,
            epoll,
            completions: Vec::new(),
            adopted: Vec::new(),
            stop_since: None,
            placing: Vec::new(),
            busy_until: None,
            spin,
            accept_paused: None,
            accept_failures: (None, 0),
        })
    }

    pub(crate) fn add(
        &self,
        fd: BorrowedFd<'_>,
        tok: u64,
        flags: epoll::EventFlags,
    ) -> Result<(), ServerError> {
        epoll::add(&self.epoll, fd, epoll::EventData::new_u64(tok), flags)
            .map_err(|e| ServerError::Poll(e.into()))
    }

    /// Serve until the server stops. Worker 0 watches `stop`.
    pub(crate) fn run(&mut self, stop: Option<BorrowedFd<'_>>) -> Result<(), ServerError> {
        for (i, l) in self.listeners.iter().enumerate() {
            self.add(l.fd(), token(LISTENER, 0, i as u32), epoll::EventFlags::IN)?;
        }
        if let Some(stop) = stop {
            self.add(stop, token(STOP, 0, 0), epoll::EventFlags::IN)?;
        }
        self.add(
            self.hub.wake_fd(self.id),
            token(WAKE, 0, 0),
            epoll::EventFlags::IN,
        )?;
        for (i, e) in self.shared.engines.iter().enumerate() {
            let Some(e) = e else { continue };
            if let Some(fd) = e.device().poll_fd() {
                self.add(fd, token(DEVICE, 0, i as u32), epoll::EventFlags::IN)?;
            }
            if let Some(fd) = e.inbox_fd() {
                self.add(fd, token(INBOX, 0, i as u32), epoll::EventFlags::IN)?;
            }
        }
        let mut events: Vec<epoll::Event> = Vec::with_capacity(256);
        loop {
            self.resume_accepting();
            let mut timeout = self.timeout();
            // Busy a moment ago: look again at once rather than sleep, for
            // a while (a client's next requests tend to follow its replies
            // closely, and a sleep and a wake-up cost more than a look), as
            // long as recent looks found work (`spin`).
            let spinning = timeout
                .as_ref()
                .is_none_or(|t| t.tv_sec > 0 || t.tv_nsec > 0)
                && self.busy_until.is_some_and(|t| Instant::now() < t);
            // Engines announce that they sleep, so that other workers write
            // their inboxes; one with something waiting keeps the loop awake.
            let mut asleep = !spinning;
            if asleep {
                for e in self.shared.engines.iter().flatten() {
                    asleep &= e.prepare_sleep();
                }
            }
            if !asleep {
                timeout = Some(Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                });
            }
            events.clear();
            let waited = epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                timeout.as_ref(),
            );
            let woke = Instant::now();
            if !spinning {
                for e in self.shared.engines.iter().flatten() {
                    e.woke();
                }
            }
            match waited {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(ServerError::Poll(e.into())),
            }
            let mut accept = false;
            for ev in &events {
                let t = ev.data.u64();
                let index = (t & 0xFFFF_FFFF) as u32;
                match t >> KIND_SHIFT {
                    // Below, once every connection's news is in: whether a
                    // connection is silent decides who makes room.
                    LISTENER => accept = true,
                    STOP => {
                        if let Some(stop) = stop {
                            let mut sink = [0u8; 64];
                            let _ = rustix::io::read(stop, &mut sink);
                        }
                        self.hub.stop();
                    }
                    WAKE => self.hub.clear_wake(self.id),
                    CONN => {
                        let generation = ((t >> 32) & 0x0FFF_FFFF) as u32;
                        if let Some(Some(c)) = self.conns.get_mut(index as usize)
                            && (c.generation & 0x0FFF_FFFF) == generation
                        {
                            mark(c, ev.flags);
                        }
                    }
                    _ => {}
                }
            }
            if self.hub.stopping() && !self.shared.stopping {
                self.begin_stop();
            }
            self.adopt();
            if accept {
                for ev in &events {
                    let t = ev.data.u64();
                    if t >> KIND_SHIFT == LISTENER {
                        self.accept((t & 0xFFFF_FFFF) as usize)?;
                    }
                }
            }
            self.expire();
            if self.service()? && !self.shared.cfg.poll_spin.is_zero() {
                let ended = Instant::now();
                let in_flight = self.shared.engines.iter().flatten().any(|e| !e.is_idle());
                self.busy_until = self.spin.worked(woke, ended, in_flight);
            }
            self.place();
            if self.shared.stopping && self.finish_stop()? {
                return self.drain_engines();
            }
        }
    }

    /// How long the loop may sleep.
    fn timeout(&self) -> Option<Timespec> {
        let busy = self
            .shared
            .engines
            .iter()
            .flatten()
            .any(|e| e.has_finished())
            || self.conns.iter().flatten().any(|c| self.can_progress(c))
            || self.starved_but_woken();
        if busy {
            return Some(Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            });
        }
        let mut wait: Option<Duration> = None;
        let mut at_most = |d: Duration| wait = Some(wait.map_or(d, |w| w.min(d)));
        for e in self.shared.engines.iter().flatten() {
            if let Some(at) = e.next_deadline() {
                at_most(Duration::from_nanos(at.saturating_sub(e.now())));
            }
        }
        if self.shared.stopping {
            at_most(Duration::from_millis(100));
        }
        if let Some(until) = self.accept_paused {
            at_most(until.saturating_duration_since(Instant::now()));
        }
        // Wake up for the first handshake or idle connection to time out.
        let limit = self.shared.cfg.handshake_timeout;
        for c in self.conns.iter().flatten() {
            if in_handshake(c) {
                at_most(limit.saturating_sub(c.started.elapsed()));
            } else if let Some(idle) = self.shared.cfg.idle_timeout {
                at_most(idle.saturating_sub(c.worker.last_io.elapsed()));
            }
        }
        wait.map(|d| Timespec {
            tv_sec: d.as_secs() as i64,
            tv_nsec: i64::from(d.subsec_nanos()),
        })
    }

    /// Before sleeping with connections whose next request waits for
    /// bytes: ask to be woken when bytes are given back (a wake-up takes
    /// the request away), then look once more, in case they were given back
    /// in between. Whether one of them may go on now.
    fn starved_but_woken(&self) -> bool {
        let mut starved = self
            .conns
            .iter()
            .flatten()
            .filter(|c| c.waiting.is_some() || c.blocked.is_some());
        if starved.clone().next().is_none() {
            return false;
        }
        self.hub.budget.wait(self.id);
        // A write waiting for its range goes on when the range is free,
        // whether or not the socket has more to read: its bytes are in.
        starved.any(|c| {
            self.can_progress(c) || (c.blocked.is_some() && !transmit::throttled(c, &self.shared))
        })
    }

    /// Whether a connection has work that needs no new event.
    fn can_progress(&self, c: &Conn) -> bool {
        ((c.socket.readable || c.worker.parked) && !transmit::throttled(c, &self.shared))
            || (c.socket.writable && c.pending_output() > 0)
    }

    /// Put connection `c` in a free slot and watch its socket. When the
    /// socket cannot be watched, the connection ends (its line logged).
    pub(crate) fn insert(&mut self, mut c: Conn) -> Result<u32, ServerError> {
        let index = match self.free_conns.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                self.gens.push(0);
                self.conns.len() as u32 - 1
            }
        };
        let generation = self.gens[index as usize];
        c.generation = generation;
        let flags = epoll::EventFlags::IN
            | epoll::EventFlags::OUT
            | epoll::EventFlags::RDHUP
            | epoll::EventFlags::ET;
        if let Err(e) = self.add(c.stream.fd(), token(CONN, generation, index), flags) {
            self.free_conns.push(index);
            c.fail(&format!("cannot be served: {e}"));
            self.retire(c);
            return Err(e);
        }
        self.conns[index as usize] = Some(c);
        Ok(index)
    }

    /// Take the connections handed over to this worker.
    fn adopt(&mut self) {
        self.hub.adopt(self.id, &mut self.adopted);
        while let Some(c) = self.adopted.pop() {
            let mut c = c.attach();
            // Whatever the socket had before it came here raised its
            // events elsewhere: look again.
            c.socket.readable = true;
            c.socket.writable = true;
            // One that cannot be watched has ended; the others go on.
            let _ = self.insert(c);
        }
    }

    /// Hand each connection that has just chosen its export to the worker
    /// serving fewest connections among those that serve that export (this
    /// one, while stopping).
    fn place(&mut self) {
        while let Some(i) = self.placing.pop() {
            let Some(c) = self.conns[i as usize].as_mut() else {
                continue;
            };
            let Phase::Transmission(e) = c.phase else {
                continue;
            };
            let hub = self.hub.clone();
            let seats = &hub.seats;
            let target = match self.shared.exports[e].home {
                _ if self.shared.stopping || c.closing.is_some() => self.id,
                Some(h) => h,
                None => (0..seats.len())
                    .min_by_key(|&w| (seats[w].load.load(Ordering::Relaxed), w))
                    .unwrap_or(self.id),
            };
            seats[target].load.fetch_add(1, Ordering::Relaxed);
            c.worker.placed = true;
            if target == self.id {
                continue;
            }
            let Some(c) = self.release(i as usize) else {
                continue;
            };
            match c.detach() {
                Ok(m) => self.hub.hand_over(target, m),
                Err(c) => {
                    // It holds request data (it cannot yet): it stays.
                    seats[target].load.fetch_sub(1, Ordering::Relaxed);
                    seats[self.id].load.fetch_add(1, Ordering::Relaxed);
                    let _ = self.insert(*c);
                }
            }
        }
    }

    /// Take connection `i` out of this worker (to hand it over): its
    /// socket is no longer watched here, its slot is free.
    fn release(&mut self, i: usize) -> Option<Conn> {
        let c = self.conns[i].take()?;
        let _ = epoll::delete(&self.epoll, c.stream.fd());
        self.gens[i] = self.gens[i].wrapping_add(1);
        self.free_conns.push(i as u32);
        Some(c)
    }

    /// Read, submit, complete, reply, write, close: one pass. Returns
    /// whether anything happened.
    fn service(&mut self) -> Result<bool, ServerError> {
        let mut any = false;
        for _ in 0..4 {
            let mut progress = false;
            for i in 0..self.conns.len() {
                if let Some(mut c) = self.conns[i].take() {
                    progress |= self.pump(&mut c, i as u32);
                    self.conns[i] = Some(c);
                }
            }
            progress |= self.complete()?;
            for c in self.conns.iter_mut().flatten() {
                if c.socket.writable && c.pending_output() > 0 {
                    c.flush(&mut self.shared.pool);
                }
            }
            if !progress {
                break;
            }
            any = true;
        }
        self.reap_closed();
        self.account();
        Ok(any)
    }

    /// Note when each connection last moved bytes.
    fn account(&mut self) {
        let mut now = None;
        for c in self.conns.iter_mut().flatten() {
            if std::mem::take(&mut c.worker.progressed) {
                c.worker.last_io = *now.get_or_insert_with(Instant::now);
            }
        }
    }

    /// Handle what connection `c` (slot `index`) sent, while it may.
    fn pump(&mut self, c: &mut Conn, index: u32) -> bool {
        let mut progress = false;
        loop {
            // A write that waits for its range goes first (even while the
            // server stops: it is in flight); until it has gone, nothing
            // more is read.
            if c.blocked.is_some() {
                if !transmit::retry_blocked(c, index, &mut self.shared) {
                    c.worker.parked = c.buffered_input();
                    return progress;
                }
                progress = true;
            }
            if c.closing.is_some()
                || transmit::throttled(c, &self.shared)
                || (matches!(c.phase, Phase::Transmission(_)) && !c.worker.placed)
            {
                // (One that has chosen its export waits to be placed.) What
                // it sent ahead waits in its buffer: no event will say so.
                c.worker.parked = c.buffered_input();
                return progress;
            }
            if let (Phase::Transmission(e), 0) = (c.phase, c.admitted)
                && let Some(r) = c.peek_request()
                && !self.admit(c, e, &r)
            {
                // What it needs does not fit now: not read from until
                // bytes drain (this worker is woken when they do).
                c.worker.parked = true;
                return progress;
            }
            match c.next_message() {
                Some(m) => {
                    progress = true;
                    let before = in_handshake(c);
                    self.handle(c, index, m);
                    if before && matches!(c.phase, Phase::Transmission(_)) {
                        // Its requests are for the worker it goes to.
                        self.placing.push(index);
                        return progress;
                    }
                }
                None => {
                    c.worker.parked = false;
                    if !(c.socket.readable && c.fill()) {
                        return progress;
                    }
                }
            }
        }
    }

    /// Reserve what request `r`, at the head of `c`'s input, needs before it
    /// is taken: whether it could be.
    fn admit(&self, c: &mut Conn, e: usize, r: &proto::Request) -> bool {
        let need = transmit::need(c, &self.shared, e, r);
        let live = self.shared.live();
        if need == 0 || c.admit(need, live) {
            return true;
        }
        // Ask to be woken when bytes are given back, then look once more:
        // bytes given back in between would otherwise wake nobody.
        self.hub.budget.wait(self.id);
        if c.admit(need, live) {
            return true;
        }
        c.waiting = Some(need);
        false
    }

    fn handle(&mut self, c: &mut Conn, index: u32, m: Message) {
        match m {
            Message::ClientFlags(f) => match proto::client_flags(f) {
                Ok(no_zeroes) => {
                    c.negotiated.no_zeroes = no_zeroes;
                    c.phase = Phase::Options;
                }
                Err(e) => c.fail(&format!("handshake: {e}")),
            },
            Message::Option(h, data) => handshake::option(c, &self.shared, h, &data),
            Message::OptionTooBig(h) => handshake::too_big(c, h),
            Message::Request(r) => transmit::request(c, index, &mut self.shared, r),
            Message::Payload(r, buf, reserved) => {
                transmit::payload(c, index, &mut self.shared, r, buf, reserved)
            }
            Message::Broken(e) => c.fail(&format!("protocol error: {e}")),
        }
    }

    /// Poll every engine and answer what completed.
    fn complete(&mut self) -> Result<bool, ServerError> {
        let mut any = false;
        for e in 0..self.shared.engines.len() {
            let Some(engine) = self.shared.engines[e].as_mut() else {
                continue;
            };
            let mut done = std::mem::take(&mut self.completions);
            let polled = engine.poll(Some(Duration::ZERO), &mut done);
            if let Err(source) = polled {
                self.completions = done;
                return Err(ServerError::Engine {
                    export: self.shared.exports[e].name.clone(),
                    source: Box::new(source),
                });
            }
            any |= !done.is_empty();
            for comp in done.drain(..) {
                transmit::completed(&mut self.conns, &mut self.shared, comp);
            }
            self.completions = done;
        }
        Ok(any)
    }

    /// Close connections that are finished.
    fn reap_closed(&mut self) {
        // A write whose payload will never arrive (the client is gone) is
        // no longer in flight.
        for c in self.conns.iter_mut().flatten() {
            if c.socket.eof
                && let Some(b) = c.take_payload()
            {
                self.shared.pool.put(b);
                c.inflight -= 1;
            }
            if c.socket.eof
                && let Some(b) = c.blocked.take()
            {
                b.abandon(c, &mut self.shared);
            }
        }
        for i in 0..self.conns.len() {
            let done = self.conns[i].as_ref().is_some_and(|c| {
                let quiet = c.inflight == 0 && !c.in_payload();
                let flushed = c.pending_output() == 0;
                quiet
                    && (c.socket.eof
                        || (c.closing.is_some() && (flushed || !c.socket.writable))
                        || (c.disc && flushed))
            });
            if done {
                self.close(i);
            }
        }
    }

    /// Close the connection in slot `i` now, log its line and free the slot.
    /// It must have nothing in flight.
    pub(crate) fn close(&mut self, i: usize) {
        let Some(c) = self.release(i) else {
            return;
        };
        self.retire(c);
    }

    /// The end of connection `c`, out of its slot.
    fn retire(&mut self, mut c: Conn) {
        c.drop_output(&mut self.shared.pool);
        // Nothing of it is in flight: whatever it still holds goes back.
        c.release_all();
        if let Phase::Transmission(e) = c.phase {
            if let Some(engine) = self.shared.engines[e].as_mut() {
                engine.context_gone(c.ctx);
            }
            if c.worker.placed {
                self.hub.seats[self.id].load.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let reason = c.closing.clone().unwrap_or_else(|| {
            if c.disc {
                "client disconnected (DISC)".into()
            } else {
                "client closed the connection".into()
            }
        });
        self.hub.log(&transmit::summary(&c, &reason));
        self.hub.live.fetch_sub(1, Ordering::Relaxed);
    }

    /// Fail connections in the handshake too long, and idle ones.
    fn expire(&mut self) {
        let limit = self.shared.cfg.handshake_timeout;
        let idle = self.shared.cfg.idle_timeout;
        for c in self.conns.iter_mut().flatten() {
            if in_handshake(c) {
                if c.started.elapsed() >= limit {
                    c.fail(&format!(
                        "handshake timed out after {} s",
                        limit.as_secs_f64()
                    ));
                }
            } else if let Some(idle) = idle
                && c.closing.is_none()
                && (c.inflight == 0 || c.pending_output() > 0)
                && c.worker.last_io.elapsed() >= idle
            {
                let what = if c.pending_output() > 0 {
                    "took none of its replies"
                } else {
                    "sent nothing"
                };
                c.fail(&format!(
                    "idle: {what} for {} s (idle timeout)",
                    idle.as_secs_f64()
                ));
            }
        }
    }

    fn begin_stop(&mut self) {
        self.shared.stopping = true;
        self.stop_since = Some(Instant::now());
        for l in self.listeners.drain(..) {
            let _ = epoll::delete(&self.epoll, l.fd());
            l.remove();
        }
        for c in self.conns.iter_mut().flatten() {
            if !matches!(c.phase, Phase::Transmission(_)) {
                c.fail("server shutting down");
            } else if c.in_payload() {
                // A write still arriving never reached the device: it ends
                // with the connection (the client learns nothing of it, as
                // when the connection drops).
                c.fail("server shutting down during a write's payload");
            }
        }
    }

    /// Once nothing of this worker's is in flight: flush every writable
    /// export through its own handle, close every connection, and report
    /// whether the worker is done.
    fn finish_stop(&mut self) -> Result<bool, ServerError> {
        let busy = self.conns.iter().flatten().any(|c| {
            c.inflight > 0 || (c.pending_output() > 0 && c.socket.writable && !c.socket.eof)
        });
        if busy {
            if self.stop_since.is_some_and(|t| t.elapsed() > STOP_GRACE) {
                for e in self.shared.engines.iter_mut().flatten() {
                    e.cancel();
                }
            }
            return Ok(false);
        }
        for (i, e) in self.shared.engines.iter_mut().enumerate() {
            let Some(e) = e else { continue };
            if self.shared.exports[i].read_only {
                continue;
            }
            let mut out = Vec::new();
            let flushed = e.submit(elevator_io::DioRequest::flush(u64::MAX)).is_ok();
            if flushed {
                let engine_err = |source| ServerError::Engine {
                    export: self.shared.exports[i].name.clone(),
                    source: Box::new(source),
                };
                let give_up = Instant::now() + STOP_GRACE;
                while !out
                    .iter()
                    .any(|c: &Completion<Buf>| c.user_data == u64::MAX)
                    && Instant::now() < give_up
                {
                    e.poll(Some(Duration::from_millis(10)), &mut out)
                        .map_err(engine_err)?;
                }
                for c in out.drain(..) {
                    self.shared.pool.put_list(c.bufs);
                }
            }
        }
        for c in self.conns.iter_mut().flatten() {
            c.closing.get_or_insert_with(|| "server shut down".into());
            c.socket.eof = true;
        }
        self.reap_closed();
        // Connections handed over after the stop began are closed too.
        self.hub.adopt(self.id, &mut self.adopted);
        while let Some(c) = self.adopted.pop() {
            let mut c = c.attach();
            c.fail("server shut down");
            self.retire(c);
        }
        Ok(true)
    }

    /// After this worker is done: poll its engines until they are idle and
    /// every worker is done, so requests of other workers that its ring
    /// holds complete.
    fn drain_engines(&mut self) -> Result<(), ServerError> {
        self.hub.done.fetch_add(1, Ordering::AcqRel);
        let threads = self.hub.seats.len();
        let deadline = Instant::now() + DRAIN_LIMIT;
        let mut out = Vec::new();
        loop {
            let mut idle = true;
            for (i, e) in self.shared.engines.iter_mut().enumerate() {
                let Some(e) = e else { continue };
                e.poll(Some(Duration::from_millis(1)), &mut out)
                    .map_err(|source| ServerError::Engine {
                        export: self.shared.exports[i].name.clone(),
                        source: Box::new(source),
                    })?;
                idle &= e.is_idle();
            }
            for c in out.drain(..) {
                self.shared.pool.put_list(c.bufs);
            }
            if (idle && self.hub.done.load(Ordering::Acquire) >= threads)
                || Instant::now() >= deadline
            {
                return Ok(());
            }
            if idle {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// Note what an epoll event says of connection `c`'s socket.
fn mark(c: &mut Conn, f: epoll::EventFlags) {
    use epoll::EventFlags as F;
    if f.intersects(F::HUP | F::RDHUP | F::ERR) {
        c.socket.hangup = true;
    }
    if f.intersects(F::IN | F::HUP | F::RDHUP | F::ERR) {
        c.socket.readable = true;
    }
    if f.intersects(F::OUT | F::HUP | F::ERR) {
        c.socket.writable = true;
    }
}

/// Whether `c` is still in the handshake (and not already closing).
pub(crate) fn in_handshake(c: &Conn) -> bool {
    c.closing.is_none() && !matches!(c.phase, Phase::Transmission(_))
}

impl Listener {
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Listener::Tcp(t) => t.as_fd(),
            Listener::Unix(u, _) => u.as_fd(),
        }
    }

    /// Close it; a Unix socket's file goes too, if it is still ours
    /// (dropping its [`UnixSocketFile`](crate::unix_socket::UnixSocketFile)
    /// removes it).
    fn remove(self) {
        drop(self);
    }
}
