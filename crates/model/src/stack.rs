//! Aggregated call stacks.
//!
//! * [`StackTree`]: profkit's aggregation, a [`SpanSink`] and a [`Fold`]: per call path, the
//!   number of calls, inclusive time and exclusive (self) time. Folded output of exclusive time
//!   gives correct flame graphs (llvm-xray's flame output is inclusive,
//!   llvm/llvm-project#63676).
//! * [`StackSink`]: an [`EventSink`] that aggregates every thread's calls, samples and call-path
//!   totals (XRay profiling mode) of a stream into one [`StackTree`] (what `convert -f folded`
//!   and flame graphs draw).
//! * [`StackTree::write_folded`]: *the* folded-stacks writer (`a;b;c 123` lines, sorted; frame
//!   names with `;` → `:` and line breaks → spaces, so that every name stays one frame).

use std::io::{self, Write};

use crate::events::{CallPath, Enter, EventSink, Sample, TraceInfo};
use crate::func::{FuncId, FuncInfo, FunctionTable};
use crate::replay::Fold;
use crate::span::{Span, SpanSink};
use crate::trie::{self, Children, Chunks, Found, Linked, NONE};

mod folded;

/// A call path (40 bytes: an input of 50 MB can hold 12.5M, issue #23 B5). Its children are a
/// list through `first_child` and `next_sibling`, the one found last first
/// ([`Children::find_to_front`](crate::trie::Children::find_to_front)); their first-call
/// order is their node numbers' (nodes are numbered as they are made).
#[derive(Clone, Debug)]
struct Node {
    func: FuncId,
    first_child: u32,
    next_sibling: u32,
    /// All its children are in the tree's child map (in the padding before `count`).
    many: bool,
    count: u64,
    inclusive: u64,
    exclusive: u64,
}

impl Node {
    fn new(func: FuncId) -> Node {
        Node {
            func,
            first_child: NONE,
            next_sibling: NONE,
            many: false,
            count: 0,
            inclusive: 0,
            exclusive: 0,
        }
    }

    fn has_children(&self) -> bool {
        self.first_child != NONE
    }
}

impl Linked for Node {
    fn func(&self) -> FuncId {
        self.func
    }
    fn first_child(&self) -> u32 {
        self.first_child
    }
    fn next_sibling(&self) -> u32 {
        self.next_sibling
    }
    fn set_first_child(&mut self, n: u32) {
        self.first_child = n;
    }
    fn set_next_sibling(&mut self, n: u32) {
        self.next_sibling = n;
    }
    fn many(&self) -> bool {
        self.many
    }
    fn set_many(&mut self) {
        self.many = true;
    }
}

/// Call paths of one thread (or several merged) with counts, inclusive and exclusive time.
#[derive(Clone, Debug)]
pub struct StackTree {
    /// Node 0 is the root; the others in the order their paths were first seen.
    nodes: Chunks<Node>,
    /// Children of nodes with many (a child is looked up once per call or sampled frame).
    index: Children,
    path: Vec<u32>,
    /// Per thread (modulo [`LAST_SLOTS`]), its last sampled stack's functions and their nodes:
    /// the thread's next sample looks up only the frames past the prefix they share (nodes are
    /// never removed, so these stay valid). Per thread, because samples of two threads
    /// interleave: on a two-process node recording, one sample in eight changes thread, and a
    /// single last stack made 4.5 lookups per sample where the thread's own makes 3.2.
    last: Vec<LastPath>,
}

/// Threads that keep a last path of their own; beyond, threads share slots (a slot is only
/// where the comparison starts).
const LAST_SLOTS: usize = 64;

/// A thread's last sampled stack and its nodes.
#[derive(Clone, Debug, Default)]
struct LastPath {
    thread: u32,
    stack: Vec<FuncId>,
    nodes: Vec<u32>,
}

impl Default for StackTree {
    fn default() -> Self {
        let mut nodes = Chunks::default();
        nodes.push(Node::new(FuncId(0)));
        StackTree {
            nodes,
            index: Children::default(),
            path: Vec::new(),
            last: Vec::new(),
        }
    }
}

impl SpanSink for StackTree {
    #[inline]
    fn enter(&mut self, func: FuncId, _time: u64, _depth: u32) {
        let parent = self.path.last().copied().unwrap_or(0);
        let n = self.child(parent, func);
        self.path.push(n);
    }

