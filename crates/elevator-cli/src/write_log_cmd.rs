//! `elevator write-log show|replay`: print a write log record by record,
//! and apply its writes onto an image. Also what `crash-states` shares
//! with them: loading a log's heads (the data stays in the file) and
//! applying records onto an image file.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Subcommand, ValueEnum};
use elevator_core::ByteRange;
use elevator_trace::write_log::{
    FLAG_FUA, FLAG_PREFLUSH, Kind, LogHeader, Reader, RecordHead, RecordRef, WriteLogError,
};
use serde_json::{Value, json};

/// `elevator write-log ...`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: WriteLogCommand,
}

#[derive(Subcommand, Debug)]
enum WriteLogCommand {
    /// Print a write log: its header, one line per record, and a summary.
    /// A truncated or corrupt log prints its whole records, then the error
    /// (naming the record and byte offset), and exits non-zero.
    Show(ShowArgs),
    /// Apply a log's writes, in log order, onto an image: writes carry
    /// their data; write-zeroes and discards punch holes, which read as
    /// zeroes (what a discard leaves is undefined; zeroes is one choice).
    Replay(ReplayArgs),
    /// Put a mark in the write log of a running `elevator serve
    /// --write-log FILE --mark-socket PATH`: it lands after every write
    /// the device completed before it. Prints the mark's record number.
    Mark(MarkArgs),
}

#[derive(clap::Args, Debug)]
struct MarkArgs {
    /// The server's --mark-socket.
    socket: PathBuf,
    /// The mark's text (one line).
    text: String,
    /// Seconds to wait for the server's answer (connecting, sending,
    /// answering): past it the mark fails.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    timeout: f64,
}

/// How `show` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    /// A line per record.
    Text,
    /// One JSON document.
    Json,
}

#[derive(clap::Args, Debug)]
struct ShowArgs {
    /// The write log.
    log: PathBuf,
    /// Add a digest of each write's data (CRC-32 and its first bytes).
    #[arg(long)]
    data: bool,
    /// text or json.
    #[arg(long, value_enum, default_value = "text")]
    output_format: OutputFormat,
}

#[derive(clap::Args, Debug)]
struct ReplayArgs {
    /// The write log (one that carries data: from a real device).
    log: PathBuf,
    /// The image to write: created with the device's capacity (or a copy
    /// of --base); an existing file is replaced.
    #[arg(long)]
    out: PathBuf,
    /// Stop after the first mark whose text is TEXT, or, when no mark's
    /// text is exactly TEXT, the first whose text starts with it.
    #[arg(long, value_name = "TEXT", conflicts_with = "to_record")]
    to_mark: Option<String>,
    /// Stop after record N (applied).
    #[arg(long, value_name = "N")]
    to_record: Option<u64>,
    /// Start from a copy of this image instead of zeroes.
    #[arg(long, value_name = "IMG")]
    base: Option<PathBuf>,
    /// Use the whole records before a truncation or corruption instead of
    /// refusing the log.
    #[arg(long)]
    valid_prefix: bool,
}

/// Run `elevator write-log ...`.
pub fn run(args: &Args) -> Result<()> {
    match &args.command {
        WriteLogCommand::Show(a) => show(a),
        WriteLogCommand::Replay(a) => replay(a),
        WriteLogCommand::Mark(a) => {
            let timeout = crate::serve::seconds_option("--timeout", a.timeout)?;
            let seq = crate::mark::send(&a.socket, &a.text, timeout)?;
            println!("mark {seq}");
            Ok(())
        }
    }
}

/// A log's heads, read whole; the data stays in the file.
pub struct LoadedLog {
    /// Where it is.
    pub path: PathBuf,
    /// What it is of.
    pub header: LogHeader,
    /// Every whole record's head, `heads[i].seq == i`.
    pub heads: Vec<RecordHead>,
    /// Where each record starts in the file.
    pub offsets: Vec<u64>,
    /// Each mark's sequence number and text.
    pub marks: Vec<(u64, String)>,
    /// Why the log could not be read past `heads`, if it could not.
    pub error: Option<WriteLogError>,
}

