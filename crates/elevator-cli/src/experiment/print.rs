//! An experiment's [`Outcome`] as `elevator experiment NAME` prints it.

use elevator_run::experiment::{Outcome, WIDTH, hang};

use crate::advise_report::wrap;

/// Print as `elevator experiment NAME` does: JSON (name, seed, title, data,
/// shapes, notes), or the table, the shapes with both figures and their
/// verdicts, and the notes.
pub fn print(o: &Outcome, json: bool, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    if json {
        serde_json::to_writer_pretty(&mut *out, o)?;
        return writeln!(out);
    }
    let table = fit_heading(&o.table);
    write!(out, "{table}")?;
    if !table.ends_with("\n\n") {
        writeln!(out)?;
    }
    write!(out, "{}", o.verdicts())?;
    for n in &o.notes {
        writeln!(out, "\n{}", wrap(&format!("Note: {n}"), 78))?;
    }
    Ok(())
}

/// `table` with the lines of its heading (the prose before its first blank
/// line) that are wider than [`WIDTH`] wrapped; the rest as it is.
fn fit_heading(table: &str) -> String {
    let Some((heading, rest)) = table.split_once("\n\n") else {
        return table.to_string();
    };
    let mut out = String::with_capacity(table.len() + 8);
    for line in heading.lines() {
        if line.chars().count() > WIDTH {
            out.push_str(&hang("", line, WIDTH));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push('\n');
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_heading_line_is_wrapped_and_the_table_kept() {
        let wide = "word ".repeat(30);
        let table = format!("{wide}\nshort\n\n{}\n", "x".repeat(120));
        let fitted = fit_heading(&table);
        let (heading, rest) = fitted.split_once("\n\n").expect("a blank line");
        assert!(heading.lines().all(|l| l.chars().count() <= WIDTH));
        assert_eq!(heading.lines().last(), Some("short"));
        assert_eq!(rest, format!("{}\n", "x".repeat(120)));
    }
}
