//! fio job files and command lines: the options elevator understands, as
//! data.
//!
//! [`JobFile::parse_with`] reads fio's INI format as fio does: `[global]`
//! sections whose options every later job inherits, one section per job,
//! `;`/`#` comments (whole-line or from the first `;` or `#` on a line),
//! `name=value` or bare switches, `include FILE`, `${VAR}` and fio's
//! keywords `$pagesize`, `$mb_memory`, `$ncpus`, fio's size, time, range and
//! per-direction value forms. [`JobFile::from_command_line`] takes options
//! as fio's command line does. Every job becomes a [`JobSpec`] with all
//! inheritance and defaults applied, in order. `numjobs` is kept as a
//! count; the engine makes the clones.
//!
//! Every option fio knows has a verdict ([`fio_options`]): implemented,
//! accepted with a note in [`JobSpec::notes`] because it cannot change what
//! elevator does, or refused by name. An unknown option, a bad value or a
//! malformed line is a [`JobError`] naming the file, the line and the
//! option: never ignored.
//!
//! elevator-fio does no I/O: included files, environment variables and
//! the machine's figures come from the caller's [`ParseEnv`].

mod cmdline;
mod engines;
mod option;
mod options;
mod parse;
mod spec;
mod syntax;
mod table;
mod values;

pub use cmdline::takes_next_argument;
pub use engines::{BLOCK_ENGINES, SYNC_DEPTH_NOTE, SYNC_ENGINES, is_synchronous};
pub use option::Verdict;
pub use parse::{MAX_JOBS, MAX_WARNINGS};
pub use spec::CmdprioSplit;
pub use spec::{
    Amount, Distribution, ErrorKind, ErrorPolicy, ExitWhat, FileService, JobSpec, MemPolicy,
    NumaNodes, RandomGenerator, RateProcess, ReplaySkip, RwMode, RwSequencer, SteadySpec,
    ThinkBlocks, UnifiedRw, Zone, ZoneMode,
};
pub use syntax::{MAX_FILE_BYTES, MAX_INCLUDE_DEPTH, MAX_INCLUDES, MAX_TEXT_BYTES};

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

/// A job file that cannot be used, with where and why: `FILE:LINE: option
/// 'NAME': what`, or for an option given on the command line `--NAME
/// (command line, argument N): what`.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{}{message}", self.location())]
pub struct JobError {
    /// The file (an included file's own path; `command line` for options
    /// given as arguments).
    pub file: String,
    /// Line (1-based; 0 for the file as a whole). On the command line: the
    /// argument's position (1-based).
    pub line: usize,
    /// The option concerned, if any.
    pub option: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl JobError {
    /// Where the error is, as its message begins: `FILE:LINE: option
    /// 'NAME': `, or on the command line `--NAME (command line, argument
    /// N): `, which a user finds on the line they typed.
    fn location(&self) -> String {
        match (&self.option, self.file == cmdline::COMMAND_LINE) {
            (Some(o), true) => format!("--{o} (command line, argument {}): ", self.line),
            (None, true) if self.line > 0 => format!("command line, argument {}: ", self.line),
            (Some(o), false) => format!("{}:{}: option '{o}': ", self.file, self.line),
            (None, _) => format!("{}:{}: ", self.file, self.line),
        }
    }
}

/// Reads an included file by path; the error says why it cannot.
pub type ReadInclude = Box<dyn Fn(&str) -> Result<String, String>>;

/// Looks up an environment variable.
pub type LookupVar = Box<dyn Fn(&str) -> Option<String>>;

/// What parsing needs from the world, supplied by the caller (elevator-fio
/// itself reads no files and no environment).
pub struct ParseEnv {
    /// The text of an included file, by path (as written, resolved against
    /// the including file's directory when relative); the error is why not.
    pub read_include: ReadInclude,
    /// An environment variable for `${NAME}` (`None`: unset, which fio
    /// replaces with nothing).
    pub var: LookupVar,
    /// `$ncpus`: online CPUs.
    pub ncpus: u32,
    /// `$pagesize`: bytes.
    pub pagesize: u64,
    /// `$mb_memory`: total memory in MiB.
    pub mb_memory: u64,
}

impl ParseEnv {
    /// No includes (refused with a clear error), no variables set, and
    /// fixed figures (1 CPU, 4 KiB pages, 1024 MiB): for tests and for
    /// callers without a machine to ask.
    pub fn none() -> ParseEnv {
        ParseEnv {
            read_include: Box::new(|path| {
                Err(format!(
                    "includes are not available here (no file access was given to the parser \
                     for '{path}')"
                ))
            }),
            var: Box::new(|_| None),
            ncpus: 1,
            pagesize: 4096,
            mb_memory: 1024,
        }
    }
}

impl std::fmt::Debug for ParseEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParseEnv")
            .field("ncpus", &self.ncpus)
            .field("pagesize", &self.pagesize)
            .field("mb_memory", &self.mb_memory)
            .finish_non_exhaustive()
    }
}

