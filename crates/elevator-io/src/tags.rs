//! A device's tag set: the numbers `0..depth` that name its requests in
//! flight, shared by every hardware context (one per submitting thread) and
//! taken and given back without a lock.
//!
//! [`TagSet`] owns a bitmap, one bit per tag, set while the tag is held.
//! The bitmap is cut into words of at most 64 bits, each word alone on its
//! own cache line, and narrowed for shallow devices so that there are about
//! four words (a SATA disk's 32 tags are four words of 8 bits): each
//! submitting thread keeps a [`TagHint`], a cursor that starts in a word of
//! its own, so threads claim bits on different cache lines and do not
//! bounce one line between cores. A bit is claimed with one `fetch_or`
//! (whoever turned it from 0 to 1 holds the tag) and given back with one
//! `fetch_and`.
//!
//! Invariants:
//! - a tag is held by at most one holder: it is handed out only by the
//!   `fetch_or` that turned its bit from clear to set;
//! - every tag given back was taken: [`TagSet::put`] finds its bit set
//!   (checked with `debug_assert!`), and a tag outside `0..depth` is never
//!   handed out nor accepted back;
//! - bits beyond `depth` in the last word are never set, so the set bits
//!   count the tags in use;
//! - whatever a holder wrote while it held a tag (the request in the slot
//!   that tag names) happens before the next holder of that tag gets it:
//!   `put` releases and `get` acquires on the tag's word.
//!
//! The model checks in this file (`scripts/loom`) run two and three threads
//! taking and giving back tags on sets of two and three tags, one of them
//! spread over two words, and check the first, second and last invariants in
//! every interleaving loom explores.

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// The deepest tag set: 65536 tags (tags are `u32`, and no device queue is
/// deeper; NVMe's limit is 65536 commands per queue).
const MAX_DEPTH: u32 = 65536;

/// The widest word: one `AtomicU64`.
const MAX_WORD_SHIFT: u32 = 6;

/// The narrowest word a [`TagSet::new`] picks: 8 bits. Narrower words would
/// make a nearly full set's search walk many cache lines for a few bits.
const MIN_WORD_SHIFT: u32 = 3;

/// How many words [`TagSet::new`] aims to spread a shallow set over, so that
/// a few submitting threads start on different cache lines.
const SPREAD_WORDS: u32 = 4;

/// Why a [`TagSet`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TagSetError {
    /// The depth asked for is outside `1..=65536`.
    #[error("tag set depth {0} is out of range: a tag set holds 1 to 65536 tags")]
    Depth(u32),
}

/// One word of the bitmap, alone on its cache line (128 bytes: the line and
/// the neighbour that x86's adjacent-line prefetcher pulls in with it).
#[repr(align(128))]
struct Word {
    bits: AtomicU64,
}

/// A device's tags, `0..depth`, taken with [`get`](TagSet::get) and given
/// back with [`put`](TagSet::put) from any thread without a lock. Share it
/// with an `Arc`; each thread that takes tags keeps its own [`TagHint`].
pub struct TagSet {
    words: Box<[Word]>,
    depth: u32,
    /// log2 of the bits per word: tag `t` is bit `t & (bits - 1)` of word
    /// `t >> shift`.
    shift: u32,
    /// Hands each new [`TagHint`] the next starting word, round the words.
    next_start: AtomicU32,
}

/// A thread's cursor into a [`TagSet`]: where its next search starts.
///
/// Keep one per thread (per hardware context) and pass it to every
/// [`TagSet::get`] and [`TagSet::put`] that thread makes. A new hint is
/// given its own starting word by its first `get`, so threads begin on
/// different cache lines; after that it follows the thread's own tags: just
/// past the last tag taken, or on the last tag given back (whose line is
/// already in this core's cache).
#[derive(Debug, Default, Clone)]
pub struct TagHint {
    next: Option<u32>,
}

