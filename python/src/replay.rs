//! `elevator.replay`: a recorded block trace through a scheduler, as
//! `elevator replay` replays it ([`elevator_run::replay::replay`]), its
//! report rendered by the same function the command calls
//! ([`elevator_run::json::replay::replay_json`]).

use elevator_core::Plugins;
use elevator_run::json::replay::{ReplayReport, replay_json};
use elevator_run::replay::{
    DEFAULT_DEVICE, DefaultTarget, ReplayOptions, names_recorded, parse_dev, replay, replay_target,
    timing,
};
use elevator_run::target::parse_tunables;
use elevator_run::{RunError, Taps, Target};
use elevator_trace::Format;
use elevator_trace::reorder::ReorderWindow;
use elevator_trace::replay::{Events, FlushModel};
use pyo3::prelude::*;

use crate::error::to_py_err;
use crate::jobs::{Notes, schedulers_named};
use crate::scheduler::plugins_from;

/// What `elevator.replay` is asked, as `elevator replay`'s options.
#[derive(Debug)]
struct ReplayArgs {
    trace: String,
    device: Option<String>,
    scheduler: String,
    set: Vec<String>,
    events: String,
    timing: String,
    speed: f64,
    depth: Option<u32>,
    format: Option<String>,
    dev: Option<String>,
    skip_bad: bool,
    reorder_window: String,
    fua: bool,
    write_through: bool,
}

/// Replay as `elevator replay` does: its JSON report and the notes.
fn replay_as_command(a: &ReplayArgs, plugins: &Plugins) -> Result<(String, Vec<String>), RunError> {
    let mut notes = Notes::default();
    let recorded = a.device.as_deref().filter(|d| names_recorded(d));
    let given = match recorded {
        Some(_) => None,
        None => a.device.as_deref().map(Target::parse).transpose()?,
    };
    let scheduler = schedulers_named(
        "--scheduler",
        std::slice::from_ref(&a.scheduler),
        plugins,
        &mut notes,
    )?
    .into_iter()
    .next()
    .unwrap_or_else(|| a.scheduler.clone());
    let tunables = parse_tunables(&a.set)?;
    let schedulers = std::slice::from_ref(&scheduler);
    match &given {
        Some(target) => target.check_schedulers_in(schedulers, &tunables, plugins)?,
        None => {
            Target::parse(DEFAULT_DEVICE)?.check_schedulers_in(schedulers, &tunables, plugins)?
        }
    }
    let events = match a.events.as_str() {
        "Q" | "q" => Events::Queued,
        "D" | "d" => Events::Issued,
        other => {
            return Err(RunError::Usage(format!(
                "--events {other}: Q (the bios) or D (the issued requests)"
            )));
        }
    };
    let asap = match a.timing.as_str() {
        "recorded" => false,
        "asap" => true,
        other => {
            return Err(RunError::Usage(format!(
                "--timing {other}: recorded or asap"
            )));
        }
    };
    let format = match &a.format {
        None => None,
        Some(name) => Some(Format::from_name(name).ok_or_else(|| {
            RunError::Usage(format!(
                "--format {name}: one of blktrace, blkparse, tracefs, iolog"
            ))
        })?),
    };
    let reorder_window: ReorderWindow = a
        .reorder_window
        .parse()
        .map_err(|e| RunError::Usage(format!("--reorder-window {}: {e}", a.reorder_window)))?;
    let opts = ReplayOptions {
        trace: a.trace.clone(),
        format,
        scheduler: scheduler.clone(),
        plugins: plugins.clone(),
        tunables,
        events,
        timing: timing(a.depth, asap, a.speed)?,
        dev: a.dev.as_deref().map(parse_dev).transpose()?,
        skip_bad: a.skip_bad,
        reorder_window,
        flush: FlushModel {
            write_cache: !a.write_through,
            fua: a.fua,
        },
    };
    let DefaultTarget {
        target,
        why_not_recorded,
    } = replay_target(&opts, given, recorded)?;
    let mut run = replay(&opts, &target, &Taps::default(), &mut notes)?;
    if let Some(why) = why_not_recorded {
        run.device = format!("{}, the default: {why}", run.device);
    }
    let failure = run.failure.take();
    let write_log = run.write_log.take();
    let report = ReplayReport {
        trace: a.trace.clone(),
        scheduler,
        tunables: a.set.clone(),
        events,
        timing: opts.timing,
        dev: run.result.device,
        reorder_window,
        run,
    };
    let mut json = serde_json::to_string_pretty(&replay_json(&report))
        .map_err(|e| RunError::Usage(format!("rendering the report: {e}")))?;
    json.push('\n');
    if let Some(wl) = &write_log {
        json = elevator_run::json::with_write_log(&json, wl, None);
    }
    if let Some(failure) = failure {
        return Err(RunError::Failed(failure));
    }
    Ok((json, notes.0))
}

/// Replay a trace (`elevator.replay`): its report as JSON (what `elevator
/// replay --output-format json` prints) and the notes. The GIL is
/// released unless a Python scheduler (`plugins`) replays it.
#[pyfunction]
#[pyo3(signature = (trace, device, scheduler, set, events, timing, speed, depth, format, dev, skip_bad, reorder_window, fua, write_through, plugins))]
#[allow(clippy::too_many_arguments)]
pub fn replay_trace(
    py: Python<'_>,
    trace: String,
    device: Option<String>,
    scheduler: String,
    set: Vec<String>,
    events: String,
    timing: String,
    speed: f64,
    depth: Option<u32>,
    format: Option<String>,
    dev: Option<String>,
    skip_bad: bool,
    reorder_window: String,
    fua: bool,
    write_through: bool,
    plugins: Vec<Bound<'_, PyAny>>,
) -> PyResult<(String, Vec<String>)> {
    let (_, plugins) = plugins_from(py, &plugins)?;
    let args = ReplayArgs {
        trace,
        device,
        scheduler,
        set,
        events,
        timing,
        speed,
        depth,
        format,
        dev,
        skip_bad,
        reorder_window,
        fua,
        write_through,
    };
    let out = if plugins.is_empty() {
        py.detach(|| replay_as_command(&args, &plugins))
    } else {
        replay_as_command(&args, &plugins)
    };
    out.map_err(|e| to_py_err(&e))
}