    #[inline]
    fn span(&mut self, span: &Span) {
        if let Some(n) = self.path.pop() {
            self.add(n, 1, span.duration(), span.self_time);
        }
    }
}

/// A worker's part is a tree of its own, rooted at the frames it inherited; it is grafted
/// under the path open when it is resolved.
impl Fold for StackTree {
    type Part = StackTree;

    fn resolve(&mut self, part: StackTree) {
        let at = self.path.last().copied().unwrap_or(0);
        self.merge_under(at, &part);
    }

    /// Adds the path's calls and times to its node.
    fn call_path(&mut self, path: &CallPath<'_>) -> bool {
        self.add_call_path(path);
        true
    }
}

/// What a folded line's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    /// Exclusive (self) time: flame-graph tools add children to parents themselves.
    Exclusive,
    /// Inclusive time (llvm-xray's flame values).
    Inclusive,
    /// Number of calls of the path.
    Count,
}

/// One call path and its totals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathStats {
    /// Functions, outermost first.
    pub path: Vec<FuncId>,
    /// Calls.
    pub count: u64,
    /// Inclusive time (raw units).
    pub inclusive: u64,
    /// Exclusive time (raw units).
    pub exclusive: u64,
}

impl StackTree {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds to the totals of node `n`.
    #[inline]
    fn add(&mut self, n: u32, count: u64, inclusive: u64, exclusive: u64) {
        if let Some(node) = self.nodes.get_mut(n as usize) {
            node.count += count;
            node.inclusive = node.inclusive.saturating_add(inclusive);
            node.exclusive = node.exclusive.saturating_add(exclusive);
        }
    }

    /// Adds a sampled stack (outermost frame first): one to its leaf's count (`--counts`: the
    /// number of samples), its weight (a perf sample's period; 1 for a Mono hit) to the leaf's
    /// inclusive and exclusive value.
    pub fn add_sample(&mut self, stack: &[FuncId], weight: u64) {
        self.add_thread_sample(0, stack, 0, weight);
    }

    /// [`StackTree::add_sample`] for a sample of thread `thread` (any number that tells the
    /// threads of a recording apart): its stack is compared with that thread's last one, from
    /// frame `shared` on (the frames before are known to be the last one's:
    /// [`Sample::shared`](crate::events::Sample::shared)).
    pub fn add_thread_sample(&mut self, thread: u32, stack: &[FuncId], shared: usize, weight: u64) {
        let slot = thread as usize % LAST_SLOTS;
        if self.last.len() <= slot {
            self.last.resize_with(slot + 1, LastPath::default);
        }
        let mut last = self
            .last
            .get_mut(slot)
            .map(std::mem::take)
            .unwrap_or_default();
        if last.thread != thread {
            last.stack.clear();
            last.nodes.clear();
            last.thread = thread;
        }
        // A thread's consecutive samples mostly share their outer frames: walk down from
        // where its last one's path leaves this one's (the same nodes the lookups would find).
        let known = shared.min(last.stack.len()).min(stack.len());
        let common = known
            + stack
                .get(known..)
                .unwrap_or_default()
                .iter()
                .zip(last.stack.get(known..).unwrap_or_default())
                .take_while(|(a, b)| a == b)
                .count();
        last.stack.truncate(common);
        last.nodes.truncate(common);
        let mut node = last.nodes.last().copied().unwrap_or(0);
        for &f in stack.get(common..).unwrap_or_default() {
            node = self.child(node, f);
            last.stack.push(f);
            last.nodes.push(node);
        }
        if node != 0 {
            self.add(node, 1, weight, weight);
        }
        if let Some(l) = self.last.get_mut(slot) {
            *l = last;
        }
    }

    /// Adds the totals of a call path (XRay profiling mode) to the node of its stack.
    pub fn add_call_path(&mut self, path: &CallPath<'_>) {
        let mut node = 0;
        for &f in path.stack {
            node = self.child(node, f);
        }
        if node != 0 {
            self.add(node, path.calls, path.inclusive, path.exclusive);
        }
    }

    /// Number of call paths (nodes below the root), with calls or not.
    pub fn len(&self) -> usize {
        self.nodes.len().saturating_sub(1)
    }

    /// Whether no call or sample was added.
    pub fn is_empty(&self) -> bool {
        self.nodes.iter().all(|n| n.count == 0)
    }

