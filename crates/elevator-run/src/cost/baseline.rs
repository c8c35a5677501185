//! The committed baselines (`perf/baselines.txt`): the compiler they were
//! counted with and each scenario's instructions per operation; comparing
//! a new count with them, and the table the guard prints.
//!
//! The file is text, one scenario a line, `#` starting a comment:
//!
//! ```text
//! rustc 1.95.0 (59807616e 2026-04-14)
//! core/none/d128 1234.5
//! ```

use std::fmt::Write as _;
use std::path::Path;

use super::CostError;
use super::callgrind::Counted;

/// What the first line of the file starts with.
const RUSTC_PREFIX: &str = "rustc ";

/// The baselines: the compiler and each scenario's count, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Baselines {
    /// `rustc --version` of the build that was counted.
    pub rustc: String,
    /// Scenario name and instructions per operation.
    pub counts: Vec<(String, f64)>,
}

impl Baselines {
    /// Parse the file's text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Baselines, CostError> {
        let mut out = Baselines::default();
        let syntax = |line: usize, what: String| CostError::BaselinesSyntax {
            path: path.to_path_buf(),
            line,
            what,
        };
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if line.starts_with(RUSTC_PREFIX) {
                out.rustc = line.to_string();
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(name), Some(count), None) = (words.next(), words.next(), words.next()) else {
                return Err(syntax(
                    i + 1,
                    format!("expected NAME COUNT, found {line:?}"),
                ));
            };
            let count: f64 = count
                .parse()
                .ok()
                .filter(|c: &f64| c.is_finite() && *c > 0.0)
                .ok_or_else(|| syntax(i + 1, format!("{count:?} is not a positive count")))?;
            if out.get(name).is_some() {
                return Err(syntax(i + 1, format!("{name} is there twice")));
            }
            out.counts.push((name.to_string(), count));
        }
        if out.rustc.is_empty() {
            return Err(syntax(
                0,
                "no line naming the compiler (rustc ...)".to_string(),
            ));
        }
        Ok(out)
    }

    /// Read the file at `path`.
    pub fn read(path: &Path) -> Result<Baselines, CostError> {
        let text = std::fs::read_to_string(path).map_err(|source| CostError::BaselinesIo {
            path: path.to_path_buf(),
            source,
        })?;
        Baselines::parse(&text, path)
    }

    /// The file's text.
    pub fn render(&self) -> String {
        let mut s = String::from(
            "# Instructions per operation of the guarded paths, counted under valgrind's\n\
             # callgrind by scripts/perf-guard, which fails when one grows by more than 3 %.\n\
             # A change that makes a path cheaper, or costlier on purpose, regenerates this\n\
             # file in the same commit (scripts/perf-guard --update) and says why.\n\
             # Counts depend on the compiler: the first line names the one they were made with.\n",
        );
        let _ = writeln!(s, "{}", self.rustc);
        let width = self.counts.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        for (name, count) in &self.counts {
            let _ = writeln!(s, "{name:<width$} {count:.1}");
        }
        s
    }

    /// Write the file at `path`.
    pub fn write(&self, path: &Path) -> Result<(), CostError> {
        std::fs::write(path, self.render()).map_err(|source| CostError::BaselinesIo {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The count of `name`.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.counts.iter().find(|(n, _)| n == name).map(|(_, c)| *c)
    }

    /// Set the count of `name` (kept in place, or added at the end), to one
    /// decimal as the file keeps it.
    pub fn set(&mut self, name: &str, count: f64) {
        let count = (count * 10.0).round() / 10.0;
        match self.counts.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = count,
            None => self.counts.push((name.to_string(), count)),
        }
    }

    /// Refuse to compare counts made by another compiler than `rustc`.
    pub fn check_compiler(&self, rustc: &str) -> Result<(), CostError> {
        if self.rustc.trim() == rustc.trim() {
            Ok(())
        } else {
            Err(CostError::Compiler {
                recorded: self.rustc.clone(),
                now: rustc.trim().to_string(),
            })
        }
    }
}

/// One scenario's line of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The scenario.
    pub name: String,
    /// What one operation is.
    pub unit: &'static str,
    /// Its baseline, if it has one.
    pub baseline: Option<f64>,
    /// Its count now.
    pub now: f64,
    /// Whether its growth fails the guard.
    pub gated: bool,
}

impl Row {
    /// The change from the baseline, percent.
    pub fn change_pct(&self) -> Option<f64> {
        self.baseline.map(|b| 100.0 * (self.now - b) / b)
    }
}

/// Counts compared with the baselines.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Every scenario counted.
    pub rows: Vec<Row>,
    /// The growth that fails the guard, percent.
    pub threshold_pct: f64,
}

