//! Which pages of a memory device's store were ever written
//! ([`WrittenPages`]): a bitmap of atomic words, shared by every handle on
//! the store, from which a memory device reports its allocation extents
//! and counts the pages a write would make resident.
//! A page that was never written, or that a write-zeroes or discard zeroed
//! whole, is a hole.
//!
//! Writes set their pages' bits after the bytes have moved; zeroing clears
//! them *before* the bytes are zeroed (or the pages handed back), so that
//! once no I/O is in flight a clear bit means a page of zeroes (but for
//! bytes changed through a window and never written, see
//! [`MemDevice::map`](crate::mem::MemDevice::map)): a write that raced
//! with the zeroing either set its bit after the clear (the page is data,
//! whatever the bytes) or moved its bytes before the zeroing (they are
//! gone). A write and a zeroing of the same page in flight at once leave
//! the bytes unspecified, and so the bit. Nothing relies on a clear bit for
//! correctness: extents report it as a hole, and a memory device counts it
//! as a page a write will make resident.
//!
//! The bitmap costs one bit per 4 KiB page, taken from the allocator zeroed
//! (so the words of a huge store that were never touched cost nothing
//! either), and every walk over it goes a 64-page word at a time.

use std::alloc::{self, Layout};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::buf::BufError;
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
    /// All clear, for a store of `len` bytes. Failing to get the bitmap's
    /// memory is an error, not an abort.
    pub(crate) fn new(len: u64) -> Result<WrittenPages, BufError> {
        let words = len.div_ceil(PAGE).div_ceil(64);
        let too_big = BufError::OutOfMemory {
            len: usize::try_from(words.saturating_mul(8)).unwrap_or(usize::MAX),
        };
        let n = usize::try_from(words).map_err(|_| too_big.clone())?;
        let layout = Layout::array::<AtomicU64>(n).map_err(|_| too_big.clone())?;
        let words: Box<[AtomicU64]> = if n == 0 {
            Box::new([])
        } else {
            // SAFETY: the layout has a non-zero size (`n > 0`).
            let raw = unsafe { alloc::alloc_zeroed(layout) }.cast::<AtomicU64>();
            if raw.is_null() {
                return Err(too_big);
            }
            // SAFETY: `raw` is a fresh allocation from the global allocator
            // with the layout of `[AtomicU64; n]`, which the Box takes over
            // (and frees with that layout); its bytes are zero, and all-zero
            // bytes are a valid `AtomicU64` (it has `u64`'s representation).
            unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(raw, n)) }
        };
        Ok(WrittenPages { words, len })
    }

    /// Call `f(word, mask)` for the bitmap words of pages `first..last`,
    /// `mask` holding the bits of those pages in the word.
    fn each_word(first: u64, last: u64, mut f: impl FnMut(&u64, u64)) {
        let mut page = first;
        while page < last {
            let word = page / 64;
            let lo = page % 64;
            let hi = (last - word * 64).min(64);
            let mask = if hi - lo == 64 {
                u64::MAX
            } else {
                ((1u64 << (hi - lo)) - 1) << lo
            };
            f(&word, mask);
            page = (word + 1) * 64;
        }
    }

    fn word(&self, index: u64) -> &AtomicU64 {
        &self.words[index as usize]
    }

    /// The pages that `start..end` touches, even in part.
    fn touched(&self, start: u64, end: u64) -> (u64, u64) {
        let end = end.min(self.len);
        if start >= end {
            return (0, 0);
        }
        (start / PAGE, end.div_ceil(PAGE))
    }

    /// The bytes `start..end` may now hold data.
    pub(crate) fn mark(&self, start: u64, end: u64) {
        let (first, last) = self.touched(start, end);
        WrittenPages::each_word(first, last, |&w, mask| {
            self.word(w).fetch_or(mask, Ordering::Release);
        });
    }

    /// How many of the pages that `start..end` touches were never written
    /// (or were zeroed whole since): those a write there makes resident.
    pub(crate) fn unwritten(&self, start: u64, end: u64) -> u64 {
        let (first, last) = self.touched(start, end);
        let mut n = 0;
        WrittenPages::each_word(first, last, |&w, mask| {
            let set = self.word(w).load(Ordering::Acquire) & mask;
            n += u64::from(mask.count_ones() - set.count_ones());
        });
        n
    }

    /// Bytes of memory a write to `start..end` may make resident, where the
    /// kernel backs the store with pages of `fault` bytes (a multiple of
    /// [`PAGE`] that is a power of two: 4 KiB, or 2 MiB for transparent huge
    /// pages): a `fault`-sized region that holds no written page costs the
    /// whole region (the first touch may bring it all in); in one that
    /// does, each unwritten 4 KiB page costs 4 KiB (an overcount where the
    /// region is one huge page already, which errs on the safe side).
    pub(crate) fn cost(&self, start: u64, end: u64, fault: u64) -> u64 {
        let (first, last) = self.touched(start, end);
        let per = (fault / PAGE).max(1);
        if per == 1 || !per.is_multiple_of(64) {
            return self.unwritten(first * PAGE, last * PAGE) * PAGE;
        }
        let store_pages = self.len.div_ceil(PAGE);
        let mut bytes = 0;
        let mut region = first / per;
        while region * per < last {
            let (from, to) = (region * per, ((region + 1) * per).min(store_pages));
            let words = from / 64..to.div_ceil(64);
            let untouched = words
                .into_iter()
                .all(|w| self.word(w).load(Ordering::Acquire) == 0);
            bytes += if untouched {
                (to - from) * PAGE
            } else {
                self.unwritten(from.max(first) * PAGE, to.min(last) * PAGE) * PAGE
            };
            region += 1;
        }
        bytes
    }

    /// The pages wholly inside `start..end` (the last page of the store
    /// counts as whole if `end` is the store's end): byte offsets of the
    /// first such page and of the end of the last, or `None` if there is
    /// none.
    pub(crate) fn whole_pages(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        let end = end.min(self.len);
        let first = start.div_ceil(PAGE);
        // The last page may be a short one at the end of the store.
        let last = if end == self.len {
            end.div_ceil(PAGE)
        } else {
            end / PAGE
        };
        (first < last).then_some((first * PAGE, last * PAGE))
    }

    /// The bytes `start..end` are being zeroed: the pages wholly inside
    /// ([`WrittenPages::whole_pages`]) are holes again (the partly covered
    /// ones keep their state). Call before zeroing the bytes.
    pub(crate) fn clear(&self, start: u64, end: u64) {
        let Some((from, to)) = self.whole_pages(start, end) else {
            return;
        };
        WrittenPages::each_word(from / PAGE, to / PAGE, |&w, mask| {
            self.word(w).fetch_and(!mask, Ordering::Release);
        });
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
            let word = self.word(page / 64).load(Ordering::Acquire);
            let data = word & (1 << (page % 64)) != 0;
            // The run of pages alike goes in one step: up to the first
            // page of this word whose bit differs, or the word's end.
            let differ = (if data { !word } else { word }) >> (page % 64);
            let next_page = if differ == 0 {
                (page / 64 + 1) * 64
            } else {
                page + u64::from(differ.trailing_zeros())
            };
            let next = next_page.saturating_mul(PAGE).min(end);
            let e = if data {
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
        let p = WrittenPages::new(64 * PAGE + 512).expect("bitmap");
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

    #[test]
    fn words_are_walked_whole_and_in_part() {
        let pages = 64 * 5 + 7;
        let p = WrittenPages::new(pages * PAGE).expect("bitmap");
        assert_eq!(p.unwritten(0, pages * PAGE), pages);
        // Across word boundaries, starting and ending mid-page.
        p.mark(60 * PAGE + 1, 200 * PAGE - 1);
        assert_eq!(p.unwritten(0, pages * PAGE), pages - 140);
        assert_eq!(p.unwritten(60 * PAGE, 200 * PAGE), 0);
        assert_eq!(p.unwritten(59 * PAGE + 4095, 60 * PAGE + 1), 1);
        assert_eq!(p.unwritten(0, 0), 0);
        assert_eq!(p.unwritten(pages * PAGE, u64::MAX), 0);
        assert_eq!(
            p.extents(0, pages * PAGE, 10),
            vec![
                Extent::hole(60 * PAGE),
                Extent::data(140 * PAGE),
                Extent::hole((pages - 200) * PAGE),
            ]
        );
        assert_eq!(
            p.whole_pages(PAGE + 1, 3 * PAGE),
            Some((2 * PAGE, 3 * PAGE))
        );
        assert_eq!(p.whole_pages(PAGE + 1, 2 * PAGE + 5), None);
        p.clear(64 * PAGE - 1, 192 * PAGE + 1);
        assert_eq!(
            p.extents(0, pages * PAGE, 10),
            vec![
                Extent::hole(60 * PAGE),
                Extent::data(4 * PAGE),
                Extent::hole(128 * PAGE),
                Extent::data(8 * PAGE),
                Extent::hole((pages - 200) * PAGE),
            ]
        );
        // Every bit set, and a whole store's worth cleared.
        p.mark(0, u64::MAX);
        assert_eq!(p.unwritten(0, u64::MAX), 0);
        assert_eq!(p.extents(0, u64::MAX, 10), vec![Extent::data(pages * PAGE)]);
        p.clear(0, pages * PAGE);
        assert_eq!(p.unwritten(0, u64::MAX), pages);
    }

    #[test]
    fn a_write_costs_whole_huge_pages_where_none_was_written() {
        const HUGE: u64 = 2 << 20;
        // Three huge regions and a short fourth (64 pages).
        let p = WrittenPages::new(3 * HUGE + 64 * PAGE).expect("bitmap");
        assert_eq!(p.cost(PAGE, 2 * PAGE, PAGE), PAGE);
        assert_eq!(p.cost(PAGE, 2 * PAGE, HUGE), HUGE);
        // Across two untouched regions: both, whole.
        assert_eq!(p.cost(HUGE - PAGE, HUGE + PAGE, HUGE), 2 * HUGE);
        // The short last region costs what it has.
        assert_eq!(p.cost(3 * HUGE, 3 * HUGE + 1, HUGE), 64 * PAGE);
        // Once a region holds data, only its unwritten pages count.
        p.mark(0, PAGE);
        assert_eq!(p.cost(PAGE, 3 * PAGE, HUGE), 2 * PAGE);
        assert_eq!(p.cost(0, PAGE, HUGE), 0);
        assert_eq!(p.cost(HUGE - PAGE, HUGE + PAGE, HUGE), PAGE + HUGE);
        assert_eq!(p.cost(0, u64::MAX, HUGE), 3 * HUGE + 64 * PAGE - PAGE);
        assert_eq!(p.cost(0, u64::MAX, PAGE), 3 * HUGE + 64 * PAGE - PAGE);
    }
}
