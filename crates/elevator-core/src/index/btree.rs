//! A B+tree forest of `u32` handles sorted by `u64` key, built for a
//! scheduler's sort structure: few dependent cache misses per search, removal
//! and neighbour steps by handle in O(1) searches, and no allocation once warm.
//!
//! Several trees ([`BTreeRoot`]) share one [`BTreeForest`]: node pools and the
//! per-handle records (its key and the leaf that holds it). Each handle is in
//! at most one tree at a time.
//!
//! - Leaves hold up to [`FANOUT`] `(key, handle)` entries in key order and are
//!   linked to their neighbours; inner nodes hold up to [`FANOUT`] children and
//!   the separators between them. Unused key slots hold `u64::MAX`, so a node
//!   is searched by counting keys below the target over the whole fixed-size
//!   array: branch-free, no dependence on the fill.
//! - Equal keys keep insertion order: an insert goes after every equal key.
//! - Invariant: every key in children `..=i` is `<=` separator `i`, which is
//!   `<=` every key in children `i+1..`.
//! - Removal never rebalances: a leaf (or inner node) is freed when it empties,
//!   and a root with one child is replaced by that child. Height still grows
//!   only when a full root splits, so it stays logarithmic in the most entries
//!   the tree ever held. A scheduler's sweep drains leaves in key order, which
//!   suits this well.
//!
//! Costs with fanout 32: a search touches `height + 1` nodes (3 at 4096
//! entries); `remove`, `next`, `prev` and `key` go straight to the handle's
//! leaf. Nodes come from pools that grow only past their high-water mark.

use super::NIL;

/// Entries per leaf and children per inner node.
pub const FANOUT: usize = 32;
const HALF: usize = FANOUT / 2;
const MAX_KEY: u64 = u64::MAX;

#[derive(Clone, Debug)]
struct Leaf {
    keys: [u64; FANOUT],
    ids: [u32; FANOUT],
    len: u32,
    parent: u32,
    prev: u32,
    next: u32,
}

#[derive(Clone, Debug)]
struct Inner {
    /// `seps[i]` lies between `children[i]` and `children[i + 1]`.
    seps: [u64; FANOUT],
    children: [u32; FANOUT],
    len: u32,
    parent: u32,
}

const EMPTY_LEAF: Leaf = Leaf {
    keys: [MAX_KEY; FANOUT],
    ids: [NIL; FANOUT],
    len: 0,
    parent: NIL,
    prev: NIL,
    next: NIL,
};

const EMPTY_INNER: Inner = Inner {
    seps: [MAX_KEY; FANOUT],
    children: [NIL; FANOUT],
    len: 0,
    parent: NIL,
};

/// One tree of a [`BTreeForest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BTreeRoot {
    node: u32,
    /// 0: `node` is a leaf.
    height: u32,
    len: u32,
}

impl BTreeRoot {
    /// An empty tree.
    pub const EMPTY: BTreeRoot = BTreeRoot {
        node: NIL,
        height: 0,
        len: 0,
    };
}

counted_root!(BTreeRoot, "in the tree");

/// Node pools and per-handle records shared by many [`BTreeRoot`]s.
#[derive(Clone, Debug)]
pub struct BTreeForest {
    leaves: Vec<Leaf>,
    inners: Vec<Inner>,
    free_leaves: Vec<u32>,
    free_inners: Vec<u32>,
    /// Per handle: the leaf holding it, or NIL.
    leaf_of: Vec<u32>,
    /// Per handle: its key.
    keys: Vec<u64>,
    /// Bumped by every split, free and collapse: separators are stable between
    /// bumps, so a remembered leaf's key range stays true.
    shape: u64,
    /// The last leaf a search ended in, with the keys it covers.
    finger: std::cell::Cell<Finger>,
}

/// A remembered search result: `leaf` of the tree rooted at `root` holds
/// every key `k` with `lo <= k < hi` that an insert would place, as long as
/// the forest's `shape` is still `shape`.
#[derive(Clone, Copy, Debug)]
struct Finger {
    root: u32,
    height: u32,
    shape: u64,
    leaf: u32,
    lo: u64,
    hi: u64,
}

const NO_FINGER: Finger = Finger {
    root: NIL,
    height: 0,
    shape: u64::MAX,
    leaf: NIL,
    lo: 0,
    hi: 0,
};

