//! The docs' commands, run as a reader would run them, so that README.md and
//! the pages under `docs/` cannot drift from the program.
//!
//! The pages are README.md, then every `docs/**/*.md` sorted by path
//! (`ELEVATOR_DOCS_ONLY=docs/fio.md`, a substring of the path, keeps only
//! the pages that match; a page that uses files another page's commands
//! made needs that page too, and the checks across all pages, of
//! [`SMALLER`] and of the count of commands, are left out when a page is).
//! Every line after a `$ ` in a code block is a
//! command (a line ending in `\` continues on the next), and so is every
//! line of a `sh` block. They run in page order with `bash` from the
//! repository's root, with the `elevator` this test builds first on the
//! `PATH`, and `cargo run --release -p elevator-cli --` standing for it. Two
//! set-up lines are not run here, because this test is what they lead to:
//! `scripts/test` and `cargo install`.
//!
//! - **Simulated runs are deterministic**: what a command prints (stdout, or
//!   stderr when it fails) must be the lines that follow it on the page,
//!   exactly. A line ending in `...` is cut short there: the output's line
//!   must start with what comes before it.
//! - **Runs on the real clock** (real devices, benchmarks, the server) vary
//!   from run to run: they run with small sizes and short times, given by
//!   [`SMALLER`] (each substitution must still apply on some page, or the
//!   pages have changed under it), and must succeed. What they show is a
//!   record.
//! - No command writes `\r` progress to a stderr that is not a terminal.
//!
//! Every failure is collected (page:line, the command, a diff of shown and
//! printed) and all are reported at the end. With `ELEVATOR_DOCS_BLESS=1`
//! the test rewrites in place the shown output of every simulated command
//! that printed something else (keeping a `...` line where its prefix still
//! matches; real-clock records are never touched) and prints what it
//! rewrote: `ELEVATOR_TEST_ALL=1 ELEVATOR_DOCS_BLESS=1 cargo test -p
//! elevator-cli --test it docs::every_command`.
//!
//! The fast checks that read the pages only are in [`figures`] (the prose
//! after a block quotes only the block's figures) and [`links`] (links
//! resolve; the README is short and has a table of contents).

mod figures;
mod links;
mod page;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use page::{Page, Shown};

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

/// Substitutions that make the real-clock commands small: (as the pages
/// write it, as this test runs it). `JOB` stands for a copy of
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

/// Whether the printed line `printed` is what the page's line `shown` shows:
/// the same, or `shown` cut short with `...` and `printed` starting with
/// what comes before it.
fn shows(shown: &str, printed: &str) -> bool {
    match shown
        .strip_suffix("...)")
        .or_else(|| shown.strip_suffix("..."))
    {
        Some(prefix) => printed.starts_with(prefix),
        None => printed == shown,
    }
}

/// A step from the shown lines to the printed ones.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Shown line `.0` shows printed line `.1`.
    Same(usize, usize),
    /// Shown line, not printed.
    Gone(usize),
    /// Printed line, not shown.
    New(usize),
}

