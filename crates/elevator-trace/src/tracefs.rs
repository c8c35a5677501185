//! tracefs' text for the kernel's block tracepoints (`block_bio_queue`,
//! `block_rq_issue`, ...), as `cat trace_pipe` prints them:
//!
//! ```text
//!         postgres-19830   [000] ...1.  1662.621853: block_rq_insert: 7,0 W 28672 () 4509728 + 56 be,0,4 [postgres]
//! ```
//!
//! A line is `TASK-PID [CPU] FLAGS SECONDS.FRACTION: TRACEPOINT: FIELDS`.
//! The task name may hold spaces and dashes (the pid follows the last dash
//! before ` [CPU]`), `<...>` when the kernel had forgotten it; the flags
//! column is absent when tracefs' irq-info option is off. Fields, by
//! tracepoint (the ioprio field `be,0,4` is absent before Linux 6.10):
//!
//! | tracepoint | fields |
//! |---|---|
//! | `block_bio_queue`, `block_bio_backmerge`, `block_bio_frontmerge`, `block_getrq` | `MAJ,MIN RWBS SECTOR + NR [COMM]` |
//! | `block_split` | `MAJ,MIN RWBS SECTOR / NEW_SECTOR [COMM]` |
//! | `block_rq_insert`, `block_rq_issue`, `block_rq_merge` | `MAJ,MIN RWBS BYTES (CMD) SECTOR + NR [IOPRIO] [COMM]` |
//! | `block_rq_complete`, `block_rq_requeue` | `MAJ,MIN RWBS (CMD) SECTOR + NR [IOPRIO] [ERROR]` |
//! | `block_plug` | `[COMM]` |
//! | `block_unplug` | `[COMM] DEPTH` |
//!
//! Block tracepoints that elevator has no event for (`block_bio_complete`,
//! `block_rq_error`, `block_bio_remap`, `block_io_start`, ...) are passed
//! over; other tracepoint names are errors. Every `SECTOR + NR` goes through
//! [`Extent::place`]: a flush request is queued and completes at sector
//! 2^64-1 with no sectors, read as sector 0 as flushes are everywhere
//! else; any other range whose end is past 2^64 bytes is refused with its
//! line (as blkparse refuses it), never wrapped. Plug and
//! unplug name no device: they are read with device 0, for the consumer to
//! attribute. Each process is named ([`Item::Process`]) the first time its
//! pid appears, and again once if it was first seen as `<...>` (names cut
//! at [`crate::record::MAX_NAME_BYTES`]; past
//! [`MAX_NAMED_PROCESSES`] pids the reader forgets them and names each
//! again when next seen). A line is at most
//! [`crate::text_fields::MAX_LINE_BYTES`].
//!
//! `trace_pipe` merges the CPUs' buffers as it reads them, so a line can
//! be a little earlier than one before it: the reader puts such lines back
//! in time order within its reorder window ([`crate::reorder`];
//! [`TracefsReader::with_reorder_window`], strict unless given one) and
//! refuses, naming both lines, one that falls outside it.

use std::io::BufRead;

use memchr::memchr;

use elevator_core::{BioFlags, Op, TraceAction, TraceEvent};

use crate::error::{TraceError, TraceErrorKind};
use crate::fast_hash::IntMap;
use crate::record::{
    DevT, Extent, Item, MAX_NAMED_PROCESSES, Record, dev_t, parse_rwbs_bytes, process_name,
    traced_event,
};
use crate::reorder::{Reorder, ReorderStats, ReorderWindow};
use crate::text_fields::{LineRead, MAX_LINE_BYTES, parse_uint, read_line};

/// Block tracepoints read and passed over: elevator records no such event.
const PASSED_OVER: [&str; 7] = [
    "block_bio_complete",
    "block_rq_error",
    "block_bio_remap",
    "block_rq_remap",
    "block_bio_bounce",
    "block_io_start",
    "block_io_done",
];

