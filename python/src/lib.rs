//! The native half of the Python package `elevator` (`elevator._native`):
//! the functions `elevator/*.py` call, each over the library layer every
//! front end calls (elevator-run), with the GIL released while Rust runs
//! (kept when a scheduler written in Python takes part).
//!
//! - [`error`]: a [`RunError`](elevator_run::RunError) as the Python
//!   exception with the CLI's message (`error::to_py_err`).
//! - [`jobs`]: `elevator.run` and `elevator.compare`.
//! - [`replay`]: `elevator.replay`; [`advise`]: `elevator.advise`.
//! - [`listing`]: `elevator.devices()` and `elevator.schedulers()`.
//! - [`scheduler`]: schedulers written in Python, as the core's plugins
//!   (`scheduler::plugins_from`); [`request`]: the requests they see.
//! - `sweep`: `elevator.sweep`'s native half (the sweep library's
//!   wrapper).

#![warn(missing_docs)]
// The native functions carry elevator-run's `RunError` as it is, once per
// call, to turn it into the Python exception with the command's message:
// its size costs nothing that a run does not dwarf.
#![allow(clippy::result_large_err)]

use pyo3::prelude::*;

pub mod advise;
pub mod error;
pub mod jobs;
pub mod listing;
pub mod replay;
pub mod request;
pub mod scheduler;
mod sweep;

/// The module `elevator._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(jobs::run_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(listing::devices, m)?)?;
    m.add_function(wrap_pyfunction!(listing::schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(replay::replay_trace, m)?)?;
    m.add_function(wrap_pyfunction!(advise::advise_on, m)?)?;
    m.add_class::<request::PyRequest>()?;
    sweep::register(m)?;
    Ok(())
}
