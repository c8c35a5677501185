//! A [`RunError`] as a Python exception: the class `elevator.errors`
//! defines for its kind, with the message the `elevator` command prints
//! after `error: ` (the error, then each cause after `: `).

use elevator_run::RunError;
use pyo3::prelude::*;

/// Which class of `elevator.errors` a [`RunError`] raises: `ConfigError`
/// (also a `ValueError`) for what the caller gave (device, job, scheduler,
/// tunables, options that do not go together), `RunError` (also a
/// `RuntimeError`) for a run that could not be done or failed on its own
/// terms, `SchedulerError` (a `RunError`) for a scheduler written in Python
/// that failed.
fn class_name(e: &RunError) -> &'static str {
    match e {
        RunError::Spec(_)
        | RunError::Model(_)
        | RunError::Job(_)
        | RunError::Queue(_)
        | RunError::JobText { .. }
        | RunError::Tunable { .. }
        | RunError::Usage(_) => "ConfigError",
        RunError::Scheduler { .. } => "SchedulerError",
        RunError::During { source, .. } => class_name(source),
        _ => "RunError",
    }
}

/// The message the `elevator` command prints for `e` after `error: `: its
/// own, then each cause's, joined by `: `.
pub fn message(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// `e` as the Python exception of its kind (`elevator.ConfigError`,
/// `elevator.RunError`), with the CLI's message.
pub(crate) fn to_py_err(e: &RunError) -> PyErr {
    raise(class_name(e), message(e))
}

/// An exception of the class `elevator.errors.<class>` with `message`
/// (a `RuntimeError` if that module cannot be imported).
pub(crate) fn raise(class: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let made = py
            .import("elevator.errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.call1((message.as_str(),)));
        match made {
            Ok(exception) => PyErr::from_value(exception),
            Err(_) => pyo3::exceptions::PyRuntimeError::new_err(message),
        }
    })
}