/// Number of keys in sorted `keys` strictly below `key` (`strict`) or at most
/// `key`.
///
/// With SSE4.2 (x86-64-v2) a branch-free count over the whole node: its loads
/// are independent, and the compiler turns it into 64-bit vector compares.
/// Without, a branch-free binary search (5 halving steps and a last check),
/// since 64-bit compares would otherwise be emulated one lane at a time.
#[inline(always)]
fn count_below(keys: &[u64; FANOUT], key: u64, strict: bool) -> usize {
    if cfg!(any(target_feature = "sse4.2", not(target_arch = "x86_64"))) {
        let mut n = 0;
        for &k in keys {
            n += usize::from(if strict { k < key } else { k <= key });
        }
        return n;
    }
    let mut n = 0;
    let mut step = FANOUT / 2;
    while step > 0 {
        let k = keys[n + step - 1];
        let below = if strict { k < key } else { k <= key };
        n += usize::from(below) * step;
        step /= 2;
    }
    let k = keys[n.min(FANOUT - 1)];
    n + usize::from(n < FANOUT && (if strict { k < key } else { k <= key }))
}

impl BTreeForest {
    /// A forest for handles `0..capacity`, all detached.
    pub fn new(capacity: usize) -> BTreeForest {
        BTreeForest {
            leaves: Vec::new(),
            inners: Vec::new(),
            free_leaves: Vec::new(),
            free_inners: Vec::new(),
            leaf_of: vec![NIL; capacity],
            keys: vec![0; capacity],
            shape: 0,
            finger: std::cell::Cell::new(NO_FINGER),
        }
    }

    /// Number of handles.
    pub fn capacity(&self) -> usize {
        self.leaf_of.len()
    }

    /// Raise the number of handles; new ones are detached.
    pub fn grow(&mut self, capacity: usize) {
        if capacity > self.leaf_of.len() {
            self.leaf_of.resize(capacity, NIL);
            self.keys.resize(capacity, 0);
        }
    }

    /// Whether `id` is in some tree.
    #[inline]
    pub fn is_linked(&self, id: u32) -> bool {
        self.leaf_of[id as usize] != NIL
    }

    /// The key `id` was inserted with.
    #[inline]
    pub fn key(&self, id: u32) -> u64 {
        self.keys[id as usize]
    }

    fn alloc_leaf(&mut self) -> u32 {
        if let Some(l) = self.free_leaves.pop() {
            self.leaves[l as usize] = EMPTY_LEAF;
            return l;
        }
        self.leaves.push(EMPTY_LEAF);
        (self.leaves.len() - 1) as u32
    }

    fn alloc_inner(&mut self) -> u32 {
        if let Some(n) = self.free_inners.pop() {
            self.inners[n as usize] = EMPTY_INNER;
            return n;
        }
        self.inners.push(EMPTY_INNER);
        (self.inners.len() - 1) as u32
    }

    /// The leaf where a search for `key` ends: the rightmost that may hold
    /// `key` (`strict == false`, for inserting after equal keys) or the
    /// leftmost that may hold a key `>= key` (`strict == true`). The leaf is
    /// remembered with the separators that bound it, so that an insert that
    /// follows (the front-merge lookup, then the insert of the same bio)
    /// skips its own descent.
    #[inline]
    fn descend(&self, root: &BTreeRoot, key: u64, strict: bool) -> u32 {
        let mut node = root.node;
        let (mut lo, mut hi) = (0, MAX_KEY);
        for _ in 0..root.height {
            let inner = &self.inners[node as usize];
            let i = count_below(&inner.seps, key, strict);
            if i > 0 {
                lo = lo.max(inner.seps[i - 1]);
            }
            if i < FANOUT {
                hi = hi.min(inner.seps[i]);
            }
            node = inner.children[i];
        }
        self.finger.set(Finger {
            root: root.node,
            height: root.height,
            shape: self.shape,
            leaf: node,
            lo,
            hi,
        });
        node
    }

