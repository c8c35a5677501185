//! `elevator crash-states LOG --out DIR`: build the images a power cut
//! could leave, under the write log's rules (planned by
//! `elevator_trace::write_log::crash`), and run a checker on each.
//!
//! Images are built in log order from one working image: it is brought up
//! to a state's durable records, copied, and the state's surviving
//! unflushed records are applied to the copy, their data read from the log
//! with pread; nothing holds the log's data in memory. Checks run as
//! `sh -c CMD` in their own process group, `--jobs` at a time, while the
//! next images are built.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use elevator_trace::write_log::crash::{self, CrashState, PlanOptions, StateId};

use crate::write_log_cmd::{LoadedLog, RecordApplier, create_image};

mod check;
mod report;

use check::CheckJob;
use report::{Report, shell_quote};

/// `elevator crash-states ...`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The write log (one that carries data: from a real device or `serve`).
    /// Writes are applied with their data, write-zeroes and discards as
    /// holes that read as zeroes (what a discard leaves is undefined;
    /// zeroes is one choice).
    log: PathBuf,
    /// Where the images (ID.img), the marks files (ID.marks), the
    /// checkers' output (ID.out: the last 64 KiB of it, after a line
    /// counting what was dropped) and report.txt / report.json go (created
    /// if missing; with --only, report-ID.txt / .json).
    #[arg(long)]
    out: PathBuf,
    /// Run `sh -c CMD` on each state: `{}` in CMD is replaced by the
    /// image's path (shell-quoted if it needs it), and the environment has ELEVATOR_CRASH_IMAGE (the
    /// image), ELEVATOR_CRASH_STATE (its ID) and ELEVATOR_CRASH_MARKS (a
    /// file listing, one per line, every mark recorded before the cut).
    /// Exit status 0 passes.
    #[arg(long, value_name = "CMD")]
    check: Option<String>,
    /// Seconds a check may take (at most 86400), its output included:
    /// past it the checker's process group is killed and the state fails.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    timeout: f64,
    /// Seeds which subsets of unflushed writes are explored.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// States between flush boundaries to explore per epoch (all of them
    /// when there are no more).
    #[arg(long, value_name = "K", default_value_t = 4)]
    between: u64,
    /// States to explore at most: with --check, more are spread evenly over
    /// the log; without, more is refused.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    max_states: usize,
    /// Checks to run at once (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Which states' images to keep after their check.
    #[arg(long, value_enum, default_value = "failing")]
    keep: Keep,
    /// Build (and check) only this state, e.g. f12, c17-3 or end (with the
    /// seed that named it); its image is kept.
    #[arg(long, value_name = "ID")]
    only: Option<String>,
    /// Start from a copy of this image instead of zeroes.
    #[arg(long, value_name = "IMG")]
    base: Option<PathBuf>,
    /// Use the whole records before a truncation or corruption instead of
    /// refusing the log.
    #[arg(long)]
    valid_prefix: bool,
}

/// Which images stay after their check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Keep {
    /// The failing states'.
    Failing,
    /// Every state's.
    All,
    /// None.
    None,
}

/// How a state's check ended.
#[derive(Clone, Debug, PartialEq)]
enum Verdict {
    /// Not checked (no --check).
    Unchecked,
    /// Exit status 0.
    Pass,
    /// Anything else, said in words.
    Fail(String),
}

/// One state, built.
struct Built {
    state: CrashState,
    kept: u64,
    /// The first [`KEPT_SHOWN`] records kept.
    kept_first: Vec<u64>,
    marks: Vec<String>,
    image: PathBuf,
    marks_file: PathBuf,
    output: PathBuf,
    verdict: Verdict,
    tail: Vec<String>,
    /// Bytes of the checker's output dropped (ID.out keeps the last
    /// [`check::OUTPUT_KEPT`]).
    output_dropped: u64,
}

/// A finished check.
struct Done {
    index: usize,
    verdict: Verdict,
    tail: Vec<String>,
    /// Bytes of the checker's output dropped before the tail kept in
    /// ID.out.
    output_dropped: u64,
}

/// Kept records named in a state's description.
const KEPT_SHOWN: usize = 8;

/// Lines of a failing checker's output in the report.
const TAIL_LINES: usize = 10;

