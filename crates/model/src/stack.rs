//! Aggregated call stacks.
//!
//! * [`StackTree`]: profkit's aggregation, a [`SpanSink`]: per call path, the number of calls,
//!   inclusive time and exclusive (self) time. Folded output of exclusive time gives correct
//!   flame graphs (llvm-xray's flame output is inclusive, llvm/llvm-project#63676).
//! * [`LlvmStackTrie`]: `llvm-xray stack` reproduced, including its rules for unmatched exits
//!   and its "leaf" vs "intermediate" durations.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::func::{FuncId, FunctionTable};
use crate::llvm::densemap_order;
use crate::replay::Fold;
use crate::span::{CallKind, Span, SpanSink};

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
    index: HashMap<(u32, FuncId), u32>,
    path: Vec<u32>,
}

impl Default for StackTree {
    fn default() -> Self {
        StackTree {
            nodes: vec![Node::default()],
            index: HashMap::new(),
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
            if let Some(node) = self.nodes.get_mut(n as usize) {
                node.count += 1;
                node.inclusive = node.inclusive.saturating_add(span.duration());
                node.exclusive = node.exclusive.saturating_add(span.self_time);
            }
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

    /// The `n` call paths with the most exclusive time, as an aligned table with units.
    pub fn write_top(
        &self,
        out: &mut dyn Write,
        names: &FunctionTable,
        n: usize,
        to_ns: &dyn Fn(u64) -> u64,
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
                crate::account::human_ns(to_ns(p.exclusive)),
                crate::account::human_ns(to_ns(p.inclusive)),
                p.count,
                stack.join(" > ")
            )?;
        }
        Ok(())
    }

    /// Folded stacks (`f;g;h VALUE`, one per line), optionally under a `prefix` frame such as
    /// `thread_123`. Lines whose value is 0 are left out.
    pub fn write_folded(
        &self,
        out: &mut dyn Write,
        names: &FunctionTable,
        value: Value,
        prefix: Option<&str>,
        to_output_units: &dyn Fn(u64) -> u64,
    ) -> io::Result<()> {
        let mut cache: HashMap<FuncId, String> = HashMap::new();
        for p in self.paths() {
            let v = match value {
                Value::Exclusive => to_output_units(p.exclusive),
                Value::Inclusive => to_output_units(p.inclusive),
                Value::Count => p.count,
            };
            if v == 0 {
                continue;
            }
            let mut line = String::new();
            if let Some(pre) = prefix {
                line.push_str(pre);
                line.push(';');
            }
            for (i, f) in p.path.iter().enumerate() {
                if i > 0 {
                    line.push(';');
                }
                let name = cache.entry(*f).or_insert_with(|| names.name(*f));
                line.push_str(&name.replace(';', ":"));
            }
            writeln!(out, "{line} {v}")?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Default)]
struct LNode {
    func: FuncId,
    parent: Option<u32>,
    callees: Vec<u32>,
    term_count: u64,
    term_sum: u64,
    inter_count: u64,
    inter_sum: u64,
}

/// `llvm-xray stack` reproduced: a trie per thread id, fed records in llvm's order.
///
/// Its rules: an exit pops up to the frame of its function, charging every popped frame with
/// `|exit - enter|`; the deepest one counts as a *leaf* ("terminal") duration unless the
/// previous record (of any thread) was also an exit. An exit whose function is on no frame
/// unwinds the whole stack (and is an error without `-k`).
#[derive(Clone, Debug, Default)]
pub struct LlvmStackTrie {
    nodes: Vec<LNode>,
    roots: HashMap<u32, Vec<u32>>,
    root_order: Vec<u32>,
    stacks: HashMap<u32, Vec<(u32, u64)>>,
    was_last_exit: bool,
}

/// Aggregation of `llvm-xray stack --all-stacks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    /// Sum of durations (inclusive).
    Time,
    /// Number of calls.
    Count,
}

impl LlvmStackTrie {
    /// An empty trie.
    pub fn new() -> Self {
        Self::default()
    }

    fn new_node(&mut self, tid: u32, func: FuncId, parent: Option<u32>) -> u32 {
        let n = self.nodes.len() as u32;
        self.nodes.push(LNode {
            func,
            parent,
            ..LNode::default()
        });
        if parent.is_none() {
            self.roots_of(tid).push(n);
        }
        n
    }

    fn roots_of(&mut self, tid: u32) -> &mut Vec<u32> {
        if !self.roots.contains_key(&tid) {
            self.root_order.push(tid);
        }
        self.roots.entry(tid).or_default()
    }

