//! blkparse's default text output: [`BlkparseReader`] reads it,
//! [`TextWriter`] prints what `blkparse -i` prints for the same events.
//!
//! A line is a header, `%3d,%-3d %2d %8d %5d.%09d %5d %2s %3s` (device
//! major,minor; CPU; per-CPU sequence; seconds.nanoseconds since the first
//! event; pid; action letters; rwbs), then by action:
//!
//! | action            | rest of the line                                   |
//! |-------------------|----------------------------------------------------|
//! | Q M F G I D       | `sector + blocks [comm]`, or `[comm]` with no data |
//! | C R               | `sector + blocks [error]`, or `sector [error]`     |
//! | X                 | `sector / new_sector [comm]`                       |
//! | P                 | `[comm]`                                           |
//! | U UT              | `[comm] depth`                                     |
//!
//! Read as well: passthrough `D`/`I` lines (`bytes (cdb) [comm]`), sleep,
//! bounce and remap lines (dropped and counted in
//! [`BlkparseReader::ignored`]); `m N` message lines and blank lines
//! (skipped); the `CPU0 (name):` summary that ends blkparse's output (the
//! end of the events). The error of a completion is printed as blkparse
//! prints it, the kernel's negative errno in 16 bits (`[65531]` for -5).
//!
//! The reader holds one line (at most
//! [`crate::text_fields::MAX_LINE_BYTES`]) and the name last seen for each
//! process (cut at [`crate::record::MAX_NAME_BYTES`], for at most
//! [`MAX_NAMED_PROCESSES`] processes: past that it forgets them and names
//! each again when next seen).
//!
//! blkparse merges the per-CPU files by time, but its output can still be a
//! little out of time order across CPUs (read from a pipe, it sorts what it
//! has read so far): the reader puts lines back in time order within its
//! reorder window ([`crate::reorder`];
//! [`BlkparseReader::with_reorder_window`], strict unless given one) and
//! refuses, naming both lines, one that falls outside it.
//!
//! Text holds less than the binary format: times are relative to the first
//! event (the origin is lost); data-less events other than C/R and X print
//! no sector; sizes are in 512-byte blocks; a split prints no size (read
//! back as the piece before the cut, `(new - sector) * 512`, as the kernel's
//! `block_split` records it); a process without a notify record prints as
//! `(null)`.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use elevator_core::{BioFlags, Op, TraceAction};

use crate::blktrace::{action_word, category};
use crate::error::{BadLine, TraceError, TraceErrorKind};
use crate::record::{
    Extent, Item, MAX_NAMED_PROCESSES, Record, dev_t, item_reader, name_prefix, parse_rwbs,
    process_name, traced_event,
};
use crate::reorder::{Reorder, ReorderStats, ReorderWindow};
use crate::sink::TraceSink;
use crate::text_fields::{
    Fields, LineRead, MAX_LINE_BYTES, parse_seconds, parse_uint, push_right, push_uint,
    push_uint_left, push_uint_zeros, read_line,
};

/// How blkparse names a process it has no notify record for.
const NO_NAME: &str = "(null)";

/// Streams the events of blkparse's default output, one line at a time.
pub struct BlkparseReader<R: BufRead> {
    input: R,
    line: Vec<u8>,
    source_name: String,
    skip_bad: bool,
    skipped: u64,
    ignored: u64,
    lines: u64,
    names: HashMap<u32, String>,
    /// The items read, put back in time order.
    reorder: Reorder,
    /// No more lines are read: the end, or `failure`.
    ended: bool,
    /// The error that ends the read, given once the items before it are.
    failure: Option<TraceError>,
    done: bool,
}

/// What one line held.
enum Line {
    /// An event, and the process name its line gave (if any).
    Event(Record, Option<(usize, usize)>),
    /// Nothing to replay (blank, message, passthrough, remap...).
    Nothing,
    /// Something elevator drops but counts.
    Ignored,
    /// The summary: the events are over.
    End,
}