/// Reads tracefs block events, one line at a time.
pub struct TracefsReader<R: BufRead> {
    reader: R,
    /// A line that straddles the reader's buffer, gathered here; a line
    /// wholly in the reader's buffer is parsed where it lies.
    buf: Vec<u8>,
    lines: LineState,
}

/// What the reader keeps from line to line.
struct LineState {
    source_name: String,
    skip_bad: bool,
    skipped: u64,
    line_no: u64,
    /// Pids seen, and whether the name given for them was a real one (at
    /// most [`MAX_NAMED_PROCESSES`]).
    named: IntMap<u32, bool>,
    /// The last pid found named by a real name (a name once real stays so
    /// until `named` is cleared): most lines are of the task before.
    last_named: Option<u32>,
    /// The items read, put back in time order: trace_pipe merges the
    /// CPUs' buffers, and a line a little earlier than one before it is
    /// sorted into place; one earlier by more than the window is a damaged
    /// or spliced trace.
    reorder: Reorder,
    /// The error that ends the read, given once the items before it are.
    failure: Option<TraceError>,
    /// No more lines are read (the end, or an error).
    done: bool,
}

/// What a parsed line holds.
struct Line<'a> {
    task: &'a [u8],
    pid: u32,
    cpu: u32,
    time: u64,
    tracepoint: &'a [u8],
    fields: &'a [u8],
}

impl<R: BufRead> TracefsReader<R> {
    /// A reader of `reader`, named `source_name` in errors. With `skip_bad`,
    /// lines that do not parse are counted ([`TracefsReader::skipped`])
    /// instead of ending the read with an error. Strict about time order:
    /// [`TracefsReader::with_reorder_window`] gives a window.
    pub fn new(reader: R, source_name: &str, skip_bad: bool) -> TracefsReader<R> {
        TracefsReader {
            reader,
            buf: Vec::with_capacity(256),
            lines: LineState {
                source_name: source_name.to_string(),
                skip_bad,
                skipped: 0,
                line_no: 0,
                named: IntMap::default(),
                last_named: None,
                reorder: Reorder::new(ReorderWindow::STRICT),
                failure: None,
                done: false,
            },
        }
    }

    /// The same reader, putting lines back in time order within `window`
    /// (given before the first item is read).
    pub fn with_reorder_window(mut self, window: ReorderWindow) -> TracefsReader<R> {
        self.lines.reorder.set_window(window);
        self
    }

    /// What the reorder window did so far.
    pub fn reordered(&self) -> ReorderStats {
        self.lines.reorder.stats()
    }

    /// Lines skipped as bad.
    pub fn skipped(&self) -> u64 {
        self.lines.skipped
    }

    /// Lines read so far.
    pub fn lines(&self) -> u64 {
        self.lines.line_no
    }
}

impl LineState {
    /// The process item to emit before `record` of task `task`, if any.
    fn name_for(&mut self, pid: u32, task: &[u8], fields: &[u8], time: u64) -> Option<Item> {
        if self.last_named == Some(pid) {
            return None;
        }
        let mut name = task;
        let mut real = task != b"<...>";
        if !real && let Some(comm) = bracketed_comm(fields) {
            name = comm;
            real = true;
        }
        match self.named.get(&pid) {
            Some(true) => {
                self.last_named = Some(pid);
                None
            }
            Some(false) if !real => None,
            known => {
                if known.is_none() && self.named.len() >= MAX_NAMED_PROCESSES {
                    self.named.clear();
                }
                self.named.insert(pid, real);
                self.last_named = real.then_some(pid);
                Some(Item::Process {
                    pid,
                    name: process_name(name),
                    time,
                })
            }
        }
    }