/// Run `elevator crash-states ...`.
pub fn run(args: &Args) -> Result<()> {
    let timeout = crate::serve::seconds_option("--timeout", args.timeout)?;
    let log = LoadedLog::load(&args.log)?;
    log.check_has_data()?;
    log.check_whole(args.valid_prefix)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let opts = PlanOptions {
        seed: args.seed,
        between: args.between,
        max_states: args.max_states,
    };
    let (states, possible, planned) = match &args.only {
        Some(id) => {
            let id: StateId = id.parse().context("--only")?;
            let state = crash::rebuild(&log.heads, id, args.seed)
                .with_context(|| format!("--only {id} in {}", log.path.display()))?;
            (vec![state], 1u128, 1usize)
        }
        None => {
            let plan = crash::plan(&log.heads, &opts);
            if args.check.is_none() && plan.planned > args.max_states {
                bail!(
                    "{} has {} crash states to explore (flush boundaries, the end, and up to {} per epoch between boundaries), more than --max-states {}: without --check every one is an image on disk. Raise --max-states, lower --between, or pass --check (which spreads {} states over the log and keeps only the failing images)",
                    log.path.display(),
                    plan.planned,
                    args.between,
                    args.max_states,
                    args.max_states
                );
            }
            (plan.states, plan.possible, plan.planned)
        }
    };
    let keep = if args.check.is_none() || args.only.is_some() {
        Keep::All
    } else {
        args.keep
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let built = build_and_check(args, &log, &states, keep, jobs, timeout)?;
    let report = Report {
        args,
        log: &log,
        possible,
        planned,
        built: &built,
    };
    let text = report.text();
    print!("{text}");
    // --only (a rebuild, often into the first run's DIR) keeps that run's
    // report: its own is report-ID.
    let stem = match &args.only {
        Some(id) => format!("report-{id}"),
        None => "report".to_string(),
    };
    let report_txt = args.out.join(format!("{stem}.txt"));
    std::fs::write(&report_txt, &text)
        .with_context(|| format!("writing {}", report_txt.display()))?;
    let report_json = args.out.join(format!("{stem}.json"));
    let json = serde_json::to_string_pretty(&report.json())?;
    std::fs::write(&report_json, json + "\n")
        .with_context(|| format!("writing {}", report_json.display()))?;
    let failed = built
        .iter()
        .filter(|b| matches!(b.verdict, Verdict::Fail(_)))
        .count();
    if failed > 0 {
        bail!(
            "{failed} of {} crash states failed the check (report: {})",
            built.len(),
            report_txt.display()
        );
    }
    Ok(())
}

/// Build every state's image in log order, checking each as it is built.
fn build_and_check(
    args: &Args,
    log: &LoadedLog,
    states: &[CrashState],
    keep: Keep,
    jobs: usize,
    timeout: Duration,
) -> Result<Vec<Built>> {
    // SIGINT and SIGTERM stop the run: the checkers run in their own
    // process groups (so that a timeout can kill all of theirs), which the
    // terminal's ^C does not reach, so they are killed here.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing a signal handler")?;
    }
    let working_path = args.out.join(".working.img");
    let working = create_image(&working_path, log.capacity_bytes(), args.base.as_deref())?;
    let mut applier = RecordApplier::new(log)?;
    let mut applied = 0usize;
    let mut synced = usize::MAX;
    let mut built: Vec<Built> = Vec::with_capacity(states.len());
    let (tx, rx) = mpsc::channel::<Done>();
    let mut running = 0usize;
    let total = states.len();
    let mut step = |index: usize, state: &CrashState, running: &mut usize| -> Result<()> {
        debug_assert!(
            applied <= state.durable as usize,
            "states come in log order"
        );
        let durable = (state.durable as usize).min(log.heads.len());
        ensure_room(args, log, state, &working, applied..durable)?;
        while applied < durable {
            applier.apply(&working, &log.heads[applied], log.offsets[applied])?;
            applied += 1;
        }
        if applied != synced {
            // SEEK_DATA below must see every write as data.
            working
                .sync_data()
                .with_context(|| format!("syncing {}", working_path.display()))?;
            synced = applied;
        }
        let b = build_state(args, log, state, &working, &mut applier)?;
        built.push(b);
        let Some(cmd) = &args.check else {
            eprintln!(
                "elevator: crash-states: [{}/{total}] {} built",
                index + 1,
                state.id
            );
            return Ok(());
        };
        while *running >= jobs {
            let done = rx.recv().context("a check's thread went away")?;
            *running -= 1;
            finish(&mut built, done, keep, total);
        }
        let b = &built[index];
        let job = CheckJob {
            index,
            command: cmd.replace("{}", &shell_quote(&b.image.to_string_lossy())),
            id: b.state.id.to_string(),
            image: b.image.clone(),
            marks_file: b.marks_file.clone(),
            output: b.output.clone(),
            timeout,
            stop: Arc::clone(&stop),
        };
        let tx = tx.clone();
        std::thread::spawn(move || {
            let done = job.run();
            let _ = tx.send(done);
        });
        *running += 1;
        Ok(())
    };
    let mut failure = None;
    for (index, state) in states.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Err(e) = step(index, state, &mut running) {
            // Stop the checks under way before saying why.
            stop.store(true, Ordering::Relaxed);
            failure = Some(e);
            break;
        }
    }
    // Only the checks' threads hold senders now: one that died without
    // saying so ends the wait below with an error, not a hang.
    drop(tx);
    drop(working);
    while running > 0 {
        let done = rx.recv().context("a check's thread went away")?;
        running -= 1;
        finish(&mut built, done, keep, total);
    }
    if let Some(e) = failure {
        let _ = std::fs::remove_file(&working_path);
        return Err(e);
    }
    std::fs::remove_file(&working_path)
        .with_context(|| format!("removing {}", working_path.display()))?;
    if stop.load(Ordering::Relaxed) {
        bail!(
            "interrupted after {} of {total} states; their images are in {}",
            built.len(),
            args.out.display()
        );
    }
    Ok(built)
}