impl<R: BufRead> BlkparseReader<R> {
    /// A reader of `input`, named `source_name` in errors. With `skip_bad`,
    /// lines that do not parse are counted ([`BlkparseReader::skipped`])
    /// instead of ending the read with an error. Strict about time order:
    /// [`BlkparseReader::with_reorder_window`] gives a window.
    pub fn new(input: R, source_name: &str, skip_bad: bool) -> BlkparseReader<R> {
        BlkparseReader {
            input,
            line: Vec::with_capacity(256),
            source_name: source_name.to_string(),
            skip_bad,
            skipped: 0,
            ignored: 0,
            lines: 0,
            names: HashMap::new(),
            reorder: Reorder::new(ReorderWindow::STRICT),
            ended: false,
            failure: None,
            done: false,
        }
    }

    /// The same reader, putting lines back in time order within `window`
    /// (given before the first item is read).
    pub fn with_reorder_window(mut self, window: ReorderWindow) -> BlkparseReader<R> {
        self.reorder.set_window(window);
        self
    }

    /// What the reorder window did so far.
    pub fn reordered(&self) -> ReorderStats {
        self.reorder.stats()
    }

    /// Bad lines skipped (with `skip_bad`).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Lines of actions not replayed (sleep, bounce, remap, passthrough).
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    fn error(&self, kind: TraceErrorKind) -> TraceError {
        TraceError::at_line(&self.source_name, self.lines, kind)
    }

    fn parse_error(&self, why: &str) -> TraceError {
        let text = String::from_utf8_lossy(&self.line[..self.line.len().min(120)]);
        self.error(TraceErrorKind::Parse {
            why: why.to_string(),
            text: text.trim_end().to_string(),
        })
    }

    /// Read the next item, in time order: `Ok(None)` at the end.
    fn read_item(&mut self) -> Result<Option<Item>, TraceError> {
        loop {
            if let Some(item) = self.reorder.pop_ready() {
                return Ok(Some(item));
            }
            if self.ended {
                if let Some(item) = self.reorder.pop_any() {
                    return Ok(Some(item));
                }
                return self.failure.take().map_or(Ok(None), Err);
            }
            match self.read_line_items() {
                Ok(true) => {}
                Ok(false) => self.ended = true,
                // Skipped by the caller, which counts it.
                Err(e) if self.skip_bad && !matches!(e.kind, TraceErrorKind::Io(_)) => {
                    return Err(e);
                }
                Err(e) => {
                    self.ended = true;
                    self.failure = Some(e);
                }
            }
        }
    }

    /// Read lines up to the next that gives items, into the reorder
    /// buffer: `Ok(false)` at the end.
    fn read_line_items(&mut self) -> Result<bool, TraceError> {
        loop {
            let read = read_line(&mut self.input, &mut self.line)
                .map_err(|e| TraceError::at_line(&self.source_name, self.lines + 1, e.into()))?;
            if read == LineRead::End {
                return Ok(false);
            }
            self.lines += 1;
            if read == LineRead::TooLong {
                return Err(self.error(TraceErrorKind::LineTooLong(MAX_LINE_BYTES)));
            }
            let parsed = parse_line(&self.line).map_err(|bad| match bad {
                BadLine::Text(why) => self.parse_error(why),
                BadLine::Range(refusal) => self.error(refusal.into()),
            });
            match parsed? {
                Line::Nothing => continue,
                Line::Ignored => {
                    self.ignored += 1;
                    continue;
                }
                Line::End => return Ok(false),
                Line::Event(record, comm) => {
                    self.check_order(&record)?;
                    if let Some(item) = self.name_item(&record, comm) {
                        self.reorder.push(self.lines, item);
                    }
                    self.reorder.push(self.lines, Item::Record(record));
                    return Ok(true);
                }
            }
        }
    }

    /// The process item naming `record`'s pid from its line's `comm`, if
    /// it is new.
    fn name_item(&mut self, record: &Record, comm: Option<(usize, usize)>) -> Option<Item> {
        let (from, to) = comm?;
        let name = &self.line[from..to];
        if name == NO_NAME.as_bytes() {
            return None;
        }
        let pid = record.pid();
        let known = self.names.get(&pid).map(String::as_bytes);
        if known == Some(name_prefix(name)) {
            return None;
        }
        if known.is_none() && self.names.len() >= MAX_NAMED_PROCESSES {
            self.names.clear();
        }
        let name = process_name(name);
        self.names.insert(pid, name.clone());
        Some(Item::Process {
            pid,
            name,
            time: record.event.time,
        })
    }

