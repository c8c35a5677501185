//! One configuration of a sweep, run: its rows ([`run_config`]), each a
//! [`Cell`] per column of [`Spec::columns`](super::Spec::columns).
//!
//! A job gives a row per job (as fio reports it: a group with
//! `group_reporting`) and direction that did I/O; a trace, one row. A
//! configuration that fails on its own terms (a job's error, a replay
//! that cannot go on) is a row whose `error` says why; figures that need
//! no host clock only, so a configuration's rows are the same wherever it
//! runs.

use std::sync::{Arc, OnceLock};

use elevator_core::Op;
use elevator_fio::RunConfig;
use elevator_fio::report::{rate, stanzas};
use elevator_fio::result::RunResult;
use elevator_sim::device::{Model, ModelSpec, RecordedParams};
use elevator_sim::replay::ReplayConfig;
use elevator_trace::analyze::Analysis;
use elevator_trace::analyze::service_times::{ServiceTimes, recorded_service_times};
use elevator_trace::replay::{Events, FlushModel, Planner, Timing};
use elevator_trace::{Item, TraceReader};

use super::Plugins;
use super::grid::{KeyKind, job_file};
use super::spec::{Spec, Workload};
use crate::error::RunError;
use crate::jobs::JobsRequest;
use crate::listener::Quiet;
use crate::taps::Taps;
use crate::target::Target;

/// One cell of a sweep's table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// A whole number.
    Int(i64),
    /// A number.
    Float(f64),
    /// Text.
    Text(String),
    /// Nothing (a tunable its scheduler lacks; figures of a failed run).
    Empty,
}

