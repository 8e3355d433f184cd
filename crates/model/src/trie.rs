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
    /// The child of `parent` that calls `func`, if any.
    #[inline]
    pub(crate) fn find<N: Linked>(&self, nodes: &Chunks<N>, parent: u32, func: FuncId) -> Found {
        let mut c = nodes.get(parent as usize).map_or(NONE, N::first_child);
        let mut seen = 0;
        while c != NONE {
            if seen == SHORT {
                return match self.many.get(&(parent, func)) {
                    Some(&n) => Found::Yes(n),
                    None => Found::No(SHORT + 1),
                };
            }
            let Some(node) = nodes.get(c as usize) else {
                break;
            };
            if node.func() == func {
                return Found::Yes(c);
            }
            seen += 1;
            c = node.next_sibling();
        }
        Found::No(seen)
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

    #[derive(Clone, Debug)]
    struct N {
        func: FuncId,
        first: u32,
        next: u32,
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
    }

    fn child(nodes: &mut Chunks<N>, idx: &mut Children, parent: u32, func: u32) -> u32 {
        match idx.find(nodes, parent, FuncId(func)) {
            Found::Yes(n) => n,
            Found::No(had) => {
                let n = nodes.len() as u32;
                nodes.push(N {
                    func: FuncId(func),
                    first: NONE,
                    next: NONE,
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
        let mut nodes = Chunks::default();
        nodes.push(N {
            func: FuncId(0),
            first: NONE,
            next: NONE,
        });
        let mut idx = Children::default();
        let mut made = std::collections::HashMap::new();
        for round in 0..2 {
            for parent_func in 0..3u32 {
                let parent = if parent_func == 0 {
                    0
                } else {
                    child(&mut nodes, &mut idx, 0, 1000 + parent_func)
                };
                let width = [1, SHORT as u32, 70_000][parent_func as usize];
                for f in 0..width {
                    let n = child(&mut nodes, &mut idx, parent, f);
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
