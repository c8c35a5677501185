//! Which pages of a memory device's store were ever written
//! ([`WrittenPages`]): a bitmap of atomic words, shared by every handle on
//! the store, from which a memory device reports its allocation extents.
//! A page that was never written, or that a write-zeroes or discard zeroed
//! whole, is a hole.
//!
//! Writes set their pages' bits after the bytes have moved, zeroing clears
//! them after the bytes are zero. A write and a zeroing of the same page
//! in flight at once leave the bytes unspecified, and so the bit.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::extent::{Extent, push_extent};

/// Bytes per tracked page.
pub(crate) const PAGE: u64 = 4096;

/// A bit per page of a store of `len` bytes: set when the page may hold
/// data.
pub(crate) struct WrittenPages {
    words: Box<[AtomicU64]>,
    len: u64,
}

impl WrittenPages {
    /// All clear, for a store of `len` bytes.
    pub(crate) fn new(len: u64) -> WrittenPages {
        let pages = len.div_ceil(PAGE);
        let words = (0..pages.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        WrittenPages { words, len }
    }

    fn bit(&self, page: u64) -> bool {
        let w = &self.words[(page / 64) as usize];
        w.load(Ordering::Acquire) & (1 << (page % 64)) != 0
    }

    /// The bytes `start..end` may now hold data.
    pub(crate) fn mark(&self, start: u64, end: u64) {
        let end = end.min(self.len);
        if start >= end {
            return;
        }
        for page in start / PAGE..end.div_ceil(PAGE) {
            let w = &self.words[(page / 64) as usize];
            w.fetch_or(1 << (page % 64), Ordering::Release);
        }
    }

    /// The bytes `start..end` are zero: the pages wholly inside are holes
    /// again (the partly covered ones keep their state).
    pub(crate) fn clear(&self, start: u64, end: u64) {
        let end = end.min(self.len);
        let first = start.div_ceil(PAGE);
        // The last page may be a short one at the end of the store.
        let last = if end == self.len {
            end.div_ceil(PAGE)
        } else {
            end / PAGE
        };
        for page in first..last {
            let w = &self.words[(page / 64) as usize];
            w.fetch_and(!(1 << (page % 64)), Ordering::Release);
        }
    }

    /// The extents of `len` bytes at `offset` (clipped to the store), at
    /// most `max` of them: written pages are data, the others holes that
    /// read as zeroes.
    pub(crate) fn extents(&self, offset: u64, len: u64, max: usize) -> Vec<Extent> {
        let end = offset.saturating_add(len).min(self.len);
        let mut out: Vec<Extent> = Vec::new();
        let mut pos = offset;
        while pos < end {
            let page = pos / PAGE;
            let next = ((page + 1) * PAGE).min(end);
            let e = if self.bit(page) {
                Extent::data(next - pos)
            } else {
                Extent::hole(next - pos)
            };
            if out.len() >= max.max(1) && out.last().is_none_or(|l| !l.same_kind(&e)) {
                break;
            }
            push_extent(&mut out, e);
            pos = next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_holes_until_written_and_again_once_zeroed() {
        let p = WrittenPages::new(64 * PAGE + 512);
        assert_eq!(
            p.extents(0, 1 << 30, 10),
            vec![Extent::hole(64 * PAGE + 512)]
        );
        p.mark(PAGE + 100, PAGE + 200);
        p.mark(10 * PAGE, 12 * PAGE);
        assert_eq!(
            p.extents(0, 64 * PAGE + 512, 10),
            vec![
                Extent::hole(PAGE),
                Extent::data(PAGE),
                Extent::hole(8 * PAGE),
                Extent::data(2 * PAGE),
                Extent::hole(52 * PAGE + 512),
            ]
        );
        // Zeroing half a page leaves it data; a whole one makes it a hole.
        p.clear(10 * PAGE + 512, 12 * PAGE);
        assert_eq!(
            p.extents(10 * PAGE, 2 * PAGE, 10),
            vec![Extent::data(PAGE), Extent::hole(PAGE)]
        );
        // The short last page.
        p.mark(64 * PAGE, 64 * PAGE + 512);
        assert_eq!(p.extents(64 * PAGE, 512, 10), vec![Extent::data(512)]);
        p.clear(64 * PAGE, 64 * PAGE + 512);
        assert_eq!(p.extents(64 * PAGE, 512, 10), vec![Extent::hole(512)]);
        // Capped, starting mid-page.
        assert_eq!(
            p.extents(PAGE / 2, 20 * PAGE, 2),
            vec![Extent::hole(PAGE / 2), Extent::data(PAGE)]
        );
    }
}
