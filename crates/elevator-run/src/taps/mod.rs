//! [`Taps`]: what a run records besides its result, built once from the
//! options and used by every entry point: the queue's events as blktrace
//! files ([`blktrace`]), an [`Observer`] gathering them for plots, the jobs'
//! `write_iolog` files ([`iolog`]) and the device's write log
//! ([`write_log`]).

pub mod blktrace;
pub mod iolog;
pub mod write_log;

use std::path::Path;

use elevator_fio::job::JobFile;
use elevator_trace::{Tee, TraceSink};

use crate::error::RunError;

/// Gathers a run's trace events (and a disk model's head positions) for a
/// report's plots. Shared with the threads of a real run.
pub trait Observer: Sync {
    /// A sink that feeds this observer.
    fn sink(&self) -> Box<dyn TraceSink + Send>;

    /// Head positions to keep, at most.
    fn max_heads(&self) -> usize;

    /// Where the heads went, (time ns, cylinder) in time order.
    fn set_heads(&self, heads: &mut dyn Iterator<Item = (u64, u32)>);
}

/// What a run records besides its result.
#[derive(Clone, Copy, Default)]
pub struct Taps<'a> {
    /// The queue's events to `NAME.blktrace.N` (`--trace-out NAME`).
    pub trace_out: Option<&'a str>,
    /// The queue's events, gathered for plots.
    pub observer: Option<&'a dyn Observer>,
    /// The device's write log to this file (writes, flushes, FUA, discards,
    /// job marks); a simulated device's media is checked against it at the
    /// end.
    pub write_log: Option<&'a Path>,
}

impl std::fmt::Debug for Taps<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Taps")
            .field("trace_out", &self.trace_out)
            .field("observer", &self.observer.is_some())
            .field("write_log", &self.write_log)
            .finish()
    }
}

/// The sink a run's trace events go to (`None`: nobody listens), and the
/// iolog files to complete once it is finished.
pub(crate) type RunSink = (Option<Box<dyn TraceSink + Send>>, Option<iolog::Appends>);

impl Taps<'_> {
    /// The blktrace files and the observer, if asked for.
    pub(crate) fn trace_sink(&self) -> Result<Option<Box<dyn TraceSink + Send>>, RunError> {
        let blktrace = self.trace_out.map(blktrace::open_sink).transpose()?;
        Ok(match (blktrace, self.observer) {
            (Some(first), Some(o)) => Some(Box::new(Tee {
                first,
                second: o.sink(),
            })),
            (None, Some(o)) => Some(o.sink()),
            (s, None) => s,
        })
    }

    /// The sink of a run of `jobs`: the blktrace files, the observer and
    /// the jobs' iologs (placed on a device of `device_bytes()` bytes).
    pub(crate) fn run_sink(
        &self,
        jobs: &JobFile,
        device_bytes: impl FnOnce() -> Result<u64, RunError>,
    ) -> Result<RunSink, RunError> {
        let blktrace = self.trace_sink()?;
        let (iologs, appends) = iolog::open(jobs, device_bytes)?.unzip();
        Ok((combine(blktrace, iologs), appends))
    }
}

/// `--trace-out`'s blktrace files, the jobs' iologs, both, or none.
fn combine(
    blktrace: Option<Box<dyn TraceSink + Send>>,
    iologs: Option<iolog::Iologs>,
) -> Option<Box<dyn TraceSink + Send>> {
    match (blktrace, iologs) {
        (Some(first), Some(second)) => Some(Box::new(Tee { first, second })),
        (Some(b), None) => Some(b),
        (None, Some(i)) => Some(Box::new(i)),
        (None, None) => None,
    }
}
