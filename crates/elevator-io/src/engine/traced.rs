//! The engine's way to its queue, with the trace tap of `--trace-out`.
//!
//! Every call the engine makes into the queue goes through
//! [`Tapped::with`]; when the engine traces, the queue's events are drained
//! into this engine's [`TraceTap`] before the queue (and its lock, when
//! shared) is let go, so that the events this thread caused go to this
//! thread's file and no other thread's drain takes them. When the engine
//! does not trace, the cost is one branch per hold.

use elevator_trace::tap::{SharedSink, TraceSummary, TraceTap};

use super::access::{QueueAccess, QueueState};

/// A tap and where it writes.
pub(crate) struct EngineTap {
    tap: TraceTap,
    out: SharedSink,
}

/// A queue access with an optional trace tap.
pub(crate) struct Tapped<Q> {
    pub(crate) inner: Q,
    tap: Option<Box<EngineTap>>,
}

impl<Q: QueueAccess> Tapped<Q> {
    /// `inner`, not traced.
    pub(crate) fn new(inner: Q) -> Tapped<Q> {
        Tapped { inner, tap: None }
    }

    /// Run `f` on the queue state (see [`QueueAccess::with`]); with a tap,
    /// drain the queue's events into it before letting go.
    #[inline]
    pub(crate) fn with<R>(&mut self, f: impl FnOnce(&mut QueueState) -> R) -> R {
        match &mut self.tap {
            None => self.inner.with(f),
            Some(t) => self.inner.with(|s| {
                let r = f(s);
                t.tap.drain(&mut s.queue, &mut t.out);
                r
            }),
        }
    }

    /// See [`QueueAccess::shared`].
    #[inline]
    pub(crate) fn shared(&self) -> bool {
        self.inner.shared()
    }

    /// See [`QueueAccess::per_request`].
    #[inline]
    pub(crate) fn per_request(&self) -> bool {
        self.inner.per_request()
    }

    /// Trace from now on into `out` through `tap`; turns the queue's
    /// tracing on.
    pub(crate) fn start(&mut self, tap: TraceTap, out: SharedSink) {
        self.inner.with(|s| TraceTap::enable(&mut s.queue));
        self.tap = Some(Box::new(EngineTap { tap, out }));
    }

    /// Stop tracing: drain and write what is left; the summary, with the
    /// queue's dropped events when the queue is this engine's alone (a
    /// shared queue's are counted by its owner). `None` if not tracing.
    pub(crate) fn stop(&mut self) -> Option<Result<TraceSummary, std::io::Error>> {
        let mut t = self.tap.take()?;
        let shared = self.inner.shared();
        let dropped = self.inner.with(|s| {
            t.tap.drain(&mut s.queue, &mut t.out);
            if shared {
                0
            } else {
                // Nobody drains it from now on.
                s.queue.set_tracing(false, 0);
                s.queue.trace_dropped()
            }
        });
        let EngineTap { tap, mut out } = *t;
        Some(tap.finish(&mut out, dropped))
    }
}
