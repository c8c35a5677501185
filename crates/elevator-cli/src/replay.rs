//! `elevator replay TRACE`: a recorded block trace through elevator's queue
//! onto a simulated device (virtual clock) or a real one (`file:PATH`,
//! `mem:SIZE`, through io_uring on the real clock), with a report of
//! what elevator did beside what the recording system did.
//!
//! Traces are blktrace binary (one file, or a per-CPU set merged by time),
//! blkparse text, tracefs text or fio iologs, plain or xz/gzip compressed,
//! recognised from the content ([`elevator_trace::open()`]). With
//! `--generate N` it writes a synthetic tracefs trace of N events instead
//! (for the speed and memory benchmarks,
//! [`elevator_trace::synthetic::kernel_text`]). `--trace-out NAME` writes what the
//! replay did as blktrace files. The options and the printing:
//! [`elevator_run::replay`] replays.

use std::io::{BufWriter, Write};

use anyhow::{Context, Result};
use clap::ValueEnum;
use elevator_io::cpu::CpuTime;
use elevator_run::replay::{
    DEFAULT_DEVICE, DefaultTarget, ReplayOptions, names_recorded, parse_dev, replay, replay_target,
    timing,
};
use elevator_run::target::parse_tunables;
use elevator_run::{Taps, Target};
use elevator_trace::Format;
use elevator_trace::reorder::ReorderWindow;
use elevator_trace::replay::{Events, FlushModel};

use crate::progress::Stderr;
use crate::replay_report::{Report, print_json, print_text};
use crate::run::OutputFormat;

/// Which events to replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EventsArg {
    /// The bios (Q events).
    #[value(name = "Q", alias = "q")]
    Q,
    /// The issued requests (D events).
    #[value(name = "D", alias = "d")]
    D,
}

/// Timing of the replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TimingArg {
    /// Open loop at the recorded times (see --speed).
    Recorded,
    /// As fast as the queue takes the bios, in order.
    Asap,
}

/// Trace formats this command reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// blktrace's binary records (NAME for a per-CPU set NAME.blktrace.N).
    Blktrace,
    /// blkparse's default text output.
    Blkparse,
    /// tracefs' text of the block tracepoints.
    Tracefs,
    /// fio's iolog (version 2 or 3).
    Iolog,
}

impl EventsArg {
    fn events(self) -> Events {
        match self {
            EventsArg::Q => Events::Queued,
            EventsArg::D => Events::Issued,
        }
    }
}

impl FormatArg {
    fn format(self) -> Format {
        match self {
            FormatArg::Blktrace => Format::Blktrace,
            FormatArg::Blkparse => Format::Blkparse,
            FormatArg::Tracefs => Format::Tracefs,
            FormatArg::Iolog => Format::Iolog,
        }
    }
}

/// Options of `elevator replay`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The trace (`-` for standard input); with --generate, where to write.
    trace: String,
    /// Device: a simulated preset with optional overrides, file:PATH or
    /// mem:SIZE, or `recorded` (each request in the time the recording's
    /// device took, the trace's D2C; overrides queue_depth, seed) [default:
    /// recorded, or, for a trace without completions,
    /// null,latency=200,queue_depth=128]
    #[arg(long)]
    device: Option<String>,
    /// I/O scheduler.
    #[arg(long, default_value = "mq-deadline")]
    scheduler: String,
    /// Set a queue or scheduler tunable (repeatable), e.g. --set nomerges=0.
    #[arg(long = "set", value_name = "TUNABLE=VALUE")]
    set: Vec<String>,
    /// Replay the bios (Q) or the issued requests (D).
    #[arg(long, value_enum, default_value = "Q")]
    events: EventsArg,
    /// Timing: recorded (open loop, see --speed) or asap.
    #[arg(long, value_enum, default_value = "recorded")]
    timing: TimingArg,
    /// Speed-up of recorded timing (2: twice as fast).
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Closed loop: at most N bios outstanding (overrides --timing).
    #[arg(long)]
    depth: Option<u32>,
    /// The trace's format (recognised from the content when not given).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Replay only this device of the trace, MAJ,MIN (default: the most
    /// common among the first bios).
    #[arg(long, value_name = "MAJ,MIN")]
    dev: Option<String>,
    /// Count and leave out bad lines and records instead of stopping.
    #[arg(long)]
    skip_bad: bool,
    /// Put text traces' lines back in time order when they are at most this
    /// much earlier than a line before them (trace_pipe interleaves CPUs a
    /// little out of order): 1s, 250ms, 131us; 0 refuses any step back.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    reorder_window: ReorderWindow,
    /// The device honours FUA writes (default: write-back cache, no FUA,
    /// like a loop device: a FUA write is a write then a flush).
    #[arg(long)]
    fua: bool,
    /// The device has no volatile write cache (flushes are no-ops).
    #[arg(long)]
    write_through: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "normal")]
    output_format: OutputFormat,
    /// Write what the replay did as blktrace files NAME.blktrace.N (blkparse
    /// -i NAME reads them).
    #[arg(long, value_name = "NAME")]
    trace_out: Option<String>,
    /// Write a synthetic tracefs trace of this many events to TRACE instead
    /// of replaying (for benchmarks).
    #[arg(long, value_name = "EVENTS")]
    generate: Option<u64>,
    /// Record what the device received as a write log (writes, flushes,
    /// FUA, discards) to FILE, and check the simulated device's media
    /// against it at the end (after a power_cut_at or vanish_at, if the
    /// spec has one).
    #[arg(long, value_name = "FILE")]
    write_log: Option<std::path::PathBuf>,
}

