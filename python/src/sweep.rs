//! `elevator.sweep`'s native half: a placeholder that registers nothing,
//! replaced by the sweep library's wrapper.

use pyo3::prelude::*;

/// Add the sweep functions to the module `m` (none yet).
pub fn register(_m: &Bound<PyModule>) -> PyResult<()> {
    Ok(())
}
