//! The reorder window of the text trace readers (tracefs and blkparse
//! text): it owns putting a text trace's items back in time order where
//! the tool that printed them interleaved CPUs a little out of it, and
//! refusing what is too far out of order to put back.
//!
//! `trace_pipe` merges the kernel's per-CPU buffers as it reads them: an
//! event committed late on one CPU can follow another CPU's later one, so
//! real traces hold a few inversions of microseconds to a few hundred. A
//! reorder buffer holds each item read until the newest item read is more
//! than the window ([`ReorderWindow`], 1 s by default) later than it, and
//! sorts an item that arrives earlier than the newest into its place among
//! those held (stably: equal times keep the file's order). In-order input
//! only passes through the buffer: appended at its back, taken from its
//! front. Each item put back in its place is counted ([`ReorderStats`]).
//!
//! Refused (as [`crate::TraceErrorKind::TimeOrder`] with an
//! [`OutsideWindow`] naming both lines and the flag): an item more than
//! the window earlier than the newest item read; with a window of 0,
//! every item earlier than the one before it. Memory is bounded: at most
//! [`MAX_HELD`] items are held. When the window spans more items than
//! that, the oldest leave early, and an item earlier than one that left
//! early is refused too, saying so (a shorter window would refuse it as
//! well: it is that far out of order).

use std::collections::VecDeque;
use std::fmt;

use thiserror::Error;

use crate::record::Item;

/// The most items a reorder buffer holds (64 bytes each, 8 MiB): past
/// this, the oldest leave before the window has passed them. A second of
/// a trace of up to 131,072 events a second fits whole (the real
/// traces: 21,000 to 39,000); a denser trace's window is shorter, still
/// milliseconds where `trace_pipe`'s inversions are microseconds.
pub const MAX_HELD: usize = 1 << 17;

/// The longest window taken (one hour of trace time).
const MAX_WINDOW_NS: u64 = 3_600_000_000_000;

/// How far back in trace time a text reader puts items back in order
/// (`--reorder-window`); 0 is strict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReorderWindow {
    ns: u64,
}

impl ReorderWindow {
    /// No reordering: an item earlier than the one before it is refused.
    pub const STRICT: ReorderWindow = ReorderWindow { ns: 0 };
    /// The default: one second of trace time.
    pub const DEFAULT: ReorderWindow = ReorderWindow { ns: 1_000_000_000 };

    /// A window of `ns` nanoseconds of trace time (at most one hour).
    pub fn from_ns(ns: u64) -> ReorderWindow {
        ReorderWindow {
            ns: ns.min(MAX_WINDOW_NS),
        }
    }

    /// The window in nanoseconds.
    pub fn ns(self) -> u64 {
        self.ns
    }

    /// A window as the flag gives it: a number (a decimal fraction
    /// allowed) and a unit, `s`, `ms`, `us` (or `µs`) or `ns`; a bare
    /// number is seconds. At most one hour.
    pub fn parse(text: &str) -> Result<ReorderWindow, WindowError> {
        let bad = || WindowError::Syntax(text.to_string());
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let scale: u64 = match unit.trim() {
            "" | "s" => 1_000_000_000,
            "ms" => 1_000_000,
            "us" | "µs" => 1_000,
            "ns" => 1,
            _ => return Err(bad()),
        };
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() {
            return Err(bad());
        }
        let too_long = || WindowError::TooLong(text.to_string());
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| too_long())?
        };
        let mut ns = whole.checked_mul(scale).ok_or_else(too_long)?;
        // The fraction, digit by digit, to the nanosecond.
        let mut place = scale;
        for c in fraction.chars() {
            let digit = c.to_digit(10).ok_or_else(bad)?;
            place /= 10;
            ns = ns
                .checked_add(u64::from(digit) * place)
                .ok_or_else(too_long)?;
        }
        if ns > MAX_WINDOW_NS {
            return Err(too_long());
        }
        Ok(ReorderWindow { ns })
    }
}

