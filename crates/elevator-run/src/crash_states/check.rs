//! Running one state's checker: `sh -c CMD` in its own process group,
//! with the state's image and marks in its environment, its output (stdout
//! and stderr, through one pipe) kept as a bounded tail.
//!
//! `--timeout` bounds the whole check, output included: at the deadline,
//! or when elevator is interrupted, the checker's whole process group is
//! killed and nothing more is read. When the checker exits, what is left
//! of its group (anything it started in the background) is killed too, and
//! only what the pipe already holds is read: a process that left the group
//! and keeps the pipe open is not waited for.

use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use thiserror::Error;

use super::Verdict;

/// The bytes of a checker's output kept: its last ones.
pub const OUTPUT_KEPT: usize = 64 << 10;

/// Lines of a failing checker's output kept for the report.
const TAIL_LINES: usize = 10;

/// The longest line of a checker's output shown in the report (a longer
/// one is cut, its end kept).
const TAIL_LINE_CHARS: usize = 400;

/// The most output read once the checker has exited: more than a pipe
/// holds, so only a process that left its group and goes on writing
/// reaches it.
const AFTER_EXIT: u64 = 4 << 20;

/// How often a check looks at its checker, its deadline and the stop flag
/// while the checker is quiet.
const TICK: Duration = Duration::from_millis(10);

/// Why a checker could not be run or waited for (the state fails, with
/// this as its reason).
#[derive(Debug, Error)]
enum CheckError {
    /// Starting it or waiting for it failed.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// Looking at whether it exited failed.
    #[error("waiting for the checker (pid {pid})")]
    Wait {
        /// The checker's process.
        pid: u32,
        /// Why.
        #[source]
        source: rustix::io::Errno,
    },
}

/// `result`'s error, said to be from doing `what`.
fn doing<T>(result: std::io::Result<T>, what: &'static str) -> Result<T, CheckError> {
    result.map_err(|source| CheckError::Io { what, source })
}

/// `e` and its sources, each after a colon.
fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// A finished check.
pub(super) struct Done {
    /// The state's place in the run.
    pub(super) index: usize,
    /// How it ended.
    pub(super) verdict: Verdict,
    /// The last lines of a failing checker's output.
    pub(super) tail: Vec<String>,
    /// Bytes of the checker's output dropped before the tail kept in
    /// ID.out.
    pub(super) output_dropped: u64,
}

/// One check to run.
pub(super) struct CheckJob {
    pub(super) index: usize,
    pub(super) command: String,
    pub(super) id: String,
    pub(super) image: PathBuf,
    pub(super) marks_file: PathBuf,
    pub(super) output: PathBuf,
    pub(super) timeout: Duration,
    /// Set by SIGINT or SIGTERM.
    pub(super) stop: Arc<AtomicBool>,
}

/// The last [`OUTPUT_KEPT`] bytes of a checker's output, and how many
/// came before them.
#[derive(Debug, Default)]
pub(super) struct OutputTail {
    kept: VecDeque<u8>,
    dropped: u64,
}

impl OutputTail {
    /// Add `data`, dropping the oldest bytes past [`OUTPUT_KEPT`].
    fn push(&mut self, data: &[u8]) {
        let data = if data.len() > OUTPUT_KEPT {
            let (old, new) = data.split_at(data.len() - OUTPUT_KEPT);
            self.dropped += old.len() as u64;
            new
        } else {
            data
        };
        let over = (self.kept.len() + data.len()).saturating_sub(OUTPUT_KEPT);
        self.kept.drain(..over);
        self.dropped += over as u64;
        self.kept.extend(data);
    }

    /// Bytes of output dropped (the first ones).
    pub(super) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Bytes of output seen.
    fn total(&self) -> u64 {
        self.dropped + self.kept.len() as u64
    }

    /// What goes in ID.out: a line saying what was dropped, if anything,
    /// then the kept bytes.
    fn file_text(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.kept.len() + 120);
        if self.dropped > 0 {
            out.extend_from_slice(
                format!(
                    "[elevator: the checker's first {} bytes of output were dropped; its last {} follow]\n",
                    self.dropped,
                    self.kept.len()
                )
                .as_bytes(),
            );
        }
        out.extend(self.kept.iter());
        out
    }

    /// The last `n` lines, each cut to [`TAIL_LINE_CHARS`].
    fn last_lines(&self, n: usize) -> Vec<String> {
        let (a, b) = self.kept.as_slices();
        let bytes = [a, b].concat();
        let text = String::from_utf8_lossy(&bytes);
        let mut lines: Vec<String> = text
            .lines()
            .rev()
            .take(n)
            .map(|l| match l.char_indices().rev().nth(TAIL_LINE_CHARS) {
                Some((i, c)) => format!("...{}", &l[i + c.len_utf8()..]),
                None => l.to_string(),
            })
            .collect();
        lines.reverse();
        lines
    }
}

