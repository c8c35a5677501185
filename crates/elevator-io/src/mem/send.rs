//! Windows lent for the kernel to read ([`LentSlice`], from
//! [`MemDevice::lend`](super::MemDevice::lend)) and the vectored socket send
//! that reads them ([`SendList`]): a reply goes from a memory device's
//! bytes to a socket in one copy, the kernel's, even while other threads'
//! handles copy in and out of the same store.
//!
//! While its store is shared, no Rust code may read a lent window's bytes
//! (another thread may be writing them, under a chunk lock that a window
//! does not hold), so a [`LentSlice`] gives out only pointers ([`IoBuf`],
//! for a device I/O on its own place, which copies nothing) and its place
//! in a [`SendList`], which hands it to `sendmsg` as an `iovec`: the
//! kernel's copy is no access of this program's, and sees each byte old or
//! new.

use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::{IoMem, MemSlice};
use crate::buf::IoBuf;

/// A window on a memory device's bytes lent for the kernel to read: see the
/// module. Its bytes can be read in this process only while its store has
/// one handle ([`LentSlice::bytes`]).
#[derive(Debug)]
pub struct LentSlice(pub(super) MemSlice);

impl LentSlice {
    /// Its bytes, if Rust code may read them now: while its store has a
    /// single handle (no other thread touches it, and none can be made while
    /// a window is out); `None` while the store is shared.
    pub fn bytes(&self) -> Option<&[u8]> {
        if self
            .0
            .store
            .handles
            .load(std::sync::atomic::Ordering::Acquire)
            > 1
        {
            return None;
        }
        Some(&self.0)
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.0.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }
}

// SAFETY: forwards to the window's own (`MemSlice`'s) promises; Rust code
// reaches the bytes only through these pointers (whose use is unsafe) or
// `bytes`, which lends them only while the store is not shared.
unsafe impl IoBuf for LentSlice {
    fn as_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }
    fn len(&self) -> usize {
        self.0.len
    }
}

/// The parts of one vectored socket send, up to [`SendList::MAX`]: bytes of
/// this process's, and parts of I/O memory of any kind (lent windows
/// included), which it never reads itself. It borrows every part for `'a`.
pub struct SendList<'a> {
    iov: [libc::iovec; SendList::MAX],
    n: usize,
    _parts: PhantomData<&'a [u8]>,
}

impl Default for SendList<'_> {
    fn default() -> Self {
        SendList {
            iov: [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; SendList::MAX],
            n: 0,
            _parts: PhantomData,
        }
    }
}

impl<'a> SendList<'a> {
    /// The most parts one send takes.
    pub const MAX: usize = 64;

    /// An empty list.
    pub fn new() -> SendList<'a> {
        SendList::default()
    }

    /// Parts so far.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it has no parts.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Add `bytes`: whether there was room.
    pub fn push(&mut self, bytes: &'a [u8]) -> bool {
        self.add(bytes.as_ptr(), bytes.len())
    }

    /// Add `len` bytes of `mem` from byte `from` (clamped to its end):
    /// whether there was room.
    pub fn push_mem(&mut self, mem: &'a IoMem, from: usize, len: usize) -> bool {
        let from = from.min(mem.len());
        let len = len.min(mem.len() - from);
        // `from` is within the memory (clamped above): the pointer stays
        // inside it or one past its end.
        self.add(mem.as_ptr().wrapping_add(from), len)
    }

    fn add(&mut self, base: *const u8, len: usize) -> bool {
        if self.n == SendList::MAX {
            return false;
        }
        self.iov[self.n] = libc::iovec {
            iov_base: base.cast_mut().cast(),
            iov_len: len,
        };
        self.n += 1;
        true
    }

    /// Send the parts, in order, on socket `fd` (`sendmsg`, without
    /// SIGPIPE): how many bytes it took (a non-blocking socket may take
    /// fewer than all, or answer `WouldBlock`).
    pub fn send(&self, fd: BorrowedFd<'_>) -> io::Result<usize> {
        // SAFETY: an all-zero msghdr is a valid empty one.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = self.iov.as_ptr().cast_mut();
        msg.msg_iovlen = self.n as _;
        // SAFETY: every iovec describes bytes borrowed for `'a` (which
        // outlives `&self`): a slice of this process's, or a part of an
        // I/O memory inside it (checked by `push_mem`); the kernel only
        // reads them, and `msg` points at `self.iov`, alive for the call.
        let sent = unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(sent as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::{MemDevice, MemOptions};
    use std::io::Read;
    use std::os::fd::AsFd;

    #[test]
    fn a_send_list_sends_its_parts_in_order() {
        let (a, mut b) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        let dev = MemDevice::new(1 << 20, MemOptions::default()).expect("device");
        let lent = IoMem::Lent(dev.lend(4096, 512).expect("lent"));
        let mut list = SendList::new();
        assert!(list.push(b"head"));
        assert!(list.push_mem(&lent, 500, 100), "clamped to its end");
        assert!(list.push(b"tail"));
        assert_eq!(list.len(), 3);
        assert_eq!(list.send(a.as_fd()).expect("sent"), 4 + 12 + 4);
        let mut got = [1u8; 20];
        b.read_exact(&mut got).expect("read");
        assert_eq!(&got[..4], b"head");
        assert_eq!(&got[4..16], &[0u8; 12]);
        assert_eq!(&got[16..], b"tail");
    }

    #[test]
    fn a_list_takes_at_most_its_maximum() {
        let mut list = SendList::new();
        for _ in 0..SendList::MAX {
            assert!(list.push(b"x"));
        }
        assert!(!list.push(b"x"));
        assert_eq!(list.len(), SendList::MAX);
    }

    #[test]
    fn lent_bytes_are_readable_only_while_the_store_is_not_shared() {
        let dev = MemDevice::new(1 << 20, MemOptions::default()).expect("device");
        let other = dev.share().expect("shared");
        let lent = dev.lend(0, 512).expect("lent while shared");
        assert!(
            lent.bytes().is_none(),
            "shared: another thread may write it"
        );
        drop(other);
        assert_eq!(lent.bytes().map(<[u8]>::len), Some(512), "alone again");
        assert!(dev.share().is_err(), "no share while a window is out");
    }
}
