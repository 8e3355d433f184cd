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

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::io::{self, Write};

use crate::events::{CallPath, EventSink, Sample, TraceInfo};
use crate::func::{FuncId, FuncInfo, FunctionTable};
use crate::replay::Fold;
use crate::span::{Span, SpanSink};

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

    /// The folded lines (`f;g;h VALUE`), sorted, optionally under a `prefix` frame such as
    /// `thread_123`. Lines whose value is 0 are left out.
    pub fn folded_lines(
        &self,
        names: &FunctionTable,
        value: Value,
        prefix: Option<&str>,
        to_output_units: &dyn Fn(u64) -> u64,
    ) -> Vec<String> {
        let folded = self.sorted_folded(names, value, to_output_units);
        let mut lines = Vec::with_capacity(folded.paths.len());
        for (path, v) in &folded.paths {
            let mut line = Vec::new();
            folded.write_line(&mut line, prefix, path, *v);
            lines.push(String::from_utf8_lossy(&line).into_owned());
        }
        lines
    }

    /// Writes [`StackTree::folded_lines`], one per line, without holding them all: the paths
    /// are sorted as their lines would sort, then written one by one.
    pub fn write_folded(
        &self,
        out: &mut dyn Write,
        names: &FunctionTable,
        value: Value,
        prefix: Option<&str>,
        to_output_units: &dyn Fn(u64) -> u64,
    ) -> io::Result<()> {
        let folded = self.sorted_folded(names, value, to_output_units);
        let mut buf = Vec::with_capacity(1 << 16);
        for (path, v) in &folded.paths {
            folded.write_line(&mut buf, prefix, path, *v);
            buf.push(b'\n');
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        out.write_all(&buf)
    }

    /// The non-zero paths with their values, in the order of their folded lines.
    fn sorted_folded(
        &self,
        names: &FunctionTable,
        value: Value,
        to_output_units: &dyn Fn(u64) -> u64,
    ) -> Folded {
        let mut escaped: HashMap<FuncId, String> = HashMap::new();
        let mut paths = Vec::new();
        for p in self.paths() {
            let v = match value {
                Value::Exclusive => to_output_units(p.exclusive),
                Value::Inclusive => to_output_units(p.inclusive),
                Value::Count => p.count,
            };
            if v == 0 {
                continue;
            }
            for f in &p.path {
                escaped.entry(*f).or_insert_with(|| {
                    let mut e = String::new();
                    push_frame_name(&mut e, &names.name(*f));
                    e
                });
            }
            paths.push((p.path, v));
        }
        let folded = Folded {
            escaped,
            paths: Vec::new(),
        };
        // Lines compare as byte strings; paths share their first frames, whose bytes are equal,
        // so only the bytes from the first differing frame on are compared (lazily).
        paths.sort_unstable_by(|a, b| folded.compare(a, b));
        Folded { paths, ..folded }
    }
}

/// Sorted folded paths and their frames' escaped names.
struct Folded {
    escaped: HashMap<FuncId, String>,
    paths: Vec<(Vec<FuncId>, u64)>,
}

impl Folded {
    fn name(&self, f: FuncId) -> &[u8] {
        self.escaped.get(&f).map_or(&b"?"[..], |s| s.as_bytes())
    }