    /// Refuse `record` if it is further out of time order than the window
    /// puts back.
    fn check_order(&mut self, record: &Record) -> Result<(), TraceError> {
        let time = record.event.time;
        self.reorder.check(time, self.lines).map_err(|refusal| {
            let previous = self.reorder.refused_against(&refusal);
            self.error(TraceErrorKind::TimeOrder {
                time,
                previous,
                window: Some(refusal),
            })
        })
    }
}

item_reader!(BlkparseReader<R: BufRead>);

/// Whether `line` starts blkparse's summary (`CPU0 (name):`, `Total (name):`).
fn is_summary(line: &[u8]) -> bool {
    let mut f = Fields::new(line);
    let w = f.word();
    let cpu = w.len() > 3 && w.starts_with(b"CPU") && parse_uint(&w[3..]).is_some();
    (cpu || w == b"Total") && f.peek() == Some(b'(')
}

/// Whether the first non-blank line of a text looks like blkparse's.
pub fn looks_like(line: &[u8]) -> bool {
    // A line whose range is refused is still blkparse's (and refused as
    // such, with its line number).
    matches!(
        parse_line(line),
        Ok(Line::Event(..) | Line::Ignored) | Err(BadLine::Range(_))
    ) || is_summary(line)
}

/// `[text]` at the start of `rest`: the text's range in the line.
fn bracketed(line: &[u8], rest: &[u8]) -> Option<(usize, usize)> {
    let start = line.len() - rest.len();
    if rest.first() != Some(&b'[') {
        return None;
    }
    let close = rest.iter().rposition(|&c| c == b']')?;
    Some((start + 1, start + close))
}

