//! fio's I/O logs (`write_iolog` / `read_iolog`), versions 2 and 3:
//! [`IologReader`] reads them as queue events, [`IologWriter`] writes one
//! event kind (Q by default, or D) so that `fio --read_iolog` replays it.
//!
//! The format (fio's HOWTO, "Trace file format"): a first line
//! `fio version 2 iolog` or `fio version 3 iolog`, then lines
//!
//! - v2: `FILE add|open|close` and `FILE read|write|sync|datasync|trim OFFSET
//!   LENGTH`, and `FILE wait MICROSECONDS 0`, a delay since the previous
//!   wait;
//! - v3: the same with a leading timestamp in microseconds since the start
//!   (`TIME FILE ACTION [OFFSET LENGTH]`) and no `wait`.
//!
//! Read as: each I/O a queue event (`Q`) at the log's time (v2: the sum of
//! the waits before it; v3: its timestamp), sector `OFFSET / 512`, `LENGTH`
//! bytes; `sync`/`datasync` a flush, `trim` a discard. Files map to
//! submitters: the n-th file added is I/O context n (0-based), and its
//! `add` line gives an [`Item::Process`] naming it with the file's name.
//! Everything is on CPU 0 of device 0,0.
//!
//! A header line after the first starts another log appended to the file
//! (fio appends to an existing log, and each job clone writing the same
//! file adds its own): its times follow on from the last of the log
//! before, and its files are the same I/O contexts when they have the same
//! names.
//!
//! An iolog holds less than a blktrace: one event kind only, no CPU, device,
//! flags (sync, FUA, metadata) or completion; times in microseconds; offsets
//! that are not whole sectors are rounded down. An offset and length whose
//! end is past 2^64 bytes, or a length over 4 GiB, is refused with its line
//! ([`crate::record::Extent::place`]). What a log may name is bounded: at
//! most 65536 files, names of at most 4096 bytes and 16 MiB in all, lines
//! of at most [`crate::text_fields::MAX_LINE_BYTES`].

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use elevator_core::{BioFlags, Op, TraceAction};

use crate::error::{BadLine, TraceError, TraceErrorKind};
use crate::record::{Extent, Item, Record, item_reader, traced_event};
use crate::sink::TraceSink;
use crate::text_fields::{Fields, LineRead, MAX_LINE_BYTES, parse_uint, push_uint, read_line};

/// The first line of a version 2 log.
pub const V2_HEADER: &str = "fio version 2 iolog";
/// The first line of a version 3 log.
pub const V3_HEADER: &str = "fio version 3 iolog";
/// Files one log may name (each is an I/O context).
const MAX_FILES: usize = 1 << 16;
/// The longest file name a log may give (Linux's `PATH_MAX`).
const MAX_FILE_NAME_BYTES: usize = 4096;
/// The most bytes of file names one log may give, all files together.
const MAX_NAME_BYTES_TOTAL: usize = 16 << 20;

/// An iolog version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IologVersion {
    /// Version 2: no timestamps, `wait` lines.
    V2,
    /// Version 3: a timestamp (microseconds) on every line.
    V3,
}

impl IologVersion {
    /// The version whose header `line` is, if any.
    pub fn from_header(line: &[u8]) -> Option<IologVersion> {
        let t = Fields::new(line).line();
        if t == V2_HEADER.as_bytes() {
            Some(IologVersion::V2)
        } else if t == V3_HEADER.as_bytes() {
            Some(IologVersion::V3)
        } else {
            None
        }
    }
}

/// Streams the I/Os of an iolog.
pub struct IologReader<R: BufRead> {
    input: R,
    line: Vec<u8>,
    source_name: String,
    skip_bad: bool,
    skipped: u64,
    lines: u64,
    version: Option<IologVersion>,
    files: Vec<String>,
    /// Each file's index in `files`, by name.
    file_index: HashMap<String, usize>,
    /// Bytes of the files' names.
    name_bytes: usize,
    last_file: usize,
    time: u64,
    /// Where this log's times start (a log appended after another starts
    /// at the other's last time).
    base: u64,
    done: bool,
}

