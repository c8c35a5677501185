//! Reading blktrace's binary format: [`BlktraceReader`] streams one file
//! (or `blktrace -o -`'s single stream of every CPU) record by record;
//! [`BlktraceSetReader`] opens a per-CPU set (`NAME.blktrace.0`, `.1`, ...,
//! at most [`MAX_SET_FILES`]) and merges it by time, holding one record
//! and a 4 KiB buffer per file.
//!
//! Checks, each an error naming the source and record number (or, with
//! `skip_bad`, a count in [`BlktraceReader::skipped`]): the magic (the byte
//! order is taken from the first record's), the version (0x07), a record or
//! payload cut short, an action code blktrace does not define, and time
//! going backwards on one CPU, a sector and size whose end is past 2^64
//! bytes (through [`Extent::place`]; an empty flush at 2^64-1 is the
//! kernel's flush request, at sector 0). Codes elevator does not replay (sleep,
//! bounce, remap, abort, driver data) are dropped and counted in
//! [`BlktraceReader::ignored`]; timestamp and message notifies are dropped.
//! A record with the cgroup flag has its 8-byte cgroup id skipped before
//! the payload.
//!
//! One stream holding several CPUs (`blktrace -o -`) is read in stream
//! order, time order checked per CPU: events of different CPUs may come a
//! little out of time order, as blktrace wrote them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use elevator_core::TraceAction;

use crate::blktrace::{Endian, RECORD_BYTES, RawRecord, VERSION, category, code, decode_action};
use crate::error::{TraceError, TraceErrorKind};
use crate::fast_hash::IntMap;
use crate::record::{Extent, Item, Record, item_reader, process_name, traced_event};

/// Bytes read from the input at a time (the buffer grows for a record
/// whose payload is larger).
const BUFFER_BYTES: usize = 1 << 15;
/// Bytes read from each file of a per-CPU set at a time.
const SET_BUFFER_BYTES: usize = 1 << 12;
/// Files a per-CPU set may have (one per CPU).
pub const MAX_SET_FILES: usize = 8192;
/// CPUs whose time order is checked (the first seen; records of others
/// are not).
const CHECKED_CPUS: usize = 4096;

/// Streams the records of one blktrace file or stream.
pub struct BlktraceReader<R: Read> {
    input: R,
    /// Bytes read and not yet taken (`pos..len`); grown for a record with
    /// a large payload, and back to `base` bytes after it.
    buf: Vec<u8>,
    base: usize,
    pos: usize,
    len: usize,
    eof: bool,
    source_name: String,
    skip_bad: bool,
    skipped: u64,
    ignored: u64,
    endian: Option<Endian>,
    records: u64,
    /// Each CPU's last time (for the first [`CHECKED_CPUS`] CPUs seen).
    last_time: IntMap<u32, u64>,
    done: bool,
}

impl<R: Read> BlktraceReader<R> {
    /// A reader of `input`, named `source_name` in errors. With `skip_bad`,
    /// bad records are counted and skipped (after a bad magic the reader
    /// looks for the next one) instead of ending the read with an error.
    pub fn new(input: R, source_name: &str, skip_bad: bool) -> BlktraceReader<R> {
        Self::with_buffer(input, source_name, skip_bad, BUFFER_BYTES)
    }

    /// [`BlktraceReader::new`] reading `buffer` bytes at a time (at least
    /// one record's).
    fn with_buffer(
        input: R,
        source_name: &str,
        skip_bad: bool,
        buffer: usize,
    ) -> BlktraceReader<R> {
        let base = buffer.max(RECORD_BYTES);
        BlktraceReader {
            input,
            buf: vec![0; base],
            base,
            pos: 0,
            len: 0,
            eof: false,
            source_name: source_name.to_string(),
            skip_bad,
            skipped: 0,
            ignored: 0,
            endian: None,
            records: 0,
            last_time: IntMap::default(),
            done: false,
        }
    }

    /// Bad records skipped (with `skip_bad`).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Records of actions elevator does not replay (sleep, bounce, remap,
    /// abort, driver data), dropped.
    pub fn ignored(&self) -> u64 {
        self.ignored
    }