fn parse_line(line: &[u8]) -> Result<Line, BadLine> {
    let mut f = Fields::new(line);
    let line = f.line();
    if f.at_end() {
        return Ok(Line::Nothing);
    }
    if is_summary(line) {
        return Ok(Line::End);
    }
    let dev = f.word();
    let comma = dev
        .iter()
        .position(|&c| c == b',')
        .ok_or("expected major,minor")?;
    let major = parse_uint(&dev[..comma]).ok_or("bad device major")?;
    let minor = parse_uint(&dev[comma + 1..]).ok_or("bad device minor")?;
    let cpu = f.uint().ok_or("bad cpu")?;
    let _sequence = f.uint().ok_or("bad sequence")?;
    let time = parse_seconds(f.word()).ok_or("bad time")?;
    let pid = f.uint().ok_or("bad pid")?;
    let letters = f.word();
    let rwbs_text = f.word();
    let rwbs_str = std::str::from_utf8(rwbs_text).map_err(|_| "bad rwbs")?;
    let action = match letters {
        b"Q" => TraceAction::Queue,
        b"M" => TraceAction::BackMerge,
        b"F" => TraceAction::FrontMerge,
        b"G" => TraceAction::GetRq,
        b"I" => TraceAction::Insert,
        b"D" => TraceAction::Issue,
        b"C" => TraceAction::Complete,
        b"R" => TraceAction::Requeue,
        b"X" => TraceAction::Split,
        b"P" => TraceAction::Plug,
        b"U" | b"UT" | b"T" => TraceAction::Unplug,
        b"m" => return Ok(Line::Nothing),
        b"S" | b"B" | b"A" => return Ok(Line::Ignored),
        _ => return Err(BadLine::Text("unknown action letters")),
    };
    if cpu > u64::from(u32::MAX) || pid > u64::from(u32::MAX) || major > 0xfff || minor > 0xfffff {
        return Err(BadLine::Text("number out of range"));
    }
    let mut extent = Extent::Sectors {
        sector: 0,
        sectors: 0,
    };
    let mut extra = 0u64;
    let mut error = 0i32;
    let mut comm = None;
    match action {
        TraceAction::Plug => comm = Some(bracketed(line, f.rest()).ok_or("expected [comm]")?),
        TraceAction::Unplug => {
            let rest = f.rest();
            let (from, to) = bracketed(line, rest).ok_or("expected [comm] depth")?;
            let mut tail = Fields::new(&line[to + 1..]);
            extra = tail.uint().ok_or("bad unplug depth")?;
            if !tail.at_end() {
                return Err(BadLine::Text("text after the unplug depth"));
            }
            comm = Some((from, to));
        }
        TraceAction::Split => {
            let sector = f.uint().ok_or("bad sector")?;
            if f.word() != b"/" {
                return Err(BadLine::Text("expected sector / new_sector"));
            }
            // The size is not printed: the piece before the cut, as the
            // kernel's block_split records it.
            let new_sector = f.uint().ok_or("bad new sector")?;
            extent = Extent::Split { sector, new_sector };
            comm = Some(bracketed(line, f.rest()).ok_or("expected [comm]")?);
        }
        _ => {
            // A passthrough request: its command (and bytes) in brackets.
            if f.peek() == Some(b'(') {
                return Ok(Line::Ignored);
            }
            if f.peek() != Some(b'[') {
                let sector = f.uint().ok_or("bad sector")?;
                let mut sectors = 0;
                match f.peek() {
                    Some(b'+') => {
                        f.word();
                        sectors = f.uint().ok_or("bad block count")?;
                        // `-t`'s elapsed time.
                        if f.peek() == Some(b'(') && !f.skip_parenthesized() {
                            return Err(BadLine::Text("unclosed ("));
                        }
                    }
                    Some(b'(') => return Ok(Line::Ignored),
                    _ => {}
                }
                extent = Extent::Sectors { sector, sectors };
            }
            let rest = f.rest();
            let (from, to) = bracketed(line, rest).ok_or("expected [comm]")?;
            if to + 1 != line.len() && !Fields::new(&line[to + 1..]).at_end() {
                return Err(BadLine::Text("text after ]"));
            }
            if matches!(action, TraceAction::Complete | TraceAction::Requeue) {
                let e = parse_uint(&line[from..to]).ok_or("bad error number")?;
                let e = u16::try_from(e).map_err(|_| "error number out of range")?;
                error = i32::from(e as i16);
            } else {
                comm = Some((from, to));
            }
        }
    }
    let (op, flags) = match extent {
        _ if matches!(action, TraceAction::Plug | TraceAction::Unplug) => {
            (Op::Write, BioFlags::NONE)
        }
        Extent::Sectors { sectors, .. } => parse_rwbs(rwbs_str, sectors).ok_or("bad rwbs")?,
        _ => parse_rwbs(rwbs_str, 1).ok_or("bad rwbs")?,
    };
    let mut event =
        traced_event(time, action, op, flags, extent, pid as u32).map_err(BadLine::Range)?;
    event.error = error;
    if extra != 0 {
        event.extra = extra;
    }
    let record = Record::new(event, cpu as u32, dev_t(major as u32, minor as u32));
    Ok(Line::Event(record, comm))
}

/// blkparse's rwbs for an event: from its action word's categories and its
/// size, as blkparse derives it (`F` preflush, `D`/`W`/`R`/`N`, `F` FUA,
/// `A` readahead, `S` sync, `M` metadata).
fn blkparse_rwbs(word: u32, bytes: u32, out: &mut [u8; 8]) -> usize {
    let cats = word >> 16;
    let mut n = 0;
    let mut put = |c: u8| {
        out[n] = c;
        n += 1;
    };
    if cats & category::FLUSH != 0 {
        put(b'F');
    }
    put(if cats & category::DISCARD != 0 {
        b'D'
    } else if cats & category::WRITE != 0 {
        b'W'
    } else if bytes > 0 {
        b'R'
    } else {
        b'N'
    });
    if cats & category::FUA != 0 {
        put(b'F');
    }
    if cats & category::AHEAD != 0 {
        put(b'A');
    }
    if cats & category::SYNC != 0 {
        put(b'S');
    }
    if cats & category::META != 0 {
        put(b'M');
    }
    n
}

