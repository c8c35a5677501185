//! The scheduler and tunable names a user types: which schedulers a
//! command line names ([`choose_schedulers`]: `all`, aliases with a note,
//! each once, "did you mean" for the rest), and whether a `--set` tunable
//! fits the schedulers of a run (`check_tunable_name`, which
//! [`Target::check_schedulers`](crate::Target::check_schedulers) calls:
//! "did you mean", or which schedulers have it).

use elevator_core::queue::QUEUE_TUNABLES;
use elevator_core::{
    AnyScheduler, SCHEDULER_NAMES, Scheduler, canonical_scheduler, spelling::did_you_mean,
};

use crate::error::RunError;

/// Refuse `--set name=value` when `name` is no tunable of the queue or of
/// every scheduler in `schedulers` (all known): a misspelt name gets the
/// nearest tunable of any scheduler ("did you mean"); a tunable only other
/// schedulers have says which, and how to run them; the io engine's
/// `submit_batch` says it is for real devices.
pub(crate) fn check_tunable_name(
    name: &str,
    value: &str,
    schedulers: &[String],
    real: bool,
) -> Result<(), RunError> {
    if QUEUE_TUNABLES.iter().any(|t| t.name == name) {
        return Ok(());
    }
    let has = |sched: &str| has_named(sched, name);
    let unknown = |owners: String, rest: String| {
        RunError::Usage(format!(
            "--set {name}={value}: unknown tunable '{name}' for {owners}{rest}"
        ))
    };
    let running: Vec<&str> = schedulers
        .iter()
        .map(|s| canonical_scheduler(s).unwrap_or(s))
        .collect();
    let lacking: Vec<&str> = running.iter().copied().filter(|s| !has(s)).collect();
    if lacking.is_empty() {
        return Ok(());
    }
    if name == elevator_io::engine::SUBMIT_BATCH && !real {
        return Err(unknown(
            "a simulated device".to_string(),
            ": it is the io engine's, on real devices only (file:PATH, mem:SIZE)".to_string(),
        ));
    }
    let owners: Vec<&str> = SCHEDULER_NAMES.iter().copied().filter(|s| has(s)).collect();
    let lacking = lacking.join(", ");
    if let Some(first) = owners.first() {
        return Err(unknown(
            lacking,
            format!(
                ": it is a tunable of {} only; run one of them (--scheduler {first}, or \
                 --schedulers {})",
                and_list(&owners),
                owners.join(",")
            ),
        ));
    }
    let every = QUEUE_TUNABLES
        .iter()
        .map(|t| t.name)
        .chain(SCHEDULER_NAMES.iter().flat_map(|s| {
            AnyScheduler::by_name(s)
                .map(|s| s.tunables())
                .unwrap_or_default()
                .iter()
                .map(|t| t.name)
        }))
        .chain(real.then_some(elevator_io::engine::SUBMIT_BATCH));
    let hint = did_you_mean(name, every);
    // What this run can set: the queue's tunables and those every one of
    // its schedulers has.
    let mut here: Vec<&str> = QUEUE_TUNABLES
        .iter()
        .filter(|t| !t.read_only)
        .map(|t| t.name)
        .collect();
    if let Some(first) = running.first() {
        let shared = AnyScheduler::by_name(first)
            .map(|s| s.tunables())
            .unwrap_or_default()
            .iter()
            .filter(|t| !t.read_only && running.iter().all(|s| has_named(s, t.name)))
            .map(|t| t.name);
        here.extend(shared);
    }
    Err(unknown(
        format!("the queue or {lacking}"),
        format!(
            "{hint}; known here: {} (`elevator schedulers` lists every one)",
            here.join(", ")
        ),
    ))
}

/// Whether scheduler `sched` has a tunable called `name`.
fn has_named(sched: &str, name: &str) -> bool {
    AnyScheduler::by_name(sched).is_ok_and(|s| s.tunables().iter().any(|t| t.name == name))
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The schedulers a command line names, as they run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerChoice {
    /// Their names ([`SCHEDULER_NAMES`]), each once, in the order given.
    pub names: Vec<String>,
    /// One line per alias used, for stderr ("noop is Linux's old name for
    /// none; running none").
    pub notes: Vec<String>,
}

/// The schedulers `given` names (`option` is the command-line option, for
/// errors; `several` whether it takes more than one): `all` is every
/// scheduler, an alias (`noop`, `deadline`) runs
/// the scheduler it stands for with a note saying so, and a name given
/// twice runs once; an unknown name is refused with the nearest known one
/// and the list.
pub fn choose_schedulers(
    option: &str,
    given: &[String],
    several: bool,
) -> Result<SchedulerChoice, RunError> {
    let or_all = if several { ", or all" } else { "" };
    let mut choice = SchedulerChoice {
        names: Vec::with_capacity(given.len()),
        notes: Vec::new(),
    };
    let add = |names: &mut Vec<String>, n: &str| {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    };
    for name in given {
        let name = name.trim();
        if name == "all" && !several {
            return Err(RunError::Usage(format!(
                "{option} all: this command runs one scheduler; compare and advise run \
                 several (--schedulers all)"
            )));
        }
        if name == "all" {
            for n in SCHEDULER_NAMES {
                add(&mut choice.names, n);
            }
            continue;
        }
        let canonical =
            canonical_scheduler(name).ok_or_else(|| match AnyScheduler::by_name(name) {
                Err(e) => RunError::Usage(format!("{option} {name}: {e}{or_all}")),
                Ok(_) => RunError::Usage(format!("{option} {name}: unknown scheduler")),
            })?;
        if canonical != name {
            let note = format!("{name} is Linux's old name for {canonical}; running {canonical}");
            if !choice.notes.contains(&note) {
                choice.notes.push(note);
            }
        }
        add(&mut choice.names, canonical);
    }
    Ok(choice)
}