    /// Take the next line (`too_long`: it was passed over as longer than
    /// [`MAX_LINE_BYTES`]): the items it gives go to the reorder buffer.
    fn line(&mut self, line: &[u8], too_long: bool) {
        self.line_no += 1;
        let text = trim(line);
        let parsed = if too_long {
            Err(TraceErrorKind::LineTooLong(MAX_LINE_BYTES))
        } else if text.is_empty() || text[0] == b'#' {
            return;
        } else {
            parse_line(text).and_then(|line| Ok(record_of(&line)?.map(|r| (r, line))))
        };
        match parsed {
            Ok(None) => {}
            Ok(Some((record, line))) => {
                if let Err(refusal) = self.reorder.check(line.time, self.line_no) {
                    let previous = self.reorder.refused_against(&refusal);
                    return self.refuse(TraceErrorKind::TimeOrder {
                        time: line.time,
                        previous,
                        window: Some(refusal),
                    });
                }
                if let Some(item) = self.name_for(line.pid, line.task, line.fields, line.time) {
                    self.reorder.push(self.line_no, item);
                }
                self.reorder.push(self.line_no, Item::Record(record));
            }
            Err(kind) => self.refuse(kind),
        }
    }

    /// A bad line: counted with `skip_bad`, else the error ending the read.
    fn refuse(&mut self, kind: TraceErrorKind) {
        if self.skip_bad {
            self.skipped += 1;
            return;
        }
        self.fail(TraceError::at_line(&self.source_name, self.line_no, kind));
    }

    /// End the read with `error`, given after the items before it.
    fn fail(&mut self, error: TraceError) {
        self.done = true;
        self.failure = Some(error);
    }
}

impl<R: BufRead> Iterator for TracefsReader<R> {
    type Item = Result<Item, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.lines.reorder.pop_ready() {
                return Some(Ok(item));
            }
            if self.lines.done {
                if let Some(item) = self.lines.reorder.pop_any() {
                    return Some(Ok(item));
                }
                return self.lines.failure.take().map(Err);
            }
            // A whole line in the reader's buffer is parsed where it lies:
            // no copy.
            match self.reader.fill_buf() {
                Ok(buf) => match memchr(b'\n', buf) {
                    Some(end) if end < MAX_LINE_BYTES => {
                        self.lines.line(&buf[..=end], false);
                        self.reader.consume(end + 1);
                        continue;
                    }
                    _ => {}
                },
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let at = self.lines.line_no + 1;
                    let error = TraceError::at_line(&self.lines.source_name, at, e.into());
                    self.lines.fail(error);
                    continue;
                }
            }
            match read_line(&mut self.reader, &mut self.buf) {
                Ok(LineRead::End) => self.lines.done = true,
                Ok(read) => self.lines.line(&self.buf, read == LineRead::TooLong),
                Err(e) => {
                    let at = self.lines.line_no + 1;
                    let error = TraceError::at_line(&self.lines.source_name, at, e.into());
                    self.lines.fail(error);
                }
            }
        }
    }
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b.len() - trim_start(b).len();
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

fn bad(why: &str, text: &[u8]) -> TraceErrorKind {
    let shown = &text[..text.len().min(120)];
    TraceErrorKind::Parse {
        why: why.to_string(),
        text: String::from_utf8_lossy(shown).into_owned(),
    }
}

/// [`parse_uint`] of at most 20 digits; under 20 no overflow is possible,
/// so the loop checks nothing but the digits.
#[inline(always)]
fn digits(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() >= 20 {
        return if b.len() == 20 { parse_uint(b) } else { None };
    }
    // One test at the end rather than a branch per digit: a non-digit
    // makes the (wrapping) value meaningless and the answer None.
    let mut v: u64 = 0;
    let mut all_digits = true;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        all_digits &= d <= 9;
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
    }
    all_digits.then_some(v)
}