    /// The leaf an insert of `key` goes to.
    #[inline]
    fn leaf_for_insert(&self, root: &BTreeRoot, key: u64) -> u32 {
        let f = self.finger.get();
        // Every key before the leaf is <= lo and every key after it >= hi, so
        // lo <= key < hi puts the key after its equals and before larger keys.
        // Leaf and inner ids come from different pools: the height tells them
        // apart. Frees bump `shape`, so a matching id is the same live node.
        if f.root == root.node
            && f.height == root.height
            && f.shape == self.shape
            && f.lo <= key
            && key < f.hi
        {
            return f.leaf;
        }
        self.descend(root, key, false)
    }

    /// Add detached `id` under `key` (after every equal key).
    pub fn insert(&mut self, root: &mut BTreeRoot, id: u32, key: u64) {
        debug_assert!(!self.is_linked(id), "handle {id} is already in a tree");
        debug_assert!(key != MAX_KEY, "key u64::MAX is reserved");
        self.keys[id as usize] = key;
        root.len += 1;
        if root.node == NIL {
            self.shape += 1;
            let leaf = self.alloc_leaf();
            let l = &mut self.leaves[leaf as usize];
            l.keys[0] = key;
            l.ids[0] = id;
            l.len = 1;
            root.node = leaf;
            root.height = 0;
            self.leaf_of[id as usize] = leaf;
            return;
        }
        let mut leaf = self.leaf_for_insert(root, key);
        let mut slot = count_below(&self.leaves[leaf as usize].keys, key, false);
        if self.leaves[leaf as usize].len as usize == FANOUT {
            let right = self.split_leaf(root, leaf);
            if slot > HALF {
                leaf = right;
                slot -= HALF;
            }
        }
        let l = &mut self.leaves[leaf as usize];
        let len = l.len as usize;
        shift_up(&mut l.keys, slot, len);
        shift_up(&mut l.ids, slot, len);
        l.keys[slot] = key;
        l.ids[slot] = id;
        l.len += 1;
        self.leaf_of[id as usize] = leaf;
    }

    /// Split full `leaf`; returns the new right half.
    fn split_leaf(&mut self, root: &mut BTreeRoot, leaf: u32) -> u32 {
        self.shape += 1;
        let right = self.alloc_leaf();
        let (l, r) = two_mut(&mut self.leaves, leaf, right);
        r.keys[..HALF].copy_from_slice(&l.keys[HALF..]);
        r.ids[..HALF].copy_from_slice(&l.ids[HALF..]);
        l.keys[HALF..].fill(MAX_KEY);
        l.ids[HALF..].fill(NIL);
        l.len = HALF as u32;
        r.len = HALF as u32;
        r.parent = l.parent;
        r.prev = leaf;
        r.next = l.next;
        l.next = right;
        let (next, sep) = (r.next, r.keys[0]);
        if next != NIL {
            self.leaves[next as usize].prev = right;
        }
        for i in 0..HALF {
            let id = self.leaves[right as usize].ids[i];
            self.leaf_of[id as usize] = right;
        }
        self.insert_in_parent(root, leaf, sep, right, true);
        right
    }

    fn parent_of(&self, node: u32, is_leaf: bool) -> u32 {
        if is_leaf {
            self.leaves[node as usize].parent
        } else {
            self.inners[node as usize].parent
        }
    }

    fn set_parent(&mut self, node: u32, is_leaf: bool, parent: u32) {
        if is_leaf {
            self.leaves[node as usize].parent = parent;
        } else {
            self.inners[node as usize].parent = parent;
        }
    }

    /// Put `right` (with separator `sep`) just after `left` in their parent.
    fn insert_in_parent(
        &mut self,
        root: &mut BTreeRoot,
        left: u32,
        sep: u64,
        right: u32,
        is_leaf: bool,
    ) {
        let mut parent = self.parent_of(left, is_leaf);
        if parent == NIL {
            let new_root = self.alloc_inner();
            let p = &mut self.inners[new_root as usize];
            p.children[0] = left;
            p.children[1] = right;
            p.seps[0] = sep;
            p.len = 2;
            self.set_parent(left, is_leaf, new_root);
            self.set_parent(right, is_leaf, new_root);
            root.node = new_root;
            root.height += 1;
            return;
        }
        if self.inners[parent as usize].len as usize == FANOUT {
            let upper = self.split_inner(root, parent, is_leaf);
            if self.parent_of(left, is_leaf) == upper {
                parent = upper;
            }
        }
        let p = &mut self.inners[parent as usize];
        let len = p.len as usize;
        let i = p.children[..len]
            .iter()
            .position(|&c| c == left)
            .unwrap_or(len - 1);
        p.children.copy_within(i + 1..len, i + 2);
        p.seps.copy_within(i..len - 1, i + 1);
        p.children[i + 1] = right;
        p.seps[i] = sep;
        p.len += 1;
        self.set_parent(right, is_leaf, parent);
    }

