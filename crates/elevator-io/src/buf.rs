//! Buffers that the kernel reads and writes while I/O is in flight.
//!
//! A caller hands its buffers to the engine *by value* with a request and gets
//! them back, by value, in the request's completion: while the engine owns a
//! buffer, nobody else can touch or free it, and once the completion is
//! delivered the engine holds nothing. That is how "no buffer is held after
//! completion, on any path" is kept by construction rather than by care.
//!
//! [`IoBuf`] is the contract a buffer type signs; [`AlignedBuf`] is the
//! buffer to use for O_DIRECT (allocated at the alignment the device asks
//! for), and [`Slice`] names part of another buffer (for example to build a
//! misaligned segment on purpose).

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use thiserror::Error;

/// Memory the engine may hand to a device for the length of an I/O.
///
/// # Safety
///
/// An implementation promises that, for as long as the value lives:
/// - `as_mut_ptr()` and `as_ptr()` return the same address every time,
///   `len()` the same length, and the `len()` bytes from that address are
///   valid for reads and writes;
/// - moving the value does not move that memory (it lives on the heap or
///   elsewhere outside the value), and nothing else reads or writes it while
///   the value is owned by someone else;
/// - the memory stays allocated until the value is dropped.
pub unsafe trait IoBuf: 'static {
    /// Where the memory starts.
    fn as_ptr(&self) -> *const u8;
    /// Where the memory starts, for writing into.
    fn as_mut_ptr(&mut self) -> *mut u8;
    /// How many bytes it has.
    fn len(&self) -> usize;
    /// Whether it has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An allocation failed, or was asked for something impossible.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BufError {
    /// The alignment is not a power of two, or the size overflows with it.
    #[error("cannot lay out {len} bytes aligned to {align}: the alignment must be a power of two")]
    Layout {
        /// Bytes asked for.
        len: usize,
        /// Alignment asked for.
        align: usize,
    },
    /// The allocator had no memory.
    #[error("out of memory allocating {len} bytes")]
    OutOfMemory {
        /// Bytes asked for.
        len: usize,
    },
}

/// Buffers of at least this many bytes are mapped from the kernel (zeroed
/// lazily, page by page, as they are first touched) instead of allocated and
/// cleared up front.
const MAP_THRESHOLD: usize = 1 << 20;

/// A zero-filled heap buffer whose address is a multiple of its alignment.
///
/// Small buffers come from the allocator; large ones (1 MiB and up) are an
/// anonymous memory mapping, so a 1 GiB memory device costs nothing until
/// its pages are used.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    align: usize,
    /// The whole mapping (start and length), for a mapped buffer.
    map: Option<(NonNull<u8>, usize)>,
}