    /// Whether no root was created.
    pub fn is_empty(&self) -> bool {
        self.root_order.is_empty()
    }

    /// Accounts one record; `false` when llvm-xray reports "no matching function entry".
    pub fn record(&mut self, tid: u32, kind: CallKind, func: FuncId, tsc: u64) -> bool {
        match kind {
            CallKind::Enter => {
                self.was_last_exit = false;
                let top = self.stacks.get(&tid).and_then(|s| s.last().copied());
                let node = match top {
                    None => {
                        let roots = self.roots_of(tid).clone();
                        let found = roots
                            .iter()
                            .copied()
                            .find(|&r| self.nodes.get(r as usize).is_some_and(|n| n.func == func));
                        match found {
                            Some(r) => r,
                            None => self.new_node(tid, func, None),
                        }
                    }
                    Some((parent, _)) => {
                        let found = self.nodes.get(parent as usize).and_then(|p| {
                            p.callees.iter().copied().find(|&c| {
                                self.nodes.get(c as usize).is_some_and(|n| n.func == func)
                            })
                        });
                        match found {
                            Some(c) => c,
                            None => {
                                let c = self.new_node(tid, func, Some(parent));
                                if let Some(p) = self.nodes.get_mut(parent as usize) {
                                    p.callees.push(c);
                                }
                                c
                            }
                        }
                    }
                };
                self.stacks.entry(tid).or_default().push((node, tsc));
                true
            }
            CallKind::Exit | CallKind::TailExit => {
                let was_last_exit = self.was_last_exit;
                self.was_last_exit = true;
                let Some(stack) = self.stacks.get_mut(&tid) else {
                    return false;
                };
                if stack.is_empty() {
                    return false;
                }
                let nodes = &mut self.nodes;
                let pos = stack
                    .iter()
                    .rposition(|&(n, _)| nodes.get(n as usize).is_some_and(|n| n.func == func));
                let (from, ok) = match pos {
                    Some(p) => (p, true),
                    None => (0, false),
                };
                let last = stack.len() - 1;
                for (i, &(n, start)) in stack.iter().enumerate().skip(from) {
                    let d = start.abs_diff(tsc);
                    if let Some(node) = nodes.get_mut(n as usize) {
                        if i < last || was_last_exit {
                            node.inter_count += 1;
                            node.inter_sum = node.inter_sum.wrapping_add(d);
                        } else {
                            node.term_count += 1;
                            node.term_sum = node.term_sum.wrapping_add(d);
                        }
                    }
                }
                stack.truncate(from);
                ok
            }
        }
    }

    fn tids_in_llvm_order(&self) -> Vec<u32> {
        densemap_order(&self.root_order)
            .into_iter()
            .filter_map(|i| self.root_order.get(i).copied())
            .collect()
    }

    fn lineage(&self, n: u32) -> Vec<u32> {
        lineage(&self.nodes, n)
    }

