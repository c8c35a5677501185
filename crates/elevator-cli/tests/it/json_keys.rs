//! docs/json.md documents every command's JSON once: each command with JSON
//! output runs here on small simulated inputs, and every key path it emits
//! (objects' keys, recursively; an array by its elements' keys, as
//! `jobs[].read.iops`) must be in that command's table on the page, and
//! every key the table names must be emitted by one of the runs.
//!
//! The page's convention: a section per command (`## \`elevator run\``),
//! with a table whose first column is a key path in backticks. In a path,
//! `{read,write,trim}` stands for each of those keys, and a path ending in
//! `.*` covers its key and everything below it (keys that are data: fio's
//! job options, percentiles, bins).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

use crate::common::fio::{TempDir, repo_root};

/// `elevator ARGS` from the repository's root, which must succeed: its
/// stdout as JSON.
fn json_of(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(args)
        .current_dir(repo_root())
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .expect("runs elevator");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Every key path in `v`, below `at`.
fn paths(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                out.insert(p.clone());
                paths(x, &p, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                paths(x, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

/// `path` with each `{a,b}` segment expanded.
fn expand(path: &str) -> Vec<String> {
    let Some(open) = path.find('{') else {
        return vec![path.to_string()];
    };
    let Some(close) = path[open..].find('}').map(|c| open + c) else {
        return vec![path.to_string()];
    };
    path[open + 1..close]
        .split(',')
        .flat_map(|alt| expand(&format!("{}{alt}{}", &path[..open], &path[close + 1..])))
        .collect()
}

/// docs/json.md's key paths, by command (the heading's `elevator NAME`), as
/// written (before expansion).
fn documented() -> BTreeMap<String, Vec<String>> {
    let page = repo_root().join("docs/json.md");
    let text = std::fs::read_to_string(&page)
        .unwrap_or_else(|e| panic!("reading {}: {e}", page.display()));
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut command: Option<String> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            command = h
                .split('`')
                .nth(1)
                .and_then(|c| c.strip_prefix("elevator "))
                .map(str::to_string);
            continue;
        }
        let (Some(c), Some(row)) = (&command, line.strip_prefix("| `")) else {
            continue;
        };
        if let Some(end) = row.find("` |") {
            out.entry(c.clone())
                .or_default()
                .push(row[..end].to_string());
        }
    }
    out
}

/// Whether `path` (emitted) is among `doc` (a command's documented paths).
fn covered(path: &str, doc: &[String]) -> bool {
    doc.iter()
        .flat_map(|d| expand(d))
        .any(|d| match d.strip_suffix(".*") {
            Some(base) => {
                path == base
                    || path
                        .strip_prefix(base)
                        .is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]"))
            }
            None => path == d,
        })
}

/// Check `command`'s JSON documents (from several runs) against the page.
fn check(command: &str, docs: &[Value]) {
    let all = documented();
    let doc = all
        .get(command)
        .unwrap_or_else(|| panic!("docs/json.md has no section `elevator {command}`"));
    let mut emitted = BTreeSet::new();
    for v in docs {
        paths(v, "", &mut emitted);
    }
    let missing: Vec<&String> = emitted.iter().filter(|p| !covered(p, doc)).collect();
    assert!(
        missing.is_empty(),
        "`elevator {command}` emits keys docs/json.md does not document: {missing:?}"
    );
    let stale: Vec<&String> = doc
        .iter()
        .filter(|d| !d.ends_with(".*"))
        .filter(|d| !expand(d).iter().any(|p| emitted.contains(p)))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/json.md documents keys `elevator {command}` does not emit: {stale:?}"
    );
}

/// A small job as fio options on the command line.
const SMALL: [&str; 4] = ["--name=r", "--rw=randrw", "--bs=4k", "--size=64k"];

fn run(extra: &[&str]) -> Value {
    let mut args = vec!["run"];
    args.extend(SMALL);
    args.extend(extra);
    json_of(&args)
}

#[test]
fn run_json_is_documented() {
    let dir = TempDir::new("json-keys-run");
    let log = dir.path().join("w.wlog");
    let log = log.to_string_lossy();
    let docs = [
        run(&["--device", "null,latency=10", "--output-format", "json+"]),
        run(&["--device", "null", "--output-format", "json"]),
        run(&["--device", "mem:4m", "--output-format", "json"]),
        run(&[
            "--device",
            "null,latency=10,spike_rate=0.5",
            "--write-log",
            &log,
            "--output-format",
            "json",
        ]),
        run(&[
            "--device",
            "null,latency=10",
            "--unified_rw_reporting=mixed",
            "--continue_on_error=all",
            "--ioengine=libaio",
            "--output-format",
            "json",
        ]),
        json_of(&[
            "run",
            "--name=r",
            "--rw=randread",
            "--size=1m",
            "--time_based",
            "--runtime=2s",
            "--ss=iops:10%",
            "--ss_dur=1s",
            "--device",
            "null,latency=10",
            "--output-format",
            "json",
        ]),
    ];
    check("run", &docs);
}

