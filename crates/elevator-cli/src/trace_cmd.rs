//! `elevator trace`: convert traces between formats (blktrace binary,
//! blkparse text, tracefs text, fio iologs; plain, gzip or xz), and measure
//! how fast the readers and writers are.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Subcommand, ValueEnum};
use elevator_core::TraceAction;
use elevator_trace::blkparse::{BlkparseReader, TextWriter};
use elevator_trace::blktrace_read::BlktraceReader;
use elevator_trace::blktrace_write::{BlktraceSet, BlktraceWriter};
use elevator_trace::iolog::{IologReader, IologVersion, IologWriter};
use elevator_trace::synthetic::{PROCESSES, SyntheticTrace};
use elevator_trace::{Format, Item, TraceSink};

use elevator_run::cpu_time::thread_cpu_ns;

/// `elevator trace ...`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(Subcommand, Debug)]
enum TraceCommand {
    /// Convert a trace (blktrace binary or per-CPU set, blkparse text,
    /// tracefs text, fio iolog; plain, gzip or xz) to blktrace, blkparse
    /// text or a fio iolog.
    Convert(ConvertArgs),
    /// Generate N events and time writing and reading blktrace binary,
    /// blkparse text and iologs in memory (events per second of CPU).
    BenchConvert(BenchArgs),
}

/// What `convert` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ToFormat {
    /// blktrace binary: OUT.blktrace.N, one file per CPU (`-`: one stream).
    Blktrace,
    /// fio iolog (replayed by `fio --read_iolog`).
    Iolog,
    /// blkparse's default text.
    Text,
}

/// Which events an iolog holds (or which to keep).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum EventKind {
    /// The bios as queued.
    #[value(name = "Q", alias = "q")]
    Q,
    /// The requests as issued to the device.
    #[value(name = "D", alias = "d")]
    D,
}

impl EventKind {
    fn action(self) -> TraceAction {
        match self {
            EventKind::Q => TraceAction::Queue,
            EventKind::D => TraceAction::Issue,
        }
    }
}

#[derive(clap::Args, Debug)]
struct ConvertArgs {
    /// The trace to read: a file, a per-CPU set's NAME, or `-` for stdin.
    input: PathBuf,
    /// Where to write (for blktrace, the prefix of OUT.blktrace.N); `-` for
    /// stdout.
    output: PathBuf,
    /// The output format.
    #[arg(long)]
    to: ToFormat,
    /// The input format (blktrace, blkparse or text, tracefs, iolog);
    /// recognised from the content if not given.
    #[arg(long)]
    from: Option<String>,
    /// Count and skip bad records or lines instead of stopping at the first.
    #[arg(long)]
    skip_bad: bool,
    /// Keep only these events (an iolog holds one kind: Q unless D is asked).
    #[arg(long)]
    events: Option<EventKind>,
    /// The iolog version written.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=3))]
    iolog_version: u8,
    /// The file an iolog's I/Os go to (fio's replay_redirect can point them
    /// elsewhere). Without it, an iolog read keeps its own file names and
    /// any other input goes to `replay.dat`.
    #[arg(long)]
    iolog_file: Option<String>,
    /// Leave discards out of an iolog (fio 3.33 cannot replay `trim`).
    #[arg(long)]
    no_trim: bool,
}

#[derive(clap::Args, Debug)]
struct BenchArgs {
    /// Events generated (at most 2500000: they are held in memory).
    #[arg(long, default_value_t = 2_000_000)]
    events: u64,
}

/// Run `elevator trace ...`.
pub fn run(args: &Args) -> Result<()> {
    match &args.command {
        TraceCommand::Convert(a) => convert(a),
        TraceCommand::BenchConvert(a) => bench(a),
    }
}

/// A sink that passes on only some events (and every process name).
struct Filter<'a> {
    inner: &'a mut dyn TraceSink,
    keep: Option<TraceAction>,
    no_trim: bool,
    written: u64,
}

impl TraceSink for Filter<'_> {
    fn record(&mut self, record: &elevator_trace::Record) -> io::Result<()> {
        let e = &record.event;
        if self.keep.is_some_and(|a| a != e.action)
            || (self.no_trim && e.op == elevator_core::Op::Discard)
        {
            return Ok(());
        }
        self.written += 1;
        self.inner.record(record)
    }

    fn process(&mut self, pid: u32, name: &str, time: u64) -> io::Result<()> {
        self.inner.process(pid, name, time)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.inner.finish()
    }
}

fn output(path: &Path) -> Result<Box<dyn Write>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufWriter::with_capacity(
            1 << 16,
            io::stdout().lock(),
        )));
    }
    let f = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(Box::new(BufWriter::with_capacity(1 << 16, f)))
}

