//! The locks a memory store shared by several device handles takes around
//! every copy its handles make in or out of its bytes ([`ChunkLocks`]): one
//! per 64 KiB chunk, each held only for the copy of that chunk's part of one
//! I/O (a `memcpy` of at most 64 KiB, never across a system call), so that
//! two threads never touch the same bytes at once and the copies can be
//! plain `memcpy`s rather than word-by-word atomic accesses.
//!
//! A copy takes one chunk's lock at a time, and gives it back before it
//! takes the next: no thread ever holds two, so they cannot deadlock. Two
//! overlapping I/Os on two threads then interleave chunk by chunk: each
//! chunk holds one's bytes or the other's, as two hosts writing one block
//! of a shared disk at once may leave it.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::device::DataSegment;

/// The bytes one lock covers.
pub(super) const CHUNK: usize = 64 << 10;

/// Spins on a held lock before the thread yields its CPU (the holder, in
/// the middle of a copy of at most [`CHUNK`] bytes, may have lost its own).
const SPINS: u32 = 128;

/// One lock per [`CHUNK`] bytes of a store.
pub(super) struct ChunkLocks {
    locks: Box<[AtomicBool]>,
}

/// A chunk's lock, held: given back when dropped (even if the copy
/// panicked).
struct Held<'a>(&'a AtomicBool);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        // Release: the copy made under the lock happens before the next
        // holder's.
        self.0.store(false, Ordering::Release);
    }
}

impl ChunkLocks {
    /// Locks for a store of `len` bytes, none held.
    pub(super) fn new(len: usize) -> ChunkLocks {
        ChunkLocks {
            locks: (0..len.div_ceil(CHUNK))
                .map(|_| AtomicBool::new(false))
                .collect(),
        }
    }

    /// Take the lock of the chunk that holds byte `at` (of the store), or
    /// `None` if `at` is past the store's end.
    fn take(&self, at: usize) -> Option<Held<'_>> {
        let lock = self.locks.get(at / CHUNK)?;
        let mut spins = 0;
        // Acquire: the previous holder's copy happens before ours.
        while lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while lock.load(Ordering::Relaxed) {
                if spins < SPINS {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        Some(Held(lock))
    }

    /// Copy between the store's bytes from `at` on and `segs`, in order:
    /// into the segments if `into_segs`, else into the store; each chunk's
    /// part under its lock. Returns `false`, having copied only what lies
    /// inside the store, if the segments run past its end.
    ///
    /// # Safety
    ///
    /// `base` is the store's first byte; each segment is valid for its
    /// length (for writes if `into_segs`, for reads if not) and overlaps no
    /// byte of the store it is copied with; every other access Rust code
    /// makes to the store's bytes meanwhile is made under these locks.
    pub(super) unsafe fn copy(
        &self,
        base: *mut u8,
        mut at: usize,
        segs: &[DataSegment],
        into_segs: bool,
    ) -> bool {
        for seg in segs {
            let len = seg.len as usize;
            let mut done = 0;
            while done < len {
                let n = (len - done).min(CHUNK - at % CHUNK);
                let Some(_held) = self.take(at) else {
                    return false;
                };
                // SAFETY: `at..at + n` lies in the chunk whose lock is held
                // (which exists, so `at` is inside the store's chunks; the
                // caller's range is inside the store); the segment is valid
                // for `done + n <= len` bytes and overlaps nothing here (the
                // caller's promise); no other Rust access to these bytes
                // runs while the lock is held.
                unsafe {
                    let (store, mem) = (base.add(at), seg.addr.add(done));
                    if into_segs {
                        std::ptr::copy_nonoverlapping(store, mem, n);
                    } else {
                        std::ptr::copy_nonoverlapping(mem, store, n);
                    }
                }
                (at, done) = (at + n, done + n);
            }
        }
        true
    }

    /// Run `f` on each part of `range` (of the store) that lies in one
    /// chunk, under that chunk's lock.
    pub(super) fn each(
        &self,
        range: std::ops::Range<usize>,
        mut f: impl FnMut(std::ops::Range<usize>),
    ) {
        let mut at = range.start;
        while at < range.end {
            let end = range.end.min((at / CHUNK + 1) * CHUNK);
            let Some(_held) = self.take(at) else {
                return;
            };
            f(at..end);
            at = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_moves_every_byte_through_its_chunks_in_order() {
        let len = 3 * CHUNK;
        let locks = ChunkLocks::new(len);
        let mut store = vec![0u8; len];
        let mut a: Vec<u8> = (0..CHUNK).map(|i| (i % 251) as u8).collect();
        let mut b: Vec<u8> = (0..CHUNK + 512).map(|i| (i % 241) as u8).collect();
        let segs = [
            DataSegment {
                addr: a.as_mut_ptr(),
                len: a.len() as u32,
            },
            DataSegment {
                addr: b.as_mut_ptr(),
                len: b.len() as u32,
            },
        ];
        let at = CHUNK / 2;
        // SAFETY: the segments are the two vectors, the store a third.
        assert!(unsafe { locks.copy(store.as_mut_ptr(), at, &segs, false) });
        assert_eq!(&store[at..at + a.len()], &a[..]);
        assert_eq!(&store[at + a.len()..at + a.len() + b.len()], &b[..]);
        assert!(store[..at].iter().all(|&x| x == 0));
        let mut back = vec![0u8; a.len() + b.len()];
        let out = [DataSegment {
            addr: back.as_mut_ptr(),
            len: back.len() as u32,
        }];
        // SAFETY: as above.
        assert!(unsafe { locks.copy(store.as_mut_ptr(), at, &out, true) });
        assert_eq!(&back[..a.len()], &a[..]);
        assert_eq!(&back[a.len()..], &b[..]);
        // Past the end: only what fits is copied, and it says so.
        // SAFETY: as above.
        assert!(!unsafe { locks.copy(store.as_mut_ptr(), 2 * CHUNK, &out, false) });
    }

    #[test]
    fn each_visits_the_parts_in_one_chunk_each() {
        let locks = ChunkLocks::new(4 * CHUNK);
        let mut parts = Vec::new();
        locks.each(CHUNK - 8..3 * CHUNK + 16, |r| parts.push(r));
        assert_eq!(
            parts,
            [
                CHUNK - 8..CHUNK,
                CHUNK..2 * CHUNK,
                2 * CHUNK..3 * CHUNK,
                3 * CHUNK..3 * CHUNK + 16
            ]
        );
    }

    #[test]
    fn threads_copying_the_same_chunk_take_turns() {
        let locks = std::sync::Arc::new(ChunkLocks::new(CHUNK));
        let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let inside = std::sync::Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (locks, counter, inside) = (locks.clone(), counter.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        locks.each(0..8, |_| {
                            assert!(!inside.swap(true, Ordering::AcqRel), "two holders");
                            counter.fetch_add(1, Ordering::Relaxed);
                            inside.store(false, Ordering::Release);
                        });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(counter.load(Ordering::Relaxed), 8000);
    }
}
