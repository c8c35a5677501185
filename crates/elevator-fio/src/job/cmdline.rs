//! Job options on the command line, as fio takes them: `--name=job` starts
//! a job (`--name=global` a global section), `--opt=value` or `--opt value`
//! sets an option, a bare `--opt` is a switch for the options fio lets stand
//! alone. Options before the first `--name` are global.
//!
//! Which options take the next argument as their value is fio's getopt
//! rule ([`takes_next_argument`]): fio's switches (`--time_based`,
//! `--group_reporting`...) never do, every other option always does, even
//! an argument that starts with `-` (`--offset -1`) or `--` (fio reads
//! `--direct --rw=read` as `direct=--rw=read`, and refuses it).

use super::option::{Store, closest, lookup};
use super::syntax::{Item, Kind, substitute};
use super::{JobError, ParseEnv};

/// What errors about the command line name as their file.
pub(super) const COMMAND_LINE: &str = "command line";

/// Whether fio's command line takes the argument after `--name` (written
/// without `=`) as its value: fio's getopt gives every option a required
/// argument except its switches (options of fio's "set" type, which only
/// take `--name=value`). `name` is the option's name or alias; an option
/// fio does not know takes nothing (it is refused by name).
pub fn takes_next_argument(name: &str) -> bool {
    name == "name" || lookup(name).is_some_and(|o| !o.bare || matches!(o.store, Store::Log(_)))
}

/// The command line split into the options before any `--name` (global)
/// and the sections that follow. Each item's line is its argument's
/// position: `at[i]` for `args[i]` (where the caller found it on the
/// user's command line), else `i + 1`.
pub(super) fn items(
    args: &[String],
    at: &[usize],
    env: &ParseEnv,
) -> Result<(Vec<Item>, Vec<Item>), JobError> {
    let mut global = Vec::new();
    let mut jobs = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let position = at.get(i).copied().unwrap_or(i + 1);
        let arg = &args[i];
        let error = |option: Option<&str>, message: String| JobError {
            file: COMMAND_LINE.to_string(),
            line: position,
            option: option.map(str::to_string),
            message,
        };
        let Some(body) = arg.strip_prefix("--") else {
            return Err(error(
                None,
                format!("'{arg}': expected --option=value or --option value"),
            ));
        };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
            None => match args.get(i + 1) {
                // fio's getopt takes the next argument as the value.
                Some(next) if takes_next_argument(body) => {
                    i += 1;
                    (body, Some(next.trim().to_string()))
                }
                None if takes_next_argument(body) => {
                    return Err(error(
                        Some(body),
                        format!("needs a value: write --{body}=VALUE or --{body} VALUE"),
                    ));
                }
                _ => (body, None),
            },
        };
        i += 1;
        if name.is_empty() {
            return Err(error(None, format!("'{arg}': no option name")));
        }
        // Known before any job file is read: `--nosuch 1` is refused for
        // `nosuch`, not for a job file `1` that is not there.
        if name != "name" && lookup(name).is_none() {
            let hint = closest(name)
                .map(|c| format!(" (did you mean '{c}'?)"))
                .unwrap_or_default();
            return Err(error(
                Some(name),
                format!("unknown option: fio has no option '{name}'{hint}"),
            ));
        }
        if name == "name" {
            let Some(job) = value.filter(|v| !v.is_empty()) else {
                return Err(error(
                    Some("name"),
                    "needs a value: write --name=JOB".into(),
                ));
            };
            // fio lists a command-line job's `name` among its options.
            jobs.push(Item {
                file: COMMAND_LINE.to_string(),
                line: position,
                kind: Kind::Section(job.clone()),
            });
            jobs.push(Item {
                file: COMMAND_LINE.to_string(),
                line: position,
                kind: Kind::Option {
                    name: "name".to_string(),
                    value: Some(job),
                },
            });
            continue;
        }
        let value = match value {
            Some(v) => Some(substitute(&v, env).map_err(|m| error(Some(name), m))?),
            None => None,
        };
        let item = Item {
            file: COMMAND_LINE.to_string(),
            line: position,
            kind: Kind::Option {
                name: name.to_string(),
                value,
            },
        };
        if jobs.is_empty() {
            global.push(item);
        } else {
            jobs.push(item);
        }
    }
    Ok((global, jobs))
}