/// What one line held.
enum Line {
    Io(Record),
    Added(usize),
    Nothing,
}

impl<R: BufRead> IologReader<R> {
    /// A reader of `input`, named `source_name` in errors. With `skip_bad`,
    /// lines that do not parse are counted instead of ending the read.
    pub fn new(input: R, source_name: &str, skip_bad: bool) -> IologReader<R> {
        IologReader {
            input,
            line: Vec::with_capacity(256),
            source_name: source_name.to_string(),
            skip_bad,
            skipped: 0,
            lines: 0,
            version: None,
            files: Vec::new(),
            file_index: HashMap::new(),
            name_bytes: 0,
            last_file: 0,
            time: 0,
            base: 0,
            done: false,
        }
    }

    /// Bad lines skipped (with `skip_bad`).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The version, once the header is read.
    pub fn version(&self) -> Option<IologVersion> {
        self.version
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

    fn file_index(&mut self, name: &[u8]) -> Option<usize> {
        if self.files.get(self.last_file).map(|f| f.as_bytes()) == Some(name) {
            return Some(self.last_file);
        }
        let i = *self.file_index.get(std::str::from_utf8(name).ok()?)?;
        self.last_file = i;
        Some(i)
    }

    fn parse_line(&mut self, version: IologVersion) -> Result<Line, BadLine> {
        let line = std::mem::take(&mut self.line);
        let parsed = self.parse_fields(version, &line);
        self.line = line;
        parsed
    }

    fn parse_fields(&mut self, version: IologVersion, line: &[u8]) -> Result<Line, BadLine> {
        let mut f = Fields::new(line);
        if f.at_end() {
            return Ok(Line::Nothing);
        }
        if version == IologVersion::V3 {
            let t = f.uint().ok_or("bad timestamp")?;
            let t = t
                .checked_mul(1000)
                .and_then(|t| t.checked_add(self.base))
                .ok_or("timestamp too large")?;
            if t < self.time {
                return Err(BadLine::Text("timestamp earlier than the line before"));
            }
            self.time = t;
        }
        let file = f.word();
        let action = f.word();
        let offset = f.word();
        let length = f.word();
        if !f.at_end() {
            return Err(BadLine::Text("too many fields"));
        }
        if file.is_empty() || action.is_empty() {
            return Err(BadLine::Text("expected a file and an action"));
        }
        let file_action = match action {
            b"add" | b"open" | b"close" => true,
            b"read" | b"write" | b"sync" | b"datasync" | b"trim" | b"wait" => false,
            _ => return Err(BadLine::Text("unknown action")),
        };
        if file_action {
            if !offset.is_empty() {
                return Err(BadLine::Text("too many fields for a file action"));
            }
            if action == b"add" {
                if self.file_index(file).is_some() {
                    return Ok(Line::Nothing);
                }
                if self.files.len() >= MAX_FILES {
                    return Err(BadLine::Text("too many files (more than 65536)"));
                }
                if file.len() > MAX_FILE_NAME_BYTES {
                    return Err(BadLine::Text("file name longer than 4096 bytes"));
                }
                if self.name_bytes + file.len() > MAX_NAME_BYTES_TOTAL {
                    return Err(BadLine::Text("file names add up to more than 16 MiB"));
                }
                self.name_bytes += file.len();
                let name = std::str::from_utf8(file).map_err(|_| "file name is not UTF-8")?;
                self.files.push(name.to_string());
                self.file_index
                    .insert(name.to_string(), self.files.len() - 1);
                return Ok(Line::Added(self.files.len() - 1));
            }
            self.file_index(file).ok_or("file not added")?;
            return Ok(Line::Nothing);
        }
        let (offset, len) = match (parse_uint(offset), parse_uint(length)) {
            (Some(o), Some(l)) => (o, l),
            _ if offset.is_empty() && matches!(action, b"sync" | b"datasync") => (0, 0),
            _ => return Err(BadLine::Text("expected offset and length")),
        };
        if action == b"wait" {
            if version == IologVersion::V3 {
                return Err(BadLine::Text("wait is not allowed in version 3"));
            }
            self.time = self
                .time
                .checked_add(offset.checked_mul(1000).ok_or("wait too long")?)
                .ok_or("wait too long")?;
            return Ok(Line::Nothing);
        }
        let ctx = self.file_index(file).ok_or("file not added")?;
        let (op, flags, extent) = match action {
            b"read" => (Op::Read, BioFlags::NONE, Extent::Bytes { offset, len }),
            b"write" => (Op::Write, BioFlags::NONE, Extent::Bytes { offset, len }),
            b"trim" => (Op::Discard, BioFlags::NONE, Extent::Bytes { offset, len }),
            _ => (
                Op::Flush,
                BioFlags::PREFLUSH,
                Extent::Bytes { offset: 0, len: 0 },
            ),
        };
        let event = traced_event(self.time, TraceAction::Queue, op, flags, extent, ctx as u32)
            .map_err(BadLine::Range)?;
        Ok(Line::Io(Record::new(event, 0, 0)))
    }

    fn read_item(&mut self) -> Result<Option<Item>, TraceError> {
        loop {
            let read = read_line(&mut self.input, &mut self.line)
                .map_err(|e| TraceError::at_line(&self.source_name, self.lines + 1, e.into()))?;
            if read == LineRead::End {
                return Ok(None);
            }
            self.lines += 1;
            if read == LineRead::TooLong {
                return Err(self.error(TraceErrorKind::LineTooLong(MAX_LINE_BYTES)));
            }
            let Some(version) = self.version else {
                match IologVersion::from_header(&self.line) {
                    Some(v) => {
                        self.version = Some(v);
                        continue;
                    }
                    None => {
                        self.done = true;
                        return Err(self.parse_error(
                            "expected 'fio version 2 iolog' or 'fio version 3 iolog'",
                        ));
                    }
                }
            };
            if let Some(v) = IologVersion::from_header(&self.line) {
                // Another log appended to this one.
                self.version = Some(v);
                self.base = self.time;
                continue;
            }
            match self.parse_line(version).map_err(|bad| match bad {
                BadLine::Text(why) => self.parse_error(why),
                BadLine::Range(refusal) => self.error(refusal.into()),
            })? {
                Line::Io(r) => return Ok(Some(Item::Record(r))),
                Line::Added(i) => {
                    return Ok(Some(Item::Process {
                        pid: i as u32,
                        name: self.files[i].clone(),
                        time: self.time,
                    }));
                }
                Line::Nothing => {}
            }
        }
    }
}

item_reader!(IologReader<R: BufRead>);

/// Writes one kind of event as an iolog that `fio --read_iolog` replays.
///
/// Every I/O goes to one file (the name given) unless
/// [`IologWriter::per_process_files`] is set, when each process named with
/// [`TraceSink::process`] is a file of that name (as [`IologReader`] reads
/// them). Times are written from the first event's.
pub struct IologWriter<W: Write> {
    out: W,
    version: IologVersion,
    action: TraceAction,
    default_file: String,
    per_process: bool,
    files: Vec<(u32, String)>,
    opened: Vec<bool>,
    line: Vec<u8>,
    header: bool,
    genesis: Option<u64>,
    last_us: u64,
    written: u64,
}

impl<W: Write> IologWriter<W> {
    /// A writer of `version` onto `out`, writing the events of `action`
    /// (Q or D) to `file`.
    pub fn new(out: W, version: IologVersion, action: TraceAction, file: &str) -> IologWriter<W> {
        IologWriter {
            out,
            version,
            action,
            default_file: file.to_string(),
            per_process: false,
            files: Vec::new(),
            opened: Vec::new(),
            line: Vec::with_capacity(128),
            header: false,
            genesis: None,
            last_us: 0,
            written: 0,
        }
    }

