//! The trace tap (`--trace-out`): the queue's trace events, drained after
//! each call into it, turned into blktrace [`Record`]s and written to a
//! [`TraceSink`].
//!
//! A [`TraceTap`] is what an engine (elevator-sim's simulator, each thread
//! of elevator-io's real-time engine) holds while it traces. It knows what the
//! core does not: the device number ([`TRACE_DEV`] unless told otherwise),
//! which "CPU" (file) an event belongs to, the submitters' names, and the
//! clock's origin. Events are copied into a buffer of fixed capacity
//! (allocated once) and written to the sink when it fills or when the
//! engine says, so that a tap shared out to threads takes the sink's lock
//! once per buffer, not per event, and hands the sink whole slices of
//! records ([`TraceSink::record_batch`]: one dynamic call per batch). A
//! submitter's name (blktrace's process notify record) is written before its
//! first event.
//!
//! A failed write stops the tracing (the queue then records nothing more)
//! and keeps the error for [`TraceTap::finish`]; events the queue could not
//! hold are counted ([`TraceSummary::dropped`]), never lost silently.

use crate::{DevT, Record, TraceSink, dev_t};
use elevator_core::{IoContext, Nanos, Queue, TraceAction, TraceEvent};

/// The block major of elevator's traces: 240, the first of Linux's majors
/// for local or experimental use (`devices.txt`), so that no real disk is
/// implied. (Not 253 or 254, which btt takes for device-mapper remappers
/// and reports apart, with no D2C.)
pub const TRACE_MAJOR: u32 = 240;

/// The device number traces of simulated devices carry: `240,0` (blkparse
/// prints `240,0`).
pub const TRACE_DEV: DevT = TRACE_MAJOR << 20;

/// Events the queue holds between drains before it drops any.
pub const QUEUE_TRACE_LIMIT: usize = 1 << 16;

/// Items a tap buffers before it writes them to its sink.
pub const TAP_BUFFER: usize = 4096;

/// Which file (blktrace's CPU) an event goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuRule {
    /// The submitter's: context `c` is CPU `c - 1` (elevator's job clones
    /// are contexts 1, 2, ...; a completion goes to its submitter's file).
    BySubmitter,
    /// This one, whoever submitted (a thread's own file).
    Fixed(u32),
}

/// What a trace held, for the summary line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceSummary {
    /// Events written.
    pub events: u64,
    /// Events the queue could not hold (not written).
    pub dropped: u64,
    /// Events written, by [`TraceAction`] (its `as usize`).
    pub by_action: [u64; TraceAction::ALL.len()],
    /// CPUs (files) written to, a bit each.
    cpus: Vec<u64>,
}

impl TraceSummary {
    /// Files written (distinct CPUs).
    pub fn files(&self) -> u32 {
        self.cpus.iter().map(|w| w.count_ones()).sum()
    }

    /// Add `other`'s figures (another thread's, another queue's).
    pub fn merge(&mut self, other: &TraceSummary) {
        self.events += other.events;
        self.dropped += other.dropped;
        for (a, b) in self.by_action.iter_mut().zip(other.by_action) {
            *a += b;
        }
        if self.cpus.len() < other.cpus.len() {
            self.cpus.resize(other.cpus.len(), 0);
        }
        for (a, b) in self.cpus.iter_mut().zip(&other.cpus) {
            *a |= b;
        }
    }

    /// Events by blkparse's letter (a request merge counts as `M`), in
    /// blkparse's usual order, letters with none left out.
    pub fn by_letter(&self) -> Vec<(char, u64)> {
        let mut out: Vec<(char, u64)> = Vec::new();
        for action in TraceAction::ALL {
            let n = self.by_action[action as usize];
            let letter = action.letter();
            match out.iter_mut().find(|(l, _)| *l == letter) {
                Some((_, m)) => *m += n,
                None => out.push((letter, n)),
            }
        }
        out.retain(|&(_, n)| n > 0);
        out
    }

    #[inline]
    fn saw_cpu(&mut self, cpu: u32) {
        let word = (cpu / 64) as usize;
        if self.cpus.len() <= word {
            self.cpus.resize(word + 1, 0);
        }
        self.cpus[word] |= 1 << (cpu % 64);
    }
}

impl std::fmt::Display for TraceSummary {
    /// `N events in K files, D dropped (Q 10, G 8, ...)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} events in {} files, {} dropped",
            self.events,
            self.files(),
            self.dropped
        )?;
        let letters = self.by_letter();
        if !letters.is_empty() {
            f.write_str(" (")?;
            for (i, (l, n)) in letters.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{l} {n}")?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// Where a tap writes: a sink of its own, or one shared with other
/// threads' taps (taken once per buffer written).
pub trait SinkAccess {
    /// Run `f` on the sink.
    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn TraceSink));
}

