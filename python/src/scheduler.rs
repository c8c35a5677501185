//! Schedulers written in Python: [`PyScheduler`], the core's
//! [`PluginScheduler`] over an instance of an `elevator.Scheduler`
//! subclass, and `plugins_from`, which turns the classes (or instances)
//! a call is given into the core's [`Plugins`].
//!
//! The adapter keeps the protocol for Python: it holds the
//! [`PyRequest`] of every request by [`RequestId::index`], counts what the
//! scheduler holds (`queued`), checks that `dispatch` answers a request it
//! holds, and calls the optional hooks (`completed`, `merged`,
//! `has_work`) only when the class overrides them. A Python exception (or
//! an answer the protocol forbids) is recorded with its traceback; from
//! then on the adapter hands out what the scheduler held, in the order it
//! came, with no more Python calls, so the run ends, and
//! [`PluginScheduler::failure`] fails it with the traceback.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Mutex;

use elevator_core::{
    MergeKind, Nanos, Plugin, PluginScheduler, Plugins, RequestId, Requests, SchedDispatch,
    Scheduler, TunableError, TunableSpec, canonical_scheduler,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString, PyType};

use crate::error::raise;
use crate::request::PyRequest;

/// The most distinct names Python schedulers may take in one process
/// (each is interned once, for [`Scheduler::name`]'s `&'static str`).
const MAX_NAMES: usize = 10_000;

/// The names interned so far.
static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// `name` as a `&'static str`, leaked once per distinct name.
fn intern_name(name: &str) -> Result<&'static str, String> {
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return Ok(n);
    }
    if names.len() >= MAX_NAMES {
        return Err(format!(
            "scheduler {name}: more than {MAX_NAMES} differently named Python schedulers in one \
             process"
        ));
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(leaked);
    Ok(leaked)
}

/// Which optional hooks a scheduler's class overrides.
#[derive(Clone, Copy, Debug)]
struct Hooks {
    completed: bool,
    merged: bool,
    has_work: bool,
}

/// The scheduler's hooks, looked up once when its run starts (a call is
/// then one call, with no attribute lookup and no bound method made).
#[derive(Debug)]
struct Methods {
    insert: Py<PyAny>,
    dispatch: Py<PyAny>,
    completed: Option<Py<PyAny>>,
    merged: Option<Py<PyAny>>,
    has_work: Option<Py<PyAny>>,
}

impl Methods {
    /// The hooks of `obj`, the optional ones if `hooks` says its class
    /// overrides them.
    fn of(obj: &Bound<'_, PyAny>, hooks: Hooks) -> PyResult<Methods> {
        let py = obj.py();
        let optional = |on: bool, name| -> PyResult<Option<Py<PyAny>>> {
            Ok(if on {
                Some(obj.getattr(name)?.unbind())
            } else {
                None
            })
        };
        Ok(Methods {
            insert: obj.getattr(intern!(py, "insert"))?.unbind(),
            dispatch: obj.getattr(intern!(py, "dispatch"))?.unbind(),
            completed: optional(hooks.completed, intern!(py, "completed"))?,
            merged: optional(hooks.merged, intern!(py, "merged"))?,
            has_work: optional(hooks.has_work, intern!(py, "has_work"))?,
        })
    }
}

/// Where a request is, for the adapter.
#[derive(Debug)]
enum Slot {
    /// Not the scheduler's.
    Free,
    /// Inserted, not yet dispatched (with the order it came in).
    Held(Py<PyRequest>, u64),
    /// Dispatched, its completion to be told (`completed` overridden).
    Dispatched(Py<PyRequest>),
}

/// A scheduler written in Python, as the core runs it.
#[derive(Debug)]
pub struct PyScheduler {
    name: &'static str,
    obj: Py<PyAny>,
    hooks: Hooks,
    /// `None` once it failed before it could run.
    methods: Option<Methods>,
    slots: Vec<Slot>,
    queued: u32,
    arrivals: u64,
    /// Why it failed: the traceback, or the protocol broken.
    failure: Option<String>,
    /// A failure met in `has_work` (which cannot change `self`), taken up
    /// by the next call that can.
    late_failure: RefCell<Option<String>>,
    /// After a failure: the requests still held, in the order they came.
    fallback: VecDeque<RequestId>,
}