impl Default for ReorderWindow {
    fn default() -> ReorderWindow {
        ReorderWindow::DEFAULT
    }
}

impl std::str::FromStr for ReorderWindow {
    type Err = WindowError;

    fn from_str(s: &str) -> Result<ReorderWindow, WindowError> {
        ReorderWindow::parse(s)
    }
}

impl fmt::Display for ReorderWindow {
    /// In the largest unit that shows it whole: `1s`, `250ms`, `131us`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.ns;
        let (value, unit) = if ns == 0 {
            (0, "s")
        } else if ns.is_multiple_of(1_000_000_000) {
            (ns / 1_000_000_000, "s")
        } else if ns.is_multiple_of(1_000_000) {
            (ns / 1_000_000, "ms")
        } else if ns.is_multiple_of(1_000) {
            (ns / 1_000, "us")
        } else {
            (ns, "ns")
        };
        write!(f, "{value}{unit}")
    }
}

/// A window the flag cannot take.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum WindowError {
    /// Not a number and a unit.
    #[error("'{0}': expected a duration such as 1s, 250ms, 131us or 0")]
    Syntax(String),
    /// Longer than the longest window.
    #[error("'{0}': at most 1 hour")]
    TooLong(String),
}

/// What a reorder window did over a read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReorderStats {
    /// Records that arrived earlier than one read before them, and were
    /// put back in their place.
    pub records: u64,
    /// The largest of those inversions: how much earlier than the newest
    /// record read before it one was, in ns.
    pub largest_inversion_ns: u64,
}

/// A text line refused as out of time order by the reorder window: both
/// lines, and why the window could not take it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutsideWindow {
    /// The line refused.
    pub line: u64,
    /// The earlier line, whose time is later.
    pub earlier_line: u64,
    /// The window.
    pub window: ReorderWindow,
    /// The earlier line had left a full buffer (of this many items) before
    /// the window passed it: the line is inside the window, but the window
    /// spans more than the buffer holds.
    pub left_full_buffer: Option<usize>,
}

/// The message of an item at `time` refused as earlier than `previous`.
pub(crate) fn time_order_text(time: u64, previous: u64, window: Option<&OutsideWindow>) -> String {
    let Some(w) = window else {
        return format!("out of time order: {time} ns after {previous} ns");
    };
    let head = format!(
        "out of time order: line {} at {} s is {} µs before line {} at {} s",
        w.line,
        seconds(time),
        micros(previous.saturating_sub(time)),
        w.earlier_line,
        seconds(previous)
    );
    match w.left_full_buffer {
        None => format!(
            "{head}, outside --reorder-window {} (widen it, or --skip-bad to leave such lines out)",
            w.window
        ),
        Some(n) => format!(
            "{head}, which had left the reorder buffer: it holds at most {n} records, fewer \
             than --reorder-window {} spans here (--skip-bad leaves such lines out)",
            w.window
        ),
    }
}

/// `ns` as seconds with nine decimals.
fn seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// `ns` as microseconds with three decimals.
pub fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000, ns % 1_000)
}

/// An item held, with the line it came from.
struct Held {
    line: u64,
    item: Item,
}

/// The trace time of an item (a process name takes its record's).
#[inline(always)]
fn time_of(item: &Item) -> u64 {
    match item {
        Item::Record(r) => r.event.time,
        Item::Process { time, .. } => *time,
    }
}

/// A text reader's reorder buffer: items in, in file order; items out, in
/// time order (see the module's documentation).
pub(crate) struct Reorder {
    window: ReorderWindow,
    held: VecDeque<Held>,
    /// The latest time read, and its line.
    newest: u64,
    newest_line: u64,
    /// `newest - window`: held items earlier than this leave.
    horizon: u64,
    /// The last item that left early (the buffer full): its time and line.
    left_early: Option<(u64, u64)>,
    stats: ReorderStats,
}

