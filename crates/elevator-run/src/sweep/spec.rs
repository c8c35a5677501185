//! [`Spec`]: what a sweep runs: the workload ([`Workload`], a job's or a
//! trace's text, read once), the values every configuration shares
//! ([`Fixed`]) and the grid; read from a TOML file
//! ([`Spec::from_toml_file`]) or built from parts ([`Spec::new`]), checked
//! in full either way before anything runs, and shipped between processes
//! as JSON.
//!
//! The TOML file (paths are relative to it):
//!
//! ```toml
//! trace = "pgbench.trace.xz"     # or job = "a.fio", or job_text = """..."""
//! device = "hdd-7200"            # default hdd-7200
//! scheduler = "mq-deadline"      # default mq-deadline
//! seed = 7                       # default 0
//! set = { max_sectors_kb = 1280 }  # tunables, as --set
//! fio = { runtime = "2s" }         # fio options (jobs only)
//! [grid]
//! scheduler = ["none", "bfq"]
//! nr_requests = [32, 64]
//! ```

use std::io::Read;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use super::Plugins;
use super::grid::{Config, Plan};
use super::rows::ParsedTrace;
use crate::error::RunError;

/// The most bytes a sweep's trace may hold once decompressed: the trace is
/// held in memory (once, shared by every configuration).
pub const MAX_TRACE_BYTES: u64 = 512 << 20;

/// What a sweep runs: a fio job or a trace, by its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Workload {
    /// A fio job file: its name (for errors) and text.
    Job {
        /// The job file's name, as errors give it.
        name: String,
        /// Its text.
        text: String,
    },
    /// A trace in a text format (blkparse, tracefs, fio iolog),
    /// decompressed.
    Trace {
        /// The trace's name, as errors give it.
        name: String,
        /// Its text.
        text: String,
    },
}

impl Workload {
    /// The job file at `path`, read within the bound `run` reads one in.
    pub fn job_file(path: &Path) -> Result<Workload, RunError> {
        let name = path.display().to_string();
        let text =
            crate::job_text::read_job_text(path, false).map_err(|why| RunError::JobText {
                path: name.clone(),
                why,
            })?;
        Ok(Workload::Job { name, text })
    }