    /// The name used in errors.
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// Make at least `want` bytes available from `pos` if the input has
    /// them; the bytes available.
    fn fill(&mut self, want: usize) -> io::Result<usize> {
        if self.len - self.pos >= want || self.eof {
            return Ok(self.len - self.pos);
        }
        self.buf.copy_within(self.pos..self.len, 0);
        self.len -= self.pos;
        self.pos = 0;
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        } else if self.buf.len() > self.base && want.max(self.len) <= self.base {
            self.buf.truncate(self.base);
            self.buf.shrink_to_fit();
        }
        while self.len < want {
            match self.input.read(&mut self.buf[self.len..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.len)
    }

    fn error(&self, kind: TraceErrorKind) -> TraceError {
        TraceError::at_record(&self.source_name, self.records, kind)
    }

    /// Skip to the next place the magic appears (after a bad one).
    fn resync(&mut self, endian: Endian) -> io::Result<()> {
        self.pos += 1;
        loop {
            let avail = self.fill(RECORD_BYTES)?;
            if avail < 4 {
                self.pos = self.len;
                return Ok(());
            }
            let b = &self.buf[self.pos..self.len];
            let found = b.windows(4).position(|w| {
                let m = [w[0], w[1], w[2], w[3]];
                Endian::detect(m) == Some(endian)
            });
            match found {
                Some(i) => {
                    self.pos += i;
                    return Ok(());
                }
                None => self.pos = self.len - 3,
            }
            if self.eof {
                self.pos = self.len;
                return Ok(());
            }
        }
    }

    /// Read the next item; `Ok(None)` at the end; `Err` for a bad record
    /// (the caller decides whether to skip it).
    fn read_item(&mut self) -> Result<Option<Item>, TraceError> {
        loop {
            let avail = self.fill(RECORD_BYTES).map_err(|e| self.error(e.into()))?;
            if avail == 0 {
                return Ok(None);
            }
            self.records += 1;
            if avail < RECORD_BYTES {
                self.pos = self.len;
                return Err(self.error(TraceErrorKind::Truncated {
                    got: avail,
                    want: RECORD_BYTES,
                }));
            }
            let mut head = [0u8; RECORD_BYTES];
            head.copy_from_slice(&self.buf[self.pos..self.pos + RECORD_BYTES]);
            let magic = [head[0], head[1], head[2], head[3]];
            let endian = match (self.endian, Endian::detect(magic)) {
                (None, Some(e)) => {
                    self.endian = Some(e);
                    e
                }
                (Some(e), Some(found)) if e == found => e,
                (e, _) => {
                    let e = e.unwrap_or(Endian::NATIVE);
                    let word = RawRecord::decode(&head, e).magic;
                    if self.skip_bad {
                        self.resync(e).map_err(|io| self.error(io.into()))?;
                    } else {
                        self.pos = self.len;
                        self.eof = true;
                    }
                    return Err(self.error(TraceErrorKind::Magic(word)));
                }
            };
            let raw = RawRecord::decode(&head, endian);
            let need = RECORD_BYTES + usize::from(raw.pdu_len);
            let avail = self.fill(need).map_err(|e| self.error(e.into()))?;
            if avail < need {
                self.pos = self.len;
                return Err(self.error(TraceErrorKind::Truncated {
                    got: avail,
                    want: need,
                }));
            }
            let start = self.pos + RECORD_BYTES;
            self.pos += need;
            let version = (raw.magic & 0xff) as u8;
            if version != VERSION {
                return Err(self.error(TraceErrorKind::Version(version)));
            }
            let cgroup = raw.action & code::CGROUP != 0;
            let payload_at = start + if cgroup { 8 } else { 0 };
            let payload = self
                .buf
                .get(payload_at..start + usize::from(raw.pdu_len))
                .unwrap_or(&[]);
            let cats = raw.action >> 16;
            let code_ = raw.action & 0xffff & !code::CGROUP;
            if cats & category::NOTIFY != 0 {
                if code_ == code::NOTIFY_PROCESS {
                    let end = payload
                        .iter()
                        .position(|&b| b == 0)
                        .unwrap_or(payload.len());
                    let name = process_name(&payload[..end]);
                    return Ok(Some(Item::Process {
                        pid: raw.pid,
                        name,
                        time: raw.time,
                    }));
                }
                continue;
            }
            let Some((action, op, flags)) = decode_action(raw.action, raw.bytes) else {
                if matches!(
                    code_,
                    code::SLEEPRQ | code::BOUNCE | code::REMAP | code::ABORT | code::DRV_DATA
                ) {
                    self.ignored += 1;
                    continue;
                }
                return Err(self.error(TraceErrorKind::UnknownEvent(format!(
                    "action {:#010x}",
                    raw.action
                ))));
            };
            let known = self.last_time.len() < CHECKED_CPUS;
            let slot = match self.last_time.get_mut(&raw.cpu) {
                Some(t) => Some(t),
                None if known => Some(self.last_time.entry(raw.cpu).or_insert(0)),
                None => None,
            };
            if let Some(previous) = slot {
                if raw.time < *previous {
                    let previous = *previous;
                    return Err(self.error(TraceErrorKind::TimeOrder {
                        time: raw.time,
                        previous,
                        window: None,
                    }));
                }
                *previous = raw.time;
            }
            let extra = if matches!(action, TraceAction::Split | TraceAction::Unplug) {
                payload
                    .get(..8)
                    .map(|b| {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(b);
                        u64::from_be_bytes(a)
                    })
                    .unwrap_or(0)
            } else {
                0
            };
            let extent = Extent::SectorBytes {
                sector: raw.sector,
                bytes: u64::from(raw.bytes),
            };
            let mut event = traced_event(raw.time, action, op, flags, extent, raw.pid)
                .map_err(|refusal| self.error(refusal.into()))?;
            event.error = i32::from(raw.error as i16);
            event.extra = extra;
            return Ok(Some(Item::Record(Record {
                event,
                cpu: raw.cpu,
                dev: raw.device,
            })));
        }
    }
}

item_reader!(BlktraceReader<R: Read>);

/// The time an item sorts by.
fn item_time(item: &Item) -> u64 {
    match item {
        Item::Record(r) => r.event.time,
        Item::Process { time, .. } => *time,
    }
}

/// A per-CPU set of blktrace files merged by time (ties go to the lower
/// file number), holding one item per file.
pub struct BlktraceSetReader<R: Read> {
    readers: Vec<BlktraceReader<R>>,
    heads: Vec<Option<Item>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    pending: Option<TraceError>,
    done: bool,
}

impl BlktraceSetReader<File> {
    /// Open the set `name` names: `NAME` or `NAME.blktrace.N` means every
    /// `NAME.blktrace.N` there is (blkparse stops at the first number
    /// missing; this reads past a gap rather than lose a file).
    pub fn open(name: &Path, skip_bad: bool) -> Result<BlktraceSetReader<File>, TraceError> {
        let prefix = set_prefix(name);
        let io_error = |path: &Path, e: io::Error| TraceError {
            source_name: path.display().to_string(),
            place: String::new(),
            kind: e.into(),
        };
        let mut readers = Vec::new();
        let cpus = set_cpus(&prefix).map_err(|e| io_error(&prefix, e))?;
        if cpus.len() > MAX_SET_FILES {
            let e = io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} files {}.blktrace.N: a per-CPU set has at most {MAX_SET_FILES}",
                    cpus.len(),
                    prefix.display()
                ),
            );
            return Err(io_error(name, e));
        }
        for cpu in cpus {
            let path = crate::blktrace_write::BlktraceSet::path_of(&prefix, cpu);
            let file = File::open(&path).map_err(|e| io_error(&path, e))?;
            let name = path.display().to_string();
            readers.push(BlktraceReader::with_buffer(
                file,
                &name,
                skip_bad,
                SET_BUFFER_BYTES,
            ));
        }
        if readers.is_empty() {
            let e = io::Error::new(
                io::ErrorKind::NotFound,
                format!("no {}.blktrace.N", prefix.display()),
            );
            return Err(io_error(name, e));
        }
        Ok(BlktraceSetReader::new(readers))
    }
}

