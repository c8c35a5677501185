//! Reusable data buffers for requests in flight: power-of-two size classes
//! from 4 KiB to the request cap, 4096-byte aligned (enough for any device's
//! O_DIRECT), kept for reuse up to a byte budget per class and one for all
//! classes ([`Pool::keeping`]). A request takes
//! the smallest class that fits and sees exactly its length (a [`Slice`]).
//! The buffer lists (`Vec`s the engine takes a request's buffers in) are
//! pooled too, so a request in the steady state allocates nothing. Requests
//! on a memory export use windows on its memory instead of buffers.

use elevator_io::{AlignedBuf, BufError, IoMem, Slice};

/// A request's data: a pooled buffer, or a window on a memory export.
pub type Buf = IoMem;

const MIN_SHIFT: u32 = 12;
const ALIGN: usize = 4096;
/// Bytes of free buffers kept per size class.
const KEEP_BYTES: usize = 64 << 20;
/// Bytes of free buffers kept in all, unless told otherwise.
const KEEP_TOTAL: usize = 64 << 20;

/// Free buffers by size class, and free buffer lists.
#[derive(Debug)]
pub struct Pool {
    classes: Vec<Vec<AlignedBuf>>,
    lists: Vec<Vec<Buf>>,
    /// Bytes of the free buffers kept, and the most kept.
    kept: usize,
    keep: usize,
}

impl Default for Pool {
    fn default() -> Pool {
        Pool::keeping(KEEP_TOTAL)
    }
}

fn class_of(len: usize) -> usize {
    let size = len.max(1 << MIN_SHIFT).next_power_of_two();
    (size.trailing_zeros() - MIN_SHIFT) as usize
}

/// The bytes a buffer of `len` bytes takes: its size class.
pub fn alloc_size(len: usize) -> u64 {
    1u64 << (class_of(len) as u32 + MIN_SHIFT)
}

impl Pool {
    /// A pool that keeps at most `keep` bytes of free buffers in all (the
    /// memory it holds between requests).
    pub fn keeping(keep: usize) -> Pool {
        Pool {
            classes: Vec::new(),
            lists: Vec::new(),
            kept: 0,
            keep,
        }
    }

    /// Bytes of free buffers it keeps now.
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// A buffer of exactly `len` bytes (contents unspecified).
    pub fn get(&mut self, len: usize) -> Result<Buf, BufError> {
        let c = class_of(len);
        if c >= self.classes.len() {
            self.classes.resize_with(c + 1, Vec::new);
        }
        let buf = match self.classes[c].pop() {
            Some(b) => {
                self.kept -= b.len();
                b
            }
            None => AlignedBuf::new(1 << (c as u32 + MIN_SHIFT), ALIGN)?,
        };
        let slice = Slice::new(buf, 0, len).map_err(|_| BufError::Layout { len, align: ALIGN })?;
        Ok(IoMem::Buf(slice))
    }

    /// Give a buffer back (a window just goes).
    pub fn put(&mut self, buf: Buf) {
        let Some(b) = buf.into_buf() else {
            return;
        };
        let b = b.into_inner();
        let c = class_of(b.len());
        if c < self.classes.len()
            && (self.classes[c].len() + 1) * b.len() <= KEEP_BYTES.max(b.len())
            && self.kept + b.len() <= self.keep
        {
            self.kept += b.len();
            self.classes[c].push(b);
        }
    }

    /// An empty buffer list.
    pub fn list(&mut self) -> Vec<Buf> {
        self.lists.pop().unwrap_or_else(|| Vec::with_capacity(1))
    }

    /// Give a buffer list back, with whatever buffers it still holds.
    pub fn put_list(&mut self, mut list: Vec<Buf>) {
        for b in list.drain(..) {
            self.put(b);
        }
        if self.lists.len() < 4096 {
            self.lists.push(list);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_io::IoBuf;

    #[test]
    fn classes_and_reuse() {
        assert_eq!(class_of(1), 0);
        assert_eq!(class_of(4096), 0);
        assert_eq!(class_of(4097), 1);
        assert_eq!(class_of(32 << 20), 13);
        let mut p = Pool::default();
        let b = p.get(5000).expect("alloc");
        assert_eq!(b.len(), 5000);
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        let addr = b.as_ptr();
        p.put(b);
        let again = p.get(8192).expect("alloc");
        assert_eq!(again.as_ptr(), addr, "reused");
        assert_eq!(alloc_size(5000), 8192);
        assert_eq!(alloc_size(1), 4096);
    }

    #[test]
    fn what_it_keeps_is_bounded() {
        let mut p = Pool::keeping(3 << 20);
        let bufs: Vec<Buf> = (0..4).map(|_| p.get(1 << 20).expect("alloc")).collect();
        for b in bufs {
            p.put(b);
        }
        assert_eq!(p.kept(), 3 << 20, "three of the four kept");
        let _ = p.get(1 << 20).expect("alloc");
        assert_eq!(p.kept(), 2 << 20);
    }
}