/// Writes events as blkparse's default output (the event lines, not its
/// summary). Times are printed from the first event's.
pub struct TextWriter<W: Write> {
    out: W,
    line: Vec<u8>,
    genesis: Option<u64>,
    sequence: Vec<u32>,
    names: HashMap<u32, String>,
    written: u64,
}

impl<W: Write> TextWriter<W> {
    /// A writer onto `out` (buffer it).
    pub fn new(out: W) -> TextWriter<W> {
        TextWriter {
            out,
            line: Vec::with_capacity(128),
            genesis: None,
            sequence: Vec::new(),
            names: HashMap::new(),
            written: 0,
        }
    }

    /// Events written.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> TraceSink for TextWriter<W> {
    fn record(&mut self, record: &Record) -> io::Result<()> {
        let e = &record.event;
        let genesis = *self.genesis.get_or_insert(e.time);
        let slot = (record.cpu as usize).min(1 << 16);
        if self.sequence.len() <= slot {
            self.sequence.resize(slot + 1, 0);
        }
        self.sequence[slot] = self.sequence[slot].wrapping_add(1);
        let l = &mut self.line;
        l.clear();
        push_uint(l, u64::from(record.dev >> 20), 3);
        l.push(b',');
        push_uint_left(l, u64::from(record.dev & 0xfffff), 3);
        l.push(b' ');
        push_uint(l, u64::from(record.cpu), 2);
        l.push(b' ');
        push_uint(l, u64::from(self.sequence[slot]), 8);
        l.push(b' ');
        let t = e.time.saturating_sub(genesis);
        push_uint(l, t / 1_000_000_000, 5);
        l.push(b'.');
        push_uint_zeros(l, t % 1_000_000_000, 9);
        l.push(b' ');
        push_uint(l, u64::from(e.ctx.0), 5);
        l.push(b' ');
        let letter = [e.action.letter() as u8];
        push_right(l, &letter, 2);
        l.push(b' ');
        let mut rwbs = [0u8; 8];
        let n = blkparse_rwbs(action_word(e.action, e.op, e.flags), e.bytes, &mut rwbs);
        push_right(l, &rwbs[..n], 3);
        l.push(b' ');
        let name = self.names.get(&e.ctx.0).map_or(NO_NAME, String::as_str);
        let comm = |l: &mut Vec<u8>| {
            l.push(b'[');
            l.extend_from_slice(name.as_bytes());
            l.push(b']');
        };
        match e.action {
            TraceAction::Plug => comm(l),
            TraceAction::Unplug => {
                comm(l);
                l.push(b' ');
                push_uint(l, e.extra, 0);
            }
            TraceAction::Split => {
                push_uint(l, e.sector, 0);
                l.extend_from_slice(b" / ");
                push_uint(l, e.extra, 0);
                l.push(b' ');
                comm(l);
            }
            TraceAction::Complete | TraceAction::Requeue => {
                push_uint(l, e.sector, 0);
                if e.bytes > 0 {
                    l.extend_from_slice(b" + ");
                    push_uint(l, u64::from(e.bytes >> 9), 0);
                }
                l.extend_from_slice(b" [");
                push_uint(l, u64::from(e.error as u16), 0);
                l.push(b']');
            }
            _ => {
                if e.bytes > 0 {
                    push_uint(l, e.sector, 0);
                    l.extend_from_slice(b" + ");
                    push_uint(l, u64::from(e.bytes >> 9), 0);
                    l.push(b' ');
                }
                comm(l);
            }
        }
        l.push(b'\n');
        self.written += 1;
        self.out.write_all(&self.line)
    }

