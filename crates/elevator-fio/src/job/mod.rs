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

use elevator_core::Nanos;
use thiserror::Error;

/// fio's `rw`: the I/O pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwMode {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `randread`.
    RandRead,
    /// `randwrite`.
    RandWrite,
    /// `rw` / `readwrite`: sequential, mixed by `rwmixread`.
    ReadWrite,
    /// `randrw`: random, mixed by `rwmixread`.
    RandRw,
    /// `trim`: sequential discards.
    Trim,
    /// `randtrim`: random discards.
    RandTrim,
}

impl RwMode {
    /// Whether offsets are random.
    pub fn random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw | RwMode::RandTrim
        )
    }

    /// fio's name for it.
    pub fn name(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
            RwMode::Trim => "trim",
            RwMode::RandTrim => "randtrim",
        }
    }
}

/// fio's `file_service_type`: how a job with several files moves between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileService {
    /// `roundrobin` (fio's default): the next file after every `count` I/Os.
    RoundRobin,
    /// `sequential`: finish one file before the next.
    Sequential,
    /// `random`: a random file every `count` I/Os.
    Random,
}

/// An amount given either in bytes or as a percentage of what it applies to
/// (fio accepts `size=50%`, `offset=10%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amount {
    /// Bytes.
    Bytes(u64),
    /// Percent, 1..=100 (of the file or device).
    Percent(u8),
}

/// One job section, with `[global]` inheritance and defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// The section name.
    pub name: String,
    /// Line of the section header (1-based).
    pub line: usize,
    /// `rw` (default `read`).
    pub rw: RwMode,
    /// `rwmixread`: percent of reads in mixed modes (default 50; `rwmixwrite`
    /// sets 100 minus it).
    pub rwmixread: u8,
    /// `bs` for reads and for writes/trims, in bytes (default 4096; `bs=4k`
    /// sets both, `bs=4k,64k` each).
    pub bs: [u64; 2],
    /// `size`: bytes of I/O per job (and the file size unless `filesize` is
    /// set). `None`: the whole file or device.
    pub size: Option<Amount>,
    /// `offset`: where in each file I/O starts (default 0).
    pub offset: Amount,
    /// `iodepth` (default 1).
    pub iodepth: u32,
    /// `numjobs`: clones of this job, each its own process (default 1).
    pub numjobs: u32,
    /// `thinktime`: pause after an I/O completes before the next (µs unless
    /// a unit is given; default 0), in nanoseconds.
    pub thinktime: Nanos,
    /// `thinktime_blocks`: I/Os issued between pauses (default 1).
    pub thinktime_blocks: u32,
    /// `runtime`: stop after this long (seconds unless a unit is given), in
    /// nanoseconds.
    pub runtime: Option<Nanos>,
    /// `time_based`: run for `runtime` even when `size` is done, starting
    /// over.
    pub time_based: bool,
    /// `direct` (default false). Direct I/O is synchronous in the block
    /// layer's sense (bios carry SYNC) for reads and writes alike.
    pub direct: bool,
    /// `ioengine`: accepted and kept for reports; the simulation does not
    /// need it.
    pub ioengine: String,
    /// `filename`: `None` means fio's default, a file per job clone
    /// (`name.clone.file`).
    pub filename: Option<String>,
    /// `nrfiles` (default 1).
    pub nrfiles: u32,
    /// `filesize`: size of each file (default: `size / nrfiles`).
    pub filesize: Option<u64>,
    /// `file_service_type` (default round robin) and its `:count` (default 1).
    pub file_service: (FileService, u32),
    /// `randrepeat` (default true): the same random sequence on every run.
    pub randrepeat: bool,
    /// `randseed`: the seed (default: fio's fixed seed, so runs repeat).
    pub randseed: Option<u64>,
    /// `group_reporting`: report the job's group as one.
    pub group_reporting: bool,
    /// `stonewall` / `wait_for_previous`: start only when every earlier job
    /// has finished; also starts a new reporting group.
    pub stonewall: bool,
    /// `new_group`: start a new reporting group.
    pub new_group: bool,
    /// `thread`: run clones as threads rather than processes. elevator
    /// always runs a real device's clones on threads of its own process
    /// (and a simulation's in one loop), so it is accepted and changes
    /// nothing.
    pub thread: bool,
    /// `cpus_allowed`: the CPUs the job's threads may run on (sorted, no
    /// repeats); `None` for any. The parser checks the list's form; the
    /// runner checks that the CPUs exist.
    pub cpus_allowed: Option<Vec<u32>>,
    /// The job section's own options as written, for fio's "job options" in
    /// JSON: `(name, value)` in the order they were set (inherited ones are
    /// in [`JobFile::global_options`]; when a name repeats, the last wins).
    pub options: Vec<(String, String)>,
    /// Where each option that applies to this job was set: `(name, line)`,
    /// `[global]` ones first, in file order. [`JobSpec::line_of`] reads it.
    pub option_lines: Vec<(String, usize)>,
}

impl JobSpec {
    /// A job named `name` with fio's defaults.
    pub fn new(name: &str, line: usize) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            line,
            rw: RwMode::Read,
            rwmixread: 50,
            bs: [4096, 4096],
            size: None,
            offset: Amount::Bytes(0),
            iodepth: 1,
            numjobs: 1,
            thinktime: 0,
            thinktime_blocks: 1,
            runtime: None,
            time_based: false,
            direct: false,
            ioengine: "psync".to_string(),
            filename: None,
            nrfiles: 1,
            filesize: None,
            file_service: (FileService::RoundRobin, 1),
            randrepeat: true,
            randseed: None,
            group_reporting: false,
            stonewall: false,
            new_group: false,
            thread: false,
            cpus_allowed: None,
            options: Vec::new(),
            option_lines: Vec::new(),
        }
    }

    /// The line that last set any of `names` for this job (in its section
    /// or an earlier `[global]`), or the section's header line when none
    /// was set: errors about an option point at the line that gave it.
    pub fn line_of(&self, names: &[&str]) -> usize {
        self.option_lines
            .iter()
            .rev()
            .find(|(n, _)| names.contains(&n.as_str()))
            .map_or(self.line, |&(_, line)| line)
    }
}

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
