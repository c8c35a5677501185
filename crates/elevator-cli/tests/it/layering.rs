//! The layering that issue 27 set up, checked on the source tree: the CLI
//! parses and prints, the library layer (`elevator-run`) decides how a
//! workload runs, and real I/O does not lean on the simulator for anything
//! but its device models. docs/architecture.md states these rules with
//! the rest of the architecture; this prints the figures they bound,
//! which docs/benchmarks-real.md quotes.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::fio::repo_root;

/// Every `.rs` file below `dir`, sorted.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let entries = fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
                .path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Lines of code as `wc -l` counts them.
fn lines(files: &[PathBuf]) -> usize {
    files.iter().map(|f| read(f).lines().count()).sum()
}

#[test]
fn the_cli_parses_and_prints_and_never_branches_on_simulated_versus_real() {
    let root = repo_root();
    let cli = rust_files(&root.join("crates/elevator-cli/src"));
    let branching: Vec<String> = cli
        .iter()
        .flat_map(|f| {
            read(f)
                .lines()
                .enumerate()
                .filter(|(_, l)| l.contains(".model()"))
                .map(|(n, _)| format!("{}:{}", f.display(), n + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    let total = lines(&cli);
    println!(
        "elevator-cli/src: {total} lines, {} `.model()` branches",
        branching.len()
    );
    assert!(
        branching.is_empty(),
        "the CLI branches on the target's kind at {branching:?}"
    );
    assert!(
        total <= 8_000,
        "elevator-cli/src has {total} lines, more than 8,000"
    );
}

#[test]
fn real_io_takes_only_device_models_from_the_simulator() {
    let root = repo_root();
    for krate in ["elevator-io", "elevator-nbd"] {
        let mut uses = 0;
        for f in rust_files(&root.join("crates").join(krate).join("src")) {
            let text = read(&f);
            for (n, line) in text.lines().enumerate() {
                let mut rest = line;
                while let Some(at) = rest.find("elevator_sim::") {
                    rest = &rest[at + "elevator_sim::".len()..];
                    uses += 1;
                    let allowed = rest.starts_with("device::") || rest.starts_with("device;");
                    assert!(
                        allowed,
                        "{}:{}: {krate} takes from elevator-sim more than its device models: {line}",
                        f.display(),
                        n + 1
                    );
                }
            }
        }
        println!("{krate}/src: {uses} uses of elevator_sim, all device models");
    }
}

#[test]
fn the_library_layer_has_typed_errors() {
    let root = repo_root();
    for krate in [
        "elevator-run",
        "elevator-io",
        "elevator-nbd",
        "elevator-sim",
        "elevator-trace",
    ] {
        let manifest = read(&root.join("crates").join(krate).join("Cargo.toml"));
        assert!(
            !manifest
                .lines()
                .any(|l| l.trim_start().starts_with("anyhow")),
            "{krate} depends on anyhow: a library's errors are typed"
        );
    }
}