/// Run `elevator replay`.
pub fn run(args: &Args) -> Result<()> {
    if let Some(n) = args.generate {
        return generate(&args.trace, n);
    }
    let cpu0 = CpuTime::process_total();
    // `recorded` is built from the trace, below.
    let recorded = args.device.as_deref().filter(|d| names_recorded(d));
    let given = match recorded {
        Some(_) => None,
        None => args.device.as_deref().map(Target::parse).transpose()?,
    };
    let scheduler = crate::list::one_scheduler(&args.scheduler)?;
    let tunables = parse_tunables(&args.set)?;
    // Checked before the trace is read (any model takes what the default
    // device takes).
    let schedulers = std::slice::from_ref(&scheduler);
    match &given {
        Some(target) => target.check_schedulers(schedulers, &tunables)?,
        None => Target::parse(DEFAULT_DEVICE)?.check_schedulers(schedulers, &tunables)?,
    }
    let opts = ReplayOptions {
        plugins: Default::default(),
        trace: args.trace.clone(),
        format: args.format.map(FormatArg::format),
        scheduler: scheduler.clone(),
        tunables,
        events: args.events.events(),
        timing: timing(args.depth, args.timing == TimingArg::Asap, args.speed)?,
        dev: args.dev.as_deref().map(parse_dev).transpose()?,
        skip_bad: args.skip_bad,
        reorder_window: args.reorder_window,
        flush: FlushModel {
            write_cache: !args.write_through,
            fua: args.fua,
        },
    };
    // Without --device, the recording's service times serve (or the null
    // device, saying why).
    let DefaultTarget {
        target,
        why_not_recorded,
    } = replay_target(&opts, given, recorded)?;
    let taps = Taps {
        trace_out: args.trace_out.as_deref(),
        observer: None,
        write_log: args.write_log.as_deref(),
    };
    let normal = args.output_format == OutputFormat::Normal;
    let mut stderr = Stderr::new(normal, target.is_real(), String::new());
    let mut run = replay(&opts, &target, &taps, &mut stderr)?;
    if let Some(why) = why_not_recorded {
        run.device = format!("{}, the default: {why}", run.device);
    }
    let report = Report {
        trace: args.trace.clone(),
        scheduler: scheduler.clone(),
        tunables: args.set.clone(),
        events: opts.events,
        timing: opts.timing,
        dev: run.result.device,
        reorder_window: args.reorder_window,
        run,
    };
    let printed = match args.output_format {
        OutputFormat::Normal => print_text(&report, &mut std::io::stdout().lock()),
        OutputFormat::Json => match &report.run.write_log {
            Some(wl) => {
                let mut json = Vec::new();
                print_json(&report, &mut json).and_then(|()| {
                    let text = elevator_run::json::with_write_log(
                        &String::from_utf8_lossy(&json),
                        wl,
                        args.write_log.as_deref(),
                    );
                    Ok(std::io::stdout().lock().write_all(text.as_bytes())?)
                })
            }
            None => print_json(&report, &mut std::io::stdout().lock()),
        },
    };
    match printed {
        // The reader went away (`| head`): nothing more to say.
        Err(e)
            if e.downcast_ref::<std::io::Error>().map(std::io::Error::kind)
                == Some(std::io::ErrorKind::BrokenPipe) => {}
        r => r?,
    }
    if args.output_format == OutputFormat::Normal {
        eprintln!(
            "{}",
            speed_line(&report, CpuTime::process_total().saturating_sub(cpu0))
        );
    }
    match report.run.failure {
        Some(failure) => Err(elevator_run::RunError::Failed(failure).into()),
        None => Ok(()),
    }
}

/// The host-dependent line, kept off stdout: trace records per second of
/// the process's CPU for the whole command (opening and decompressing,
/// parsing, planning, the replay and the report).
fn speed_line(report: &Report, cpu: std::time::Duration) -> String {
    let records = report.run.records;
    let secs = cpu.as_secs_f64();
    format!(
        "elevator: replay of {}: {} records in {:.3} s of host CPU ({:.2} M records per CPU second)",
        report.trace,
        records,
        secs,
        records as f64 / secs.max(1e-9) / 1e6
    )
}

/// Write a synthetic tracefs trace of `events` lines to `path` (`-`:
/// stdout): [`elevator_trace::synthetic::kernel_text`].
fn generate(path: &str, events: u64) -> Result<()> {
    let out: Box<dyn Write> = if path == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(std::fs::File::create(path).with_context(|| format!("creating {path}"))?)
    };
    let mut w = BufWriter::with_capacity(1 << 16, out);
    elevator_trace::synthetic::kernel_text::write(&mut w, events)
        .with_context(|| format!("writing {path}"))?;
    w.flush().with_context(|| format!("writing {path}"))
}
