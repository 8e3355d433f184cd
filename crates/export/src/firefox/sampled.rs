//! Sampled stacks of one thread, kept as a tree of (function, line) nodes until the profile is
//! finished: only then are the functions' synthetic addresses known (every line sampled in a
//! function takes one address of its range), so only then can the nodes become fxprof frames.

use profkit_model::FuncId;
use rustc_hash::FxHashMap;

/// "No node": the empty stack, or a node's parent at the root.
pub(super) const NO_NODE: u32 = u32::MAX;

/// A stack node: its caller's node, the function and the line it was at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Node {
    pub(super) parent: u32,
    pub(super) func: FuncId,
    pub(super) line: u32,
}

/// The sampled stacks of a thread: the node tree and the samples on it.
#[derive(Debug, Default)]
pub(super) struct SampledStacks {
    /// A node's parent comes before it.
    pub(super) nodes: Vec<Node>,
    children: FxHashMap<(u32, FuncId, u32), u32>,
    /// (time, leaf node or [`NO_NODE`], hits).
    pub(super) samples: Vec<(u64, u32, u64)>,
    /// The last sample's frames and their nodes, outermost first: the next sample usually
    /// shares most of them.
    last: Vec<(FuncId, u32, u32)>,
}

impl SampledStacks {
    /// Adds a sample of `stack` (outermost first) at `lines` (parallel; missing = 0).
    pub(super) fn push(&mut self, time: u64, stack: &[FuncId], lines: &[u32], hits: u64) {
        let line = |i: usize| lines.get(i).copied().unwrap_or(0);
        let common = self
            .last
            .iter()
            .zip(stack.iter().enumerate())
            .take_while(|((f, l, _), (i, g))| f == *g && *l == line(*i))
            .count();
        self.last.truncate(common);
        let mut node = self.last.last().map_or(NO_NODE, |&(_, _, n)| n);
        for (i, &f) in stack.iter().enumerate().skip(common) {
            let l = line(i);
            node = self.child(node, f, l);
            self.last.push((f, l, node));
        }
        self.samples.push((time, node, hits));
    }

    /// The node `(parent, func, line)`, made on first use. When the tree has `u32::MAX - 1`
    /// nodes (more than memory allows anyway) a new one is not made: the parent stands in.
    fn child(&mut self, parent: u32, func: FuncId, line: u32) -> u32 {
        if let Some(&n) = self.children.get(&(parent, func, line)) {
            return n;
        }
        let Ok(n) = u32::try_from(self.nodes.len()) else {
            return parent;
        };
        if n == NO_NODE {
            return parent;
        }
        self.nodes.push(Node { parent, func, line });
        self.children.insert((parent, func, line), n);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_per_function_and_line() {
        let mut s = SampledStacks::default();
        let (a, b) = (FuncId(1), FuncId(2));
        s.push(10, &[a, b], &[1, 5], 1);
        s.push(20, &[a, b], &[1, 6], 1);
        s.push(30, &[a, b], &[1, 5], 2);
        s.push(40, &[a], &[], 1);
        s.push(50, &[], &[], 1);
        assert_eq!(
            s.nodes,
            [
                Node {
                    parent: NO_NODE,
                    func: a,
                    line: 1
                },
                Node {
                    parent: 0,
                    func: b,
                    line: 5
                },
                Node {
                    parent: 0,
                    func: b,
                    line: 6
                },
                Node {
                    parent: NO_NODE,
                    func: a,
                    line: 0
                },
            ]
        );
        assert_eq!(
            s.samples,
            [
                (10, 1, 1),
                (20, 2, 1),
                (30, 1, 2),
                (40, 3, 1),
                (50, NO_NODE, 1)
            ]
        );
    }

    #[test]
    fn the_prefix_cache_gives_the_interned_nodes() {
        // Interleaved stacks: the cache misses, the map answers with the same nodes.
        let mut s = SampledStacks::default();
        let f = |i| FuncId(i);
        for _ in 0..3 {
            s.push(0, &[f(1), f(2), f(3)], &[1, 2, 3], 1);
            s.push(0, &[f(1), f(4)], &[1, 4], 1);
            s.push(0, &[f(1), f(2), f(3)], &[1, 2, 3], 1);
        }
        assert_eq!(s.nodes.len(), 4);
        let leaves: Vec<u32> = s.samples.iter().map(|x| x.1).collect();
        assert_eq!(leaves, [2, 3, 2, 2, 3, 2, 2, 3, 2]);
    }
}