/// The steps from `shown` to `printed` that keep the most lines (a longest
/// common subsequence under [`shows`]); past 4 M cells, none are kept.
fn steps(shown: &[&str], printed: &[&str]) -> Vec<Step> {
    let (n, m) = (shown.len(), printed.len());
    if n.saturating_mul(m) > 4 << 20 {
        return (0..n)
            .map(Step::Gone)
            .chain((0..m).map(Step::New))
            .collect();
    }
    // kept[i][j]: the most lines kept from shown[i..] and printed[j..].
    let mut kept = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            kept[i][j] = if shows(shown[i], printed[j]) {
                kept[i + 1][j + 1] + 1
            } else {
                kept[i + 1][j].max(kept[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < n || j < m {
        if i < n && j < m && shows(shown[i], printed[j]) {
            out.push(Step::Same(i, j));
            (i, j) = (i + 1, j + 1);
        } else if j == m || (i < n && kept[i + 1][j] >= kept[i][j + 1]) {
            out.push(Step::Gone(i));
            i += 1;
        } else {
            out.push(Step::New(j));
            j += 1;
        }
    }
    out
}

/// `printed` as the page should show it: the shown `...` lines kept where
/// they still show their printed line.
fn blessed(shown: &[&str], printed: &[&str]) -> Vec<String> {
    steps(shown, printed)
        .into_iter()
        .filter_map(|step| match step {
            Step::Same(i, _) => Some(shown[i].to_string()),
            Step::New(j) => Some(printed[j].to_string()),
            Step::Gone(_) => None,
        })
        .collect()
}

/// A diff from `shown` (`-`) to `printed` (`+`), with three lines of
/// context around each change.
fn diff(shown: &[&str], printed: &[&str]) -> String {
    let steps = steps(shown, printed);
    let changed: Vec<bool> = steps.iter().map(|s| !matches!(s, Step::Same(..))).collect();
    let near = |k: usize| changed[k.saturating_sub(3)..(k + 4).min(changed.len())].contains(&true);
    let mut out = String::new();
    let mut skipped = 0;
    for (k, step) in steps.iter().enumerate() {
        let line = match step {
            Step::Same(_, j) if !near(k) => {
                skipped += 1;
                continue;
            }
            Step::Same(_, j) => format!("  {}", printed[*j]),
            Step::Gone(i) => format!("- {}", shown[*i]),
            Step::New(j) => format!("+ {}", printed[*j]),
        };
        if skipped > 0 {
            out.push_str(&format!("  [{skipped} lines the same]\n"));
            skipped = 0;
        }
        out.push_str(&line);
        out.push('\n');
    }
    if skipped > 0 {
        out.push_str(&format!("  [{skipped} lines the same]\n"));
    }
    out
}

/// The lines of `text` without its trailing newlines (none when empty).
fn output_lines(text: &str) -> Vec<&str> {
    let text = text.trim_end_matches('\n');
    if text.is_empty() {
        Vec::new()
    } else {
        text.split('\n').collect()
    }
}

/// Wait for `path` to exist (a server's socket), for at most 30 s.
fn wait_for(path: &Path, server: &mut Child) -> Result<(), String> {
    let start = Instant::now();
    while !path.exists() {
        if let Ok(Some(status)) = server.try_wait() {
            return Err(format!(
                "the server exited ({status}) before it listened on {}",
                path.display()
            ));
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = server.kill();
            let _ = server.wait();
            return Err(format!("no socket at {} after 30 s", path.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// A new shown output for a page: (the line index where the output starts,
/// how many lines it had, the lines it gets).
type Rewrite = (usize, usize, Vec<String>);

/// One run of the pages' commands: what it needs, and what it found.
struct Run {
    path: String,
    job: PathBuf,
    job2: PathBuf,
    bless: bool,
    used: Vec<bool>,
    ran: usize,
    /// Of those, the ones whose output was compared with the page's.
    compared: usize,
    made: Vec<PathBuf>,
    failures: Vec<String>,
}

impl Run {
    /// `command` as this test runs it: `elevator` for `cargo run`, and the
    /// real-clock commands made small.
    fn runnable(&mut self, command: &str) -> String {
        let mut command = command.replace("cargo run --release -p elevator-cli --", "elevator");
        for (i, (from, to)) in SMALLER.iter().enumerate() {
            if command.contains(from) {
                self.used[i] = true;
                let to = to
                    .replace("JOB2", &self.job2.to_string_lossy())
                    .replace("JOB", &self.job.to_string_lossy());
                command = command.replace(from, &to);
            }
        }
        if command.starts_with("elevator microbench") {
            command = small_microbench(&command);
        }
        command
    }

    /// Run one page's blocks; with `bless`, rewrite its outputs that differ.
    fn page(&mut self, page: &Page) {
        let mut rewrites = Vec::new();
        for block in page::commands(&page.text) {
            self.block(page, &block, &mut rewrites);
        }
        if rewrites.is_empty() {
            return;
        }
        let mut lines: Vec<String> = page.text.split('\n').map(str::to_string).collect();
        for (at, len, new) in rewrites.into_iter().rev() {
            lines.splice(at..at + len, new);
        }
        std::fs::write(Path::new(ROOT).join(&page.path), lines.join("\n"))
            .unwrap_or_else(|e| panic!("rewrite {}: {e}", page.path));
    }

    fn block(&mut self, page: &Page, block: &[Shown], rewrites: &mut Vec<Rewrite>) {
        let mut server: Option<(Child, &Shown)> = None;
        for shown in block {
            if SET_UP.iter().any(|s| shown.command.starts_with(s)) {
                continue;
            }
            let where_ = format!("{}:{}", page.path, shown.line);
            let command = self.runnable(&shown.command);
            if let Some(of) = command
                .split_whitespace()
                .find_map(|w| w.strip_prefix("of="))
            {
                self.made.push(PathBuf::from(of));
            }
            self.ran += 1;
            let help = asks_for_help(&command);
            if command.starts_with("elevator serve") && !help {
                match self.serve(&command) {
                    Ok(child) => server = Some((child, shown)),
                    Err(e) => self.failures.push(format!("{where_}: `{command}`: {e}")),
                }
                continue;
            }
            let out = match bash(&command, &self.path).output() {
                Ok(out) => out,
                Err(e) => {
                    self.failures
                        .push(format!("{where_}: `{command}`: bash: {e}"));
                    continue;
                }
            };
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains('\r') {
                self.failures.push(format!(
                    "{where_}: `{command}` wrote \\r progress to a stderr that is no terminal"
                ));
            }
            let real_time = !help && REAL_TIME.iter().any(|m| command.contains(m));
            match (&shown.output, real_time) {
                (Some(expected), false) => {
                    self.compared += 1;
                    self.compare(&where_, shown, expected, &out, rewrites)
                }
                _ if !out.status.success() => self.failures.push(format!(
                    "{where_}: `{command}` failed: {}\n{err}",
                    out.status
                )),
                _ => {}
            }
        }
        if let Some((child, shown)) = server
            && let Err(e) = stop(child)
        {
            self.failures
                .push(format!("{}:{}: the server {e}", page.path, shown.line));
        }
    }

    /// Start a server, waiting for its Unix socket.
    fn serve(&self, command: &str) -> Result<Child, String> {
        let socket = command
            .split_whitespace()
            .skip_while(|w| *w != "--unix")
            .nth(1)
            .map(PathBuf::from)
            .ok_or("a server on the pages listens on a Unix socket (--unix PATH)")?;
        let _ = std::fs::remove_file(&socket);
        let mut child = bash(&format!("exec {command}"), &self.path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start: {e}"))?;
        wait_for(&socket, &mut child)?;
        Ok(child)
    }

    /// Compare what a simulated command printed with what the page shows.
    fn compare(
        &mut self,
        where_: &str,
        shown: &Shown,
        expected: &[String],
        out: &Output,
        rewrites: &mut Vec<Rewrite>,
    ) {
        let printed = if out.status.success() {
            &out.stdout
        } else {
            &out.stderr
        };
        let printed = String::from_utf8_lossy(printed);
        let printed = output_lines(&printed);
        let shown_text = expected.join("\n");
        let expected = output_lines(&shown_text);
        let same = printed.len() == expected.len()
            && printed.iter().zip(&expected).all(|(p, e)| shows(e, p));
        if same {
            return;
        }
        if self.bless {
            let mut new = blessed(&expected, &printed);
            let trailing = shown.output.as_ref().map_or(0, Vec::len) - expected.len();
            new.extend(std::iter::repeat_n(String::new(), trailing));
            let report = format!(
                "blessed {where_}: `{}`\n{}",
                shown.command,
                diff(&expected, &printed).trim_end()
            );
            let _ = writeln!(std::io::stderr(), "{report}");
            rewrites.push((shown.output_at, expected.len() + trailing, new));
        } else {
            self.failures.push(format!(
                "{where_}: `{}` printed something else than the page shows \
                 (- shown, + printed):\n{}",
                shown.command,
                diff(&expected, &printed).trim_end()
            ));
        }
    }
}

/// Stop a server with SIGTERM: it must end cleanly.
fn stop(child: Child) -> Result<(), String> {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .map_err(|e| format!("could not be stopped: kill: {e}"))?;
    if !status.success() {
        return Err(format!("could not be stopped: kill {status}"));
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("could not be waited for: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ended with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn every_command_in_the_docs_works_as_shown() {
    elevator_testkit::needs!("sh", "dd", "fio", "nbdinfo", "nbdcopy", "blkparse", "btt");
    let selection = page::pages();
    assert!(
        !selection.pages.is_empty(),
        "no page's path holds ELEVATOR_DOCS_ONLY={:?}",
        selection.only
    );
    let scratch =
        Scratch(std::env::temp_dir().join(format!("elevator-docs-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0).expect("scratch directory");
    let bin = Path::new(env!("CARGO_BIN_EXE_elevator"))
        .parent()
        .expect("the binary's directory")
        .to_string_lossy()
        .into_owned();
    let mut run = Run {
        path: format!("{bin}:{}", std::env::var("PATH").unwrap_or_default()),
        job: small_job(&scratch.0, "bench-randread.fio"),
        job2: small_job(&scratch.0, "bench-randread-2jobs.fio"),
        bless: std::env::var("ELEVATOR_DOCS_BLESS").is_ok_and(|v| v == "1"),
        used: vec![false; SMALLER.len()],
        ran: 0,
        compared: 0,
        made: Vec::new(),
        failures: Vec::new(),
    };
    for page in &selection.pages {
        run.page(page);
    }
    for file in &run.made {
        let _ = std::fs::remove_file(file);
    }
    if !selection.partial {
        for (i, (from, _)) in SMALLER.iter().enumerate() {
            if !run.used[i] {
                run.failures.push(format!(
                    "no page's command has '{from}' any more: update SMALLER"
                ));
            }
        }
        if run.ran < 10 {
            run.failures.push(format!(
                "only {} commands found on the pages: is the parser right?",
                run.ran
            ));
        }
    }
    println!(
        "{} pages: {} commands run, {} of them compared with their shown output byte for byte",
        selection.pages.len(),
        run.ran,
        run.compared
    );
    assert!(
        run.failures.is_empty(),
        "{} failure(s) in the docs' commands:\n\n{}",
        run.failures.len(),
        run.failures.join("\n\n")
    );
}

/// Whether `command` asks for help (`--help`, `-h`, `elevator help X`):
/// then it prints text, never runs on the real clock, and is compared
/// (`elevator serve --help` is no server).
fn asks_for_help(command: &str) -> bool {
    let mut words = command.split_whitespace();
    let second = words.nth(1);
    second == Some("help")
        || command
            .split_whitespace()
            .any(|w| w == "--help" || w == "-h")
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
fn help_is_compared_even_for_real_clock_commands() {
    assert!(asks_for_help("elevator serve --help"));
    assert!(asks_for_help("elevator bench-vs-fio -h"));
    assert!(asks_for_help("elevator help microbench"));
    assert!(!asks_for_help(
        "elevator serve --export disk=mem:1g --unix /tmp/s"
    ));
    assert!(!asks_for_help(
        "elevator run --name=help examples/default.fio"
    ));
}

#[test]
fn bless_keeps_cut_lines_that_still_match() {
    let shown = ["head", "none 526...", "tail ...", "gone"];
    let printed = ["head", "new", "none 526 2104", "tail 9", "end"];
    assert_eq!(
        blessed(&shown, &printed),
        ["head", "new", "none 526...", "tail ...", "end"]
    );
    let printed = ["head", "none 999", "tail 9"];
    assert_eq!(blessed(&shown, &printed), ["head", "none 999", "tail ..."]);
    assert_eq!(blessed(&[], &["a"]), ["a"]);
    assert!(blessed(&["a"], &[]).is_empty());
}

#[test]
fn the_diff_shows_changes_in_context() {
    let shown: Vec<String> = (0..20).map(|i| format!("line {i}")).collect();
    let mut printed = shown.clone();
    printed[10] = "line ten".to_string();
    let shown: Vec<&str> = shown.iter().map(String::as_str).collect();
    let printed: Vec<&str> = printed.iter().map(String::as_str).collect();
    assert_eq!(
        diff(&shown, &printed),
        "  [7 lines the same]\n  line 7\n  line 8\n  line 9\n- line 10\n+ line ten\n  \
         line 11\n  line 12\n  line 13\n  [6 lines the same]\n"
    );
}