    /// Split full inner `node` whose children are leaves iff `children_leaves`;
    /// returns the new right half.
    fn split_inner(&mut self, root: &mut BTreeRoot, node: u32, children_leaves: bool) -> u32 {
        let right = self.alloc_inner();
        let (n, r) = two_mut(&mut self.inners, node, right);
        // Children [0, HALF) stay; separator HALF-1 moves up; [HALF, FANOUT) go.
        let up = n.seps[HALF - 1];
        r.children[..HALF].copy_from_slice(&n.children[HALF..]);
        r.seps[..HALF - 1].copy_from_slice(&n.seps[HALF..FANOUT - 1]);
        n.children[HALF..].fill(NIL);
        n.seps[HALF - 1..].fill(MAX_KEY);
        n.len = HALF as u32;
        r.len = HALF as u32;
        r.parent = n.parent;
        for i in 0..HALF {
            let c = self.inners[right as usize].children[i];
            self.set_parent(c, children_leaves, right);
        }
        self.insert_in_parent(root, node, up, right, false);
        right
    }

    /// Remove linked `id` from `root` (found through its leaf, not its key).
    #[inline]
    pub fn remove(&mut self, root: &mut BTreeRoot, id: u32) {
        self.remove_then_next(root, id);
    }

    /// Remove linked `id` from `root` and return the handle that followed it:
    /// one lookup of its slot for both.
    pub fn remove_then_next(&mut self, root: &mut BTreeRoot, id: u32) -> Option<u32> {
        let leaf = self.leaf_of[id as usize];
        debug_assert!(leaf != NIL, "handle {id} is not in a tree");
        self.leaf_of[id as usize] = NIL;
        root.len -= 1;
        let l = &mut self.leaves[leaf as usize];
        let len = l.len as usize;
        let slot = slot_of(&l.ids, id);
        shift_down(&mut l.keys, slot, len);
        shift_down(&mut l.ids, slot, len);
        l.keys[len - 1] = MAX_KEY;
        l.ids[len - 1] = NIL;
        l.len -= 1;
        if slot < l.len as usize {
            return Some(l.ids[slot]);
        }
        let (prev, next, parent, remaining) = (l.prev, l.next, l.parent, l.len);
        let after = (next != NIL).then(|| self.leaves[next as usize].ids[0]);
        if remaining > 0 {
            return after;
        }
        self.shape += 1;
        if prev != NIL {
            self.leaves[prev as usize].next = next;
        }
        if next != NIL {
            self.leaves[next as usize].prev = prev;
        }
        self.free_leaves.push(leaf);
        self.remove_child(root, parent, leaf);
        after
    }

    /// Take emptied `child` out of `parent` (NIL: it was the root), freeing
    /// ancestors that empty in turn; then shorten a root with one child.
    fn remove_child(&mut self, root: &mut BTreeRoot, parent: u32, child: u32) {
        let mut parent = parent;
        let mut child = child;
        loop {
            if parent == NIL {
                *root = BTreeRoot::EMPTY;
                return;
            }
            let p = &mut self.inners[parent as usize];
            let len = p.len as usize;
            let i = slot_of(&p.children, child);
            p.children.copy_within(i + 1..len, i);
            p.children[len - 1] = NIL;
            if len >= 2 {
                // Drop the separator on the child's left (or the first one).
                let s = i.saturating_sub(1);
                p.seps.copy_within(s + 1..len - 1, s);
                p.seps[len - 2] = MAX_KEY;
            }
            p.len -= 1;
            if p.len > 0 {
                break;
            }
            self.free_inners.push(parent);
            child = parent;
            parent = self.inners[child as usize].parent;
        }
        while root.height > 0 && self.inners[root.node as usize].len == 1 {
            let old = root.node;
            let only = self.inners[old as usize].children[0];
            self.free_inners.push(old);
            root.node = only;
            root.height -= 1;
            self.set_parent(only, root.height == 0, NIL);
        }
    }

