//! The synchronization types of [`tags`](crate::tags): the standard
//! library's, or loom's when the crate is built with `--cfg loom` for the
//! model checks (`scripts/loom`), so the same code runs in production and
//! under the model checker.
//!
//! Only the lock-free parts use this module; everything else in the crate
//! uses `std::sync` directly.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
