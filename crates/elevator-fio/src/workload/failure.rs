//! Why a job clone failed: fio ends a job (and exits non-zero) at an I/O
//! error that `continue_on_error` / `ignore_error` do not let it go on
//! after, when its rate falls below `rate_min` / `rate_iops_min` over a
//! `rate_cycle`, or when a block it reads back does not verify; elevator
//! also ends a job whose `read_iolog` cannot be replayed. Each failure has
//! the error number fio reports for it (`err=` in text, `error` in JSON).

use elevator_core::Op;
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
    /// An I/O failed with an error the job does not go on after: the first
    /// such I/O.
    #[error("{0}")]
    Io(IoError),
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

impl JobFailure {
    /// The error number fio reports for it: the I/O's own, `EILSEQ` for a
    /// block that did not verify, `EIO` for a rate not met (as fio's
    /// `check_min_rate`), `EINVAL` for a log that cannot be replayed.
    pub fn errno(&self) -> i32 {
        match self {
            JobFailure::Io(e) => e.errno,
            JobFailure::Verify { .. } => crate::errno::EILSEQ,
            JobFailure::RateMin(_) => crate::errno::EIO,
            JobFailure::Replay { .. } => crate::errno::EINVAL,
        }
    }
}

/// An I/O that completed with an error: what it was, where, and the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoError {
    /// The error number (`EIO` 5, `ENOSPC` 28, `ENODEV` 19 for a device
    /// gone...).
    pub errno: i32,
    /// The operation.
    pub op: Op,
    /// Which of the clone's files it was in (0-based), and its offset
    /// there in bytes; `None` when it was in none (a flush).
    pub file: Option<(u32, u64)>,
    /// Its offset on the device, in bytes.
    pub device_offset: u64,
    /// Its length in bytes.
    pub len: u32,
}

impl IoError {
    /// fio's name of its direction (`read`, `write`, `trim`, `sync`).
    pub fn op_name(&self) -> &'static str {
        match self.op {
            Op::Read => "read",
            Op::Write | Op::WriteZeroes => "write",
            Op::Discard => "trim",
            Op::Flush => "sync",
        }
    }
}

impl IoError {
    /// What fio's `io_u error` line says of it: `TEXT: OP offset=N, buflen=N`.
    pub fn what(&self) -> String {
        format!(
            "{}: {} offset={}, buflen={}",
            crate::errno::describe(self.errno),
            self.op_name(),
            self.file.map_or(self.device_offset, |(_, o)| o),
            self.len
        )
    }
}

impl std::fmt::Display for IoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (err={}{})",
            self.what(),
            self.errno,
            crate::errno::name(self.errno)
                .map(|n| format!(", {n}"))
                .unwrap_or_default()
        )
    }
}

fn dir_name(d: usize) -> &'static str {
    crate::result::DIR_NAMES.get(d).copied().unwrap_or("?")
}