impl Reorder {
    /// An empty buffer for `window`.
    pub(crate) fn new(window: ReorderWindow) -> Reorder {
        Reorder {
            window,
            held: VecDeque::new(),
            newest: 0,
            newest_line: 0,
            horizon: 0,
            left_early: None,
            stats: ReorderStats::default(),
        }
    }

    /// Use `window` from now on.
    pub(crate) fn set_window(&mut self, window: ReorderWindow) {
        self.window = window;
        self.horizon = self.newest.saturating_sub(window.ns);
    }

    /// What the buffer did so far.
    pub(crate) fn stats(&self) -> ReorderStats {
        self.stats
    }

    /// Whether an item at `time`, of line `line`, can take its place: the
    /// refusal (both lines) when it cannot.
    #[inline]
    pub(crate) fn check(&self, time: u64, line: u64) -> Result<(), Box<OutsideWindow>> {
        if time >= self.newest {
            return Ok(());
        }
        self.check_late(time, line)
    }

    #[cold]
    fn check_late(&self, time: u64, line: u64) -> Result<(), Box<OutsideWindow>> {
        if self.newest - time > self.window.ns {
            return Err(Box::new(OutsideWindow {
                line,
                earlier_line: self.newest_line,
                window: self.window,
                left_full_buffer: None,
            }));
        }
        match self.left_early {
            Some((left, left_line)) if time < left => Err(Box::new(OutsideWindow {
                line,
                earlier_line: left_line,
                window: self.window,
                left_full_buffer: Some(MAX_HELD),
            })),
            _ => Ok(()),
        }
    }

    /// The time against which [`Reorder::check`] refuses: the newest read,
    /// or the last that left early if it is later (for the message).
    pub(crate) fn refused_against(&self, refusal: &OutsideWindow) -> u64 {
        match (refusal.left_full_buffer, self.left_early) {
            (Some(_), Some((left, _))) => left,
            _ => self.newest,
        }
    }

    /// Take `item` of line `line` (which [`Reorder::check`] admitted).
    #[inline]
    pub(crate) fn push(&mut self, line: u64, item: Item) {
        let time = time_of(&item);
        if time >= self.newest {
            self.newest = time;
            self.newest_line = line;
            self.horizon = time.saturating_sub(self.window.ns);
            self.held.push_back(Held { line, item });
            return;
        }
        self.insert_late(time, line, item);
    }

    /// An item earlier than the newest: into its place, after every held
    /// item of its time or earlier.
    #[cold]
    fn insert_late(&mut self, time: u64, line: u64, item: Item) {
        let at = self.held.partition_point(|h| time_of(&h.item) <= time);
        if let Item::Record(r) = &item {
            self.stats.records += 1;
            let inversion = self.newest - time;
            self.stats.largest_inversion_ns = self.stats.largest_inversion_ns.max(inversion);
            // A name given for this pid on a later line goes before the
            // record that now comes first.
            let pid = r.pid();
            let named = self
                .held
                .range(at..)
                .position(|h| matches!(h.item, Item::Process { pid: p, .. } if p == pid));
            if let Some(j) = named
                && let Some(mut name) = self.held.remove(at + j)
            {
                if let Item::Process { time: t, .. } = &mut name.item {
                    *t = time;
                }
                self.held.insert(at, name);
                self.held.insert(at + 1, Held { line, item });
                return;
            }
        }
        self.held.insert(at, Held { line, item });
    }

    /// The oldest item, if the window has passed it (or the buffer is
    /// full).
    #[inline]
    pub(crate) fn pop_ready(&mut self) -> Option<Item> {
        let front = self.held.front()?;
        if time_of(&front.item) < self.horizon {
            return self.held.pop_front().map(|h| h.item);
        }
        if self.held.len() >= MAX_HELD {
            let h = self.held.pop_front()?;
            self.left_early = Some((time_of(&h.item), h.line));
            return Some(h.item);
        }
        None
    }

    /// The oldest item held, at the end of the input.
    pub(crate) fn pop_any(&mut self) -> Option<Item> {
        self.held.pop_front().map(|h| h.item)
    }
}

#[cfg(test)]
mod tests;
