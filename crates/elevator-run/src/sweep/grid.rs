//! The grid: what kind each key is ([`KeyKind`]), every value checked
//! before anything runs, and the configurations it expands to
//! ([`Config`]): every combination, the last key varying fastest.
//!
//! A tunable that a configuration's scheduler does not have (bfq's
//! `slice_idle` under mq-deadline) is left out of that configuration: its
//! cell is empty, and the configurations that differ only by it are one
//! configuration, run once (the first in grid order stands for them).

use std::collections::HashSet;

use elevator_core::queue::QUEUE_TUNABLES;
use elevator_core::spelling::did_you_mean;
use elevator_core::{AnyScheduler, SCHEDULER_NAMES, Scheduler};
use serde::{Deserialize, Serialize};

use super::Plugins;
use super::spec::{Fixed, Workload};
use crate::error::RunError;
use crate::target::Target;

/// The most configurations a sweep may have.
pub const MAX_CONFIGS: usize = 1_000_000;

/// What a grid key sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyKind {
    /// The scheduler.
    Scheduler,
    /// The device.
    Device,
    /// The seed.
    Seed,
    /// A queue or scheduler tunable (as `--set` takes it).
    Tunable,
    /// A fio option, for every job (jobs only).
    Fio,
}

/// One configuration of a sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Its index, from 0, in grid order.
    pub index: usize,
    /// Each grid key with its value here (empty: a tunable its scheduler
    /// does not have).
    pub values: Vec<(String, String)>,
}

/// What a grid expands to: each key's kind, which schedulers lack each
/// tunable, and the configurations kept.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Plan {
    /// Each grid key's kind.
    pub(crate) kinds: Vec<KeyKind>,
    /// For each grid key, the schedulers of the sweep that lack it (a
    /// tunable's; empty for other keys).
    lacking: Vec<Vec<String>>,
    /// The combinations kept, by their index in the full product; `None`:
    /// all of them.
    #[serde(skip)]
    kept: Option<Vec<u32>>,
    /// The size of the full product.
    #[serde(skip)]
    product: usize,
}

impl Plan {
    /// Check every key and value of `grid` and the fixed values, and
    /// expand the grid.
    pub(crate) fn check(
        source: &str,
        workload: &Workload,
        fixed: &Fixed,
        grid: &[(String, Vec<String>)],
        plugins: &Plugins,
    ) -> Result<Plan, RunError> {
        let names = Names::new(plugins);
        let schedulers: Vec<String> = match grid.iter().find(|(k, _)| k == "scheduler") {
            Some((_, v)) => v.clone(),
            None => vec![fixed.scheduler.clone()],
        };
        let bad = |key: &str, why: String| RunError::Usage(format!("{source}: {key}: {why}"));
        let in_grid = |key: &str| grid.iter().any(|(k, _)| k == key);
        let scheduler_at = if in_grid("scheduler") {
            "[grid] scheduler"
        } else {
            "scheduler"
        };
        for s in &schedulers {
            names
                .check_scheduler(s)
                .map_err(|why| bad(scheduler_at, why))?;
        }
        if !in_grid("device") {
            check_device(&fixed.device, workload).map_err(|why| bad("device", why))?;
        }
        let model = Target::parse("hdd-7200")?;
        model
            .check_schedulers_in(&schedulers, &fixed.set, plugins)
            .map_err(|e| bad("set", e.to_string()))?;
        // A plugin takes its settings from its own constructor: only the
        // queue's tunables apply to it.
        for (name, _) in &fixed.set {
            if let Some(p) = schedulers.iter().find(|s| !names.has_tunable(s, name)) {
                return Err(bad(
                    &format!("set.{name}"),
                    format!(
                        "not a tunable of {p} (a scheduler written in Python takes its \
                         settings from its constructor); vary it in [grid] to leave it out \
                         where it does not apply"
                    ),
                ));
            }
        }
        let mut kinds = Vec::with_capacity(grid.len());
        let mut lacking = Vec::with_capacity(grid.len());
        for (i, (key, values)) in grid.iter().enumerate() {
            let at = format!("[grid] {key}");
            if grid[..i].iter().any(|(k, _)| k == key) {
                return Err(bad(&at, "given twice".to_string()));
            }
            let kind = names.kind(key, workload).map_err(|why| {
                let what = if key == "seed" { "key" } else { "unknown key" };
                RunError::Usage(format!("{source}: [grid] {what} '{key}'{why}"))
            })?;
            if values.is_empty() {
                return Err(bad(
                    &at,
                    "an empty list: give at least one value".to_string(),
                ));
            }
            let fixed_too = match kind {
                KeyKind::Tunable => fixed.set.iter().any(|(k, _)| k == key),
                KeyKind::Fio => fixed.fio.iter().any(|(k, _)| k == key),
                _ => false,
            };
            if fixed_too {
                return Err(bad(
                    &at,
                    "also a fixed value: give it in one place".to_string(),
                ));
            }
            let mut lacks = Vec::new();
            if kind == KeyKind::Tunable {
                lacks = schedulers
                    .iter()
                    .filter(|s| !names.has_tunable(s, key))
                    .cloned()
                    .collect();
                if lacks.len() == schedulers.len() {
                    return Err(bad(
                        &at,
                        format!(
                            "not a tunable of {} (the schedulers this sweep runs); `elevator \
                             schedulers` lists each one's",
                            schedulers.join(", ")
                        ),
                    ));
                }
            }
            for value in values {
                let checked = match kind {
                    KeyKind::Scheduler => names.check_scheduler(value),
                    KeyKind::Device => check_device(value, workload),
                    KeyKind::Seed => value
                        .parse::<u64>()
                        .map(drop)
                        .map_err(|e| format!("'{value}': {e}")),
                    KeyKind::Tunable => {
                        let having: Vec<String> = schedulers
                            .iter()
                            .filter(|s| !lacks.contains(s))
                            .cloned()
                            .collect();
                        model
                            .check_schedulers(&having, &[(key.clone(), value.clone())])
                            .map_err(|e| e.to_string())
                    }
                    KeyKind::Fio => {
                        let mut fio = fixed.fio.clone();
                        fio.push((key.clone(), value.clone()));
                        job_file(workload, &fio)
                            .and_then(|jobs| model.check_memory(&jobs, &mut crate::Quiet))
                            .map_err(|e| e.to_string())
                    }
                };
                checked.map_err(|why| bad(&at, why))?;
            }
            kinds.push(kind);
            lacking.push(lacks);
        }
        if matches!(workload, Workload::Job { .. }) {
            job_file(workload, &fixed.fio)
                .and_then(|jobs| model.check_memory(&jobs, &mut crate::Quiet))
                .map_err(|e| bad("job", e.to_string()))?;
        } else if !fixed.fio.is_empty() {
            return Err(bad(
                "fio",
                "fio options are for a job; this sweep replays a trace".to_string(),
            ));
        }
        let mut plan = Plan {
            kinds,
            lacking,
            kept: None,
            product: 0,
        };
        plan.expand(grid)
            .map_err(|e| RunError::Usage(format!("{source}: {e}")))?;
        Ok(plan)
    }

