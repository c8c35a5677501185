//! Reading a sweep's TOML file into a [`Spec`]: its keys (an unknown one
//! refused with the nearest known one), the workload's file (relative to
//! the spec's directory) and the grid's lists of scalars, in the order
//! written.

use std::path::Path;

use elevator_core::spelling::did_you_mean;
use toml::{Table, Value};

use super::Plugins;
use super::spec::{Fixed, Spec, Workload};
use crate::error::RunError;

/// The keys a spec file may have at its top level.
const TOP_KEYS: [&str; 9] = [
    "trace",
    "job",
    "job_text",
    "device",
    "scheduler",
    "seed",
    "set",
    "fio",
    "grid",
];

/// The spec in `text`, read from the file `source` in directory `dir`.
pub(super) fn from_toml(
    source: &str,
    text: &str,
    dir: &Path,
    plugins: &Plugins,
) -> Result<Spec, RunError> {
    let bad = |why: String| RunError::Usage(format!("{source}: {why}"));
    let table: Table = text
        .parse()
        .map_err(|e: toml::de::Error| bad(e.to_string().trim_end().to_string()))?;
    for key in table.keys() {
        if !TOP_KEYS.contains(&key.as_str()) {
            return Err(bad(format!(
                "unknown key '{key}'{}; the keys are {} (grid keys go under [grid])",
                did_you_mean(key, TOP_KEYS),
                TOP_KEYS.join(", ")
            )));
        }
    }
    let string = |key: &str| -> Result<Option<String>, RunError> {
        match table.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(bad(format!("{key}: a string, not {}", v.type_str()))),
        }
    };
    let workloads: Vec<&str> = ["trace", "job", "job_text"]
        .into_iter()
        .filter(|k| table.contains_key(*k))
        .collect();
    let workload = match workloads.as_slice() {
        ["trace"] => {
            let path = dir.join(string("trace")?.unwrap_or_default());
            Workload::trace_file(&path)?
        }
        ["job"] => {
            let path = dir.join(string("job")?.unwrap_or_default());
            Workload::job_file(&path)?
        }
        ["job_text"] => Workload::Job {
            name: format!("{source} (job_text)"),
            text: string("job_text")?.unwrap_or_default(),
        },
        [] => {
            return Err(bad(
                "no workload: give trace = \"FILE\", job = \"FILE.fio\" or job_text = \"\"\"...\"\"\""
                    .to_string(),
            ));
        }
        several => {
            return Err(bad(format!("{}: give one workload", several.join(" and "))));
        }
    };
    let mut fixed = Fixed::default();
    if let Some(d) = string("device")? {
        fixed.device = d;
    }
    if let Some(s) = string("scheduler")? {
        fixed.scheduler = s;
    }
    match table.get("seed") {
        None => {}
        Some(Value::Integer(n)) if *n >= 0 => fixed.seed = *n as u64,
        Some(v) => {
            return Err(bad(format!(
                "seed: a whole number from 0, not {}",
                shown(v)
            )));
        }
    }
    fixed.set = pairs(&table, "set", source)?;
    fixed.fio = pairs(&table, "fio", source)?;
    let mut grid = Vec::new();
    match table.get("grid") {
        None => {}
        Some(Value::Table(t)) => {
            for (key, v) in t {
                let at = format!("[grid] {key}");
                let list = match v {
                    Value::Array(list) => list.iter().map(|x| scalar(x, &at, source)).collect(),
                    v => scalar(v, &at, source).map(|s| vec![s]),
                }?;
                grid.push((key.clone(), list));
            }
        }
        Some(v) => return Err(bad(format!("grid: a table, not {}", v.type_str()))),
    }
    Spec::checked(source.to_string(), workload, fixed, grid, plugins)
}

/// The `name = value` pairs of table `key` (`set`, `fio`).
fn pairs(table: &Table, key: &str, source: &str) -> Result<Vec<(String, String)>, RunError> {
    match table.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Table(t)) => t
            .iter()
            .map(|(k, v)| Ok((k.clone(), scalar(v, &format!("{key}.{k}"), source)?)))
            .collect(),
        Some(v) => Err(RunError::Usage(format!(
            "{source}: {key}: a table ({key} = {{ name = value }}), not {}",
            v.type_str()
        ))),
    }
}

/// A scalar as text: a string as written, a number, a boolean as 1 or 0.
fn scalar(v: &Value, at: &str, source: &str) -> Result<String, RunError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(n) => Ok(n.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        Value::Boolean(b) => Ok(if *b { "1" } else { "0" }.to_string()),
        v => Err(RunError::Usage(format!(
            "{source}: {at}: {} is not a value (a string, number or boolean)",
            shown(v)
        ))),
    }
}

/// A value as a user wrote it, roughly, with its type.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?} (string)"),
        Value::Integer(n) => format!("{n} (integer)"),
        Value::Float(f) => format!("{f} (float)"),
        Value::Boolean(b) => format!("{b} (boolean)"),
        v => format!("a {}", v.type_str()),
    }
}
