//! docs/architecture.md checked against the tree it describes:
//!
//! - its crate graph (the first code block under "## The crate graph", one
//!   line a crate: `elevator-X → y, z`, short names, `(nothing)` for none)
//!   is exactly the workspace's dependency edges between elevator crates,
//!   as `cargo metadata` gives them (normal and build dependencies; the
//!   test kit's dev-dependency edges are the prose's), and each crate uses
//!   only crates on lines below its own, so the block reads as the stack;
//! - every file or folder it names in a code span exists: a path from the
//!   repository's root (`crates/…/file.rs`, `scripts/test`,
//!   `crates/elevator-core/src/sched/`) as written, and a short one in a
//!   crate's paragraph (`queue/`, `tunable.rs`) as the end of a path in
//!   some crate's `src/`;
//! - every Rust name it writes in a code span is defined in some crate's
//!   source: a type (`Queue`), a type's function or variant
//!   (`Queue::submit`, `Dispatch::WaitUntil`) and an item by its path
//!   (`elevator_sim::engine::run_on`);
//! - the first invariant it states holds: elevator-core is pure (its source
//!   names no thread, clock, file, socket, process, environment, lock or
//!   atomic, and it depends on nothing but thiserror).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::fio::repo_root;

const PAGE: &str = "docs/architecture.md";
const GRAPH_HEADING: &str = "## The crate graph";
const PREFIX: &str = "elevator-";

fn page() -> String {
    let path = repo_root().join(PAGE);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each crate's elevator dependencies, as a crate name and the full names
/// of what it uses.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The first fenced block after the graph heading: its lines, with their
/// line numbers in the page.
fn graph_block(text: &str) -> Vec<(usize, &str)> {
    let mut lines = text.lines().enumerate().map(|(n, l)| (n + 1, l));
    lines
        .by_ref()
        .find(|(_, l)| l.trim_end() == GRAPH_HEADING)
        .unwrap_or_else(|| panic!("{PAGE} has no heading `{GRAPH_HEADING}`"));
    let (open, _) = lines
        .by_ref()
        .find(|(_, l)| l.starts_with("```"))
        .unwrap_or_else(|| panic!("{PAGE}: no code block under `{GRAPH_HEADING}`"));
    let block: Vec<_> = lines.take_while(|(_, l)| !l.starts_with("```")).collect();
    assert!(!block.is_empty(), "{PAGE}:{open}: the crate graph is empty");
    block
}

/// The page's graph, and its crates in the order of its lines.
fn page_graph(text: &str) -> (Graph, Vec<String>) {
    let mut graph = Graph::new();
    let mut order = Vec::new();
    for (n, line) in graph_block(text) {
        if line.trim().is_empty() {
            continue;
        }
        let (from, to) = line
            .split_once('→')
            .unwrap_or_else(|| panic!("{PAGE}:{n}: not `elevator-X → y, z`: {line}"));
        let from = from.trim();
        assert!(
            from.starts_with(PREFIX),
            "{PAGE}:{n}: `{from}` is not an elevator crate"
        );
        let to = to.trim();
        let deps: BTreeSet<String> = if to == "(nothing)" {
            BTreeSet::new()
        } else {
            to.split(',')
                .map(|d| format!("{PREFIX}{}", d.trim()))
                .collect()
        };
        assert!(
            graph.insert(from.to_string(), deps).is_none(),
            "{PAGE}:{n}: {from} has two lines"
        );
        order.push(from.to_string());
    }
    (graph, order)
}

/// The workspace's graph from `cargo metadata`: every member, with the
/// elevator crates it depends on (dev-dependencies left out).
fn cargo_graph() -> Graph {
    let root = repo_root();
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .output()
        .unwrap_or_else(|e| panic!("cargo metadata: {e}"));
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("cargo metadata: {e}"));
    let packages = meta["packages"]
        .as_array()
        .unwrap_or_else(|| panic!("cargo metadata: no packages"));
    let mut graph = Graph::new();
    for p in packages {
        let name = p["name"].as_str().unwrap_or_default().to_string();
        let deps = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .filter_map(|d| d["name"].as_str())
            .filter(|d| d.starts_with(PREFIX))
            .map(str::to_string)
            .collect();
        graph.insert(name, deps);
    }
    graph
}