/// The CPU numbers N of the files `prefix.blktrace.N` there are, in order
/// (all of them: a gap does not end the set).
pub fn set_cpus(prefix: &Path) -> io::Result<Vec<u32>> {
    let dir = match prefix.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Some(base) = prefix.file_name() else {
        return Ok(Vec::new());
    };
    let mut start = base.to_os_string();
    start.push(".blktrace.");
    let start = start.to_string_lossy().into_owned();
    let mut cpus = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let file_name = entry?.file_name();
        let cpu = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(start.as_str()))
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u32>().ok());
        if let Some(cpu) = cpu {
            cpus.push(cpu);
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// The prefix of a per-CPU set: `NAME` for `NAME.blktrace.N` and for `NAME`.
pub fn set_prefix(name: &Path) -> PathBuf {
    let text = name.to_string_lossy();
    if let Some(i) = text.rfind(".blktrace.") {
        let cpu = &text[i + ".blktrace.".len()..];
        if !cpu.is_empty() && cpu.bytes().all(|b| b.is_ascii_digit()) {
            return PathBuf::from(&text[..i]);
        }
    }
    name.to_path_buf()
}

/// Whether `name` is (or names) a per-CPU set on disk: some
/// `NAME.blktrace.N` exists.
pub fn is_set(name: &Path) -> bool {
    set_cpus(&set_prefix(name)).is_ok_and(|cpus| !cpus.is_empty())
}

impl<R: Read> BlktraceSetReader<R> {
    /// Merge `readers` by time.
    pub fn new(readers: Vec<BlktraceReader<R>>) -> BlktraceSetReader<R> {
        let n = readers.len();
        let mut set = BlktraceSetReader {
            readers,
            heads: (0..n).map(|_| None).collect(),
            heap: BinaryHeap::with_capacity(n),
            pending: None,
            done: false,
        };
        for i in 0..n {
            set.refill(i);
            if set.pending.is_some() {
                break;
            }
        }
        set
    }

    fn refill(&mut self, i: usize) {
        match self.readers[i].next() {
            Some(Ok(item)) => {
                self.heap.push(Reverse((item_time(&item), i)));
                self.heads[i] = Some(item);
            }
            Some(Err(e)) => self.pending = Some(e),
            None => {}
        }
    }

    /// Bad records skipped over all files.
    pub fn skipped(&self) -> u64 {
        self.readers.iter().map(BlktraceReader::skipped).sum()
    }

    /// Records of actions not replayed, over all files.
    pub fn ignored(&self) -> u64 {
        self.readers.iter().map(BlktraceReader::ignored).sum()
    }

    /// Files in the set.
    pub fn files(&self) -> usize {
        self.readers.len()
    }
}

impl<R: Read> Iterator for BlktraceSetReader<R> {
    type Item = Result<Item, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some(e) = self.pending.take() {
            self.done = true;
            return Some(Err(e));
        }
        let Reverse((_, i)) = self.heap.pop()?;
        let item = self.heads[i].take();
        self.refill(i);
        item.map(Ok)
    }
}
