//! Crash states of a write log, built and checked: which states to explore
//! ([`plan`], under the rules of `elevator_trace::write_log::crash`), each
//! one's image on disk, and a checker run on it ([`build_and_check`]).
//! What `elevator crash-states` runs, and its [`Report`]; the command
//! keeps its options and prints.
//!
//! Images are built in log order from one working image: it is brought up
//! to a state's durable records, copied, and the state's surviving
//! unflushed records are applied to the copy, their data read from the log
//! with pread; nothing holds the log's data in memory. Checks run as
//! `sh -c CMD` in their own process group, `jobs` at a time, while the
//! next images are built.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use elevator_trace::write_log::crash::{self, CrashState, Plan, PlanError, PlanOptions, StateId};
use elevator_trace::write_log::{Kind, LoadedLog, RecordHead};
use thiserror::Error;

use crate::write_log::{ImageError, RecordApplier, create_image, doing};

mod check;
mod image;
mod report;

pub use check::OUTPUT_KEPT;
use check::{CheckJob, Done};
pub use image::CopyError;
pub use report::Report;

/// Why crash states could not be planned, built or checked.
#[derive(Debug, Error)]
pub enum CrashStatesError {
    /// Making an image, applying a record onto one or another file
    /// operation failed.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// Copying the working image to a state's image failed.
    #[error("copying the working image to {}", to.display())]
    Copy {
        /// The state's image.
        to: PathBuf,
        /// Why.
        #[source]
        source: CopyError,
    },
    /// The state asked for cannot be rebuilt from the log.
    #[error("--only {id} in {}", log.display())]
    Rebuild {
        /// The state.
        id: StateId,
        /// The log.
        log: PathBuf,
        /// Why.
        #[source]
        source: PlanError,
    },
    /// Unchecked, the plan has more states (each an image) than allowed.
    #[error(
        "{} has {planned} crash states to explore (flush boundaries, the end, and up to {between} per epoch between boundaries), more than --max-states {max_states}: without --check every one is an image on disk. Raise --max-states, lower --between, or pass --check (which spreads {max_states} states over the log and keeps only the failing images)",
        log.display()
    )]
    TooManyStates {
        /// The log.
        log: PathBuf,
        /// States planned.
        planned: usize,
        /// States between boundaries per epoch.
        between: u64,
        /// The most states allowed.
        max_states: usize,
    },
    /// The output directory's free space could not be learnt.
    #[error("--out {}: its file system's free space", out.display())]
    FreeSpace {
        /// The output directory.
        out: PathBuf,
        /// Why.
        #[source]
        source: rustix::io::Errno,
    },
    /// Building the next state could fill the output's file system.
    #[error(
        "--out {}: {free} bytes free, state {id} needs up to {need} and {reserve} are kept free: free some space, lower --max-states, or keep fewer images (--keep)",
        out.display()
    )]
    NoRoom {
        /// The output directory.
        out: PathBuf,
        /// Bytes free.
        free: u64,
        /// The state.
        id: StateId,
        /// Bytes it may take.
        need: u64,
        /// Bytes kept free.
        reserve: u64,
    },
    /// A check's thread ended without saying how its check ended.
    #[error("a check's thread went away")]
    CheckThreadGone(#[source] mpsc::RecvError),
    /// SIGINT or SIGTERM stopped the run.
    #[error(
        "interrupted after {built} of {total} states; their images are in {}",
        out.display()
    )]
    Interrupted {
        /// States built.
        built: usize,
        /// States planned.
        total: usize,
        /// The output directory.
        out: PathBuf,
    },
}

/// Which images stay after their check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// The failing states'.
    Failing,
    /// Every state's.
    All,
    /// None.
    None,
}

/// How a state's check ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Not checked (no check command).
    Unchecked,
    /// Exit status 0.
    Pass,
    /// Anything else, said in words.
    Fail(String),
}

/// One state, built (and checked, once its check ends).
#[derive(Debug)]
pub struct BuiltState {
    /// The state.
    pub state: CrashState,
    /// Unflushed records it kept.
    pub kept: u64,
    /// The first [`KEPT_SHOWN`] records kept.
    pub kept_first: Vec<u64>,
    /// The marks recorded before its cut.
    pub marks: Vec<String>,
    /// Its image, ID.img.
    pub image: PathBuf,
    /// Its marks file, ID.marks.
    pub marks_file: PathBuf,
    /// Its checker's output, ID.out.
    pub output: PathBuf,
    /// How its check ended.
    pub verdict: Verdict,
    /// The last lines of a failing checker's output.
    pub tail: Vec<String>,
    /// Bytes of the checker's output dropped (ID.out keeps the last
    /// [`OUTPUT_KEPT`]).
    pub output_dropped: u64,
}

