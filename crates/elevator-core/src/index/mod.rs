//! Intrusive, allocation-free index structures over `u32` handles: the lists,
//! trees and slabs that the queue and schedulers thread requests through.
//!
//! Handles are dense indexes (request tags, bio slots). Link storage is owned
//! by the structure and sized once, so no operation on the hot path allocates.

pub mod btree;
pub mod idmap;
pub mod list;
pub mod rbtree;
pub mod slab;

/// The "no handle" value shared by every structure here.
pub const NIL: u32 = u32::MAX;

pub use btree::{BTreeForest, BTreeRoot};
pub use idmap::IdMap;
pub use list::{ListHead, ListLinks};
pub use rbtree::{RbForest, RbRoot};
pub use slab::Slab;
