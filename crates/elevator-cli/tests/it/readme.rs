//! The README's commands, run as a reader would run them, so that the README
//! cannot drift from the program.
//!
//! Every line after a `$ ` in a code block is a command (a line ending in
//! `\` continues on the next), and so is every line of a `sh` block. They run
//! with `bash` from the repository's root, with the `elevator` this test
//! builds first on the `PATH`, and `cargo run --release -p elevator-cli --`
//! standing for it. Two set-up lines are not run here, because this test is
//! what they lead to: `scripts/test` and `cargo install`.
//!
//! - **Simulated runs are deterministic**: what a command prints (stdout, or
//!   stderr when it fails) must be the lines that follow it in the README,
//!   exactly. A README line ending in `...` is cut short there: the output's
//!   line must start with what comes before it.
//! - **Runs on the real clock** (real devices, benchmarks, the server) vary
//!   from run to run: they run with small sizes and short times, given by
//!   [`SMALLER`] (each substitution must still apply, or the README has
//!   changed under it), and must succeed.
//! - No command writes `\r` progress to a stderr that is not a terminal.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Commands whose figures come from the real clock: run, not compared.
const REAL_TIME: &[&str] = &[
    "file:",
    "mem:",
    "microbench",
    "bench-vs-",
    "serve",
    "nbdinfo",
    "dd ",
    "lock-scaling",
    "experiment all",
    "experiment merging",
    "experiment direct-io",
    "experiment deadline-cost",
    "bench-write-log",
    "crash-ext4",
];

/// Lines of `sh` blocks that set up what this test already is.
const SET_UP: &[&str] = &["scripts/test", "cargo install"];

/// Substitutions that make the real-clock commands small: (as the README
/// writes it, as this test runs it). `JOB` stands for a copy of
/// `examples/bench-randread.fio` with 1 s of runtime over 48 MiB, `JOB2` for
/// one of `examples/bench-randread-2jobs.fio`.
const SMALLER: &[(&str, &str)] = &[
    (
        "bench-write-log --rounds 5",
        "bench-write-log --rounds 1 --size 32m --runtime 1",
    ),
    (
        "--files 60 --between 24 --max-states 2000 --jobs 2 --keep /tmp/ext4run",
        "--files 3 --between 1 --jobs 2",
    ),
    ("bs=1M count=1024", "bs=1M count=64"),
    ("examples/bench-randread.fio", "JOB"),
    ("examples/bench-randread-2jobs.fio", "JOB2"),
    (
        "experiment lock-scaling",
        "experiment lock-scaling --runtime 0.05 --threads 1,2",
    ),
    ("--rounds 5", "--rounds 1"),
    ("experiment all --out", "experiment all --quick --out"),
    (
        "--rounds 3 --runtime 5",
        "--rounds 1 --runtime 1 --size 64m --sparse-size 64m",
    ),
];

/// One command and the output the README shows for it.
#[derive(Debug)]
struct Shown {
    line: usize,
    command: String,
    /// What the README shows it printing: `None` for a line of a `sh` block,
    /// which shows no output.
    output: Option<Vec<String>>,
}

/// The commands of the README, block by block.
fn commands(readme: &str) -> Vec<Vec<Shown>> {
    let mut blocks = Vec::new();
    let mut lines = readme.lines().enumerate();
    while let Some((_, line)) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let mut body = Vec::new();
        for (n, l) in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            body.push((n + 1, l));
        }
        let session = body.iter().any(|(_, l)| l.starts_with("$ "));
        let mut block: Vec<Shown> = Vec::new();
        let mut continued = false;
        for (n, l) in body {
            if continued {
                let last = block.last_mut().expect("a continued command");
                last.command.push(' ');
                last.command
                    .push_str(l.trim().trim_end_matches('\\').trim_end());
                continued = l.ends_with('\\');
                continue;
            }
            let command = if session {
                l.strip_prefix("$ ")
            } else if info == "sh" && !l.trim().is_empty() {
                Some(l)
            } else {
                None
            };
            match command {
                Some(c) => {
                    continued = c.ends_with('\\');
                    block.push(Shown {
                        line: n,
                        command: c.trim_end_matches('\\').trim().to_string(),
                        output: session.then(Vec::new),
                    });
                }
                None => {
                    if let Some(output) = block.last_mut().and_then(|s| s.output.as_mut()) {
                        output.push(l.to_string());
                    }
                }
            }
        }
        if !block.is_empty() {
            blocks.push(block);
        }
    }
    blocks
}

/// A copy of `examples/NAME` in `dir` with 1 s of runtime over 48 MiB.
fn small_job(dir: &Path, name: &str) -> PathBuf {
    let original = std::fs::read_to_string(Path::new(ROOT).join("examples").join(name))
        .unwrap_or_else(|e| panic!("examples/{name}: {e}"));
    assert!(original.contains("runtime=10\n") && original.contains("size=1g\n"));
    let path = dir.join(name);
    std::fs::write(
        &path,
        original
            .replace("runtime=10\n", "runtime=1\n")
            .replace("size=1g\n", "size=48m\n"),
    )
    .expect("write the small job");
    path
}

/// A scratch directory for this run, removed at the end.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bash(command: &str, path: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(ROOT)
        .env("PATH", path)
        .env_remove("SOURCE_DATE_EPOCH")
        .stdin(Stdio::null());
    cmd
}

