//! Replaying a recorded block trace (blktrace, blkparse or tracefs text, fio
//! iolog; plain, xz or gzip, recognised from the content) through a
//! scheduler on a [`Target`]: a model on the virtual clock or a real device
//! through io_uring, with the same taps; what elevator did is given back
//! beside what the recording system did ([`ReplayRun`]).
//!
//! With no device named, [`default_target`] reads the trace once before
//! the replay for the recording's service times (each request's D2C) and
//! replays on a device that serves as the recording's did
//! ([`elevator_sim::device::recorded`]); a trace without completions of
//! the device replayed (or read from standard input, which cannot be read
//! twice) replays on [`DEFAULT_DEVICE`], and the device's description says
//! why.

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use elevator_core::Plugins;
use elevator_io::engine::EngineConfig;
use elevator_io::replay::RealReplayConfig;
use elevator_io::{DeviceKind, DeviceSpec, FaultSpec};
use elevator_sim::device::{Model, ModelSpec, ParamError, RecordedParams, WriteLogReport};
use elevator_sim::replay::{ReplayConfig, ReplayProgress, SimReplayError};
use elevator_trace::analyze::Analysis;
use elevator_trace::analyze::service_times::{ServiceTimes, recorded_service_times};
use elevator_trace::reorder::{ReorderStats, ReorderWindow};
use elevator_trace::replay::ReplayResult;
use elevator_trace::replay::{Events, FlushModel, Planner, Timing};
use elevator_trace::{DevT, Format, Item, TraceError, TraceReader, TraceSink, dev_t};

use crate::cpu_time::thread_cpu_ns;
use crate::error::{Failure, RunError};
use crate::listener::{Listener, Progress};
use crate::taps::Taps;
use crate::taps::blktrace;
use crate::taps::write_log::{RealLogged, SimLogged};
use crate::target::Target;

/// What to replay, and how.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The trace's path (`-`: standard input).
    pub trace: String,
    /// Its format (`None`: recognised from the content).
    pub format: Option<Format>,
    /// The scheduler.
    pub scheduler: String,
    /// Schedulers written in Python that `scheduler` may name (simulation
    /// only).
    pub plugins: Plugins,
    /// Queue and scheduler tunables.
    pub tunables: Vec<(String, String)>,
    /// The bios (Q) or the issued requests (D).
    pub events: Events,
    /// When each bio is submitted ([`timing`] builds it from options).
    pub timing: Timing,
    /// The trace's device to replay (`None`: the most common among the
    /// first bios).
    pub dev: Option<DevT>,
    /// Count and leave out bad lines and records instead of stopping.
    pub skip_bad: bool,
    /// How far back text traces' lines are put back in time order.
    pub reorder_window: ReorderWindow,
    /// The device's write cache and FUA.
    pub flush: FlushModel,
}

/// What a replay gave.
#[derive(Debug)]
pub struct ReplayRun {
    /// What elevator did.
    pub result: ReplayResult,
    /// The device replayed on, described (a model's parameters after its
    /// spec).
    pub device: String,
    /// Trace records read.
    pub records: u64,
    /// Trace lines skipped as bad.
    pub skipped_lines: u64,
    /// Trace lines put back in time order by the reorder window.
    pub reordered: ReorderStats,
    /// The recording system's own events on the device replayed, if any.
    pub recorded: Option<Analysis>,
    /// The recording's plugs and unplugs (they name no device).
    pub recorded_plugs: Option<Analysis>,
    /// Host CPU time of the replay, ns.
    pub cpu_ns: u64,
    /// Whether the device was real (times are then the real clock's).
    pub real: bool,
    /// What the write log's check found, on a model.
    pub write_log: Option<WriteLogReport>,
    /// The write log's check, if the media disagrees with the log.
    pub failure: Option<Failure>,
}

/// The device a replay runs on when the trace gives no service times: a
/// loop device on a VM's disk, roughly (128 tags, 200 µs per request).
pub const DEFAULT_DEVICE: &str = "null,latency=200,queue_depth=128";

/// The device a replay runs on: `given` (a parsed `--device`), the
/// recording's service times when `recorded` is a `recorded,...` spec, or
/// else [`default_target`]'s choice, with why the recording's times do not
/// serve when they were the default and cannot.
pub fn replay_target(
    opts: &ReplayOptions,
    given: Option<Target>,
    recorded: Option<&str>,
) -> Result<DefaultTarget, RunError> {
    match (given, recorded) {
        (Some(target), _) => Ok(DefaultTarget {
            target,
            why_not_recorded: None,
        }),
        (None, Some(spec)) => Ok(DefaultTarget {
            target: recorded_target(opts, spec)?,
            why_not_recorded: None,
        }),
        (None, None) => default_target(opts),
    }
}