impl Comparison {
    /// Compare `counted` with `baselines`.
    pub fn new(counted: &[Counted], baselines: &Baselines, threshold_pct: f64) -> Comparison {
        Comparison {
            rows: counted
                .iter()
                .map(|c| Row {
                    name: c.name.clone(),
                    unit: c.unit,
                    baseline: baselines.get(&c.name),
                    now: c.per_op(),
                    gated: c.gated,
                })
                .collect(),
            threshold_pct,
        }
    }

    /// The rows that fail: gated ones grown by more than the threshold, or
    /// with no baseline.
    pub fn failures(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.gated && r.change_pct().is_none_or(|c| c > self.threshold_pct))
            .collect()
    }

    /// The table: scenario, baseline, now, change, and a verdict per row.
    pub fn table(&self) -> String {
        let w = self
            .rows
            .iter()
            .map(|r| r.name.len())
            .max()
            .unwrap_or(0)
            .max(8);
        let mut s = format!(
            "{:<w$}  {:>13}  {:>13}  {:>8}  {}\n",
            "scenario", "baseline", "now", "change", "instructions per"
        );
        for r in &self.rows {
            let (base, change, verdict) = match (r.baseline, r.change_pct()) {
                (Some(b), Some(c)) => (
                    format!("{b:.1}"),
                    format!("{c:+.2}%"),
                    if !r.gated {
                        "  (not gated: varies between runs)"
                    } else if c > self.threshold_pct {
                        "  REGRESSION"
                    } else {
                        ""
                    },
                ),
                _ => ("-".to_string(), "new".to_string(), "  NO BASELINE"),
            };
            let _ = writeln!(
                s,
                "{:<w$}  {base:>13}  {:>13.1}  {change:>8}  {}{verdict}",
                r.name, r.now, r.unit
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(name: &str, instructions: u64) -> Counted {
        Counted {
            name: name.to_string(),
            unit: "bio",
            ops: 10,
            instructions,
            gated: name != "noisy",
        }
    }

    #[test]
    fn the_file_round_trips_and_names_its_compiler() {
        let mut b = Baselines {
            rustc: "rustc 1.95.0 (59807616e 2026-04-14)".to_string(),
            counts: Vec::new(),
        };
        b.set("core/none/d128", 1234.56);
        b.set("sim/x", 99.0);
        let back = Baselines::parse(&b.render(), Path::new("b.txt")).expect("parses");
        assert_eq!(back.get("core/none/d128"), Some(1234.6));
        assert_eq!(back, b);
        assert!(
            back.check_compiler("rustc 1.95.0 (59807616e 2026-04-14)\n")
                .is_ok()
        );
        assert!(matches!(
            back.check_compiler("rustc 1.96.0 (abc 2026-05-28)"),
            Err(CostError::Compiler { .. })
        ));
    }

    #[test]
    fn bad_lines_are_refused_with_their_number() {
        let err = Baselines::parse("rustc 1\na 1\nb x\n", Path::new("b.txt"));
        assert!(
            matches!(err, Err(CostError::BaselinesSyntax { line: 3, .. })),
            "{err:?}"
        );
        assert!(Baselines::parse("a 1\n", Path::new("b.txt")).is_err());
        assert!(Baselines::parse("rustc 1\na 1\na 2\n", Path::new("b.txt")).is_err());
    }

    #[test]
    fn growth_past_the_threshold_and_missing_baselines_fail() {
        let mut b = Baselines {
            rustc: "rustc 1".to_string(),
            counts: Vec::new(),
        };
        b.set("same", 100.0);
        b.set("slower", 100.0);
        b.set("faster", 100.0);
        b.set("noisy", 100.0);
        let c = Comparison::new(
            &[
                counted("same", 1020),
                counted("slower", 1050),
                counted("faster", 500),
                counted("new", 10),
                counted("noisy", 2000),
            ],
            &b,
            3.0,
        );
        let failed: Vec<&str> = c.failures().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(failed, ["slower", "new"]);
        let table = c.table();
        assert!(table.contains("+5.00%  bio  REGRESSION"), "{table}");
        assert!(table.contains("-50.00%"), "{table}");
        assert!(table.contains("NO BASELINE"), "{table}");
    }

    #[test]
    fn callgrind_totals_are_read() {
        let text = "version: 1\nevents: Ir\nfn=main\n0 5\nsummary: 1234\ntotals: 1234\n";
        assert_eq!(super::super::callgrind::totals(text), Some(1234));
        assert_eq!(super::super::callgrind::totals("events: Ir\n"), None);
    }
}