    /// Write each named process's I/O to a file of its name.
    pub fn per_process_files(mut self, on: bool) -> IologWriter<W> {
        self.per_process = on;
        self
    }

    /// I/Os written.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn start_line(&mut self, us: u64) {
        self.line.clear();
        if self.version == IologVersion::V3 {
            push_uint(&mut self.line, us, 0);
            self.line.push(b' ');
        }
    }

    fn header(&mut self) -> io::Result<()> {
        if !self.header {
            self.header = true;
            let h = match self.version {
                IologVersion::V2 => V2_HEADER,
                IologVersion::V3 => V3_HEADER,
            };
            self.out.write_all(h.as_bytes())?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The file (index into `files`) for `pid`, added and opened.
    fn file_for(&mut self, pid: u32, us: u64) -> io::Result<usize> {
        let key = if self.per_process { pid } else { u32::MAX };
        let i = match self.files.iter().position(|(p, _)| *p == key) {
            Some(i) => i,
            None => {
                self.files.push((key, self.default_file.clone()));
                self.opened.push(false);
                self.files.len() - 1
            }
        };
        if !self.opened[i] {
            self.opened[i] = true;
            for what in [&b"add"[..], b"open"] {
                self.start_line(us);
                self.line.extend_from_slice(self.files[i].1.as_bytes());
                self.line.push(b' ');
                self.line.extend_from_slice(what);
                self.line.push(b'\n');
                self.out.write_all(&self.line)?;
            }
        }
        Ok(i)
    }
}

impl<W: Write> TraceSink for IologWriter<W> {
    fn record(&mut self, record: &Record) -> io::Result<()> {
        let e = &record.event;
        if e.action != self.action {
            return Ok(());
        }
        self.header()?;
        let genesis = *self.genesis.get_or_insert(e.time);
        let us = e.time.saturating_sub(genesis) / 1000;
        let i = self.file_for(e.ctx.0, us)?;
        if self.version == IologVersion::V2 && us > self.last_us {
            self.line.clear();
            self.line.extend_from_slice(self.files[i].1.as_bytes());
            self.line.extend_from_slice(b" wait ");
            push_uint(&mut self.line, us - self.last_us, 0);
            self.line.extend_from_slice(b" 0\n");
            self.out.write_all(&self.line)?;
        }
        self.last_us = us;
        // A sector past 2^55 (a corrupt trace) has no byte offset.
        let offset = e.sector.checked_mul(512).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("sector {} has no byte offset", e.sector),
            )
        })?;
        let (action, offset, length): (&[u8], u64, u64) = match e.op {
            Op::Read => (b"read", offset, u64::from(e.bytes)),
            Op::Write | Op::WriteZeroes => (b"write", offset, u64::from(e.bytes)),
            Op::Discard => (b"trim", offset, u64::from(e.bytes)),
            Op::Flush => (b"sync", 0, 0),
        };
        self.start_line(us);
        self.line.extend_from_slice(self.files[i].1.as_bytes());
        self.line.push(b' ');
        self.line.extend_from_slice(action);
        self.line.push(b' ');
        push_uint(&mut self.line, offset, 0);
        self.line.push(b' ');
        push_uint(&mut self.line, length, 0);
        self.line.push(b'\n');
        self.written += 1;
        self.out.write_all(&self.line)
    }

    fn process(&mut self, pid: u32, name: &str, _time: u64) -> io::Result<()> {
        if self.per_process && !self.files.iter().any(|(p, _)| *p == pid) {
            self.files.push((pid, name.to_string()));
            self.opened.push(false);
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.header()?;
        for i in 0..self.files.len() {
            if self.opened[i] {
                self.start_line(self.last_us);
                self.line.extend_from_slice(self.files[i].1.as_bytes());
                self.line.extend_from_slice(b" close\n");
                self.out.write_all(&self.line)?;
            }
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<Result<Item, TraceError>> {
        IologReader::new(text.as_bytes(), "log", false).collect()
    }

    #[test]
    fn reads_v2_and_v3() {
        let v2 = "fio version 2 iolog\n/d add\n/d open\n/d read 4096 8192\n/d wait 250 0\n/d write 0 512\n/d sync 0 0\n/d trim 1024 4096\n/d close\n";
        let items: Vec<Item> = read(v2).into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(items.len(), 5);
        assert!(matches!(&items[0], Item::Process { pid: 0, name, .. } if name == "/d"));
        let Item::Record(w) = items[2] else { panic!() };
        assert_eq!(
            (w.event.time, w.event.op, w.event.bytes),
            (250_000, Op::Write, 512)
        );
        let Item::Record(t) = items[4] else { panic!() };
        assert_eq!((t.event.op, t.event.sector), (Op::Discard, 2));
        let v3 = "fio version 3 iolog\n24 /d add\n129 /d open\n132 /d read 0 4096\n672 /d sync 20480 0\n";
        let items: Vec<Item> = read(v3).into_iter().map(|r| r.unwrap()).collect();
        let Item::Record(s) = items[2] else { panic!() };
        assert_eq!(
            (s.event.time, s.event.op, s.event.bytes),
            (672_000, Op::Flush, 0)
        );
    }

    #[test]
    fn logs_appended_to_one_file_read_in_turn() {
        let text = "fio version 3 iolog\n0 /a add\n0 /a open\n10 /a read 0 4096\n12 /a close\n\
                    fio version 3 iolog\n0 /b add\n0 /b open\n5 /b write 4096 512\n6 /b close\n\
                    fio version 2 iolog\n/a add\n/a wait 3 0\n/a read 512 512\n";
        let records: Vec<elevator_core::TraceEvent> = read(text)
            .into_iter()
            .filter_map(|r| match r.unwrap() {
                Item::Record(r) => Some(r.event),
                Item::Process { .. } => None,
            })
            .collect();
        let got: Vec<(u64, Op, u32)> = records
            .iter()
            .map(|e| (e.time / 1000, e.op, e.ctx.0))
            .collect();
        assert_eq!(
            got,
            [(10, Op::Read, 0), (17, Op::Write, 1), (21, Op::Read, 0)]
        );
    }

    #[test]
    fn bad_lines_name_their_line() {
        for (text, line) in [
            ("fio version 9 iolog\n", "line 1"),
            ("fio version 3 iolog\n1 /d add\n2 /d read x 1\n", "line 3"),
            ("fio version 3 iolog\n1 /d add\n2 /e read 0 1\n", "line 3"),
            ("fio version 3 iolog\n5 /d add\n2 /d read 0 1\n", "line 3"),
            ("fio version 3 iolog\n1 /d add\n2 /d wait 5 0\n", "line 3"),
            ("fio version 2 iolog\n/d add\n/d frob 0 1\n", "line 3"),
        ] {
            let e = read(text).into_iter().find_map(Result::err).unwrap();
            assert_eq!(e.place, line, "{text}");
        }
    }

    #[test]
    fn writes_what_it_reads() {
        for v3 in [false, true] {
            let text = if v3 {
                "fio version 3 iolog\n0 /d add\n0 /d open\n0 /d read 4096 8192\n250 /d write 0 512\n250 /d sync 0 0\n300 /d trim 1024 4096\n300 /d close\n"
            } else {
                "fio version 2 iolog\n/d add\n/d open\n/d read 4096 8192\n/d wait 250 0\n/d write 0 512\n/d sync 0 0\n/d wait 50 0\n/d trim 1024 4096\n/d close\n"
            };
            let version = if v3 {
                IologVersion::V3
            } else {
                IologVersion::V2
            };
            let mut w = IologWriter::new(Vec::new(), version, TraceAction::Queue, "unused")
                .per_process_files(true);
            for item in read(text) {
                match item.unwrap() {
                    Item::Record(r) => w.record(&r).unwrap(),
                    Item::Process { pid, name, time } => w.process(pid, &name, time).unwrap(),
                }
            }
            w.finish().unwrap();
            assert_eq!(String::from_utf8(w.into_inner()).unwrap(), text);
        }
    }
}
