//! Replay planning: a stream of trace [`Item`]s becomes the bios to submit,
//! in order, with the plugs the recording's submitters held. Pure: the
//! drivers (elevator-sim's and elevator-io's) run the plan, with what they
//! share from here: when a step is due ([`Step::due`]), the recorded bios
//! in flight and their flush parts ([`InFlight`], [`FlushModel`]), how a
//! flush sequence shows in the trace ([`SequenceLabels`]), and where
//! the queue's events go and what a replay reports ([`EventOut`],
//! [`ReplayResult`], [`ReplayError`]).
//!
//! - **Which events** ([`Events`]): the bios (`Q`, the default: each queued
//!   bio, before the recording's queue split or merged it) or the issued
//!   requests (`D`: what the recording's device got, merges done).
//!   Flushes, FUA, discards and write-zeroes are replayed as recorded, each
//!   with its process id as the I/O context.
//! - **Which device**: the one named, or the most common device among the
//!   first [`DEVICE_SAMPLE`] bio events. Items are held while the device is
//!   being chosen, at most [`MAX_SAMPLE_ITEMS`] of them: past that the
//!   choice is made from the bios seen so far, or, with none seen yet, what
//!   was held (plugs, names, other events: nothing to replay) is planned
//!   at once and the choice waits for the first bio.
//! - **Plugs**: the kernel plugs per task (`blk_start_plug`), and that is
//!   where most of its merges come from (jbd2's and writeback's batches merge
//!   on the plug). tracefs records `block_plug` when the first request goes
//!   onto an empty plug, that is just after the `Q`/`G` of that task's first
//!   bio, and `block_unplug` when it is flushed. So a task's `Q` that is
//!   followed by that task's `P` (before its next `Q` or `U`) opens a plug,
//!   and the plug closes at the task's `U`: the plan brackets those bios
//!   with [`Step::Plug`] and [`Step::Unplug`]. Plugs and unplugs of tasks
//!   with no bio on the device (other devices' plugs: tracefs gives plugs no
//!   device) plan nothing. In `D` mode there are no plugs: the requests are
//!   already merged.
//! - **One plug at a time**: elevator's queue has one plug, the kernel one
//!   per task. While one task's plug is open, other tasks' steps wait (in
//!   order) until it closes, at most [`MAX_DEFERRED`] of them; past that
//!   the plug is closed early, and what waited goes at once, the plugs
//!   that waited with it not opened (as at the end of the trace). Kernel
//!   plugs last microseconds, so the reordering is that small.
//! - **Streaming**: a step leaves the planner once [`Planner::window`] more
//!   items have been read (time enough to see its task's `P`), so memory is
//!   bounded by the window, not the trace. The tasks followed for their
//!   plugs are at most [`MAX_TASKS`] (or twice the window): past that,
//!   tasks whose last bio has left the window are forgotten (a plug that a
//!   forgotten task left open is closed by the [`MAX_DEFERRED`] rule), so
//!   a trace of millions of processes costs no more than one of a few.
//! - **The recording's own events** ([`Planner::analyze_recorded`]): those
//!   of the replayed device, and those that name no device (tracefs'
//!   plugs), analysed as they are planned, for the report's "recorded"
//!   column; events of other devices cost nothing.

use std::collections::{HashMap, VecDeque};

use crate::fast_hash::IntMap;

use elevator_core::range::ByteRange;
use elevator_core::{BioFlags, Nanos, Op, TraceAction};

mod flush;
mod in_flight;
mod labels;
mod outcome;

pub use flush::{FlushModel, FlushParts};
pub use in_flight::{InFlight, InFlightBio, Part};
pub use labels::SequenceLabels;
pub use outcome::{EventOut, ReplayError, ReplayResult};

use crate::analyze::{Analysis, Analyzer};
use crate::error::{TraceError, TraceErrorKind};
use crate::record::{DevT, Item, Record};

/// Bio events looked at to choose the device when none is named.
pub const DEVICE_SAMPLE: usize = 1000;
/// Steps of other tasks that may wait behind an open plug.
pub const MAX_DEFERRED: usize = 1024;
/// Items read ahead by default.
pub const DEFAULT_WINDOW: usize = 4096;
/// Items held at most while the device is being chosen.
pub const MAX_SAMPLE_ITEMS: usize = 1 << 16;
/// Tasks followed for their plugs, at least (see the module's doc).
pub const MAX_TASKS: usize = 1 << 16;