    fn print_stack(&self, out: &mut dyn Write, leaf: u32, names: &FunctionTable) -> io::Result<()> {
        let lineage = self.lineage(leaf);
        writeln!(
            out,
            "{:<5} {:<60} {:>12} {:>16}",
            "lvl", "function", "count", "sum"
        )?;
        let trunc = |s: String| -> String {
            if s.len() > 60 {
                let mut cut = 57;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}...", &s[..cut])
            } else {
                s
            }
        };
        let mut level = 0;
        for &n in lineage.iter().skip(1).rev() {
            let Some(node) = self.nodes.get(n as usize) else {
                continue;
            };
            writeln!(
                out,
                "#{:<4} {:<60} {:>12} {:>16}",
                level,
                trunc(names.name(node.func)),
                node.inter_count,
                node.inter_sum as i64
            )?;
            level += 1;
        }
        if let Some(node) = self.nodes.get(leaf as usize) {
            writeln!(
                out,
                "#{:<4} {:<60} {:>12} {:>16}",
                level,
                trunc(names.name(node.func)),
                node.term_count,
                node.term_sum as i64
            )?;
        }
        writeln!(out)
    }

    fn print(&self, out: &mut dyn Write, roots: &[u32], names: &FunctionTable) -> io::Result<()> {
        let mut by_count: Vec<(u32, u64)> = Vec::new();
        let mut by_sum: Vec<(u32, u64)> = Vec::new();
        let insert = |v: &mut Vec<(u32, u64)>, e: (u32, u64)| {
            let at = v.iter().position(|x| x.1 <= e.1).unwrap_or(v.len());
            v.insert(at, e);
            if v.len() == 11 {
                v.pop();
            }
        };
        let mut unique = 0u64;
        for &r in roots {
            let mut s = vec![r];
            while let Some(top) = s.pop() {
                let Some(node) = self.nodes.get(top as usize) else {
                    continue;
                };
                if node.term_count > 0 {
                    unique += 1;
                    insert(&mut by_sum, (top, node.term_sum));
                    insert(&mut by_count, (top, node.term_count));
                }
                s.extend(node.callees.iter().copied());
            }
        }
        writeln!(out)?;
        writeln!(out, "Unique Stacks: {unique}")?;
        writeln!(out, "Top 10 Stacks by leaf sum:\n")?;
        for &(n, v) in &by_sum {
            writeln!(out, "Sum: {v}")?;
            self.print_stack(out, n, names)?;
        }
        writeln!(out)?;
        writeln!(out, "Top 10 Stacks by leaf count:\n")?;
        for &(n, v) in &by_count {
            writeln!(out, "Count: {v}")?;
            self.print_stack(out, n, names)?;
        }
        writeln!(out)
    }

    /// `llvm-xray stack` (human output, threads ignored).
    pub fn write_human(&self, out: &mut dyn Write, names: &FunctionTable) -> io::Result<()> {
        let mut roots = Vec::new();
        for tid in self.tids_in_llvm_order() {
            if let Some(r) = self.roots.get(&tid) {
                roots.extend_from_slice(r);
            }
        }
        self.print(out, &roots, names)
    }

    /// `llvm-xray stack --per-thread-stacks`.
    pub fn write_human_per_thread(
        &self,
        out: &mut dyn Write,
        names: &FunctionTable,
    ) -> io::Result<()> {
        for tid in self.tids_in_llvm_order() {
            writeln!(out, "Thread {tid}:")?;
            let roots = self.roots.get(&tid).cloned().unwrap_or_default();
            self.print(out, &roots, names)?;
            writeln!(out)?;
        }
        Ok(())
    }

    /// `llvm-xray stack --all-stacks --stack-format=flame` (per thread; values inclusive).
    pub fn write_flame(
        &self,
        out: &mut dyn Write,
        names: &FunctionTable,
        agg: Aggregation,
    ) -> io::Result<()> {
        for tid in self.tids_in_llvm_order() {
            let roots = self.roots.get(&tid).cloned().unwrap_or_default();
            flame(&self.nodes, out, &roots, Some(tid), names, agg)?;
        }
        Ok(())
    }

    /// `llvm-xray stack --aggregate-threads` (human output of the tries merged across threads).
    pub fn write_human_aggregated(
        &self,
        out: &mut dyn Write,
        names: &FunctionTable,
    ) -> io::Result<()> {
        let (nodes, roots) = self.merged_across_threads();
        let merged = LlvmStackTrie {
            nodes,
            ..LlvmStackTrie::default()
        };
        merged.print(out, &roots, names)
    }

    /// `llvm-xray stack --all-stacks --stack-format=flame --aggregate-threads` (no thread
    /// prefix; values inclusive).
    pub fn write_flame_aggregated(
        &self,
        out: &mut dyn Write,
        names: &FunctionTable,
        agg: Aggregation,
    ) -> io::Result<()> {
        let (nodes, roots) = self.merged_across_threads();
        flame(&nodes, out, &roots, None, names, agg)
    }

    /// llvm's `mergeAcrossThreads`: the roots of every thread (threads in `DenseMap` order),
    /// a root whose function is already there merged into it (the merged root moves to the
    /// end). Returns the node arena (this trie's nodes plus the merged ones) and the roots.
    ///
    /// As in llvm's `mergeTrieNodes`, a callee found on one side only is not copied: the merged
    /// node points at the original, whose parent stays in its own thread's trie, so the
    /// callers printed above such a stack carry that thread's numbers only.
    fn merged_across_threads(&self) -> (Vec<LNode>, Vec<u32>) {
        let mut arena = self.nodes.clone();
        let mut merged: Vec<u32> = Vec::new();
        let func = |arena: &[LNode], n: u32| arena.get(n as usize).map(|x| x.func);
        for tid in self.tids_in_llvm_order() {
            for &r in self.roots.get(&tid).map(Vec::as_slice).unwrap_or_default() {
                let f = func(&arena, r);
                match merged.iter().position(|&m| func(&arena, m) == f) {
                    None => merged.push(r),
                    Some(i) => {
                        let m = merged.remove(i);
                        let n = merge_trie_nodes(&mut arena, m, r, None);
                        merged.push(n);
                    }
                }
            }
        }
        (arena, merged)
    }
}