impl TagSet {
    /// The deepest tag set, 65536 tags.
    pub const MAX_DEPTH: u32 = MAX_DEPTH;

    /// A tag set of `depth` tags, all free. `depth` must be in
    /// `1..=`[`TagSet::MAX_DEPTH`].
    pub fn new(depth: u32) -> Result<TagSet, TagSetError> {
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(TagSetError::Depth(depth));
        }
        // Bits per word: a quarter of the depth, rounded up to a power of
        // two, kept within 8..=64.
        let quarter = depth.div_ceil(SPREAD_WORDS).next_power_of_two();
        let shift = quarter
            .trailing_zeros()
            .clamp(MIN_WORD_SHIFT, MAX_WORD_SHIFT);
        Ok(TagSet::with_shift(depth, shift))
    }

    /// A tag set of `depth` tags in words of `1 << shift` bits. `depth` is
    /// in range and `shift <= 6`: [`TagSet::new`] checked, or a test chose.
    fn with_shift(depth: u32, shift: u32) -> TagSet {
        debug_assert!((1..=MAX_DEPTH).contains(&depth) && shift <= MAX_WORD_SHIFT);
        let count = depth.div_ceil(1 << shift);
        let words = (0..count)
            .map(|_| Word {
                bits: AtomicU64::new(0),
            })
            .collect();
        TagSet {
            words,
            depth,
            shift,
            next_start: AtomicU32::new(0),
        }
    }

    /// How many tags the set holds: tags are `0..depth`.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Takes a free tag, or `None` when every tag is taken (at the moment
    /// each word was looked at: a tag given back meanwhile may be missed).
    ///
    /// Lock-free: each failed claim means another thread changed the word.
    /// The search starts at `hint` and goes round the words once.
    pub fn get(&self, hint: &mut TagHint) -> Option<u32> {
        let count = self.words.len();
        let start = match hint.next {
            Some(tag) if tag < self.depth => tag,
            _ => {
                // A new hint (or one from a deeper set): give it the next
                // starting word, so threads spread over the words.
                let word = self.next_start.fetch_add(1, Ordering::Relaxed) as usize % count;
                // `word < count`, so `word << shift < depth + 64`: a u32.
                (word << self.shift) as u32
            }
        };
        let first = (start >> self.shift) as usize;
        let mut from = start & self.bit_mask();
        for step in 0..count {
            let index = (first + step) % count;
            if let Some(bit) = self.claim(index, from) {
                let tag = ((index as u32) << self.shift) | bit;
                debug_assert!(tag < self.depth, "tag {tag} claimed beyond the depth");
                hint.next = Some(if tag + 1 < self.depth { tag + 1 } else { 0 });
                return Some(tag);
            }
            from = 0;
        }
        None
    }

    /// Gives back `tag`, taken by a [`get`](TagSet::get) on this set, and
    /// points `hint` at it (the next `get` on this thread tries it first).
    ///
    /// Giving back a tag that is not held, or one outside `0..depth`, is a
    /// bug in the caller: checked with `debug_assert!`; in a release build
    /// the first does nothing to other holders (the bit is already clear)
    /// and the second is ignored.
    pub fn put(&self, tag: u32, hint: &mut TagHint) {
        debug_assert!(
            tag < self.depth,
            "tag {tag} put back into a set of depth {}",
            self.depth
        );
        if tag >= self.depth {
            return;
        }
        let Some(word) = self.words.get((tag >> self.shift) as usize) else {
            return;
        };
        let bit = 1u64 << (tag & self.bit_mask());
        // Release: what the holder did with the tag happens before the next
        // `get` that claims it (whose `fetch_or` acquires).
        let before = word.bits.fetch_and(!bit, Ordering::Release);
        debug_assert!(before & bit != 0, "tag {tag} put back but not taken");
        hint.next = Some(tag);
    }

    /// How many tags are taken: a count of the set bits, word by word, so a
    /// momentary figure while other threads take and give back tags (exact
    /// when they are quiet). Reads every word: not for the hot path.
    pub fn in_use(&self) -> u32 {
        self.words
            .iter()
            .map(|word| word.bits.load(Ordering::Relaxed).count_ones())
            .sum()
    }

    /// `bits per word - 1`: the bit of a tag within its word.
    fn bit_mask(&self) -> u32 {
        (1 << self.shift) - 1
    }

    /// The bits of word `index` that are tags (all of them, but for the last
    /// word of a depth that does not fill it).
    fn valid(&self, index: usize) -> u64 {
        let first_tag = (index as u32) << self.shift;
        let bits = (self.depth - first_tag).min(1 << self.shift);
        if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        }
    }

    /// Claims a clear bit of word `index`, preferring bits at or above
    /// `from`; the bit's number in the word, or `None` when all are set.
    fn claim(&self, index: usize, from: u32) -> Option<u32> {
        let word = &self.words.get(index)?.bits;
        let valid = self.valid(index);
        // The first look is only a guess; the fetch_or below decides.
        let mut seen = word.load(Ordering::Relaxed);
        loop {
            let free = !seen & valid;
            if free == 0 {
                return None;
            }
            let above = free & (u64::MAX << from);
            let bit = if above != 0 { above } else { free }.trailing_zeros();
            let mask = 1u64 << bit;
            // Acquire: pairs with the `put` that cleared this bit, so the
            // last holder's writes are visible to the new one. Setting a bit
            // that is already set changes nothing, so a lost race needs no
            // undoing.
            let before = word.fetch_or(mask, Ordering::Acquire);
            if before & mask == 0 {
                return Some(bit);
            }
            seen = before;
        }
    }
}

