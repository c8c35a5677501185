//! `elevator.advise`: which built-in scheduler suits a job or a trace on
//! a device model, as `elevator advise` answers
//! ([`elevator_run::advise::advise`]), rendered by the same function
//! ([`elevator_run::json::advice_json`]).

use elevator_core::Plugins;
use elevator_run::advise::ranking::{Advice, Goal};
use elevator_run::advise::{AdviseOptions, Workload, advise, workload};
use elevator_run::{RunError, Target};
use pyo3::prelude::*;

use crate::error::to_py_err;
use crate::jobs::{JobSource, Notes, TEXT_NAME, schedulers_named};

/// What `elevator.advise` is asked, as `elevator advise`'s options.
#[derive(Debug)]
struct AdviseArgs {
    job: JobSource,
    trace: bool,
    device: String,
    goal: String,
    schedulers: Vec<String>,
    nomerges: Vec<u8>,
    set: Vec<String>,
    seed: u64,
    depth: Option<u32>,
}

/// Advise as `elevator advise` does: its JSON and the notes.
fn advise_as_command(a: &AdviseArgs) -> Result<(String, Vec<String>), RunError> {
    let mut notes = Notes::default();
    let target = Target::parse(&a.device)?;
    target.model_only("advise")?;
    let schedulers = if a.schedulers.is_empty() {
        Vec::new()
    } else {
        schedulers_named(
            "--schedulers",
            &a.schedulers,
            &Plugins::default(),
            &mut notes,
        )?
    };
    let opts = AdviseOptions::new(schedulers, a.nomerges.clone(), &a.set, a.seed, a.depth)?;
    target.check_schedulers(&opts.schedulers, &opts.tunables)?;
    let goal = match a.goal.as_str() {
        "throughput" => Goal::Throughput,
        "p99" => Goal::P99,
        "fairness" => Goal::Fairness,
        other => {
            return Err(RunError::Usage(format!(
                "--goal {other}: throughput, p99 or fairness"
            )));
        }
    };
    let workload = match &a.job.text {
        Some(_) => Workload::Job {
            jobs: a.job.load()?,
            name: TEXT_NAME.to_string(),
        },
        None => workload(a.job.path.as_deref(), &a.job.fio, a.trace)?,
    };
    if let Workload::Job { jobs, .. } = &workload {
        notes
            .0
            .extend(jobs.warnings.iter().map(|w| format!("warning: {w}")));
        target.check_memory(jobs, &mut notes)?;
    }
    let runs = advise(&workload, &target, &opts, &mut notes)?;
    let advice = Advice::new(workload.name(), workload.kind(), &a.device, goal, runs);
    let mut json = serde_json::to_string_pretty(&elevator_run::json::advice_json(&advice))
        .map_err(|e| RunError::Usage(format!("rendering the advice: {e}")))?;
    json.push('\n');
    Ok((json, notes.0))
}

/// Advise on a scheduler (`elevator.advise`): the JSON `elevator advise
/// --output-format json` prints, and the notes. The GIL is released while
/// the runs go on.
#[pyfunction]
#[pyo3(signature = (path, text, fio, trace, device, goal, schedulers, nomerges, set, seed, depth))]
#[allow(clippy::too_many_arguments)]
pub fn advise_on(
    py: Python<'_>,
    path: Option<String>,
    text: Option<String>,
    fio: Vec<String>,
    trace: bool,
    device: String,
    goal: String,
    schedulers: Vec<String>,
    nomerges: Vec<u8>,
    set: Vec<String>,
    seed: u64,
    depth: Option<u32>,
) -> PyResult<(String, Vec<String>)> {
    let args = AdviseArgs {
        job: JobSource { path, text, fio },
        trace,
        device,
        goal,
        schedulers,
        nomerges,
        set,
        seed,
        depth,
    };
    py.detach(|| advise_as_command(&args))
        .map_err(|e| to_py_err(&e))
}
