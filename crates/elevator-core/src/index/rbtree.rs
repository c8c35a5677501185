//! Intrusive red-black tree "forest" over `u32` handles.
//!
//! # What it owns
//!
//! [`RbForest`] owns the node storage for every handle id in `0..capacity` in a single `Vec`.
//! A tree is represented by a tiny [`RbRoot`] value (root id + length) that the caller keeps
//! wherever it likes; several trees share one forest. Each id is in at most one tree at a time
//! (it is either *detached* or *linked* into exactly one tree). The caller decides which tree an
//! id belongs to and must pass that tree's root to [`RbForest::remove`].
//!
//! Nodes are ordered by a `u64` key stored at insertion time. Equal keys are allowed: a new node
//! is placed after every node with an equal key, so an in-order walk yields equal keys in
//! insertion order and [`RbForest::find`] / [`RbForest::lower_bound`] return the earliest
//! inserted among equals.
//!
//! # Invariants (checked by [`RbForest::check`] in tests and debug builds)
//!
//! * Binary-search order: keys are non-decreasing along an in-order walk.
//! * The root is black and has no parent; a red node never has a red child; every path from a
//!   node down to a missing child crosses the same number of black nodes.
//! * Parent links mirror child links.
//! * Every node of a tree is marked linked, and `RbRoot::len` equals the number of nodes.
//!
//! # Complexity
//!
//! `insert`, `remove`, `find`, `lower_bound`, `first`, `last` are `O(log n)`; `next` / `prev`
//! are amortised `O(1)` (worst case `O(log n)`). Nothing allocates except [`RbForest::new`] and
//! [`RbForest::grow`], and nothing recurses. Removal navigates by links only and never looks at
//! keys, so a node can be removed even if the caller's notion of its key has changed since it was
//! inserted.
//!
//! # Misuse
//!
//! Inserting a linked id, removing a detached id (or removing it through the wrong root), or
//! using an id `>= capacity` are programming errors. They trip `debug_assert!`s in debug builds;
//! in release builds they may corrupt the trees involved (or panic on an out-of-bounds index) but
//! never cause undefined behaviour.

/// The "no node" handle: used for missing children/parents and empty roots.
pub const NIL: u32 = u32::MAX;

const LEFT: usize = 0;
const RIGHT: usize = 1;

/// Node flag: node is red (clear means black).
const RED: u32 = 1;
/// Node flag: node is currently linked into some tree.
const LINKED: u32 = 2;

/// One node of the forest: 24 bytes.
#[derive(Clone, Copy, Debug)]
struct Node {
    key: u64,
    parent: u32,
    /// `child[LEFT]`, `child[RIGHT]`.
    child: [u32; 2],
    /// `RED | LINKED` bits.
    flags: u32,
}

impl Node {
    const DETACHED: Node = Node {
        key: 0,
        parent: NIL,
        child: [NIL, NIL],
        flags: 0,
    };
}

const _: () = assert!(std::mem::size_of::<Node>() == 24);

/// Handle to one tree inside an [`RbForest`]: the root id and the number of nodes.
///
/// It is a plain value; the caller stores it and passes it to the forest's methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RbRoot {
    root: u32,
    len: u32,
}

impl RbRoot {
    /// The empty tree.
    pub const EMPTY: RbRoot = RbRoot { root: NIL, len: 0 };

    /// `true` if the tree has no nodes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.root == NIL
    }

    /// Number of nodes in the tree.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
}

impl Default for RbRoot {
    #[inline]
    fn default() -> Self {
        RbRoot::EMPTY
    }
}

/// Node storage shared by any number of red-black trees ([`RbRoot`]s).
///
/// Ids are `0..capacity()`; each is either detached or linked into exactly one tree.
#[derive(Clone, Debug)]
pub struct RbForest {
    nodes: Vec<Node>,
}

impl RbForest {
    /// Create a forest with ids `0..capacity`, all detached.
    ///
    /// # Panics
    /// If `capacity > u32::MAX as usize` (ids must fit in `u32` and differ from [`NIL`]).
    pub fn new(capacity: usize) -> Self {
        assert!(
            capacity <= NIL as usize,
            "RbForest capacity {capacity} exceeds u32 id space"
        );
        RbForest {
            nodes: vec![Node::DETACHED; capacity],
        }
    }