impl SinkAccess for dyn TraceSink + '_ {
    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn TraceSink)) {
        f(self);
    }
}

/// A sink shared by the threads of a run.
pub type SharedSink = std::sync::Arc<std::sync::Mutex<Box<dyn TraceSink + Send>>>;

impl SinkAccess for SharedSink {
    fn with_sink(&mut self, f: &mut dyn FnMut(&mut dyn TraceSink)) {
        let mut guard = self.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut **guard);
    }
}

/// A queue's trace on its way to a sink (see the module's documentation).
#[derive(Debug)]
pub struct TraceTap {
    dev: DevT,
    rule: CpuRule,
    origin: Nanos,
    /// Submitters' names, by context (index `c` names context `c`).
    names: Vec<String>,
    /// What an unnamed submitter `c` is called: this, then `c`.
    unnamed: &'static str,
    /// Contexts whose name has been written, a bit each.
    named: Vec<u64>,
    /// Events buffered, in order.
    records: Vec<Record>,
    /// Submitters first seen: (where in `records` their name goes, context,
    /// time).
    firsts: Vec<(usize, u32, Nanos)>,
    /// The CPU of the previous event (already in the summary).
    last_cpu: Option<u32>,
    summary: TraceSummary,
    error: Option<std::io::Error>,
}

impl TraceTap {
    /// A tap for events on device `dev`, filed by `rule`; `origin` is
    /// subtracted from every event's time (the run's start).
    pub fn new(dev: DevT, rule: CpuRule, origin: Nanos) -> TraceTap {
        TraceTap {
            dev,
            rule,
            origin,
            names: Vec::new(),
            unnamed: "ctx",
            named: Vec::new(),
            records: Vec::with_capacity(TAP_BUFFER),
            firsts: Vec::new(),
            last_cpu: None,
            summary: TraceSummary::default(),
            error: None,
        }
    }

    /// Call a submitter that was not named `PREFIX<id>` (`ctx7` unless
    /// told otherwise; `nbd7` for NBD connections).
    pub fn unnamed(mut self, prefix: &'static str) -> TraceTap {
        self.unnamed = prefix;
        self
    }

    /// Name submitter `ctx` (blktrace's process name; cut to 15 bytes, as
    /// the kernel's `comm` is, at a character boundary).
    pub fn name(&mut self, ctx: IoContext, name: &str) {
        let i = ctx.0 as usize;
        if self.names.len() <= i {
            self.names.resize(i + 1, String::new());
        }
        let mut end = name.len().min(15);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        self.names[i] = name[..end].to_string();
    }

    /// Turn tracing on in `queue`.
    pub fn enable(queue: &mut Queue) {
        queue.set_tracing(true, QUEUE_TRACE_LIMIT);
    }

    /// Turn tracing on in `queue`, with room for what `depth` I/Os in
    /// flight may record between two drains (a few events each), and at
    /// least [`QUEUE_TRACE_LIMIT`].
    pub fn enable_for_depth(queue: &mut Queue, depth: u32) {
        let room = (depth as usize).saturating_mul(16).max(QUEUE_TRACE_LIMIT);
        queue.set_tracing(true, room);
    }

    /// Take what `queue` recorded since the last drain into the buffer,
    /// writing the buffer out through `out` whenever it fills. After a
    /// failed write, the queue's tracing is turned off.
    ///
    /// Never inlined: an engine's loop that calls it when tracing keeps its
    /// untraced code as it was.
    #[inline(never)]
    pub fn drain<A: SinkAccess + ?Sized>(&mut self, queue: &mut Queue, out: &mut A) {
        if !queue.is_tracing() {
            return;
        }
        // Read in place (the events are `Copy`): dropping the drain empties
        // the queue's buffer.
        let events = queue.drain_trace();
        for event in events.as_slice() {
            if self.records.len() >= TAP_BUFFER {
                self.flush(out);
            }
            self.push(event);
        }
        drop(events);
        if self.error.is_some() {
            queue.set_tracing(false, QUEUE_TRACE_LIMIT);
        }
    }

    /// Buffer one event (after its submitter's name, the first time).
    #[inline]
    fn push(&mut self, event: &TraceEvent) {
        let mut event = *event;
        event.time = event.time.saturating_sub(self.origin);
        let pid = event.ctx.0;
        let (word, bit) = ((pid / 64) as usize, 1u64 << (pid % 64));
        if self.named.get(word).is_none_or(|w| w & bit == 0) {
            self.first_seen(pid, event.time);
        }
        let cpu = match self.rule {
            CpuRule::BySubmitter => pid.saturating_sub(1),
            CpuRule::Fixed(c) => c,
        };
        self.summary.events += 1;
        self.summary.by_action[event.action as usize] += 1;
        if self.last_cpu != Some(cpu) {
            self.summary.saw_cpu(cpu);
            self.last_cpu = Some(cpu);
        }
        self.records.push(Record::new(event, cpu, self.dev));
    }