fn convert(a: &ConvertArgs) -> Result<()> {
    let from = match &a.from {
        Some(name) => Some(Format::from_name(name).with_context(|| {
            format!("unknown format '{name}': blktrace, blkparse (or text), tracefs, iolog")
        })?),
        None => None,
    };
    let mut reader = elevator_trace::open(&a.input, from, a.skip_bad)?;
    let to_stdout = a.output.as_os_str() == "-";
    let mut sink: Box<dyn TraceSink> = match a.to {
        ToFormat::Blktrace if to_stdout => Box::new(BlktraceWriter::new(output(&a.output)?)),
        ToFormat::Blktrace => Box::new(
            BlktraceSet::create(&a.output)
                .with_context(|| format!("cannot write {}.blktrace.N", a.output.display()))?,
        ),
        ToFormat::Text => Box::new(TextWriter::new(output(&a.output)?)),
        ToFormat::Iolog => {
            let version = if a.iolog_version == 2 {
                IologVersion::V2
            } else {
                IologVersion::V3
            };
            let action = a.events.unwrap_or(EventKind::Q).action();
            let keep_names = a.iolog_file.is_none() && reader.format() == Format::Iolog;
            let file = a.iolog_file.as_deref().unwrap_or("replay.dat");
            Box::new(
                IologWriter::new(output(&a.output)?, version, action, file)
                    .per_process_files(keep_names),
            )
        }
    };
    let keep = match a.to {
        // An iolog holds one kind of event.
        ToFormat::Iolog => Some(a.events.unwrap_or(EventKind::Q).action()),
        _ => a.events.map(EventKind::action),
    };
    let mut filter = Filter {
        inner: sink.as_mut(),
        keep,
        no_trim: a.no_trim,
        written: 0,
    };
    let mut read = 0u64;
    for item in reader.by_ref() {
        let written = match item? {
            Item::Record(r) => {
                read += 1;
                filter.record(&r)
            }
            Item::Process { pid, name, time } => filter.process(pid, &name, time),
        };
        written.with_context(|| format!("cannot write {}", a.output.display()))?;
    }
    filter
        .finish()
        .with_context(|| format!("cannot write {}", a.output.display()))?;
    let summary = format!(
        "converted {} ({}) to {} ({}): {read} events read, {} written, {} bad skipped, {} not replayable dropped",
        a.input.display(),
        reader.format(),
        a.output.display(),
        a.to.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string()),
        filter.written,
        reader.skipped(),
        reader.ignored()
    );
    if to_stdout {
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
    Ok(())
}

/// Events per second of this thread's CPU for `work` over `events`.
fn timed(events: u64, work: impl FnOnce() -> Result<u64>) -> Result<f64> {
    let start = thread_cpu_ns();
    let n = work()?;
    let ns = thread_cpu_ns().saturating_sub(start).max(1);
    if n != events {
        bail!("expected {events} events, got {n}");
    }
    Ok(events as f64 * 1e9 / ns as f64)
}

fn count_records(
    items: impl Iterator<Item = Result<Item, elevator_trace::TraceError>>,
) -> Result<u64> {
    let mut n = 0;
    for item in items {
        if let Item::Record(_) = item? {
            n += 1;
        }
    }
    Ok(n)
}

fn write_all(sink: &mut dyn TraceSink, events: u64) -> Result<u64> {
    for (pid, name) in PROCESSES {
        sink.process(pid, name, 0)?;
    }
    let mut n = 0;
    for r in SyntheticTrace::new(events) {
        sink.record(&r)?;
        n += 1;
    }
    sink.finish()?;
    Ok(n)
}

/// Events `bench-convert` generates at most: the trace is held in memory
/// in four forms (about 190 bytes an event; 3 M events fit under 1 GiB of
/// address space).
const MAX_BENCH_EVENTS: u64 = 2_500_000;

fn bench(a: &BenchArgs) -> Result<()> {
    let n = a.events;
    if n > MAX_BENCH_EVENTS {
        bail!(
            "--events {n}: at most {MAX_BENCH_EVENTS} (the generated trace is held in memory, \
             about 190 bytes an event)"
        );
    }
    let mut binary = Vec::new();
    let w_bin = timed(n, || write_all(&mut BlktraceWriter::new(&mut binary), n))?;
    let r_bin = timed(n, || {
        count_records(BlktraceReader::new(&binary[..], "memory", false))
    })?;
    let mut text = Vec::new();
    let w_text = timed(n, || write_all(&mut TextWriter::new(&mut text), n))?;
    let r_text = timed(n, || {
        count_records(BlkparseReader::new(&text[..], "memory", false))
    })?;
    let mut converted = Vec::new();
    let convert = timed(n, || {
        let mut w = TextWriter::new(&mut converted);
        let mut count = 0;
        for item in BlktraceReader::new(&binary[..], "memory", false) {
            match item? {
                Item::Record(r) => {
                    w.record(&r)?;
                    count += 1;
                }
                Item::Process { pid, name, time } => w.process(pid, &name, time)?,
            }
        }
        w.finish()?;
        Ok(count)
    })?;
    if converted != text {
        bail!("blktrace -> text differs from the text written directly");
    }
    drop(converted);
    let mut log = Vec::new();
    let queued = SyntheticTrace::new(n)
        .filter(|r| r.event.action == TraceAction::Queue)
        .count() as u64;
    let w_log = timed(n, || {
        let mut w = IologWriter::new(&mut log, IologVersion::V3, TraceAction::Queue, "/dev/sdb");
        write_all(&mut w, n)
    })?;
    let r_log = timed(queued, || {
        count_records(IologReader::new(&log[..], "memory", false))
    })?;
    println!("trace formats, {n} generated events, per second of CPU (in memory):");
    for (what, rate) in [
        ("blktrace binary write", w_bin),
        ("blktrace binary read", r_bin),
        ("blkparse text write", w_text),
        ("blkparse text read", r_text),
        ("convert blktrace -> text", convert),
        ("iolog v3 write (all events offered)", w_log),
        ("iolog v3 read (Q events)", r_log),
    ] {
        println!("  {what:<38} {:>8.2} M events/s", rate / 1e6);
    }
    Ok(())
}