/// Kept records named in a state's description.
pub const KEPT_SHOWN: usize = 8;

/// The states of `log` to explore: only `only` when given (rebuilt with
/// `opts.seed`), else the plan under `opts`, which must fit in
/// `opts.max_states` when unchecked (every state an image on disk).
pub fn plan(
    log: &LoadedLog,
    only: Option<StateId>,
    opts: &PlanOptions,
    checked: bool,
) -> Result<Plan, CrashStatesError> {
    if let Some(id) = only {
        let state = crash::rebuild(&log.heads, id, opts.seed).map_err(|source| {
            CrashStatesError::Rebuild {
                id,
                log: log.path.clone(),
                source,
            }
        })?;
        return Ok(Plan {
            states: vec![state],
            possible: 1,
            planned: 1,
            ..Plan::default()
        });
    }
    let plan = crash::plan(&log.heads, opts);
    if !checked && plan.planned > opts.max_states {
        return Err(CrashStatesError::TooManyStates {
            log: log.path.clone(),
            planned: plan.planned,
            between: opts.between,
            max_states: opts.max_states,
        });
    }
    Ok(plan)
}

/// How states are built and checked.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Where the images, marks files and checkers' output go (it exists).
    pub out: PathBuf,
    /// The checker, run as `sh -c CMD` with `{}` replaced by the image.
    pub check: Option<String>,
    /// How long a check may take.
    pub timeout: Duration,
    /// Which images stay after their check.
    pub keep: Keep,
    /// Checks run at once (at least one).
    pub jobs: usize,
    /// The image the device starts as, instead of zeroes.
    pub base: Option<PathBuf>,
}

/// Build every state's image in log order, checking each as it is built;
/// `done(index, total, state)` hears of each state once it is built (no
/// check) or its check has ended. Setting `stop` (on SIGINT or SIGTERM)
/// kills the checks under way and ends the run.
pub fn build_and_check(
    log: &LoadedLog,
    states: &[CrashState],
    opts: &BuildOptions,
    stop: &Arc<AtomicBool>,
    mut done: impl FnMut(usize, usize, &BuiltState),
) -> Result<Vec<BuiltState>, CrashStatesError> {
    let working_path = opts.out.join(".working.img");
    let working = create_image(&working_path, log.capacity_bytes(), opts.base.as_deref())?;
    let mut applier = RecordApplier::new(log)?;
    let mut applied = 0usize;
    let mut synced = usize::MAX;
    let mut built: Vec<BuiltState> = Vec::with_capacity(states.len());
    let (tx, rx) = mpsc::channel::<Done>();
    let mut running = 0usize;
    let total = states.len();
    let mut step = |index: usize, state: &CrashState, running: &mut usize| {
        debug_assert!(
            applied <= state.durable as usize,
            "states come in log order"
        );
        let durable = (state.durable as usize).min(log.heads.len());
        ensure_room(opts, log, state, &working, applied..durable)?;
        if applied < durable {
            applier.apply_records(&working, log, applied..durable)?;
            applied = durable;
        }
        if applied != synced {
            // SEEK_DATA below must see every write as data.
            doing(working.sync_data(), || {
                format!("syncing {}", working_path.display())
            })?;
            synced = applied;
        }
        built.push(build_state(opts, log, state, &working, &mut applier)?);
        let Some(cmd) = &opts.check else {
            done(index, total, &built[index]);
            return Ok(());
        };
        while *running >= jobs(opts) {
            let finished = rx.recv().map_err(CrashStatesError::CheckThreadGone)?;
            *running -= 1;
            finish(&mut built, finished, opts.keep, total, &mut done);
        }
        let b = &built[index];
        let job = CheckJob {
            index,
            command: cmd.replace("{}", &shell_quote(&b.image.to_string_lossy())),
            id: b.state.id.to_string(),
            image: b.image.clone(),
            marks_file: b.marks_file.clone(),
            output: b.output.clone(),
            timeout: opts.timeout,
            stop: Arc::clone(stop),
        };
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send(job.run());
        });
        *running += 1;
        Ok::<(), CrashStatesError>(())
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
        let finished = rx.recv().map_err(CrashStatesError::CheckThreadGone)?;
        running -= 1;
        finish(&mut built, finished, opts.keep, total, &mut done);
    }
    if let Some(e) = failure {
        let _ = std::fs::remove_file(&working_path);
        return Err(e);
    }
    doing(std::fs::remove_file(&working_path), || {
        format!("removing {}", working_path.display())
    })?;
    if stop.load(Ordering::Relaxed) {
        return Err(CrashStatesError::Interrupted {
            built: built.len(),
            total,
            out: opts.out.clone(),
        });
    }
    Ok(built)
}

