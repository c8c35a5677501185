//! Jobs that end other jobs: fio's `exitall`, `exitall_on_error` and
//! `exit_what`. Owns each clone's [`ExitRule`] and the choice of which
//! clones a clone's end ends ([`end_others`]).
//!
//! As in fio, `exitall` is one switch for the whole run: when any job has
//! it, every clone that ends ends others; `exitall_on_error` is the job's
//! own, and fires only when the clone failed. Which others is the ending
//! clone's `exit_what`: its reporting group (`group`, started or not), the
//! clones that have started (`stonewall`: those waiting behind a
//! `stonewall` still run), or every clone (`all`). An ended clone stops
//! issuing, sees its I/O in flight through and ends, with its figures so
//! far; one not yet started ends as soon as it starts, with its
//! `startdelay` dropped (as fio's terminate drops it).

use super::worker::{State, Worker};
use crate::job::{ExitWhat, JobFile};

/// When a clone's end ends others, and which.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExitRule {
    /// Which others (`exit_what`); `None`: it ends nobody.
    pub what: Option<ExitWhat>,
    /// Only when it failed (`exitall_on_error` without `exitall`).
    pub on_error_only: bool,
}

impl ExitRule {
    /// The rule of clones of `job` in a run where `exitall` is on when
    /// any job has it.
    fn new(job: &crate::job::JobSpec, exitall: bool) -> ExitRule {
        ExitRule {
            what: (exitall || job.exitall_on_error).then_some(job.exit_what),
            on_error_only: !exitall,
        }
    }

    /// Which others a clone's end ends, given whether it `failed`.
    pub fn fires(&self, failed: bool) -> Option<ExitWhat> {
        self.what.filter(|_| failed || !self.on_error_only)
    }
}

/// Give every worker of `jobs` (in worker order) its exit rule.
pub(crate) fn arm(jobs: &JobFile, workers: &mut [Worker]) {
    let exitall = jobs.jobs.iter().any(|j| j.exitall);
    for w in workers.iter_mut() {
        if let Some(job) = jobs.jobs.get(w.job_index) {
            w.exit_rule = ExitRule::new(job, exitall);
        }
    }
}

/// Worker `ended` has just finished: end the workers its rule ends (not
/// itself, not those already done or ended), adding to `running` each one
/// ended while running, which the engine must look at again (its I/O in
/// flight completes, then it ends). Called once per clone's end, never per
/// I/O.
pub fn end_others(workers: &mut [Worker], ended: usize, running: &mut Vec<u32>) {
    let Some(ender) = workers.get(ended) else {
        return;
    };
    let Some(what) = ender.ends_others() else {
        return;
    };
    let group = ender.group;
    for (i, w) in workers.iter_mut().enumerate() {
        if i == ended || w.state == State::Done || w.terminated() {
            continue;
        }
        if what.ends(group, w.group, w.state != State::Waiting) && w.terminate() {
            running.push(i as u32);
        }
    }
}