#[test]
fn the_crate_graph_is_the_workspaces() {
    let (shown, order) = page_graph(&page());
    let real = cargo_graph();
    for (krate, deps) in &real {
        let Some(page_deps) = shown.get(krate) else {
            panic!("{PAGE}: the crate graph has no line for {krate} (it uses {deps:?})");
        };
        let missing: Vec<_> = deps.difference(page_deps).collect();
        let extra: Vec<_> = page_deps.difference(deps).collect();
        assert!(
            missing.is_empty(),
            "{PAGE}: {krate}'s line leaves out what it uses: {missing:?}"
        );
        assert!(
            extra.is_empty(),
            "{PAGE}: {krate}'s line names what it does not use: {extra:?}"
        );
    }
    for krate in shown.keys() {
        assert!(
            real.contains_key(krate),
            "{PAGE}: {krate} is not a workspace member"
        );
    }
    for (i, krate) in order.iter().enumerate() {
        for dep in &shown[krate] {
            assert!(
                order[i + 1..].contains(dep),
                "{PAGE}: {krate} uses {dep}, which is not on a line below it"
            );
        }
    }
    println!(
        "{PAGE}: {} crates, {} edges, as cargo metadata has them",
        order.len(),
        shown.values().map(BTreeSet::len).sum::<usize>()
    );
}

/// Code spans of `text` (between single backticks, outside fenced blocks).
fn code_spans(text: &str) -> Vec<(usize, &str)> {
    let mut spans = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
            spans.push((n + 1, span));
        }
    }
    spans
}

/// Whether a code span names a file or folder of the repository: a path of
/// plain characters, with a `/`, under one of the repository's top folders.
fn is_path(span: &str) -> bool {
    const TOP: &[&str] = &[
        "crates/",
        "python/",
        "scripts/",
        "docs/",
        "examples/",
        "fuzz/",
        "perf/",
        "tests/",
    ];
    TOP.iter().any(|t| span.starts_with(t))
        && span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
}

/// Whether a code span is a short path: a file (`tunable.rs`) or folder
/// (`queue/`) named inside a crate's `src/`.
fn is_short_path(span: &str) -> bool {
    (span.ends_with(".rs") || span.ends_with('/'))
        && span.len() > 1
        && span
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "/._".contains(c))
}

/// Every file and folder below each crate's `src/`, as paths from that
/// `src/` (folders with a `/` at the end).
fn source_paths(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let crates = root.join("crates");
    let members = fs::read_dir(&crates).unwrap_or_else(|e| panic!("{}: {e}", crates.display()));
    for member in members {
        let src = member
            .unwrap_or_else(|e| panic!("{}: {e}", crates.display()))
            .path()
            .join("src");
        let mut todo = vec![src.clone()];
        while let Some(dir) = todo.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let rel = path
                    .strip_prefix(&src)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if path.is_dir() {
                    out.push(format!("{rel}/"));
                    todo.push(path);
                } else {
                    out.push(rel);
                }
            }
        }
    }
    out
}

#[test]
fn every_file_the_page_names_exists() {
    let root = repo_root();
    let text = page();
    let sources = source_paths(&root);
    let mut named = 0;
    for (n, span) in code_spans(&text) {
        if !is_path(span) {
            if is_short_path(span) {
                named += 1;
                assert!(
                    sources
                        .iter()
                        .any(|p| p == span || p.ends_with(&format!("/{span}"))),
                    "{PAGE}:{n}: `{span}` is no file or folder in any crate's src/"
                );
            }
            continue;
        }
        named += 1;
        let path = root.join(span);
        assert!(
            path.exists(),
            "{PAGE}:{n}: `{span}` names a file that does not exist"
        );
        if span.ends_with('/') {
            assert!(path.is_dir(), "{PAGE}:{n}: `{span}` is not a folder");
        }
    }
    assert!(named >= 20, "{PAGE} names only {named} files");
    println!("{PAGE}: {named} files and folders named, all there");
}

