//! PLACEHOLDER (replaced by the tags branch): a hand-off with an eventfd.

use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// Items for one owner thread.
pub struct Inbox<T> {
    items: Mutex<Vec<T>>,
    sleeping: AtomicBool,
    fd: OwnedFd,
}

impl<T> Inbox<T> {
    /// A new inbox.
    pub fn new() -> std::io::Result<Inbox<T>> {
        // SAFETY-free: eventfd via libc returns a new descriptor or -1.
        let raw = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Inbox {
            items: Mutex::new(Vec::new()),
            sleeping: AtomicBool::new(false),
            // SAFETY: a fresh descriptor we own.
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
        })
    }
    /// Push.
    pub fn push(&self, item: T) {
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(item);
        if self.sleeping.swap(false, Ordering::SeqCst) {
            let one = 1u64.to_ne_bytes();
            let _ = rustix::io::write(&self.fd, &one);
        }
    }
    /// Drain.
    pub fn drain(&self, out: &mut Vec<T>) {
        out.append(&mut self.items.lock().unwrap_or_else(PoisonError::into_inner));
    }
    /// Announce sleep.
    pub fn prepare_sleep(&self) -> bool {
        self.sleeping.store(true, Ordering::SeqCst);
        if !self.is_empty() {
            self.sleeping.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }
    /// After sleep.
    pub fn woke(&self) {
        self.sleeping.store(false, Ordering::SeqCst);
        let mut b = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut b);
    }
    /// The fd.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
    /// Empty?
    pub fn is_empty(&self) -> bool {
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }
}