/// The most room kept free on --out's file system: images are not built
/// into the last 64 MiB (or the last twentieth of a smaller file system).
const DISK_RESERVE: u64 = 64 << 20;

/// Refuse to go on when building `state` could leave --out's file system
/// with less than its reserve free: the working image grows by the
/// records in `pending` (applied next), and the state's image takes at
/// most the working image's blocks and its kept records' (both bounded by
/// the device's capacity).
fn ensure_room(
    args: &Args,
    log: &LoadedLog,
    state: &CrashState,
    working: &File,
    pending: std::ops::Range<usize>,
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let bytes = |heads: &mut dyn Iterator<Item = &elevator_trace::write_log::RecordHead>| {
        // Only writes take disk: write-zeroes and discards punch holes
        // (on file systems that cannot, they write zeroes, uncounted).
        heads
            .filter(|h| h.kind == elevator_trace::write_log::Kind::Write)
            .map(|h| u64::from(h.sectors) * 512)
            .fold(0u64, u64::saturating_add)
    };
    let growth = bytes(&mut log.heads[pending].iter()).min(log.capacity_bytes());
    let working_now = working
        .metadata()
        .map_or(log.capacity_bytes(), |m| m.blocks().saturating_mul(512));
    let kept = state.kept(&log.heads);
    let kept_bytes = bytes(&mut kept.iter().filter_map(|&seq| log.heads.get(seq as usize)));
    let image = working_now
        .saturating_add(growth)
        .saturating_add(kept_bytes)
        .min(log.capacity_bytes());
    let need = growth.saturating_add(image);
    let fs = rustix::fs::statvfs(&args.out)
        .with_context(|| format!("--out {}: its file system's free space", args.out.display()))?;
    let free = fs.f_bavail.saturating_mul(fs.f_frsize);
    let reserve = DISK_RESERVE.min(fs.f_blocks.saturating_mul(fs.f_frsize) / 20);
    if free < need.saturating_add(reserve) {
        bail!(
            "--out {}: {free} bytes free, state {} needs up to {need} and {reserve} are kept free: free some space, lower --max-states, or keep fewer images (--keep)",
            args.out.display(),
            state.id
        );
    }
    Ok(())
}

