//! `llvm-xray stack` reproduced, including its rules for unmatched exits and its "leaf" vs
//! "intermediate" durations ([`LlvmStackTrie`], fed per thread by [`LlvmThreadStack`]).

use std::collections::HashMap;
use std::io::{self, Write};

use crate::llvm::densemap_order;
use profkit_model::func::{FuncId, FunctionTable};
use profkit_model::replay::Fold;
use profkit_model::span::{Span, SpanSink};

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

/// `llvm-xray stack` of one thread, a [`Fold`] in [`Mode::Ordered`](profkit_model::replay::Mode)
/// with [`MismatchPolicy::UnwindAll`](profkit_model::MismatchPolicy::UnwindAll) (llvm's rules: an exit
/// closes the frames up to its function's, or every frame when its function is on none).
///
/// Each closed frame is charged `|exit - enter|`: as a *leaf* ("terminal") duration when it is
/// the first frame an exit closes right after an enter, else as an *intermediate* one.
#[derive(Clone, Debug, Default)]
pub struct LlvmThreadStack {
    tid: u32,
    nodes: Vec<LNode>,
    roots: Vec<u32>,
    path: Vec<u32>,
    last_was_enter: bool,
}

impl LlvmThreadStack {
    /// The trie of thread `tid`.
    pub fn new(tid: u32) -> Self {
        LlvmThreadStack {
            tid,
            ..Self::default()
        }
    }
}

impl SpanSink for LlvmThreadStack {
    fn enter(&mut self, func: FuncId, _time: u64, _depth: u32) {
        self.last_was_enter = true;
        let nodes = &self.nodes;
        let is = |c: &u32| nodes.get(*c as usize).is_some_and(|n| n.func == func);
        let (found, parent) = match self.path.last() {
            None => (self.roots.iter().copied().find(is), None),
            Some(&p) => (
                nodes
                    .get(p as usize)
                    .and_then(|n| n.callees.iter().copied().find(is)),
                Some(p),
            ),
        };
        let node = match found {
            Some(n) => n,
            None => {
                let n = self.nodes.len() as u32;
                self.nodes.push(LNode {
                    func,
                    parent,
                    ..LNode::default()
                });
                match parent.and_then(|p| self.nodes.get_mut(p as usize)) {
                    Some(p) => p.callees.push(n),
                    None => self.roots.push(n),
                }
                n
            }
        };
        self.path.push(node);
    }

    fn span(&mut self, span: &Span) {
        let terminal = std::mem::take(&mut self.last_was_enter);
        let Some(n) = self.path.pop() else { return };
        let d = span.duration();
        if let Some(node) = self.nodes.get_mut(n as usize) {
            if terminal {
                node.term_count += 1;
                node.term_sum = node.term_sum.wrapping_add(d);
            } else {
                node.inter_count += 1;
                node.inter_sum = node.inter_sum.wrapping_add(d);
            }
        }
    }
}

impl Fold for LlvmThreadStack {
    type Part = ();
    fn resolve(&mut self, _part: ()) {}
}

/// `llvm-xray stack` reproduced: the tries of every thread, printed in llvm's layouts.
#[derive(Clone, Debug, Default)]
pub struct LlvmStackTrie {
    nodes: Vec<LNode>,
    roots: HashMap<u32, Vec<u32>>,
    root_order: Vec<u32>,
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
    /// The tries of `threads`, in the order the threads first appeared.
    pub fn from_threads(threads: impl IntoIterator<Item = LlvmThreadStack>) -> Self {
        let mut t = LlvmStackTrie::default();
        for th in threads {
            if th.roots.is_empty() {
                continue;
            }
            let base = t.nodes.len() as u32;
            t.nodes.extend(th.nodes.into_iter().map(|mut n| {
                n.parent = n.parent.map(|p| p + base);
                for c in &mut n.callees {
                    *c += base;
                }
                n
            }));
            if !t.roots.contains_key(&th.tid) {
                t.root_order.push(th.tid);
            }
            t.roots
                .entry(th.tid)
                .or_default()
                .extend(th.roots.iter().map(|r| r + base));
        }
        t
    }

    /// Whether no root was created.
    pub fn is_empty(&self) -> bool {
        self.root_order.is_empty()
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