/// A Python exception as Python prints it (the traceback, then the
/// exception), without the final newline.
fn traceback_text(py: Python<'_>, e: &PyErr) -> String {
    let formatted = py.import("traceback").and_then(|m| {
        let lines = m.call_method1(
            "format_exception",
            (e.get_type(py), e.value(py), e.traceback(py)),
        )?;
        PyString::new(py, "")
            .call_method1("join", (lines,))?
            .extract::<String>()
    });
    match formatted {
        Ok(text) => text.trim_end().to_string(),
        Err(_) => e.to_string(),
    }
}

impl PyScheduler {
    /// The scheduler `obj` (an instance of its class) named `name`.
    fn new(name: &'static str, obj: Py<PyAny>, hooks: Hooks) -> PyScheduler {
        let methods = Python::attach(|py| {
            Methods::of(obj.bind(py), hooks)
                .map_err(|e| format!("looking up its hooks raised:\n{}", traceback_text(py, &e)))
        });
        let (methods, failure) = match methods {
            Ok(m) => (Some(m), None),
            Err(why) => (None, Some(why)),
        };
        PyScheduler {
            name,
            obj,
            hooks,
            methods,
            slots: Vec::new(),
            queued: 0,
            arrivals: 0,
            failure,
            late_failure: RefCell::new(None),
            fallback: VecDeque::new(),
        }
    }

    /// A scheduler that failed before it ran (its class could not be
    /// made): it hands out requests in order.
    fn failed(name: &'static str, obj: Py<PyAny>, why: String) -> PyScheduler {
        let mut s = PyScheduler::new(
            name,
            obj,
            Hooks {
                completed: false,
                merged: false,
                has_work: false,
            },
        );
        s.failure = Some(why);
        s
    }

    /// Record a failure (the first only) and take over: what it holds is
    /// handed out in the order it came.
    fn fail(&mut self, why: String) {
        if self.failure.is_some() {
            return;
        }
        self.failure = Some(why);
        let mut held: Vec<(u64, usize)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Slot::Held(_, seq) => Some((*seq, i)),
                _ => None,
            })
            .collect();
        held.sort_unstable();
        self.fallback = held
            .into_iter()
            .map(|(_, i)| RequestId::from_raw(i as u32))
            .collect();
    }

    /// A hook raised: record its traceback.
    fn raised(&mut self, py: Python<'_>, hook: &str, e: &PyErr) {
        self.fail(format!("{hook} raised:\n{}", traceback_text(py, e)));
    }

    /// Take up a failure `has_work` met.
    fn take_late_failure(&mut self) {
        let late = self.late_failure.get_mut().take();
        if let Some(why) = late {
            self.fail(why);
        }
    }

    /// After a failure: the next request held, in the order they came.
    fn fallback_dispatch(&mut self) -> SchedDispatch {
        match self.fallback.pop_front() {
            Some(id) => {
                self.slots[id.index()] = Slot::Free;
                self.queued = self.queued.saturating_sub(1);
                SchedDispatch::Request(id)
            }
            None => SchedDispatch::Nothing,
        }
    }

    /// Update the object of `rq` after a merge, and tell `merged` if
    /// overridden.
    fn merged_into(&mut self, rqs: &Requests, rq: RequestId) {
        let merged = self.hooks.merged && self.failure.is_none();
        Python::attach(|py| {
            let hook = self
                .methods
                .as_ref()
                .and_then(|m| m.merged.as_ref())
                .map(|f| f.clone_ref(py));
            let Some(Slot::Held(obj, _)) = self.slots.get(rq.index()) else {
                return;
            };
            let obj = obj.clone_ref(py);
            obj.borrow_mut(py).update(rqs.get(rq));
            if merged
                && let Some(hook) = hook
                && let Err(e) = hook.bind(py).call1((obj,))
            {
                self.raised(py, "merged(request)", &e);
            }
        });
    }

    /// What `dispatch` answered, checked: a request it holds, nothing, or
    /// a time after `now`; `Err` says what is wrong.
    fn answer(
        &mut self,
        py: Python<'_>,
        got: &Bound<'_, PyAny>,
        now: Nanos,
    ) -> Result<Option<SchedDispatch>, String> {
        if got.is_none() {
            return Ok(Some(SchedDispatch::Nothing));
        }
        if let Ok(req) = got.cast::<PyRequest>() {
            let (id, away) = {
                let r = req.borrow();
                (r.id, r.merged_away)
            };
            if away {
                // Merged into another request: not the scheduler's any
                // more; ask again.
                return Ok(None);
            }
            let index = id as usize;
            return match self.slots.get(index) {
                Some(Slot::Held(obj, _)) if obj.bind(py).is(req) => {
                    let obj = obj.clone_ref(py);
                    self.slots[index] = if self.hooks.completed {
                        Slot::Dispatched(obj)
                    } else {
                        Slot::Free
                    };
                    self.queued = self.queued.saturating_sub(1);
                    Ok(Some(SchedDispatch::Request(RequestId::from_raw(id))))
                }
                Some(Slot::Dispatched(obj)) if obj.bind(py).is(req) => Err(format!(
                    "dispatch({now}) returned {}, which it had already dispatched",
                    repr(got)
                )),
                _ => Err(format!(
                    "dispatch({now}) returned {}, which it does not hold (already dispatched \
                     and completed, or never inserted)",
                    repr(got)
                )),
            };
        }
        if got.is_instance_of::<PyInt>() && !got.is_instance_of::<PyBool>() {
            return match got.extract::<u64>() {
                Ok(t) if t > now => Ok(Some(SchedDispatch::WaitUntil(t))),
                _ => Err(format!(
                    "dispatch({now}) returned {}: a time to wait until must be after now \
                     ({now} ns)",
                    repr(got)
                )),
            };
        }
        Err(format!(
            "dispatch({now}) returned {}: it must return a Request it holds, None, or a time \
             in ns to wait until",
            repr(got)
        ))
    }
}

