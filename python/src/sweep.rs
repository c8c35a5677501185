//! `elevator.sweep`'s native half: the class `elevator._native.Sweep` over
//! the sweep library ([`elevator_run::sweep::Spec`]) and
//! `elevator._native.ResultsFile` over its CSV
//! ([`elevator_run::sweep::ResultsFile`]).
//!
//! A `Sweep` is built from Python values (or a TOML spec file, or the JSON a
//! Ray worker is sent), checked by the library before anything runs, and
//! runs one configuration ([`sweep::run_config`]) or all of them on this
//! machine's threads ([`sweep::run_local`]), the GIL released while Rust
//! runs. Schedulers written in Python (classes or instances) become the
//! core's plugins through [`crate::scheduler::plugins_from`]; they are kept
//! here so that `elevator/sweep.py` can ship them to Ray workers.

// The library's errors (RunError) are turned into Python exceptions as soon
// as a call returns; they are never passed along, so their size is no cost.
#![allow(clippy::result_large_err)]

use std::path::PathBuf;
use std::sync::Arc;

use elevator_core::Plugins;
use elevator_run::sweep::{self, Cell, Fixed, ResultsFile, Spec, SweepProgress, Workload};

/// A configuration's index and its rows, as Python values.
type PyConfigRows = (usize, Vec<Vec<Py<PyAny>>>);

use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyString};

use crate::error::to_py_err;
use crate::scheduler::plugins_from;

/// The name a job given as text has in errors.
const JOB_TEXT_NAME: &str = "<text>";

/// A checked sweep: its spec, and the schedulers written in Python it names.
#[pyclass(name = "Sweep", module = "elevator._native", frozen)]
pub struct PySweep {
    spec: Arc<Spec>,
    plugins: Plugins,
    /// The Python scheduler objects `plugins` were made from, in order.
    classes: Vec<Py<PyAny>>,
}

/// Python scheduler objects among `values` replaced by their names (and
/// collected into `classes`); strings kept.
fn scheduler_names(
    py: Python<'_>,
    values: &[Bound<'_, PyAny>],
    classes: &mut Vec<Py<PyAny>>,
    what: &str,
) -> PyResult<Vec<String>> {
    let mut names = Vec::with_capacity(values.len());
    for v in values {
        if let Ok(s) = v.cast::<PyString>() {
            names.push(s.to_cow()?.into_owned());
        } else if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
            return Err(PyTypeError::new_err(format!(
                "{what}: a scheduler is a name or an elevator.Scheduler subclass, not a number"
            )));
        } else {
            let (got, _) = plugins_from(py, std::slice::from_ref(v))?;
            let name = got.into_iter().next().unwrap_or_default();
            classes.push(v.clone().unbind());
            names.push(name);
        }
    }
    Ok(names)
}

/// The core plugins of `classes` (Python scheduler classes or instances).
fn plugins_of(py: Python<'_>, classes: &[Py<PyAny>]) -> PyResult<Plugins> {
    let bound: Vec<Bound<'_, PyAny>> = classes.iter().map(|c| c.bind(py).clone()).collect();
    Ok(plugins_from(py, &bound)?.1)
}

/// A value of a grid or option that is not a scheduler, as text.
fn text_of(v: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match v.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{what}: a value is a str, int or float, not {}",
            v.get_type().name()?
        ))),
    }
}

/// A result cell as a Python value (`None` for an empty cell).
fn cell_to_py(py: Python<'_>, cell: &Cell) -> PyResult<Py<PyAny>> {
    Ok(match cell {
        Cell::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Cell::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Cell::Text(s) => s.into_pyobject(py)?.into_any().unbind(),
        Cell::Empty => py.None(),
    })
}

/// A Python value back as a cell (what [`cell_to_py`] made).
fn cell_from_py(v: &Bound<'_, PyAny>) -> PyResult<Cell> {
    if v.is_none() {
        Ok(Cell::Empty)
    } else if let Ok(s) = v.cast::<PyString>() {
        Ok(Cell::Text(s.to_cow()?.into_owned()))
    } else if v.is_instance_of::<PyInt>() {
        Ok(Cell::Int(v.extract()?))
    } else if v.is_instance_of::<PyFloat>() {
        Ok(Cell::Float(v.extract()?))
    } else {
        Err(PyTypeError::new_err(format!(
            "a result cell is None, an int, a float or a str, not {}",
            v.get_type().name()?
        )))
    }
}

/// Rows as a list of lists of Python values.
fn rows_to_py(py: Python<'_>, rows: &[Vec<Cell>]) -> PyResult<Vec<Vec<Py<PyAny>>>> {
    rows.iter()
        .map(|row| row.iter().map(|c| cell_to_py(py, c)).collect())
        .collect()
}

