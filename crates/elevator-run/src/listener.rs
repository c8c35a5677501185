//! [`Listener`]: what a front end hears while a run goes on: progress, and
//! notes (the lines the `elevator` command prints on stderr: the write
//! log's summary, the trace's counts, I/O errors a job went on after).
//! The library prints nothing itself.

use elevator_sim::replay::ReplayProgress;

/// How far a run or replay has got.
#[derive(Clone, Copy, Debug)]
pub enum Progress {
    /// fio jobs: time, I/Os and the fraction done.
    Jobs(elevator_fio::Progress),
    /// A trace replay: records read, bios replayed, virtual time (0 on a
    /// real device).
    Replay(ReplayProgress),
}

/// Hears a run's progress and notes. Both have empty defaults.
pub trait Listener {
    /// The run has got this far (called often: keep it cheap).
    fn progress(&mut self, _progress: Progress) {}

    /// Something to tell the user, one line, without the command's
    /// `elevator: ` prefix (e.g. `warning: ...`, `trace: ...`).
    fn note(&mut self, _line: &str) {}

    /// The run is over (a progress display may clear itself); before the
    /// notes of its end.
    fn finished(&mut self) {}
}

/// A listener that hears nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Listener for Quiet {}