impl JobFile {
    /// Parse the text of a job file; `path` names it in errors. No
    /// includes, no variables: [`ParseEnv::none`].
    pub fn parse(text: &str, path: &str) -> Result<JobFile, JobError> {
        JobFile::parse_with(text, path, &ParseEnv::none())
    }

    /// Parse the text of a job file at `path` with `env` for includes,
    /// variables and fio's keywords.
    pub fn parse_with(text: &str, path: &str, env: &ParseEnv) -> Result<JobFile, JobError> {
        let mut b = parse::Builder::new(path);
        syntax::items(text, path, env, &mut |item| b.item(item, &[]))?;
        b.finish(&[])
    }

    /// Jobs from command-line arguments as fio takes them (`--name=a`,
    /// `--rw=randread`, `--bs 4k`, bare `--time_based`), with or without a
    /// job file `(text, path)`.
    ///
    /// `--name=X` starts a job (`--name=global` a global section); options
    /// before the first `--name` are global. With a job file, those global
    /// options override the file's values in every job of the file (they
    /// are applied at the end of each job section), and `--name` jobs are
    /// appended after the file's, inheriting its last `[global]` state and
    /// the command-line globals. fio differs here: its command-line globals
    /// are only defaults that the file's own settings override.
    ///
    /// `args` holds job options only (not elevator's or fio's own flags
    /// such as `--output-format`). Errors name `command line` as the file
    /// and the argument's position as the line.
    pub fn from_command_line(
        file: Option<(&str, &str)>,
        args: &[String],
        env: &ParseEnv,
    ) -> Result<JobFile, JobError> {
        JobFile::from_files(file.as_slice(), args, env)
    }

    /// [`JobFile::from_command_line`] with any number of job files
    /// `(text, path)`, read as fio reads several in one run: each file's
    /// `[global]` sections reach only its own jobs (every file starts from
    /// fio's defaults), and the first job of every file after the first
    /// waits for all before it (fio puts a `stonewall` between files, so
    /// each file's jobs are a reporting group of their own). The
    /// command-line globals override every file's jobs; `--name` jobs come
    /// after the last file's. With several files, every job knows its file
    /// ([`JobSpec::file`]) and [`JobFile::path`] lists them.
    ///
    /// fio 3.33 differs on the command line's part, as
    /// [`JobFile::from_command_line`] says: its `--name` jobs run first
    /// (in the first file's group), and its globals are defaults of the
    /// first file only (the second starts from fio's own).
    pub fn from_files(
        files: &[(&str, &str)],
        args: &[String],
        env: &ParseEnv,
    ) -> Result<JobFile, JobError> {
        JobFile::from_files_at(files, args, &[], env)
    }

    /// [`JobFile::from_files`], with where each of `args` is on the user's
    /// command line (`at[i]` for `args[i]`, as errors give it: `--bs
    /// (command line, argument 4)`); an argument with no position given is
    /// numbered by its place in `args` (from 1).
    pub fn from_files_at(
        files: &[(&str, &str)],
        args: &[String],
        at: &[usize],
        env: &ParseEnv,
    ) -> Result<JobFile, JobError> {
        let (global, jobs) = cmdline::items(args, at, env)?;
        let path = match files {
            [] => cmdline::COMMAND_LINE.to_string(),
            [(_, path)] => (*path).to_string(),
            _ => files.iter().map(|(_, p)| *p).collect::<Vec<_>>().join(", "),
        };
        let mut b = parse::Builder::new(&path);
        for (k, &(text, path)) in files.iter().enumerate() {
            if k > 0 {
                b.next_file(&global)?;
            }
            syntax::items(text, path, env, &mut |item| b.item(item, &global))?;
        }
        if let Some(first) = global.first() {
            let header = syntax::Item {
                file: cmdline::COMMAND_LINE.to_string(),
                line: first.line,
                kind: syntax::Kind::Section("global".into()),
            };
            b.item(&header, &global)?;
            for item in &global {
                b.item(item, &global)?;
            }
        }
        for item in &jobs {
            b.item(item, &global)?;
        }
        b.finish(&global)
    }
}

impl JobFile {
    /// Check the command line's job options alone, before any job file is
    /// read (`at` as for [`JobFile::from_files_at`]): its form, every
    /// option's name and `${VAR}`s; values are checked when the jobs are
    /// built.
    pub fn check_command_line(
        args: &[String],
        at: &[usize],
        env: &ParseEnv,
    ) -> Result<(), JobError> {
        cmdline::items(args, at, env).map(|_| ())
    }

    /// The job file `job` is in: its own with several files, else
    /// [`JobFile::path`]. Errors about the job name it with the job's
    /// lines.
    pub fn file_of<'a>(&'a self, job: &'a JobSpec) -> &'a str {
        job.file.as_deref().unwrap_or(&self.path)
    }
}

/// Every option name fio knows (canonical names and aliases), each with
/// elevator's verdict.
pub fn fio_options() -> impl Iterator<Item = (&'static str, Verdict)> {
    option::names().map(|(name, o)| (name, o.verdict))
}

/// elevator's verdict on a fio option name (or alias); `None` when fio has
/// no such option.
pub fn option_verdict(name: &str) -> Option<Verdict> {
    option::lookup(name).map(|o| o.verdict)
}