/// `obj`'s `repr()`, or its type's name.
fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "an object".to_string())
}

impl Scheduler for PyScheduler {
    fn name(&self) -> &'static str {
        self.name
    }

    fn resize(&mut self, nr_requests: u32) {
        let n = nr_requests as usize;
        if self.slots.len() < n {
            self.slots.resize_with(n, || Slot::Free);
        }
    }

    fn insert(&mut self, rqs: &Requests, rq: RequestId, now: Nanos) {
        self.take_late_failure();
        self.queued += 1;
        self.arrivals += 1;
        let seq = self.arrivals;
        Python::attach(|py| {
            let obj = match Py::new(py, PyRequest::new(rq, rqs.get(rq), now)) {
                Ok(obj) => obj,
                Err(e) => {
                    self.raised(py, "insert(request)", &e);
                    self.fallback.push_back(rq);
                    return;
                }
            };
            if self.slots.len() <= rq.index() {
                self.slots.resize_with(rq.index() + 1, || Slot::Free);
            }
            self.slots[rq.index()] = Slot::Held(obj.clone_ref(py), seq);
            if self.failure.is_some() {
                self.fallback.push_back(rq);
                return;
            }
            let Some(m) = &self.methods else {
                return;
            };
            if let Err(e) = m.insert.bind(py).call1((obj,)) {
                self.raised(py, "insert(request)", &e);
            }
        });
    }

    fn bio_merged(&mut self, rqs: &Requests, rq: RequestId, _kind: MergeKind) {
        self.take_late_failure();
        self.merged_into(rqs, rq);
    }

    fn requests_merged(
        &mut self,
        rqs: &Requests,
        into: RequestId,
        gone: RequestId,
        gone_queued: bool,
    ) {
        self.take_late_failure();
        if gone_queued {
            Python::attach(|py| {
                if let Some(Slot::Held(obj, _)) = self.slots.get(gone.index()) {
                    obj.borrow_mut(py).merged_away = true;
                }
            });
            self.slots[gone.index()] = Slot::Free;
            self.queued = self.queued.saturating_sub(1);
            self.fallback.retain(|id| *id != gone);
        }
        self.merged_into(rqs, into);
    }

    fn dispatch(&mut self, _rqs: &Requests, now: Nanos) -> SchedDispatch {
        self.take_late_failure();
        if self.failure.is_some() {
            return self.fallback_dispatch();
        }
        Python::attach(|py| {
            let Some(dispatch) = self.methods.as_ref().map(|m| m.dispatch.clone_ref(py)) else {
                return self.fallback_dispatch();
            };
            // A request merged away is skipped; at most every slot's worth.
            for _ in 0..=self.slots.len() {
                let got = match dispatch.bind(py).call1((now,)) {
                    Ok(got) => got,
                    Err(e) => {
                        self.raised(py, "dispatch(now)", &e);
                        return self.fallback_dispatch();
                    }
                };
                match self.answer(py, &got, now) {
                    Ok(Some(answer)) => return answer,
                    Ok(None) => continue,
                    Err(why) => {
                        self.fail(why);
                        return self.fallback_dispatch();
                    }
                }
            }
            self.fail("dispatch kept returning requests merged away".to_string());
            self.fallback_dispatch()
        })
    }

    fn completed(&mut self, _rqs: &Requests, rq: RequestId, now: Nanos) {
        self.take_late_failure();
        let Some(slot) = self.slots.get_mut(rq.index()) else {
            return;
        };
        let Slot::Dispatched(obj) = std::mem::replace(slot, Slot::Free) else {
            return;
        };
        if self.failure.is_some() {
            return;
        }
        Python::attach(|py| {
            let Some(hook) = self
                .methods
                .as_ref()
                .and_then(|m| m.completed.as_ref())
                .map(|f| f.clone_ref(py))
            else {
                return;
            };
            if let Err(e) = hook.bind(py).call1((obj, now)) {
                self.raised(py, "completed(request, now)", &e);
            }
        });
    }

    fn has_work(&self) -> bool {
        if !self.hooks.has_work || self.failure.is_some() {
            return self.queued > 0;
        }
        let Some(hook) = self.methods.as_ref().and_then(|m| m.has_work.as_ref()) else {
            return self.queued > 0;
        };
        Python::attach(|py| {
            let got = hook.bind(py).call0().and_then(|v| v.is_truthy());
            match got {
                Ok(b) => b,
                Err(e) => {
                    let mut late = self.late_failure.borrow_mut();
                    if late.is_none() {
                        *late = Some(format!("has_work() raised:\n{}", traceback_text(py, &e)));
                    }
                    self.queued > 0
                }
            }
        })
    }

    fn queued(&self) -> u32 {
        self.queued
    }

    fn tunables(&self) -> &'static [TunableSpec] {
        &[]
    }

    fn get_tunable(&self, name: &str) -> Result<u64, TunableError> {
        Err(self.no_tunable(name))
    }

    fn set_tunable(&mut self, name: &str, _value: u64) -> Result<(), TunableError> {
        Err(self.no_tunable(name))
    }
}

