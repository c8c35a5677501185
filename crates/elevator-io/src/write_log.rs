//! The write log of a real device: a [`WriteLogDevice`] wraps any
//! [`DataDevice`] and records, in one [`WriteLog`] shared by every handle on
//! the device, each write, discard, write-zeroes, flush and FUA the device
//! received, with the written data, plus the user's marks
//! ([`WriteLog::mark`]). The format and what a flush covers are
//! [`elevator_trace::write_log`]'s.
//!
//! - A write (discard, write-zeroes) is recorded when the device completes
//!   it, with the bytes it reports good (all of them on success); one that
//!   failed with no good bytes is not recorded.
//! - A flush is recorded when the device receives it, so it covers exactly
//!   the writes completed before it was issued; a write with PREFLUSH is
//!   recorded as a flush, then the write when it completes.
//! - Recording takes one lock and copies the record into the log file's
//!   staging chunks ([`LogFile`]), whose own thread writes them to the
//!   file (with O_DIRECT where it can): the cost on the I/O path is a
//!   checksum and a memory copy per written byte.
//!
//! If the log cannot be written (disk full), the I/O whose record failed
//! completes with `IoError` and every later write does too: nothing the
//! client was told is safe goes unrecorded. [`WriteLog::finish`] reports the
//! error.
//!
//! For tests of crash checkers only, [`WriteLogOptions::flush_before_data`]
//! makes a *broken* device: a flush is recorded (and acknowledged) before
//! the writes it covers, which reach the log one flush later. Crash states
//! built from such a log lose data that was fsynced: a checker must catch
//! it.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use elevator_core::{Device, DeviceIo, Limits, Nanos, Op, Outcome, Status};
use elevator_trace::write_log::{
    FLAG_DATA, FLAG_FUA, Kind, LogHeader, Writer, flush_on_submit, record_of,
};

use crate::device::{DataDevice, DataSegment};
use crate::write_log_file::LogFile;

/// How a write log records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteLogOptions {
    /// Test-only: record each flush before the writes it covers, which
    /// reach the log only at the next flush (a device that acknowledges a
    /// flush before its data is safe).
    pub flush_before_data: bool,
}

/// What a log holds so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteLogCounts {
    /// Writes.
    pub writes: u64,
    /// Discards.
    pub discards: u64,
    /// Write-zeroes.
    pub write_zeroes: u64,
    /// Flushes.
    pub flushes: u64,
    /// Marks.
    pub marks: u64,
    /// Bytes of the log file.
    pub bytes: u64,
}

/// A write held back by a broken (test-only) log.
struct Held {
    kind: Kind,
    flags: u8,
    sector: u64,
    sectors: u32,
    time_ns: u64,
    data: Vec<u8>,
}

struct LogState {
    writer: Writer<LogFile>,
    counts: WriteLogCounts,
    error: Option<io::Error>,
    /// Broken mode: writes since the last flush, and those before it.
    held_now: Vec<Held>,
    held_before: Vec<Held>,
}

/// One write log, shared by every handle on a device.
pub struct WriteLog {
    state: Mutex<LogState>,
    start: Instant,
    opts: WriteLogOptions,
}

/// The log's file could not be had or written.
#[derive(Debug, thiserror::Error)]
pub enum WriteLogFileError {
    /// Creating or writing the file failed.
    #[error("write log {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: io::Error,
    },
}

