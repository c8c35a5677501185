//! Counting a scenario's instructions: valgrind's callgrind runs
//! `PROGRAM cost-scenario run NAME --ops N` (the `elevator` binary) and
//! this module reads the total from callgrind's output file.
//!
//! A [`Counting::Region`] scenario is counted once with collection off at
//! the start and toggled on and off by [`super::measured`]; a
//! [`Counting::RegionDelta`] one twice (at N and 2N operations) and the
//! difference divided by the difference in operations; a
//! [`Counting::ProcessDelta`] one likewise, counting every thread of the
//! process (`--separate-threads=yes`, a file per thread) but the one that
//! ran the client's function. (A toggle cannot leave the client out:
//! callgrind starts with collection off whenever `--toggle-collect` is
//! given.)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::scenario::{Counting, Scenario};
use super::{CostError, MEASURED_SYMBOL};

/// The subcommand of the `elevator` binary that runs one scenario.
pub const RUN_SUBCOMMAND: [&str; 2] = ["cost-scenario", "run"];

/// A scenario's count.
#[derive(Clone, Debug, PartialEq)]
pub struct Counted {
    /// The scenario.
    pub name: String,
    /// What one operation is.
    pub unit: &'static str,
    /// Operations counted (the difference, for a delta).
    pub ops: u64,
    /// Instructions counted (the difference, for a delta).
    pub instructions: u64,
    /// Whether its growth fails the guard ([`Scenario::gated`]).
    pub gated: bool,
}

impl Counted {
    /// Instructions per operation.
    pub fn per_op(&self) -> f64 {
        self.instructions as f64 / self.ops.max(1) as f64
    }
}