/// Eight bytes of `b` from `at` as a little-endian word.
#[inline(always)]
fn word(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Each byte of the word `1`.
const ONES: u64 = 0x0101_0101_0101_0101;

/// Where `c` first is in `b`, eight bytes at a time (the spans searched
/// within a line are short: memchr pays for itself on the whole line only).
#[inline]
fn find(b: &[u8], c: u8) -> Option<usize> {
    let pattern = ONES * u64::from(c);
    let mut at = 0;
    while at + 8 <= b.len() {
        let x = word(b, at) ^ pattern;
        // The lowest byte flagged is the first zero byte of x (a borrow can
        // flag only bytes above a zero one).
        let zero = x.wrapping_sub(ONES) & !x & (ONES << 7);
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    b[at..].iter().position(|&x| x == c).map(|p| p + at)
}

/// `b` without its trailing whitespace.
#[inline]
fn trim_end(b: &[u8]) -> &[u8] {
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(0, |e| e + 1);
    &b[..end]
}

/// Split `TASK-PID [CPU] FLAGS TIME: TRACEPOINT: FIELDS` of a trimmed line
/// (so a prefix of it needs trimming at its end only, a suffix at its
/// start only).
fn parse_line(text: &[u8]) -> Result<Line<'_>, TraceErrorKind> {
    // The CPU column: the first " [digits]" preceded by "-digits".
    let mut at = 0;
    let (task, pid, cpu, after) = loop {
        let Some(open) = find(&text[at..], b'[').map(|p| p + at) else {
            return Err(bad("no '[CPU]' column after TASK-PID", text));
        };
        at = open + 1;
        let Some(close) = find(&text[open..], b']').map(|p| p + open) else {
            continue;
        };
        let Some(cpu) = digits(&text[open + 1..close]) else {
            continue;
        };
        let head = trim_end(&text[..open]);
        if head.len() == text[..open].len() {
            continue; // no space before '['
        }
        let Some(dash) = head.iter().rposition(|&c| c == b'-') else {
            continue;
        };
        let Some(pid) = digits(&head[dash + 1..]) else {
            continue;
        };
        let (Ok(pid), Ok(cpu)) = (u32::try_from(pid), u32::try_from(cpu)) else {
            continue;
        };
        break (&head[..dash], pid, cpu, &text[close + 1..]);
    };
    let mut rest = trim_start(after);
    // Optional flags column, then "SECONDS.FRACTION:".
    let first_end = rest.iter().position(|c| c.is_ascii_whitespace());
    let Some(first_end) = first_end else {
        return Err(bad("no timestamp", text));
    };
    if !rest[..first_end].ends_with(b":") {
        rest = trim_start(&rest[first_end..]);
    }
    let Some(colon) = find(rest, b':') else {
        return Err(bad("no timestamp", text));
    };
    let time = parse_time(&rest[..colon]).ok_or_else(|| bad("bad timestamp", text))?;
    rest = trim_start(&rest[colon + 1..]);
    let Some(colon) = find(rest, b':') else {
        return Err(bad("no tracepoint name", text));
    };
    let tracepoint = &rest[..colon];
    let fields = trim_start(&rest[colon + 1..]);
    Ok(Line {
        task,
        pid,
        cpu,
        time,
        tracepoint,
        fields,
    })
}

/// `SECONDS.FRACTION` (any number of fraction digits, up to 9) in ns.
fn parse_time(b: &[u8]) -> Option<u64> {
    /// The scale of a fraction of `n` digits, in ns.
    const SCALE: [u64; 10] = [
        1_000_000_000,
        100_000_000,
        10_000_000,
        1_000_000,
        100_000,
        10_000,
        1_000,
        100,
        10,
        1,
    ];
    let (secs, frac) = match find(b, b'.') {
        Some(dot) => (&b[..dot], &b[dot + 1..]),
        None => (b, &b[..0]),
    };
    let scale = *SCALE.get(frac.len())?;
    let ns = if frac.is_empty() { 0 } else { digits(frac)? };
    digits(secs)?
        .checked_mul(1_000_000_000)?
        .checked_add(ns * scale)
}

/// The `[COMM]` of a bio or plug event, for a task printed as `<...>`.
fn bracketed_comm(fields: &[u8]) -> Option<&[u8]> {
    let open = fields.iter().position(|&c| c == b'[')?;
    let close = fields.iter().rposition(|&c| c == b']')?;
    let comm = fields.get(open + 1..close)?;
    (digits(comm).is_none() && !comm.is_empty()).then_some(comm)
}

/// Whitespace-separated tokens of `b`, without allocating.
struct Tokens<'a> {
    b: &'a [u8],
}

