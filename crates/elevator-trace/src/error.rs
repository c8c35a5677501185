//! Errors from reading traces: what was wrong and where (the file, the
//! record number or the line).

use thiserror::Error;

pub use crate::record::RangeRefusal;
pub use crate::reorder::OutsideWindow;

/// What was wrong with a trace.
#[derive(Debug, Error)]
pub enum TraceErrorKind {
    /// The file could not be read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A binary record ends before its 48 bytes (or its payload) do.
    #[error("truncated record: {got} of {want} bytes")]
    Truncated {
        /// Bytes present.
        got: usize,
        /// Bytes needed.
        want: usize,
    },
    /// The magic number is not blktrace's.
    #[error("bad magic {0:#010x}: not a blktrace record (expected 0x65617407)")]
    Magic(u32),
    /// The version is not one elevator reads.
    #[error("blktrace version {0:#04x} is not supported (only 0x07)")]
    Version(u8),
    /// An action code (or tracepoint, or letter) elevator does not know.
    #[error("unknown event '{0}'")]
    UnknownEvent(String),
    /// A record is earlier than the one before it in the same file (for
    /// text, more than the reorder window earlier than a line before it).
    #[error("{}", crate::reorder::time_order_text(*time, *previous, window.as_deref()))]
    TimeOrder {
        /// This record's time.
        time: u64,
        /// The previous record's (for text, the earlier line's).
        previous: u64,
        /// For text: both lines, and why the reorder window refused it.
        window: Option<Box<OutsideWindow>>,
    },
    /// A text line that does not parse.
    #[error("cannot parse: {why}: '{text}'")]
    Parse {
        /// What was expected.
        why: String,
        /// The offending text (shortened).
        text: String,
    },
    /// A text line longer than the most a reader takes.
    #[error("line longer than {0} bytes: not a trace line")]
    LineTooLong(usize),
    /// A sector range beyond the device replayed on.
    #[error("sectors {sector}..{end} are beyond the device's {capacity} sectors")]
    BeyondDevice {
        /// First sector.
        sector: u64,
        /// End sector.
        end: u64,
        /// Device size in sectors.
        capacity: u64,
    },
    /// A sector range that cannot be replayed as stated (it ends past 2^64
    /// bytes, is more than one bio carries, or a split cuts before its
    /// start): refused, as blkparse refuses it, never wrapped.
    #[error("I/O range refused: {0}")]
    Range(#[from] RangeRefusal),
    /// The content is not any trace format elevator knows.
    #[error("not a trace elevator reads ({0})")]
    UnknownFormat(String),
}

/// A trace error with where it happened.
#[derive(Debug, Error)]
#[error("{}: {kind}", where_text(source_name, place))]
pub struct TraceError {
    /// The file (or "-" for standard input).
    pub source_name: String,
    /// "record N" or "line N" (1-based), or "header"; empty when the file
    /// could not be opened at all (the message then says "reading trace
    /// FILE").
    pub place: String,
    /// What was wrong (printed in this error's message, so not chained as
    /// its source: a report would say it twice).
    pub kind: TraceErrorKind,
}

/// Where a [`TraceError`] happened, as its message starts: "FILE: PLACE",
/// or "reading trace FILE" when there is no place (the file did not open).
fn where_text(source_name: &str, place: &str) -> String {
    if place.is_empty() {
        format!("reading trace {source_name}")
    } else {
        format!("{source_name}: {place}")
    }
}

impl TraceError {
    /// An error in `source_name` at record `n` (1-based).
    pub fn at_record(source_name: &str, n: u64, kind: TraceErrorKind) -> TraceError {
        TraceError {
            source_name: source_name.to_string(),
            place: format!("record {n}"),
            kind,
        }
    }

    /// An error in `source_name` at line `n` (1-based).
    pub fn at_line(source_name: &str, n: u64, kind: TraceErrorKind) -> TraceError {
        TraceError {
            source_name: source_name.to_string(),
            place: format!("line {n}"),
            kind,
        }
    }
}

/// Why a text line is not an item: it does not parse (what was expected),
/// or its range is refused.
pub(crate) enum BadLine {
    /// What was expected.
    Text(&'static str),
    /// Its range cannot be replayed as stated.
    Range(RangeRefusal),
}

impl From<&'static str> for BadLine {
    fn from(why: &'static str) -> BadLine {
        BadLine::Text(why)
    }
}

/// A streaming reader as [`next_item`] drives it.
pub(crate) trait ItemSource {
    /// The next item, `None` at the end.
    fn read_next(&mut self) -> Result<Option<crate::record::Item>, TraceError>;
    /// Whether the read has ended, whether bad items are skipped, and how
    /// many were.
    fn read_state(&mut self) -> (&mut bool, bool, &mut u64);
}

/// The readers' `Iterator::next`: items until the end; a bad one is
/// counted and passed over when skipping (unless it ended the read or is an
/// I/O error), else returned as the last item.
pub(crate) fn next_item(
    source: &mut impl ItemSource,
) -> Option<Result<crate::record::Item, TraceError>> {
    loop {
        if *source.read_state().0 {
            return None;
        }
        match source.read_next() {
            Ok(Some(item)) => return Some(Ok(item)),
            Ok(None) => *source.read_state().0 = true,
            Err(e) => {
                let (done, skip_bad, skipped) = source.read_state();
                if skip_bad && !*done && !matches!(e.kind, TraceErrorKind::Io(_)) {
                    *skipped += 1;
                } else {
                    *done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