/// What the recording itself did, for comparison with the replay: its
/// records of the replayed device, and those that name no device.
#[derive(Clone, Debug, Default)]
pub struct RecordedAnalysis {
    /// Records read from the trace (of every device).
    pub records: u64,
    /// The replayed device's records, analysed (`None`: there were none).
    pub device: Option<Analysis>,
    /// The records that name no device (tracefs' plugs and unplugs; device
    /// 0,0), analysed (`None`: there were none).
    pub deviceless: Option<Analysis>,
}

/// The analyzers of [`RecordedAnalysis`], fed as items are planned.
#[derive(Debug, Default)]
struct RecordedAnalyzers {
    device: Option<Analyzer>,
    deviceless: Option<Analyzer>,
}

impl RecordedAnalyzers {
    /// Take `r`, of the device `dev` replayed (if known yet): any other
    /// device's record is passed over without a cost.
    fn record(&mut self, r: &Record, dev: Option<DevT>) {
        let analyzer = if Some(r.dev) == dev {
            &mut self.device
        } else if r.dev == 0 {
            &mut self.deviceless
        } else {
            return;
        };
        analyzer.get_or_insert_with(Analyzer::new).record(r);
    }
}

/// Which events of the trace are replayed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Events {
    /// Queued bios (`Q`).
    #[default]
    Queued,
    /// Issued requests (`D`).
    Issued,
}

/// One bio to submit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedBio {
    /// Recorded time, ns after the first planned event.
    pub time: Nanos,
    /// Operation.
    pub op: Op,
    /// Flags (sync, meta, FUA, preflush).
    pub flags: BioFlags,
    /// First sector.
    pub sector: u64,
    /// Bytes (0 for a flush).
    pub bytes: u32,
    /// The submitting process.
    pub pid: u32,
    /// Which record of the trace it came from (1-based), for errors.
    pub record: u64,
}

impl PlannedBio {
    /// Whether the bio lies on a device of `capacity` bytes: a flush
    /// always does; anything else through [`ByteRange`] (its end in bytes
    /// must fit in a `u64`, then in the device). The replay drivers' one
    /// capacity check.
    pub fn on_device(&self, capacity: u64) -> Result<(), TraceErrorKind> {
        if self.op == Op::Flush {
            return Ok(());
        }
        let range = ByteRange::at_sector(self.sector, u64::from(self.bytes))
            .map_err(|e| TraceErrorKind::Range(e.into()))?;
        range
            .within(capacity)
            .map(drop)
            .map_err(|_| TraceErrorKind::BeyondDevice {
                sector: self.sector,
                end: range.end().div_ceil(512),
                capacity: capacity / 512,
            })
    }
}

/// One step of a replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Submit a bio.
    Bio(PlannedBio),
    /// Start plugging for `pid`.
    Plug {
        /// Recorded time.
        time: Nanos,
        /// The task.
        pid: u32,
    },
    /// Flush the plug of `pid`.
    Unplug {
        /// Recorded time.
        time: Nanos,
        /// The task.
        pid: u32,
    },
    /// A process's name (for trace writers).
    Process {
        /// Process id.
        pid: u32,
        /// Name.
        name: String,
    },
}

impl Step {
    /// When the step is due under `timing` (`None`: as soon as allowed; a
    /// process name is never held back).
    #[inline]
    pub fn due(&self, timing: &Timing) -> Option<Nanos> {
        match self {
            Step::Bio(b) => timing.due(b.time),
            Step::Plug { time, .. } | Step::Unplug { time, .. } => timing.due(*time),
            Step::Process { .. } => None,
        }
    }
}

/// The latest a replayed step is due, in nanoseconds after the first:
/// 2^62 (146 years), far past any recording and far enough below 2^64 that
/// a device adding its service times to the clock never overflows.
pub const MAX_DUE: Nanos = 1 << 62;

/// When bios are submitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timing {
    /// Open loop at the recorded times (relative to the first), divided by
    /// the speed-up (1.0: as recorded).
    Recorded(f64),
    /// As fast as the queue takes them, in order: a bio waits only for a tag
    /// (or for the flush before it, see [`FlushModel`]), never for the
    /// recording's completions.
    Asap,
    /// Closed loop: at most this many bios outstanding, in order.
    Depth(u32),
}