/// The device a replay of the trace `opts` names runs on when none is
/// named, and, when it is not the recording's service times, why.
#[derive(Debug)]
pub struct DefaultTarget {
    /// The device.
    pub target: Target,
    /// Why the recording's service times do not serve (`None`: they do).
    pub why_not_recorded: Option<String>,
}

/// The device a replay of the trace `opts` names runs on when none is
/// named: one serving each request as the recording's device did, from
/// the trace's issues and completions of the device replayed (read once
/// before the replay: the trace is read twice); [`DEFAULT_DEVICE`] when
/// the trace has none, or is read from standard input. A trace that cannot
/// be read gets [`DEFAULT_DEVICE`] too: the replay says what is wrong.
pub fn default_target(opts: &ReplayOptions) -> Result<DefaultTarget, RunError> {
    Ok(match service_times(opts) {
        Ok(times) => DefaultTarget {
            target: recorded(times, RecordedParams::MODEL, &[])?,
            why_not_recorded: None,
        },
        Err(why) => DefaultTarget {
            target: Target::parse(DEFAULT_DEVICE)?,
            why_not_recorded: Some(why),
        },
    })
}

/// Whether a device spec names the recorded device (`recorded`, with
/// overrides: `recorded,queue_depth=128,seed=7`), which only a replay
/// builds, from its trace ([`recorded_target`]).
pub fn names_recorded(spec: &str) -> bool {
    spec.split(',').next().map(str::trim) == Some(RecordedParams::MODEL)
}

/// The recorded device as `spec` (`recorded[,name=value]...`) asks for
/// it, from the trace `opts` names: an error saying why when the trace
/// gives no service times.
pub fn recorded_target(opts: &ReplayOptions, spec: &str) -> Result<Target, RunError> {
    let times =
        service_times(opts).map_err(|why| RunError::Usage(format!("--device {spec}: {why}")))?;
    let mut overrides = Vec::new();
    for part in spec.split(',').skip(1).map(str::trim) {
        let (name, value) = part.split_once('=').ok_or_else(|| {
            RunError::Usage(format!("--device {spec}: '{part}' is not name=value"))
        })?;
        overrides.push((name.trim(), value.trim()));
    }
    recorded(times, spec, &overrides)
}

/// The recorded device serving `times`, named `name`, with `overrides`.
fn recorded(
    times: ServiceTimes,
    name: &str,
    overrides: &[(&str, &str)],
) -> Result<Target, RunError> {
    let mut model = ModelSpec {
        kind: Model::Recorded(RecordedParams::new(Arc::new(times))),
        faults: Box::default(),
    };
    let bad = |e: ParamError| RunError::Usage(format!("--device {name}: {e}"));
    for (k, v) in overrides {
        model.set(k, v).map_err(bad)?;
    }
    model.validate().map_err(bad)?;
    let spec = DeviceSpec {
        kind: DeviceKind::Model(model),
        faults: FaultSpec::default(),
    };
    Ok(Target::from_spec(spec, name))
}

/// The recording's service times of the device a replay of `opts`
/// replays, or why there are none.
fn service_times(opts: &ReplayOptions) -> Result<ServiceTimes, String> {
    if opts.trace == "-" {
        return Err(
            "the trace comes from standard input, read once: no service times taken from it".into(),
        );
    }
    let reader = elevator_trace::open(Path::new(&opts.trace), opts.format, opts.skip_bad)
        .map_err(|e| format!("the trace cannot be read ({e})"))?
        .with_reorder_window(opts.reorder_window);
    match recorded_service_times(reader, opts.events, opts.dev) {
        Ok(Some((_, times))) if !times.is_empty() => Ok(times),
        Ok(Some((dev, _))) => Err(format!(
            "the trace has no completions of device {},{} to take service times from",
            dev >> 20,
            dev & 0xfffff
        )),
        Ok(None) => Err("the trace has no device to replay".into()),
        Err(e) => Err(format!("the trace cannot be read ({e})")),
    }
}

/// The timing options: a closed loop of at most `depth` bios, else as fast
/// as the queue takes them (`asap`), else open loop at the recorded times
/// sped up `speed` times.
pub fn timing(depth: Option<u32>, asap: bool, speed: f64) -> Result<Timing, RunError> {
    Ok(match (depth, asap) {
        (Some(n), _) => Timing::Depth(n),
        (None, true) => Timing::Asap,
        (None, false) => {
            if !(1e-6..=1e6).contains(&speed) {
                return Err(RunError::Usage(format!(
                    "--speed {speed:?}: must be from 0.000001 to 1000000"
                )));
            }
            Timing::Recorded(speed)
        }
    })
}

