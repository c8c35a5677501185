//! fio job files: the options elevator understands, as data.
//!
//! [`JobFile::parse`] (in `parse.rs`) reads fio's INI format: `[global]`
//! sections whose options every later job inherits, one section per job,
//! `;`/`#` comments, `name=value` or bare switches. Every job section becomes a
//! [`JobSpec`] with all inheritance and defaults applied, in file order.
//! `numjobs` is kept as a count; the engine makes the clones.
//!
//! An option elevator does not support, a bad value or a malformed line is a
//! [`JobError`] naming the file, the line and the option: never ignored.

mod parse;
mod spec;

pub use spec::{
    Amount, Distribution, FileService, JobSpec, RandomGenerator, RateProcess, RwMode, RwSequencer,
    ThinkBlocks, UnifiedRw, Zone, ZoneMode,
};

use thiserror::Error;

/// A parsed job file.
#[derive(Clone, Debug, PartialEq)]
pub struct JobFile {
    /// Where it came from (for messages).
    pub path: String,
    /// Options of the `[global]` sections as written, for fio's
    /// "global options" in JSON.
    pub global_options: Vec<(String, String)>,
    /// The jobs, in file order.
    pub jobs: Vec<JobSpec>,
    /// What the file does that fio accepts but that is probably a mistake
    /// (an option set twice in one section), each naming its lines. Callers
    /// print them; they do not stop a run.
    pub warnings: Vec<String>,
}

/// A job file that cannot be used, with where and why.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{file}:{line}: {}{message}", option.as_ref().map(|o| format!("option '{o}': ")).unwrap_or_default())]
pub struct JobError {
    /// The file.
    pub file: String,
    /// Line (1-based; 0 for the file as a whole).
    pub line: usize,
    /// The option concerned, if any.
    pub option: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl JobFile {
    /// Parse the text of a job file; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<JobFile, JobError> {
        parse::parse(text, path)
    }
}
