//! Storage for call trees whose size the input decides (issue #23, B5: an XRay profiling-mode
//! file of 50 MB can name 12.5 million distinct functions in one call path, and every command
//! must stay under 2 GB of address space).
//!
//! * [`Chunks`]: a growable array in fixed chunks: no reallocation (a `Vec` of N nodes
//!   briefly holds 1.5 N while it doubles, and up to 2 N once it has) and no unused space
//!   beyond one chunk.
//! * [`Children`]: a node's children as a list threaded through the nodes (`first_child`,
//!   `next_sibling`, newest first), found by walking the list while it is short and through
//!   one hash map for the children of nodes that have many. A chain of 12.5M single children
//!   costs 12 bytes of links per node and no hash map (a per-node `Vec` of children was 24
//!   bytes and a heap block, the `(parent, function)` map ~20 bytes more).

use rustc_hash::FxHashMap;

use crate::func::FuncId;

/// Elements per chunk of [`Chunks`].
const CHUNK: usize = 1 << 16;

/// A growable array in chunks of 65,536 elements (see the [module docs](self)).
#[derive(Clone, Debug)]
pub(crate) struct Chunks<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Chunks {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunks<T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn push(&mut self, v: T) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(v),
            _ => {
                // The first chunk grows as a `Vec` does (up to CHUNK, a power of two: never
                // past it): a tree per thread of a 100k-thread trace reserved 2.5 MiB each
                // (250 GB of address space, `stack` 97 s and out of memory under `ulimit -v`).
                let cap = if self.chunks.is_empty() { 0 } else { CHUNK };
                let mut c = Vec::with_capacity(cap);
                c.push(v);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK).and_then(|c| c.get(i % CHUNK))
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks
            .get_mut(i / CHUNK)
            .and_then(|c| c.get_mut(i % CHUNK))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
}

/// No node (the end of a child list).
pub(crate) const NONE: u32 = u32::MAX;

/// A node of a tree that [`Children`] links.
pub(crate) trait Linked {
    fn func(&self) -> FuncId;
    fn first_child(&self) -> u32;
    fn next_sibling(&self) -> u32;
    fn set_first_child(&mut self, n: u32);
    fn set_next_sibling(&mut self, n: u32);
    /// Whether all this node's children are in [`Children`]' map (it has more than
    /// [`SHORT`]); a node type that keeps no such mark says `false`, and its lookups walk the
    /// list first.
    fn many(&self) -> bool {
        false
    }
    fn set_many(&mut self) {}
}

/// Children walked in a list before the hash map is used: a node with more children has all
/// of them in the map.
const SHORT: usize = 8;

/// The hash index of the children of nodes that have more than [`SHORT`] of them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Children {
    many: FxHashMap<(u32, FuncId), u32>,
}

/// Where `func` was looked for under a parent.
pub(crate) enum Found {
    /// The child.
    Yes(u32),
    /// Not there; the parent has this many children (up to `SHORT + 1`: more).
    No(usize),
}

impl Children {
    /// The child of a parent with more than [`SHORT`] children, from the map.
    fn in_map(&self, parent: u32, func: FuncId) -> Found {
        match self.many.get(&(parent, func)) {
            Some(&n) => Found::Yes(n),
            None => Found::No(SHORT + 1),
        }
    }

    /// The child of `parent` that calls `func`, if any.
    #[inline]
    pub(crate) fn find<N: Linked>(&self, nodes: &Chunks<N>, parent: u32, func: FuncId) -> Found {
        let first = nodes.get(parent as usize).map_or(NONE, N::first_child);
        self.search(nodes, parent, first, func).0
    }

