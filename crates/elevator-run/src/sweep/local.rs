//! A sweep on this machine ([`run_local`]): worker threads take the
//! configurations not yet done, one at a time, in order; this thread
//! appends each one's rows to the results file as it completes and says
//! so ([`SweepProgress`]). The trace is parsed once, before any worker
//! starts, and shared.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::Plugins;
use super::grid::Config;
use super::results_file::ResultsFile;
use super::rows::{Cell, run_config};
use super::spec::Spec;
use crate::error::RunError;

/// A configuration done, for a progress line.
#[derive(Clone, Debug)]
pub struct SweepProgress {
    /// The configuration.
    pub config: Config,
    /// Configurations done so far (with those done before a resume).
    pub done: usize,
    /// Configurations in all.
    pub total: usize,
    /// The wall-clock time it took (host-dependent: never in the rows).
    pub took: Duration,
    /// Whether its run failed (its row has an `error`).
    pub failed: bool,
}

impl SweepProgress {
    /// One line for it: `12/64 done: config 11 scheduler=bfq
    /// nr_requests=64 (3.1 s)` (a tunable its scheduler lacks left out).
    pub fn line(&self) -> String {
        let values: Vec<String> = self
            .config
            .values
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let failed = if self.failed {
            ", failed (see its error)"
        } else {
            ""
        };
        format!(
            "{}/{} done: config {} {} ({:.1} s{failed})",
            self.done,
            self.total,
            self.config.index,
            values.join(" "),
            self.took.as_secs_f64()
        )
    }
}

/// One configuration's rows, by its index.
pub type ConfigRows = (usize, Vec<Vec<Cell>>);

/// Run every configuration of `spec` that `out` does not hold yet on
/// `threads` workers (0: one per CPU), appending each one's rows to `out`
/// as it completes and telling `progress`. The rows run here, in
/// configuration order (the same whatever `threads` is). An error is the
/// spec's or the results file's: it stops the sweep once the configurations
/// running are done (their rows are kept).
pub fn run_local(
    spec: &Spec,
    threads: usize,
    out: Option<&mut ResultsFile>,
    plugins: &Plugins,
    progress: &(dyn Fn(SweepProgress) + Sync),
) -> Result<Vec<ConfigRows>, RunError> {
    run_local_in(spec, threads, out, plugins, progress, &|work| work())
}

/// What each worker thread of [`run_local_in`] runs its work in: it must
/// call the work it is given, once. A front end with per-thread state
/// wraps it: the Python bindings give each worker its interpreter thread
/// state for the whole sweep, so that a Python scheduler's every call
/// does not make (and free) one.
pub type WorkerScope<'a> = &'a (dyn Fn(&(dyn Fn() + Sync)) + Sync);

/// [`run_local`], each worker thread running in `scope`.
pub fn run_local_in(
    spec: &Spec,
    threads: usize,
    mut out: Option<&mut ResultsFile>,
    plugins: &Plugins,
    progress: &(dyn Fn(SweepProgress) + Sync),
    scope_in: WorkerScope<'_>,
) -> Result<Vec<ConfigRows>, RunError> {
    // A trace that cannot be read fails here, before anything runs.
    spec.parsed_trace()?;
    let before = out.as_ref().map_or(0, |o| o.done().len());
    let todo: Vec<usize> = (0..spec.len())
        .filter(|i| out.as_ref().is_none_or(|o| !o.done().contains(i)))
        .collect();
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(todo.len().max(1));
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<Vec<Vec<Cell>>, RunError>, Duration)>();
    let mut results: Vec<ConfigRows> = Vec::with_capacity(todo.len());
    let mut failure = None;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, stop, todo) = (&next, &stop, &todo);
            scope.spawn(move || {
                let work = || {
                    while !stop.load(Ordering::Relaxed) {
                        let Some(&index) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        let t0 = Instant::now();
                        let rows = run_config(spec, index, plugins);
                        if tx.send((index, rows, t0.elapsed())).is_err() {
                            break;
                        }
                    }
                };
                scope_in(&work);
            });
        }
        drop(tx);
        for (index, rows, took) in rx {
            let rows = match rows {
                Ok(rows) => rows,
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    failure.get_or_insert(e);
                    continue;
                }
            };
            if let Some(o) = out.as_deref_mut()
                && failure.is_none()
                && let Err(e) = o.append(index, &rows)
            {
                stop.store(true, Ordering::Relaxed);
                failure = Some(e);
                continue;
            }
            let failed = rows.iter().any(|r| matches!(r.last(), Some(Cell::Text(_))));
            results.push((index, rows));
            if let Some(config) = spec.config(index) {
                progress(SweepProgress {
                    config,
                    done: before + results.len(),
                    total: spec.len(),
                    took,
                    failed,
                });
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    results.sort_by_key(|(i, _)| *i);
    Ok(results)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::sweep::{Fixed, Workload};

    /// Every configuration, on every thread, replays the one parse of the
    /// trace: the spec holds it, made once.
    #[test]
    fn the_trace_is_parsed_once_and_shared() {
        let text = "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 0 4096\n\
                    /dev/x read 65536 4096\n/dev/x close\n";
        let workload = Workload::Trace {
            name: "t.iolog".to_string(),
            text: text.to_string(),
        };
        let grid = vec![(
            "scheduler".to_string(),
            vec!["none".to_string(), "bfq".to_string(), "kyber".to_string()],
        )];
        let spec = Spec::new(workload, Fixed::default(), grid, &Plugins::default()).unwrap();
        assert!(spec.parsed.get().is_none());
        let rows = run_local(&spec, 2, None, &Plugins::default(), &|_| {}).unwrap();
        assert_eq!(rows.len(), 3);
        let first = spec.parsed_trace().unwrap().unwrap();
        let again = spec.parsed_trace().unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        // The spec's cell, the two handles here: no other copy was made.
        assert_eq!(Arc::strong_count(&first), 3);
        // A clone (another thread's spec) shares it too.
        let clone = spec.clone();
        assert!(Arc::ptr_eq(&first, &clone.parsed_trace().unwrap().unwrap()));
    }
}
