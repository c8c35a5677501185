//! What every engine is given to run a job file, and what it reports while
//! it runs.

use elevator_core::{Nanos, Plugins};

/// How to run a job file, on any engine: the scheduler, its tunables and
/// the seed.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// The scheduler's name.
    pub scheduler: String,
    /// Queue and scheduler tunables to set, by name, from text.
    pub tunables: Vec<(String, String)>,
    /// Seed mixed into every job's random stream.
    pub seed: u64,
    /// Schedulers from outside elevator (Python classes) that `scheduler`
    /// may name; simulation only.
    pub plugins: Plugins,
}

impl Default for RunConfig {
    fn default() -> RunConfig {
        RunConfig {
            scheduler: "mq-deadline".into(),
            tunables: Vec::new(),
            seed: 0,
            plugins: Plugins::default(),
        }
    }
}

/// How far a run has got, for progress bars.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Time since the run started: virtual in a simulation, real on a
    /// device.
    pub now: Nanos,
    /// I/Os completed.
    pub ios: u64,
    /// Fraction done, 0..=1 (estimated from sizes and runtimes).
    pub fraction: f64,
}
