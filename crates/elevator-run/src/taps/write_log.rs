//! The device's write log, set up once for every entry point: on a model,
//! a [`WriteLogDevice`] in front of it (also without a file when the model has
//! faults, whose counts and check it gives) and the check of the media at
//! the end (`SimLogged`); on a real device, a [`WriteLog`] every handle
//! on the device records into (`RealLogged`).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use elevator_io::{RealDevice, WriteLog, WriteLogCounts};
use elevator_sim::device::{ModelSpec, ParamError, SimDevice, WriteLogDevice, WriteLogReport};

use crate::error::RunError;
use crate::listener::Listener;

/// A model to run on, behind a write-log tap when a log is asked for or
/// the model has faults.
pub(crate) enum SimLogged {
    /// The model alone.
    Plain(Box<dyn SimDevice + Send>),
    /// The model behind its tap.
    Tapped(Box<WriteLogDevice<Box<dyn Write + Send>>>),
}

impl SimLogged {
    /// `model`, logged to `path` if given; `built` says what a model that
    /// cannot be built without a tap is, as the engine would say it.
    pub(crate) fn build(
        model: &ModelSpec,
        path: Option<&Path>,
        built: impl FnOnce(ParamError) -> RunError,
    ) -> Result<SimLogged, RunError> {
        if path.is_none() && !model.has_faults() {
            return Ok(SimLogged::Plain(model.build_sim().map_err(built)?));
        }
        let file: Box<dyn Write + Send> = match path {
            Some(path) => Box::new(std::io::BufWriter::new(
                std::fs::File::create(path)
                    .map_err(RunError::io(format!("--write-log {}", path.display())))?,
            )),
            None => Box::new(std::io::sink()),
        };
        let tap = WriteLogDevice::new(model.build_sim()?, file).map_err(RunError::io(WRITING))?;
        Ok(SimLogged::Tapped(Box::new(tap)))
    }

    /// The device to run on.
    pub(crate) fn device(&mut self) -> &mut dyn SimDevice {
        match self {
            SimLogged::Plain(d) => &mut **d,
            SimLogged::Tapped(t) => &mut **t,
        }
    }

    /// Close the log and check the media against it (noting the summary
    /// and the faults injected): the report, if there was a tap.
    pub(crate) fn finish(
        self,
        listener: &mut dyn Listener,
    ) -> Result<Option<WriteLogReport>, RunError> {
        let SimLogged::Tapped(tap) = self else {
            return Ok(None);
        };
        let (report, _) = tap.finish(0).map_err(RunError::io(WRITING))?;
        listener.note(&report.summary());
        if let Some(line) = report.fault_line() {
            listener.note(&line);
        }
        Ok(Some(report))
    }
}

/// What failed writing a model's write log.
const WRITING: &str = "writing the write log (--write-log)";

/// A real device's write log at a path.
pub(crate) struct RealLogged<'a> {
    path: &'a Path,
    log: Arc<WriteLog>,
}

impl<'a> RealLogged<'a> {
    /// A log at `path` of `device`, which is given back logging into it.
    pub(crate) fn create(
        path: &'a Path,
        device: RealDevice,
    ) -> Result<(RealLogged<'a>, RealDevice), RunError> {
        let limits = elevator_core::Device::limits(&device);
        let log = WriteLog::create(path, &limits, Default::default())?;
        let device = device.logged(Arc::clone(&log));
        Ok((RealLogged { path, log }, device))
    }

    /// Write out what is buffered; note the counts.
    pub(crate) fn finish(&self, listener: &mut dyn Listener) -> Result<(), RunError> {
        let c = self
            .log
            .finish()
            .map_err(RunError::io(format!("--write-log {}", self.path.display())))?;
        listener.note(&counts_line(self.path, &c));
        Ok(())
    }
}

/// A write log's counts in one line: `write log PATH: N writes, ...`.
pub fn counts_line(path: &Path, c: &WriteLogCounts) -> String {
    format!(
        "write log {}: {} writes, {} discards, {} write-zeroes, {} flushes, {} marks, {} bytes",
        path.display(),
        c.writes,
        c.discards,
        c.write_zeroes,
        c.flushes,
        c.marks,
        c.bytes
    )
}
