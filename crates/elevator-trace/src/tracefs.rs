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

use std::io::BufRead;

use elevator_core::{BioFlags, Op, TraceAction, TraceEvent};

use crate::error::{TraceError, TraceErrorKind};
use crate::fast_hash::IntMap;
use crate::record::{
    DevT, Extent, Item, MAX_NAMED_PROCESSES, Record, dev_t, parse_rwbs, process_name, traced_event,
};
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
    source_name: String,
    skip_bad: bool,
    skipped: u64,
    line_no: u64,
    buf: Vec<u8>,
    /// Pids seen, and whether the name given for them was a real one (at
    /// most [`MAX_NAMED_PROCESSES`]).
    named: IntMap<u32, bool>,
    /// A record waiting behind the process item announcing its pid.
    pending: Option<Record>,
    /// The time of the last record read: tracefs prints events in time
    /// order (trace_pipe merges the CPUs' buffers), so one earlier than
    /// this is a damaged or spliced trace.
    last_time: u64,
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
    /// instead of ending the read with an error.
    pub fn new(reader: R, source_name: &str, skip_bad: bool) -> TracefsReader<R> {
        TracefsReader {
            reader,
            source_name: source_name.to_string(),
            skip_bad,
            skipped: 0,
            line_no: 0,
            buf: Vec::with_capacity(256),
            named: IntMap::default(),
            pending: None,
            last_time: 0,
            done: false,
        }
    }

    /// Lines skipped as bad.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Lines read so far.
    pub fn lines(&self) -> u64 {
        self.line_no
    }

    /// The process item to emit before `record` of task `task`, if any.
    fn name_for(&mut self, pid: u32, task: &[u8], fields: &[u8], time: u64) -> Option<Item> {
        let mut name = task;
        let mut real = task != b"<...>";
        if !real && let Some(comm) = bracketed_comm(fields) {
            name = comm;
            real = true;
        }
        match self.named.get(&pid) {
            Some(true) => None,
            Some(false) if !real => None,
            known => {
                if known.is_none() && self.named.len() >= MAX_NAMED_PROCESSES {
                    self.named.clear();
                }
                self.named.insert(pid, real);
                Some(Item::Process {
                    pid,
                    name: process_name(name),
                    time,
                })
            }
        }
    }
}

impl<R: BufRead> Iterator for TracefsReader<R> {
    type Item = Result<Item, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(r) = self.pending.take() {
            return Some(Ok(Item::Record(r)));
        }
        loop {
            if self.done {
                return None;
            }
            let too_long = match read_line(&mut self.reader, &mut self.buf) {
                Ok(LineRead::End) => {
                    self.done = true;
                    return None;
                }
                Ok(read) => read == LineRead::TooLong,
                Err(e) => {
                    self.done = true;
                    return Some(Err(TraceError::at_line(
                        &self.source_name,
                        self.line_no + 1,
                        TraceErrorKind::Io(e),
                    )));
                }
            };
            self.line_no += 1;
            let buf = std::mem::take(&mut self.buf);
            let text = trim(&buf);
            let parsed = if too_long {
                Err(TraceErrorKind::LineTooLong(MAX_LINE_BYTES))
            } else if text.is_empty() || text[0] == b'#' {
                Ok(None)
            } else {
                parse_line(text).and_then(|line| {
                    let record = record_of(&line)?;
                    Ok(record.map(|r| (r, line.pid, line.task, line.fields, line.time)))
                })
            };
            let last_time = self.last_time;
            let parsed = parsed.and_then(|p| match p {
                Some((_, _, _, _, time)) if time < last_time => Err(TraceErrorKind::TimeOrder {
                    time,
                    previous: last_time,
                }),
                other => Ok(other),
            });
            let out = match parsed {
                Ok(None) => None,
                Ok(Some((record, pid, task, fields, time))) => {
                    self.last_time = time;
                    let item = self.name_for(pid, task, fields, time);
                    match item {
                        Some(item) => {
                            self.pending = Some(record);
                            Some(Ok(item))
                        }
                        None => Some(Ok(Item::Record(record))),
                    }
                }
                Err(kind) if self.skip_bad => {
                    let _ = kind;
                    self.skipped += 1;
                    None
                }
                Err(kind) => {
                    self.done = true;
                    Some(Err(TraceError::at_line(
                        &self.source_name,
                        self.line_no,
                        kind,
                    )))
                }
            };
            self.buf = buf;
            if out.is_some() {
                return out;
            }
        }
    }
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
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

/// [`parse_uint`] of at most 20 digits.
fn digits(b: &[u8]) -> Option<u64> {
    if b.len() > 20 {
        return None;
    }
    parse_uint(b)
}

/// Split `TASK-PID [CPU] FLAGS TIME: TRACEPOINT: FIELDS`.
fn parse_line(text: &[u8]) -> Result<Line<'_>, TraceErrorKind> {
    // The CPU column: the first " [digits]" preceded by "-digits".
    let mut at = 0;
    let (task, pid, cpu, after) = loop {
        let Some(open) = text[at..].iter().position(|&c| c == b'[').map(|p| p + at) else {
            return Err(bad("no '[CPU]' column after TASK-PID", text));
        };
        at = open + 1;
        let Some(close) = text[open..]
            .iter()
            .position(|&c| c == b']')
            .map(|p| p + open)
        else {
            continue;
        };
        let Some(cpu) = digits(&text[open + 1..close]) else {
            continue;
        };
        let head = trim(&text[..open]);
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
    let mut rest = trim(after);
    // Optional flags column, then "SECONDS.FRACTION:".
    let first_end = rest.iter().position(|c| c.is_ascii_whitespace());
    let Some(first_end) = first_end else {
        return Err(bad("no timestamp", text));
    };
    if !rest[..first_end].ends_with(b":") {
        rest = trim(&rest[first_end..]);
    }
    let Some(colon) = rest.iter().position(|&c| c == b':') else {
        return Err(bad("no timestamp", text));
    };
    let time = parse_time(&rest[..colon]).ok_or_else(|| bad("bad timestamp", text))?;
    rest = trim(&rest[colon + 1..]);
    let Some(colon) = rest.iter().position(|&c| c == b':') else {
        return Err(bad("no tracepoint name", text));
    };
    let tracepoint = &rest[..colon];
    let fields = trim(&rest[colon + 1..]);
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
    let (secs, frac) = match b.iter().position(|&c| c == b'.') {
        Some(dot) => (&b[..dot], &b[dot + 1..]),
        None => (b, &b[..0]),
    };
    if frac.len() > 9 {
        return None;
    }
    let mut ns = if frac.is_empty() { 0 } else { digits(frac)? };
    for _ in frac.len()..9 {
        ns *= 10;
    }
    digits(secs)?.checked_mul(1_000_000_000)?.checked_add(ns)
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

fn trim_start(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
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
    parse_rwbs(std::str::from_utf8(tok?).ok()?, bytes)
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

fn action_of(name: &[u8]) -> Option<TraceAction> {
    TraceAction::ALL
        .into_iter()
        .find(|a| a.tracepoint().as_bytes() == name)
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
                    .map_or(fields, |p| trim(&fields[p + 1..]));
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
                let inner = trim(&fields[open + 1..]);
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
