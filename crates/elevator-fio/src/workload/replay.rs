//! `read_iolog`: a job clone whose I/Os come from a log instead of its
//! pattern.
//!
//! elevator-fio reads no files: the engine opens the log (an iolog, or a
//! blktrace, as fio takes both) through an [`OpenIoLog`] and hands each
//! replaying clone an [`IoLog`], an iterator of [`LoggedIo`]s that streams
//! the log. The worker draws one I/O at a time from it, so a log is never
//! held in memory.
//!
//! What is replayed, as fio does:
//!
//! - each I/O's direction (read, write, trim; `sync` and `datasync` are a
//!   flush), offset and length; offsets are bytes on the job's device (fio's
//!   `replay_redirect`: every file of the log lands on the one device);
//! - its time: the log's time since its first I/O, scaled by
//!   `replay_time_scale` (a percentage of the log's rate), from the clone's
//!   start: an I/O is not issued before then. `replay_no_stall` issues as
//!   fast as the depth allows, in the log's order;
//! - at most `iodepth` in flight (1 with a synchronous engine);
//! - `replay_skip` leaves out the directions named.
//!
//! An I/O the device cannot hold (past its end, of no bytes, or not in whole
//! 512-byte sectors) and an error of the log itself (which names its file
//! and line) stop the clone with a [`JobFailure::Replay`].

use elevator_core::{Nanos, Op};

use super::failure::JobFailure;
use crate::job::{JobSpec, ReplaySkip};

/// One I/O of a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedIo {
    /// Read, write, discard (trim) or flush (`sync`, `datasync`).
    pub op: Op,
    /// Byte offset on the device (0 for a flush).
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u64,
    /// When the log says it was issued, in nanoseconds of the log's clock.
    pub time: Nanos,
}

/// An error reading a log (the engine's own error type, which names the
/// file and the line or record).
pub type IoLogError = Box<dyn std::error::Error + Send + Sync>;

/// A log's I/Os, in order, streamed.
pub trait IoLog: Send {
    /// The next I/O; `None` at the end. After an error, none follow.
    fn next_io(&mut self) -> Option<Result<LoggedIo, IoLogError>>;
}

impl<I> IoLog for I
where
    I: Iterator<Item = Result<LoggedIo, IoLogError>> + Send,
{
    fn next_io(&mut self) -> Option<Result<LoggedIo, IoLogError>> {
        self.next()
    }
}

/// Opens the log a job's `read_iolog` names (the engine's: it may read
/// files).
pub trait OpenIoLog {
    /// The log at `path`.
    fn open(&self, path: &str) -> Result<Box<dyn IoLog>, IoLogError>;

    /// The largest I/O of the log at `path`, in bytes, for an engine that
    /// sizes its buffers before the run (as fio reads a log through before
    /// it starts); `None` when the engine has no need of it. Reading the
    /// log through costs one pass over it (streamed).
    fn largest_io(&self, path: &str) -> Option<Result<u64, IoLogError>> {
        let _ = path;
        None
    }
}

/// Opens no log: every `read_iolog` is refused (for callers that read no
/// files).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoIoLogs;

impl OpenIoLog for NoIoLogs {
    fn open(&self, path: &str) -> Result<Box<dyn IoLog>, IoLogError> {
        Err(format!("{path}: this engine does not read logs").into())
    }
}

/// A clone's replay: its log and where it is in it.
pub(crate) struct Replay {
    log: Box<dyn IoLog>,
    path: String,
    no_stall: bool,
    scale: u64,
    skip: u8,
    device_bytes: u64,
    largest: Option<u64>,
    first: Option<Nanos>,
    ios: u64,
    done: bool,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("path", &self.path)
            .field("ios", &self.ios)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Replay {
    /// The replay of `log` (from `job`'s `read_iolog`) onto a device of
    /// `device_bytes`; `largest`, when known, is its largest I/O (the
    /// engine's buffers are that large).
    pub(crate) fn new(
        job: &JobSpec,
        log: Box<dyn IoLog>,
        device_bytes: u64,
        largest: Option<u64>,
    ) -> Replay {
        Replay {
            log,
            path: job.read_iolog.clone().unwrap_or_default(),
            no_stall: job.replay_no_stall,
            scale: u64::from(job.replay_time_scale.max(1)),
            skip: job.replay_skip,
            device_bytes,
            largest,
            first: None,
            ios: 0,
            done: false,
        }
    }

    /// Its largest I/O, when the engine asked for it.
    pub(crate) fn largest(&self) -> Option<u64> {
        self.largest
    }

    /// Whether the log has ended (or failed).
    #[inline]
    pub(crate) fn done(&self) -> bool {
        self.done
    }

    fn failure(&mut self, message: String) -> JobFailure {
        self.done = true;
        JobFailure::Replay {
            path: self.path.clone(),
            message,
        }
    }

    /// The next I/O to replay (`None` at the end of the log), and when it is
    /// due, `began` being the clone's start.
    pub(crate) fn next(&mut self, began: Nanos) -> Result<Option<(LoggedIo, Nanos)>, JobFailure> {
        while !self.done {
            let io = match self.log.next_io() {
                None => {
                    self.done = true;
                    return Ok(None);
                }
                Some(Err(e)) => return Err(self.failure(e.to_string())),
                Some(Ok(io)) => io,
            };
            self.ios += 1;
            let bit = match io.op {
                Op::Read => ReplaySkip::READ,
                Op::Write | Op::WriteZeroes => ReplaySkip::WRITE,
                Op::Discard => ReplaySkip::TRIM,
                Op::Flush => ReplaySkip::SYNC,
            };
            if self.skip & bit != 0 {
                continue;
            }
            if io.op != Op::Flush {
                self.check(&io)?;
            }
            let first = *self.first.get_or_insert(io.time);
            let due = if self.no_stall {
                began
            } else {
                let since =
                    u128::from(io.time.saturating_sub(first)) * 100 / u128::from(self.scale);
                began.saturating_add(u64::try_from(since).unwrap_or(u64::MAX))
            };
            return Ok(Some((io, due)));
        }
        Ok(None)
    }

    /// Whether the device can take `io`.
    fn check(&mut self, io: &LoggedIo) -> Result<(), JobFailure> {
        let n = self.ios;
        if io.len == 0
            || !io.len.is_multiple_of(512)
            || !io.offset.is_multiple_of(512)
            || io.len > u64::from(u32::MAX)
        {
            return Err(self.failure(format!(
                "I/O {n} of the log ({} bytes at byte {}) is not in whole 512-byte sectors \
                 (or is empty or too long): elevator does I/O in sectors",
                io.len, io.offset
            )));
        }
        if let Some(largest) = self.largest
            && io.len > largest
        {
            return Err(self.failure(format!(
                "I/O {n} of the log ({} bytes) is larger than the largest found when the log \
                 was read through ({largest}): did the log change?",
                io.len
            )));
        }
        let end = io.offset.saturating_add(io.len);
        if end > self.device_bytes {
            return Err(self.failure(format!(
                "I/O {n} of the log (bytes {}..{end}) is beyond the device's {} bytes",
                io.offset, self.device_bytes
            )));
        }
        Ok(())
    }
}