    fn process(&mut self, pid: u32, name: &str, _time: u64) -> io::Result<()> {
        if self.names.get(&pid).map(String::as_str) != Some(name) {
            // The kernel's comm is 15 bytes; blkparse prints what it holds.
            let end = (0..=name.len().min(15))
                .rev()
                .find(|&i| name.is_char_boundary(i))
                .unwrap_or(0);
            self.names.insert(pid, name[..end].to_string());
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<Result<Item, TraceError>> {
        BlkparseReader::new(text.as_bytes(), "t", false).collect()
    }

    #[test]
    fn reads_every_line_kind() {
        let text = "  8,0    1        1     0.000000000  1234  Q  WS 123456 + 8 [my prog]\n\
                    \n  8,0    1        2     0.000001000  1234  X  WS 123456 / 123460 [my prog]\n\
                      8,0    1        3     0.000002000  1234  U   N [my prog] 3\n\
                      8,0    1        4     0.000003000  1234 UT   N [my prog] 1\n\
                      8,0    1        5     0.000004000     0  C  WS 123456 + 8 [65531]\n\
                      8,0    1        0     0.000004000     0  m   N cfq1234 idle\n\
                      8,0    1        6     0.000005000  1234  D   R 8 (12 00) [my prog]\n\
                      8,0    1        7     0.000006000  1234  Q  FN [my prog]\n\
                      8,0    1        8     0.000007000  1234  C   R (12 00) [0]\n\
                      8,0    1        9     0.000008000  1234  C   R 8 + 8 (    1234) [0]\n\
                      8,0    1       10     0.000009000  1234  A   R 8 + 8 <- (8,1) 0\n\
                    CPU1 (sda):\n Reads Queued: 1\n";
        let items: Vec<Item> = read(text).into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(items.len(), 8);
        assert!(
            matches!(&items[0], Item::Process { pid: 1234, name, time: 0 } if name == "my prog")
        );
        let Item::Record(q) = items[1] else { panic!() };
        assert_eq!(
            (q.event.sector, q.event.bytes, q.cpu, q.dev),
            (123456, 4096, 1, dev_t(8, 0))
        );
        assert_eq!((q.event.op, q.event.flags), (Op::Write, BioFlags::SYNC));
        let Item::Record(x) = items[2] else { panic!() };
        assert_eq!(
            (x.event.action, x.event.extra),
            (TraceAction::Split, 123460)
        );
        let Item::Record(u) = items[4] else { panic!() };
        assert_eq!(
            (u.event.action, u.event.extra, u.event.time),
            (TraceAction::Unplug, 1, 3000)
        );
        let Item::Record(c) = items[5] else { panic!() };
        assert_eq!(c.event.error, -5);
        let Item::Record(f) = items[6] else { panic!() };
        assert_eq!(f.event.op, Op::Flush);
        let Item::Record(c) = items[7] else { panic!() };
        assert_eq!((c.event.sector, c.event.bytes), (8, 4096));
        let mut r = BlkparseReader::new(text.as_bytes(), "t", false);
        assert_eq!(r.by_ref().count(), 8);
        assert_eq!(r.ignored(), 3);
    }

    #[test]
    fn bad_lines_name_their_line() {
        let ok = "  8,0    1        1     0.000000000  1234  Q  WS 1 + 8 [a]\n";
        for (bad, why) in [
            (
                "  8,0    1        2     0.000000000  1234  Z  WS 1 + 8 [a]\n",
                "unknown action",
            ),
            (
                "  8,0    1        2     0.000000000  1234  Q  WS 1 + x [a]\n",
                "bad block count",
            ),
            (
                "  8,0    1        2     0.000000000  1234  Q  WQ 1 + 8 [a]\n",
                "bad rwbs",
            ),
            ("garbage\n", "expected major,minor"),
        ] {
            let text = format!("{ok}{bad}{ok}");
            let r = read(&text);
            let e = r.iter().find_map(|r| r.as_ref().err()).unwrap();
            assert_eq!(e.place, "line 2", "{bad}");
            assert!(e.to_string().contains(why), "{e}");
            let mut skip = BlkparseReader::new(text.as_bytes(), "t", true);
            assert_eq!(skip.by_ref().filter(|r| r.is_ok()).count(), 3);
            assert_eq!(skip.skipped(), 1);
        }
        let back = "  8,0    1        1     0.000000005  1234  Q  WS 1 + 8 [a]\n  8,0    1        2     0.000000001  1234  Q  WS 1 + 8 [a]\n";
        let e = read(back).into_iter().find_map(Result::err).unwrap();
        assert_eq!(e.place, "line 2");
        assert!(matches!(e.kind, TraceErrorKind::TimeOrder { .. }));
    }
}
