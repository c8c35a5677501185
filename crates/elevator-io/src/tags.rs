//! PLACEHOLDER (replaced by the tags branch): a tag set.

use std::sync::atomic::{AtomicU64, Ordering};

/// Tags.
pub struct TagSet {
    words: Box<[AtomicU64]>,
    depth: u32,
}

/// Per-thread hint.
#[derive(Default)]
pub struct TagHint {
    word: usize,
}

impl TagSet {
    /// New.
    pub fn new(depth: u32) -> Result<TagSet, String> {
        let n = depth.div_ceil(64) as usize;
        Ok(TagSet {
            words: (0..n).map(|_| AtomicU64::new(0)).collect(),
            depth,
        })
    }
    /// Depth.
    pub fn depth(&self) -> u32 {
        self.depth
    }
    /// Get.
    pub fn get(&self, hint: &mut TagHint) -> Option<u32> {
        let n = self.words.len();
        for k in 0..n {
            let w = (hint.word + k) % n;
            let bits = (self.depth - w as u32 * 64).min(64);
            let full = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            let mut cur = self.words[w].load(Ordering::Relaxed);
            while cur & full != full {
                let b = (!cur).trailing_zeros();
                match self.words[w].compare_exchange_weak(
                    cur,
                    cur | (1 << b),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        hint.word = w;
                        return Some(w as u32 * 64 + b);
                    }
                    Err(c) => cur = c,
                }
            }
        }
        None
    }
    /// Put.
    pub fn put(&self, tag: u32, _hint: &mut TagHint) {
        self.words[(tag / 64) as usize].fetch_and(!(1u64 << (tag % 64)), Ordering::Release);
    }
}

impl TagSet {
    /// In use.
    pub fn in_use(&self) -> u32 {
        self.words
            .iter()
            .map(|w| w.load(Ordering::SeqCst).count_ones())
            .sum()
    }
}
