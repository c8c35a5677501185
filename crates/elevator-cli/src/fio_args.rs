//! fio's options on elevator's command line.
//!
//! `elevator run --name=a --rw=randread --bs=4k --device ssd` takes job
//! options as fio does: every `--option[=value]` that is not one of
//! elevator's own flags for the subcommand is a fio job option, passed to
//! the job-file parser in order ([`split`]); elevator-run reads the job
//! ([`elevator_run::job_text`]). `--option value` goes with it as in fio:
//! an option fio gives a required argument takes the next one whatever it
//! is ([`elevator_fio::job::takes_next_argument`]), unless it is one of
//! elevator's own flags; fio's switches (`--time_based`) take none. As in
//! fio, one dash does for a fio option's name (`-bs=4k`, `-name x`).

use std::ffi::OsString;

use clap::CommandFactory;

/// The subcommands that take fio job options on the command line.
const TAKES_JOB_OPTIONS: &[&str] = &["run", "compare", "advise"];

/// `args` (the whole command line) split into what clap parses and the fio
/// job options (`--name=value`, `--name value` or `--switch`) of `run`,
/// `compare` and `advise`, in order. Elevator's own flags (`--device`,
/// `--output-format`, ...) stay with clap, with their values.
pub fn split<C: CommandFactory>(args: Vec<OsString>) -> (Vec<OsString>, Vec<String>) {
    let (keep, fio) = split_at::<C>(args);
    (keep, fio.into_iter().map(|(_, a)| a).collect())
}

/// Where each of the fio job options [`split`] takes from `args` is on the
/// command line: its index in `args` (the program is 0, the subcommand 1),
/// for errors that name the argument a user typed.
pub fn positions<C: CommandFactory>(args: Vec<OsString>) -> Vec<usize> {
    split_at::<C>(args).1.into_iter().map(|(i, _)| i).collect()
}

/// Whether `body` (an argument after one `-`) is a fio option as fio's
/// getopt_long_only takes it: `NAME` or `NAME=VALUE`, NAME fio's (or
/// `name`), two letters or more.
fn is_fio_option(body: &str) -> bool {
    let name = body.split_once('=').map_or(body, |(n, _)| n);
    name.len() > 1
        && !name.starts_with('-')
        && (name == "name" || elevator_fio::job::option_verdict(name).is_some())
}

/// [`split`], each fio job option with its index in `args`.
fn split_at<C: CommandFactory>(args: Vec<OsString>) -> (Vec<OsString>, Vec<(usize, String)>) {
    let Some(sub) = args.get(1).and_then(|a| a.to_str()).map(str::to_string) else {
        return (args, Vec::new());
    };
    if !TAKES_JOB_OPTIONS.contains(&sub.as_str()) {
        return (args, Vec::new());
    }
    let command = C::command();
    let Some(sc) = command.find_subcommand(&sub) else {
        return (args, Vec::new());
    };
    // elevator's long flags for this subcommand, and whether each takes a
    // value.
    let flags: Vec<(String, bool)> = sc
        .get_arguments()
        .filter_map(|a| {
            a.get_long()
                .map(|l| (l.to_string(), a.get_action().takes_values()))
        })
        .chain([("help".to_string(), false)])
        .collect();
    let mut keep = Vec::with_capacity(args.len());
    let mut fio = Vec::new();
    let mut rest = args.into_iter();
    keep.extend(rest.by_ref().take(2));
    let mut after_dashes = false;
    // The index in `args` of the argument `rest` gave last.
    let mut index = 1;
    while let Some(arg) = rest.next() {
        index += 1;
        let Some(text) = arg.to_str().map(str::to_string) else {
            keep.push(arg);
            continue;
        };
        // fio's getopt_long_only: `-bs=4k` is `--bs=4k` for a name fio
        // knows (elevator's short flags are one letter).
        let text = match text.strip_prefix('-') {
            Some(body) if !after_dashes && is_fio_option(body) => format!("-{text}"),
            _ => text,
        };
        if after_dashes || !text.starts_with("--") || text == "--" {
            after_dashes |= text == "--";
            keep.push(arg);
            continue;
        }
        let body = &text[2..];
        let name = body.split_once('=').map_or(body, |(n, _)| n);
        match flags.iter().find(|(f, _)| f == name) {
            Some(&(_, takes_value)) => {
                keep.push(arg);
                if takes_value
                    && !body.contains('=')
                    && let Some(value) = rest.next()
                {
                    index += 1;
                    keep.push(value);
                }
            }
            None => {
                fio.push((index, text.clone()));
                if !body.contains('=') && elevator_fio::job::takes_next_argument(name) {
                    let next = rest.as_slice().first().and_then(|a| a.to_str());
                    let own = next.is_some_and(|n| {
                        let flag = n.strip_prefix("--").unwrap_or("");
                        let flag = flag.split_once('=').map_or(flag, |(f, _)| f);
                        n == "--" || flags.iter().any(|(f, _)| f == flag)
                    });
                    if let (false, Some(value)) = (own, next) {
                        fio.push((index + 1, value.to_string()));
                        rest.next();
                        index += 1;
                    }
                }
            }
        }
    }
    (keep, fio)
}

/// Refuse a `--NAME` among `fio` (the job options [`split`] took for
/// subcommand `sub`) that is neither fio's option nor elevator's but is
/// nearer one of elevator's own flags than any of fio's options: fio's
/// parser would say only "fio has no option", with no word of the flag
/// meant (`--devcie` for `--device`). Names nearer one of fio's are left to
/// fio's parser, which suggests it.
pub fn check_names<C: CommandFactory>(sub: &str, fio: &[String]) -> anyhow::Result<()> {
    use elevator_core::spelling::distance;
    let command = C::command();
    let Some(sc) = command.find_subcommand(sub) else {
        return Ok(());
    };
    let flags: Vec<&str> = sc
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long())
        .collect();
    for arg in fio {
        let Some(body) = arg.strip_prefix("--") else {
            continue;
        };
        let name = body.split_once('=').map_or(body, |(n, _)| n);
        if name == "name" || elevator_fio::job::option_verdict(name).is_some() {
            continue;
        }
        let reach = 2.max(name.len() / 3);
        let nearest = |names: &mut dyn Iterator<Item = &str>| {
            names
                .filter_map(|n| Some((distance(name, n, reach)?, n.to_string())))
                .min()
        };
        let fio_nearest = nearest(&mut elevator_fio::job::fio_options().map(|(n, _)| n));
        let Some((d, own)) = nearest(&mut flags.iter().copied()) else {
            continue;
        };
        let hint = match fio_nearest {
            Some((f, _)) if f < d => continue,
            Some((f, theirs)) if f == d => format!("--{own} (elevator's) or --{theirs} (fio's)"),
            _ => format!("--{own} (elevator's)"),
        };
        anyhow::bail!(
            "unknown option --{name}: neither elevator's nor fio's (did you mean {hint}?)"
        );
    }
    Ok(())
}
