//! [`RunError`]: every way a run, replay or advice can fail, one type for
//! every front end to match on, and [`Failure`]: a run that went to its end
//! but failed on its own terms (a job's verify error or `rate_min`, the
//! write log's check).

use elevator_fio::workload::JobFailure;
use thiserror::Error;

/// Why a run, replay or advice could not be done.
///
/// The messages are the command's: options are named as the `elevator`
/// command takes them (`--write-log`, `--also-device`).
#[derive(Debug, Error)]
pub enum RunError {
    /// The device spec does not parse.
    #[error(transparent)]
    Spec(#[from] elevator_io::SpecError),
    /// A real device could not be opened.
    #[error(transparent)]
    Open(#[from] elevator_io::OpenError),
    /// A device model could not be built.
    #[error(transparent)]
    Model(#[from] elevator_sim::device::ParamError),
    /// The job file (or its command-line options) is wrong.
    #[error(transparent)]
    Job(#[from] elevator_fio::job::JobError),
    /// The queue cannot be built (scheduler, tunables).
    #[error(transparent)]
    Queue(#[from] elevator_core::ConfigError),
    /// A simulated run failed.
    #[error(transparent)]
    Sim(elevator_sim::engine::SimError),
    /// A scheduler from outside elevator (a Python class) failed: the run
    /// stopped with what it said (a Python traceback).
    #[error("scheduler {name} failed: {message}")]
    Scheduler {
        /// The scheduler's name.
        name: String,
        /// Its failure.
        message: String,
    },
    /// A run on real devices failed.
    #[error(transparent)]
    Real(#[from] elevator_io::jobs::JobRunError),
    /// A simulated replay failed.
    #[error(transparent)]
    SimReplay(elevator_sim::replay::SimReplayError),
    /// A replay on a real device failed.
    #[error(transparent)]
    RealReplay(#[from] elevator_io::replay::RealReplayError),
    /// A trace could not be read.
    #[error(transparent)]
    Trace(#[from] elevator_trace::TraceError),
    /// A real device's write log could not be created.
    #[error(transparent)]
    WriteLogFile(#[from] elevator_io::write_log::WriteLogFileError),
    /// A job file could not be read (`why`: what was wrong).
    #[error("reading job file {path}: {why}")]
    JobText {
        /// The job file.
        path: String,
        /// Why it could not be read.
        why: String,
    },
    /// A tunable given with `--set` is wrong for a scheduler.
    #[error("--set {setting}: {error}")]
    Tunable {
        /// `NAME=VALUE` as given, with ` under SCHEDULER` when the
        /// scheduler is why.
        setting: String,
        /// What is wrong with it.
        error: elevator_core::TunableError,
    },
    /// A file could not be read or written; `what` names it.
    #[error("{what}")]
    Io {
        /// What was being done, and to which file.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Options that do not go together, or a workload that cannot run
    /// here; the message says why.
    #[error("{0}")]
    Usage(String),
    /// A run went to its end but failed on its own terms.
    #[error("{0}")]
    Failed(Failure),
    /// What failed while doing `what`.
    #[error("{what}")]
    During {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: Box<RunError>,
    },
}

impl From<elevator_sim::engine::SimError> for RunError {
    fn from(e: elevator_sim::engine::SimError) -> RunError {
        match e {
            elevator_sim::engine::SimError::Scheduler { name, message } => {
                RunError::Scheduler { name, message }
            }
            e => RunError::Sim(e),
        }
    }
}

impl From<elevator_sim::replay::SimReplayError> for RunError {
    fn from(e: elevator_sim::replay::SimReplayError) -> RunError {
        match e {
            elevator_sim::replay::SimReplayError::Scheduler { name, message } => {
                RunError::Scheduler { name, message }
            }
            e => RunError::SimReplay(e),
        }
    }
}

impl RunError {
    /// An I/O error, with what was being done.
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunError {
        let what = what.into();
        move |source| RunError::Io { what, source }
    }

    /// This error, as what failed while doing `what`.
    pub fn during(self, what: impl Into<String>) -> RunError {
        RunError::During {
            what: what.into(),
            source: Box::new(self),
        }
    }
}

/// A run that went to its end, with its figures, but failed: fio reports
/// such a run in full and exits non-zero.
#[derive(Debug)]
pub enum Failure {
    /// A job clone failed (a verify error, `rate_min` not met, an I/O
    /// error it did not ignore).
    Job {
        /// The job's name.
        job: String,
        /// The clone.
        clone: u32,
        /// What failed.
        failure: Box<JobFailure>,
    },
    /// The simulated device's media disagrees with its write log.
    Check(elevator_sim::device::write_log::CheckFailed),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Job {
                job,
                clone,
                failure,
            } => write!(f, "job '{job}' (clone {clone}) failed: {failure}"),
            Failure::Check(c) => write!(f, "{c}"),
        }
    }
}