impl WriteLog {
    /// Create (or truncate) `path` and start a log of a device with these
    /// limits.
    pub fn create(
        path: &Path,
        limits: &Limits,
        opts: WriteLogOptions,
    ) -> Result<Arc<WriteLog>, WriteLogFileError> {
        let fail = |source| WriteLogFileError::Io {
            path: path.display().to_string(),
            source,
        };
        let file = LogFile::create(path).map_err(fail)?;
        let header = LogHeader {
            has_data: true,
            capacity: limits.capacity,
            block_size: limits.logical_block_size,
        };
        let writer = Writer::new(file, header).map_err(fail)?;
        Ok(Arc::new(WriteLog {
            state: Mutex::new(LogState {
                writer,
                counts: WriteLogCounts::default(),
                error: None,
                held_now: Vec::new(),
                held_before: Vec::new(),
            }),
            start: Instant::now(),
            opts,
        }))
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        // A handle that panicked while recording leaves whole records
        // behind (a record is written under the lock in one go, and an
        // error is kept): the log is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Record a mark with `text`; returns its sequence number.
    pub fn mark(&self, text: &str) -> io::Result<u64> {
        let t = self.now_ns();
        let mut s = self.lock();
        if let Some(e) = &s.error {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        let seq = s.writer.mark(text, t);
        let seq = s.note(seq)?;
        s.counts.marks += 1;
        // A mark is what a user waits on: make it and everything before
        // it reach the file.
        let flushed = s.writer.flush();
        s.note(flushed)?;
        Ok(seq)
    }

    /// What it holds so far.
    pub fn counts(&self) -> WriteLogCounts {
        let s = self.lock();
        WriteLogCounts {
            bytes: s.writer.bytes(),
            ..s.counts
        }
    }

    /// Write out what is buffered (and, in broken mode, what is held) and
    /// report the first error recording met, if any.
    pub fn finish(&self) -> io::Result<WriteLogCounts> {
        let mut guard = self.lock();
        let s = &mut *guard;
        let held: Vec<Held> = s
            .held_before
            .drain(..)
            .chain(s.held_now.drain(..))
            .collect();
        for h in held {
            let r = s.append_held(&h);
            let _ = s.note(r);
        }
        let r = s.writer.flush();
        let _ = s.note(r);
        if let Some(e) = s.error.take() {
            return Err(e);
        }
        Ok(WriteLogCounts {
            bytes: s.writer.bytes(),
            ..s.counts
        })
    }

    fn flush(&self) -> bool {
        let t = self.now_ns();
        let mut s = self.lock();
        if s.error.is_some() {
            return false;
        }
        let r = s.writer.append(Kind::Flush, 0, 0, 0, t, &[]);
        if s.note(r).is_err() {
            return false;
        }
        s.counts.flushes += 1;
        if self.opts.flush_before_data {
            let before = std::mem::take(&mut s.held_before);
            for h in &before {
                let r = s.append_held(h);
                if s.note(r).is_err() {
                    return false;
                }
            }
            s.held_before = std::mem::take(&mut s.held_now);
        }
        true
    }

    /// Record a completed write (discard, write-zeroes) of `bytes` at
    /// `io.sector`, its data in `data` (for a write). False if it could
    /// not be recorded.
    fn record(&self, io: &DeviceIo, bytes: u64, data: &[&[u8]]) -> bool {
        let t = self.now_ns();
        let Some((kind, mut flags)) = record_of(io.op, io.flags) else {
            return true;
        };
        let sectors = (bytes >> 9) as u32;
        if kind == Kind::Write {
            flags |= FLAG_DATA;
        }
        let mut s = self.lock();
        if s.error.is_some() {
            return false;
        }
        if self.opts.flush_before_data && flags & FLAG_FUA == 0 {
            let mut copy = Vec::with_capacity(bytes as usize);
            for d in data {
                copy.extend_from_slice(d);
            }
            s.held_now.push(Held {
                kind,
                flags,
                sector: io.sector,
                sectors,
                time_ns: t,
                data: copy,
            });
        } else {
            let r = s.writer.append(kind, flags, io.sector, sectors, t, data);
            if s.note(r).is_err() {
                return false;
            }
        }
        match kind {
            Kind::Write => s.counts.writes += 1,
            Kind::Discard => s.counts.discards += 1,
            _ => s.counts.write_zeroes += 1,
        }
        true
    }
}

impl LogState {
    /// Keep the first error; pass the result on.
    fn note<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        match r {
            Ok(v) => Ok(v),
            Err(e) => {
                let copy = io::Error::new(e.kind(), e.to_string());
                if self.error.is_none() {
                    self.error = Some(e);
                }
                Err(copy)
            }
        }
    }

    fn append_held(&mut self, h: &Held) -> io::Result<u64> {
        let data: &[&[u8]] = if h.data.is_empty() { &[] } else { &[&h.data] };
        self.writer
            .append(h.kind, h.flags, h.sector, h.sectors, h.time_ns, data)
    }
}

/// Call `f` with the first `good` bytes of `segs` as slices (on the stack
/// for up to 16 segments); false, without calling `f`, when the segments
/// hold fewer bytes than that (the write cannot be recorded).
///
/// # Safety
///
/// Every segment must be valid for reads of its length.
unsafe fn with_data(segs: &[DataSegment], good: u64, f: impl FnOnce(&[&[u8]]) -> bool) -> bool {
    const STACK: usize = 16;
    let mut stack: [&[u8]; STACK] = [&[]; STACK];
    let mut heap: Vec<&[u8]> = Vec::new();
    let (mut n, mut left) = (0, good);
    for seg in segs {
        if left == 0 {
            break;
        }
        let len = u64::from(seg.len).min(left);
        left -= len;
        // SAFETY: valid for reads of `seg.len >= len` bytes (our caller's
        // promise).
        let bytes = unsafe { std::slice::from_raw_parts(seg.addr, len as usize) };
        if n < STACK {
            stack[n] = bytes;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&stack);
            }
            heap.push(bytes);
        }
        n += 1;
    }
    left == 0 && f(if heap.is_empty() { &stack[..n] } else { &heap })
}