impl<'a> Tokens<'a> {
    fn next_token(&mut self) -> Option<&'a [u8]> {
        let b = trim_start(self.b);
        if b.is_empty() {
            return None;
        }
        let end = b
            .iter()
            .position(|c| c.is_ascii_whitespace())
            .unwrap_or(b.len());
        self.b = &b[end..];
        Some(&b[..end])
    }

    /// Skip a parenthesised command `( ... )`, which may hold spaces.
    fn skip_cmd(&mut self) -> bool {
        let b = trim_start(self.b);
        if b.first() != Some(&b'(') {
            return false;
        }
        match b.iter().position(|&c| c == b')') {
            Some(close) => {
                self.b = &b[close + 1..];
                true
            }
            None => false,
        }
    }
}

/// `b` without its leading whitespace (runs of spaces, as tracefs pads its
/// columns with, passed eight at a time).
fn trim_start(b: &[u8]) -> &[u8] {
    let spaces = ONES * u64::from(b' ');
    let mut at = 0;
    while at + 8 <= b.len() && word(b, at) == spaces {
        at += 8;
    }
    let start = b[at..]
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .map_or(b.len(), |p| p + at);
    &b[start..]
}

fn device(tok: Option<&[u8]>) -> Option<DevT> {
    let tok = tok?;
    let comma = tok.iter().position(|&c| c == b',')?;
    let major = u32::try_from(digits(&tok[..comma])?).ok()?;
    let minor = u32::try_from(digits(&tok[comma + 1..])?).ok()?;
    Some(dev_t(major, minor))
}

fn rwbs_of(tok: Option<&[u8]>, bytes: u64) -> Option<(Op, BioFlags)> {
    parse_rwbs_bytes(tok?, bytes)
}

/// `SECTOR + NR`, as stated (checked by [`Extent::place`]).
fn range(t: &mut Tokens<'_>) -> Option<Extent> {
    let sector = digits(t.next_token()?)?;
    if t.next_token()? != b"+" {
        return None;
    }
    let sectors = digits(t.next_token()?)?;
    Some(Extent::Sectors { sector, sectors })
}

/// The action of tracepoint `name` (the names of
/// [`TraceAction::tracepoint`], matched by their length and text).
fn action_of(name: &[u8]) -> Option<TraceAction> {
    Some(match name.strip_prefix(b"block_")? {
        b"bio_queue" => TraceAction::Queue,
        b"split" => TraceAction::Split,
        b"bio_backmerge" => TraceAction::BackMerge,
        b"bio_frontmerge" => TraceAction::FrontMerge,
        b"rq_merge" => TraceAction::RqMerge,
        b"getrq" => TraceAction::GetRq,
        b"rq_insert" => TraceAction::Insert,
        b"rq_issue" => TraceAction::Issue,
        b"rq_complete" => TraceAction::Complete,
        b"rq_requeue" => TraceAction::Requeue,
        b"plug" => TraceAction::Plug,
        b"unplug" => TraceAction::Unplug,
        _ => return None,
    })
}

