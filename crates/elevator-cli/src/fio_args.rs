//! fio's options on elevator's command line.
//!
//! `elevator run --name=a --rw=randread --bs=4k --device ssd` takes job
//! options as fio does: every `--option[=value]` that is not one of
//! elevator's own flags for the subcommand is a fio job option, passed to
//! the job-file parser in order ([`split`]). The machine facts fio's job
//! files may name (`$ncpus`, `$pagesize`, `$mb_memory`), environment
//! variables (`${VAR}`) and `include` files come from here too
//! ([`parse_env`]): elevator-fio itself reads nothing. Job files and
//! includes are read through [`read_job_text`], which reads at most
//! [`MAX_FILE_BYTES`] (and one byte more, to know a file is longer).

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;

use clap::CommandFactory;
use elevator_fio::job::{MAX_FILE_BYTES, ParseEnv};

/// The subcommands that take fio job options on the command line.
const TAKES_JOB_OPTIONS: &[&str] = &["run", "compare", "advise"];

/// `args` (the whole command line) split into what clap parses and the fio
/// job options (`--name=value` or `--switch`) of `run`, `compare` and
/// `advise`, in order. Elevator's own flags (`--device`, `--output-format`,
/// ...) stay with clap, with their values.
pub fn split<C: CommandFactory>(args: Vec<OsString>) -> (Vec<OsString>, Vec<String>) {
    let Some(sub) = args.get(1).and_then(|a| a.to_str()).map(str::to_string) else {
        return (args, Vec::new());
    };
    if !TAKES_JOB_OPTIONS.contains(&sub.as_str()) {
        return (args, Vec::new());
    }
    let command = C::command();
    let Some(sc) = command.find_subcommand(&sub) else {
        return (args, Vec::new());
    };
    // elevator's long flags for this subcommand, and whether each takes a
    // value.
    let flags: Vec<(String, bool)> = sc
        .get_arguments()
        .filter_map(|a| {
            a.get_long()
                .map(|l| (l.to_string(), a.get_action().takes_values()))
        })
        .chain([("help".to_string(), false)])
        .collect();
    let mut keep = Vec::with_capacity(args.len());
    let mut fio = Vec::new();
    let mut rest = args.into_iter();
    keep.extend(rest.by_ref().take(2));
    let mut after_dashes = false;
    while let Some(arg) = rest.next() {
        let Some(text) = arg.to_str().map(str::to_string) else {
            keep.push(arg);
            continue;
        };
        if after_dashes || !text.starts_with("--") || text == "--" {
            after_dashes |= text == "--";
            keep.push(arg);
            continue;
        }
        let body = &text[2..];
        let name = body.split_once('=').map_or(body, |(n, _)| n);
        match flags.iter().find(|(f, _)| f == name) {
            Some(&(_, takes_value)) => {
                keep.push(arg);
                if takes_value
                    && !body.contains('=')
                    && let Some(value) = rest.next()
                {
                    keep.push(value);
                }
            }
            None => fio.push(text.clone()),
        }
    }
    (keep, fio)
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