/// A write in flight: what it is and where its data is.
struct InFlight {
    io: Option<DeviceIo>,
    segs: Vec<DataSegment>,
}

/// A device whose writes and flushes go to a [`WriteLog`].
pub struct WriteLogDevice<D> {
    inner: D,
    log: Arc<WriteLog>,
    /// Writes in flight, by tag.
    inflight: Vec<InFlight>,
}

impl<D: DataDevice> WriteLogDevice<D> {
    /// `inner`, recording into `log`.
    pub fn new(inner: D, log: Arc<WriteLog>) -> WriteLogDevice<D> {
        let depth = inner.queue_depth() as usize;
        let mut inflight = Vec::with_capacity(depth);
        inflight.resize_with(depth, || InFlight {
            io: None,
            segs: Vec::new(),
        });
        WriteLogDevice {
            inner,
            log,
            inflight,
        }
    }

    /// The device underneath.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The log.
    pub fn log(&self) -> &Arc<WriteLog> {
        &self.log
    }

    /// The same log over `inner` (another handle on the same device).
    pub fn share_with(&self, inner: D) -> WriteLogDevice<D> {
        WriteLogDevice::new(inner, Arc::clone(&self.log))
    }

    /// Note `io` before it goes to the device.
    fn before(&mut self, io: &DeviceIo, data: &[DataSegment]) {
        if flush_on_submit(io) {
            self.log.flush();
        }
        if !matches!(io.op, Op::Write | Op::Discard | Op::WriteZeroes) {
            return;
        }
        let i = io.tag as usize;
        if i >= self.inflight.len() {
            self.inflight.resize_with(i + 1, || InFlight {
                io: None,
                segs: Vec::new(),
            });
        }
        let slot = &mut self.inflight[i];
        debug_assert!(slot.io.is_none(), "tag {} is already in flight", io.tag);
        slot.io = Some(*io);
        slot.segs.clear();
        slot.segs.extend_from_slice(data);
    }
}

impl<D: DataDevice> Device for WriteLogDevice<D> {
    fn describe(&self) -> String {
        format!("{} (write log)", self.inner.describe())
    }
    elevator_core::forward_device!(inner: limits, queue_depth, rotational, next_completion,
        outstanding, stats);
    fn submit(&mut self, io: DeviceIo, now: Nanos) {
        self.before(&io, &[]);
        self.inner.submit(io, now);
    }
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome)) {
        let WriteLogDevice {
            inner,
            log,
            inflight,
        } = self;
        inner.complete(now, &mut |tag, outcome| {
            let Some(slot) = inflight.get_mut(tag as usize) else {
                done(tag, outcome);
                return;
            };
            let Some(io) = slot.io.take() else {
                done(tag, outcome);
                return;
            };
            let good = match outcome {
                Outcome::Done => io.bytes(),
                Outcome::Failed { good_bytes, .. } => good_bytes.min(io.bytes()) & !511,
            };
            if good == 0 {
                done(tag, outcome);
                return;
            }
            let recorded = if io.op == Op::Write {
                // SAFETY: the segments were handed to the device with the
                // write, and `submit_data`'s contract keeps them valid
                // until the device reports the tag, which it is doing now
                // (we report it to our caller only after this). The
                // device only read from them.
                unsafe { with_data(&slot.segs, good, |data| log.record(&io, good, data)) }
            } else {
                log.record(&io, good, &[])
            };
            if recorded {
                done(tag, outcome);
            } else {
                done(
                    tag,
                    Outcome::Failed {
                        status: Status::IoError,
                        good_bytes: 0,
                    },
                );
            }
        });
    }
}

impl<D: DataDevice> DataDevice for WriteLogDevice<D> {
    unsafe fn submit_data(&mut self, io: DeviceIo, data: &[DataSegment], now: Nanos) {
        self.before(&io, data);
        // SAFETY: passed through unchanged; our caller keeps the contract.
        unsafe { self.inner.submit_data(io, data, now) }
    }
    crate::forward_data_device!(inner: kick, wait, cancel_all, alignment, poll_fd, watch, extents);
}
