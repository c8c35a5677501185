//! Counts over a write log's records, as `elevator write-log show` sums
//! them up: records by kind, bytes by kind, flush epochs, FUA writes and
//! the first marks' texts ([`LogSummary`]).

use super::{Kind, RecordRef};

/// Marks a summary lists (the others are counted).
pub const LISTED_MARKS: usize = 100;
/// Bytes of a mark's text a summary shows.
pub const MARK_SHOWN_BYTES: usize = 256;

/// Counts over a log's records.
#[derive(Debug, Default)]
pub struct LogSummary {
    /// Records seen.
    pub records: u64,
    /// Records by kind, indexed by [`Kind::code`] less one.
    pub by_kind: [u64; 5],
    /// Bytes written.
    pub bytes_written: u64,
    /// Bytes zeroed (write-zeroes).
    pub bytes_zeroed: u64,
    /// Bytes discarded.
    pub bytes_discarded: u64,
    /// Flushes that followed content records (flushed epochs).
    pub epochs: u64,
    /// Content records since the last flush.
    pub content_since_flush: u64,
    /// FUA content records.
    pub fua: u64,
    /// The first [`LISTED_MARKS`] marks' texts, cut at [`MARK_SHOWN_BYTES`].
    pub marks: Vec<String>,
    /// Marks past those.
    pub marks_not_listed: u64,
    /// The last record's time in nanoseconds.
    pub last_time_ns: u64,
}

/// `text` cut at `max` bytes (on a character boundary), with "..." if cut.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let end = (0..=max)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(end);
        text.push_str("...");
    }
    text
}

impl LogSummary {
    /// Count `rec`.
    pub fn add(&mut self, rec: &RecordRef<'_>) {
        let h = &rec.head;
        self.records += 1;
        self.by_kind[usize::from(h.kind.code() - 1)] += 1;
        self.last_time_ns = h.time_ns;
        let bytes = u64::from(h.sectors) * 512;
        match h.kind {
            Kind::Write => self.bytes_written += bytes,
            Kind::WriteZeroes => self.bytes_zeroed += bytes,
            Kind::Discard => self.bytes_discarded += bytes,
            Kind::Flush => {
                if self.content_since_flush > 0 {
                    self.epochs += 1;
                }
                self.content_since_flush = 0;
            }
            Kind::Mark if self.marks.len() < LISTED_MARKS => {
                let end = rec.payload.len().min(MARK_SHOWN_BYTES + 4);
                let text = String::from_utf8_lossy(&rec.payload[..end]).into_owned();
                self.marks.push(cut(text, MARK_SHOWN_BYTES));
            }
            Kind::Mark => self.marks_not_listed += 1,
        }
        if h.kind.changes_content() {
            self.content_since_flush += 1;
            if h.fua() {
                self.fua += 1;
            }
        }
    }
}