impl LoadedLog {
    /// Read `path`'s heads; an unreadable header is an error, a damaged
    /// record is kept in `error`.
    pub fn load(path: &Path) -> Result<LoadedLog> {
        let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let mut reader = Reader::new(BufReader::with_capacity(1 << 20, file))
            .with_context(|| format!("reading {}", path.display()))?;
        let mut log = LoadedLog {
            path: path.to_path_buf(),
            header: reader.header(),
            heads: Vec::new(),
            offsets: Vec::new(),
            marks: Vec::new(),
            error: None,
        };
        loop {
            match reader.next_record() {
                Ok(Some(rec)) => {
                    if rec.head.kind == Kind::Mark {
                        log.marks.push((rec.head.seq, rec.text()));
                    }
                    log.heads.push(rec.head);
                    log.offsets.push(rec.offset);
                }
                Ok(None) => break,
                Err(e) => {
                    log.error = Some(e);
                    break;
                }
            }
        }
        Ok(log)
    }

    /// Refuse a damaged log unless `valid_prefix`, which says on stderr how
    /// many records it uses.
    pub fn check_whole(&self, valid_prefix: bool) -> Result<()> {
        if let Some(e) = &self.error {
            if !valid_prefix {
                bail!(
                    "{}: {e} (pass --valid-prefix to use the {} records before it)",
                    self.path.display(),
                    self.heads.len()
                );
            }
            eprintln!(
                "elevator: {}: {e}; --valid-prefix: using the {} records before it",
                self.path.display(),
                self.heads.len()
            );
        }
        Ok(())
    }

    /// Refuse a log without data (from a simulated device).
    pub fn check_has_data(&self) -> Result<()> {
        if !self.header.has_data {
            bail!(
                "{}: the log carries no data (it was recorded on a simulated device, which moves none), so there is nothing to write onto an image",
                self.path.display()
            );
        }
        Ok(())
    }

    /// The device's capacity in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.header.capacity.saturating_mul(512)
    }

    /// The time of the last record before `cut`, in seconds.
    pub fn time_before(&self, cut: u64) -> f64 {
        cut.checked_sub(1)
            .and_then(|i| self.heads.get(i as usize))
            .map_or(0.0, |h| h.time_ns as f64 / 1e9)
    }
}

/// Create `path` as the device's image: zeroes of `capacity` bytes, or a
/// copy of `base` (extended to `capacity` if shorter).
pub fn create_image(path: &Path, capacity: u64, base: Option<&Path>) -> Result<File> {
    if let Some(base) = base {
        let len = std::fs::metadata(base)
            .with_context(|| format!("--base {}", base.display()))?
            .len();
        if len > capacity {
            bail!(
                "--base {} is {len} bytes, more than the log's device ({capacity} bytes)",
                base.display()
            );
        }
        std::fs::copy(base, path)
            .with_context(|| format!("copying {} to {}", base.display(), path.display()))?;
    } else if path.exists() {
        std::fs::remove_file(path).with_context(|| format!("replacing {}", path.display()))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.set_len(capacity)
        .with_context(|| format!("sizing {} to {capacity} bytes", path.display()))?;
    Ok(file)
}

/// Make `len` bytes at `at` of `image` a hole that reads as zeroes;
/// whether the file system could.
fn punch_hole(image: &File, at: u64, len: u64) -> bool {
    use rustix::fs::{FallocateFlags, fallocate};
    len == 0
        || fallocate(
            image,
            FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
            at,
            len,
        )
        .is_ok()
}

/// Applies records onto images, reading their data from the log with
/// pread.
pub struct RecordApplier {
    log: File,
    path: PathBuf,
    buf: Vec<u8>,
}

/// Bytes moved at a time.
const CHUNK: usize = 1 << 20;

impl RecordApplier {
    /// Read data from `log`'s file.
    pub fn new(log: &LoadedLog) -> Result<RecordApplier> {
        let file =
            File::open(&log.path).with_context(|| format!("opening {}", log.path.display()))?;
        Ok(RecordApplier {
            log: file,
            path: log.path.clone(),
            buf: vec![0; CHUNK],
        })
    }

    /// Apply record `head` (starting at `offset` in the log) onto `image`;
    /// records that change no content are passed over. Write-zeroes and
    /// discards punch a hole (what reads as zeroes and takes no disk), so
    /// a log of a few bytes cannot make the image take terabytes; where
    /// the file system cannot punch holes they write zeroes.
    pub fn apply(&mut self, image: &File, head: &RecordHead, offset: u64) -> Result<()> {
        if !head.kind.changes_content() {
            return Ok(());
        }
        let range = ByteRange::from_sectors(head.sector, u64::from(head.sectors))
            .with_context(|| format!("{}: record {}", self.path.display(), head.seq))?;
        let (at, len) = (range.offset(), range.len());
        let from_log = head.kind == Kind::Write;
        if from_log && !head.has_data() {
            bail!(
                "{}: record {} is a write without its data",
                self.path.display(),
                head.seq
            );
        }
        if !from_log && punch_hole(image, at, len) {
            return Ok(());
        }
        let payload = offset + elevator_trace::write_log::RECORD_HEAD_LEN as u64;
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(CHUNK as u64) as usize;
            let buf = &mut self.buf[..n];
            if from_log {
                self.log
                    .read_exact_at(buf, payload + done)
                    .with_context(|| format!("reading record {}'s data", head.seq))?;
            } else {
                buf.fill(0);
            }
            image
                .write_all_at(buf, at + done)
                .with_context(|| format!("writing record {} onto the image", head.seq))?;
            done += n as u64;
        }
        Ok(())
    }
}

