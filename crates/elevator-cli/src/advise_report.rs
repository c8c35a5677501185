//! The report of `elevator advise`: the runs as ranked
//! ([`elevator_run::advise::ranking`]), a table, the goal's definition and
//! the explanation of the choice, as text or JSON.

use std::io::Write;

use anyhow::Result;
use clap::ValueEnum;
use elevator_fio::report::text::iec;

use elevator_run::advise::ranking::{Advice, Goal};

/// What `advise` ranks by ([`Goal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GoalArg {
    /// Total bytes per second, highest first.
    Throughput,
    /// The worst job's p99 completion latency (reads if the workload reads,
    /// else writes), lowest first.
    P99,
    /// Jain's fairness index, highest first: over each job clone's
    /// throughput relative to its job's throughput alone on the device;
    /// over each submitter's mean completion latency for a trace.
    Fairness,
}

impl From<GoalArg> for Goal {
    fn from(g: GoalArg) -> Goal {
        match g {
            GoalArg::Throughput => Goal::Throughput,
            GoalArg::P99 => Goal::P99,
            GoalArg::Fairness => Goal::Fairness,
        }
    }
}

/// The width text paragraphs are wrapped to.
const WIDTH: usize = 78;

/// `text` with its words on lines of at most `width` characters (a longer
/// word stands alone); a `%` stays on the line of the figure before it
/// ("2 %").
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / width + 1);
    let mut words: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match words.last_mut() {
            Some(last) if word.starts_with('%') => {
                last.push(' ');
                last.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
    }
    let mut line = 0;
    for word in &words {
        let len = word.chars().count();
        if line > 0 && line + 1 + len > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += len;
    }
    out
}

fn ms_cell(ns: Option<u64>) -> String {
    ns.map_or("-".to_string(), |ns| format!("{:.2}", ns as f64 / 1e6))
}

/// Print the ranking and the explanation as text.
pub fn print_text(a: &Advice, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "advise: {} ({}) on {}, goal {}\n",
        a.workload,
        a.kind,
        a.device,
        a.goal.name()
    )?;
    writeln!(
        out,
        "{:>4}  {:<16} {:>8} {:>13} {:>10} {:>10} {:>9}",
        "rank", "scheduler", "nomerges", "throughput", "p99 rd ms", "p99 wr ms", "fairness"
    )?;
    for (m, rank) in a.ranked.iter().zip(a.ranks()) {
        writeln!(
            out,
            "{:>4}  {:<16} {:>8} {:>11}/s {:>10} {:>10} {:>9.3}",
            rank,
            m.scheduler,
            m.nomerges,
            iec(m.throughput),
            ms_cell(m.read_p99),
            ms_cell(m.write_p99),
            m.fairness
        )?;
    }
    writeln!(out, "\n{}", wrap(a.goal.definition(a.trace()), WIDTH))?;
    writeln!(out, "\n{}", wrap(&a.explanation(), WIDTH))?;
    Ok(())
}

/// Print every run's figures and the ranking as JSON
/// ([`elevator_run::json::advice_json`]).
pub fn print_json(a: &Advice, out: &mut dyn Write) -> Result<()> {
    let value = elevator_run::json::advice_json(a);
    serde_json::to_writer_pretty(&mut *out, &value).map_err(std::io::Error::from)?;
    writeln!(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percent_sign_stays_with_its_figure() {
        assert_eq!(wrap("are within 2 % of it", 12), "are within\n2 % of it");
        assert_eq!(wrap("one two three", 7), "one two\nthree");
    }
}