impl CheckJob {
    /// Run it to its end or its timeout.
    pub(super) fn run(self) -> Done {
        let mut output = OutputTail::default();
        let verdict = match self.spawn_and_wait(&mut output) {
            Ok(v) => v,
            Err(e) => Verdict::Fail(with_sources(&e)),
        };
        let verdict = match std::fs::write(&self.output, output.file_text()) {
            Err(e) if verdict == Verdict::Pass => Verdict::Fail(format!(
                "writing its output to {}: {e}",
                self.output.display()
            )),
            _ => verdict,
        };
        let tail = match verdict {
            Verdict::Pass => Vec::new(),
            _ => output.last_lines(TAIL_LINES),
        };
        Done {
            index: self.index,
            verdict,
            tail,
            output_dropped: output.dropped(),
        }
    }

    fn spawn_and_wait(&self, output: &mut OutputTail) -> Result<Verdict, CheckError> {
        let (mut pipe, writer) = doing(std::io::pipe(), "creating the checker's pipe")?;
        let mut child = {
            // The command (holding the pipe's write ends) is dropped
            // here: the checker's processes hold the only ones.
            let err = doing(writer.try_clone(), "creating the checker's pipe")?;
            let mut command = Command::new("sh");
            command
                .arg("-c")
                .arg(&self.command)
                .env("ELEVATOR_CRASH_IMAGE", &self.image)
                .env("ELEVATOR_CRASH_STATE", &self.id)
                .env("ELEVATOR_CRASH_MARKS", &self.marks_file)
                .stdin(Stdio::null())
                .stdout(writer)
                .stderr(err)
                .process_group(0);
            doing(command.spawn(), "starting sh")?
        };
        let group = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
        let deadline = Instant::now() + self.timeout;
        let mut buf = vec![0u8; 64 << 10];
        let mut open = true;
        loop {
            if exited(&child, group)? {
                // Whatever it left running goes with it (the group still
                // exists: the checker is not reaped yet).
                kill_group(group);
                let status = doing(child.wait(), "waiting for the checker")?;
                // What the pipe holds now, and no more (a process that
                // left the group may go on writing: [`AFTER_EXIT`] bounds
                // what is taken from it).
                let mut taken = 0;
                while open
                    && taken < AFTER_EXIT
                    && Instant::now() < deadline
                    && ready(&pipe, Duration::ZERO)
                {
                    let before = output.total();
                    open = read_some(&mut pipe, &mut buf, output);
                    taken += output.total() - before;
                }
                return Ok(if status.success() {
                    Verdict::Pass
                } else {
                    Verdict::Fail(describe_status(status))
                });
            }
            let stopped = self.stop.load(Ordering::Relaxed);
            if stopped || Instant::now() >= deadline {
                kill_group(group);
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Verdict::Fail(if stopped {
                    "interrupted; its process group was killed".into()
                } else {
                    format!(
                        "timed out after {} s; its process group was killed",
                        self.timeout.as_secs_f64()
                    )
                }));
            }
            let wait = TICK.min(deadline.saturating_duration_since(Instant::now()));
            if open && ready(&pipe, wait) {
                open = read_some(&mut pipe, &mut buf, output);
            } else if !open {
                std::thread::sleep(wait);
            }
        }
    }
}

/// Whether the checker has exited (it is not reaped: its process group
/// cannot be reused until it is).
fn exited(child: &Child, pid: Option<Pid>) -> Result<bool, CheckError> {
    let Some(pid) = pid else {
        return Ok(false);
    };
    let status = rustix::process::waitid(
        WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
    )
    .map_err(|source| CheckError::Wait {
        pid: child.id(),
        source,
    })?;
    Ok(status.is_some())
}

/// Kill process group `group` (ignoring one that is gone already).
fn kill_group(group: Option<Pid>) {
    if let Some(pid) = group {
        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    }
}

/// Whether the pipe has bytes (or its end) within `wait`.
fn ready(pipe: &std::io::PipeReader, wait: Duration) -> bool {
    let mut fds = [PollFd::new(pipe, PollFlags::IN)];
    let wait = Timespec::try_from(wait).unwrap_or_default();
    rustix::event::poll(&mut fds, Some(&wait)).is_ok_and(|n| n > 0)
}

/// Read what the pipe has into `output`; false at its end (or an error).
fn read_some(pipe: &mut std::io::PipeReader, buf: &mut [u8], output: &mut OutputTail) -> bool {
    match pipe.read(buf) {
        Ok(0) => false,
        Ok(n) => {
            output.push(&buf[..n]);
            true
        }
        Err(e) => e.kind() == std::io::ErrorKind::Interrupted,
    }
}

fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes_and_counts_the_rest() {
        let mut t = OutputTail::default();
        t.push(b"first\n");
        assert_eq!(t.dropped(), 0);
        assert_eq!(t.file_text(), b"first\n");
        let big = vec![b'y'; OUTPUT_KEPT + 10];
        t.push(&big);
        assert_eq!(t.kept.len(), OUTPUT_KEPT);
        assert_eq!(t.dropped(), 6 + 10);
        t.push(b"\nlast\n");
        assert_eq!(t.dropped(), 6 + 10 + 6);
        assert_eq!(t.last_lines(1), vec!["last".to_string()]);
        let text = t.file_text();
        assert!(
            text.starts_with(b"[elevator: the checker's first 22 bytes of output were dropped"),
            "{}",
            String::from_utf8_lossy(&text[..100])
        );
        let long = &t.last_lines(2)[0];
        assert!(
            long.starts_with("...y") && long.chars().count() == TAIL_LINE_CHARS + 3,
            "{long}"
        );
    }
}