/// A trace's device as `MAJ,MIN` (or `MAJ:MIN`).
pub fn parse_dev(text: &str) -> Result<DevT, RunError> {
    let (a, b) = text
        .split_once([',', ':'])
        .ok_or_else(|| RunError::Usage(format!("--dev {text}: expected MAJ,MIN")))?;
    let number = |s: &str| {
        s.trim()
            .parse::<u32>()
            .map_err(|e| RunError::Usage(format!("--dev {text}: {e}")))
    };
    Ok(dev_t(number(a)?, number(b)?))
}

/// Replay the trace `opts` names on `target`. `taps.trace_out` gets what
/// the replay did, `taps.write_log` what the device received; the notes
/// are the write log's.
pub fn replay(
    opts: &ReplayOptions,
    target: &Target,
    taps: &Taps<'_>,
    listener: &mut dyn Listener,
) -> Result<ReplayRun, RunError> {
    target.check_plugin_runs_here(&opts.scheduler, &opts.plugins)?;
    let reader = elevator_trace::open(Path::new(&opts.trace), opts.format, opts.skip_bad)?
        .with_reorder_window(opts.reorder_window);
    let mut trace_out = taps.trace_out.map(blktrace::open_sink).transpose()?;
    let read = Rc::default();
    let tap = Skipped {
        inner: reader,
        read: Rc::clone(&read),
    };
    // The recording's own events are analysed by the planner, which knows
    // the device replayed: other devices' events cost nothing.
    let plan = Planner::new(tap, opts.events, opts.dev).analyze_recorded();
    let replaying = || format!("replaying {}", opts.trace);
    let mut write_log = None;
    let mut real_log = None;
    // The recorded device says after the run how it served.
    let mut served = None;
    let cpu0 = thread_cpu_ns();
    let sink = trace_out.as_mut().map(|s| s.as_mut() as &mut dyn TraceSink);
    let result = match target.model() {
        Some(model) => {
            let cfg = ReplayConfig {
                plugins: opts.plugins.clone(),
                scheduler: opts.scheduler.clone(),
                tunables: opts.tunables.clone(),
                timing: opts.timing,
                flush: opts.flush,
                skip_bad: opts.skip_bad,
                source_name: opts.trace.clone(),
            };
            let mut device = SimLogged::build(model, taps.write_log, |e| {
                RunError::from(SimReplayError::from(e)).during(replaying())
            })?;
            let r = elevator_sim::replay::replay_on(plan, device.device(), &cfg, sink, &mut |p| {
                listener.progress(Progress::Replay(p))
            });
            if matches!(model.kind, Model::Recorded(_)) {
                served = Some(format!(
                    "{} ({})",
                    target.name(),
                    device.device().describe()
                ));
            }
            write_log = device.finish(listener)?;
            r.map_err(RunError::from)
        }
        None => {
            let mut device = target.spec().open()?;
            if let Some(path) = taps.write_log {
                let (log, logged) = RealLogged::create(path, device)?;
                device = logged;
                real_log = Some(log);
            }
            let cfg = RealReplayConfig {
                engine: EngineConfig {
                    scheduler: opts.scheduler.clone(),
                    tunables: opts.tunables.clone(),
                    ..EngineConfig::default()
                },
                timing: opts.timing,
                flush: opts.flush,
                skip_bad: opts.skip_bad,
                source_name: opts.trace.clone(),
            };
            let r = elevator_io::replay::replay(plan, device, &cfg, sink, &mut |records, bios| {
                listener.progress(Progress::Replay(ReplayProgress {
                    records,
                    bios,
                    now: 0,
                }))
            });
            r.map_err(RunError::from)
        }
    };
    if let Some(log) = &real_log {
        log.finish(listener)?;
    }
    let cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
    listener.finished();
    let result = result.map_err(|e| e.during(replaying()))?;
    if let (Some(sink), Some(prefix)) = (trace_out.as_mut(), taps.trace_out) {
        sink.finish().map_err(RunError::io(format!(
            "--trace-out {prefix}: writing the trace"
        )))?;
    }
    let recorded = result.recorded.clone().unwrap_or_default();
    let (skipped_lines, reordered) = read.get();
    let failure = write_log
        .as_ref()
        .and_then(|r| r.verdict().err())
        .map(Failure::Check);
    Ok(ReplayRun {
        device: served.unwrap_or_else(|| target.described()),
        records: recorded.records,
        skipped_lines,
        reordered,
        recorded: recorded.device,
        recorded_plugs: recorded.deviceless,
        cpu_ns,
        real: target.is_real(),
        write_log,
        failure,
        result,
    })
}

/// Passes trace items on to the planner, and at the end the count of
/// lines skipped as bad and what the reorder window did.
struct Skipped {
    inner: TraceReader,
    read: Rc<Cell<(u64, ReorderStats)>>,
}

impl Iterator for Skipped {
    type Item = Result<Item, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next();
        if item.is_none() {
            self.read
                .set((self.inner.skipped(), self.inner.reordered()));
        }
        item
    }
}