    /// The trace at `path` (plain, gzip or xz), decompressed: a text trace
    /// of at most [`MAX_TRACE_BYTES`].
    pub fn trace_file(path: &Path) -> Result<Workload, RunError> {
        let name = path.display().to_string();
        let reading = |e: std::io::Error| RunError::Io {
            what: format!("reading trace {name}"),
            source: e,
        };
        let file = std::fs::File::open(path).map_err(reading)?;
        let input = elevator_trace::open::decompressed(Box::new(file)).map_err(reading)?;
        let mut bytes = Vec::new();
        input
            .take(MAX_TRACE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(reading)?;
        if bytes.len() as u64 > MAX_TRACE_BYTES {
            return Err(RunError::Usage(format!(
                "trace {name}: more than {} MiB decompressed, the most a sweep holds in memory",
                MAX_TRACE_BYTES >> 20
            )));
        }
        let head = &bytes[..bytes.len().min(4096)];
        if elevator_trace::detect(head) == Some(elevator_trace::Format::Blktrace) {
            return Err(RunError::Usage(format!(
                "trace {name}: blktrace's binary format; a sweep takes a text trace (blkparse, \
                 tracefs, fio iolog): convert it with `elevator trace convert`"
            )));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            RunError::Usage(format!(
                "trace {name}: not text (invalid UTF-8 at byte {})",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Ok(Workload::Trace { name, text })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        match self {
            Workload::Job { name, .. } | Workload::Trace { name, .. } => name,
        }
    }

    /// Whether it is a trace.
    pub fn is_trace(&self) -> bool {
        matches!(self, Workload::Trace { .. })
    }
}

/// The values every configuration has unless the grid varies them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fixed {
    /// The device (a simulated preset, with overrides).
    pub device: String,
    /// The scheduler.
    pub scheduler: String,
    /// The seed.
    pub seed: u64,
    /// Queue and scheduler tunables, as `--set` takes them.
    pub set: Vec<(String, String)>,
    /// fio options for every job (jobs only), as fio's command line takes
    /// them (`runtime` → `--runtime=...`).
    pub fio: Vec<(String, String)>,
}

impl Default for Fixed {
    /// `run`'s defaults: hdd-7200, mq-deadline, seed 0, nothing set.
    fn default() -> Fixed {
        Fixed {
            device: "hdd-7200".to_string(),
            scheduler: "mq-deadline".to_string(),
            seed: 0,
            set: Vec::new(),
            fio: Vec::new(),
        }
    }
}

/// A sweep: a workload, fixed values and a grid, checked.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spec {
    /// Where the spec came from, for errors.
    pub(crate) source: String,
    pub(crate) workload: Workload,
    pub(crate) fixed: Fixed,
    /// The grid's keys and values, in order.
    pub(crate) grid: Vec<(String, Vec<String>)>,
    /// What the grid expands to.
    pub(crate) plan: Plan,
    /// The trace, parsed once on first use and shared.
    #[serde(skip)]
    pub(crate) parsed: Arc<OnceLock<Result<Arc<ParsedTrace>, String>>>,
}

impl Spec {
    /// The spec in the TOML file at `path` (workload paths are relative to
    /// its directory).
    pub fn from_toml_file(path: &Path, plugins: &Plugins) -> Result<Spec, RunError> {
        let source = path.display().to_string();
        let text = crate::job_text::read_job_text(path, false)
            .map_err(|why| RunError::Usage(format!("reading sweep spec {source}: {why}")))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        super::spec_toml::from_toml(&source, &text, dir, plugins)
    }

    /// A spec from its parts (`grid`: each key with its values, in order;
    /// the last varies fastest), checked as a TOML file is.
    pub fn new(
        workload: Workload,
        fixed: Fixed,
        grid: Vec<(String, Vec<String>)>,
        plugins: &Plugins,
    ) -> Result<Spec, RunError> {
        Spec::checked("sweep spec".to_string(), workload, fixed, grid, plugins)
    }

    /// A spec from its parts, named `source` in errors, checked.
    pub(crate) fn checked(
        source: String,
        workload: Workload,
        fixed: Fixed,
        grid: Vec<(String, Vec<String>)>,
        plugins: &Plugins,
    ) -> Result<Spec, RunError> {
        let plan = Plan::check(&source, &workload, &fixed, &grid, plugins)?;
        Ok(Spec {
            source,
            workload,
            fixed,
            grid,
            plan,
            parsed: Arc::default(),
        })
    }

    /// The spec as JSON, for another process ([`Spec::from_json`]).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A spec [`Spec::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<Spec, RunError> {
        let mut spec: Spec = serde_json::from_str(text)
            .map_err(|e| RunError::Usage(format!("sweep spec (JSON): {e}")))?;
        spec.plan.expand(&spec.grid)?;
        Ok(spec)
    }

    /// The number of configurations.
    pub fn len(&self) -> usize {
        self.plan.len()
    }

    /// Whether the grid has no configuration (never: an empty list is
    /// refused).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Configuration `index` (0-based), if there is one.
    pub fn config(&self, index: usize) -> Option<Config> {
        self.plan.config(index, &self.grid)
    }

    /// The table's columns: `config`, the grid's keys, then the results'.
    pub fn columns(&self) -> Vec<String> {
        let mut c = vec!["config".to_string()];
        c.extend(self.grid.iter().map(|(k, _)| k.clone()));
        c.extend(
            super::rows::result_columns(self.workload.is_trace())
                .iter()
                .map(|s| s.to_string()),
        );
        c
    }

    /// The workload.
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// The fixed values.
    pub fn fixed(&self) -> &Fixed {
        &self.fixed
    }

    /// The grid's keys and values, in order.
    pub fn grid(&self) -> &[(String, Vec<String>)] {
        &self.grid
    }

    /// Where the spec came from (its file, or `sweep spec`).
    pub fn source(&self) -> &str {
        &self.source
    }
}