/// llvm's `mergeTrieNodes(left, right, parent)`, iteratively (a trie is as deep as the deepest
/// stack of an untrusted trace): a new node with both sides' durations; its callees are, in
/// order, right's callees (merged with left's callee of the same function when there is one,
/// else right's own node) and then left's unmatched callees in `DenseMap<int32_t>` order.
fn merge_trie_nodes(arena: &mut Vec<LNode>, left: u32, right: u32, parent: Option<u32>) -> u32 {
    let mut work: Vec<(u32, u32, Option<u32>, Option<usize>)> = vec![(left, right, parent, None)];
    let mut top = u32::MAX;
    while let Some((l, r, parent, slot)) = work.pop() {
        let (Some(ln), Some(rn)) = (arena.get(l as usize), arena.get(r as usize)) else {
            continue;
        };
        let node = LNode {
            func: ln.func,
            parent,
            callees: Vec::new(),
            term_count: ln.term_count + rn.term_count,
            term_sum: ln.term_sum.wrapping_add(rn.term_sum),
            inter_count: ln.inter_count + rn.inter_count,
            inter_sum: ln.inter_sum.wrapping_add(rn.inter_sum),
        };
        let left_callees = ln.callees.clone();
        let right_callees = rn.callees.clone();
        let n = arena.len() as u32;
        arena.push(node);
        match (parent, slot) {
            (Some(p), Some(i)) => {
                if let Some(c) = arena.get_mut(p as usize).and_then(|p| p.callees.get_mut(i)) {
                    *c = n;
                }
            }
            _ => top = n,
        }
        let func = |arena: &[LNode], n: u32| arena.get(n as usize).map(|x| x.func);
        let mut unmatched: Vec<Option<u32>> = left_callees.iter().map(|&c| Some(c)).collect();
        let mut callees = Vec::with_capacity(left_callees.len() + right_callees.len());
        for rc in right_callees {
            let rf = func(arena, rc);
            let hit = unmatched
                .iter()
                .position(|c| c.is_some_and(|c| func(arena, c) == rf));
            match hit
                .and_then(|i| unmatched.get_mut(i))
                .and_then(Option::take)
            {
                Some(lc) => {
                    // Merged later; its slot is filled in then.
                    work.push((lc, rc, Some(n), Some(callees.len())));
                    callees.push(u32::MAX);
                }
                None => callees.push(rc),
            }
        }
        let keys: Vec<u32> = left_callees
            .iter()
            .map(|&c| func(arena, c).map_or(0, |f| f.0))
            .collect();
        for i in densemap_order(&keys) {
            if let Some(Some(lc)) = unmatched.get(i) {
                callees.push(*lc);
            }
        }
        if let Some(node) = arena.get_mut(n as usize) {
            node.callees = callees;
        }
    }
    top
}

/// Flame lines of the tries under `roots` (depth first, callees in reverse order as llvm pops
/// them), each prefixed with `thread_<tid>;` when `tid` is given.
fn flame(
    nodes: &[LNode],
    out: &mut dyn Write,
    roots: &[u32],
    tid: Option<u32>,
    names: &FunctionTable,
    agg: Aggregation,
) -> io::Result<()> {
    for &r in roots {
        let mut s = vec![r];
        while let Some(top) = s.pop() {
            let Some(node) = nodes.get(top as usize) else {
                continue;
            };
            let mut line = match tid {
                Some(t) => format!("thread_{t};"),
                None => String::new(),
            };
            for &n in lineage(nodes, top).iter().rev() {
                if let Some(x) = nodes.get(n as usize) {
                    line.push_str(&names.name(x.func));
                    line.push(';');
                }
            }
            let v = match agg {
                Aggregation::Time => node.inter_sum.wrapping_add(node.term_sum),
                Aggregation::Count => node.inter_count + node.term_count,
            };
            writeln!(out, "{line} {v}")?;
            s.extend(node.callees.iter().copied());
        }
    }
    Ok(())
}

/// `n` and its ancestors, innermost first.
fn lineage(nodes: &[LNode], n: u32) -> Vec<u32> {
    let mut v = vec![n];
    let mut cur = n;
    while let Some(p) = nodes.get(cur as usize).and_then(|x| x.parent) {
        v.push(p);
        cur = p;
    }
    v
}
