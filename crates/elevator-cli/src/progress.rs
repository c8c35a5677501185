//! What a run says on stderr while it goes: a progress bar (after a
//! second, when stderr is a terminal) and the library's notes, each line
//! after `elevator: ` ([`Stderr`], the command's [`Listener`]).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use elevator_run::{Listener, Progress};

/// A progress bar and notes on stderr.
pub struct Stderr {
    enabled: bool,
    real: bool,
    started: Instant,
    /// The width of the line drawn last, to clear it (0: none drawn).
    drawn: usize,
    label: String,
}

impl Stderr {
    /// Notes, and a bar labelled `label` drawn if `bar` and stderr is a
    /// terminal; `real`: the run is on the real clock.
    pub fn new(bar: bool, real: bool, label: String) -> Stderr {
        Stderr {
            enabled: bar && std::io::stderr().is_terminal(),
            real,
            started: Instant::now(),
            drawn: 0,
            label,
        }
    }

    /// Notes only.
    pub fn notes() -> Stderr {
        Stderr::new(false, false, String::new())
    }
}

impl Listener for Stderr {
    fn progress(&mut self, p: Progress) {
        if !self.enabled || self.started.elapsed() < Duration::from_secs(1) {
            return;
        }
        let simulated = if self.real { "" } else { " simulated" };
        match p {
            Progress::Jobs(p) => {
                let width = 30;
                let filled = (p.fraction * width as f64).round() as usize;
                eprint!(
                    "\r{} [{}{}] {:3.0}%  {:.1} s{simulated}, {} I/Os ",
                    self.label,
                    "=".repeat(filled.min(width)),
                    " ".repeat(width - filled.min(width)),
                    p.fraction * 100.0,
                    p.now as f64 / 1e9,
                    p.ios
                );
                self.drawn = 90;
            }
            Progress::Replay(p) if self.real => {
                eprint!("\rreplay: {} records, {} bios ", p.records, p.bios);
                self.drawn = 72;
            }
            Progress::Replay(p) => {
                eprint!(
                    "\rreplay: {} records, {} bios, {:.3} s simulated ",
                    p.records,
                    p.bios,
                    p.now as f64 / 1e9
                );
                self.drawn = 72;
            }
        }
        let _ = std::io::stderr().flush();
    }

    fn note(&mut self, line: &str) {
        eprintln!("elevator: {line}");
    }

    fn finished(&mut self) {
        if self.drawn > 0 {
            eprint!("\r{}\r", " ".repeat(self.drawn));
            let _ = std::io::stderr().flush();
            self.drawn = 0;
        }
    }
}