/// `out` (one command's) matches what the README shows.
fn check_output(shown: &Shown, expected: &[String], out: &Output) {
    let printed = if out.status.success() {
        &out.stdout
    } else {
        &out.stderr
    };
    let printed = String::from_utf8_lossy(printed);
    let printed: Vec<&str> = printed.trim_end_matches('\n').split('\n').collect();
    let shown_text = expected.join("\n");
    let expected: Vec<&str> = shown_text.trim_end_matches('\n').split('\n').collect();
    let differ = printed.len() != expected.len()
        || printed.iter().zip(&expected).any(|(p, e)| {
            match e.strip_suffix("...)").or_else(|| e.strip_suffix("...")) {
                Some(prefix) => !p.starts_with(prefix),
                None => p != e,
            }
        });
    assert!(
        !differ,
        "README.md:{}: `{}` printed something else than the README shows.\n--- README:\n{}\n--- printed:\n{}\n",
        shown.line,
        shown.command,
        expected.join("\n"),
        printed.join("\n")
    );
}

/// Wait for `path` to exist (a server's socket), for at most 30 s.
fn wait_for(path: &Path, server: &mut Child) {
    let start = Instant::now();
    while !path.exists() {
        if let Ok(Some(status)) = server.try_wait() {
            panic!(
                "the server exited ({status}) before it listened on {}",
                path.display()
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no socket at {} after 30 s",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_command_in_the_readme_works_as_shown() {
    elevator_testkit::needs!("sh", "dd", "fio", "nbdinfo", "nbdcopy", "blkparse", "btt");
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).expect("README.md");
    let blocks = commands(&readme);
    let scratch =
        Scratch(std::env::temp_dir().join(format!("elevator-readme-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0).expect("scratch directory");
    let job = small_job(&scratch.0, "bench-randread.fio");
    let job2 = small_job(&scratch.0, "bench-randread-2jobs.fio");
    let bin = Path::new(env!("CARGO_BIN_EXE_elevator"))
        .parent()
        .expect("the binary's directory")
        .to_string_lossy()
        .into_owned();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let mut used = vec![false; SMALLER.len()];
    let mut ran = 0;
    let mut made = Vec::new();
    for block in &blocks {
        let mut server: Option<(Child, &Shown)> = None;
        for shown in block {
            if SET_UP.iter().any(|s| shown.command.starts_with(s)) {
                continue;
            }
            let mut command = shown
                .command
                .replace("cargo run --release -p elevator-cli --", "elevator");
            for (i, (from, to)) in SMALLER.iter().enumerate() {
                if command.contains(from) {
                    used[i] = true;
                    let to = to
                        .replace("JOB2", &job2.to_string_lossy())
                        .replace("JOB", &job.to_string_lossy());
                    command = command.replace(from, &to);
                }
            }
            if command.starts_with("elevator microbench") {
                command = small_microbench(&command);
            }
            if let Some(of) = command
                .split_whitespace()
                .find_map(|w| w.strip_prefix("of="))
            {
                made.push(PathBuf::from(of));
            }
            ran += 1;
            if command.starts_with("elevator serve") {
                let socket = command
                    .split_whitespace()
                    .skip_while(|w| *w != "--unix")
                    .nth(1)
                    .map(PathBuf::from)
                    .expect("the README's server listens on a Unix socket");
                let _ = std::fs::remove_file(&socket);
                let mut child = bash(&format!("exec {command}"), &path)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start the server");
                wait_for(&socket, &mut child);
                server = Some((child, shown));
                continue;
            }
            let out = bash(&command, &path).output().expect("run bash");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                !err.contains('\r'),
                "README.md:{}: `{command}` wrote \\r progress to a stderr that is no terminal",
                shown.line
            );
            let real_time = REAL_TIME.iter().any(|m| command.contains(m));
            if let (Some(expected), false) = (&shown.output, real_time) {
                check_output(shown, expected, &out);
            } else {
                assert!(
                    out.status.success(),
                    "README.md:{}: `{command}` failed: {}{err}",
                    shown.line,
                    out.status
                );
            }
        }
        if let Some((child, shown)) = server {
            let status = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()
                .expect("run kill");
            assert!(status.success());
            let out = child.wait_with_output().expect("wait for the server");
            assert!(
                out.status.success(),
                "README.md:{}: the server ended with {}: {}",
                shown.line,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    for file in made {
        let _ = std::fs::remove_file(file);
    }
    for (i, (from, _)) in SMALLER.iter().enumerate() {
        assert!(
            used[i],
            "no README command has '{from}' any more: update SMALLER"
        );
    }
    assert!(
        ran >= 10,
        "only {ran} README commands found: is the parser right?"
    );
}

/// A microbench command with its `--ios` and `--repeat` made small.
fn small_microbench(command: &str) -> String {
    let mut words = Vec::new();
    let mut skip = false;
    for w in command.split_whitespace() {
        if skip {
            skip = false;
        } else if w == "--ios" || w == "--repeat" {
            skip = true;
        } else {
            words.push(w);
        }
    }
    format!("{} --ios 2000 --repeat 1", words.join(" "))
}

#[test]
fn the_parser_reads_sessions_sh_blocks_and_continuations() {
    let text = "x\n```\n$ elevator a \\\n    --b c\nout 1\nout 2\n$ elevator d\n```\n\
                ```sh\nelevator e   # note\n\n```\n```text\nelevator f\n```\n";
    let blocks = commands(text);
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert_eq!(blocks[0][0].command, "elevator a --b c");
    assert_eq!(
        blocks[0][0].output.as_deref(),
        Some(&["out 1".to_string(), "out 2".to_string()][..])
    );
    assert_eq!(blocks[1][0].output, None);
    assert_eq!(blocks[0][1].command, "elevator d");
    assert_eq!(blocks[1][0].command, "elevator e   # note");
    assert_eq!(blocks[1][0].line, 10);
}