#[test]
fn compare_advise_and_microbench_json_are_documented() {
    for command in ["compare", "advise"] {
        let mut args = vec![command];
        args.extend(SMALL);
        args.extend([
            "--device",
            "null,latency=10",
            "--schedulers",
            "none,mq-deadline",
            "--output-format",
            "json",
        ]);
        check(command, &[json_of(&args)]);
    }
    let micro = json_of(&[
        "microbench",
        "--scheduler",
        "none",
        "--depth",
        "4",
        "--ios",
        "1000",
        "--repeat",
        "1",
        "--output-format",
        "json",
    ]);
    check("microbench", &[micro]);
}

#[test]
fn experiment_json_is_documented() {
    let v = json_of(&[
        "experiment",
        "cfq-idling",
        "--quick",
        "--output-format",
        "json",
    ]);
    check("experiment", &[v]);
}

/// A fio iolog of a few reads and writes, two of them contiguous.
const IOLOG: &str = "fio version 2 iolog\n/dev/x add\n/dev/x open\n\
                     /dev/x write 0 4096\n/dev/x write 4096 4096\n/dev/x read 65536 4096\n\
                     /dev/x close\n";

#[test]
fn replay_and_write_log_json_are_documented() {
    let dir = TempDir::new("json-keys-replay");
    let log = dir.path().join("small.iolog");
    std::fs::write(&log, IOLOG).expect("writing the iolog");
    let log = log.to_string_lossy();
    let trace = repo_root().join("tests/traces/pgbench-init-mq-deadline.trace.xz");
    let trace = trace.to_string_lossy();
    let docs = [
        json_of(&["replay", &log, "--output-format", "json"]),
        json_of(&[
            "replay",
            &trace,
            "--set",
            "max_sectors_kb=1280",
            "--output-format",
            "json",
        ]),
    ];
    check("replay", &docs);
    // Keys a program can use: snake_case, below data-named maps.
    let mut emitted = BTreeSet::new();
    for v in &docs {
        paths(v, "", &mut emitted);
    }
    for p in &emitted {
        for key in p.split('.') {
            let key = key.trim_end_matches("[]");
            assert!(
                key.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "replay's JSON key {key:?} (in {p}) is not snake_case"
            );
        }
    }
    let wlog = json_of(&[
        "write-log",
        "show",
        "examples/crash/app-correct.wlog",
        "--output-format",
        "json",
    ]);
    check("write-log show", &[wlog]);
}

/// `crash-states` writes its JSON to `report.json` in `--out`: a log whose
/// states all pass, and one with failures (which exits non-zero).
#[test]
fn crash_states_report_json_is_documented() {
    let mut docs = Vec::new();
    for (log, checked) in [
        ("app-correct", true),
        ("app-broken", true),
        ("app-correct", false),
    ] {
        let dir = TempDir::new("json-keys-crash");
        let out = dir.path().join("out");
        let out = out.to_string_lossy();
        let wlog = format!("examples/crash/{log}.wlog");
        let mut args = vec!["crash-states", &wlog, "--out", &out, "--jobs", "1"];
        if checked {
            args.extend(["--check", "sh examples/crash/check-app.sh {}"]);
        }
        let status = Command::new(env!("CARGO_BIN_EXE_elevator"))
            .args(&args)
            .current_dir(repo_root())
            .output()
            .expect("runs elevator");
        let report = dir.path().join("out/report.json");
        let text = std::fs::read(&report).unwrap_or_else(|e| {
            panic!(
                "{args:?} wrote no {} ({e}): {}",
                report.display(),
                String::from_utf8_lossy(&status.stderr)
            )
        });
        docs.push(serde_json::from_slice(&text).expect("report.json is JSON"));
    }
    check("crash-states", &docs);
}

#[test]
fn the_page_conventions_hold() {
    assert_eq!(
        expand("a.{read,write}.b"),
        vec!["a.read.b".to_string(), "a.write.b".to_string()]
    );
    let doc = vec!["jobs[].job options.*".to_string(), "x".to_string()];
    assert!(covered("jobs[].job options", &doc));
    assert!(covered("jobs[].job options.bs", &doc));
    assert!(!covered("jobs[].job optionsX", &doc));
    assert!(covered("x", &doc));
    assert!(!covered("y", &doc));
}