impl PyScheduler {
    /// A Python scheduler has no tunables: it takes its settings in its
    /// constructor.
    fn no_tunable(&self, name: &str) -> TunableError {
        TunableError::Unknown {
            name: name.to_string(),
            owner: self.name.to_string(),
            known: "none (a scheduler written in Python takes its settings in its constructor)"
                .to_string(),
        }
    }
}

impl PluginScheduler for PyScheduler {
    fn clone_box(&self) -> Box<dyn PluginScheduler> {
        Python::attach(|py| {
            let slots: Vec<Option<Py<PyRequest>>> = self
                .slots
                .iter()
                .map(|s| match s {
                    Slot::Held(o, _) | Slot::Dispatched(o) => Some(o.clone_ref(py)),
                    Slot::Free => None,
                })
                .collect();
            let copied = py
                .import("copy")
                .and_then(|m| m.call_method1("deepcopy", ((self.obj.clone_ref(py), slots),)))
                .and_then(|c| c.extract::<(Py<PyAny>, Vec<Option<Py<PyRequest>>>)>());
            let mut out = match copied {
                Ok((obj, copies)) => {
                    let mut s = PyScheduler::new(self.name, obj, self.hooks);
                    s.slots = self
                        .slots
                        .iter()
                        .zip(copies)
                        .map(|(old, new)| match (old, new) {
                            (Slot::Held(_, seq), Some(o)) => Slot::Held(o, *seq),
                            (Slot::Dispatched(_), Some(o)) => Slot::Dispatched(o),
                            _ => Slot::Free,
                        })
                        .collect();
                    s
                }
                Err(e) => PyScheduler::failed(
                    self.name,
                    self.obj.clone_ref(py),
                    format!(
                        "copying it (copy.deepcopy) raised:\n{}",
                        traceback_text(py, &e)
                    ),
                ),
            };
            out.queued = self.queued;
            out.arrivals = self.arrivals;
            if let Some(why) = &self.failure {
                out.failure = Some(why.clone());
                out.fallback = self.fallback.clone();
            }
            Box::new(out) as Box<dyn PluginScheduler>
        })
    }

