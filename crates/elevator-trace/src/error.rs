//! Errors from reading traces: what was wrong and where (the file, the
//! record number or the line).

use thiserror::Error;

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
    /// A record is earlier than the one before it in the same file.
    #[error("out of time order: {time} ns after {previous} ns")]
    TimeOrder {
        /// This record's time.
        time: u64,
        /// The previous record's.
        previous: u64,
    },
    /// A text line that does not parse.
    #[error("cannot parse: {why}: '{text}'")]
    Parse {
        /// What was expected.
        why: String,
        /// The offending text (shortened).
        text: String,
    },
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
    /// The content is not any trace format elevator knows.
    #[error("not a trace elevator reads ({0})")]
    UnknownFormat(String),
}

/// A trace error with where it happened.
#[derive(Debug, Error)]
#[error("{source_name}: {place}: {kind}")]
pub struct TraceError {
    /// The file (or "-" for standard input).
    pub source_name: String,
    /// "record N" or "line N" (1-based), or "header".
    pub place: String,
    /// What was wrong (printed in this error's message, so not chained as
    /// its source: a report would say it twice).
    pub kind: TraceErrorKind,
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