    /// The leftmost handle with a key `>= key`.
    #[inline]
    pub fn lower_bound(&self, root: &BTreeRoot, key: u64) -> Option<u32> {
        if root.node == NIL {
            return None;
        }
        let leaf = self.descend(root, key, true);
        let l = &self.leaves[leaf as usize];
        let slot = count_below(&l.keys, key, true);
        if slot < l.len as usize {
            Some(l.ids[slot])
        } else if l.next != NIL {
            Some(self.leaves[l.next as usize].ids[0])
        } else {
            None
        }
    }

    /// The leftmost (earliest inserted) handle with exactly `key`.
    #[inline]
    pub fn find(&self, root: &BTreeRoot, key: u64) -> Option<u32> {
        self.lower_bound(root, key)
            .filter(|&id| self.keys[id as usize] == key)
    }

    /// The first handle in key order.
    pub fn first(&self, root: &BTreeRoot) -> Option<u32> {
        self.lower_bound(root, 0)
    }

    /// The handle after `id` in its tree.
    #[inline]
    pub fn next(&self, id: u32) -> Option<u32> {
        let leaf = self.leaf_of[id as usize];
        debug_assert!(leaf != NIL, "next of detached handle {id}");
        let l = &self.leaves[leaf as usize];
        let slot = slot_of(&l.ids, id);
        if slot + 1 < l.len as usize {
            Some(l.ids[slot + 1])
        } else if l.next != NIL {
            Some(self.leaves[l.next as usize].ids[0])
        } else {
            None
        }
    }

    /// The handle before `id` in its tree.
    #[inline]
    pub fn prev(&self, id: u32) -> Option<u32> {
        let leaf = self.leaf_of[id as usize];
        debug_assert!(leaf != NIL, "prev of detached handle {id}");
        let l = &self.leaves[leaf as usize];
        let slot = slot_of(&l.ids, id);
        if slot > 0 {
            Some(l.ids[slot - 1])
        } else if l.prev != NIL {
            let p = &self.leaves[l.prev as usize];
            Some(p.ids[p.len as usize - 1])
        } else {
            None
        }
    }

    /// Check every invariant of `root`'s tree, panicking on a violation
    /// (tests and debug builds).
    #[cfg(any(test, debug_assertions))]
    pub fn check(&self, root: &BTreeRoot) {
        if root.node == NIL {
            assert_eq!(root.len, 0, "empty tree with len {}", root.len);
            return;
        }
        let mut count = 0;
        let mut leaves = Vec::new();
        self.check_node(
            root.node,
            root.height,
            NIL,
            0,
            MAX_KEY,
            &mut count,
            &mut leaves,
        );
        assert_eq!(count, root.len, "tree len mismatch");
        // The leaf chain visits the leaves in order, keys non-decreasing.
        let mut last_key = 0;
        for (i, &leaf) in leaves.iter().enumerate() {
            let l = &self.leaves[leaf as usize];
            let want_prev = if i == 0 { NIL } else { leaves[i - 1] };
            let want_next = leaves.get(i + 1).copied().unwrap_or(NIL);
            assert_eq!(l.prev, want_prev, "leaf {leaf}: bad prev link");
            assert_eq!(l.next, want_next, "leaf {leaf}: bad next link");
            for &k in &l.keys[..l.len as usize] {
                assert!(k >= last_key, "keys out of order across leaves");
                last_key = k;
            }
        }
    }

