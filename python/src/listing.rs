//! `elevator.devices()` and `elevator.schedulers()`: what a call can name,
//! from the same tables `elevator devices` and `elevator schedulers` print.

use elevator_core::queue::QUEUE_TUNABLES;
use elevator_core::{AnyScheduler, SCHEDULER_ALIASES, SCHEDULER_NAMES, Scheduler, TunableSpec};
use elevator_sim::device::{ModelSpec, presets};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::error::to_py_err;

/// Every simulated preset: name, what it is, and its parameters (name,
/// value, unit, meaning), one dict each.
#[pyfunction]
pub fn devices(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for (name, what) in presets() {
        let spec = ModelSpec::preset(name)
            .map_err(|e| crate::error::raise("ConfigError", e.to_string()))?;
        let params = PyList::empty(py);
        for p in spec.params() {
            let d = PyDict::new(py);
            d.set_item("name", p.name)?;
            d.set_item("value", p.value)?;
            d.set_item("unit", p.unit.name())?;
            d.set_item("help", p.help)?;
            params.append(d)?;
        }
        let d = PyDict::new(py);
        d.set_item("name", name)?;
        d.set_item("kind", "simulated")?;
        d.set_item("description", what)?;
        d.set_item("params", params)?;
        out.append(d)?;
    }
    Ok(out)
}

/// A scheduler's (or the queue's) tunables as dicts.
fn tunables<'py>(py: Python<'py>, specs: &[TunableSpec]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for s in specs {
        let d = PyDict::new(py);
        d.set_item("name", s.name)?;
        d.set_item("default", s.default)?;
        d.set_item("min", s.min)?;
        d.set_item("max", s.max)?;
        d.set_item("unit", s.unit.name())?;
        d.set_item("read_only", s.read_only)?;
        d.set_item("help", s.help)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Every built-in scheduler (name, aliases, tunables), and the queue's
/// tunables (every scheduler has them), as `(schedulers, queue_tunables)`.
#[pyfunction]
pub fn schedulers(py: Python<'_>) -> PyResult<(Bound<'_, PyList>, Bound<'_, PyList>)> {
    let out = PyList::empty(py);
    for name in SCHEDULER_NAMES {
        let s = AnyScheduler::by_name(name)
            .map_err(|e| to_py_err(&elevator_core::ConfigError::from(e).into()))?;
        let aliases: Vec<&str> = SCHEDULER_ALIASES
            .iter()
            .filter(|(_, to)| *to == name)
            .map(|(alias, _)| *alias)
            .collect();
        let d = PyDict::new(py);
        d.set_item("name", name)?;
        d.set_item("aliases", aliases)?;
        d.set_item("tunables", tunables(py, s.tunables())?)?;
        out.append(d)?;
    }
    Ok((out, tunables(py, &QUEUE_TUNABLES)?))
}
