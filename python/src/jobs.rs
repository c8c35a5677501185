//! `elevator.run` and `elevator.compare`: fio jobs on a device under one
//! scheduler or several, each run as `elevator run` runs it
//! ([`elevator_run::jobs::JobsRequest`]), its fio JSON rendered by the
//! same function the command calls ([`elevator_run::json::run_json`]).

use elevator_core::{Plugins, canonical_scheduler};
use elevator_fio::RunConfig;
use elevator_fio::job::JobFile;
use elevator_run::job_text::{load_jobs, parse_env, run_seed};
use elevator_run::jobs::JobsRequest;
use elevator_run::names::choose_schedulers;
use elevator_run::target::parse_tunables;
use elevator_run::{Listener, RunError, Taps, Target};
use pyo3::prelude::*;

use crate::error::to_py_err;
use crate::scheduler::plugins_from;

/// The name a job given as text has in messages.
pub const TEXT_NAME: &str = "<text>";

/// A job as Python gives it: a job file's path or a job's text (or
/// neither), and fio options (`--name=value`, as on fio's command line).
#[derive(Clone, Debug)]
pub struct JobSource {
    /// The job file's path.
    pub path: Option<String>,
    /// The job's text.
    pub text: Option<String>,
    /// fio options, each `--name=value`.
    pub fio: Vec<String>,
}

impl JobSource {
    /// The jobs, as `elevator run` reads them, and their warnings.
    pub fn load(&self) -> Result<JobFile, RunError> {
        match &self.text {
            None => load_jobs(
                &self.path.iter().cloned().collect::<Vec<_>>(),
                &self.fio,
                &[],
            ),
            Some(text) => {
                let env = parse_env();
                JobFile::check_command_line(&self.fio, &[], &env)?;
                Ok(JobFile::from_files_at(
                    &[(text.as_str(), TEXT_NAME)],
                    &self.fio,
                    &[],
                    &env,
                )?)
            }
        }
    }
}

/// A listener that keeps the notes (the lines `elevator` prints on
/// stderr), for the result's `notes`.
#[derive(Debug, Default)]
pub struct Notes(pub Vec<String>);

impl Listener for Notes {
    fn note(&mut self, line: &str) {
        self.0.push(line.to_string());
    }
}

/// The scheduler names a call gives, as they run: built-ins with aliases
/// resolved (a note each), `all` for every built-in, each name once; a
/// name of `plugins` (a scheduler written in Python) as it is. `option`
/// names the argument in errors, as the command's option.
pub fn schedulers_named(
    option: &str,
    names: &[String],
    plugins: &Plugins,
    notes: &mut Notes,
) -> Result<Vec<String>, RunError> {
    let several = names.len() != 1;
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let chosen = if canonical_scheduler(name).is_none() && plugins.find(name).is_some() {
            vec![name.clone()]
        } else {
            let c = choose_schedulers(option, std::slice::from_ref(name), several)?;
            for note in c.notes {
                if !notes.0.contains(&note) {
                    notes.0.push(note);
                }
            }
            c.names
        };
        for n in chosen {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    Ok(out)
}

/// One run's outcome for Python: its fio JSON and its notes.
type RunOut = (String, Vec<String>);

/// Run a job under each of `schedulers` in turn, as `elevator run` does
/// (one scheduler) or `elevator compare` (several): the fio JSON of each,
/// and the notes. A run that fails on its own terms fails the call.
fn run_each(
    job: &JobSource,
    device: &str,
    schedulers: &[String],
    plugins: &Plugins,
    seed: Option<u64>,
    set: &[String],
) -> Result<Vec<RunOut>, RunError> {
    let mut notes = Notes::default();
    let jobs = job.load()?;
    notes
        .0
        .extend(jobs.warnings.iter().map(|w| format!("warning: {w}")));
    let target = Target::parse(device)?;
    // Named as the command's options, so that messages are the command's.
    let option = if schedulers.len() == 1 {
        "--scheduler"
    } else {
        "--schedulers"
    };
    let schedulers = schedulers_named(option, schedulers, plugins, &mut notes)?;
    let tunables = parse_tunables(set)?;
    target.check_schedulers_in(&schedulers, &tunables, plugins)?;
    target.check_memory(&jobs, &mut notes)?;
    let seed = run_seed(seed, &jobs, &mut notes);
    let mut out = Vec::with_capacity(schedulers.len());
    for scheduler in &schedulers {
        let cfg = RunConfig {
            scheduler: scheduler.clone(),
            tunables: tunables.clone(),
            seed,
            plugins: plugins.clone(),
        };
        let request = JobsRequest {
            jobs: &jobs,
            target: &target,
            cfg: &cfg,
            taps: &Taps::default(),
        };
        let mut run_notes = Notes(notes.0.clone());
        let run = request.run(&mut run_notes)?;
        let json = elevator_run::json::run_json(&jobs, &run, device, None);
        if let Some(failure) = run.failure {
            return Err(RunError::Failed(failure));
        }
        out.push((json, run_notes.0));
    }
    Ok(out)
}

/// Run fio jobs (`elevator.run`, `elevator.compare`): the job file `path`
/// or the job's `text`, with `fio` options, on `device` under each of
/// `schedulers`; each run's fio JSON and notes. The GIL is released while
/// the runs go on, unless `plugins` (Python schedulers, which `schedulers`
/// name) take part.
#[pyfunction]
#[pyo3(signature = (path, text, fio, device, schedulers, seed, set, plugins))]
#[allow(clippy::too_many_arguments)]
pub fn run_jobs(
    py: Python<'_>,
    path: Option<String>,
    text: Option<String>,
    fio: Vec<String>,
    device: String,
    schedulers: Vec<String>,
    seed: Option<u64>,
    set: Vec<String>,
    plugins: Vec<Bound<'_, PyAny>>,
) -> PyResult<Vec<RunOut>> {
    let (_, plugins) = plugins_from(py, &plugins)?;
    let job = JobSource { path, text, fio };
    let run = || run_each(&job, &device, &schedulers, &plugins, seed, &set);
    // A Python scheduler calls into Python at every step: the GIL stays.
    let out = if plugins.is_empty() {
        py.detach(run)
    } else {
        run()
    };
    out.map_err(|e| to_py_err(&e))
}