// SAFETY: an AlignedBuf owns its allocation outright (like a Box<[u8]>); no
// other value refers to it, so moving it to another thread or sharing `&` to
// it is as safe as for a Box.
unsafe impl Send for AlignedBuf {}
// SAFETY: `&AlignedBuf` only gives out `&[u8]`, as `&Box<[u8]>` does.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// `len` zero bytes at an address that is a multiple of `align` (a power
    /// of two). Allocation failure is an error, never an abort.
    pub fn new(len: usize, align: usize) -> Result<AlignedBuf, BufError> {
        let layout =
            Layout::from_size_align(len, align).map_err(|_| BufError::Layout { len, align })?;
        if len == 0 {
            // No allocation: a dangling pointer at the alignment, as
            // `NonNull::dangling` does for a type of that alignment.
            let ptr = NonNull::new(align as *mut u8).ok_or(BufError::Layout { len, align })?;
            return Ok(AlignedBuf {
                ptr,
                len,
                align,
                map: None,
            });
        }
        if len >= MAP_THRESHOLD {
            return AlignedBuf::mapped(len, align);
        }
        // SAFETY: the layout has a non-zero size (checked above).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(BufError::OutOfMemory { len })?;
        Ok(AlignedBuf {
            ptr,
            len,
            align,
            map: None,
        })
    }

    /// An anonymous mapping of at least `len` bytes, with the buffer at an
    /// `align` boundary inside it.
    fn mapped(len: usize, align: usize) -> Result<AlignedBuf, BufError> {
        // Mappings start on a page; for a larger alignment, map the slack
        // too and start the buffer at the first boundary.
        let slack = align.saturating_sub(4096);
        let map_len = len
            .checked_add(slack)
            .ok_or(BufError::Layout { len, align })?;
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // named (the address is the kernel's choice).
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(BufError::OutOfMemory { len });
        }
        let base = NonNull::new(raw.cast::<u8>()).ok_or(BufError::OutOfMemory { len })?;
        let offset = (align - (base.as_ptr() as usize) % align) % align;
        // SAFETY: `offset <= slack`, so `offset + len <= map_len`: the buffer
        // lies inside the mapping.
        let ptr = unsafe { base.add(offset) };
        Ok(AlignedBuf {
            ptr,
            len,
            align,
            map: Some((base, map_len)),
        })
    }

    /// A buffer holding a copy of `data`, aligned to `align`.
    pub fn copy_from(data: &[u8], align: usize) -> Result<AlignedBuf, BufError> {
        let mut b = AlignedBuf::new(data.len(), align)?;
        b.copy_from_slice(data);
        Ok(b)
    }

    /// The alignment it was allocated with.
    pub fn align(&self) -> usize {
        self.align
    }

    /// Whether the buffer is an anonymous mapping of its own (1 MiB and
    /// up), whose whole pages can be handed back to the kernel with
    /// `madvise(MADV_DONTNEED)` (they then read as zeroes).
    pub(crate) fn is_mapped(&self) -> bool {
        self.map.is_some()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        if let Some((base, map_len)) = self.map {
            // SAFETY: the mapping was made in `mapped` with this start and
            // length and is unmapped only here, once.
            unsafe { libc::munmap(base.as_ptr().cast(), map_len) };
            return;
        }
        // SAFETY: allocated in `new` with exactly this size and alignment
        // (which `new` checked form a valid layout), and not freed before.
        unsafe {
            alloc::dealloc(
                self.ptr.as_ptr(),
                Layout::from_size_align_unchecked(self.len, self.align),
            );
        }
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` initialised (zeroed at allocation)
        // bytes for as long as `self` lives, and `&self` keeps it shared.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("addr", &self.ptr)
            .field("len", &self.len)
            .field("align", &self.align)
            .finish()
    }
}

// SAFETY: the allocation belongs to the value, is freed only on drop, and
// does not move when the value moves.
unsafe impl IoBuf for AlignedBuf {
    fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.len
    }
}

// SAFETY: a Vec's heap memory does not move when the Vec moves, and the
// engine never grows or shrinks it (it has no access to the Vec's methods
// through this trait). `Vec::as_ptr` / `Vec::as_mut_ptr` are used, not the
// slice's: they promise not to create a reference to the contents, which
// would assert exclusive access to bytes a device may be writing through a
// pointer taken earlier (the engine takes one per bio of a buffer).
unsafe impl IoBuf for Vec<u8> {
    fn as_ptr(&self) -> *const u8 {
        Vec::as_ptr(self)
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        Vec::as_mut_ptr(self)
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
}

// SAFETY: as for Vec: boxed memory stays put when the box moves. The
// pointers are taken as raw places (`&raw`), without a reference to the
// contents in between, for the reason given for Vec.
unsafe impl IoBuf for Box<[u8]> {
    fn as_ptr(&self) -> *const u8 {
        (&raw const **self).cast()
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        (&raw mut **self).cast()
    }
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
}

/// Part of a buffer: `len` bytes from `start`. The whole buffer comes back
/// with [`Slice::into_inner`].
#[derive(Debug)]
pub struct Slice<B> {
    buf: B,
    start: usize,
    len: usize,
}

impl<B: IoBuf> Slice<B> {
    /// Bytes `start..start + len` of `buf`, or `None` if that is not inside it.
    pub fn new(buf: B, start: usize, len: usize) -> Result<Slice<B>, B> {
        match start.checked_add(len) {
            Some(end) if end <= buf.len() => Ok(Slice { buf, start, len }),
            _ => Err(buf),
        }
    }

    /// The buffer the slice was cut from.
    pub fn into_inner(self) -> B {
        self.buf
    }

    /// Where the slice starts within its buffer.
    pub fn start(&self) -> usize {
        self.start
    }
}

impl<B: IoBuf> Deref for Slice<B> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `start + len <= buf.len()` (checked in `new`), and the
        // buffer's memory is valid for its length while `self` lives.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr().add(self.start), self.len) }
    }
}

impl<B: IoBuf> DerefMut for Slice<B> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.buf.as_mut_ptr().add(self.start), self.len) }
    }
}

// SAFETY: the slice's memory is part of `buf`'s, which keeps every promise
// of the trait; the range is inside it (checked in `new`).
unsafe impl<B: IoBuf> IoBuf for Slice<B> {
    fn as_ptr(&self) -> *const u8 {
        // SAFETY: `start <= buf.len()`, so the result is within or one past
        // the buffer's allocation.
        unsafe { self.buf.as_ptr().add(self.start) }
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        // SAFETY: as in `as_ptr`.
        unsafe { self.buf.as_mut_ptr().add(self.start) }
    }
    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for align in [512, 4096, 65536] {
            let b = AlignedBuf::new(8192, align).expect("alloc");
            assert_eq!(b.as_ptr() as usize % align, 0);
            assert!(b.iter().all(|&x| x == 0));
        }
        let empty = AlignedBuf::new(0, 4096).expect("alloc");
        assert_eq!(empty.len(), 0);
        assert_eq!(empty.as_ptr() as usize % 4096, 0);
    }

    #[test]
    fn large_buffers_are_mapped_aligned_and_zeroed() {
        for align in [4096, 2 << 20] {
            let mut b = AlignedBuf::new(3 << 20, align).expect("map");
            assert_eq!(b.as_ptr() as usize % align, 0);
            assert!(b.iter().step_by(4096).all(|&x| x == 0));
            b[(3 << 20) - 1] = 7;
            assert_eq!(b[(3 << 20) - 1], 7);
        }
    }

    #[test]
    fn bad_layouts_are_errors() {
        assert!(matches!(
            AlignedBuf::new(10, 3),
            Err(BufError::Layout { .. })
        ));
        assert!(matches!(
            AlignedBuf::new(usize::MAX - 10, 4096),
            Err(BufError::Layout { .. })
        ));
    }

    #[test]
    fn slices_stay_inside() {
        let b = AlignedBuf::copy_from(&[1, 2, 3, 4], 8).expect("alloc");
        let s = Slice::new(b, 1, 2).expect("inside");
        assert_eq!(&*s, &[2, 3]);
        let b = s.into_inner();
        assert!(Slice::new(b, 3, 2).is_err());
    }
}
