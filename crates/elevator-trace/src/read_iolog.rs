//! The logs fio jobs replay (`read_iolog`), opened for the engines: a fio
//! iolog (v2 or v3) or a blktrace (one file or a per-CPU set), plain or
//! compressed, recognised from the content by [`crate::open()`] and
//! streamed. A blktrace's queue events (Q) are its I/Os, as fio replays
//! them; an iolog holds nothing else.
//!
//! Both engines (elevator-sim's and elevator-io's) hand [`TraceLogs`] to
//! [`elevator_fio::workload::workers_with_logs`]; the real-time engine,
//! which sizes its I/O buffers before the run, has each log read through
//! once first for its largest I/O ([`TraceLogs::sizing_buffers`]).

use std::path::Path;

use crate::{Item, TraceReader};
use elevator_core::TraceAction;
use elevator_fio::workload::{IoLog, IoLogError, LoggedIo, OpenIoLog};

/// Opens `read_iolog` files with [`crate::open()`].
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceLogs {
    /// Read each log through first for its largest I/O.
    pub sizing_buffers: bool,
}

impl TraceLogs {
    /// Logs streamed once (the simulator's: it has no buffers to size).
    pub fn streamed() -> TraceLogs {
        TraceLogs {
            sizing_buffers: false,
        }
    }

    /// Logs read through once for their largest I/O, then streamed (an
    /// engine with buffers to size).
    pub fn sizing_buffers() -> TraceLogs {
        TraceLogs {
            sizing_buffers: true,
        }
    }
}

impl OpenIoLog for TraceLogs {
    fn open(&self, path: &str) -> Result<Box<dyn IoLog>, IoLogError> {
        let reader = crate::open(Path::new(path), None, false)?;
        Ok(Box::new(LogIos { reader }))
    }

    fn largest_io(&self, path: &str) -> Option<Result<u64, IoLogError>> {
        if !self.sizing_buffers {
            return None;
        }
        let mut largest = 0;
        let ios = match self.open(path) {
            Ok(ios) => ios,
            Err(e) => return Some(Err(e)),
        };
        for io in LogIter(ios) {
            match io {
                Ok(io) => largest = largest.max(io.len),
                Err(e) => return Some(Err(e)),
            }
        }
        Some(Ok(largest))
    }
}

/// An [`IoLog`] as an iterator.
struct LogIter(Box<dyn IoLog>);

impl Iterator for LogIter {
    type Item = Result<LoggedIo, IoLogError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_io()
    }
}

/// A trace's queue events as logged I/Os.
struct LogIos {
    reader: TraceReader,
}

impl Iterator for LogIos {
    type Item = Result<LoggedIo, IoLogError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.reader.next()? {
                Err(e) => return Some(Err(Box::new(e))),
                Ok(Item::Process { .. }) => {}
                Ok(Item::Record(r)) if r.event.action == TraceAction::Queue => {
                    let e = r.event;
                    return Some(Ok(LoggedIo {
                        op: e.op,
                        offset: e.sector.saturating_mul(512),
                        len: u64::from(e.bytes),
                        time: e.time,
                    }));
                }
                Ok(Item::Record(_)) => {}
            }
        }
    }
}