    /// Work out the configurations kept (after [`Plan::check`], or once
    /// read from JSON).
    pub(crate) fn expand(&mut self, grid: &[(String, Vec<String>)]) -> Result<(), RunError> {
        let mut product: usize = 1;
        for (_, values) in grid {
            product = product
                .checked_mul(values.len())
                .filter(|&n| n <= MAX_CONFIGS)
                .ok_or_else(|| {
                    RunError::Usage(format!(
                        "the grid has more than {MAX_CONFIGS} configurations, the most a sweep \
                         may have: {}",
                        grid.iter()
                            .map(|(k, v)| format!("{} {k}", v.len()))
                            .collect::<Vec<_>>()
                            .join(" × ")
                    ))
                })?;
        }
        if self.kinds.len() != grid.len() || self.lacking.len() != grid.len() {
            return Err(RunError::Usage(
                "sweep spec: the grid and its plan disagree".to_string(),
            ));
        }
        self.product = product;
        self.kept = None;
        if self.lacking.iter().all(Vec::is_empty) {
            return Ok(());
        }
        let mut kept = Vec::new();
        let mut seen: HashSet<Vec<u32>> = HashSet::new();
        for i in 0..product {
            let digits = self.effective(i, grid);
            if !digits.contains(&u32::MAX) || seen.insert(digits) {
                kept.push(i as u32);
            }
        }
        self.kept = Some(kept);
        Ok(())
    }

    /// The value index of each key in combination `i` of the full product,
    /// `u32::MAX` for a tunable its scheduler lacks.
    fn effective(&self, mut i: usize, grid: &[(String, Vec<String>)]) -> Vec<u32> {
        let mut digits = vec![0u32; grid.len()];
        for (k, (_, values)) in grid.iter().enumerate().rev() {
            digits[k] = (i % values.len()) as u32;
            i /= values.len();
        }
        let sched = self
            .kinds
            .iter()
            .position(|k| *k == KeyKind::Scheduler)
            .map(|k| grid[k].1[digits[k] as usize].as_str());
        for (k, lacks) in self.lacking.iter().enumerate() {
            // Without a scheduler key, lacking names the fixed scheduler,
            // which has every grid tunable (checked).
            if let Some(s) = sched
                && lacks.iter().any(|l| l == s)
            {
                digits[k] = u32::MAX;
            }
        }
        digits
    }

    /// The number of configurations.
    pub(crate) fn len(&self) -> usize {
        self.kept.as_ref().map_or(self.product, Vec::len)
    }

