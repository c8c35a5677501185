//! Trace events: what happens to bios and requests in the queue, as
//! blktrace names it (Q, X, M, F, G, I, D, C, P, U, R).
//!
//! The queue records events only while tracing is on
//! ([`crate::Queue::set_tracing`]); when it is off each hook costs one
//! predictable branch. Events collect in a bounded buffer ([`TraceLog`]) that
//! the engine drains after each call into the queue
//! ([`crate::Queue::drain_trace`]), adding what the core does not know (the
//! CPU or thread, the wall or virtual clock's origin) and writing them in
//! whatever format it was asked for. Events past the buffer's limit are
//! counted as dropped, as the kernel's relay buffers count theirs.
//!
//! Where each event is recorded (the kernel's tracepoint in brackets):
//! - `Queue` (`block_bio_queue`): a bio the queue accepted, before anything
//!   else happens to it. A bio refused for lack of a tag is not recorded
//!   until it is accepted.
//! - `Split` (`block_split`): a bio cut to fit the limits; one event per
//!   extra piece: the piece before the cut (its sector and size, as the
//!   kernel records the bio it split off), with `extra` the sector where the
//!   next piece starts.
//! - `BackMerge` / `FrontMerge` (`block_bio_backmerge` / `..._frontmerge`): a
//!   bio joined a request (on the plug or in the scheduler).
//! - `RqMerge` (`block_rq_merge`): a request merged into another when
//!   inserted or after a bio merge; blktrace writes it as a back merge.
//! - `GetRq` (`block_getrq`): a bio got a request of its own.
//! - `Insert` (`block_rq_insert`): a request went to the scheduler or the
//!   queue's own dispatch list (flushes go straight to the device and have
//!   none).
//! - `Issue` (`block_rq_issue`): a request went to the device.
//! - `Complete` (`block_rq_complete`): the device ended a request; `error`
//!   is the errno (0 on success).
//! - `Requeue` (`block_rq_requeue`): the device gave a request back.
//! - `Plug` (`block_plug`): the first request went onto an empty plug.
//! - `Unplug` (`block_unplug`): the plug was flushed; `extra` is how many
//!   requests it held.

use crate::bio::{BioFlags, IoContext, Nanos, Op, Sector};

/// What happened, by blktrace's action letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum TraceAction {
    /// Q: a bio was queued.
    Queue = 0,
    /// X: a bio was split.
    Split,
    /// M: a bio merged onto the back of a request.
    BackMerge,
    /// F: a bio merged onto the front of a request.
    FrontMerge,
    /// A request merged into another (written as M in blktrace's format).
    RqMerge,
    /// G: a bio got a request.
    GetRq,
    /// I: a request was inserted.
    Insert,
    /// D: a request was issued to the device.
    Issue,
    /// C: a request completed.
    Complete,
    /// R: a request was requeued.
    Requeue,
    /// P: the plug took its first request.
    Plug,
    /// U: the plug was flushed.
    Unplug,
}

impl TraceAction {
    /// Every action, in declaration order.
    pub const ALL: [TraceAction; 12] = [
        TraceAction::Queue,
        TraceAction::Split,
        TraceAction::BackMerge,
        TraceAction::FrontMerge,
        TraceAction::RqMerge,
        TraceAction::GetRq,
        TraceAction::Insert,
        TraceAction::Issue,
        TraceAction::Complete,
        TraceAction::Requeue,
        TraceAction::Plug,
        TraceAction::Unplug,
    ];

    /// blkparse's letter for the action (a request merge prints as `M`).
    pub fn letter(self) -> char {
        match self {
            TraceAction::Queue => 'Q',
            TraceAction::Split => 'X',
            TraceAction::BackMerge | TraceAction::RqMerge => 'M',
            TraceAction::FrontMerge => 'F',
            TraceAction::GetRq => 'G',
            TraceAction::Insert => 'I',
            TraceAction::Issue => 'D',
            TraceAction::Complete => 'C',
            TraceAction::Requeue => 'R',
            TraceAction::Plug => 'P',
            TraceAction::Unplug => 'U',
        }
    }

    /// The kernel's tracepoint for the action (tracefs' event name).
    pub fn tracepoint(self) -> &'static str {
        match self {
            TraceAction::Queue => "block_bio_queue",
            TraceAction::Split => "block_split",
            TraceAction::BackMerge => "block_bio_backmerge",
            TraceAction::FrontMerge => "block_bio_frontmerge",
            TraceAction::RqMerge => "block_rq_merge",
            TraceAction::GetRq => "block_getrq",
            TraceAction::Insert => "block_rq_insert",
            TraceAction::Issue => "block_rq_issue",
            TraceAction::Complete => "block_rq_complete",
            TraceAction::Requeue => "block_rq_requeue",
            TraceAction::Plug => "block_plug",
            TraceAction::Unplug => "block_unplug",
        }
    }

    /// Whether the event is about a request (I, D, C, R, request merge)
    /// rather than a bio or the plug.
    pub fn is_request(self) -> bool {
        matches!(
            self,
            TraceAction::Insert
                | TraceAction::Issue
                | TraceAction::Complete
                | TraceAction::Requeue
                | TraceAction::RqMerge
        )
    }
}

