//! The synchronization types of [`tags`](crate::tags) and
//! [`inbox`](crate::inbox): the standard library's, or loom's when the crate
//! is built with `--cfg loom` for the model checks (`scripts/loom`), so the
//! same code runs in production and under the model checker.
//!
//! Only those two modules use it (their model checks need every atomic and
//! lock they share to be loom's); everything else in the crate
//! uses `std::sync` directly.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking over the data of a holder that panicked: every
/// critical section of the users of this module leaves its data whole
/// (a `Vec` push or swap completes or does not happen), so a poisoned lock
/// holds nothing broken.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
