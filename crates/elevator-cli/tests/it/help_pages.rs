//! The help and the command pages: `elevator --help`'s summary names every
//! command, every visible command (and every subcommand of `trace` and
//! `write-log`) has its page docs/commands/<command>.md showing
//! `$ elevator <command> --help` with exactly what the binary prints, the
//! index docs/commands/README.md links every page and shows
//! `$ elevator --help`, and the defaults the help states are the ones the
//! code uses where that is cheap to check.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// What `elevator ARGS` prints on stdout; it must succeed.
fn stdout(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .output()
        .expect("running elevator");
    assert!(
        out.status.success(),
        "elevator {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The commands a help text lists under "Commands:" (clap's own `help`
/// left out).
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

fn page(name: &str) -> PathBuf {
    Path::new(ROOT)
        .join("docs/commands")
        .join(format!("{name}.md"))
}

/// The output shown after `$ COMMAND` in a fenced block of `text`: the lines
/// up to the block's end, or the next `$ ` line.
fn shown_output(text: &str, command: &str) -> Option<String> {
    let mut lines = text.lines();
    lines.find(|l| l.strip_prefix("$ ") == Some(command))?;
    let mut out = String::new();
    for line in lines {
        if line.starts_with("```") || line.starts_with("$ ") {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    Some(out)
}

/// Check that `page` shows `elevator ARGS --help` with the binary's output.
fn check_help_block(page: &Path, args: &[&str]) -> Result<(), String> {
    let text = std::fs::read_to_string(page)
        .map_err(|e| format!("{}: cannot read it: {e}", page.display()))?;
    let mut full: Vec<&str> = args.to_vec();
    full.push("--help");
    let command = format!("elevator {}", full.join(" "));
    let printed = stdout(&full);
    match shown_output(&text, &command) {
        None => Err(format!(
            "{}: no `$ {command}` line in a code block",
            page.display()
        )),
        Some(shown) if shown != printed => Err(format!(
            "{}: the output shown after `$ {command}` is not what it prints; \
             it prints:\n{printed}",
            page.display()
        )),
        Some(_) => Ok(()),
    }
}

#[test]
fn the_summary_names_every_command() {
    let help = stdout(&["--help"]);
    let summary = help.split("Usage:").next().unwrap_or_default();
    let words: Vec<&str> = summary
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .collect();
    let commands = commands(&help);
    assert!(commands.len() >= 15, "too few commands found in:\n{help}");
    let missing: Vec<&String> = commands
        .iter()
        .filter(|c| !words.contains(&c.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "`elevator --help`'s summary does not name {missing:?}:\n{summary}"
    );
    assert!(
        !commands.iter().any(|c| c == "cost-scenario") && !words.contains(&"cost-scenario"),
        "cost-scenario is internal and stays hidden"
    );
}

#[test]
fn every_command_has_its_page_with_its_help() {
    let help = stdout(&["--help"]);
    let mut problems = Vec::new();
    for command in commands(&help) {
        if let Err(e) = check_help_block(&page(&command), &[&command]) {
            problems.push(e);
        }
    }
    let index = Path::new(ROOT).join("docs/commands/README.md");
    if let Err(e) = check_help_block(&index, &[]) {
        problems.push(e);
    }
    for parent in ["trace", "write-log"] {
        for sub in commands(&stdout(&[parent, "--help"])) {
            if let Err(e) = check_help_block(&page(parent), &[parent, &sub]) {
                problems.push(e);
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn the_index_links_every_page() {
    let index = std::fs::read_to_string(Path::new(ROOT).join("docs/commands/README.md"))
        .expect("docs/commands/README.md");
    let missing: Vec<String> = commands(&stdout(&["--help"]))
        .into_iter()
        .filter(|c| !index.contains(&format!("]({c}.md)")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/commands/README.md has no link to {missing:?}"
    );
}

/// `compare --help` describes the job it runs by default with that job's
/// own `key=value` lines, so it cannot drift from examples/default.fio.
#[test]
fn compare_help_describes_the_default_job() {
    let job = std::fs::read_to_string(Path::new(ROOT).join("examples/default.fio"))
        .expect("examples/default.fio");
    // clap wraps long help at the terminal's width: join it back up.
    let help = stdout(&["compare", "--help"])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("examples/default.fio"), "{help}");
    for key in ["numjobs", "rw", "bs", "iodepth", "size", "runtime"] {
        let line = job
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(&format!("{key}=")))
            .unwrap_or_else(|| panic!("examples/default.fio has no {key}="));
        assert!(
            help.contains(line),
            "compare --help does not say `{line}` of examples/default.fio"
        );
    }
}

/// The defaults `serve --help` prints are the server's own defaults.
#[test]
fn serve_help_defaults_are_the_servers() {
    let help = stdout(&["serve", "--help"]);
    let default_of = |flag: &str| -> String {
        let rest = help
            .split(&format!("--{flag} "))
            .nth(1)
            .unwrap_or_else(|| panic!("no --{flag} in serve --help"));
        let rest = rest.split("\n      --").next().unwrap_or_default();
        rest.split("[default: ")
            .nth(1)
            .and_then(|d| d.split(']').next())
            .unwrap_or_else(|| panic!("--{flag} shows no default"))
            .to_string()
    };
    let config = elevator_nbd::ServerConfig::default();
    assert!(
        help.contains(&format!("at most {}", elevator_nbd::MAX_THREADS)),
        "--threads' limit"
    );
    assert_eq!(default_of("max-inflight"), config.max_inflight.to_string());
    assert_eq!(
        default_of("max-connections"),
        config.max_connections.to_string()
    );
    assert_eq!(
        default_of("handshake-timeout"),
        config.handshake_timeout.as_secs().to_string()
    );
    assert_eq!(
        default_of("poll-us"),
        config.poll_spin.as_micros().to_string()
    );
    for (flag, bytes) in [
        ("max-request", u64::from(config.max_request)),
        ("max-conn-bytes", config.max_conn_bytes),
        ("max-total-bytes", config.max_total_bytes),
    ] {
        let shown = default_of(flag);
        let (num, unit) = shown.split_at(shown.len() - 1);
        let shift = match unit {
            "k" => 10,
            "m" => 20,
            "g" => 30,
            _ => panic!("--{flag}'s default {shown} has no unit"),
        };
        let num: u64 = num.parse().expect("a number");
        assert_eq!(num << shift, bytes, "--{flag}'s default {shown}");
    }
}

/// The defaults `replay --help` and `experiment --help` state in words are
/// the ones the library uses.
#[test]
fn stated_defaults_are_the_librarys() {
    let replay = stdout(&["replay", "--help"]);
    assert!(
        replay.contains(&format!(
            "[default: recorded, or, for a trace without completions, {}]",
            elevator_run::replay::DEFAULT_DEVICE
        )),
        "replay --help's --device default:\n{replay}"
    );
    let experiment = stdout(&["experiment", "--help"]);
    let (threads, runtime) = elevator_run::experiment::lock_scaling::Params::defaults(false);
    let (quick_threads, quick_runtime) =
        elevator_run::experiment::lock_scaling::Params::defaults(true);
    let list = |t: &[usize]| t.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    for stated in [
        format!(
            "[default: {}; with --quick {}]",
            list(&threads),
            list(&quick_threads)
        ),
        format!("[default: {runtime}; with --quick {quick_runtime}]"),
    ] {
        assert!(
            experiment.contains(&stated),
            "experiment --help does not say {stated}:\n{experiment}"
        );
    }
}
