//! The job a user gives: fio job files, fio options from a command line,
//! or both ([`load_job`], [`load_jobs`]), read within bounds
//! ([`read_job_text`]), with what job files may name from this machine and environment ([`parse_env`]:
//! `include` files, `${VAR}`, `$ncpus`, `$pagesize`, `$mb_memory`;
//! elevator-fio itself reads nothing); and the seed of a run ([`run_seed`]).

use std::io::Read;
use std::path::Path;

use elevator_fio::job::{JobFile, MAX_FILE_BYTES, MAX_TEXT_BYTES, ParseEnv};

use crate::error::RunError;
use crate::listener::Listener;

/// The job a command line gives: a job file, fio job options (`--name=a
/// --rw=randread ...`), or both (the options then override the file's for
/// every job). Its warnings are in [`JobFile::warnings`].
pub fn load_job(path: Option<&str>, fio: &[String]) -> Result<JobFile, RunError> {
    let paths: Vec<String> = path.map(str::to_string).into_iter().collect();
    load_jobs(&paths, fio, &[])
}

/// [`load_job`] with any number of job files, read as fio reads several in
/// one run ([`JobFile::from_files`]: each file's `[global]` is its own, and
/// a `stonewall` separates the files); `at` gives where each of `fio` is on
/// the user's command line, for errors ([`JobFile::from_files_at`]).
pub fn load_jobs(paths: &[String], fio: &[String], at: &[usize]) -> Result<JobFile, RunError> {
    if paths.is_empty() && fio.is_empty() {
        return Err(RunError::Usage(
            "no job: give a fio job file, or the job as fio options on the command line \
             (e.g. --name=a --rw=randread --bs=4k --size=64m)"
                .to_string(),
        ));
    }
    let env = parse_env();
    JobFile::check_command_line(fio, at, &env)?;
    let mut texts = Vec::with_capacity(paths.len());
    let mut total = 0usize;
    for p in paths {
        let text = read_job_text(Path::new(p), false).map_err(|why| RunError::JobText {
            path: p.clone(),
            why,
        })?;
        // Several files together are bounded as one file and its includes.
        total = total.saturating_add(text.len());
        if total > MAX_TEXT_BYTES {
            return Err(RunError::JobText {
                path: p.clone(),
                why: format!(
                    "with the job files before it, more than {} MiB of text, the most a run's \
                     job files may hold",
                    MAX_TEXT_BYTES >> 20
                ),
            });
        }
        texts.push(text);
    }
    let files: Vec<(&str, &str)> = texts
        .iter()
        .zip(paths)
        .map(|(t, p)| (t.as_str(), p.as_str()))
        .collect();
    Ok(JobFile::from_files_at(&files, fio, at, &env)?)
}

/// The seed of a run: `given` if any; else 0, unless a job sets
/// randrepeat=0, which asks for a different random stream every run (as
/// fio's does): then one from the clock, noted so the run can be repeated.
pub fn run_seed(given: Option<u64>, jobs: &JobFile, listener: &mut dyn Listener) -> u64 {
    match given {
        Some(seed) => seed,
        None if jobs.jobs.iter().any(|j| !j.randrepeat) => {
            let seed = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            listener.note(&format!(
                "randrepeat=0: random seed {seed} for this run (--seed {seed} repeats it)"
            ));
            seed
        }
        None => 0,
    }
}

/// What job files may name from this machine and environment: `include`
/// files (relative to the including file's directory, or the current one),
/// `${VAR}`, `$ncpus`, `$pagesize`, `$mb_memory`.
pub fn parse_env() -> ParseEnv {
    ParseEnv {
        read_include: Box::new(|path: &str| read_job_text(Path::new(path), true)),
        var: Box::new(|name: &str| std::env::var(name).ok()),
        ncpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        pagesize: rustix::param::page_size() as u64,
        mb_memory: machine_memory().map_or(0, |b| b >> 20),
    }
}

/// The text of the job file (or, with `regular_only`, the included file)
/// at `path`, read with a bound: at most [`MAX_FILE_BYTES`], and one byte
/// more to know it is longer, which is refused; `/dev/zero` or an endless
/// pipe is never read whole. An include must be a regular file: it is
/// opened without blocking (a FIFO with no writer would block the open
/// forever) and its type checked on the open file, so nothing can swap it
/// in between; the job file itself may be a pipe (`<(...)`) or device,
/// read within the same bound. The error says why, without the path (the
/// caller names it).
pub fn read_job_text(path: &Path, regular_only: bool) -> Result<String, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    if regular_only {
        open.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = open.open(path).map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if regular_only && !meta.file_type().is_file() {
        return Err(format!(
            "it is a {}: only regular files can be included",
            elevator_io::file_kind::name(&meta.file_type())
        ));
    }
    if meta.is_dir() {
        return Err("it is a directory".to_string());
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "it holds more than {} MiB, the most a job file may (read no further)",
            MAX_FILE_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "it is not text: invalid UTF-8 at byte {}",
            e.utf8_error().valid_up_to()
        )
    })
}

/// The machine's memory in bytes (`MemTotal` of /proc/meminfo), if known.
pub fn machine_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
