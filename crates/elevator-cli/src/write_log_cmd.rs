//! `elevator write-log show|replay|mark`: print a write log record by
//! record, apply its writes onto an image (with
//! `elevator_run::write_log`), put a mark in a running server's log. Also
//! [`check_whole`], the refusal of a damaged log `crash-states` shares.

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Subcommand, ValueEnum};
use elevator_run::write_log::{RecordApplier, create_image};
use elevator_trace::write_log::{
    FLAG_FUA, FLAG_PREFLUSH, Kind, LoadedLog, LogHeader, LogSummary, Reader, RecordRef,
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
    /// The mark's text: one line of 1 to 4096 bytes.
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

/// Refuse a damaged log unless `valid_prefix`, which says on stderr how
/// many records it uses.
pub fn check_whole(log: &LoadedLog, valid_prefix: bool) -> Result<()> {
    if let Some(e) = &log.error {
        if !valid_prefix {
            bail!(
                "{}: {e} (pass --valid-prefix to use the {} records before it)",
                log.path.display(),
                log.heads.len()
            );
        }
        eprintln!(
            "elevator: {}: {e}; --valid-prefix: using the {} records before it",
            log.path.display(),
            log.heads.len()
        );
    }
    Ok(())
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
    let mut summary = LogSummary::default();
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
            summary_json(&summary)
        )?;
    } else {
        for line in summary_lines(&summary) {
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

/// The summary's lines of text.
fn summary_lines(summary: &LogSummary) -> Vec<String> {
    let k = &summary.by_kind;
    let mut lines = vec![
        format!(
            "summary: {} records over {:.6} s: {} write ({} FUA), {} discard, {} write-zeroes, {} flush, {} mark",
            summary.records,
            summary.last_time_ns as f64 / 1e9,
            k[0],
            summary.fua,
            k[1],
            k[2],
            k[3],
            k[4]
        ),
        format!(
            "  bytes: {} written, {} zeroed, {} discarded",
            summary.bytes_written, summary.bytes_zeroed, summary.bytes_discarded
        ),
        format!(
            "  flush epochs: {} flushed, {} content records after the last flush",
            summary.epochs, summary.content_since_flush
        ),
    ];
    if !summary.marks.is_empty() {
        let marks: Vec<String> = summary.marks.iter().map(|m| format!("{m:?}")).collect();
        let more = match summary.marks_not_listed {
            0 => String::new(),
            n => format!(" (and {n} more)"),
        };
        lines.push(format!("  marks: {}{more}", marks.join(", ")));
    }
    lines
}

/// The summary as JSON.
fn summary_json(summary: &LogSummary) -> Value {
    let k = &summary.by_kind;
    json!({
        "records": summary.records,
        "write": k[0], "discard": k[1], "write_zeroes": k[2], "flush": k[3], "mark": k[4],
        "fua": summary.fua,
        "bytes_written": summary.bytes_written,
        "bytes_zeroed": summary.bytes_zeroed,
        "bytes_discarded": summary.bytes_discarded,
        "flush_epochs": summary.epochs,
        "unflushed_at_end": summary.content_since_flush,
        "marks": summary.marks,
        "marks_not_listed": summary.marks_not_listed,
        "duration_ns": summary.last_time_ns,
    })
}

fn replay(args: &ReplayArgs) -> Result<()> {
    let log = LoadedLog::load(&args.log)?;
    log.check_has_data()?;
    check_whole(&log, args.valid_prefix)?;
    let records = log.heads.len() as u64;
    let last = match (&args.to_mark, args.to_record) {
        (Some(text), _) => Some(log.find_mark(text)?),
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
    let applied = applier.apply_records(&image, &log, 0..end as usize)?;
    image
        .sync_all()
        .with_context(|| format!("syncing {}", args.out.display()))?;
    println!(
        "replayed records 0..{end} of {records} ({applied} writes, write-zeroes and discards) onto {} ({} bytes){}",
        args.out.display(),
        log.capacity_bytes(),
        match last {
            Some(n) if log.heads[n as usize].kind == Kind::Mark =>
                format!(", through mark {n} {:?}", log.mark_text(n).unwrap_or("")),
            _ => String::new(),
        }
    );
    Ok(())
}
