//! What an experiment produces: its table as the terminal shows it, its
//! figures as JSON, the shapes its seed reported with elevator's figures
//! beside the seed's and whether each holds, and the data of its plots.

use serde::Serialize;

use crate::advise_report::wrap;
use crate::report::figure::Figure;

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

impl Outcome {}

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

impl Outcome {
    /// Print as `elevator experiment NAME` does: JSON (name, seed, title,
    /// data, shapes, notes), or the table, the shapes with both figures
    /// and their verdicts, and the notes.
    pub fn print(&self, json: bool, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        if json {
            serde_json::to_writer_pretty(&mut *out, self)?;
            return writeln!(out);
        }
        write!(out, "{}", self.table)?;
        if !self.table.ends_with("\n\n") {
            writeln!(out)?;
        }
        write!(out, "{}", self.verdicts())?;
        for n in &self.notes {
            writeln!(out, "\n{}", wrap(&format!("Note: {n}"), 78))?;
        }
        Ok(())
    }

    /// The shapes as text: each claim, the seed's figure, elevator's, and
    /// whether it holds.
    pub fn verdicts(&self) -> String {
        let mut s = format!("Shapes seed {} reported:\n", self.seed);
        let w = self.shapes.iter().map(|x| x.claim.len()).max().unwrap_or(0);
        let ws = self.shapes.iter().map(|x| x.seed.len()).max().unwrap_or(0);
        let wo = self.shapes.iter().map(|x| x.ours.len()).max().unwrap_or(0);
        for sh in &self.shapes {
            s.push_str(&format!(
                "  {:<w$}  seed: {:<ws$}  elevator: {:<wo$}  {}\n",
                sh.claim,
                sh.seed,
                sh.ours,
                sh.verdict()
            ));
        }
        let held = self.shapes.iter().filter(|s| s.holds).count();
        s.push_str(&format!("{held} of {} shapes hold.\n", self.shapes.len()));
        s
    }
}

/// `a` vs `b` in `unit`, with their ratio: "3.59 vs 2.49 MB/s (1.44x)".
pub fn versus(a: f64, b: f64, unit: &str) -> String {
    let ratio = if b != 0.0 { a / b } else { f64::NAN };
    format!("{a:.2} vs {b:.2} {unit} ({ratio:.2}x)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versus_gives_the_ratio() {
        assert_eq!(versus(3.0, 2.0, "MB/s"), "3.00 vs 2.00 MB/s (1.50x)");
    }
}