fn show(args: &ShowArgs) -> Result<()> {
    let path = &args.log;
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut reader = Reader::new(BufReader::with_capacity(1 << 20, file))
        .with_context(|| format!("reading {}", path.display()))?;
    let header = reader.header();
    let json = args.output_format == OutputFormat::Json;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if !json {
        writeln!(out, "{}", describe_header(path, &header))?;
        writeln!(
            out,
            "{:>8} {:>14}  {:<12} {:<18} {:<12} text/data",
            "seq", "time(s)", "op", "sector+sectors", "flags"
        )?;
    }
    let mut summary = Summary::default();
    // JSON is written as it is read (one record per line), never held
    // whole: a log of millions of records shows in bounded memory.
    if json {
        let head = json!({
            "capacity_sectors": header.capacity,
            "block_size": header.block_size,
            "has_data": header.has_data,
        });
        let log = Value::from(path.display().to_string());
        write!(
            out,
            "{{\n\"log\": {log},\n\"header\": {head},\n\"records\": ["
        )?;
    }
    let error = loop {
        match reader.next_record() {
            Ok(Some(rec)) => {
                if json {
                    out.write_all(if summary.records == 0 { b"\n" } else { b",\n" })?;
                    serde_json::to_writer(&mut out, &record_json(&rec, args.data))?;
                } else {
                    writeln!(out, "{}", record_line(&rec, args.data))?;
                }
                summary.add(&rec);
            }
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    if json {
        let error_json = error.as_ref().map_or(Value::Null, |e| {
            json!({
                "message": e.to_string(),
                "whole_records": reader.records(),
                "valid_bytes": e.valid_bytes(),
            })
        });
        writeln!(
            out,
            "\n],\n\"summary\": {},\n\"error\": {error_json}\n}}",
            summary.json()
        )?;
    } else {
        for line in summary.lines() {
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    match error {
        Some(e) => Err(e).with_context(|| format!("{}", path.display())),
        None => Ok(()),
    }
}

/// The header's line.
fn describe_header(path: &Path, h: &LogHeader) -> String {
    format!(
        "write log {}: capacity {} sectors ({}), block size {}, {}",
        path.display(),
        h.capacity,
        human_bytes(h.capacity.saturating_mul(512)),
        h.block_size,
        if h.has_data {
            "writes carry their data"
        } else {
            "no data (a simulated device)"
        }
    )
}

/// Bytes in the largest binary unit that keeps them at 1 or more.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

fn flag_names(flags: u8) -> Vec<&'static str> {
    let mut names = Vec::new();
    if flags & FLAG_FUA != 0 {
        names.push("FUA");
    }
    if flags & FLAG_PREFLUSH != 0 {
        names.push("PREFLUSH");
    }
    names
}

/// A data digest: CRC-32 and the first 8 bytes in hex.
fn digest(payload: &[u8]) -> (u32, String) {
    let head: String = payload.iter().take(8).map(|b| format!("{b:02x}")).collect();
    (crc32fast::hash(payload), head)
}

fn record_line(rec: &RecordRef<'_>, data: bool) -> String {
    let h = &rec.head;
    let flags = flag_names(h.flags);
    let flags = if flags.is_empty() {
        "-".to_string()
    } else {
        flags.join(",")
    };
    let range = if h.kind.changes_content() {
        format!("{}+{}", h.sector, h.sectors)
    } else {
        String::new()
    };
    let mut line = format!(
        "{:>8} {:>14.9}  {:<12} {:<18} {:<12}",
        h.seq,
        h.time_ns as f64 / 1e9,
        h.kind.name(),
        range,
        flags
    );
    if h.kind == Kind::Mark {
        line.push_str(&format!(" {:?}", rec.text()));
    } else if data && h.has_data() {
        let (crc, head) = digest(rec.payload);
        line.push_str(&format!(" crc32 {crc:08x} {head}"));
    }
    line.trim_end().to_string()
}

fn record_json(rec: &RecordRef<'_>, data: bool) -> Value {
    let h = &rec.head;
    let mut v = json!({
        "seq": h.seq,
        "time_ns": h.time_ns,
        "op": h.kind.name(),
        "sector": h.sector,
        "sectors": h.sectors,
        "flags": flag_names(h.flags),
        "offset": rec.offset,
    });
    if h.kind == Kind::Mark {
        v["text"] = json!(rec.text());
    } else if data && h.has_data() {
        let (crc, head) = digest(rec.payload);
        v["crc32"] = json!(format!("{crc:08x}"));
        v["first_bytes"] = json!(head);
    }
    v
}

/// Counts over a log's records.
#[derive(Default)]
struct Summary {
    records: u64,
    by_kind: [u64; 5],
    bytes_written: u64,
    bytes_zeroed: u64,
    bytes_discarded: u64,
    epochs: u64,
    content_since_flush: u64,
    fua: u64,
    /// The first [`LISTED_MARKS`] marks' texts, cut at [`MARK_SHOWN_BYTES`].
    marks: Vec<String>,
    /// Marks past those.
    marks_not_listed: u64,
    last_time_ns: u64,
}

/// Marks a summary lists (the others are counted).
const LISTED_MARKS: usize = 100;
/// Bytes of a mark's text a summary shows.
const MARK_SHOWN_BYTES: usize = 256;

/// `text` cut at `max` bytes (on a character boundary), with "..." if cut.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let end = (0..=max)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(end);
        text.push_str("...");
    }
    text
}

impl Summary {
    fn add(&mut self, rec: &RecordRef<'_>) {
        let h = &rec.head;
        self.records += 1;
        self.by_kind[usize::from(h.kind.code() - 1)] += 1;
        self.last_time_ns = h.time_ns;
        let bytes = u64::from(h.sectors) * 512;
        match h.kind {
            Kind::Write => self.bytes_written += bytes,
            Kind::WriteZeroes => self.bytes_zeroed += bytes,
            Kind::Discard => self.bytes_discarded += bytes,
            Kind::Flush => {
                if self.content_since_flush > 0 {
                    self.epochs += 1;
                }
                self.content_since_flush = 0;
            }
            Kind::Mark if self.marks.len() < LISTED_MARKS => {
                let end = rec.payload.len().min(MARK_SHOWN_BYTES + 4);
                let text = String::from_utf8_lossy(&rec.payload[..end]).into_owned();
                self.marks.push(cut(text, MARK_SHOWN_BYTES));
            }
            Kind::Mark => self.marks_not_listed += 1,
        }
        if h.kind.changes_content() {
            self.content_since_flush += 1;
            if h.fua() {
                self.fua += 1;
            }
        }
    }

    fn lines(&self) -> Vec<String> {
        let k = &self.by_kind;
        let mut lines = vec![
            format!(
                "summary: {} records over {:.6} s: {} write ({} FUA), {} discard, {} write-zeroes, {} flush, {} mark",
                self.records,
                self.last_time_ns as f64 / 1e9,
                k[0],
                self.fua,
                k[1],
                k[2],
                k[3],
                k[4]
            ),
            format!(
                "  bytes: {} written, {} zeroed, {} discarded",
                self.bytes_written, self.bytes_zeroed, self.bytes_discarded
            ),
            format!(
                "  flush epochs: {} flushed, {} content records after the last flush",
                self.epochs, self.content_since_flush
            ),
        ];
        if !self.marks.is_empty() {
            let marks: Vec<String> = self.marks.iter().map(|m| format!("{m:?}")).collect();
            let more = match self.marks_not_listed {
                0 => String::new(),
                n => format!(" (and {n} more)"),
            };
            lines.push(format!("  marks: {}{more}", marks.join(", ")));
        }
        lines
    }

    fn json(&self) -> Value {
        let k = &self.by_kind;
        json!({
            "records": self.records,
            "write": k[0], "discard": k[1], "write_zeroes": k[2], "flush": k[3], "mark": k[4],
            "fua": self.fua,
            "bytes_written": self.bytes_written,
            "bytes_zeroed": self.bytes_zeroed,
            "bytes_discarded": self.bytes_discarded,
            "flush_epochs": self.epochs,
            "unflushed_at_end": self.content_since_flush,
            "marks": self.marks,
            "marks_not_listed": self.marks_not_listed,
            "duration_ns": self.last_time_ns,
        })
    }
}

/// The last record `--to-mark TEXT` applies: the first mark whose text is
/// TEXT, else the first that starts with it.
pub fn find_mark(log: &LoadedLog, text: &str) -> Result<u64> {
    let exact = log.marks.iter().find(|(_, t)| t == text);
    let prefix = || log.marks.iter().find(|(_, t)| t.starts_with(text));
    match exact.or_else(prefix) {
        Some((seq, _)) => Ok(*seq),
        None => {
            let known: Vec<String> = log
                .marks
                .iter()
                .take(10)
                .map(|(_, t)| format!("{t:?}"))
                .collect();
            bail!(
                "{}: no mark's text is or starts with {text:?} (the log has {} marks{}{})",
                log.path.display(),
                log.marks.len(),
                if known.is_empty() { "" } else { ": " },
                known.join(", ")
            )
        }
    }
}

fn replay(args: &ReplayArgs) -> Result<()> {
    let log = LoadedLog::load(&args.log)?;
    log.check_has_data()?;
    log.check_whole(args.valid_prefix)?;
    let records = log.heads.len() as u64;
    let last = match (&args.to_mark, args.to_record) {
        (Some(text), _) => Some(find_mark(&log, text)?),
        (None, Some(n)) if n >= records => bail!(
            "--to-record {n}: the log has {records} records (0 to {})",
            records.saturating_sub(1)
        ),
        (None, Some(n)) => Some(n),
        (None, None) => None,
    };
    let end = last.map_or(records, |n| n + 1);
    let image = create_image(&args.out, log.capacity_bytes(), args.base.as_deref())?;
    let mut applier = RecordApplier::new(&log)?;
    let mut applied = 0u64;
    for i in 0..end as usize {
        let head = &log.heads[i];
        if head.kind.changes_content() {
            applier.apply(&image, head, log.offsets[i])?;
            applied += 1;
        }
    }
    image
        .sync_all()
        .with_context(|| format!("syncing {}", args.out.display()))?;
    println!(
        "replayed records 0..{end} of {records} ({applied} writes, write-zeroes and discards) onto {} ({} bytes){}",
        args.out.display(),
        log.capacity_bytes(),
        match last {
            Some(n) if log.heads[n as usize].kind == Kind::Mark => format!(
                ", through mark {n} {:?}",
                log.marks
                    .iter()
                    .find(|(s, _)| *s == n)
                    .map_or("", |(_, t)| t.as_str())
            ),
            _ => String::new(),
        }
    );
    Ok(())
}
