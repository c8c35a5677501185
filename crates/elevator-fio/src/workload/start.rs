//! When a job clone may start: fio's `stonewall` / `wait_for_previous`
//! (after every earlier job has finished), `wait_for=NAME` (after every
//! clone of the named job has finished) and `startdelay` (not before this
//! long after the run began; a range draws a delay per clone).
//!
//! A job after a `stonewall` job (up to the next one) waits as that job
//! does: fio creates jobs in file order and goes no further than a
//! stonewall until it may start.
//!
//! `startdelay` counts from the start of the run, as fio counts it from its
//! own start (not from the moment the job's waits are over): a job that
//! waits for another and has a delay starts at whichever comes later.

use elevator_core::Nanos;

use super::worker::{State, Worker};
use crate::job::{JobError, JobFile};
use elevator_core::rng::Rng;

/// A clone's start conditions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartRule {
    /// Workers (indices into the run's workers) that must be done first.
    pub after: Vec<u32>,
    /// Time after the run's start before which it does not start.
    pub delay: Nanos,
}

/// The start rule of each clone of `jobs`, in worker order; `seeds` gives
/// each clone's random seed (for a `startdelay` range). An unknown or
/// ambiguous `wait_for`, or one naming a later job, is refused as fio
/// refuses it.
pub(crate) fn rules(jobs: &JobFile, seeds: &[u64]) -> Result<Vec<StartRule>, JobError> {
    // First worker index of each job.
    let mut first = Vec::with_capacity(jobs.jobs.len() + 1);
    let mut n = 0u32;
    for job in &jobs.jobs {
        first.push(n);
        n = n.saturating_add(job.numjobs);
    }
    first.push(n);
    let mut out = Vec::with_capacity(n as usize);
    // The workers before the last `stonewall` job: fio creates jobs in file
    // order and stops at a stonewall, so the jobs after one wait as it does.
    let mut wall = 0u32;
    for (j, job) in jobs.jobs.iter().enumerate() {
        if j > 0 && job.stonewall {
            wall = first[j];
        }
        let mut after: Vec<u32> = (0..wall).collect();
        if let Some(name) = &job.wait_for {
            let named: Vec<usize> = jobs
                .jobs
                .iter()
                .enumerate()
                .filter(|(_, o)| &o.name == name)
                .map(|(i, _)| i)
                .collect();
            let err = |message: String| JobError {
                file: jobs.file_of(job).to_string(),
                line: job.line_of(&["wait_for"]),
                option: Some("wait_for".into()),
                message,
            };
            match named.as_slice() {
                [] => return Err(err(format!("wait_for={name}: no job has that name"))),
                [w] if *w < j => {
                    for x in first[*w]..first[*w + 1] {
                        if !after.contains(&x) {
                            after.push(x);
                        }
                    }
                }
                [_] => {
                    return Err(err(format!(
                        "wait_for={name}: the job waited for must come before this one"
                    )));
                }
                _ => {
                    return Err(err(format!(
                        "wait_for={name}: several jobs have that name; the job waited for \
                         must have a unique name"
                    )));
                }
            }
        }
        for clone in 0..job.numjobs {
            let (lo, hi) = job.startdelay;
            let delay = if hi > lo {
                let seed = seeds.get(out.len()).copied().unwrap_or(0);
                let mut rng = Rng::new(super::mix(&[seed, 0x57A7_DE1A, u64::from(clone)]));
                lo + rng.below(hi - lo + 1)
            } else {
                lo
            };
            out.push(StartRule {
                after: after.clone(),
                delay,
            });
        }
    }
    Ok(out)
}

/// Start every waiting worker whose rule is met at `now` (the run began at
/// `run_start`), adding its index to `started`. Returns the earliest later
/// time at which a worker whose waits are over may start (its delay), if
/// any. Called when the run starts, when a worker finishes and at the
/// returned time: never per I/O.
pub fn start_ready(
    workers: &mut [Worker],
    run_start: Nanos,
    now: Nanos,
    started: &mut Vec<u32>,
) -> Option<Nanos> {
    let mut next: Option<Nanos> = None;
    for w in 0..workers.len() {
        if workers[w].state != State::Waiting {
            continue;
        }
        let waits_over = workers[w].rule.after.iter().all(|&d| {
            workers
                .get(d as usize)
                .is_none_or(|x| x.state == State::Done)
        });
        if !waits_over {
            continue;
        }
        let at = run_start.saturating_add(workers[w].rule.delay);
        if now >= at {
            workers[w].start(now);
            started.push(w as u32);
        } else {
            next = Some(next.map_or(at, |n| n.min(at)));
        }
    }
    next
}
