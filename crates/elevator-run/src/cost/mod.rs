//! Instruction counts of elevator's hot paths: a regression guard that does
//! not depend on a quiet machine (`scripts/perf-guard`), and a measure the
//! experiments can give beside their timed one.
//!
//! This module owns the guarded scenarios ([`scenario`]: the core per
//! scheduler, the simulator's event loop, a trace replay, the NBD server's
//! request path, the io engine on memory), the counting of their
//! instructions under valgrind's callgrind ([`callgrind`]), and the
//! committed baselines they are compared with ([`baseline`]).
//!
//! A scenario runs in a process of its own (`elevator cost-scenario run
//! NAME`, started by [`callgrind::count`] under valgrind). What is counted
//! is the code [`measured`] runs, toggled on at its entry and off at its
//! exit (`--toggle-collect`), so setting up and checking cost nothing; a
//! scenario whose work runs on threads it does not own (the NBD server's)
//! is counted whole, its client's thread left out. Scenarios are deterministic: fixed
//! seeds, no wall clock on the measured path, no randomly seeded hash maps.

pub mod baseline;
pub mod callgrind;
pub mod cells;
mod io_mem;
mod nbd;
pub mod scenario;

pub use baseline::{Baselines, Comparison, Row};
pub use callgrind::{Counted, count};
pub use cells::{CellCounter, CellCounts, CellMeasure};
pub use scenario::{Counting, Scenario};

use std::path::PathBuf;

/// The symbol callgrind toggles collection on: [`measured`]'s (the
/// demangled path, a pattern valgrind matches against every function).
pub const MEASURED_SYMBOL: &str = "elevator_run::cost::measured*";

/// Run `f`, the part of a scenario whose instructions are counted: callgrind
/// collects from this function's entry to its exit. Never inlined, so that
/// its symbol stays in the binary; one function for every scenario (a
/// `dyn` closure), so that the symbol is one.
#[inline(never)]
pub fn measured(f: &mut dyn FnMut()) {
    f();
    std::hint::black_box(());
}

/// Why instructions could not be counted, or baselines compared.
#[derive(Debug, thiserror::Error)]
pub enum CostError {
    /// No scenario has this name.
    #[error("no scenario {name:?} (the scenarios: {known})")]
    UnknownScenario {
        /// The name asked for.
        name: String,
        /// The names there are, comma-separated.
        known: String,
    },
    /// A scenario failed while it ran.
    #[error("scenario {name}")]
    Scenario {
        /// The scenario.
        name: String,
        /// Why it failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// valgrind could not be started.
    #[error("starting valgrind ({program}): is it installed? (Debian: apt-get install valgrind)")]
    Spawn {
        /// The program run.
        program: String,
        /// Why it did not start.
        #[source]
        source: std::io::Error,
    },
    /// valgrind, or the scenario under it, failed.
    #[error("valgrind on scenario {name} exited with {status}; its last output:\n{output}")]
    Valgrind {
        /// The scenario.
        name: String,
        /// How it exited.
        status: String,
        /// The end of its standard error.
        output: String,
    },
    /// callgrind's output file could not be read or held no totals.
    #[error("callgrind's output {}: {what}", path.display())]
    Output {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        what: String,
    },
    /// A scenario counted no instructions, or fewer at more operations.
    #[error("scenario {name}: {what}")]
    Counts {
        /// The scenario.
        name: String,
        /// What was wrong.
        what: String,
    },
    /// The baselines file could not be read or written.
    #[error("baselines file {}", path.display())]
    BaselinesIo {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line of the baselines file is not `NAME COUNT`.
    #[error("baselines file {}, line {line}: {what}", path.display())]
    BaselinesSyntax {
        /// The file.
        path: PathBuf,
        /// Its line number (from 1).
        line: usize,
        /// What is wrong with it.
        what: String,
    },
    /// The baselines were counted with another compiler: instruction counts
    /// depend on it, so they cannot be compared.
    #[error(
        "the baselines were counted with {recorded}, this build is {now}: instruction counts \
         depend on the compiler, so they cannot be compared (the workspace pins its toolchain \
         in rust-toolchain.toml; after changing it, run scripts/perf-guard --update and commit \
         perf/baselines.txt)"
    )]
    Compiler {
        /// The compiler the baselines name.
        recorded: String,
        /// This build's.
        now: String,
    },
}

impl CostError {
    /// A scenario's failure, under its name.
    pub(crate) fn scenario(
        name: &str,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> CostError {
        CostError::Scenario {
            name: name.to_string(),
            source: Box::new(e),
        }
    }
}
