//! A write log's heads loaded whole, the data left in the file: what
//! `elevator write-log replay` and `elevator crash-states` plan from
//! ([`LoadedLog`]), and where a damaged log stops being readable.

use std::fs::File;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::{Kind, LogHeader, Reader, RecordHead, WriteLogError};

/// Why a log cannot be used as a whole: it could not be opened or its
/// header read, it carries no data, or a mark asked for is not in it.
#[derive(Debug, Error)]
pub enum LoadedLogError {
    /// The file could not be opened.
    #[error("opening {}", path.display())]
    Open {
        /// The log.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Its header could not be read.
    #[error("reading {}", path.display())]
    Header {
        /// The log.
        path: PathBuf,
        /// Why.
        #[source]
        source: WriteLogError,
    },
    /// Its writes carry no data.
    #[error(
        "{}: the log carries no data (it was recorded on a simulated device, which moves none), so there is nothing to write onto an image",
        path.display()
    )]
    NoData {
        /// The log.
        path: PathBuf,
    },
    /// No mark's text is or starts with the text asked for.
    #[error(
        "{}: no mark's text is or starts with {text:?} (the log has {marks} marks{}{})",
        path.display(),
        if known.is_empty() { "" } else { ": " },
        known.join(", ")
    )]
    NoSuchMark {
        /// The log.
        path: PathBuf,
        /// The text asked for.
        text: String,
        /// How many marks the log has.
        marks: usize,
        /// The first ten marks' texts, quoted.
        known: Vec<String>,
    },
}

/// A log's heads, read whole; the data stays in the file.
#[derive(Debug)]
pub struct LoadedLog {
    /// Where it is.
    pub path: PathBuf,
    /// What it is of.
    pub header: LogHeader,
    /// Every whole record's head, `heads[i].seq == i`.
    pub heads: Vec<RecordHead>,
    /// Where each record starts in the file.
    pub offsets: Vec<u64>,
    /// Each mark's sequence number and text.
    pub marks: Vec<(u64, String)>,
    /// Why the log could not be read past `heads`, if it could not.
    pub error: Option<WriteLogError>,
}

impl LoadedLog {
    /// Read `path`'s heads; an unreadable header is an error, a damaged
    /// record is kept in `error`.
    pub fn load(path: &Path) -> Result<LoadedLog, LoadedLogError> {
        let file = File::open(path).map_err(|source| LoadedLogError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader =
            Reader::new(BufReader::with_capacity(1 << 20, file)).map_err(|source| {
                LoadedLogError::Header {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        let mut log = LoadedLog {
            path: path.to_path_buf(),
            header: reader.header(),
            heads: Vec::new(),
            offsets: Vec::new(),
            marks: Vec::new(),
            error: None,
        };
        loop {
            match reader.next_record() {
                Ok(Some(rec)) => {
                    if rec.head.kind == Kind::Mark {
                        log.marks.push((rec.head.seq, rec.text()));
                    }
                    log.heads.push(rec.head);
                    log.offsets.push(rec.offset);
                }
                Ok(None) => break,
                Err(e) => {
                    log.error = Some(e);
                    break;
                }
            }
        }
        Ok(log)
    }

    /// Refuse a log without data (from a simulated device).
    pub fn check_has_data(&self) -> Result<(), LoadedLogError> {
        if self.header.has_data {
            Ok(())
        } else {
            Err(LoadedLogError::NoData {
                path: self.path.clone(),
            })
        }
    }

    /// The device's capacity in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.header.capacity.saturating_mul(512)
    }

    /// The time of the last record before `cut`, in seconds.
    pub fn time_before(&self, cut: u64) -> f64 {
        cut.checked_sub(1)
            .and_then(|i| self.heads.get(i as usize))
            .map_or(0.0, |h| h.time_ns as f64 / 1e9)
    }

    /// The text of the mark at `seq`, if there is one.
    pub fn mark_text(&self, seq: u64) -> Option<&str> {
        self.marks
            .iter()
            .find(|(s, _)| *s == seq)
            .map(|(_, t)| t.as_str())
    }

    /// The marks recorded before record `cut`, in log order.
    pub fn marks_before(&self, cut: u64) -> Vec<String> {
        self.marks
            .iter()
            .filter(|(seq, _)| *seq < cut)
            .map(|(_, t)| t.clone())
            .collect()
    }

    /// The last record `--to-mark TEXT` applies: the first mark whose text
    /// is `text`, else the first that starts with it.
    pub fn find_mark(&self, text: &str) -> Result<u64, LoadedLogError> {
        let exact = self.marks.iter().find(|(_, t)| t == text);
        let prefix = || self.marks.iter().find(|(_, t)| t.starts_with(text));
        match exact.or_else(prefix) {
            Some((seq, _)) => Ok(*seq),
            None => Err(LoadedLogError::NoSuchMark {
                path: self.path.clone(),
                text: text.to_string(),
                marks: self.marks.len(),
                known: self
                    .marks
                    .iter()
                    .take(10)
                    .map(|(_, t)| format!("{t:?}"))
                    .collect(),
            }),
        }
    }
}
