//! tracefs' text for the kernel's block tracepoints (`block_bio_queue`,
//! `block_rq_issue`, ...), as `cat trace_pipe` prints them.
//!
//! Interface placeholder while the reader is written: see TracefsReader.

use std::io::BufRead;

use crate::error::{TraceError, TraceErrorKind};
use crate::record::Item;

/// Reads tracefs block events, one line at a time.
pub struct TracefsReader<R: BufRead> {
    reader: R,
    source_name: String,
    skip_bad: bool,
    skipped: u64,
}

impl<R: BufRead> TracefsReader<R> {
    /// A reader of `reader`, named `source_name` in errors. With `skip_bad`,
    /// lines that do not parse are counted ([`TracefsReader::skipped`])
    /// instead of ending the read with an error.
    pub fn new(reader: R, source_name: &str, skip_bad: bool) -> TracefsReader<R> {
        TracefsReader {
            reader,
            source_name: source_name.to_string(),
            skip_bad,
            skipped: 0,
        }
    }

    /// Lines skipped as bad.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }
}

impl<R: BufRead> Iterator for TracefsReader<R> {
    type Item = Result<Item, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let _ = (&mut self.reader, self.skip_bad);
        Some(Err(TraceError::at_line(
            &self.source_name,
            1,
            TraceErrorKind::UnknownFormat("tracefs reader not written yet".into()),
        )))
    }
}
