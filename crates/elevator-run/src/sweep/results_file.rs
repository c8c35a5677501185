//! The sweep's CSV ([`ResultsFile`]): a header of the spec's columns, then
//! each configuration's rows, appended and written out as it completes, so
//! that a sweep stopped anywhere resumes where it stopped: opening the file
//! again checks its header and every row's grid values against the spec,
//! drops what a kill left half written, and knows which configurations are
//! done. Once every one is, [`ResultsFile::finish`] puts the rows in
//! configuration order: the file is then the same however the sweep ran.
//!
//! CSV as RFC 4180 writes it: a field with a comma, a quote, a line break
//! or a space at either end is quoted, its quotes doubled.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::rows::Cell;
use super::spec::Spec;
use crate::error::RunError;

/// A sweep's CSV file, open for appending rows.
#[derive(Debug)]
pub struct ResultsFile {
    path: PathBuf,
    file: File,
    done: BTreeSet<usize>,
}

impl ResultsFile {
    /// Create the CSV at `path` for `spec`, or resume it: its header must
    /// be the spec's columns and each row's grid values the spec's for its
    /// configuration; a last line without its end (and the rest of its
    /// configuration's rows) is dropped.
    pub fn open(path: &Path, spec: &Spec) -> Result<ResultsFile, RunError> {
        let name = path.display().to_string();
        let header = csv_line(
            &spec
                .columns()
                .into_iter()
                .map(Cell::Text)
                .collect::<Vec<_>>(),
        );
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(RunError::io(format!("opening {name}")))?;
        // One sweep writes a file at a time (the lock goes with the file).
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
            |e| {
                RunError::Usage(format!(
                    "{name}: another sweep is writing it ({e}); wait for it, or give another --out"
                ))
            },
        )?;
        let existing = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(RunError::io(format!("reading {name}"))(e)),
        };
        let mut done = BTreeSet::new();
        let keep = if existing.is_empty() {
            0
        } else {
            let text = String::from_utf8(existing).map_err(|e| {
                RunError::Usage(format!(
                    "{name}: not a sweep's CSV (invalid UTF-8 at byte {})",
                    e.utf8_error().valid_up_to()
                ))
            })?;
            resume(&name, &text, &header, spec, &mut done)?
        };
        file.set_len(keep as u64)
            .map_err(RunError::io(format!("truncating {name}")))?;
        let mut out = ResultsFile {
            path: path.to_path_buf(),
            file,
            done,
        };
        use std::io::Seek;
        out.file
            .seek(std::io::SeekFrom::End(0))
            .map_err(RunError::io(format!("opening {name}")))?;
        if keep == 0 {
            out.write(header.as_bytes())?;
        }
        Ok(out)
    }

    /// The configurations whose rows are in the file.
    pub fn done(&self) -> &BTreeSet<usize> {
        &self.done
    }

    /// Append configuration `index`'s rows, written out at once (one write).
    pub fn append(&mut self, index: usize, rows: &[Vec<Cell>]) -> Result<(), RunError> {
        let text: String = rows.iter().map(|r| csv_line(r)).collect();
        self.write(text.as_bytes())?;
        self.done.insert(index);
        Ok(())
    }

    /// Once every configuration of `spec` is done, rewrite the file with
    /// its rows in configuration order (through a new file renamed over
    /// it); before that, leave it as it is. Whether it was complete.
    pub fn finish(self, spec: &Spec) -> Result<bool, RunError> {
        if self.done.len() < spec.len() {
            return Ok(false);
        }
        let name = self.path.display().to_string();
        drop(self.file);
        let text =
            std::fs::read_to_string(&self.path).map_err(RunError::io(format!("reading {name}")))?;
        let mut records = records(&text);
        let header = records.next().map(|(r, _)| r).unwrap_or_default();
        let mut rows: Vec<(usize, &str)> = records
            .map(|(r, _)| (config_of(r).unwrap_or(usize::MAX), r))
            .collect();
        rows.sort_by_key(|(c, _)| *c);
        let mut sorted = String::with_capacity(text.len());
        sorted.push_str(header);
        for (_, r) in rows {
            sorted.push_str(r);
        }
        let tmp = self.path.with_extension("csv.sorting");
        std::fs::write(&tmp, sorted).map_err(RunError::io(format!("writing {}", tmp.display())))?;
        std::fs::rename(&tmp, &self.path).map_err(RunError::io(format!("renaming to {name}")))?;
        Ok(true)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), RunError> {
        self.file
            .write_all(bytes)
            .and_then(|()| self.file.flush())
            .map_err(RunError::io(format!("writing {}", self.path.display())))
    }
}