    /// Number of ids (`0..capacity`) this forest holds.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.nodes.len()
    }

    /// Increase the capacity to `capacity` ids; new ids are detached. Existing trees stay
    /// valid. A `capacity` not larger than the current one does nothing.
    ///
    /// # Panics
    /// If `capacity > u32::MAX as usize`.
    pub fn grow(&mut self, capacity: usize) {
        assert!(
            capacity <= NIL as usize,
            "RbForest capacity {capacity} exceeds u32 id space"
        );
        if capacity > self.nodes.len() {
            self.nodes.resize(capacity, Node::DETACHED);
        }
    }

    /// `true` if `id` is currently linked into some tree.
    #[inline]
    pub fn is_linked(&self, id: u32) -> bool {
        self.node(id).flags & LINKED != 0
    }

    /// The key `id` was (last) inserted with. Meaningless for an id never inserted.
    #[inline]
    pub fn key(&self, id: u32) -> u64 {
        self.node(id).key
    }

    /// Insert detached `id` with `key` into the tree `root`.
    ///
    /// Equal keys go to the right: among equal keys, in-order traversal yields them in
    /// insertion order.
    pub fn insert(&mut self, root: &mut RbRoot, id: u32, key: u64) {
        debug_assert!(
            (id as usize) < self.nodes.len(),
            "RbForest::insert: id {id} out of range (capacity {})",
            self.nodes.len()
        );
        debug_assert!(
            !self.is_linked(id),
            "RbForest::insert: id {id} is already linked into a tree"
        );

        let mut parent = NIL;
        let mut dir = LEFT;
        let mut cur = root.root;
        while cur != NIL {
            let n = self.node(cur);
            parent = cur;
            dir = (key >= n.key) as usize;
            cur = n.child[dir];
        }
        *self.node_mut(id) = Node {
            key,
            parent,
            child: [NIL, NIL],
            flags: LINKED | RED,
        };
        if parent == NIL {
            root.root = id;
        } else {
            self.node_mut(parent).child[dir] = id;
        }
        root.len += 1;
        self.insert_fixup(&mut root.root, id);
    }

    /// Remove linked `id` from the tree `root` (it must be in that tree).
    ///
    /// Removal does not look at keys (it navigates by links only), so callers may remove a node
    /// whose logical key has changed since insertion. The stored key is kept and still returned
    /// by [`RbForest::key`].
    pub fn remove(&mut self, root: &mut RbRoot, id: u32) {
        debug_assert!(
            (id as usize) < self.nodes.len(),
            "RbForest::remove: id {id} out of range (capacity {})",
            self.nodes.len()
        );
        debug_assert!(
            self.is_linked(id),
            "RbForest::remove: id {id} is not linked into any tree"
        );
        debug_assert!(
            self.root_of(id) == root.root,
            "RbForest::remove: id {id} is not in the tree passed as `root`"
        );

        let z = *self.node(id);
        let [zl, zr] = z.child;
        // `child` takes the place of the node that is physically unlinked, `parent` is its new
        // parent; if a black node was unlinked, the subtree at `child` is one black short.
        let child;
        let parent;
        let removed_red;
        if zl == NIL || zr == NIL {
            child = if zl == NIL { zr } else { zl };
            parent = z.parent;
            self.replace_child(&mut root.root, parent, id, child);
            if child != NIL {
                self.node_mut(child).parent = parent;
            }
            removed_red = z.flags & RED != 0;
        } else {
            // Two children: the in-order successor `s` (leftmost of the right subtree) takes
            // `id`'s place and colour; the hole moves to `s`'s old position.
            let mut s = zr;
            loop {
                let l = self.node(s).child[LEFT];
                if l == NIL {
                    break;
                }
                s = l;
            }
            let sn = *self.node(s);
            removed_red = sn.flags & RED != 0;
            child = sn.child[RIGHT];
            if s == zr {
                parent = s;
            } else {
                parent = sn.parent;
                self.node_mut(parent).child[LEFT] = child;
                if child != NIL {
                    self.node_mut(child).parent = parent;
                }
                self.node_mut(s).child[RIGHT] = zr;
                self.node_mut(zr).parent = s;
            }
            {
                let sm = self.node_mut(s);
                sm.child[LEFT] = zl;
                sm.parent = z.parent;
                sm.flags = z.flags;
            }
            self.node_mut(zl).parent = s;
            self.replace_child(&mut root.root, z.parent, id, s);
        }

        {
            let zm = self.node_mut(id);
            zm.parent = NIL;
            zm.child = [NIL, NIL];
            zm.flags = 0;
        }
        root.len -= 1;

        if !removed_red {
            if self.is_red(child) {
                self.set_black(child);
            } else {
                self.remove_fixup(&mut root.root, child, parent);
            }
        }
    }

    /// The node with the smallest key (earliest inserted among equals), if any.
    #[inline]
    pub fn first(&self, root: &RbRoot) -> Option<u32> {
        self.end(root, LEFT)
    }

    /// The node with the largest key (latest inserted among equals), if any.
    #[inline]
    pub fn last(&self, root: &RbRoot) -> Option<u32> {
        self.end(root, RIGHT)
    }

    /// The node at the `side` end of the tree, if any.
    #[inline]
    fn end(&self, root: &RbRoot, side: usize) -> Option<u32> {
        (root.root != NIL).then(|| self.extreme(root.root, side))
    }

    /// In-order successor of linked `id` within its tree.
    #[inline]
    pub fn next(&self, id: u32) -> Option<u32> {
        self.step(id, RIGHT)
    }

    /// In-order predecessor of linked `id` within its tree.
    #[inline]
    pub fn prev(&self, id: u32) -> Option<u32> {
        self.step(id, LEFT)
    }

    /// Leftmost (earliest inserted) node whose key == `key`.
    #[inline]
    pub fn find(&self, root: &RbRoot, key: u64) -> Option<u32> {
        match self.lower_bound(root, key) {
            Some(id) if self.node(id).key == key => Some(id),
            _ => None,
        }
    }

    /// Leftmost node whose key >= `key`.
    #[inline]
    pub fn lower_bound(&self, root: &RbRoot, key: u64) -> Option<u32> {
        let mut best = NIL;
        let mut cur = root.root;
        while cur != NIL {
            let n = self.node(cur);
            let ge = n.key >= key;
            if ge {
                best = cur;
            }
            cur = n.child[(!ge) as usize];
        }
        if best == NIL { None } else { Some(best) }
    }

    /// Validate every invariant of `root`'s tree: keys non-decreasing in order, red-black
    /// properties, parent links, `len`, and that every node is marked linked. `O(n log n)`.
    ///
    /// Only compiled in tests and debug builds (`cfg(any(test, debug_assertions))`).
    ///
    /// # Panics
    /// With a descriptive message on the first violation found.
    #[cfg(any(test, debug_assertions))]
    pub fn check(&self, root: &RbRoot) {
        let cap = self.nodes.len();
        if root.root == NIL {
            assert_eq!(root.len, 0, "rbtree check: empty root but len {}", root.len);
            return;
        }
        assert!(
            (root.root as usize) < cap,
            "rbtree check: root id {} out of range (capacity {cap})",
            root.root
        );
        let r = self.node(root.root);
        assert_eq!(
            r.parent, NIL,
            "rbtree check: root {} has parent {}",
            root.root, r.parent
        );
        assert!(
            r.flags & RED == 0,
            "rbtree check: root {} is red",
            root.root
        );

        let mut count: usize = 0;
        let mut black_height: Option<u32> = None;
        let mut prev_key: Option<(u32, u64)> = None;
        let mut cur = self.extreme(root.root, LEFT);
        loop {
            count += 1;
            assert!(
                count <= cap,
                "rbtree check: in-order walk visits more nodes than capacity (cycle?)"
            );
            let n = self.node(cur);
            assert!(
                n.flags & LINKED != 0,
                "rbtree check: node {cur} in tree but not marked linked"
            );
            if let Some((pid, pk)) = prev_key {
                assert!(
                    pk <= n.key,
                    "rbtree check: order violated: node {pid} key {pk} before node {cur} key {}",
                    n.key
                );
            }
            prev_key = Some((cur, n.key));
            for (side, &c) in n.child.iter().enumerate() {
                if c == NIL {
                    continue;
                }
                assert!(
                    (c as usize) < cap,
                    "rbtree check: node {cur} child {c} out of range"
                );
                let cn = self.node(c);
                assert_eq!(
                    cn.parent, cur,
                    "rbtree check: node {c} (child {side} of {cur}) has parent {}",
                    cn.parent
                );
                assert!(
                    !(n.flags & RED != 0 && cn.flags & RED != 0),
                    "rbtree check: red node {cur} has red child {c}"
                );
            }
            if n.child[LEFT] == NIL || n.child[RIGHT] == NIL {
                // Count black nodes from here up to the root.
                let mut bh = 0u32;
                let mut up = cur;
                let mut steps = 0usize;
                while up != NIL {
                    steps += 1;
                    assert!(steps <= cap, "rbtree check: parent chain cycle at {cur}");
                    let un = self.node(up);
                    if un.flags & RED == 0 {
                        bh += 1;
                    }
                    up = un.parent;
                }
                match black_height {
                    None => black_height = Some(bh),
                    Some(expected) => assert_eq!(
                        bh, expected,
                        "rbtree check: black height {bh} at node {cur}, expected {expected}"
                    ),
                }
            }
            match self.next(cur) {
                Some(nx) => cur = nx,
                None => break,
            }
        }
        // The walk must have ended at the last node reachable from the root.
        assert_eq!(
            cur,
            self.extreme(root.root, RIGHT),
            "rbtree check: in-order walk ended before the rightmost node"
        );
        assert_eq!(
            count, root.len as usize,
            "rbtree check: tree has {count} nodes but len is {}",
            root.len
        );
    }

    // ----------------------------------------------------------------- internals

    #[inline(always)]
    fn node(&self, id: u32) -> &Node {
        &self.nodes[id as usize]
    }

    #[inline(always)]
    fn node_mut(&mut self, id: u32) -> &mut Node {
        &mut self.nodes[id as usize]
    }

    /// `NIL` (and anything out of range) counts as black.
    #[inline(always)]
    fn is_red(&self, id: u32) -> bool {
        match self.nodes.get(id as usize) {
            Some(n) => n.flags & RED != 0,
            None => false,
        }
    }

    #[inline(always)]
    fn set_black(&mut self, id: u32) {
        self.node_mut(id).flags &= !RED;
    }

    #[inline(always)]
    fn set_red(&mut self, id: u32) {
        self.node_mut(id).flags |= RED;
    }

    /// Walk from `id` to its tree's root (debug checks only).
    fn root_of(&self, mut id: u32) -> u32 {
        loop {
            let p = self.node(id).parent;
            if p == NIL {
                return id;
            }
            id = p;
        }
    }

    /// Leftmost (`dir == LEFT`) or rightmost node of the subtree at non-NIL `id`.
    #[inline(always)]
    fn extreme(&self, mut id: u32, dir: usize) -> u32 {
        loop {
            let c = self.node(id).child[dir];
            if c == NIL {
                return id;
            }
            id = c;
        }
    }

    /// In-order neighbour of `id` in direction `dir` (RIGHT = successor).
    #[inline]
    fn step(&self, id: u32, dir: usize) -> Option<u32> {
        debug_assert!(
            self.is_linked(id),
            "RbForest::next/prev: id {id} is not linked into any tree"
        );
        let n = self.node(id);
        let c = n.child[dir];
        if c != NIL {
            return Some(self.extreme(c, 1 - dir));
        }
        let mut cur = id;
        let mut p = n.parent;
        while p != NIL {
            let pn = self.node(p);
            if pn.child[dir] != cur {
                return Some(p);
            }
            cur = p;
            p = pn.parent;
        }
        None
    }

    /// Make `new` take `old`'s place under `parent` (or as the root if `parent` is NIL).
    /// Does not touch `new`'s parent link.
    #[inline(always)]
    fn replace_child(&mut self, root: &mut u32, parent: u32, old: u32, new: u32) {
        if parent == NIL {
            *root = new;
        } else {
            let pn = self.node_mut(parent);
            let side = (pn.child[LEFT] != old) as usize;
            pn.child[side] = new;
        }
    }

    /// Rotate `x` down in direction `dir`; its child on the other side comes up.
    /// (`dir == LEFT` is the classic left rotation.)
    #[inline(always)]
    fn rotate(&mut self, root: &mut u32, x: u32, dir: usize) {
        let other = 1 - dir;
        let y = self.node(x).child[other];
        let b = self.node(y).child[dir];
        let xp = self.node(x).parent;

        {
            let xn = self.node_mut(x);
            xn.child[other] = b;
            xn.parent = y;
        }
        if b != NIL {
            self.node_mut(b).parent = x;
        }
        {
            let yn = self.node_mut(y);
            yn.child[dir] = x;
            yn.parent = xp;
        }
        self.replace_child(root, xp, x, y);
    }

    /// Restore the red-black properties after linking red node `z`.
    #[inline]
    fn insert_fixup(&mut self, root: &mut u32, mut z: u32) {
        loop {
            let p = self.node(z).parent;
            if p == NIL {
                // `z` is the root.
                self.set_black(z);
                return;
            }
            let pn = *self.node(p);
            if pn.flags & RED == 0 {
                return;
            }
            // Red parent is never the root, so the grandparent exists.
            let g = pn.parent;
            let gn = self.node(g);
            let pdir = (gn.child[LEFT] != p) as usize;
            let uncle = gn.child[1 - pdir];
            if self.is_red(uncle) {
                self.set_black(p);
                self.set_black(uncle);
                self.set_red(g);
                z = g;
                continue;
            }
            let mut top = p;
            if pn.child[1 - pdir] == z {
                // Inner grandchild: rotate it to the outside first.
                self.rotate(root, p, pdir);
                top = z;
            }
            self.set_black(top);
            self.set_red(g);
            self.rotate(root, g, 1 - pdir);
            return;
        }
    }

    /// Restore the red-black properties after a black node was unlinked: the subtree at `x`
    /// (possibly NIL, black) under `parent` is one black node short.
    fn remove_fixup(&mut self, root: &mut u32, mut x: u32, mut parent: u32) {
        while parent != NIL {
            let pn = self.node(parent);
            let xdir = (pn.child[LEFT] != x) as usize;
            let odir = 1 - xdir;
            // The sibling exists: its side has black height >= 1.
            let mut w = pn.child[odir];
            if self.is_red(w) {
                self.set_black(w);
                self.set_red(parent);
                self.rotate(root, parent, xdir);
                w = self.node(parent).child[odir];
            }
            let wn = self.node(w);
            let mut far = wn.child[odir];
            let near = wn.child[xdir];
            if !self.is_red(far) {
                if !self.is_red(near) {
                    self.set_red(w);
                    if self.is_red(parent) {
                        self.set_black(parent);
                        return;
                    }
                    x = parent;
                    parent = self.node(x).parent;
                    continue;
                }
                // Near nephew red, far black: rotate the red to the far side.
                self.set_black(near);
                self.set_red(w);
                self.rotate(root, w, odir);
                far = w;
                w = near;
            }
            // Far nephew red.
            let pcolor = self.node(parent).flags & RED;
            {
                let wm = self.node_mut(w);
                wm.flags = (wm.flags & !RED) | pcolor;
            }
            self.set_black(parent);
            self.set_black(far);
            self.rotate(root, parent, xdir);
            return;
        }
        // `x` is the root (already black, or NIL).
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, HashMap};

    fn inorder(f: &RbForest, r: &RbRoot) -> Vec<u32> {
        let mut v = Vec::new();
        let mut cur = f.first(r);
        while let Some(id) = cur {
            v.push(id);
            cur = f.next(id);
        }
        v
    }

    fn reverse_order(f: &RbForest, r: &RbRoot) -> Vec<u32> {
        let mut v = Vec::new();
        let mut cur = f.last(r);
        while let Some(id) = cur {
            v.push(id);
            cur = f.prev(id);
        }
        v
    }

    fn keys(f: &RbForest, ids: &[u32]) -> Vec<u64> {
        ids.iter().map(|&i| f.key(i)).collect()
    }

    #[test]
    fn node_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Node>(), 24);
    }

    #[test]
    fn empty_tree_queries() {
        let f = RbForest::new(4);
        let r = RbRoot::EMPTY;
        assert!(r.is_empty());
        assert_eq!(r.len(), 0);
        assert_eq!(RbRoot::default(), RbRoot::EMPTY);
        assert_eq!(f.first(&r), None);
        assert_eq!(f.last(&r), None);
        assert_eq!(f.find(&r, 0), None);
        assert_eq!(f.lower_bound(&r, 0), None);
        assert_eq!(f.lower_bound(&r, u64::MAX), None);
        assert_eq!(f.capacity(), 4);
        for id in 0..4 {
            assert!(!f.is_linked(id));
        }
        f.check(&r);

        let f0 = RbForest::new(0);
        assert_eq!(f0.capacity(), 0);
        f0.check(&RbRoot::EMPTY);
    }

    #[test]
    fn single_node() {
        let mut f = RbForest::new(1);
        let mut r = RbRoot::EMPTY;
        f.insert(&mut r, 0, 42);
        f.check(&r);
        assert!(f.is_linked(0));
        assert_eq!(f.key(0), 42);
        assert_eq!(r.len(), 1);
        assert!(!r.is_empty());
        assert_eq!(f.first(&r), Some(0));
        assert_eq!(f.last(&r), Some(0));
        assert_eq!(f.next(0), None);
        assert_eq!(f.prev(0), None);
        assert_eq!(f.find(&r, 42), Some(0));
        assert_eq!(f.find(&r, 41), None);
        assert_eq!(f.lower_bound(&r, 0), Some(0));
        assert_eq!(f.lower_bound(&r, 43), None);
        f.remove(&mut r, 0);
        f.check(&r);
        assert!(r.is_empty());
        assert!(!f.is_linked(0));
        assert_eq!(f.key(0), 42);
    }

    #[test]
    fn ascending_inserts() {
        let n = 1000u32;
        let mut f = RbForest::new(n as usize);
        let mut r = RbRoot::EMPTY;
        for id in 0..n {
            f.insert(&mut r, id, u64::from(id) * 10);
            f.check(&r);
        }
        assert_eq!(r.len(), n as usize);
        assert_eq!(inorder(&f, &r), (0..n).collect::<Vec<_>>());
        assert_eq!(reverse_order(&f, &r), (0..n).rev().collect::<Vec<_>>());
    }

    #[test]
    fn descending_inserts() {
        let n = 1000u32;
        let mut f = RbForest::new(n as usize);
        let mut r = RbRoot::EMPTY;
        for id in 0..n {
            f.insert(&mut r, id, u64::from(n - id));
            f.check(&r);
        }
        assert_eq!(inorder(&f, &r), (0..n).rev().collect::<Vec<_>>());
        assert_eq!(f.first(&r), Some(n - 1));
        assert_eq!(f.last(&r), Some(0));
    }

    #[test]
    fn equal_key_inserts_keep_insertion_order() {
        let n = 500u32;
        let mut f = RbForest::new(n as usize);
        let mut r = RbRoot::EMPTY;
        for id in 0..n {
            f.insert(&mut r, id, 7);
            f.check(&r);
        }
        assert_eq!(inorder(&f, &r), (0..n).collect::<Vec<_>>());
        assert_eq!(f.find(&r, 7), Some(0));
        assert_eq!(f.lower_bound(&r, 7), Some(0));
        assert_eq!(f.lower_bound(&r, 0), Some(0));
        assert_eq!(f.lower_bound(&r, 8), None);
        // Remove the earliest ones; find must track the new earliest.
        for id in 0..n - 1 {
            f.remove(&mut r, id);
            f.check(&r);
            assert_eq!(f.find(&r, 7), Some(id + 1));
        }
    }

    #[test]
    fn mixed_equal_keys_order() {
        // keys: 5,3,5,3,5,1 -> in order: 1(5) 3(1) 3(3) 5(0) 5(2) 5(4)
        let ks = [5u64, 3, 5, 3, 5, 1];
        let mut f = RbForest::new(ks.len());
        let mut r = RbRoot::EMPTY;
        for (id, &k) in ks.iter().enumerate() {
            f.insert(&mut r, id as u32, k);
            f.check(&r);
        }
        assert_eq!(inorder(&f, &r), vec![5, 1, 3, 0, 2, 4]);
        assert_eq!(f.find(&r, 3), Some(1));
        assert_eq!(f.find(&r, 5), Some(0));
        assert_eq!(f.find(&r, 1), Some(5));
        assert_eq!(f.find(&r, 2), None);
    }

    /// Build a tree of `n` nodes with key == id * 2.
    fn build(n: u32) -> (RbForest, RbRoot) {
        let mut f = RbForest::new(n as usize);
        let mut r = RbRoot::EMPTY;
        for id in 0..n {
            f.insert(&mut r, id, u64::from(id) * 2);
        }
        f.check(&r);
        (f, r)
    }

    /// Build a tree of `n` nodes, then remove the node `pick` names until it
    /// names none, checking the tree and its order after each removal.
    /// Gives the tree and the removed nodes, in order.
    fn remove_picked(
        n: u32,
        pick: impl Fn(&RbForest, &RbRoot) -> Option<u32>,
    ) -> (RbForest, RbRoot, Vec<u32>) {
        let (mut f, mut r) = build(n);
        let mut expect: Vec<u32> = (0..n).collect();
        let mut removed = Vec::new();
        while let Some(id) = pick(&f, &r) {
            f.remove(&mut r, id);
            f.check(&r);
            removed.push(id);
            expect.retain(|&x| x != id);
            assert_eq!(inorder(&f, &r), expect);
        }
        (f, r, removed)
    }

    #[test]
    fn remove_root_repeatedly() {
        let (f, _, removed) = remove_picked(200, |_, r| (!r.is_empty()).then_some(r.root));
        for root in removed {
            assert!(!f.is_linked(root));
        }
    }

    #[test]
    fn remove_leaves() {
        remove_picked(100, |f, r| {
            // Find some leaf.
            (!r.is_empty()).then(|| {
                inorder(f, r)
                    .into_iter()
                    .find(|&id| f.node(id).child == [NIL, NIL])
                    .unwrap()
            })
        });
    }

    #[test]
    fn remove_two_child_nodes() {
        let (_, r, _) = remove_picked(300, |f, r| {
            inorder(f, r)
                .into_iter()
                .find(|&id| f.node(id).child.iter().all(|&c| c != NIL))
        });
        assert!(!r.is_empty());
    }

    #[test]
    fn remove_then_reinsert() {
        let (mut f, mut r) = build(64);
        for id in (0..64).step_by(3) {
            f.remove(&mut r, id);
            f.check(&r);
        }
        for id in (0..64).step_by(3) {
            f.insert(&mut r, id, 1000 + u64::from(id));
            f.check(&r);
            assert_eq!(f.key(id), 1000 + u64::from(id));
        }
        assert_eq!(r.len(), 64);
        let ks = keys(&f, &inorder(&f, &r));
        assert!(ks.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn find_returns_leftmost_equal() {
        let mut f = RbForest::new(100);
        let mut r = RbRoot::EMPTY;
        // Interleave keys so the equal ones are spread over the tree's shape.
        for id in 0..100u32 {
            f.insert(&mut r, id, u64::from(id % 10));
        }
        f.check(&r);
        for k in 0..10u64 {
            assert_eq!(f.find(&r, k), Some(k as u32));
            assert_eq!(f.lower_bound(&r, k), Some(k as u32));
        }
        assert_eq!(f.find(&r, 10), None);
        // Remove the leftmost of key 3; next leftmost is id 13.
        f.remove(&mut r, 3);
        f.check(&r);
        assert_eq!(f.find(&r, 3), Some(13));
    }

    #[test]
    fn lower_bound_edges() {
        let (f, r) = build(50); // keys 0,2,4,...,98
        assert_eq!(f.lower_bound(&r, 0), Some(0));
        assert_eq!(f.lower_bound(&r, 1), Some(1));
        assert_eq!(f.lower_bound(&r, 2), Some(1));
        assert_eq!(f.lower_bound(&r, 97), Some(49));
        assert_eq!(f.lower_bound(&r, 98), Some(49));
        assert_eq!(f.lower_bound(&r, 99), None);
        assert_eq!(f.lower_bound(&r, u64::MAX), None);

        let mut f = RbForest::new(3);
        let mut r = RbRoot::EMPTY;
        f.insert(&mut r, 0, 100);
        f.insert(&mut r, 1, 200);
        f.insert(&mut r, 2, u64::MAX);
        assert_eq!(f.lower_bound(&r, 0), Some(0)); // below min
        assert_eq!(f.lower_bound(&r, 150), Some(1)); // between
        assert_eq!(f.lower_bound(&r, 201), Some(2));
        assert_eq!(f.lower_bound(&r, u64::MAX), Some(2));
        assert_eq!(f.find(&r, u64::MAX), Some(2));
        f.remove(&mut r, 2);
        assert_eq!(f.lower_bound(&r, 201), None); // above max
    }

    #[test]
    fn next_prev_whole_tree() {
        let (f, r) = build(257);
        let fwd = inorder(&f, &r);
        assert_eq!(fwd, (0..257).collect::<Vec<_>>());
        let back = reverse_order(&f, &r);
        assert_eq!(back, (0..257).rev().collect::<Vec<_>>());
        for id in 0..257u32 {
            let n = f.next(id);
            let p = f.prev(id);
            assert_eq!(n, if id == 256 { None } else { Some(id + 1) });
            assert_eq!(p, if id == 0 { None } else { Some(id - 1) });
        }
    }

    #[test]
    fn two_trees_share_a_forest() {
        let mut f = RbForest::new(20);
        let mut a = RbRoot::EMPTY;
        let mut b = RbRoot::EMPTY;
        for id in 0..20u32 {
            if id % 2 == 0 {
                f.insert(&mut a, id, u64::from(id));
            } else {
                f.insert(&mut b, id, u64::from(20 - id));
            }
            f.check(&a);
            f.check(&b);
        }
        assert_eq!(a.len(), 10);
        assert_eq!(b.len(), 10);
        assert_eq!(inorder(&f, &a), vec![0, 2, 4, 6, 8, 10, 12, 14, 16, 18]);
        assert_eq!(inorder(&f, &b), vec![19, 17, 15, 13, 11, 9, 7, 5, 3, 1]);
        // Move an id from a to b.
        f.remove(&mut a, 4);
        f.insert(&mut b, 4, 0);
        f.check(&a);
        f.check(&b);
        assert_eq!(f.first(&b), Some(4));
        assert_eq!(f.find(&a, 4), None);
        assert_eq!(a.len(), 9);
        assert_eq!(b.len(), 11);
        // Drain both.
        while let Some(id) = f.first(&a) {
            f.remove(&mut a, id);
            f.check(&a);
            f.check(&b);
        }
        while let Some(id) = f.last(&b) {
            f.remove(&mut b, id);
            f.check(&b);
        }
        assert!(a.is_empty() && b.is_empty());
        assert!((0..20).all(|id| !f.is_linked(id)));
    }

    #[test]
    fn grow_keeps_trees_valid() {
        let (mut f, mut r) = build(10);
        let before = inorder(&f, &r);
        f.grow(5); // no-op: smaller
        assert_eq!(f.capacity(), 10);
        f.grow(1000);
        assert_eq!(f.capacity(), 1000);
        f.check(&r);
        assert_eq!(inorder(&f, &r), before);
        for id in 10..1000u32 {
            assert!(!f.is_linked(id));
            f.insert(&mut r, id, u64::from(id) * 2);
        }
        f.check(&r);
        assert_eq!(inorder(&f, &r), (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn remove_after_logical_key_change() {
        // The caller keeps its own notion of each id's key and mutates it while the id is in the
        // tree (e.g. a request that grew by a back merge). Removal must still find the node by
        // links alone.
        let mut f = RbForest::new(64);
        let mut r = RbRoot::EMPTY;
        let mut logical: Vec<u64> = (0..64).map(|i| (i * 37 % 64) as u64).collect();
        for id in 0..64u32 {
            f.insert(&mut r, id, logical[id as usize]);
        }
        f.check(&r);
        // Change the caller's keys wildly; tree keys are untouched.
        for k in logical.iter_mut() {
            *k = u64::MAX - *k;
        }
        for id in (0..64u32).rev() {
            f.remove(&mut r, id);
            f.check(&r);
            // Re-insert half of them under their new logical key.
            if id % 2 == 0 {
                f.insert(&mut r, id, logical[id as usize]);
                f.check(&r);
                assert_eq!(f.key(id), logical[id as usize]);
                f.remove(&mut r, id);
                f.check(&r);
            }
        }
        assert!(r.is_empty());
    }

    #[test]
    fn pseudo_random_churn() {
        // Deterministic seeded churn over a larger tree than the proptest uses.
        let mut rng = crate::rng::Rng::new(0x9E37_79B9_7F4A_7C15);
        let mut rnd = move || rng.next_u64();
        let n = 2048u32;
        let mut f = RbForest::new(n as usize);
        let mut r = RbRoot::EMPTY;
        for id in 0..n {
            f.insert(&mut r, id, rnd() % 512);
        }
        f.check(&r);
        for i in 0..4000 {
            let id = (rnd() % u64::from(n)) as u32;
            f.remove(&mut r, id);
            f.insert(&mut r, id, rnd() % 512);
            if i % 97 == 0 {
                f.check(&r);
            }
        }
        f.check(&r);
        assert_eq!(r.len(), n as usize);
    }

    #[test]
    #[should_panic(expected = "already linked")]
    #[cfg(debug_assertions)]
    fn double_insert_is_caught() {
        let mut f = RbForest::new(2);
        let mut r = RbRoot::EMPTY;
        f.insert(&mut r, 0, 1);
        f.insert(&mut r, 0, 1);
    }

    #[test]
    #[should_panic(expected = "not linked")]
    #[cfg(debug_assertions)]
    fn remove_detached_is_caught() {
        let mut f = RbForest::new(2);
        let mut r = RbRoot::EMPTY;
        f.insert(&mut r, 0, 1);
        f.remove(&mut r, 1);
    }

    #[test]
    #[should_panic(expected = "not in the tree")]
    #[cfg(debug_assertions)]
    fn remove_from_wrong_tree_is_caught() {
        let mut f = RbForest::new(2);
        let mut a = RbRoot::EMPTY;
        let mut b = RbRoot::EMPTY;
        f.insert(&mut a, 0, 1);
        f.insert(&mut b, 1, 1);
        f.remove(&mut a, 1);
    }

    // ------------------------------------------------------------------ proptest

    #[derive(Clone, Debug)]
    enum Op {
        Insert { tree: usize, pick: usize, key: u64 },
        Remove { pick: usize },
        Find { tree: usize, key: u64 },
        LowerBound { tree: usize, key: u64 },
        FirstLast { tree: usize },
        NextPrev { pick: usize },
        Grow { extra: usize },
    }

    const KEY_RANGE: u64 = 12;

    fn op_strategy() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0..2usize, any::<usize>(), 0..KEY_RANGE)
                .prop_map(|(tree, pick, key)| Op::Insert { tree, pick, key }),
            4 => any::<usize>().prop_map(|pick| Op::Remove { pick }),
            2 => (0..2usize, 0..KEY_RANGE + 1).prop_map(|(tree, key)| Op::Find { tree, key }),
            2 => (0..2usize, 0..KEY_RANGE + 1)
                .prop_map(|(tree, key)| Op::LowerBound { tree, key }),
            1 => (0..2usize).prop_map(|tree| Op::FirstLast { tree }),
            2 => any::<usize>().prop_map(|pick| Op::NextPrev { pick }),
            1 => (1..8usize).prop_map(|extra| Op::Grow { extra }),
        ]
    }

    /// Model of two trees sharing one forest.
    struct Model {
        /// Per tree: (key, insertion seq) -> id.
        trees: [BTreeMap<(u64, u64), u32>; 2],
        /// id -> (tree, key, seq) for linked ids.
        linked: HashMap<u32, (usize, u64, u64)>,
        seq: u64,
    }

    fn sorted_linked(m: &Model) -> Vec<u32> {
        let mut v: Vec<u32> = m.linked.keys().copied().collect();
        v.sort_unstable();
        v
    }

    proptest! {
        #[test]
        fn matches_model(ops in proptest::collection::vec(op_strategy(), 1..200)) {
            let mut f = RbForest::new(16);
            let mut roots = [RbRoot::EMPTY, RbRoot::EMPTY];
            let mut m = Model { trees: [BTreeMap::new(), BTreeMap::new()], linked: HashMap::new(), seq: 0 };

            for op in ops {
                match op {
                    Op::Insert { tree, pick, key } => {
                        let free: Vec<u32> = (0..f.capacity() as u32)
                            .filter(|id| !m.linked.contains_key(id))
                            .collect();
                        if free.is_empty() {
                            continue;
                        }
                        let id = free[pick % free.len()];
                        prop_assert!(!f.is_linked(id));
                        f.insert(&mut roots[tree], id, key);
                        m.seq += 1;
                        m.trees[tree].insert((key, m.seq), id);
                        m.linked.insert(id, (tree, key, m.seq));
                        prop_assert!(f.is_linked(id));
                        prop_assert_eq!(f.key(id), key);
                        f.check(&roots[tree]);
                    }
                    Op::Remove { pick } => {
                        let ids = sorted_linked(&m);
                        if ids.is_empty() {
                            continue;
                        }
                        let id = ids[pick % ids.len()];
                        let (tree, key, seq) = m.linked.remove(&id).unwrap();
                        m.trees[tree].remove(&(key, seq));
                        f.remove(&mut roots[tree], id);
                        prop_assert!(!f.is_linked(id));
                        f.check(&roots[tree]);
                    }
                    Op::Find { tree, key } => {
                        let want = m.trees[tree]
                            .range((key, 0)..=(key, u64::MAX))
                            .next()
                            .map(|(_, &id)| id);
                        prop_assert_eq!(f.find(&roots[tree], key), want);
                    }
                    Op::LowerBound { tree, key } => {
                        let want = m.trees[tree].range((key, 0)..).next().map(|(_, &id)| id);
                        prop_assert_eq!(f.lower_bound(&roots[tree], key), want);
                    }
                    Op::FirstLast { tree } => {
                        let t = &m.trees[tree];
                        prop_assert_eq!(f.first(&roots[tree]), t.values().next().copied());
                        prop_assert_eq!(f.last(&roots[tree]), t.values().next_back().copied());
                    }
                    Op::NextPrev { pick } => {
                        let ids = sorted_linked(&m);
                        if ids.is_empty() {
                            continue;
                        }
                        let id = ids[pick % ids.len()];
                        let (tree, key, seq) = m.linked[&id];
                        let t = &m.trees[tree];
                        let want_next = t
                            .range((std::ops::Bound::Excluded((key, seq)), std::ops::Bound::Unbounded))
                            .next()
                            .map(|(_, &i)| i);
                        let want_prev = t.range(..(key, seq)).next_back().map(|(_, &i)| i);
                        prop_assert_eq!(f.next(id), want_next);
                        prop_assert_eq!(f.prev(id), want_prev);
                    }
                    Op::Grow { extra } => {
                        let cap = f.capacity();
                        f.grow(cap + extra);
                        prop_assert_eq!(f.capacity(), cap + extra);
                        f.check(&roots[0]);
                        f.check(&roots[1]);
                    }
                }
                for (root, tree) in roots.iter().zip(&m.trees) {
                    prop_assert_eq!(root.len(), tree.len());
                }
            }
            // Full in-order comparison at the end.
            for (root, tree) in roots.iter().zip(&m.trees) {
                f.check(root);
                let want: Vec<u32> = tree.values().copied().collect();
                prop_assert_eq!(inorder(&f, root), want.clone());
                let mut back = reverse_order(&f, root);
                back.reverse();
                prop_assert_eq!(back, want);
            }
        }
    }
}
