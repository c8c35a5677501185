//! Job options on the command line, as fio takes them: `--name=job` starts
//! a job (`--name=global` a global section), `--opt=value` or `--opt value`
//! sets an option, a bare `--opt` is a switch for the options fio lets stand
//! alone. Options before the first `--name` are global.

use super::option::lookup;
use super::syntax::{Item, Kind, substitute};
use super::{JobError, ParseEnv};

/// What errors about the command line name as their file.
pub(super) const COMMAND_LINE: &str = "command line";

/// The command line split into the options before any `--name` (global)
/// and the sections that follow. Each item's line is the 1-based position
/// of its argument.
pub(super) fn items(args: &[String], env: &ParseEnv) -> Result<(Vec<Item>, Vec<Item>), JobError> {
    let mut global = Vec::new();
    let mut jobs = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let position = i + 1;
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
                format!("argument {position} '{arg}': expected --option=value"),
            ));
        };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
            None => {
                let bare = lookup(body).is_some_and(|o| o.bare);
                match args.get(i + 1) {
                    // fio's getopt takes the next argument as the value.
                    Some(next) if !bare && !next.starts_with("--") => {
                        i += 1;
                        (body, Some(next.trim().to_string()))
                    }
                    _ => (body, None),
                }
            }
        };
        i += 1;
        if name.is_empty() {
            return Err(error(
                None,
                format!("argument {position} '{arg}': no option name"),
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
