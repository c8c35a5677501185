//! `write_iolog=FILE` in fio jobs: each clone's I/Os logged as fio 3.33
//! logs them (version 3, with timestamps), on simulated and real devices,
//! from the queue's trace events ([`elevator_trace::write_iolog::JobIologs`]).
//!
//! The file is opened in append mode, as fio opens it. Clones that name the
//! same file (`numjobs`, or jobs sharing one name) each write a whole log
//! of their own, one after another in clone order, where fio would
//! intersperse them line by line: the first clone writes to the file, each
//! of the others to a scratch file beside it (`FILE.elevator-clone-N`),
//! appended to the file and removed once the run is over. fio replays such
//! a file whole.

use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::path::PathBuf;

use elevator_fio::job::JobFile;
use elevator_fio::workload;
use elevator_trace::write_iolog::JobIologs;

use crate::error::RunError;

/// The jobs' iologs, one buffered file per clone.
pub type Iologs = JobIologs<BufWriter<File>>;

/// Scratch files to append to their logs once the run's sink is finished.
#[must_use = "the logs of clones after the first are only appended by finish()"]
pub struct Appends(Vec<(PathBuf, String)>);

/// The logs the jobs of `jobs` ask for (`None` if none does), as a sink to
/// feed every trace event to, on a device of `device_bytes()` bytes (which
/// places the clones' files, as the engines do).
pub fn open(
    jobs: &JobFile,
    device_bytes: impl FnOnce() -> Result<u64, RunError>,
) -> Result<Option<(Iologs, Appends)>, RunError> {
    if jobs.jobs.iter().all(|j| j.write_iolog.is_none()) {
        return Ok(None);
    }
    let clones = workload::clone_files_all(jobs, device_bytes()?)?;
    let mut sink = JobIologs::new();
    let mut appends = Vec::new();
    let mut opened: Vec<&str> = Vec::new();
    for clone in &clones {
        let Some(path) = jobs.jobs[clone.job_index].write_iolog.as_deref() else {
            continue;
        };
        let file = if opened.contains(&path) {
            let scratch = PathBuf::from(format!("{path}.elevator-clone-{}", clone.ctx));
            let f = File::create(&scratch).map_err(RunError::io(format!(
                "write_iolog={path}: cannot create {}",
                scratch.display()
            )))?;
            appends.push((scratch, path.to_string()));
            f
        } else {
            opened.push(path);
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(RunError::io(format!(
                    "write_iolog={path}: cannot open it for writing"
                )))?
        };
        sink.add(clone, BufWriter::with_capacity(1 << 16, file))
            .map_err(RunError::io(format!("write_iolog={path}")))?;
    }
    Ok(Some((sink, Appends(appends))))
}

impl Appends {
    /// Append each scratch file to its log and remove it (once the sink is
    /// finished, which flushed them).
    pub fn finish(self) -> Result<(), RunError> {
        for (scratch, path) in &self.0 {
            let mut from = File::open(scratch).map_err(RunError::io(format!(
                "write_iolog={path}: reading {}",
                scratch.display()
            )))?;
            let mut to = OpenOptions::new()
                .append(true)
                .open(path)
                .map_err(RunError::io(format!(
                    "write_iolog={path}: cannot open it for writing"
                )))?;
            std::io::copy(&mut from, &mut to)
                .map_err(RunError::io(format!("write_iolog={path}")))?;
            std::fs::remove_file(scratch).map_err(RunError::io(format!(
                "write_iolog={path}: removing {}",
                scratch.display()
            )))?;
        }
        Ok(())
    }
}