    /// [`Children::find`] that moves the child it finds in the list to the front, so that the
    /// children asked for most are found first (a folded tree of sampled stacks: the hot
    /// callees of a function), and goes straight to the map for a parent marked
    /// [`Linked::many`]. The list's order is then no longer the order the children came in:
    /// for trees whose users read that order from the node numbers, not the list.
    pub(crate) fn find_to_front<N: Linked>(
        &self,
        nodes: &mut Chunks<N>,
        parent: u32,
        func: FuncId,
    ) -> Found {
        let Some(p) = nodes.get(parent as usize) else {
            return Found::No(0);
        };
        if p.many() {
            return self.in_map(parent, func);
        }
        let first = p.first_child();
        let (found, before) = self.search(nodes, parent, first, func);
        if let (Found::Yes(c), true) = (&found, before != NONE) {
            let next = nodes.get(*c as usize).map_or(NONE, N::next_sibling);
            if let Some(b) = nodes.get_mut(before as usize) {
                b.set_next_sibling(next);
            }
            if let Some(node) = nodes.get_mut(*c as usize) {
                node.set_next_sibling(first);
            }
            if let Some(p) = nodes.get_mut(parent as usize) {
                p.set_first_child(*c);
            }
        }
        found
    }

    /// `parent`'s child calling `func`, by its list from `first` (by the map past [`SHORT`]
    /// children), and the child before it in the list (`NONE`: none, or found in the map).
    #[inline]
    fn search<N: Linked>(
        &self,
        nodes: &Chunks<N>,
        parent: u32,
        first: u32,
        func: FuncId,
    ) -> (Found, u32) {
        let (mut before, mut c) = (NONE, first);
        let mut seen = 0;
        while c != NONE {
            if seen == SHORT {
                return (self.in_map(parent, func), NONE);
            }
            let Some(node) = nodes.get(c as usize) else {
                break;
            };
            if node.func() == func {
                return (Found::Yes(c), before);
            }
            seen += 1;
            (before, c) = (c, node.next_sibling());
        }
        (Found::No(seen), NONE)
    }

    /// Links node `n` (just pushed) as the first child of `parent`, which had `had` children
    /// (as [`Found::No`] said).
    pub(crate) fn link<N: Linked>(
        &mut self,
        nodes: &mut Chunks<N>,
        parent: u32,
        had: usize,
        n: u32,
    ) {
        let first = nodes.get(parent as usize).map_or(NONE, N::first_child);
        if let Some(node) = nodes.get_mut(n as usize) {
            node.set_next_sibling(first);
        }
        if let Some(p) = nodes.get_mut(parent as usize) {
            p.set_first_child(n);
        }
        if had > SHORT {
            if let Some(node) = nodes.get(n as usize) {
                self.many.insert((parent, node.func()), n);
            }
        } else if had == SHORT {
            // The list just became long: index every child.
            if let Some(p) = nodes.get_mut(parent as usize) {
                p.set_many();
            }
            let mut c = n;
            while let Some(node) = nodes.get(c as usize) {
                self.many.insert((parent, node.func()), c);
                c = node.next_sibling();
            }
        }
    }
}