    /// The node of `func` called from `parent`, made if new. A tree of 4G nodes (an input of
    /// 16 GB) has no room for more: their calls count at the parent.
    fn child(&mut self, parent: u32, func: FuncId) -> u32 {
        match self.index.find_to_front(&mut self.nodes, parent, func) {
            Found::Yes(n) => n,
            Found::No(had) => {
                let Some(n) = u32::try_from(self.nodes.len()).ok().filter(|&n| n < NONE) else {
                    return parent;
                };
                self.nodes.push(Node::new(func));
                self.index.link(&mut self.nodes, parent, had, n);
                n
            }
        }
    }

    /// The children of `n` in the order they were first seen (their node numbers' order).
    fn children_in_order(&self, n: u32) -> Vec<u32> {
        let mut v: Vec<u32> = trie::children(&self.nodes, n).collect();
        v.sort_unstable();
        v
    }

    /// Adds `other`'s paths and totals into this tree.
    pub fn merge(&mut self, other: &StackTree) {
        self.merge_under(0, other);
    }

    /// Adds `other`'s paths and totals under node `at` of this tree (children keep the order
    /// of their first call).
    fn merge_under(&mut self, at: u32, other: &StackTree) {
        let mut todo: Vec<(u32, u32)> = vec![(0, at)];
        while let Some((theirs, mine)) = todo.pop() {
            for c in other.children_in_order(theirs) {
                let Some(tc) = other.nodes.get(c as usize) else {
                    continue;
                };
                let m = self.child(mine, tc.func);
                if let Some(mn) = self.nodes.get_mut(m as usize) {
                    mn.count += tc.count;
                    mn.inclusive = mn.inclusive.saturating_add(tc.inclusive);
                    mn.exclusive = mn.exclusive.saturating_add(tc.exclusive);
                }
                todo.push((c, m));
            }
        }
    }

    /// Calls `visit` with every node below the root, depth first (children in first-call
    /// order): its path (outermost first, the node's function last) and its totals.
    pub fn for_each_node(&self, mut visit: impl FnMut(&[FuncId], &NodeStats)) {
        let mut todo: Vec<(u32, usize)> = Vec::new();
        let mut path: Vec<FuncId> = Vec::new();
        // Children pushed newest first (highest number): the oldest is taken first.
        let push = |todo: &mut Vec<(u32, usize)>, n: u32, depth: usize| {
            let at = todo.len();
            todo.extend(trie::children(&self.nodes, n).map(|c| (c, depth)));
            if let Some(added) = todo.get_mut(at..) {
                added.sort_unstable_by_key(|&(n, _)| std::cmp::Reverse(n));
            }
        };
        push(&mut todo, 0, 0);
        while let Some((n, depth)) = todo.pop() {
            let Some(node) = self.nodes.get(n as usize) else {
                continue;
            };
            path.truncate(depth);
            path.push(node.func);
            visit(
                &path,
                &NodeStats {
                    count: node.count,
                    inclusive: node.inclusive,
                    exclusive: node.exclusive,
                },
            );
            push(&mut todo, n, depth + 1);
        }
    }

    /// Every path with at least one completed call, depth first, children in first-call order.
    pub fn paths(&self) -> Vec<PathStats> {
        let mut out = Vec::new();
        self.for_each_node(|path, n| {
            if n.count > 0 {
                out.push(PathStats {
                    path: path.to_vec(),
                    count: n.count,
                    inclusive: n.inclusive,
                    exclusive: n.exclusive,
                });
            }
        });
        out
    }