/// The record a parsed line holds (`None` for tracepoints passed over).
fn record_of(line: &Line<'_>) -> Result<Option<Record>, TraceErrorKind> {
    let Some(action) = action_of(line.tracepoint) else {
        let name = String::from_utf8_lossy(line.tracepoint);
        if PASSED_OVER.contains(&name.as_ref()) {
            return Ok(None);
        }
        return Err(TraceErrorKind::UnknownEvent(name.into_owned()));
    };
    let fields = line.fields;
    let fail = |why: &str| bad(why, fields);
    let pid = line.pid;
    let mut t = Tokens { b: fields };
    let ev = match action {
        TraceAction::Plug | TraceAction::Unplug => {
            let mut depth = 0;
            if action == TraceAction::Unplug {
                let last = fields
                    .iter()
                    .rposition(|&c| c == b']')
                    .map_or(fields, |p| trim_start(&fields[p + 1..]));
                depth = digits(last).ok_or_else(|| fail("unplug without a depth"))?;
            }
            let mut e = TraceEvent::plug(action, line.time, elevator_core::IoContext(pid), depth);
            e.time = line.time;
            return Ok(Some(Record::new(e, line.cpu, 0)));
        }
        TraceAction::Queue
        | TraceAction::BackMerge
        | TraceAction::FrontMerge
        | TraceAction::GetRq => {
            let dev = device(t.next_token()).ok_or_else(|| fail("bad device"))?;
            let rwbs = t.next_token();
            let extent = range(&mut t).ok_or_else(|| fail("expected SECTOR + NR"))?;
            let (op, flags) = rwbs_of(rwbs, sectors_of(extent)).ok_or_else(|| fail("bad rwbs"))?;
            (
                dev,
                traced_event(line.time, action, op, flags, extent, pid)?,
            )
        }
        TraceAction::Split => {
            let dev = device(t.next_token()).ok_or_else(|| fail("bad device"))?;
            let rwbs = t.next_token();
            let sector = t.next_token().and_then(digits);
            let slash = t.next_token();
            let new = t.next_token().and_then(digits);
            let (Some(sector), Some(b"/"), Some(new)) = (sector, slash, new) else {
                return Err(fail("expected SECTOR / NEW_SECTOR"));
            };
            let (op, flags) = rwbs_of(rwbs, 1).ok_or_else(|| fail("bad rwbs"))?;
            let extent = Extent::Split {
                sector,
                new_sector: new,
            };
            (
                dev,
                traced_event(line.time, action, op, flags, extent, pid)?,
            )
        }
        TraceAction::Insert | TraceAction::Issue | TraceAction::RqMerge => {
            let dev = device(t.next_token()).ok_or_else(|| fail("bad device"))?;
            let rwbs = t.next_token();
            t.next_token()
                .and_then(digits)
                .ok_or_else(|| fail("expected BYTES"))?;
            if !t.skip_cmd() {
                return Err(fail("expected (CMD)"));
            }
            let extent = range(&mut t).ok_or_else(|| fail("expected SECTOR + NR"))?;
            let (op, flags) = rwbs_of(rwbs, sectors_of(extent)).ok_or_else(|| fail("bad rwbs"))?;
            (
                dev,
                traced_event(line.time, action, op, flags, extent, pid)?,
            )
        }
        TraceAction::Complete | TraceAction::Requeue => {
            let dev = device(t.next_token()).ok_or_else(|| fail("bad device"))?;
            let rwbs = t.next_token();
            if !t.skip_cmd() {
                return Err(fail("expected (CMD)"));
            }
            let extent = range(&mut t).ok_or_else(|| fail("expected SECTOR + NR"))?;
            let (op, flags) = rwbs_of(rwbs, sectors_of(extent)).ok_or_else(|| fail("bad rwbs"))?;
            let mut e = traced_event(line.time, action, op, flags, extent, pid)?;
            // The last "[N]" is the error (negative errno or 0).
            if let Some(open) = fields.iter().rposition(|&c| c == b'[') {
                let inner = trim_start(&fields[open + 1..]);
                let inner = inner.strip_suffix(b"]").unwrap_or(inner);
                let num = inner.strip_prefix(b"-").unwrap_or(inner);
                e.error = digits(num)
                    .and_then(|v| i32::try_from(v).ok())
                    .ok_or_else(|| fail("bad error field"))?;
            }
            (dev, e)
        }
    };
    Ok(Some(Record::new(ev.1, line.cpu, ev.0)))
}

/// The stated length in sectors (for rwbs: a flush has none).
fn sectors_of(extent: Extent) -> u64 {
    match extent {
        Extent::Sectors { sectors, .. } => sectors,
        _ => 1,
    }
}

#[cfg(test)]
mod tests;
