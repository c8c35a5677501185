//! Why a job clone failed: fio ends a job (and exits non-zero) when its rate
//! falls below `rate_min` / `rate_iops_min` over a `rate_cycle`, or when a
//! block it reads back does not verify; elevator also ends a job whose
//! `read_iolog` cannot be replayed.

use thiserror::Error;

use super::rate::RateShortfall;
use crate::verify::VerifyError;

/// A job clone's failure. The engines report it as a run error naming the
/// job, after every other job has run.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum JobFailure {
    /// Its rate over a `rate_cycle` fell below its floor (fio: "min rate X
    /// not met").
    #[error(
        "{} min {} {} not met over a rate_cycle, got {}",
        dir_name(.0.dir),
        if .0.iops { "iops rate" } else { "rate" },
        .0.min,
        .0.got
    )]
    RateMin(RateShortfall),
    /// A block read back did not hold what was written (the first such
    /// block; `errors` counts them all).
    #[error("{error} ({errors} block(s) failed verification)")]
    Verify {
        /// The first failure: names the offset and what failed.
        error: VerifyError,
        /// Blocks that failed, in all.
        errors: u64,
    },
    /// Its `read_iolog` could not be replayed: the log is bad (the message
    /// names its line or record) or holds an I/O the device cannot take.
    #[error("read_iolog {path}: {message}")]
    Replay {
        /// The log, as `read_iolog` names it.
        path: String,
        /// What was wrong.
        message: String,
    },
}

fn dir_name(d: usize) -> &'static str {
    crate::result::DIR_NAMES.get(d).copied().unwrap_or("?")
}
