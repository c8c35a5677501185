//! PLACEHOLDER (replaced by the lockstat branch): a named mutex.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// A named lock.
pub struct StatLock<T> {
    name: String,
    inner: Mutex<T>,
}

/// A held [`StatLock`].
pub type StatGuard<'a, T> = MutexGuard<'a, T>;

impl<T> StatLock<T> {
    /// A lock named `name` over `value`.
    pub fn new(name: impl Into<String>, value: T, _measure: bool) -> StatLock<T> {
        StatLock {
            name: name.into(),
            inner: Mutex::new(value),
        }
    }

    /// Take the lock.
    pub fn lock(&self) -> StatGuard<'_, T> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
}