    /// Configuration `index`.
    pub(crate) fn config(&self, index: usize, grid: &[(String, Vec<String>)]) -> Option<Config> {
        let full = match &self.kept {
            Some(kept) => *kept.get(index)? as usize,
            None if index < self.product => index,
            None => return None,
        };
        let digits = self.effective(full, grid);
        let values = grid
            .iter()
            .zip(digits)
            .map(|((k, v), d)| {
                let value = v.get(d as usize).cloned().unwrap_or_default();
                (k.clone(), value)
            })
            .collect();
        Some(Config { index, values })
    }
}

/// The job file of `workload` with `fio` options for every job.
pub(crate) fn job_file(
    workload: &Workload,
    fio: &[(String, String)],
) -> Result<elevator_fio::job::JobFile, RunError> {
    let Workload::Job { name, text } = workload else {
        return Err(RunError::Usage("a trace has no job".to_string()));
    };
    let args: Vec<String> = fio.iter().map(|(k, v)| format!("--{k}={v}")).collect();
    let env = crate::job_text::parse_env();
    Ok(elevator_fio::job::JobFile::from_files(
        &[(text.as_str(), name.as_str())],
        &args,
        &env,
    )?)
}

/// Why `device` cannot be a sweep's device, if it cannot: a simulated one
/// only (the recorded device for a trace).
fn check_device(device: &str, workload: &Workload) -> Result<(), String> {
    if workload.is_trace() && crate::replay::names_recorded(device) {
        return Ok(());
    }
    let target = Target::parse(device).map_err(|e| format!("'{device}': {e}"))?;
    target
        .model_only("a sweep")
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The names a grid may use.
struct Names<'a> {
    plugins: &'a Plugins,
}

impl<'a> Names<'a> {
    fn new(plugins: &'a Plugins) -> Names<'a> {
        Names { plugins }
    }

    /// Why `name` is no scheduler, if it is not.
    fn check_scheduler(&self, name: &str) -> Result<(), String> {
        if AnyScheduler::by_name(name).is_ok() || self.plugins.find(name).is_some() {
            return Ok(());
        }
        let known = SCHEDULER_NAMES
            .iter()
            .copied()
            .chain(self.plugins.names())
            .collect::<Vec<_>>();
        Err(format!(
            "unknown scheduler '{name}'{}; known: {}",
            did_you_mean(name, known.iter().copied()),
            known.join(", ")
        ))
    }

    /// Whether scheduler `sched` (or the queue) has tunable `name`.
    fn has_tunable(&self, sched: &str, name: &str) -> bool {
        QUEUE_TUNABLES.iter().any(|t| t.name == name)
            || AnyScheduler::by_name(sched)
                .is_ok_and(|s| s.tunables().iter().any(|t| t.name == name))
    }

    /// Every tunable name: the queue's, then each scheduler's.
    fn tunables(&self) -> Vec<&'static str> {
        let mut all: Vec<&'static str> = QUEUE_TUNABLES.iter().map(|t| t.name).collect();
        for s in SCHEDULER_NAMES {
            if let Ok(s) = AnyScheduler::by_name(s) {
                for t in s.tunables() {
                    if !all.contains(&t.name) {
                        all.push(t.name);
                    }
                }
            }
        }
        all
    }

    /// What kind of key `key` is, or why it is none (" (did you mean
    /// ...?); a grid key is ...").
    fn kind(&self, key: &str, workload: &Workload) -> Result<KeyKind, String> {
        match key {
            "scheduler" => return Ok(KeyKind::Scheduler),
            "device" => return Ok(KeyKind::Device),
            "seed" if workload.is_trace() => {
                return Err(
                    ": a replay has no random stream to seed (vary the recorded \
                            device's instead: device = [\"recorded,seed=1\", \"recorded,seed=2\"])"
                        .to_string(),
                );
            }
            "seed" => return Ok(KeyKind::Seed),
            _ => {}
        }
        let tunables = self.tunables();
        if tunables.contains(&key) {
            return Ok(KeyKind::Tunable);
        }
        let fio = elevator_fio::job::option_verdict(key).is_some();
        if fio && !workload.is_trace() {
            return Ok(KeyKind::Fio);
        }
        if fio {
            return Err(
                ": it is a fio option, for a job; this sweep replays a trace (its keys: \
                 scheduler, device, seed, a queue or scheduler tunable)"
                    .to_string(),
            );
        }
        let known = ["scheduler", "device", "seed"]
            .into_iter()
            .chain(tunables.iter().copied());
        let hint = if workload.is_trace() {
            did_you_mean(key, known)
        } else {
            did_you_mean(
                key,
                known.chain(elevator_fio::job::fio_options().map(|(n, _)| n)),
            )
        };
        let fio_kind = if workload.is_trace() {
            ""
        } else {
            " or a fio option"
        };
        Err(format!(
            "{hint}; a grid key is scheduler, device, seed, a queue or scheduler tunable (as \
             --set takes it; `elevator schedulers` lists them){fio_kind}"
        ))
    }
}
