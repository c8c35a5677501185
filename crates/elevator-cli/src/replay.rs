//! `elevator replay TRACE`: a recorded block trace through elevator's queue
//! onto a simulated device (virtual clock) or a real one (`file:PATH`,
//! `mem:SIZE`, through io_uring on the real clock), with a report of
//! what elevator did beside what the recording system did.
//!
//! Traces are blktrace binary (one file, or a per-CPU set merged by time),
//! blkparse text, tracefs text or fio iologs, plain or xz/gzip compressed,
//! recognised from the content ([`elevator_trace::open()`]). With
//! `--generate N` it writes a synthetic tracefs trace of N events instead
//! (for the speed and memory benchmarks). `--trace-out NAME` writes what the
//! replay did as blktrace files.

use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use elevator_io::DeviceSpec;
use elevator_io::engine::EngineConfig;
use elevator_io::replay::{RealReplayConfig, replay as replay_real};
use elevator_sim::device::WriteLogDevice;
use elevator_sim::replay::{ReplayConfig, ReplayProgress, replay as replay_sim, replay_on};
use elevator_trace::replay::{Events, FlushModel, Planner, Timing};
use elevator_trace::{DevT, Format, Item, TraceError, TraceReader, TraceSink, dev_t};

use crate::cpu_time::thread_cpu_ns;
use crate::replay_report::{Report, print_json, print_text};
use crate::run::{OutputFormat, check_schedulers, parse_sets};

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
    /// Device: a simulated preset with optional overrides
    /// (null,latency=200,queue_depth=128 resembles a loop device on a VM's
    /// disk), or file:PATH or mem:SIZE.
    #[arg(long, default_value = "null,latency=200,queue_depth=128")]
    device: String,
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
        return crate::replay_gen::generate(&args.trace, n);
    }
    let target = DeviceSpec::parse(&args.device)?;
    let tunables = parse_sets(&args.set)?;
    check_schedulers(&target, std::slice::from_ref(&args.scheduler), &tunables)?;
    let timing = match (args.depth, args.timing) {
        (Some(n), _) => Timing::Depth(n),
        (None, TimingArg::Asap) => Timing::Asap,
        (None, TimingArg::Recorded) => {
            if !(1e-6..=1e6).contains(&args.speed) {
                bail!("--speed {:?}: must be from 0.000001 to 1000000", args.speed);
            }
            Timing::Recorded(args.speed)
        }
    };
    let dev = args.dev.as_deref().map(parse_dev).transpose()?;
    let events = match args.events {
        EventsArg::Q => Events::Queued,
        EventsArg::D => Events::Issued,
    };
    let reader = elevator_trace::open(
        Path::new(&args.trace),
        args.format.map(FormatArg::format),
        args.skip_bad,
    )?;
    let mut trace_out = args
        .trace_out
        .as_deref()
        .map(crate::trace_out::open_sink)
        .transpose()?;
    let tap = Tap {
        inner: reader,
        skipped: Rc::default(),
    };
    let skipped = tap.skipped.clone();
    // The recording's own events are analysed by the planner, which knows
    // the device replayed: other devices' events cost nothing.
    let plan = Planner::new(tap, events, dev).analyze_recorded();
    let flush = FlushModel {
        write_cache: !args.write_through,
        fua: args.fua,
    };
    let mut bar = Bar::new(args.output_format == OutputFormat::Normal);
    let mut write_log_check = None;
    let mut write_log = None;
    let mut real_log = None;
    let cpu0 = thread_cpu_ns();
    let (result, device_name) = match target.model() {
        Some(model) => {
            let cfg = ReplayConfig {
                scheduler: args.scheduler.clone(),
                tunables,
                timing,
                flush,
                skip_bad: args.skip_bad,
                source_name: args.trace.clone(),
            };
            let sink = trace_out.as_mut().map(|s| s.as_mut() as &mut dyn TraceSink);
            let r = if args.write_log.is_some() || model.has_faults() {
                let file: Box<dyn Write + Send> = match &args.write_log {
                    Some(path) => Box::new(std::io::BufWriter::new(
                        std::fs::File::create(path)
                            .with_context(|| format!("--write-log {}", path.display()))?,
                    )),
                    None => Box::new(std::io::sink()),
                };
                let mut tap = WriteLogDevice::new(model.build_sim()?, file)
                    .context("writing the write log (--write-log)")?;
                let r = replay_on(plan, &mut tap, &cfg, sink, &mut |p| bar.update(p));
                let (report, _) = tap
                    .finish(0)
                    .context("writing the write log (--write-log)")?;
                eprintln!("elevator: {}", report.summary());
                if let Some(line) = report.fault_line() {
                    eprintln!("elevator: {line}");
                }
                write_log_check = report.verdict().err();
                write_log = Some(report);
                r
            } else {
                replay_sim(plan, model, &cfg, sink, &mut |p| bar.update(p))
            };
            (
                r.map_err(anyhow::Error::from),
                model_name(&args.device, model),
            )
        }
        None => {
            bar.real = true;
            let mut device = target.open()?;
            if let Some(path) = &args.write_log {
                let limits = elevator_core::Device::limits(&device);
                let log = elevator_io::WriteLog::create(path, &limits, Default::default())?;
                device = device.logged(std::sync::Arc::clone(&log));
                real_log = Some((path, log));
            }
            let cfg = RealReplayConfig {
                engine: EngineConfig {
                    scheduler: args.scheduler.clone(),
                    tunables,
                    ..EngineConfig::default()
                },
                timing,
                flush,
                skip_bad: args.skip_bad,
                source_name: args.trace.clone(),
            };
            let sink = trace_out.as_mut().map(|s| s.as_mut() as &mut dyn TraceSink);
            let r = replay_real(plan, device, &cfg, sink, &mut |records, bios| {
                bar.update(ReplayProgress {
                    records,
                    bios,
                    now: 0,
                })
            });
            (r.map_err(anyhow::Error::from), args.device.clone())
        }
    };
    if let Some((path, log)) = &real_log {
        let c = log
            .finish()
            .with_context(|| format!("--write-log {}", path.display()))?;
        eprintln!("elevator: {}", crate::mark::counts_line(path, &c));
    }
    let cpu = thread_cpu_ns().saturating_sub(cpu0);
    bar.finish();
    let result = result.with_context(|| format!("replaying {}", args.trace))?;
    if let (Some(sink), Some(prefix)) = (trace_out.as_mut(), args.trace_out.as_deref()) {
        sink.finish()
            .with_context(|| format!("--trace-out {prefix}: writing the trace"))?;
    }
    let recorded = result.recorded.clone().unwrap_or_default();
    let records = recorded.records;
    let dev = result.device;
    let recorded_analysis = recorded.device;
    let plugs = recorded.deviceless;
    let report = Report {
        trace: args.trace.clone(),
        device: device_name,
        scheduler: args.scheduler.clone(),
        tunables: args.set.clone(),
        events: args.events,
        timing,
        dev,
        records,
        skipped_lines: *skipped.borrow(),
        result,
        recorded: recorded_analysis,
        recorded_plugs: plugs,
        cpu_ns: cpu,
        real: target.model().is_none(),
    };
    let printed = match args.output_format {
        OutputFormat::Normal => print_text(&report, &mut std::io::stdout().lock()),
        OutputFormat::Json => match &write_log {
            Some(wl) => {
                let mut json = Vec::new();
                print_json(&report, &mut json).and_then(|()| {
                    let text = crate::run::with_write_log(
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
    match write_log_check {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

fn model_name(spec: &str, model: &elevator_sim::device::ModelSpec) -> String {
    match model.build() {
        Ok(d) => format!("{spec} ({})", d.describe()),
        Err(_) => spec.to_string(),
    }
}

fn parse_dev(text: &str) -> Result<DevT> {
    let (a, b) = text
        .split_once([',', ':'])
        .with_context(|| format!("--dev {text}: expected MAJ,MIN"))?;
    let major: u32 = a.trim().parse().with_context(|| format!("--dev {text}"))?;
    let minor: u32 = b.trim().parse().with_context(|| format!("--dev {text}"))?;
    Ok(dev_t(major, minor))
}

/// Passes trace items on to the planner, and the count of lines skipped
/// as bad at the end.
struct Tap<I> {
    inner: I,
    skipped: Rc<RefCell<u64>>,
}

impl Iterator for Tap<TraceReader> {
    type Item = Result<Item, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next();
        if item.is_none() {
            *self.skipped.borrow_mut() = self.inner.skipped();
        }
        item
    }
}

/// A progress bar on stderr (when it is a terminal), after a second.
struct Bar {
    enabled: bool,
    real: bool,
    started: Instant,
    shown: bool,
}

impl Bar {
    fn new(enabled: bool) -> Bar {
        Bar {
            enabled: enabled && std::io::stderr().is_terminal(),
            real: false,
            started: Instant::now(),
            shown: false,
        }
    }

    fn update(&mut self, p: ReplayProgress) {
        if !self.enabled || self.started.elapsed() < Duration::from_secs(1) {
            return;
        }
        if self.real {
            eprint!("\rreplay: {} records, {} bios ", p.records, p.bios);
        } else {
            eprint!(
                "\rreplay: {} records, {} bios, {:.3} s simulated ",
                p.records,
                p.bios,
                p.now as f64 / 1e9
            );
        }
        let _ = std::io::stderr().flush();
        self.shown = true;
    }

    fn finish(&mut self) {
        if self.shown {
            eprint!("\r{}\r", " ".repeat(72));
            let _ = std::io::stderr().flush();
        }
    }
}