    #[cfg(any(test, debug_assertions))]
    #[allow(clippy::too_many_arguments)]
    fn check_node(
        &self,
        node: u32,
        height: u32,
        parent: u32,
        lo: u64,
        hi: u64,
        count: &mut u32,
        leaves: &mut Vec<u32>,
    ) {
        if height == 0 {
            let l = &self.leaves[node as usize];
            let len = l.len as usize;
            assert!(len > 0, "empty leaf {node} in tree");
            assert_eq!(l.parent, parent, "leaf {node}: bad parent");
            for i in 0..FANOUT {
                if i < len {
                    let (k, id) = (l.keys[i], l.ids[i]);
                    assert!(
                        lo <= k && k <= hi,
                        "leaf {node}: key {k} outside [{lo}, {hi}]"
                    );
                    assert!(i == 0 || l.keys[i - 1] <= k, "leaf {node}: keys not sorted");
                    assert_eq!(self.leaf_of[id as usize], node, "handle {id}: wrong leaf");
                    assert_eq!(self.keys[id as usize], k, "handle {id}: wrong key");
                } else {
                    assert_eq!(l.keys[i], MAX_KEY, "leaf {node}: unused key slot set");
                }
            }
            *count += len as u32;
            leaves.push(node);
            return;
        }
        let n = &self.inners[node as usize];
        let len = n.len as usize;
        assert!(len >= 1, "inner {node} has no children");
        assert!(parent != NIL || len >= 2, "root inner {node} has one child");
        assert_eq!(n.parent, parent, "inner {node}: bad parent");
        for i in 0..FANOUT {
            if i + 1 < len {
                assert!(
                    i == 0 || n.seps[i - 1] <= n.seps[i],
                    "inner {node}: seps unsorted"
                );
            } else {
                assert_eq!(n.seps[i], MAX_KEY, "inner {node}: unused separator set");
            }
        }
        for i in 0..len {
            let clo = if i == 0 { lo } else { n.seps[i - 1] };
            let chi = if i + 1 < len { n.seps[i] } else { hi };
            self.check_node(n.children[i], height - 1, node, clo, chi, count, leaves);
        }
    }
}

/// Position of `id` in a node's handle array (it must be there): a bit mask
/// of matches, built without branches, so the compiler can vectorize it.
#[inline(always)]
fn slot_of(ids: &[u32; FANOUT], id: u32) -> usize {
    let mut mask = 0u32;
    for (i, &x) in ids.iter().enumerate() {
        mask |= u32::from(x == id) << i;
    }
    debug_assert!(mask != 0, "handle {id} not in its node");
    mask.trailing_zeros() as usize
}

/// Open a gap at `slot` in the first `len` entries (`len < FANOUT`).
#[inline(always)]
fn shift_up<T: Copy>(a: &mut [T; FANOUT], slot: usize, len: usize) {
    let mut i = len;
    while i > slot {
        a[i] = a[i - 1];
        i -= 1;
    }
}

/// Close the gap at `slot` in the first `len` entries.
#[inline(always)]
fn shift_down<T: Copy>(a: &mut [T; FANOUT], slot: usize, len: usize) {
    for i in slot..len - 1 {
        a[i] = a[i + 1];
    }
}