/// One trace event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// When, in the engine's nanoseconds.
    pub time: Nanos,
    /// What happened.
    pub action: TraceAction,
    /// The bio's or request's operation (a write for P and U).
    pub op: Op,
    /// Its flags.
    pub flags: BioFlags,
    /// First sector (0 for P and U and for flushes).
    pub sector: Sector,
    /// Bytes (0 for P, U and flushes).
    pub bytes: u32,
    /// The submitter (Linux: the process id).
    pub ctx: IoContext,
    /// Errno of a completion, 0 otherwise.
    pub error: i32,
    /// Unplug: requests flushed. Split: the sector the next piece starts at.
    pub extra: u64,
}

impl TraceEvent {
    /// A plug or unplug event.
    pub fn plug(action: TraceAction, time: Nanos, ctx: IoContext, extra: u64) -> TraceEvent {
        TraceEvent {
            time,
            action,
            op: Op::Write,
            flags: BioFlags::NONE,
            sector: 0,
            bytes: 0,
            ctx,
            error: 0,
            extra,
        }
    }
}

/// A bounded buffer of trace events, off until enabled.
#[derive(Clone, Debug, Default)]
pub struct TraceLog {
    on: bool,
    /// The time of the queue call in progress, for events recorded deep in
    /// it (merges) and for calls that are not given a time (requeue).
    now: Nanos,
    limit: usize,
    events: Vec<TraceEvent>,
    dropped: u64,
}

impl TraceLog {
    /// Events held before further ones are dropped, unless set otherwise.
    pub const DEFAULT_LIMIT: usize = 1 << 16;

    /// Turn recording on (with room for `limit` undrained events) or off.
    pub fn set(&mut self, on: bool, limit: usize) {
        self.on = on;
        self.limit = limit.max(16);
        if on {
            self.events.reserve(self.limit.min(4096));
        }
    }

    /// Whether events are recorded.
    #[inline]
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// The time of the queue call in progress.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Set the time of the queue call in progress.
    #[inline]
    pub fn set_now(&mut self, now: Nanos) {
        self.now = now;
    }

    /// Record `event` (the caller checked [`TraceLog::is_on`]).
    #[inline]
    pub fn push(&mut self, event: TraceEvent) {
        if self.events.len() < self.limit {
            self.events.push(event);
        } else {
            self.dropped += 1;
        }
    }

    /// Record `event` ahead of what the call in progress will record (a
    /// bio's Q, before the G, M or X that its acceptance produces); where
    /// it went, for [`TraceLog::take_back`], or `None` if it was dropped.
    #[inline]
    pub fn push_first(&mut self, event: TraceEvent) -> Option<usize> {
        if self.events.len() < self.limit {
            self.events.push(event);
            Some(self.events.len() - 1)
        } else {
            self.dropped += 1;
            None
        }
    }

    /// Undo [`TraceLog::push_first`] (the call it was for failed, so the
    /// event did not happen); events recorded since stay.
    #[cold]
    pub fn take_back(&mut self, at: Option<usize>) {
        match at {
            Some(i) if i < self.events.len() => {
                self.events.remove(i);
            }
            Some(_) => {}
            None => self.dropped = self.dropped.saturating_sub(1),
        }
    }

    /// Take every recorded event, oldest first.
    pub fn drain(&mut self) -> std::vec::Drain<'_, TraceEvent> {
        self.events.drain(..)
    }

    /// Events not recorded because the buffer was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(action: TraceAction) -> TraceEvent {
        TraceEvent::plug(action, 5, IoContext(1), 0)
    }

    #[test]
    fn an_event_pushed_first_stays_first_or_is_taken_back() {
        let mut log = TraceLog::default();
        log.set(true, 16);
        let q = log.push_first(ev(TraceAction::Queue));
        log.push(ev(TraceAction::Plug));
        let order: Vec<TraceAction> = log.drain().map(|e| e.action).collect();
        assert_eq!(order, [TraceAction::Queue, TraceAction::Plug]);
        assert_eq!(q, Some(0));
        // A refused call: its Q goes, what was recorded meanwhile stays.
        log.push(ev(TraceAction::Issue));
        let q = log.push_first(ev(TraceAction::Queue));
        log.push(ev(TraceAction::Unplug));
        log.take_back(q);
        let order: Vec<TraceAction> = log.drain().map(|e| e.action).collect();
        assert_eq!(order, [TraceAction::Issue, TraceAction::Unplug]);
        // Full: the Q is counted as dropped, and uncounted when taken back.
        for _ in 0..16 {
            log.push(ev(TraceAction::Issue));
        }
        let q = log.push_first(ev(TraceAction::Queue));
        assert_eq!((q, log.dropped()), (None, 1));
        log.take_back(q);
        assert_eq!(log.dropped(), 0);
    }
}
