//! An experiment's [`Outcome`] as `elevator experiment NAME` prints it.

use elevator_run::experiment::Outcome;

use crate::advise_report::wrap;

/// Print as `elevator experiment NAME` does: JSON (name, seed, title, data,
/// shapes, notes), or the table, the shapes with both figures and their
/// verdicts, and the notes.
pub fn print(o: &Outcome, json: bool, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    if json {
        serde_json::to_writer_pretty(&mut *out, o)?;
        return writeln!(out);
    }
    write!(out, "{}", o.table)?;
    if !o.table.ends_with("\n\n") {
        writeln!(out)?;
    }
    write!(out, "{}", o.verdicts())?;
    for n in &o.notes {
        writeln!(out, "\n{}", wrap(&format!("Note: {n}"), 78))?;
    }
    Ok(())
}