    /// Submitter `pid` appears for the first time: its name goes before the
    /// next record.
    #[cold]
    fn first_seen(&mut self, pid: u32, time: Nanos) {
        let word = (pid / 64) as usize;
        if self.named.len() <= word {
            self.named.resize(word + 1, 0);
        }
        self.named[word] |= 1 << (pid % 64);
        self.firsts.push((self.records.len(), pid, time));
    }

    /// Write the buffered events and names, in order, out through `out` (a
    /// batch of records between names), and empty the buffer.
    fn write<A: SinkAccess + ?Sized>(&mut self, out: &mut A) {
        let (names, unnamed) = (self.names.as_slice(), self.unnamed);
        let (records, firsts) = (&self.records, &self.firsts);
        if self.error.is_none() && !records.is_empty() {
            let error = &mut self.error;
            out.with_sink(&mut |sink: &mut dyn TraceSink| {
                let mut from = 0;
                let mut written = Ok(());
                for &(at, pid, time) in firsts {
                    written = sink.record_batch(&records[from..at]).and_then(|()| {
                        match names.get(pid as usize).filter(|n| !n.is_empty()) {
                            Some(name) => sink.process(pid, name, time),
                            None => sink.process(pid, &format!("{unnamed}{pid}"), time),
                        }
                    });
                    from = at;
                    if written.is_err() {
                        break;
                    }
                }
                if let Err(e) = written.and_then(|()| sink.record_batch(&records[from..])) {
                    *error = Some(e);
                }
            });
        }
        self.records.clear();
        self.firsts.clear();
    }

    /// Write what the buffer holds out through `out`.
    pub fn flush<A: SinkAccess + ?Sized>(&mut self, out: &mut A) {
        self.write(out);
    }

    /// Write everything buffered out through `out` and say what the trace
    /// held; `dropped` is the queue's count of events it could not hold (on
    /// a shared queue, count it once, in one tap). Drain the queue first.
    /// The sink is not finished here: a sink shared by several taps is
    /// finished by its owner.
    pub fn finish<A: SinkAccess + ?Sized>(
        mut self,
        out: &mut A,
        dropped: u64,
    ) -> Result<TraceSummary, std::io::Error> {
        self.flush(out);
        self.summary.dropped = dropped;
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.summary),
        }
    }

    /// The summary so far.
    pub fn summary(&self) -> &TraceSummary {
        &self.summary
    }
}

/// The device number for export or device `index` of a run:
/// `240,index`.
pub fn trace_dev(index: u32) -> DevT {
    dev_t(TRACE_MAJOR, index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Item, MemorySink};
    use elevator_core::{Bio, DeviceShape, Limits};

    #[test]
    fn files_are_counted_past_64_cpus() {
        let mut a = TraceSummary::default();
        a.saw_cpu(3);
        a.saw_cpu(100);
        a.saw_cpu(100);
        assert_eq!(a.files(), 2);
        let mut b = TraceSummary::default();
        b.saw_cpu(100);
        b.saw_cpu(5);
        b.saw_cpu(1000);
        a.merge(&b);
        assert_eq!(a.files(), 4);
    }

    #[test]
    fn a_tapped_queue_writes_names_before_events() {
        let shape = DeviceShape {
            limits: Limits::default(),
            queue_depth: 4,
            rotational: false,
        };
        let mut q = Queue::for_device(shape, "none", &[]).expect("queue");
        TraceTap::enable(&mut q);
        let mut tap = TraceTap::new(TRACE_DEV, CpuRule::BySubmitter, 0);
        tap.name(IoContext(2), "a-very-long-job-name");
        let mut sink = MemorySink::default();
        let bio = Bio::read(0, 4096, 7).with_ctx(IoContext(2));
        q.submit(&bio, 10).expect("submit");
        let summary = {
            let out: &mut dyn TraceSink = &mut sink;
            tap.drain(&mut q, out);
            tap.finish(out, 0).expect("finish")
        };
        assert!(summary.events >= 2, "{summary}");
        match &sink.items[0] {
            Item::Process { pid, name, time } => {
                assert_eq!((*pid, name.as_str(), *time), (2, "a-very-long-job", 10));
            }
            other => panic!("expected a process name first, got {other:?}"),
        }
        let Item::Record(r) = sink.items[1] else {
            panic!("expected a record");
        };
        assert_eq!(
            (r.cpu, r.dev, r.event.action),
            (1, TRACE_DEV, TraceAction::Queue)
        );
        assert_eq!(summary.files(), 1);
    }
}