impl Cell {
    /// A count as a cell.
    fn count(n: u64) -> Cell {
        Cell::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

/// The result columns of a job's rows.
const JOB_COLUMNS: [&str; 19] = [
    "job",
    "clone",
    "direction",
    "total_ios",
    "io_bytes",
    "iops",
    "bw_bytes",
    "runtime_ns",
    "lat_mean_ns",
    "clat_mean_ns",
    "clat_p50_ns",
    "clat_p99_ns",
    "clat_p999_ns",
    "clat_max_ns",
    "bio_merges",
    "request_merges",
    "util_fraction",
    "elapsed_ns",
    "error",
];

/// The result columns of a trace's row.
const TRACE_COLUMNS: [&str; 18] = [
    "bios",
    "elapsed_s",
    "bw_bytes",
    "requests_issued",
    "flushes_issued",
    "back_merges",
    "front_merges",
    "request_merges",
    "splits",
    "q2d_avg_s",
    "d2c_avg_s",
    "q2c_avg_s",
    "q2c_max_s",
    "read_q2c_p50_ns",
    "read_q2c_p99_ns",
    "write_q2c_p50_ns",
    "write_q2c_p99_ns",
    "error",
];

/// The result columns, after `config` and the grid's keys.
pub(crate) fn result_columns(trace: bool) -> &'static [&'static str] {
    if trace { &TRACE_COLUMNS } else { &JOB_COLUMNS }
}

/// A trace read once: its items, and the recording's service times
/// when a configuration replays on the recorded device.
#[derive(Debug)]
pub(crate) struct ParsedTrace {
    items: Vec<Item>,
    recorded: OnceLock<Result<Arc<ServiceTimes>, String>>,
}

impl Spec {
    /// The spec's trace, parsed on first use (once, whatever the threads).
    pub(crate) fn parsed_trace(&self) -> Result<Option<Arc<ParsedTrace>>, RunError> {
        let Workload::Trace { name, text } = &self.workload else {
            return Ok(None);
        };
        let parsed = self.parsed.get_or_init(|| {
            let input = Box::new(std::io::Cursor::new(text.clone().into_bytes()));
            let items = TraceReader::from_reader(input, name, None, false)
                .and_then(|reader| reader.collect::<Result<Vec<Item>, _>>())
                .map_err(|e| e.to_string())?;
            Ok(Arc::new(ParsedTrace {
                items,
                recorded: OnceLock::new(),
            }))
        });
        parsed
            .clone()
            .map(Some)
            .map_err(|e| RunError::Usage(format!("{}: {e}", self.source)))
    }
}

/// Run configuration `index` of `spec`: its rows, each matching
/// [`Spec::columns`]. A configuration that fails on its own terms is a
/// row with `error`; an error here is the spec's (an index past the end,
/// a trace that cannot be read).
pub fn run_config(
    spec: &Spec,
    index: usize,
    plugins: &Plugins,
) -> Result<Vec<Vec<Cell>>, RunError> {
    let config = spec.config(index).ok_or_else(|| {
        RunError::Usage(format!(
            "{}: no configuration {index} (it has {})",
            spec.source,
            spec.len()
        ))
    })?;
    let mut fixed = spec.fixed.clone();
    let mut fio = fixed.fio.clone();
    for ((key, value), kind) in config.values.iter().zip(&spec.plan.kinds) {
        match kind {
            _ if value.is_empty() => {}
            KeyKind::Scheduler => fixed.scheduler = value.clone(),
            KeyKind::Device => fixed.device = value.clone(),
            KeyKind::Seed => fixed.seed = value.parse().unwrap_or_default(),
            KeyKind::Tunable => fixed.set.push((key.clone(), value.clone())),
            KeyKind::Fio => fio.push((key.clone(), value.clone())),
        }
    }
    let mut prefix = vec![Cell::count(index as u64)];
    prefix.extend(config.values.iter().map(|(_, v)| match v.is_empty() {
        true => Cell::Empty,
        false => Cell::Text(v.clone()),
    }));
    let trace = spec.parsed_trace()?;
    let results = match &trace {
        Some(trace) => replay_rows(trace, &fixed, plugins),
        None => job_rows(spec, &fio, &fixed, plugins),
    };
    let width = result_columns(trace.is_some()).len();
    let rows = match results {
        Ok(rows) => rows,
        // A scheduler written in Python that failed (its traceback) fails
        // the sweep: it is the scheduler's bug, not this configuration's
        // outcome.
        Err(e @ RunError::Scheduler { .. }) => return Err(e),
        Err(e) => {
            let mut row = vec![Cell::Empty; width - 1];
            row.push(Cell::Text(error_text(&e)));
            vec![row]
        }
    };
    Ok(rows
        .into_iter()
        .map(|r| prefix.iter().cloned().chain(r).collect())
        .collect())
}

/// An error with its causes, as one line.
fn error_text(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A job's rows under `fixed` with fio options `fio`.
fn job_rows(
    spec: &Spec,
    fio: &[(String, String)],
    fixed: &super::Fixed,
    plugins: &Plugins,
) -> Result<Vec<Vec<Cell>>, RunError> {
    let jobs = job_file(&spec.workload, fio)?;
    let target = Target::parse(&fixed.device)?;
    // Grid values checked one by one may still hold too much together.
    target.check_memory(&jobs, &mut Quiet)?;
    let cfg = RunConfig {
        scheduler: fixed.scheduler.clone(),
        tunables: fixed.set.clone(),
        seed: fixed.seed,
        plugins: plugins.clone(),
    };
    let taps = Taps::default();
    let request = JobsRequest {
        jobs: &jobs,
        target: &target,
        cfg: &cfg,
        taps: &taps,
    };
    let run = request.run(&mut Quiet)?;
    let error = match &run.failure {
        Some(f) => Cell::Text(f.to_string()),
        None => Cell::Empty,
    };
    let mut rows = Vec::new();
    // Clones of a job (numjobs) have a stanza each, in order, under the
    // job's name; a reporting group has one.
    let mut seen: Vec<&str> = Vec::new();
    for s in stanzas(&jobs, &run.result) {
        let clone = seen.iter().filter(|n| **n == s.name).count();
        seen.push(s.name);
        let runtime = s.runtime();
        for (d, dir) in s.dirs.iter().zip(["read", "write", "trim"]) {
            if d.ios == 0 && d.errors == 0 {
                continue;
            }
            let mut row = vec![
                Cell::Text(s.name.to_string()),
                Cell::count(clone as u64),
                Cell::Text(dir.to_string()),
                Cell::count(d.ios),
                Cell::count(d.bytes),
                Cell::Float(rate(d.ios, runtime)),
                Cell::count(rate(d.bytes, runtime) as u64),
                Cell::count(runtime),
                Cell::Float(d.lat.mean()),
                Cell::Float(d.clat.mean()),
                Cell::count(d.clat.fio_percentile(50.0)),
                Cell::count(d.clat.fio_percentile(99.0)),
                Cell::count(d.clat.fio_percentile(99.9)),
                Cell::count(d.clat.max()),
            ];
            row.extend(run_cells(&run.result));
            row.push(error.clone());
            rows.push(row);
        }
    }
    if rows.is_empty() {
        // No I/O at all: one row still says the configuration ran.
        let mut row = vec![Cell::Empty; 14];
        row.extend(run_cells(&run.result));
        row.push(error);
        rows.push(row);
    }
    Ok(rows)
}

/// The run's own figures, on each of its rows.
fn run_cells(run: &RunResult) -> [Cell; 4] {
    [
        Cell::count(run.queue.bio_merges()),
        Cell::count(run.queue.request_merges),
        Cell::Float(run.utilisation()),
        Cell::count(run.elapsed),
    ]
}

/// A trace's row, replayed as `fixed` says (device, scheduler, tunables).
fn replay_rows(
    trace: &ParsedTrace,
    fixed: &super::Fixed,
    plugins: &Plugins,
) -> Result<Vec<Vec<Cell>>, RunError> {
    let device = fixed.device.as_str();
    let items = || trace.items.iter().cloned().map(Ok);
    let model = if crate::replay::names_recorded(device) {
        recorded_model(trace, device, items)?
    } else {
        let target = Target::parse(device)?;
        target.model_only("a sweep")?.clone()
    };
    let cfg = ReplayConfig {
        scheduler: fixed.scheduler.clone(),
        plugins: plugins.clone(),
        tunables: fixed.set.clone(),
        timing: Timing::Recorded(1.0),
        flush: FlushModel::default(),
        skip_bad: false,
        source_name: "trace".to_string(),
    };
    let plan = Planner::new(items(), Events::Queued, None);
    let r = elevator_sim::replay::replay(plan, &model, &cfg, None, &mut |_| {})?;
    let a: &Analysis = &r.analysis;
    let count = |action: elevator_core::TraceAction| Cell::count(a.counts[action as usize]);
    use elevator_core::TraceAction as A;
    let secs = |ns: f64| Cell::Float(ns / 1e9);
    let pct = |op: Op, p: f64| {
        let h = a.q2c_by_op.get(op as usize);
        Cell::count(h.map_or(0, |h| h.percentile(p)))
    };
    let bytes: u64 = a.queued.iter().map(|c| c.bytes).sum();
    Ok(vec![vec![
        Cell::count(r.bios),
        secs(r.elapsed as f64),
        Cell::count(rate(bytes, r.elapsed) as u64),
        count(A::Issue),
        Cell::count(a.flush_issues),
        count(A::BackMerge),
        count(A::FrontMerge),
        count(A::RqMerge),
        count(A::Split),
        secs(a.q2d.mean()),
        secs(a.d2c.mean()),
        secs(a.q2c.mean()),
        secs(a.q2c.max() as f64),
        pct(Op::Read, 50.0),
        pct(Op::Read, 99.0),
        pct(Op::Write, 50.0),
        pct(Op::Write, 99.0),
        Cell::Empty,
    ]])
}

/// The recorded device as `device` (`recorded[,name=value]...`) asks for
/// it, serving as the trace's recording did (its service times taken
/// once).
fn recorded_model<I>(
    trace: &ParsedTrace,
    device: &str,
    items: impl Fn() -> I,
) -> Result<ModelSpec, RunError>
where
    I: Iterator<Item = Result<Item, elevator_trace::TraceError>>,
{
    let times = trace
        .recorded
        .get_or_init(
            || match recorded_service_times(items(), Events::Queued, None) {
                Ok(Some((_, times))) if !times.is_empty() => Ok(Arc::new(times)),
                Ok(_) => Err("the trace has no completions to take service times from".to_string()),
                Err(e) => Err(e.to_string()),
            },
        )
        .clone()
        .map_err(|why| RunError::Usage(format!("device {device}: {why}")))?;
    let mut model = ModelSpec {
        kind: Model::Recorded(RecordedParams::new(times)),
        faults: Box::default(),
    };
    for part in device.split(',').skip(1).map(str::trim) {
        let (name, value) = part.split_once('=').ok_or_else(|| {
            RunError::Usage(format!("device {device}: '{part}' is not name=value"))
        })?;
        model
            .set(name.trim(), value.trim())
            .map_err(|e| RunError::Usage(format!("device {device}: {e}")))?;
    }
    model
        .validate()
        .map_err(|e| RunError::Usage(format!("device {device}: {e}")))?;
    Ok(model)
}
