//! Intrusive, allocation-free index structures over `u32` handles: the lists,
//! trees and slabs that the queue and schedulers thread requests through.
//!
//! Handles are dense indexes (request tags, bio slots). Link storage is owned
//! by the structure and sized once, so no operation on the hot path allocates.
//! What the roots have alike (`len`, `is_empty`, `Default`) comes from one
//! macro here, `counted_root!`.

/// What every root here (a list's head, a tree's root) has alike: `len` and
/// `is_empty` from its `len` count of handles, and `Default` as its `EMPTY`.
/// `$where` says where the handles are ("on the list", "in the tree").
macro_rules! counted_root {
    ($root:ident, $where:literal) => {
        impl $root {
            #[doc = concat!("Whether no handle is ", $where, ".")]
            #[inline]
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            #[doc = concat!("Number of handles ", $where, ".")]
            #[inline]
            pub fn len(&self) -> usize {
                self.len as usize
            }
        }

        impl Default for $root {
            #[inline]
            fn default() -> $root {
                $root::EMPTY
            }
        }
    };
}

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
