//! Experiments from the Linux discussions elevator grew from, each measuring
//! and returning typed results, the shapes its source reported checked
//! against them ([`Shape`]), and its table, JSON and plots ([`Outcome`]):
//! [`merging`] (the cost of merge attempts and `nomerges`, LKML 2008),
//! [`deadline_cost`] (deadline's O(N) list against its red-black tree, LKML
//! 2002), [`cfq_idling`] (CFQ's idling on deep seeky queues, LKML 2011) and
//! [`lock_scaling`] (the global `io_request_lock`, LKML 2001,
//! against a lock per queue and blk-mq, with [`lock_model`]'s predictions
//! past this machine's CPUs). Each module's documentation names the seed
//! file (`../shared/seeds/...`) it reproduces.
//!
//! This module owns what every experiment shares: how it runs ([`Opts`],
//! [`Progress`]), what it returns ([`Outcome`], [`Shape`]) and its errors
//! ([`ExperimentError`]). Plots are data ([`figure`]); drawing them and
//! writing reports is the front end's.

pub mod cfq_idling;
pub mod deadline_cost;
pub mod figure;
pub mod lock_model;
pub mod lock_scaling;

pub mod merging;

use serde::Serialize;

use self::figure::Figure;
use crate::microbench::{Case, CaseResult, measure};

/// Why an experiment could not run: what it was doing, and the error of the
/// layer below.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// A step failed: what it was (`measuring none, random, nomerges=0`)
    /// and why.
    #[error("{what}")]
    Step {
        /// The step.
        what: String,
        /// Why it failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The experiment's parameters are out of range (a sentence saying
    /// which and what they take).
    #[error("{0}")]
    Params(String),
    /// An error of the layer below, as it is.
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync>),
}

impl ExperimentError {
    /// Wrap an error of the layer below as it is.
    pub fn from_source(e: impl std::error::Error + Send + Sync + 'static) -> ExperimentError {
        ExperimentError::Source(Box::new(e))
    }
}

/// Says what an experiment was doing when a step failed.
pub(crate) trait StepContext<T> {
    /// The step's error, under what it was doing.
    fn step(self, what: impl FnOnce() -> String) -> Result<T, ExperimentError>;
}

impl<T, E: std::error::Error + Send + Sync + 'static> StepContext<T> for Result<T, E> {
    fn step(self, what: impl FnOnce() -> String) -> Result<T, ExperimentError> {
        self.map_err(|e| ExperimentError::Step {
            what: what(),
            source: Box::new(e),
        })
    }
}

/// One experiment's result.
#[derive(Debug, Serialize)]
pub struct Outcome {
    /// The experiment's command name: `cfq-idling`.
    pub name: &'static str,
    /// The seed it reproduces: `004`.
    pub seed: &'static str,
    /// One line on what it runs.
    pub title: String,
    /// The table, as `elevator experiment NAME` prints it (several lines).
    #[serde(skip)]
    pub table: String,
    /// Every figure measured, as JSON (the experiment's own layout).
    pub data: serde_json::Value,
    /// The shapes the seed reported, checked.
    pub shapes: Vec<Shape>,
    /// Plots.
    #[serde(skip)]
    pub figures: Vec<Figure>,
    /// Remarks a reader needs: what differs from the seed's setup and why a
    /// shape does not hold (a sentence each).
    pub notes: Vec<String>,
}

impl Outcome {
    /// The shapes as text: each claim and whether it holds, then the
    /// seed's figure and elevator's, each on lines of at most [`WIDTH`]
    /// columns.
    pub fn verdicts(&self) -> String {
        let mut s = format!("Shapes seed {} reported:\n", self.seed);
        for sh in &self.shapes {
            s.push_str(&hang(
                "  ",
                &format!("{}: {}", sh.claim, sh.verdict()),
                WIDTH,
            ));
            s.push_str(&hang("      seed:     ", &sh.seed, WIDTH));
            s.push_str(&hang("      elevator: ", &sh.ours, WIDTH));
        }
        let held = self.held();
        s.push_str(&format!("{held} of {} shapes hold.\n", self.shapes.len()));
        s
    }