    /// The bytes of a path's line from frame `from` on (with the `;` before it, if any).
    fn tail<'a>(
        &'a self,
        path: &'a [FuncId],
        from: usize,
        value: &'a str,
    ) -> impl Iterator<Item = u8> + 'a {
        path.iter()
            .enumerate()
            .skip(from)
            .flat_map(move |(k, f)| {
                let sep: &[u8] = if k == 0 { b"" } else { b";" };
                sep.iter().chain(self.name(*f).iter())
            })
            .copied()
            .chain(std::iter::once(b' '))
            .chain(value.bytes())
    }

    fn compare(&self, a: &(Vec<FuncId>, u64), b: &(Vec<FuncId>, u64)) -> std::cmp::Ordering {
        let common = a.0.iter().zip(&b.0).take_while(|(x, y)| x == y).count();
        if let Some(order) = self.compare_at(&a.0, &b.0, common) {
            return order;
        }
        let (mut va, mut vb) = (itoa::Buffer::new(), itoa::Buffer::new());
        let (va, vb) = (va.format(a.1), vb.format(b.1));
        self.tail(&a.0, common, va).cmp(self.tail(&b.0, common, vb))
    }

    /// The order of two lines whose paths first differ at frame `at`, when the bytes of that
    /// frame decide it (nearly always); `None` when the rest must be compared.
    fn compare_at(&self, a: &[FuncId], b: &[FuncId], at: usize) -> Option<std::cmp::Ordering> {
        // What follows frame `at` in a line: `;` and the next frame, or ` ` and the value.
        let after = |p: &[FuncId]| if p.len() > at + 1 { b';' } else { b' ' };
        let sep = if at == 0 { None } else { Some(b';') };
        match (a.get(at), b.get(at)) {
            // One path ends where the other goes on: ` value` against `;name`.
            (None, Some(_)) if sep.is_some() => Some(std::cmp::Ordering::Less),
            (Some(_), None) if sep.is_some() => Some(std::cmp::Ordering::Greater),
            (Some(&fa), Some(&fb)) => {
                let (na, nb) = (self.name(fa), self.name(fb));
                let n = na.len().min(nb.len());
                match na.get(..n).cmp(&nb.get(..n)) {
                    std::cmp::Ordering::Equal => {
                        // One name is a prefix of the other: the shorter one's next byte is its
                        // separator.
                        let xa = na.get(n).copied().unwrap_or_else(|| after(a));
                        let xb = nb.get(n).copied().unwrap_or_else(|| after(b));
                        (xa != xb).then(|| xa.cmp(&xb))
                    }
                    order => Some(order),
                }
            }
            _ => None,
        }
    }

    fn write_line(&self, out: &mut Vec<u8>, prefix: Option<&str>, path: &[FuncId], v: u64) {
        if let Some(pre) = prefix {
            let mut p = String::new();
            push_frame_name(&mut p, pre);
            out.extend_from_slice(p.as_bytes());
            out.push(b';');
        }
        for (i, f) in path.iter().enumerate() {
            if i > 0 {
                out.push(b';');
            }
            out.extend_from_slice(self.name(*f));
        }
        out.push(b' ');
        out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }
}

/// Appends a frame name with `;` → `:` and line breaks → spaces (an empty name becomes `?`).
fn push_frame_name(out: &mut String, name: &str) {
    if name.is_empty() {
        out.push('?');
        return;
    }
    if !name.contains([';', '\n', '\r']) {
        out.push_str(name);
        return;
    }
    out.extend(name.chars().map(|c| match c {
        ';' => ':',
        '\n' | '\r' => ' ',
        c => c,
    }));
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

    fn enter(
        &mut self,
        thread: u32,
        func: FuncId,
        _time: u64,
        depth: u32,
        _args: &[u64],
    ) -> io::Result<()> {
        let mut stack = std::mem::take(self.stack(thread));
        // Trust the driver's depth if the stack disagrees (it never should).
        stack.truncate(depth as usize);
        let parent = stack.last().map_or(0, |f| f.node);
        let node = self.tree.child(parent, func);
        stack.push(OpenCall { node, callees: 0 });
        *self.stack(thread) = stack;
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
    const NAMES: &[&str] = &["a", "a b", "a.b", "ab", "a!", "b", "a", "a;x", "", "a~"];

    proptest! {
        #[test]
        fn folded_lines_are_byte_sorted(
            stacks in proptest::collection::vec(
                proptest::collection::vec(0..NAMES.len() as u32, 1..6), 1..40),
        ) {
            let mut names = FunctionTable::new();
            for (i, n) in NAMES.iter().enumerate() {
                names.insert(FuncId(i as u32), FuncInfo { name: Some(n.to_string()), ..FuncInfo::default() });
            }
            let mut tree = StackTree::new();
            for s in &stacks {
                let s: Vec<FuncId> = s.iter().map(|&i| FuncId(i)).collect();
                tree.add_sample(&s, 1);
            }
            let lines = tree.folded_lines(&names, Value::Count, None, &|v| v);
            let mut sorted = lines.clone();
            sorted.sort();
            prop_assert_eq!(lines, sorted);
        }
    }
}