impl Timing {
    /// When a step recorded at `time` is due (`None`: as soon as allowed),
    /// at most [`MAX_DUE`]: a corrupt timestamp, or a slow-down, cannot
    /// push the clock to where a device's arithmetic would overflow.
    pub fn due(&self, time: Nanos) -> Option<Nanos> {
        match *self {
            Timing::Recorded(speed) if speed > 0.0 && speed != 1.0 => {
                Some(((time as f64 / speed) as Nanos).min(MAX_DUE))
            }
            Timing::Recorded(_) => Some(time.min(MAX_DUE)),
            Timing::Asap | Timing::Depth(_) => None,
        }
    }

    /// Bios that may be outstanding at once.
    pub fn max_outstanding(&self) -> u64 {
        match *self {
            Timing::Depth(n) => u64::from(n.max(1)),
            _ => u64::MAX,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Task {
    /// Sequence number of its last planned bio, while that bio may still
    /// open a plug.
    last_bio: Option<u64>,
    open: bool,
}

/// Plans a replay from trace items.
pub struct Planner<I> {
    items: I,
    events: Events,
    dev: Option<DevT>,
    window: usize,
    /// Read ahead, not yet planned, while the device is being chosen (at
    /// most [`MAX_SAMPLE_ITEMS`]).
    sample: Vec<Item>,
    /// Bio events in the sample, by device.
    sample_bios: HashMap<DevT, u64>,
    /// The recording's events analysed, when asked for.
    recorded: Option<RecordedAnalyzers>,
    /// Planned steps, the first with sequence number `base`; a bio's flag
    /// says whether a plug opens before it.
    ahead: VecDeque<(Step, bool)>,
    base: u64,
    tasks: IntMap<u32, Task>,
    /// Steps ready, in replay order.
    out: VecDeque<Step>,
    owner: Option<u32>,
    deferred: VecDeque<Step>,
    first_time: Option<Nanos>,
    records: u64,
    ignored: u64,
    plugs: u64,
    waited: u64,
    input_done: bool,
}

impl<I: Iterator<Item = Result<Item, TraceError>>> Planner<I> {
    /// A planner of `items`, replaying `events` of device `dev` (or the most
    /// common one).
    pub fn new(items: I, events: Events, dev: Option<DevT>) -> Planner<I> {
        Planner {
            items,
            events,
            dev,
            window: DEFAULT_WINDOW,
            sample: Vec::new(),
            sample_bios: HashMap::new(),
            recorded: None,
            ahead: VecDeque::new(),
            base: 0,
            tasks: IntMap::default(),
            out: VecDeque::new(),
            owner: None,
            deferred: VecDeque::new(),
            first_time: None,
            records: 0,
            ignored: 0,
            plugs: 0,
            waited: 0,
            input_done: false,
        }
    }

    /// Read `window` items ahead (at least 16).
    pub fn window(mut self, window: usize) -> Planner<I> {
        self.window = window.max(16);
        self
    }

    /// The device replayed, once known.
    pub fn device(&self) -> Option<DevT> {
        self.dev
    }

    /// Records read from the trace.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bio events with nothing to replay (no bytes and no flush).
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    /// Plugs planned (the recording's plugs that held bios of the device).
    pub fn plugs(&self) -> u64 {
        self.plugs
    }

    /// Steps that waited behind another task's open plug.
    pub fn waited(&self) -> u64 {
        self.waited
    }

    fn wanted(&self) -> TraceAction {
        match self.events {
            Events::Queued => TraceAction::Queue,
            Events::Issued => TraceAction::Issue,
        }
    }

    /// Analyse the recording's own events as they are planned (see
    /// [`Planner::recorded`]).
    pub fn analyze_recorded(mut self) -> Planner<I> {
        self.recorded = Some(RecordedAnalyzers::default());
        self
    }

    /// The analysis of the recording's events so far, if asked for with
    /// [`Planner::analyze_recorded`].
    pub fn recorded(&self) -> Option<RecordedAnalysis> {
        let r = self.recorded.as_ref()?;
        let device = r.device.as_ref().map(Analyzer::analysis);
        let deviceless = match self.dev {
            Some(0) => device.clone(),
            _ => r.deviceless.as_ref().map(Analyzer::analysis),
        };
        Some(RecordedAnalysis {
            records: self.records,
            device,
            deviceless,
        })
    }

    /// Read items until the device can be chosen (see the module's doc):
    /// the most common among the first bio events. At the end of the input
    /// the plan is finished.
    fn sample_device(&mut self) -> Result<(), TraceError> {
        let wanted = self.wanted();
        let mut bios: u64 = self.sample_bios.values().sum();
        loop {
            let Some(item) = self.items.next() else {
                self.choose_device();
                self.input_done = true;
                self.finish();
                return Ok(());
            };
            let item = item?;
            if let Item::Record(r) = &item
                && r.event.action == wanted
            {
                *self.sample_bios.entry(r.dev).or_insert(0) += 1;
                bios += 1;
            }
            self.sample.push(item);
            if bios >= DEVICE_SAMPLE as u64 {
                self.choose_device();
                return Ok(());
            }
            if self.sample.len() >= MAX_SAMPLE_ITEMS {
                if bios > 0 {
                    self.choose_device();
                } else {
                    // Nothing to choose from yet, and nothing held plans a
                    // bio: plan it now, and wait for the first bio.
                    for item in std::mem::take(&mut self.sample) {
                        self.take(item);
                    }
                }
                return Ok(());
            }
        }
    }

    /// Choose the device from the sample's bios (device 0 if there were
    /// none), and plan the sample.
    fn choose_device(&mut self) {
        let counts = std::mem::take(&mut self.sample_bios);
        self.dev = counts
            .into_iter()
            .max_by_key(|&(dev, n)| (n, std::cmp::Reverse(dev)))
            .map(|(dev, _)| dev)
            .or(Some(0));
        for item in std::mem::take(&mut self.sample) {
            self.take(item);
        }
    }

    /// Forget tasks past the bound (see the module's doc): first those
    /// with no bio in the window and no open plug, then, if open plugs
    /// alone are too many, all but the plug owner's.
    fn prune_tasks(&mut self) {
        let limit = MAX_TASKS.max(2 * (self.window + 1));
        if self.tasks.len() <= limit {
            return;
        }
        let (base, owner) = (self.base, self.owner);
        let live = move |t: &Task| t.last_bio.is_some_and(|seq| seq >= base);
        self.tasks.retain(|_, t| live(t) || t.open);
        if self.tasks.len() > limit / 2 {
            self.tasks
                .retain(|&pid, t| live(t) || (t.open && owner == Some(pid)));
        }
    }

    fn take(&mut self, item: Item) {
        let r = match item {
            Item::Process { pid, name, .. } => {
                self.push(Step::Process { pid, name });
                return;
            }
            Item::Record(r) => r,
        };
        self.records += 1;
        if let Some(recorded) = self.recorded.as_mut() {
            recorded.record(&r, self.dev);
        }
        let e = &r.event;
        let first = *self.first_time.get_or_insert(e.time);
        let time = e.time.saturating_sub(first);
        let pid = r.pid();
        match e.action {
            a if a == self.wanted() && Some(r.dev) == self.dev => self.plan_bio(&r, time),
            TraceAction::Plug if self.events == Events::Queued => {
                let seq_end = self.base + self.ahead.len() as u64;
                let base = self.base;
                // A task with no bio planned has no plug to open.
                if let Some(task) = self.tasks.get_mut(&pid)
                    && !task.open
                    && let Some(seq) = task.last_bio.take()
                    && seq >= base
                    && seq < seq_end
                {
                    task.open = true;
                    if let Some(slot) = self.ahead.get_mut((seq - base) as usize) {
                        slot.1 = true;
                    }
                }
            }
            TraceAction::Unplug if self.events == Events::Queued => {
                if let Some(task) = self.tasks.get_mut(&pid) {
                    task.last_bio = None;
                    if std::mem::take(&mut task.open) {
                        self.push(Step::Unplug { time, pid });
                    }
                }
            }
            _ => {}
        }
    }

    fn plan_bio(&mut self, r: &Record, time: Nanos) {
        let e = &r.event;
        let mut op = e.op;
        let mut flags = e.flags.without(BioFlags::NOMERGE);
        if e.bytes == 0 && op != Op::Flush {
            if !flags.contains(BioFlags::PREFLUSH) {
                self.ignored += 1;
                return;
            }
            op = Op::Flush;
        }
        if op == Op::Flush {
            flags = flags.without(BioFlags::FUA) | BioFlags::PREFLUSH;
        }
        let seq = self.base + self.ahead.len() as u64;
        let pid = r.pid();
        self.push(Step::Bio(PlannedBio {
            time,
            op,
            flags,
            sector: if op == Op::Flush { 0 } else { e.sector },
            bytes: if op == Op::Flush { 0 } else { e.bytes },
            pid,
            record: self.records,
        }));
        if self.events == Events::Queued {
            let task = self.tasks.entry(pid).or_default();
            task.last_bio = Some(seq);
            self.prune_tasks();
        }
    }

    fn push(&mut self, step: Step) {
        self.ahead.push_back((step, false));
    }

    /// Move the oldest planned step on, through the one-plug arbiter.
    fn release(&mut self) {
        let Some((step, opens)) = self.ahead.pop_front() else {
            return;
        };
        self.base += 1;
        if opens && let Step::Bio(b) = &step {
            self.arbitrate(
                Step::Plug {
                    time: b.time,
                    pid: b.pid,
                },
                true,
            );
        }
        self.arbitrate(step, true);
    }

    /// Pass `step` on, or hold it behind another task's plug (`fresh`: it
    /// has not waited before).
    fn arbitrate(&mut self, step: Step, fresh: bool) {
        let pid = match &step {
            Step::Process { .. } => {
                self.out.push_back(step);
                return;
            }
            Step::Bio(b) => b.pid,
            Step::Plug { pid, .. } | Step::Unplug { pid, .. } => *pid,
        };
        match (self.owner, &step) {
            (Some(o), _) if o != pid => {
                self.waited += u64::from(fresh);
                self.deferred.push_back(step);
                if self.deferred.len() > MAX_DEFERRED {
                    let time = self.deferred.front().map_or(0, step_time);
                    self.close_plug(Step::Unplug { time, pid: o }, false);
                }
            }
            (None, Step::Unplug { .. }) => {}
            (Some(_), Step::Plug { .. }) => {}
            (None, Step::Plug { .. }) => {
                self.plugs += 1;
                self.owner = Some(pid);
                self.out.push_back(step);
            }
            (Some(_), Step::Unplug { .. }) => self.close_plug(step, true),
            _ => self.out.push_back(step),
        }
    }

    /// Close the open plug with `unplug` and replay what waited behind it
    /// (`reopen`: the first waiting plug may open; else what waited goes
    /// at once, its plugs not opened).
    fn close_plug(&mut self, unplug: Step, reopen: bool) {
        self.owner = None;
        self.out.push_back(unplug);
        let waiting = std::mem::take(&mut self.deferred);
        for step in waiting {
            if !reopen && matches!(step, Step::Plug { .. }) {
                continue;
            }
            self.arbitrate(step, false);
        }
    }

    fn finish(&mut self) {
        while !self.ahead.is_empty() {
            self.release();
        }
        let mut open: Vec<u32> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.open)
            .map(|(&p, _)| p)
            .collect();
        open.sort_unstable();
        for pid in open {
            if let Some(t) = self.tasks.get_mut(&pid) {
                t.open = false;
            }
            let time = self.out.back().map_or(0, step_time);
            self.arbitrate(Step::Unplug { time, pid }, true);
        }
        if let Some(o) = self.owner {
            let time = self.deferred.back().map_or(0, step_time);
            self.close_plug(Step::Unplug { time, pid: o }, false);
        }
    }
}

fn step_time(s: &Step) -> Nanos {
    match s {
        Step::Bio(b) => b.time,
        Step::Plug { time, .. } | Step::Unplug { time, .. } => *time,
        Step::Process { .. } => 0,
    }
}

impl<I: Iterator<Item = Result<Item, TraceError>>> Iterator for Planner<I> {
    type Item = Result<Step, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(step) = self.out.pop_front() {
                return Some(Ok(step));
            }
            if self.input_done {
                return None;
            }
            if self.dev.is_none() {
                if let Err(e) = self.sample_device() {
                    self.input_done = true;
                    return Some(Err(e));
                }
                while self.ahead.len() > self.window {
                    self.release();
                }
                continue;
            }
            while self.ahead.len() <= self.window && self.out.is_empty() {
                match self.items.next() {
                    Some(Ok(item)) => self.take(item),
                    Some(Err(e)) => {
                        self.input_done = true;
                        return Some(Err(e));
                    }
                    None => {
                        self.input_done = true;
                        self.finish();
                        break;
                    }
                }
            }
            while self.ahead.len() > self.window {
                self.release();
            }
        }
    }
}

#[cfg(test)]
mod tests;
