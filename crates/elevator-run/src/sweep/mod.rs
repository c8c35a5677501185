//! Sweeps: one workload (a fio job or a trace) run over a grid of
//! configurations (schedulers × devices × tunables × fio options × seeds)
//! on simulated devices, each configuration giving rows of a table.
//!
//! - [`spec`]: the sweep's [`Spec`] (read from TOML, or built from parts),
//!   checked in full before anything runs.
//! - [`grid`]: the grid's keys, what kind each is, and the configurations
//!   it expands to ([`Config`]), in order, the last key varying fastest.
//! - [`rows`]: one configuration run, as rows ([`run_config`],
//!   [`Cell`]).
//! - [`results_file`]: the CSV the rows go to as each configuration
//!   completes, and resuming from it ([`ResultsFile`]).
//! - [`local`]: a sweep on this machine's threads ([`run_local`]).
//!
//! The same [`Spec`] runs anywhere: it is shipped as JSON
//! ([`Spec::to_json`]) to other processes (the Python package's Ray
//! workers), which call [`run_config`] for their configurations. A
//! configuration runs only on a simulated device, so its rows are the same
//! wherever and on however many threads it runs.

pub mod grid;
pub mod local;
pub mod results_file;
pub mod rows;
pub mod spec;
mod spec_toml;

pub use grid::{Config, KeyKind, MAX_CONFIGS};
pub use local::{ConfigRows, SweepProgress, WorkerScope, run_local, run_local_in};
pub use results_file::ResultsFile;
pub use rows::{Cell, run_config};
pub use spec::MAX_TRACE_BYTES;
pub use spec::{Fixed, Spec, Workload};

/// The schedulers written outside elevator (in Python) a sweep may name
/// beside the built-in ones.
pub use elevator_core::Plugins;