/// Check the rows of `text` against `spec`, fill `done`, and give how many
/// bytes of it to keep.
fn resume(
    name: &str,
    text: &str,
    header: &str,
    spec: &Spec,
    done: &mut BTreeSet<usize>,
) -> Result<usize, RunError> {
    let mut list: Vec<(&str, usize)> = records(text).collect();
    // A last record without its line end was cut by a kill: it goes, and
    // so do the rows before it of the same configuration (a
    // configuration's rows are written together).
    // A torn line whose first field is whole names its configuration;
    // one cut before that may belong to the last configuration written.
    if let Some((torn, _)) = list.pop_if(|(r, _)| !r.ends_with('\n')) {
        let torn_config = torn
            .split_once(',')
            .and_then(|(c, _)| c.parse::<usize>().ok());
        let last = list.last().and_then(|(r, _)| config_of(r));
        if let Some(last) = last.filter(|l| torn_config.is_none_or(|t| t == *l)) {
            while list.len() > 1 && list.last().and_then(|(r, _)| config_of(r)) == Some(last) {
                list.pop();
            }
        }
    }
    let Some(((first, _), rows)) = list.split_first() else {
        return Ok(0);
    };
    if *first != header {
        return Err(RunError::Usage(format!(
            "{name}: its header is not this sweep's columns (another spec's results?): it has \
             {}, this sweep writes {}; give another --out or move it away",
            first.trim_end(),
            header.trim_end()
        )));
    }
    let grid = spec.grid().len();
    let width = spec.columns().len();
    for (line, (record, _)) in rows.iter().enumerate() {
        let at = |why: String| RunError::Usage(format!("{name}: row {}: {why}", line + 1));
        let fields = fields(record);
        if fields.len() != width {
            return Err(at(format!(
                "{} fields, the header has {width}",
                fields.len()
            )));
        }
        let index: usize = fields[0]
            .parse()
            .map_err(|_| at(format!("config '{}' is not a number", fields[0])))?;
        let config = spec.config(index).ok_or_else(|| {
            at(format!(
                "config {index}: this sweep has {} configurations",
                spec.len()
            ))
        })?;
        for ((key, want), got) in config.values.iter().zip(&fields[1..=grid]) {
            if want != got {
                return Err(at(format!(
                    "config {index} has {key}={got}, this sweep's has {key}={want} (another \
                     spec's results?)"
                )));
            }
        }
        done.insert(index);
    }
    Ok(list.last().map_or(0, |(r, at)| at + r.len()))
}

/// The configuration a record's first field names.
fn config_of(record: &str) -> Option<usize> {
    record.split(',').next()?.trim_end().parse().ok()
}

/// The records of CSV `text` (a record ends at a line end outside quotes),
/// each with its line end if it has one, and where it starts.
fn records(text: &str) -> impl Iterator<Item = (&str, usize)> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let mut quoted = false;
        let bytes = text.as_bytes();
        let mut end = text.len();
        for (i, &b) in bytes.iter().enumerate().skip(start) {
            match b {
                b'"' => quoted = !quoted,
                b'\n' if !quoted => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        let record = (&text[start..end], start);
        start = end;
        Some(record)
    })
}

/// The fields of a record, unquoted.
fn fields(record: &str) -> Vec<String> {
    let line = record.strip_suffix('\n').unwrap_or(record);
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    out.push(field);
    out
}

/// The whole table of `spec`'s `rows` as CSV: its header, then each
/// configuration's rows in the order given.
pub fn csv_table(spec: &Spec, rows: &[(usize, Vec<Vec<Cell>>)]) -> String {
    let header: Vec<Cell> = spec.columns().into_iter().map(Cell::Text).collect();
    let mut text = csv_line(&header);
    for row in rows.iter().flat_map(|(_, r)| r) {
        text.push_str(&csv_line(row));
    }
    text
}

/// A CSV line of `cells`, with its line end.
pub fn csv_line(cells: &[Cell]) -> String {
    let mut line = String::new();
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        match cell {
            Cell::Int(n) => line.push_str(&n.to_string()),
            Cell::Float(f) => line.push_str(&f.to_string()),
            Cell::Text(t) => line.push_str(&quoted(t)),
            Cell::Empty => {}
        }
    }
    line.push('\n');
    line
}

/// `text` as a CSV field: quoted when it must be.
fn quoted(text: &str) -> String {
    let must =
        text.contains([',', '"', '\n', '\r']) || text.starts_with(' ') || text.ends_with(' ');
    if must {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}