/// What a pure crate's source never names: the standard library's ways to
/// reach threads, clocks, files, sockets, processes, the environment and
/// shared state (`std::{...}` is refused too, so none hides in a group).
const IMPURE: &[&str] = &[
    "std::thread",
    "std::time",
    "std::fs",
    "std::net",
    "std::io",
    "std::process",
    "std::env",
    "std::sync",
    "sync::atomic",
    "core::time",
    "std::{",
    "thread_local!",
    "static mut",
    "extern crate",
];

#[test]
fn the_core_is_pure() {
    let core = repo_root().join("crates/elevator-core");
    let files = crate::layering::rust_files(&core.join("src"));
    for path in &files {
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (n, line) in text.lines().enumerate() {
            for word in IMPURE {
                assert!(
                    !line.contains(word),
                    "{}:{}: elevator-core names `{word}`: the core is pure (no threads, \
                     system calls, clocks or shared state)",
                    path.display(),
                    n + 1
                );
            }
        }
    }
    let manifest = fs::read_to_string(core.join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("elevator-core/Cargo.toml: {e}"));
    let deps: Vec<&str> = manifest
        .lines()
        .skip_while(|l| l.trim() != "[dependencies]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    assert!(
        deps.iter().all(|l| l.starts_with("thiserror")),
        "elevator-core depends on more than thiserror: {deps:?}"
    );
    println!(
        "elevator-core: {} files, none reaching threads, clocks or I/O",
        files.len()
    );
}

/// Every name the crates' sources define: types, traits, functions,
/// modules, macros, and what starts a line inside a type (enum variants,
/// fields).
fn defined_names(root: &Path) -> BTreeSet<String> {
    const KEYWORDS: &[&str] = &[
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "fn ",
        "mod ",
        "macro_rules! ",
    ];
    let mut names = BTreeSet::new();
    // The crates, and the Python package's Rust (python/src).
    let mut todo = vec![root.join("crates"), root.join("python/src")];
    while let Some(dir) = todo.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
                continue;
            }
            if path.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            for line in text.lines() {
                let line = line.trim_start();
                let mut words: Vec<&str> = KEYWORDS
                    .iter()
                    .filter_map(|k| line.split_once(k).map(|(_, rest)| rest))
                    .collect();
                words.push(line);
                for rest in words {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        names.insert(name);
                    }
                }
            }
        }
    }
    names
}

/// The Rust names a code span writes, if it is one: a CamelCase type
/// (`Queue`), `Type::item`, or a path from an elevator crate
/// (`elevator_io::mq::run_threads_traced`): each part that must be
/// defined, a module path's crate folder checked apart.
fn rust_names(span: &str) -> Option<Vec<&str>> {
    let ident = |w: &str| {
        !w.is_empty()
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !w.starts_with(|c: char| c.is_ascii_digit())
    };
    let parts: Vec<&str> = span.split("::").collect();
    if !parts.iter().all(|p| ident(p)) {
        return None;
    }
    let first = parts[0];
    if first.starts_with("elevator_") {
        return Some(parts[1..].to_vec());
    }
    let camel = first.starts_with(|c: char| c.is_ascii_uppercase())
        && first.chars().any(|c| c.is_ascii_lowercase());
    (camel && parts.len() <= 2).then_some(parts)
}

#[test]
fn every_rust_name_the_page_writes_is_defined() {
    let root = repo_root();
    let names = defined_names(&root);
    let mut checked = 0;
    for (n, span) in code_spans(&page()) {
        let Some(parts) = rust_names(span) else {
            continue;
        };
        if let Some(krate) = span
            .split("::")
            .next()
            .filter(|c| c.starts_with("elevator_"))
        {
            let folder = root.join("crates").join(krate.replace('_', "-"));
            assert!(
                folder.is_dir(),
                "{PAGE}:{n}: `{span}`: there is no crate {krate}"
            );
        }
        checked += 1;
        for part in parts {
            assert!(
                names.contains(part),
                "{PAGE}:{n}: `{span}`: no crate defines `{part}`"
            );
        }
    }
    assert!(checked >= 20, "{PAGE} writes only {checked} Rust names");
    println!("{PAGE}: {checked} Rust names written, all defined");
}