#[pymethods]
impl PySweep {
    /// A sweep from its parts, checked (an unknown key or a bad value raises
    /// `elevator.ConfigError` with the known names, as `elevator sweep` does).
    /// `kind`: "job_text" (`source` is fio job text), "job_file" or "trace"
    /// (`source` is a path). Values are strings; a scheduler may also be a
    /// Python scheduler class or instance.
    #[new]
    #[pyo3(signature = (*, kind, source, device, scheduler, seed, set, fio, grid))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        kind: &str,
        source: String,
        device: String,
        scheduler: Bound<'_, PyAny>,
        seed: u64,
        set: Vec<(String, Bound<'_, PyAny>)>,
        fio: Vec<(String, Bound<'_, PyAny>)>,
        grid: Vec<(String, Vec<Bound<'_, PyAny>>)>,
    ) -> PyResult<PySweep> {
        let workload = match kind {
            "job_text" => Workload::Job {
                name: JOB_TEXT_NAME.to_string(),
                text: source,
            },
            "job_file" => Workload::job_file(&PathBuf::from(source)).map_err(|e| to_py_err(&e))?,
            "trace" => Workload::trace_file(&PathBuf::from(source)).map_err(|e| to_py_err(&e))?,
            other => {
                return Err(PyValueError::new_err(format!(
                    "kind must be job_text, job_file or trace, not {other:?}"
                )));
            }
        };
        let mut classes = Vec::new();
        let scheduler = scheduler_names(py, &[scheduler], &mut classes, "scheduler")?
            .pop()
            .unwrap_or_default();
        let pairs = |list: Vec<(String, Bound<'_, PyAny>)>, what: &str| {
            list.into_iter()
                .map(|(k, v)| Ok((k.clone(), text_of(&v, &format!("{what} {k}"))?)))
                .collect::<PyResult<Vec<_>>>()
        };
        let fixed = Fixed {
            device,
            scheduler,
            seed,
            set: pairs(set, "set")?,
            fio: pairs(fio, "fio")?,
        };
        let mut keys = Vec::with_capacity(grid.len());
        for (key, values) in grid {
            let what = format!("grid key {key}");
            let texts = if key == "scheduler" {
                scheduler_names(py, &values, &mut classes, &what)?
            } else {
                values
                    .iter()
                    .map(|v| text_of(v, &what))
                    .collect::<PyResult<_>>()?
            };
            keys.push((key, texts));
        }
        let plugins = plugins_of(py, &classes)?;
        let spec = Spec::new(workload, fixed, keys, &plugins).map_err(|e| to_py_err(&e))?;
        Ok(PySweep {
            spec: Arc::new(spec),
            plugins,
            classes,
        })
    }

    /// The sweep of a TOML spec file (the one `elevator sweep` takes; its
    /// paths are relative to it).
    #[staticmethod]
    fn from_toml(path: PathBuf) -> PyResult<PySweep> {
        let plugins = Plugins::default();
        let spec = Spec::from_toml_file(&path, &plugins).map_err(|e| to_py_err(&e))?;
        Ok(PySweep {
            spec: Arc::new(spec),
            plugins,
            classes: Vec::new(),
        })
    }

    /// The sweep that [`PySweep::to_json`] wrote, with the Python schedulers
    /// it names (`python_schedulers()` of the original).
    #[staticmethod]
    #[pyo3(signature = (text, schedulers = Vec::new()))]
    fn from_json(py: Python<'_>, text: &str, schedulers: Vec<Py<PyAny>>) -> PyResult<PySweep> {
        let spec = Spec::from_json(text).map_err(|e| to_py_err(&e))?;
        let plugins = plugins_of(py, &schedulers)?;
        Ok(PySweep {
            spec: Arc::new(spec),
            plugins,
            classes: schedulers,
        })
    }

    /// The spec as JSON (for a Ray worker: [`PySweep::from_json`]).
    fn to_json(&self) -> String {
        self.spec.to_json()
    }

    /// The Python scheduler objects the sweep names.
    fn python_schedulers(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.classes.iter().map(|c| c.clone_ref(py)).collect()
    }

    /// The number of configurations.
    fn __len__(&self) -> usize {
        self.spec.len()
    }

    /// The table's columns: `config`, the grid's keys, then the results'.
    fn columns(&self) -> Vec<String> {
        self.spec.columns()
    }

    /// The grid: each key with its values (as text), in order.
    fn grid(&self) -> Vec<(String, Vec<String>)> {
        self.spec.grid().to_vec()
    }

    /// Configuration `index`'s grid values, as (key, value) pairs.
    fn config(&self, index: usize) -> PyResult<Vec<(String, String)>> {
        self.spec.config(index).map(|c| c.values).ok_or_else(|| {
            PyIndexError::new_err(format!(
                "no configuration {index} (there are {})",
                self.spec.len()
            ))
        })
    }

    /// Run configuration `index`: its rows (lists of values, in `columns()`
    /// order). The GIL is released unless a Python scheduler takes part.
    fn run_config(&self, py: Python<'_>, index: usize) -> PyResult<Vec<Vec<Py<PyAny>>>> {
        if index >= self.spec.len() {
            return Err(PyIndexError::new_err(format!(
                "no configuration {index} (there are {})",
                self.spec.len()
            )));
        }
        let rows = if self.classes.is_empty() {
            let (spec, plugins) = (&*self.spec, &self.plugins);
            py.detach(|| sweep::run_config(spec, index, plugins))
        } else {
            sweep::run_config(&self.spec, index, &self.plugins)
        }
        .map_err(|e| to_py_err(&e))?;
        rows_to_py(py, &rows)
    }

    /// Run every configuration not yet in `out` on `threads` threads, the GIL
    /// released (a Python scheduler takes it for each of its calls);
    /// `progress(index, seconds)` is called as each configuration completes. Returns
    /// [(index, rows)] of the configurations run, by index.
    #[pyo3(signature = (threads, out = None, progress = None))]
    fn run_local(
        &self,
        py: Python<'_>,
        threads: usize,
        out: Option<Bound<'_, PyResultsFile>>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Vec<PyConfigRows>> {
        let report = |p: SweepProgress| {
            if let Some(cb) = &progress {
                Python::attach(|py| {
                    if let Err(e) = cb.call1(py, (p.config.index, p.took.as_secs_f64())) {
                        e.print(py);
                    }
                });
            }
        };
        let (spec, plugins) = (&*self.spec, &self.plugins);
        let threads = threads.max(1);
        // Each worker holds its interpreter thread state for the whole
        // sweep (attached, then detached while Rust runs): a Python
        // scheduler's calls then only take the GIL, rather than make and
        // free a thread state each (which cost 40x).
        let scope: sweep::WorkerScope<'_> = &|work| Python::attach(|py| py.detach(work));
        let done = match out {
            Some(file) => {
                let mut guard = file.borrow_mut();
                let results = guard.inner.as_mut().ok_or_else(closed)?;
                py.detach(|| {
                    sweep::run_local_in(spec, threads, Some(results), plugins, &report, scope)
                })
            }
            None => py.detach(|| sweep::run_local_in(spec, threads, None, plugins, &report, scope)),
        }
        .map_err(|e| to_py_err(&e))?;
        done.iter()
            .map(|(index, rows)| Ok((*index, rows_to_py(py, rows)?)))
            .collect()
    }

    /// The CSV at `path`, created or resumed (its header and each row's grid
    /// values are checked against this sweep; a torn last line is dropped).
    fn open_results(&self, py: Python<'_>, path: PathBuf) -> PyResult<PyResultsFile> {
        let spec = &*self.spec;
        let file = py
            .detach(|| ResultsFile::open(&path, spec))
            .map_err(|e| to_py_err(&e))?;
        Ok(PyResultsFile {
            inner: Some(file),
            spec: Arc::clone(&self.spec),
        })
    }
}

/// A sweep's CSV, written a configuration at a time.
#[pyclass(name = "ResultsFile", module = "elevator._native")]
pub struct PyResultsFile {
    inner: Option<ResultsFile>,
    spec: Arc<Spec>,
}

fn closed() -> PyErr {
    PyValueError::new_err("the results file is closed")
}

#[pymethods]
impl PyResultsFile {
    /// The configurations the file holds, by index.
    fn done(&self) -> PyResult<Vec<usize>> {
        Ok(self
            .inner
            .as_ref()
            .ok_or_else(closed)?
            .done()
            .iter()
            .copied()
            .collect())
    }

    /// Append configuration `index`'s rows (as `Sweep.run_config` returned
    /// them) and flush.
    fn append(&mut self, index: usize, rows: Vec<Vec<Bound<'_, PyAny>>>) -> PyResult<()> {
        let rows: Vec<Vec<Cell>> = rows
            .iter()
            .map(|row| row.iter().map(cell_from_py).collect())
            .collect::<PyResult<_>>()?;
        self.inner
            .as_mut()
            .ok_or_else(closed)?
            .append(index, &rows)
            .map_err(|e| to_py_err(&e))
    }

    /// Close the file (appending afterwards raises). A file holding every
    /// configuration is rewritten in configuration order first, as
    /// `elevator sweep` leaves it; whether it was complete.
    fn close(&mut self, py: Python<'_>) -> PyResult<bool> {
        let Some(file) = self.inner.take() else {
            return Ok(false);
        };
        let spec = &*self.spec;
        py.detach(|| file.finish(spec)).map_err(|e| to_py_err(&e))
    }
}

/// Add `Sweep` and `ResultsFile` to the module `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySweep>()?;
    m.add_class::<PyResultsFile>()?;
    Ok(())
}