/// The children of `parent`, newest first.
pub(crate) fn children<N: Linked>(
    nodes: &Chunks<N>,
    parent: u32,
) -> impl Iterator<Item = u32> + '_ {
    let mut c = nodes.get(parent as usize).map_or(NONE, N::first_child);
    std::iter::from_fn(move || {
        let node = nodes.get(c as usize)?;
        let this = c;
        c = node.next_sibling();
        Some(this)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node; it keeps the mark of many children (which only `find_to_front` reads).
    #[derive(Clone, Debug)]
    struct N {
        func: FuncId,
        first: u32,
        next: u32,
        many: bool,
    }

    /// Lookups in random order under parents of 1 to 40 children: each (parent, function) is
    /// one node whatever the order, a child found in a short list is first in it afterwards,
    /// and every list holds its parent's children once each.
    #[test]
    fn moving_children_to_the_front_keeps_every_child_once() {
        let mut rng = profkit_testkit::Xorshift::new(7);
        let (mut nodes, mut idx) = root();
        let mut made = std::collections::HashMap::new();
        let mut find = |nodes: &mut Chunks<N>, parent: u32, func: FuncId| {
            child(nodes, &mut idx, parent, func.0, true)
        };
        let widths = [1u64, 2, SHORT as u64, SHORT as u64 + 1, 40];
        let parents: Vec<u32> = (0..widths.len() as u32)
            .map(|i| find(&mut nodes, 0, FuncId(1000 + i)))
            .collect();
        for _ in 0..20_000 {
            let which = rng.below(widths.len() as u64) as usize;
            let parent = parents[which];
            let func = FuncId(rng.below(widths[which]) as u32);
            let n = find(&mut nodes, parent, func);
            assert_eq!(*made.entry((parent, func)).or_insert(n), n);
            let p = nodes.get(parent as usize).unwrap();
            assert!(!p.many || widths[which] > SHORT as u64);
            if !p.many {
                assert_eq!(p.first, n, "found first");
            }
        }
        // Every child of the two wide parents was made: their lists became long.
        for which in [3, 4] {
            assert!(nodes.get(parents[which] as usize).unwrap().many);
        }
        let mut by_parent: std::collections::HashMap<u32, Vec<u32>> = Default::default();
        for (&(p, _), &n) in &made {
            by_parent.entry(p).or_default().push(n);
        }
        for (p, mut want) in by_parent {
            let mut got: Vec<u32> = children(&nodes, p).collect();
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "parent {p}");
        }
    }

    impl Linked for N {
        fn func(&self) -> FuncId {
            self.func
        }
        fn first_child(&self) -> u32 {
            self.first
        }
        fn next_sibling(&self) -> u32 {
            self.next
        }
        fn set_first_child(&mut self, n: u32) {
            self.first = n;
        }
        fn set_next_sibling(&mut self, n: u32) {
            self.next = n;
        }
        fn many(&self) -> bool {
            self.many
        }
        fn set_many(&mut self) {
            self.many = true;
        }
    }

    /// The tree of a root alone.
    fn root() -> (Chunks<N>, Children) {
        let mut nodes = Chunks::default();
        nodes.push(N {
            func: FuncId(0),
            first: NONE,
            next: NONE,
            many: false,
        });
        (nodes, Children::default())
    }

    /// The child of `parent` calling `func`, made if new; found by
    /// [`Children::find_to_front`] when `to_front`, else by [`Children::find`].
    fn child(
        nodes: &mut Chunks<N>,
        idx: &mut Children,
        parent: u32,
        func: u32,
        to_front: bool,
    ) -> u32 {
        let found = if to_front {
            idx.find_to_front(nodes, parent, FuncId(func))
        } else {
            idx.find(nodes, parent, FuncId(func))
        };
        match found {
            Found::Yes(n) => n,
            Found::No(had) => {
                let n = nodes.len() as u32;
                nodes.push(N {
                    func: FuncId(func),
                    first: NONE,
                    next: NONE,
                    many: false,
                });
                idx.link(nodes, parent, had, n);
                n
            }
        }
    }

    /// Short and long child lists, chunk boundaries crossed: every (parent, function) is one
    /// node, found again, and the lists hold every child once, newest first.
    #[test]
    fn children_are_found_in_lists_and_the_index() {
        let (mut nodes, mut idx) = root();
        let mut made = std::collections::HashMap::new();
        for round in 0..2 {
            for parent_func in 0..3u32 {
                let parent = if parent_func == 0 {
                    0
                } else {
                    child(&mut nodes, &mut idx, 0, 1000 + parent_func, false)
                };
                let width = [1, SHORT as u32, 70_000][parent_func as usize];
                for f in 0..width {
                    let n = child(&mut nodes, &mut idx, parent, f, false);
                    let first = *made.entry((parent, f)).or_insert(n);
                    assert_eq!(first, n, "round {round}");
                }
            }
        }
        assert_eq!(nodes.len(), 1 + 2 + 1 + SHORT + 70_000);
        let under: Vec<u32> = children(&nodes, 0).collect();
        // Newest first: 0's child 0, then the parents 1001 and 1002.
        assert_eq!(under.len(), 3);
        assert_eq!(nodes.get(under[2] as usize).unwrap().func, FuncId(0));
    }
}