    fn failure(&self) -> Option<String> {
        self.failure
            .clone()
            .or_else(|| self.late_failure.borrow().clone())
    }
}

/// How a plugin makes each run's scheduler: a new instance of the class,
/// or a deep copy of the instance given.
#[derive(Debug)]
struct Template {
    name: &'static str,
    obj: Py<PyAny>,
    is_class: bool,
    hooks: Hooks,
}

impl Template {
    /// A scheduler for one run.
    fn build(&self) -> Box<dyn PluginScheduler> {
        Python::attach(|py| {
            let made = if self.is_class {
                self.obj.bind(py).call0()
            } else {
                py.import("copy")
                    .and_then(|m| m.call_method1("deepcopy", (self.obj.bind(py),)))
            };
            let s = match made {
                Ok(obj) => PyScheduler::new(self.name, obj.unbind(), self.hooks),
                Err(e) => {
                    let what = if self.is_class {
                        "creating it"
                    } else {
                        "copying it (copy.deepcopy)"
                    };
                    PyScheduler::failed(
                        self.name,
                        self.obj.clone_ref(py),
                        format!("{what} raised:\n{}", traceback_text(py, &e)),
                    )
                }
            };
            Box::new(s) as Box<dyn PluginScheduler>
        })
    }
}

/// Whether `cls` overrides `hook` of `base`.
fn overrides(cls: &Bound<'_, PyType>, base: &Bound<'_, PyAny>, hook: &str) -> PyResult<bool> {
    Ok(!cls.getattr(hook)?.is(&base.getattr(hook)?))
}

/// Python schedulers (`elevator.Scheduler` subclasses, or instances of
/// them) as the core's [`Plugins`], with the name each runs under (its
/// class's `name` attribute, or the class's name). A class is made anew
/// for each run; an instance is deep-copied for each run.
pub(crate) fn plugins_from(
    py: Python<'_>,
    schedulers: &[Bound<'_, PyAny>],
) -> PyResult<(Vec<String>, Plugins)> {
    let module = py.import("elevator.scheduler")?;
    let base = module.getattr("Scheduler")?;
    let mut names = Vec::with_capacity(schedulers.len());
    let mut plugins = Plugins::default();
    let mut seen: Vec<(String, Py<PyAny>)> = Vec::new();
    for s in schedulers {
        let name: String = module.call_method1("scheduler_name", (s,))?.extract()?;
        let is_class = s.is_instance_of::<PyType>();
        let cls = if is_class {
            s.cast::<PyType>()?.clone()
        } else {
            s.get_type()
        };
        if canonical_scheduler(&name).is_some() {
            return Err(raise(
                "ConfigError",
                format!(
                    "scheduler {name}: a built-in scheduler has that name; give the class \
                     another (a `name` class attribute)"
                ),
            ));
        }
        for hook in ["insert", "dispatch"] {
            if !overrides(&cls, &base, hook)? {
                return Err(raise(
                    "ConfigError",
                    format!("scheduler {name}: the class must define {hook}()"),
                ));
            }
        }
        let class_obj = cls.clone().into_any().unbind();
        if let Some((_, other)) = seen.iter().find(|(n, _)| *n == name) {
            if !other.bind(py).is(&class_obj) {
                return Err(raise(
                    "ConfigError",
                    format!(
                        "scheduler {name}: two different schedulers have that name; give one \
                         another (a `name` class attribute)"
                    ),
                ));
            }
            names.push(name);
            continue;
        }
        seen.push((name.clone(), class_obj));
        let hooks = Hooks {
            completed: overrides(&cls, &base, "completed")?,
            merged: overrides(&cls, &base, "merged")?,
            has_work: overrides(&cls, &base, "has_work")?,
        };
        let template = Template {
            name: intern_name(&name).map_err(|why| raise("ConfigError", why))?,
            obj: s.clone().unbind(),
            is_class,
            hooks,
        };
        // The factory is copied with the plugin: the template is shared.
        let template = std::sync::Arc::new(template);
        plugins.add(Plugin::new(name.clone(), move || template.build()));
        names.push(name);
    }
    Ok((names, plugins))
}