/// Checks to run at once: at least one.
fn jobs(opts: &BuildOptions) -> usize {
    opts.jobs.max(1)
}

/// `s` as one shell word.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The most room kept free on the output's file system: images are not
/// built into the last 64 MiB (or the last twentieth of a smaller file
/// system).
const DISK_RESERVE: u64 = 64 << 20;

/// Refuse to go on when building `state` could leave the output's file
/// system with less than its reserve free: the working image grows by the
/// records in `pending` (applied next), and the state's image takes at
/// most the working image's blocks and its kept records' (both bounded by
/// the device's capacity).
fn ensure_room(
    opts: &BuildOptions,
    log: &LoadedLog,
    state: &CrashState,
    working: &File,
    pending: std::ops::Range<usize>,
) -> Result<(), CrashStatesError> {
    use std::os::unix::fs::MetadataExt;
    let bytes = |heads: &mut dyn Iterator<Item = &RecordHead>| {
        // Only writes take disk: write-zeroes and discards punch holes
        // (on file systems that cannot, they write zeroes, uncounted).
        heads
            .filter(|h| h.kind == Kind::Write)
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
    let fs = rustix::fs::statvfs(&opts.out).map_err(|source| CrashStatesError::FreeSpace {
        out: opts.out.clone(),
        source,
    })?;
    let free = fs.f_bavail.saturating_mul(fs.f_frsize);
    let reserve = DISK_RESERVE.min(fs.f_blocks.saturating_mul(fs.f_frsize) / 20);
    if free < need.saturating_add(reserve) {
        return Err(CrashStatesError::NoRoom {
            out: opts.out.clone(),
            free,
            id: state.id,
            need,
            reserve,
        });
    }
    Ok(())
}

/// Copy the working image (at `state.durable`) and apply the state's
/// surviving unflushed records; write its marks file.
fn build_state(
    opts: &BuildOptions,
    log: &LoadedLog,
    state: &CrashState,
    working: &File,
    applier: &mut RecordApplier,
) -> Result<BuiltState, CrashStatesError> {
    let id = state.id.to_string();
    let image = opts.out.join(format!("{id}.img"));
    let file = image::copy_sparse(working, log.capacity_bytes(), &image).map_err(|source| {
        CrashStatesError::Copy {
            to: image.clone(),
            source,
        }
    })?;
    let kept = state.kept(&log.heads);
    applier.apply_records(&file, log, kept.iter().map(|&seq| seq as usize))?;
    let marks = log.marks_before(state.cut);
    let marks_file = opts.out.join(format!("{id}.marks"));
    let mut text = String::new();
    for m in &marks {
        text.push_str(&m.replace('\n', " "));
        text.push('\n');
    }
    doing(std::fs::write(&marks_file, text), || {
        format!("writing {}", marks_file.display())
    })?;
    Ok(BuiltState {
        state: *state,
        kept: kept.len() as u64,
        kept_first: kept.iter().take(KEPT_SHOWN).copied().collect(),
        marks,
        image,
        marks_file,
        output: opts.out.join(format!("{id}.out")),
        verdict: Verdict::Unchecked,
        tail: Vec::new(),
        output_dropped: 0,
    })
}

/// Record a finished check, tell `done`, and delete what is not kept.
fn finish(
    built: &mut [BuiltState],
    finished: Done,
    keep: Keep,
    total: usize,
    done: &mut impl FnMut(usize, usize, &BuiltState),
) {
    let b = &mut built[finished.index];
    b.verdict = finished.verdict;
    b.tail = finished.tail;
    b.output_dropped = finished.output_dropped;
    done(finished.index, total, b);
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