    /// How many of the shapes hold.
    pub fn held(&self) -> usize {
        self.shapes.iter().filter(|s| s.holds).count()
    }
}

/// A shape the seed reported, with both figures.
#[derive(Clone, Debug, Serialize)]
pub struct Shape {
    /// The claim: "hdd: cfq (2011) > none".
    pub claim: String,
    /// The seed's figure for it: "3.59 vs 2.49 MB/s (1.44x)".
    pub seed: String,
    /// elevator's: "1.77 vs 1.89 MB/s (0.94x)".
    pub ours: String,
    /// Whether elevator's figures have the shape.
    pub holds: bool,
}

impl Shape {
    /// "holds", "DOES NOT HOLD", or "not checked" when elevator's figure
    /// could not be measured (its text starts with "not run": a tool the
    /// experiment runs beside elevator is missing).
    pub fn verdict(&self) -> &'static str {
        if self.holds {
            "holds"
        } else if self.ours.starts_with("not run") {
            "not checked"
        } else {
            "DOES NOT HOLD"
        }
    }
}

/// The widest line of an experiment's text, in columns.
pub const WIDTH: usize = 100;

/// `text` after `prefix`, its words on lines of at most `width` columns,
/// the lines after the first indented as wide as `prefix` (a word longer
/// than a line stands alone); ends with a newline.
pub fn hang(prefix: &str, text: &str, width: usize) -> String {
    let indent = prefix.chars().count();
    let mut out = String::with_capacity(prefix.len() + text.len() + 16);
    out.push_str(prefix);
    let mut line = indent;
    let mut first = true;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if !first && line + 1 + len > width {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', indent));
            line = indent;
        } else if !first {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += len;
        first = false;
    }
    out.push('\n');
    out
}

/// How an experiment runs.
#[derive(Clone, Copy, Debug)]
pub struct Opts {
    /// Small and fast: `experiment all --quick` finishes every experiment in
    /// under two minutes on two cores. Shapes are still checked.
    pub quick: bool,
    /// Seed mixed into every job's random stream.
    pub seed: u64,
}

/// Progress: the experiment says what it is running now, and how far it is
/// (done, total) in its own steps.
pub type Progress<'a> = &'a mut dyn FnMut(&str, usize, usize);

/// `a` vs `b` in `unit`, with their ratio: "3.59 vs 2.49 MB/s (1.44x)".
pub fn versus(a: f64, b: f64, unit: &str) -> String {
    let ratio = if b != 0.0 { a / b } else { f64::NAN };
    format!("{a:.2} vs {b:.2} {unit} ({ratio:.2}x)")
}

/// Measure microbench `cases` in turn, `repeat` runs each, telling
/// `progress` which: `what(case)` gives its progress line and the step an
/// error names.
pub(crate) fn measure_each(
    cases: &[Case],
    repeat: u32,
    progress: Progress,
    what: impl Fn(&Case) -> (String, String),
) -> Result<Vec<CaseResult>, ExperimentError> {
    let total = cases.len();
    let mut out = Vec::with_capacity(total);
    for case in cases {
        let (line, step) = what(case);
        progress(&line, out.len(), total);
        out.push(measure(case, &[], repeat).step(|| step)?);
    }
    progress("done", total, total);
    Ok(out)
}

/// `x` to `places` decimals, as the JSON gives figures.
pub(crate) fn round_to(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hang_wraps_under_its_prefix() {
        let text = hang("  seed: ", "one two three four five", 20);
        assert_eq!(text, "  seed: one two\n        three four\n        five\n");
        assert!(text.lines().all(|l| l.chars().count() <= 20), "{text}");
    }

    #[test]
    fn versus_gives_the_ratio() {
        assert_eq!(versus(3.0, 2.0, "MB/s"), "3.00 vs 2.00 MB/s (1.50x)");
    }
}
