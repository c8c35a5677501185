//! `elevator trace`: convert traces between formats (blktrace binary,
//! blkparse text, tracefs text, fio iologs; plain, gzip or xz), and measure
//! how fast the readers and writers are: the options, the output file and
//! the summary lines; `elevator_trace::convert` does the work.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Subcommand, ValueEnum};
use elevator_core::TraceAction;
use elevator_trace::blkparse::TextWriter;
use elevator_trace::blktrace_write::{BlktraceSet, BlktraceWriter};
use elevator_trace::convert::{Keep, bench_formats, copy};
use elevator_trace::iolog::{IologVersion, IologWriter};
use elevator_trace::reorder::{ReorderWindow, micros};
use elevator_trace::{Format, TraceSink};

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
    /// Put text traces' lines back in time order when they are at most this
    /// much earlier than a line before them (trace_pipe interleaves CPUs a
    /// little out of order): 1s, 250ms, 131us; 0 refuses any step back.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    reorder_window: ReorderWindow,
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
    let mut reader =
        elevator_trace::open(&a.input, from, a.skip_bad)?.with_reorder_window(a.reorder_window);
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
    let keep = Keep {
        action: match a.to {
            // An iolog holds one kind of event.
            ToFormat::Iolog => Some(a.events.unwrap_or(EventKind::Q).action()),
            _ => a.events.map(EventKind::action),
        },
        no_trim: a.no_trim,
    };
    let copied = copy(reader.by_ref(), sink.as_mut(), keep, &a.output)?;
    let reordered = reader.reordered();
    let reordered = if reordered.records > 0 {
        format!(
            ", {} reordered (largest inversion {} µs, --reorder-window {})",
            reordered.records,
            micros(reordered.largest_inversion_ns),
            a.reorder_window
        )
    } else {
        String::new()
    };
    let summary = format!(
        "converted {} ({}) to {} ({}): {} events read, {} written, {} bad skipped, {} not replayable dropped{reordered}",
        a.input.display(),
        reader.format(),
        a.output.display(),
        a.to.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string()),
        copied.read,
        copied.written,
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
    let rates = bench_formats(n, thread_cpu_ns)?;
    println!("trace formats, {n} generated events, per second of CPU (in memory):");
    for (what, rate) in rates {
        println!("  {what:<38} {:>8.2} M events/s", rate / 1e6);
    }
    Ok(())
}