/// One callgrind run: instructions collected and the operations the
/// scenario reported.
fn callgrind(
    program: &Path,
    scenario: &Scenario,
    ops: u64,
    out: &Path,
) -> Result<(u64, u64), CostError> {
    let mut cmd = Command::new("valgrind");
    cmd.arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg("--dump-line=no")
        .arg("--dump-instr=no");
    match scenario.counting {
        Counting::Region | Counting::RegionDelta => {
            cmd.arg("--collect-atstart=no")
                .arg(format!("--toggle-collect={MEASURED_SYMBOL}"));
        }
        Counting::ProcessDelta(_) => {
            cmd.arg("--separate-threads=yes");
        }
    }
    cmd.arg(program)
        .args(RUN_SUBCOMMAND)
        .arg(&scenario.name)
        .arg("--ops")
        .arg(ops.to_string());
    let output = cmd.output().map_err(|source| CostError::Spawn {
        program: "valgrind".to_string(),
        source,
    })?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        let _ = std::fs::remove_file(out);
        return Err(CostError::Valgrind {
            name: scenario.name.clone(),
            status: output.status.to_string(),
            output: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let done = stdout
        .lines()
        .find_map(|l| l.strip_prefix("ops "))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or_else(|| CostError::Counts {
            name: scenario.name.clone(),
            what: format!("it did not say how many operations it ran: {stdout:?}"),
        })?;
    let total = match scenario.counting {
        Counting::ProcessDelta(excluded) => threads_but(out, excluded),
        Counting::Region | Counting::RegionDelta => read_totals(out),
    };
    let _ = std::fs::remove_file(out);
    Ok((total?, done))
}

/// The total of one callgrind output file.
fn read_totals(path: &Path) -> Result<u64, CostError> {
    let text = std::fs::read_to_string(path).map_err(|e| CostError::Output {
        path: path.to_path_buf(),
        what: e.to_string(),
    })?;
    totals(&text).ok_or_else(|| CostError::Output {
        path: path.to_path_buf(),
        what: "no totals: or summary: line".to_string(),
    })
}

/// The totals of every thread's file of `out` (`OUT-01`, `OUT-02`, ...)
/// but those of threads that ran `excluded` (a pattern; its `*` dropped),
/// the files removed.
fn threads_but(out: &Path, excluded: &str) -> Result<u64, CostError> {
    let needle = excluded.trim_end_matches('*');
    let mut sum = 0;
    let mut threads = 0;
    let mut left_out = 0;
    for n in 1.. {
        let path = PathBuf::from(format!("{}-{n:02}", out.display()));
        let Ok(text) = std::fs::read_to_string(&path) else {
            break;
        };
        let _ = std::fs::remove_file(&path);
        threads += 1;
        if text.contains(needle) {
            left_out += 1;
            continue;
        }
        sum += totals(&text).ok_or_else(|| CostError::Output {
            path: path.clone(),
            what: "no totals: or summary: line".to_string(),
        })?;
    }
    if left_out != 1 {
        return Err(CostError::Output {
            path: out.to_path_buf(),
            what: format!(
                "{left_out} of {threads} threads ran {needle}: expected exactly one to leave out"
            ),
        });
    }
    Ok(sum)
}

/// The instructions of a callgrind output file: its `totals:` line (or its
/// `summary:` line), whose first figure is the instruction count.
pub fn totals(text: &str) -> Option<u64> {
    let first = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    first("totals:").or_else(|| first("summary:"))
}

/// A scratch file for callgrind's output.
fn scratch(name: &str, ops: u64) -> PathBuf {
    let tag: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    std::env::temp_dir().join(format!(
        "elevator-cost-{}-{tag}-{ops}.callgrind",
        std::process::id()
    ))
}

/// Count `scenario`'s instructions per operation, running `program` (the
/// `elevator` binary) under callgrind once or twice (see the module).
pub fn count(program: &Path, scenario: &Scenario) -> Result<Counted, CostError> {
    let name = &scenario.name;
    let (instructions, ops) = match scenario.counting {
        Counting::Region => callgrind(program, scenario, scenario.ops, &scratch(name, 1))?,
        Counting::RegionDelta | Counting::ProcessDelta(_) => {
            let small = callgrind(program, scenario, scenario.ops, &scratch(name, 1))?;
            let large = callgrind(program, scenario, 2 * scenario.ops, &scratch(name, 2))?;
            if large.0 <= small.0 || large.1 <= small.1 {
                return Err(CostError::Counts {
                    name: name.clone(),
                    what: format!(
                        "{} instructions at {} operations, {} at {}: no more at more",
                        small.0, small.1, large.0, large.1
                    ),
                });
            }
            (large.0 - small.0, large.1 - small.1)
        }
    };
    if instructions == 0 || ops == 0 {
        return Err(CostError::Counts {
            name: name.clone(),
            what: format!(
                "{instructions} instructions over {ops} operations: is {MEASURED_SYMBOL} in the \
                 binary (a release build with symbols)?"
            ),
        });
    }
    Ok(Counted {
        name: name.clone(),
        unit: scenario.unit,
        ops,
        instructions,
        gated: scenario.gated,
    })
}

/// Count every scenario, `jobs` at a time; `done` hears of each as it
/// ends. Results are in the order of `scenarios`.
pub fn count_all(
    program: &Path,
    scenarios: &[Scenario],
    jobs: usize,
    done: &(dyn Fn(&Scenario, &Result<Counted, CostError>) + Sync),
) -> Vec<Result<Counted, CostError>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Counted, CostError>>>> =
        Mutex::new((0..scenarios.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, scenarios.len().max(1)) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(scenario) = scenarios.get(i) else {
                        break;
                    };
                    let r = count(program, scenario);
                    done(scenario, &r);
                    if let Ok(mut all) = results.lock() {
                        all[i] = Some(r);
                    }
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .zip(scenarios)
        .map(|(r, s)| {
            r.unwrap_or_else(|| {
                Err(CostError::Counts {
                    name: s.name.clone(),
                    what: "not counted (a counting thread failed)".to_string(),
                })
            })
        })
        .collect()
}