impl std::fmt::Debug for TagSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TagSet")
            .field("depth", &self.depth)
            .field("words", &self.words.len())
            .field("bits_per_word", &(1u32 << self.shift))
            .field("in_use", &self.in_use())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    /// Takes every tag, checks they are `0..depth` once each, gives them
    /// back.
    fn drain_and_refill(set: &TagSet) {
        let mut hint = TagHint::default();
        let mut taken = Vec::new();
        while let Some(tag) = set.get(&mut hint) {
            taken.push(tag);
            assert!(taken.len() <= set.depth() as usize, "more tags than depth");
        }
        assert_eq!(set.in_use(), set.depth());
        let mut sorted = taken.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..set.depth()).collect::<Vec<_>>());
        for tag in taken {
            set.put(tag, &mut hint);
        }
        assert_eq!(set.in_use(), 0);
    }

    #[test]
    fn depths_in_range_hand_out_every_tag_once() {
        for depth in [1, 2, 7, 8, 31, 32, 33, 64, 65, 255, 1023, 65535, 65536] {
            let set = TagSet::new(depth).unwrap();
            assert_eq!(set.depth(), depth);
            drain_and_refill(&set);
            // And again: the set is whole after giving everything back.
            drain_and_refill(&set);
        }
    }

    #[test]
    fn depths_out_of_range_are_refused_with_the_range() {
        for depth in [0, 65537, u32::MAX] {
            let err = TagSet::new(depth).unwrap_err();
            assert_eq!(err, TagSetError::Depth(depth));
            let text = err.to_string();
            assert!(text.contains("1 to 65536"), "{text}");
            assert!(text.contains(&depth.to_string()), "{text}");
        }
    }

    #[test]
    fn shallow_sets_are_spread_over_words() {
        let words = |depth| {
            let set = TagSet::new(depth).unwrap();
            (set.words.len(), 1u32 << set.shift)
        };
        assert_eq!(words(1), (1, 8));
        assert_eq!(words(32), (4, 8));
        assert_eq!(words(64), (4, 16));
        assert_eq!(words(65), (3, 32));
        assert_eq!(words(256), (4, 64));
        assert_eq!(words(1023), (16, 64));
        assert_eq!(words(65536), (1024, 64));
        assert_eq!(std::mem::align_of::<Word>(), 128);
    }

    #[test]
    fn new_hints_start_in_different_words() {
        let set = TagSet::new(32).unwrap();
        let firsts: Vec<u32> = (0..5)
            .map(|_| set.get(&mut TagHint::default()).unwrap())
            .collect();
        // Words of 8: the fifth hint comes round to word 0 again.
        assert_eq!(firsts, [0, 8, 16, 24, 1]);
    }

    #[test]
    fn a_hint_follows_its_threads_tags() {
        let set = TagSet::new(32).unwrap();
        let mut hint = TagHint::default();
        assert_eq!(set.get(&mut hint), Some(0));
        assert_eq!(set.get(&mut hint), Some(1));
        set.put(0, &mut hint);
        // The tag just given back is tried first.
        assert_eq!(set.get(&mut hint), Some(0));
        assert_eq!(set.get(&mut hint), Some(2));
        // A full word sends the search on to the next one.
        for expected in 3..8 {
            assert_eq!(set.get(&mut hint), Some(expected));
        }
        assert_eq!(set.get(&mut hint), Some(8));
    }

    #[test]
    fn the_search_wraps_round_the_last_word() {
        let set = TagSet::new(65).unwrap();
        let mut hint = TagHint::default();
        let all: Vec<u32> = std::iter::from_fn(|| set.get(&mut hint)).collect();
        assert_eq!(all.len(), 65);
        set.put(3, &mut hint);
        set.put(64, &mut hint);
        // The hint is on 64, the last tag (a word of its own); past it the
        // search wraps to word 0.
        assert_eq!(set.get(&mut hint), Some(64));
        assert_eq!(set.get(&mut hint), Some(3));
        assert_eq!(set.get(&mut hint), None);
    }

    #[test]
    fn a_hint_from_a_deeper_set_is_reseeded() {
        let deep = TagSet::new(1000).unwrap();
        let shallow = TagSet::new(4).unwrap();
        let mut hint = TagHint::default();
        deep.put(deep.get(&mut hint).unwrap(), &mut hint);
        hint.next = Some(999);
        assert_eq!(shallow.get(&mut hint), Some(0));
    }

    #[test]
    fn the_set_is_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<TagSet>();
        shared::<TagHint>();
    }

    /// Four threads take and give back tags on a set shallower than their
    /// demand; each marks the tag it holds and checks nobody else marked it.
    /// The outcome does not depend on how the threads are scheduled.
    #[test]
    fn threads_never_share_a_tag() {
        let set = Arc::new(TagSet::new(6).unwrap());
        let held: Arc<Vec<AtomicBool>> = Arc::new((0..6).map(|_| AtomicBool::new(false)).collect());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let set = Arc::clone(&set);
                let held = Arc::clone(&held);
                std::thread::spawn(move || {
                    let mut hint = TagHint::default();
                    let mut mine = Vec::new();
                    for round in 0..20_000u32 {
                        if round % 3 != 2 {
                            if let Some(tag) = set.get(&mut hint) {
                                assert!(!held[tag as usize].swap(true, Ordering::Relaxed));
                                mine.push(tag);
                            }
                        } else if let Some(tag) = mine.pop() {
                            assert!(held[tag as usize].swap(false, Ordering::Relaxed));
                            set.put(tag, &mut hint);
                        }
                        while mine.len() > 2 {
                            let tag = mine.remove(0);
                            assert!(held[tag as usize].swap(false, Ordering::Relaxed));
                            set.put(tag, &mut hint);
                        }
                    }
                    for tag in mine {
                        assert!(held[tag as usize].swap(false, Ordering::Relaxed));
                        set.put(tag, &mut hint);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(set.in_use(), 0);
        drain_and_refill(&set);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "put back but not taken")]
    fn putting_back_a_free_tag_is_caught() {
        let set = TagSet::new(8).unwrap();
        set.put(3, &mut TagHint::default());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "put back into a set of depth 8")]
    fn putting_back_a_tag_beyond_the_depth_is_caught() {
        let set = TagSet::new(8).unwrap();
        set.put(8, &mut TagHint::default());
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// Runs `body` under loom, with at most `preemptions` preemptions per
    /// interleaving (`None`: every interleaving) unless
    /// `LOOM_MAX_PREEMPTIONS` says otherwise.
    fn check(preemptions: Option<usize>, body: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = preemptions;
        }
        builder.check(body);
    }

    /// Who holds each tag, as loom sees it: a holder count that must go
    /// 0 → 1 → 0, and a cell standing for the request slot the tag names,
    /// touched by every holder. Loom fails the model if two holders touch
    /// the slot without the first's `put` happening before the second's
    /// `get`.
    struct Holders {
        count: Vec<AtomicU32>,
        slot: Vec<UnsafeCell<u32>>,
    }

    impl Holders {
        fn new(depth: u32) -> Holders {
            Holders {
                count: (0..depth).map(|_| AtomicU32::new(0)).collect(),
                slot: (0..depth).map(|_| UnsafeCell::new(0)).collect(),
            }
        }

        fn take(&self, tag: u32) {
            let i = tag as usize;
            assert_eq!(
                self.count[i].fetch_add(1, Ordering::Relaxed),
                0,
                "tag {tag} held twice"
            );
            self.slot[i].with_mut(|_| ());
        }

        fn give(&self, tag: u32) {
            let i = tag as usize;
            self.slot[i].with_mut(|_| ());
            assert_eq!(
                self.count[i].fetch_sub(1, Ordering::Relaxed),
                1,
                "tag {tag} not held"
            );
        }
    }

    /// `threads` threads each take and give back `rounds` times, holding up
    /// to `hold` tags at once; then every tag is free and can be taken.
    fn run(
        set: fn() -> TagSet,
        threads: usize,
        rounds: usize,
        hold: usize,
        preemptions: Option<usize>,
    ) {
        check(preemptions, move || {
            let set = Arc::new(set());
            let depth = set.depth();
            let holders = Arc::new(Holders::new(depth));
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let set = Arc::clone(&set);
                    let holders = Arc::clone(&holders);
                    loom::thread::spawn(move || {
                        let mut hint = TagHint::default();
                        for _ in 0..rounds {
                            let mut mine = Vec::new();
                            for _ in 0..hold {
                                if let Some(tag) = set.get(&mut hint) {
                                    assert!(tag < depth);
                                    holders.take(tag);
                                    mine.push(tag);
                                }
                            }
                            assert!(set.in_use() <= depth);
                            for tag in mine {
                                holders.give(tag);
                                set.put(tag, &mut hint);
                            }
                        }
                    })
                })
                .collect();
            for handle in handles {
                handle.join().unwrap();
            }
            assert_eq!(set.in_use(), 0);
            let mut hint = TagHint::default();
            let mut all: Vec<u32> = std::iter::from_fn(|| set.get(&mut hint)).collect();
            all.sort_unstable();
            assert_eq!(all, (0..depth).collect::<Vec<_>>());
        });
    }

    #[test]
    fn loom_tags_two_threads_depth_two() {
        run(|| TagSet::new(2).unwrap(), 2, 2, 1, Some(5));
    }

    #[test]
    fn loom_tags_three_threads_depth_two() {
        run(|| TagSet::new(2).unwrap(), 3, 1, 1, Some(3));
    }

    #[test]
    fn loom_tags_two_threads_depth_three_over_two_words() {
        // Words of 2 bits: tags 0 and 1 in word 0, tag 2 alone in word 1.
        // Each thread wants two at once, so they run the set dry.
        run(|| TagSet::with_shift(3, 1), 2, 1, 2, Some(5));
    }

    #[test]
    fn loom_tags_three_threads_depth_three_over_two_words() {
        run(|| TagSet::with_shift(3, 1), 3, 1, 1, Some(3));
    }
}