    /// The `n` call paths with the most exclusive time, as an aligned table; `time` shows a raw
    /// value with its unit (e.g. [`crate::account::human_time`]). Only those `n` paths are
    /// copied out of the tree, and names are written as they are looked up (a path can be
    /// 12.5M functions deep: issue #23 B5).
    pub fn write_top(
        &self,
        out: &mut dyn Write,
        names: &FunctionTable,
        n: usize,
        time: &dyn Fn(u64) -> String,
    ) -> io::Result<()> {
        // Paths with calls, by exclusive time (ties in tree order), as their place in the walk.
        let mut order: Vec<(u64, usize)> = Vec::new();
        let mut at = 0usize;
        self.for_each_node(|_, s| {
            if s.count > 0 {
                order.push((s.exclusive, at));
            }
            at += 1;
        });
        let total = order.len();
        order.sort_by_key(|&(excl, _)| std::cmp::Reverse(excl));
        order.truncate(n);
        let mut rank: Vec<(usize, usize)> = order
            .iter()
            .enumerate()
            .map(|(r, &(_, at))| (at, r))
            .collect();
        rank.sort_unstable();
        let mut paths: Vec<Option<PathStats>> = vec![None; order.len()];
        let mut at = 0usize;
        let mut next = rank.iter().peekable();
        self.for_each_node(|path, s| {
            if let Some(&&(want, r)) = next.peek() {
                if want == at {
                    next.next();
                    if let Some(slot) = paths.get_mut(r) {
                        *slot = Some(PathStats {
                            path: path.to_vec(),
                            count: s.count,
                            inclusive: s.inclusive,
                            exclusive: s.exclusive,
                        });
                    }
                }
            }
            at += 1;
        });
        writeln!(
            out,
            "Unique stacks: {total}; top {} by self time:",
            paths.len()
        )?;
        writeln!(
            out,
            "{:>12} {:>12} {:>10}  stack",
            "self", "inclusive", "calls"
        )?;
        for p in paths.iter().flatten() {
            write!(
                out,
                "{:>12} {:>12} {:>10}  ",
                time(p.exclusive),
                time(p.inclusive),
                p.count,
            )?;
            for (i, f) in p.path.iter().enumerate() {
                if i > 0 {
                    out.write_all(b" > ")?;
                }
                match names.get(*f).and_then(|info| info.name.as_deref()) {
                    Some(name) => out.write_all(name.as_bytes())?,
                    None => write!(out, "#{}", f.0)?,
                }
            }
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

/// A node's totals (see [`StackTree::for_each_node`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeStats {
    /// Calls (samples).
    pub count: u64,
    /// Inclusive time (raw units).
    pub inclusive: u64,
    /// Exclusive time (raw units).
    pub exclusive: u64,
}

/// An open call of a thread in a [`StackSink`].
#[derive(Clone, Copy, Debug)]
struct OpenCall {
    node: u32,
    callees: u64,
}

/// Aggregates a stream's calls and samples, every thread into one [`StackTree`]: a call adds
/// to the node of its stack (its self time is its duration less that of the callees seen), a
/// sample adds its weight to the node of its leaf. Values are in the stream's nanoseconds.
#[derive(Debug, Default)]
pub struct StackSink {
    tree: StackTree,
    /// Per thread index, its open calls, innermost last.
    stacks: Vec<Vec<OpenCall>>,
    /// Never used: the resize in `stack` makes every index valid.
    spare: Vec<OpenCall>,
    /// Whether calls (`exit`) and samples were seen.
    pub calls: bool,
    /// Samples seen.
    pub samples: u64,
    /// Names of the functions (from `begin` and `function`).
    pub functions: FunctionTable,
    /// The trace's name (from `begin`).
    pub name: String,
}

impl StackSink {
    /// An empty aggregation.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tree.
    pub fn tree(&self) -> &StackTree {
        &self.tree
    }

    fn stack(&mut self, thread: u32) -> &mut Vec<OpenCall> {
        let i = thread as usize;
        if self.stacks.len() <= i {
            self.stacks.resize_with(i + 1, Vec::new);
        }
        match self.stacks.get_mut(i) {
            Some(s) => s,
            None => &mut self.spare,
        }
    }
}

impl EventSink for StackSink {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        self.functions = trace.functions.clone();
        self.name = trace.name.to_string();
        Ok(())
    }

    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.functions.insert(id, info.clone());
        Ok(())
    }

    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        let mut stack = std::mem::take(self.stack(call.thread));
        // Trust the driver's depth if the stack disagrees (it never should).
        stack.truncate(call.depth as usize);
        let parent = stack.last().map_or(0, |f| f.node);
        let node = self.tree.child(parent, call.func);
        stack.push(OpenCall { node, callees: 0 });
        *self.stack(call.thread) = stack;
        Ok(())
    }

    fn exit(&mut self, span: &Span) -> io::Result<()> {
        self.calls = true;
        let mut stack = std::mem::take(self.stack(span.thread));
        stack.truncate(span.depth as usize + 1);
        let duration = span.duration();
        let (node, self_time) = match stack.pop() {
            Some(open) => (open.node, duration.saturating_sub(open.callees)),
            // No enter seen for this call: count it at the top level.
            None => (self.tree.child(0, span.func), span.self_time),
        };
        if let Some(parent) = stack.last_mut() {
            parent.callees = parent.callees.saturating_add(duration);
        }
        *self.stack(span.thread) = stack;
        self.tree.add(node, 1, duration, self_time);
        Ok(())
    }

    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        self.samples += 1;
        self.tree
            .add_thread_sample(s.thread, s.stack, s.shared, s.weight);
        Ok(())
    }

    fn call_path(&mut self, p: &CallPath<'_>) -> io::Result<()> {
        self.calls = true;
        self.tree.add_call_path(p);
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::func::{FuncInfo, FunctionTable};
    use proptest::prelude::*;

    // Names that are prefixes of each other, with bytes below and above `;` and ` ` after the
    // common part, and two functions with one name.
    const NAMES: &[&str] = &[
        "a", "a b", "a.b", "ab", "a!", "b", "a", "a;x", "", "a~", "a 1", "a 10",
    ];

    proptest! {
        #[test]
        fn folded_lines_are_every_path_byte_sorted(
            stacks in proptest::collection::vec(
                (proptest::collection::vec(0..NAMES.len() as u32, 1..6), 1..12u64), 1..40),
        ) {
            let mut names = FunctionTable::new();
            for (i, n) in NAMES.iter().enumerate() {
                names.insert(FuncId(i as u32), FuncInfo { name: Some(n.to_string()), ..FuncInfo::default() });
            }
            let mut tree = StackTree::new();
            for (s, weight) in &stacks {
                let s: Vec<FuncId> = s.iter().map(|&i| FuncId(i)).collect();
                for _ in 0..*weight {
                    tree.add_sample(&s, 1);
                }
            }
            // The lines as sorting every path's line gives them.
            let mut expected: Vec<String> = tree
                .paths()
                .iter()
                .map(|p| {
                    let frames: Vec<String> = p
                        .path
                        .iter()
                        .map(|f| match names.name(*f).replace(';', ":") {
                            n if n.is_empty() => "?".to_string(),
                            n => n,
                        })
                        .collect();
                    format!("t;{} {}", frames.join(";"), p.count)
                })
                .collect();
            expected.sort();
            let lines = tree.folded_lines(&names, Value::Count, Some("t"), &|v| v);
            prop_assert_eq!(lines, expected);
        }

        /// Samples of interleaved threads (more threads than slots, too) make the tree one
        /// last stack for all makes: the same nodes, in the same order, with the same children
        /// and totals (the lists' order depends on the lookups, which the last stacks save).
        #[test]
        fn a_last_path_per_thread_builds_the_same_tree(
            samples in proptest::collection::vec(
                (0..200u32, proptest::collection::vec(0..4u32, 0..8), 1..5u64), 1..200),
        ) {
            let nodes = |t: &StackTree| -> Vec<(FuncId, Vec<u32>, u64, u64, u64)> {
                (0..t.nodes.len() as u32)
                    .map(|i| {
                        let n = t.nodes.get(i as usize).unwrap();
                        (n.func, t.children_in_order(i), n.count, n.inclusive, n.exclusive)
                    })
                    .collect()
            };
            let mut one = StackTree::new();
            let mut per_thread = StackTree::new();
            let mut told = StackTree::new();
            let mut last: std::collections::HashMap<u32, Vec<FuncId>> = Default::default();
            for (thread, stack, weight) in &samples {
                let stack: Vec<FuncId> = stack.iter().map(|&f| FuncId(f)).collect();
                one.add_sample(&stack, *weight);
                per_thread.add_thread_sample(*thread, &stack, 0, *weight);
                // Told how many frames the thread's last sample shares (as a sample says it).
                let prev = last.insert(*thread, stack.clone()).unwrap_or_default();
                let shared = stack.iter().zip(&prev).take_while(|(a, b)| a == b).count();
                told.add_thread_sample(*thread, &stack, shared, *weight);
            }
            prop_assert_eq!(nodes(&one), nodes(&told));
            prop_assert_eq!(nodes(&one), nodes(&per_thread));
            prop_assert_eq!(one.paths(), per_thread.paths());
        }
    }
}
