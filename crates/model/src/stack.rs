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

use rustc_hash::FxHashMap;
use std::io::{self, Write};

use crate::events::{CallPath, Enter, EventSink, Sample, TraceInfo};
use crate::func::{FuncId, FuncInfo, FunctionTable};
use crate::replay::Fold;
use crate::span::{Span, SpanSink};

mod folded;

#[derive(Clone, Debug, Default)]
struct Node {
    func: FuncId,
    children: Vec<u32>,
    count: u64,
    inclusive: u64,
    exclusive: u64,
}

/// Call paths of one thread (or several merged) with counts, inclusive and exclusive time.
#[derive(Clone, Debug)]
pub struct StackTree {
    nodes: Vec<Node>,
    /// Children by (parent, function): looked up once per call or sampled frame, so a fast
    /// non-cryptographic hash (the keys are the trace's own small integers).
    index: FxHashMap<(u32, FuncId), u32>,
    path: Vec<u32>,
}

impl Default for StackTree {
    fn default() -> Self {
        StackTree {
            nodes: vec![Node::default()],
            index: FxHashMap::default(),
            path: Vec::new(),
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
        let mut node = 0;
        for &f in stack {
            node = self.child(node, f);
        }
        if node != 0 {
            self.add(node, 1, weight, weight);
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

    /// Whether no call or sample was added.
    pub fn is_empty(&self) -> bool {
        self.nodes.iter().all(|n| n.count == 0)
    }

    fn child(&mut self, parent: u32, func: FuncId) -> u32 {
        if let Some(&n) = self.index.get(&(parent, func)) {
            return n;
        }
        let n = self.nodes.len() as u32;
        self.nodes.push(Node {
            func,
            ..Node::default()
        });
        if let Some(p) = self.nodes.get_mut(parent as usize) {
            p.children.push(n);
        }
        self.index.insert((parent, func), n);
        n
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
            let Some(t) = other.nodes.get(theirs as usize) else {
                continue;
            };
            for &c in &t.children {
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

    /// Every path with at least one completed call, depth first, children in first-call order.
    pub fn paths(&self) -> Vec<PathStats> {
        let mut out = Vec::new();
        let mut todo: Vec<(u32, usize)> = Vec::new();
        let mut path: Vec<FuncId> = Vec::new();
        if let Some(root) = self.nodes.first() {
            for &c in root.children.iter().rev() {
                todo.push((c, 0));
            }
        }
        while let Some((n, depth)) = todo.pop() {
            let Some(node) = self.nodes.get(n as usize) else {
                continue;
            };
            path.truncate(depth);
            path.push(node.func);
            if node.count > 0 {
                out.push(PathStats {
                    path: path.clone(),
                    count: node.count,
                    inclusive: node.inclusive,
                    exclusive: node.exclusive,
                });
            }
            for &c in node.children.iter().rev() {
                todo.push((c, depth + 1));
            }
        }
        out
    }

    /// The `n` call paths with the most exclusive time, as an aligned table; `time` shows a raw
    /// value with its unit (e.g. [`crate::account::human_time`]).
    pub fn write_top(
        &self,
        out: &mut dyn Write,
        names: &FunctionTable,
        n: usize,
        time: &dyn Fn(u64) -> String,
    ) -> io::Result<()> {
        let mut paths = self.paths();
        paths.sort_by_key(|p| std::cmp::Reverse(p.exclusive));
        let total = paths.len();
        paths.truncate(n);
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
        for p in &paths {
            let stack: Vec<String> = p.path.iter().map(|f| names.name(*f)).collect();
            writeln!(
                out,
                "{:>12} {:>12} {:>10}  {}",
                time(p.exclusive),
                time(p.inclusive),
                p.count,
                stack.join(" > ")
            )?;
        }
        Ok(())
    }
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
        self.tree.add_sample(s.stack, s.weight);
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
    }
}
