//! Running one state's checker: `sh -c CMD` in its own process group,
//! with the state's image and marks in its environment, killed (the whole
//! group) at its timeout or when elevator is interrupted.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::{Done, TAIL_LINES, Verdict};

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

impl CheckJob {
    /// Run it to its end or its timeout.
    pub(super) fn run(self) -> Done {
        let verdict = match self.spawn_and_wait() {
            Ok(v) => v,
            Err(e) => Verdict::Fail(format!("{e:#}")),
        };
        let tail = match verdict {
            Verdict::Pass => Vec::new(),
            _ => last_lines(&self.output, TAIL_LINES),
        };
        Done {
            index: self.index,
            verdict,
            tail,
        }
    }

    fn spawn_and_wait(&self) -> Result<Verdict> {
        let out = File::create(&self.output)
            .with_context(|| format!("creating {}", self.output.display()))?;
        let err = out.try_clone()?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .env("ELEVATOR_CRASH_IMAGE", &self.image)
            .env("ELEVATOR_CRASH_STATE", &self.id)
            .env("ELEVATOR_CRASH_MARKS", &self.marks_file)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .context("starting sh")?;
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().context("waiting for the checker")? {
                return Ok(if status.success() {
                    Verdict::Pass
                } else {
                    Verdict::Fail(describe_status(status))
                });
            }
            let stopped = self.stop.load(Ordering::Relaxed);
            if stopped || started.elapsed() >= self.timeout {
                let pid = i32::try_from(child.id())
                    .ok()
                    .and_then(rustix::process::Pid::from_raw);
                if let Some(pid) = pid {
                    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                if stopped {
                    return Ok(Verdict::Fail(
                        "interrupted; its process group was killed".into(),
                    ));
                }
                return Ok(Verdict::Fail(format!(
                    "timed out after {} s; its process group was killed",
                    self.timeout.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
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

/// The last `n` lines of a file (none if it cannot be read).
fn last_lines(path: &Path, n: usize) -> Vec<String> {
    let Ok(file) = File::open(path) else {
        return Vec::new();
    };
    let mut lines = std::collections::VecDeque::with_capacity(n + 1);
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        lines.push_back(String::from_utf8_lossy(&line).into_owned());
        if lines.len() > n {
            lines.pop_front();
        }
    }
    lines.into()
}