/// Copy `from` (`len` bytes) to a new file `to`, its data extents only:
/// holes stay holes, and copy_file_range lets the file system share
/// blocks. A file system without SEEK_DATA or copy_file_range gets a plain
/// copy.
fn copy_sparse(from: &File, len: u64, to: &Path) -> Result<File> {
    use rustix::fs::SeekFrom;
    let out = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(to)
        .with_context(|| format!("creating {}", to.display()))?;
    out.set_len(len)?;
    let mut pos = 0u64;
    let mut buf = Vec::new();
    while pos < len {
        let (start, end) = match rustix::fs::seek(from, SeekFrom::Data(pos)) {
            Ok(start) => {
                let end = rustix::fs::seek(from, SeekFrom::Hole(start)).unwrap_or(len);
                (start, end.min(len))
            }
            Err(rustix::io::Errno::NXIO) => break,
            Err(_) => (pos, len),
        };
        if start >= len {
            break;
        }
        copy_range(from, &out, start, end, &mut buf)?;
        pos = end;
    }
    Ok(out)
}

/// Copy bytes `start..end` of `from` to the same place in `to`.
fn copy_range(from: &File, to: &File, start: u64, end: u64, buf: &mut Vec<u8>) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let (mut off_in, mut off_out) = (start, start);
    while off_in < end {
        let want = (end - off_in).min(1 << 30) as usize;
        match rustix::fs::copy_file_range(from, Some(&mut off_in), to, Some(&mut off_out), want) {
            Ok(n) if n > 0 => continue,
            _ => break,
        }
    }
    // What copy_file_range did not copy (a file system without it).
    buf.resize(1 << 20, 0);
    while off_in < end {
        let n = (end - off_in).min(buf.len() as u64) as usize;
        from.read_exact_at(&mut buf[..n], off_in)?;
        to.write_all_at(&buf[..n], off_in)?;
        off_in += n as u64;
    }
    Ok(())
}

/// Copy the working image (at `state.durable`) and apply the state's
/// surviving unflushed records; write its marks file.
fn build_state(
    args: &Args,
    log: &LoadedLog,
    state: &CrashState,
    working: &File,
    applier: &mut RecordApplier,
) -> Result<Built> {
    let id = state.id.to_string();
    let image = args.out.join(format!("{id}.img"));
    let file = copy_sparse(working, log.capacity_bytes(), &image)
        .with_context(|| format!("copying the working image to {}", image.display()))?;
    let kept = state.kept(&log.heads);
    for &seq in &kept {
        let i = seq as usize;
        applier.apply(&file, &log.heads[i], log.offsets[i])?;
    }
    let marks: Vec<String> = log
        .marks
        .iter()
        .filter(|(seq, _)| *seq < state.cut)
        .map(|(_, t)| t.clone())
        .collect();
    let marks_file = args.out.join(format!("{id}.marks"));
    let mut text = String::new();
    for m in &marks {
        text.push_str(&m.replace('\n', " "));
        text.push('\n');
    }
    std::fs::write(&marks_file, text)
        .with_context(|| format!("writing {}", marks_file.display()))?;
    Ok(Built {
        state: *state,
        kept: kept.len() as u64,
        kept_first: kept.iter().take(KEPT_SHOWN).copied().collect(),
        marks,
        image,
        marks_file,
        output: args.out.join(format!("{id}.out")),
        verdict: Verdict::Unchecked,
        tail: Vec::new(),
        output_dropped: 0,
    })
}

/// Record a finished check, say so on stderr, and delete what is not kept.
fn finish(built: &mut [Built], done: Done, keep: Keep, total: usize) {
    let b = &mut built[done.index];
    b.verdict = done.verdict;
    b.tail = done.tail;
    b.output_dropped = done.output_dropped;
    let (word, why) = match &b.verdict {
        Verdict::Pass => ("passed", String::new()),
        Verdict::Fail(why) => ("FAILED", format!(" ({why})")),
        Verdict::Unchecked => ("built", String::new()),
    };
    eprintln!(
        "elevator: crash-states: [{}/{total}] {} {word}{why}",
        done.index + 1,
        b.state.id
    );
    let drop_it = match keep {
        Keep::All => false,
        Keep::None => true,
        Keep::Failing => b.verdict == Verdict::Pass,
    };
    if drop_it {
        for p in [&b.image, &b.marks_file, &b.output] {
            let _ = std::fs::remove_file(p);
        }
    }
}
