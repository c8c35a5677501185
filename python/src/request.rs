//! `elevator.Request`: a request as a scheduler written in Python sees it,
//! one object from its insert to its completion, updated when a bio merges
//! into it.

use elevator_core::{Nanos, Request, RequestId};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A request handed to a Python scheduler: contiguous sectors of one
/// operation from one submitter. Attributes of your own may be set on it.
#[pyclass(module = "elevator", name = "Request", dict)]
#[derive(Clone, Copy, Debug)]
pub struct PyRequest {
    /// Its tag in the queue (unique among the requests in flight or queued;
    /// reused once it completes).
    #[pyo3(get)]
    pub id: u32,
    /// First 512-byte sector.
    #[pyo3(get)]
    pub sector: u64,
    /// Length in 512-byte sectors.
    #[pyo3(get)]
    pub sectors: u32,
    /// The operation: `read`, `write`, `discard`, `write-zeroes`.
    #[pyo3(get)]
    pub op: &'static str,
    /// The submitter (I/O context: an fio job clone, a trace's process).
    #[pyo3(get)]
    pub submitter: u32,
    /// When the scheduler was given it, ns of virtual time.
    #[pyo3(get)]
    pub queued_at: Nanos,
    /// When the queue allocated it (its first bio arrived), ns.
    #[pyo3(get)]
    pub allocated_at: Nanos,
    /// Whether it is synchronous (reads, and writes someone waits for).
    #[pyo3(get)]
    pub sync: bool,
    /// How many bios it holds.
    #[pyo3(get)]
    pub bios: u32,
    /// The priority class: `rt`, `be` or `idle`.
    #[pyo3(get)]
    pub prio_class: &'static str,
    /// The priority level, 0 (highest) to 7.
    #[pyo3(get)]
    pub prio_level: u8,
    /// Whether it was merged into another request while queued (the
    /// scheduler no longer holds it).
    #[pyo3(get)]
    pub merged_away: bool,
}

impl PyRequest {
    /// The request `id`, as the queue holds it (`r`), given to the
    /// scheduler at `now`.
    pub fn new(id: RequestId, r: &Request, now: Nanos) -> PyRequest {
        PyRequest {
            id: id.raw(),
            sector: r.sector(),
            sectors: r.sectors(),
            op: r.op().name(),
            submitter: r.ctx().0,
            queued_at: now,
            allocated_at: r.alloc_time(),
            sync: r.is_sync(),
            bios: r.nr_bios(),
            prio_class: r.prio().class().name(),
            prio_level: r.prio().level(),
            merged_away: false,
        }
    }

    /// Take `r`'s extent and bios after a merge.
    pub fn update(&mut self, r: &Request) {
        self.sector = r.sector();
        self.sectors = r.sectors();
        self.bios = r.nr_bios();
    }
}

#[pymethods]
impl PyRequest {
    /// Length in bytes.
    #[getter]
    fn size(&self) -> u64 {
        u64::from(self.sectors) * 512
    }

    /// The sector after its last.
    #[getter]
    fn end(&self) -> u64 {
        self.sector + u64::from(self.sectors)
    }

    /// The priority, `(class, level)`: `("be", 4)` by default.
    #[getter]
    fn priority(&self) -> (&'static str, u8) {
        (self.prio_class, self.prio_level)
    }

    /// Whether it reads.
    #[getter]
    fn is_read(&self) -> bool {
        self.op == "read"
    }

    fn __repr__(&self) -> String {
        format!(
            "Request(id={}, op={}, sector={}, size={}, submitter={})",
            self.id,
            self.op,
            self.sector,
            self.size(),
            self.submitter
        )
    }

    /// A copy (for `copy.deepcopy` of a scheduler), its own attributes
    /// copied too.
    fn __deepcopy__<'py>(
        slf: &Bound<'py, Self>,
        memo: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyRequest>> {
        let py = slf.py();
        let me = slf.borrow();
        let copy = Bound::new(py, *me)?;
        drop(me);
        let dict = slf.getattr("__dict__")?;
        if dict.cast::<PyDict>().is_ok_and(|d| !d.is_empty()) {
            let copied = py.import("copy")?.call_method1("deepcopy", (dict, memo))?;
            copy.getattr("__dict__")?
                .call_method1("update", (copied,))?;
        }
        Ok(copy)
    }
}
