//! Instructions per bio of the experiments' core cells (the same
//! microbench cases they time), counted under callgrind: a measure a noisy
//! machine cannot move, for the verdicts of the CPU-cost shapes
//! (`merging`, `deadline-cost`). Counting needs valgrind and the `elevator`
//! binary; without them the experiments' verdicts stay timed, and say so.

use std::path::{Path, PathBuf};

use super::CostError;
use super::callgrind::count_all;
use super::scenario::{Counting, Scenario, cell_ios, cell_name};
use crate::microbench::Pattern;

/// Where the experiments' cells are counted: the `elevator` binary, which
/// runs each under callgrind (`elevator cost-scenario run cell/...`).
#[derive(Clone, Debug)]
pub struct CellCounter {
    program: PathBuf,
}

impl CellCounter {
    /// A counter running `program` (the `elevator` binary) under valgrind,
    /// if valgrind is installed; `None` (the verdicts stay timed) if not.
    pub fn if_valgrind(program: &Path) -> Option<CellCounter> {
        let found = std::process::Command::new("valgrind")
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        found.then(|| CellCounter {
            program: program.to_path_buf(),
        })
    }

    /// Count `cells` (scheduler, pattern, `nomerges`, depth), two at a
    /// time; `progress` hears each as it is done.
    pub fn count(
        &self,
        cells: &[(&str, Pattern, u8, u32)],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<CellCounts, CostError> {
        let scenarios: Vec<Scenario> = cells
            .iter()
            .map(|&(s, p, nm, d)| Scenario {
                name: cell_name(s, p, nm, d),
                unit: "bio",
                ops: cell_ios(s, d),
                counting: Counting::Region,
                gated: true,
            })
            .collect();
        progress(0, scenarios.len());
        let results = count_all(&self.program, &scenarios, 2, &|_, _| {});
        progress(scenarios.len(), scenarios.len());
        let mut counts = Vec::with_capacity(results.len());
        for r in results {
            let c = r?;
            counts.push((c.name.clone(), c.per_op()));
        }
        Ok(CellCounts { counts })
    }
}

/// Instructions per bio of counted cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellCounts {
    counts: Vec<(String, f64)>,
}

impl CellCounts {
    /// Instructions per bio of a cell (NaN if it was not counted).
    pub fn get(&self, scheduler: &str, pattern: Pattern, nomerges: u8, depth: u32) -> f64 {
        let name = cell_name(scheduler, pattern, nomerges, depth);
        self.counts
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(f64::NAN, |(_, c)| *c)
    }

    /// Every cell counted: name and instructions per bio.
    pub fn all(&self) -> &[(String, f64)] {
        &self.counts
    }
}

/// What the CPU-cost verdicts of an experiment rest on: instructions
/// counted under callgrind, or the timed figures (and why).
#[derive(Clone, Debug, PartialEq)]
pub enum CellMeasure {
    /// The cells the verdicts need, counted.
    Instructions(CellCounts),
    /// Not counted: the verdicts use the timed figures; why.
    Timed(String),
}

impl CellMeasure {
    /// Count `cells` with `counter`, if there is one: a failure to count
    /// leaves the verdicts timed, saying why.
    pub fn of(
        counter: Option<&CellCounter>,
        cells: &[(&str, Pattern, u8, u32)],
        progress: &mut dyn FnMut(usize, usize),
    ) -> CellMeasure {
        match counter {
            None => CellMeasure::Timed(
                "as asked (--timed), or because valgrind is not installed here (Debian: \
                 apt-get install valgrind)"
                    .to_string(),
            ),
            Some(c) => match c.count(cells, progress) {
                Ok(counts) => CellMeasure::Instructions(counts),
                Err(e) => CellMeasure::Timed(format!("counting instructions failed: {e}")),
            },
        }
    }

    /// The counts, if there are any.
    pub fn counts(&self) -> Option<&CellCounts> {
        match self {
            CellMeasure::Instructions(c) => Some(c),
            CellMeasure::Timed(_) => None,
        }
    }

    /// A sentence on what the verdicts rest on, for the notes.
    pub fn note(&self) -> String {
        match self {
            CellMeasure::Instructions(_) => "The CPU-cost verdicts use instructions per bio, \
                 counted under valgrind's callgrind on the same cases (a figure a busy machine \
                 does not move); the times are given beside them."
                .to_string(),
            CellMeasure::Timed(why) => format!(
                "The CPU-cost verdicts are timed (thread CPU time, which a busy machine moves \
                 by about 5%): instructions were not counted, {why}."
            ),
        }
    }
}