/// Mutable references to two distinct elements.
fn two_mut<T>(v: &mut [T], a: u32, b: u32) -> (&mut T, &mut T) {
    let (a, b) = (a as usize, b as usize);
    debug_assert_ne!(a, b);
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &mut y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &mut x[b])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn order(f: &BTreeForest, r: &BTreeRoot) -> Vec<u32> {
        let mut v = vec![];
        let mut c = f.first(r);
        while let Some(id) = c {
            v.push(id);
            c = f.next(id);
        }
        v
    }

    #[test]
    fn grows_and_shrinks_through_several_levels() {
        let n = 5000u32;
        let mut f = BTreeForest::new(n as usize);
        let mut r = BTreeRoot::EMPTY;
        for id in 0..n {
            // A scrambled order of keys with many duplicates.
            f.insert(&mut r, id, u64::from(id.wrapping_mul(2_654_435_761) % 1000));
        }
        f.check(&r);
        assert!(r.height >= 2, "height {}", r.height);
        let ids = order(&f, &r);
        assert_eq!(ids.len(), n as usize);
        for w in ids.windows(2) {
            let (a, b) = (f.key(w[0]), f.key(w[1]));
            assert!(
                a < b || (a == b && w[0] < w[1]),
                "equal keys out of insertion order"
            );
        }
        // prev is the mirror of next.
        for w in ids.windows(2) {
            assert_eq!(f.prev(w[1]), Some(w[0]));
        }
        assert_eq!(f.lower_bound(&r, 500).map(|id| f.key(id)), Some(500));
        assert_eq!(f.find(&r, 1000), None);
        for (i, &id) in ids.iter().enumerate() {
            if i % 3 != 0 {
                f.remove(&mut r, id);
            }
        }
        f.check(&r);
        for &id in ids.iter().step_by(3) {
            f.remove(&mut r, id);
        }
        f.check(&r);
        assert!(r.is_empty());
        assert_eq!(r.height, 0);
        // Freed nodes are reused, not reallocated.
        let (leaves, inners) = (f.leaves.len(), f.inners.len());
        for id in 0..n {
            f.insert(&mut r, id, u64::from(id));
        }
        f.check(&r);
        assert!(f.leaves.len() <= leaves.max(2 * n as usize / FANOUT + 1));
        assert!(f.inners.len() <= inners.max(64));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u8, u64),
        Remove(u8),
        Query(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (any::<u8>(), 0u64..40).prop_map(|(i, k)| Op::Insert(i, k)),
            3 => any::<u8>().prop_map(Op::Remove),
            2 => (0u64..42).prop_map(Op::Query),
        ]
    }

    proptest! {
        #[test]
        fn behaves_like_a_sorted_map(ops in proptest::collection::vec(op(), 1..600)) {
            let mut f = BTreeForest::new(256);
            let mut roots = [BTreeRoot::EMPTY; 2];
            // Model: per tree, (key, insertion seq) -> id.
            let mut model: [BTreeMap<(u64, u64), u32>; 2] = Default::default();
            let mut where_is: BTreeMap<u32, (usize, u64, u64)> = BTreeMap::new();
            let mut seq = 0;
            for op in ops {
                match op {
                    Op::Insert(i, k) => {
                        let id = u32::from(i);
                        if where_is.contains_key(&id) { continue; }
                        let t = usize::from(i % 2);
                        f.insert(&mut roots[t], id, k);
                        model[t].insert((k, seq), id);
                        where_is.insert(id, (t, k, seq));
                        seq += 1;
                    }
                    Op::Remove(i) => {
                        let id = u32::from(i);
                        let Some((t, k, s)) = where_is.remove(&id) else { continue };
                        f.remove(&mut roots[t], id);
                        model[t].remove(&(k, s));
                    }
                    Op::Query(k) => {
                        for t in 0..2 {
                            let want = model[t].range((k, 0)..).next().map(|(_, &id)| id);
                            prop_assert_eq!(f.lower_bound(&roots[t], k), want);
                            let exact = want.filter(|&id| where_is[&id].1 == k);
                            prop_assert_eq!(f.find(&roots[t], k), exact);
                        }
                    }
                }
                for t in 0..2 {
                    f.check(&roots[t]);
                    let want: Vec<u32> = model[t].values().copied().collect();
                    prop_assert_eq!(order(&f, &roots[t]), want.clone());
                    for w in want.windows(2) {
                        prop_assert_eq!(f.prev(w[1]), Some(w[0]));
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        /// Thousands of handles: inner nodes split, empty and collapse, and
        /// the insert finger is reused across many leaves.
        #[test]
        fn big_trees_stay_sorted(seed in any::<u64>(), spread in 1u64..100_000) {
            let n = 3000u32;
            let mut f = BTreeForest::new(n as usize);
            let mut root = BTreeRoot::EMPTY;
            let mut model: BTreeMap<(u64, u64), u32> = BTreeMap::new();
            let mut at: Vec<Option<(u64, u64)>> = vec![None; n as usize];
            let mut rng = crate::rng::Rng::new(seed);
            let mut rand = move || rng.next_u64();
            for step in 0..12_000u64 {
                let id = (rand() % u64::from(n)) as u32;
                match at[id as usize] {
                    None => {
                        let key = rand() % spread;
                        // Look up a neighbour first, as the front-merge lookup does.
                        let _ = f.find(&root, key + 8);
                        f.insert(&mut root, id, key);
                        model.insert((key, step), id);
                        at[id as usize] = Some((key, step));
                    }
                    Some(k) => {
                        let want = model.range(k..).nth(1).map(|(_, &v)| v);
                        prop_assert_eq!(f.remove_then_next(&mut root, id), want);
                        model.remove(&k);
                        at[id as usize] = None;
                    }
                }
                if step % 997 == 0 {
                    f.check(&root);
                    let probe = rand() % spread;
                    let want = model.range((probe, 0)..).next().map(|(_, &v)| v);
                    prop_assert_eq!(f.lower_bound(&root, probe), want);
                }
            }
            f.check(&root);
            prop_assert_eq!(order(&f, &root), model.values().copied().collect::<Vec<_>>());
        }
    }
}
