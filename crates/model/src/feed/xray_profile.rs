//! XRay profiling-mode files → call-path totals per thread: the one profiling-mode driver.
//!
//! A profile holds no single calls, only per thread and call path the number of calls that
//! returned and their total inclusive time (see [`profkit_xray::profile`]). The driver merges
//! each thread's records into one tree (blocks of one thread id, and records of one path, add
//! up; the runtime starts a new root whenever the thread's stack is empty), derives each
//! path's exclusive time (its time less its callees' on the paths one deeper, never below 0),
//! and hands every path that has calls or time to the analysis as a
//! [`CallPath`]: to a [`Fold`] through [`Fold::call_path`] (raw TSC ticks), to an
//! [`EventSink`] through [`EventSink::call_path`] (nanoseconds through the clock, which is
//! unknown unless the user gives the TSC frequency: then the values stay ticks). A sink that
//! takes them whole ([`EventSink::call_trees`]) gets every thread's tree instead, and no path
//! one by one.
//!
//! A cumulative time of 2^63 ticks or more wrapped below zero in the runtime (frames an
//! exception or `longjmp` left without an exit: the exit that closes them subtracts their time
//! from their callers'); it counts as 0, with a problem saying so.
//!
//! What it cannot give: times of calls (no timeline; `origin_ns` is 0), single durations
//! (min, median, percentiles), calls still running when the profile was written (count 0).

use std::collections::HashMap;
use std::io;

use crate::trie::{self, Children, Chunks, Found, Linked, NONE};

use profkit_xray::profile::{Profile, ProfileEntry};
use profkit_xray::Truncation;

use super::{FeedSummary, Folded};
use crate::clock::Clock;
use crate::events::ThreadId;
use crate::events::{CallPath, CallTree, EventSink, ProcessInfo, ThreadInfo, TraceInfo, TreeNode};
use crate::func::{FuncId, FunctionTable};
use crate::replay::Fold;
use crate::span::BuilderStats;

/// A call path of a thread's tree (32 bytes: a file of 50 MB can hold 12.5M of them, issue
/// #23 B5).
#[derive(Clone, Copy, Debug)]
struct Node {
    func: FuncId,
    /// Index of the caller's node (0, the tree's root, for a root call).
    parent: u32,
    first_child: u32,
    next_sibling: u32,
    calls: u64,
    inclusive: u64,
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
}

/// Cumulative times from here on wrapped below zero (`profile-time-wrapped` of `validate`).
const WRAPPED: u64 = 1 << 63;

/// One thread's call paths: node 0 is the root above the thread's root calls; the others in
/// the order their paths first appeared (callers before callees).
#[derive(Debug)]
struct ThreadTree {
    nodes: Chunks<Node>,
    children: Children,
}

impl Default for ThreadTree {
    fn default() -> Self {
        let mut nodes = Chunks::default();
        nodes.push(Node {
            func: FuncId(0),
            parent: NONE,
            first_child: NONE,
            next_sibling: NONE,
            calls: 0,
            inclusive: 0,
        });
        ThreadTree {
            nodes,
            children: Children::default(),
        }
    }
}

impl ThreadTree {
    /// Adds a record; false (nothing added) when the tree has no room for its new nodes (4G
    /// nodes: a file of 16 GB).
    fn add(&mut self, path: impl Iterator<Item = u32>, calls: u64, time: u64) -> bool {
        let mut at = 0u32;
        for id in path {
            let func = FuncId(id);
            at = match self.children.find(&self.nodes, at, func) {
                Found::Yes(n) => n,
                Found::No(had) => {
                    let Some(n) = u32::try_from(self.nodes.len()).ok().filter(|&n| n < NONE) else {
                        return false;
                    };
                    self.nodes.push(Node {
                        func,
                        parent: at,
                        first_child: NONE,
                        next_sibling: NONE,
                        calls: 0,
                        inclusive: 0,
                    });
                    self.children.link(&mut self.nodes, at, had, n);
                    n
                }
            };
        }
        if at != 0 {
            if let Some(node) = self.nodes.get_mut(at as usize) {
                node.calls = node.calls.saturating_add(calls);
                node.inclusive = node.inclusive.saturating_add(time);
            }
        }
        true
    }

    /// Calls `f` with every path that has calls or time, callers before callees, and the
    /// inclusive time of its callees (the nodes one deeper).
    fn paths(&self, mut f: impl FnMut(&[FuncId], &Node, u64)) {
        let mut stack: Vec<FuncId> = Vec::new();
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if n.calls == 0 && n.inclusive == 0 {
                continue;
            }
            stack.clear();
            stack.push(n.func);
            let mut p = n.parent;
            while p != 0 {
                let Some(up) = self.nodes.get(p as usize) else {
                    break;
                };
                stack.push(up.func);
                p = up.parent;
            }
            stack.reverse();
            let callees = trie::children(&self.nodes, i as u32)
                .filter_map(|c| self.nodes.get(c as usize))
                .fold(0u64, |sum, c| sum.saturating_add(c.inclusive));
            f(&stack, n, callees);
        }
    }
}

/// One thread's tree as a [`CallTree`], times through `clock` as [`feed`] gives them.
struct TreeView<'t> {
    tree: &'t ThreadTree,
    clock: Clock,
}

impl CallTree for TreeView<'_> {
    fn len(&self) -> usize {
        self.tree.nodes.len().saturating_sub(1)
    }

    /// Through the links of the nodes (first child, next sibling, parent): no stack, whatever
    /// the depth.
    fn walk(&self, visit: &mut dyn FnMut(&TreeNode)) {
        let nodes = &self.tree.nodes;
        let mut n = nodes.get(0).map_or(NONE, |root| root.first_child);
        let mut depth = 1u32;
        while n != 0 {
            let Some(node) = nodes.get(n as usize) else {
                break;
            };
            let callees = trie::children(nodes, n)
                .filter_map(|c| nodes.get(c as usize))
                .fold(0u64, |sum, c| sum.saturating_add(c.inclusive));
            visit(&TreeNode {
                depth,
                func: node.func,
                calls: node.calls,
                inclusive: self.clock.to_ns(node.inclusive),
                exclusive: self.clock.to_ns(node.inclusive.saturating_sub(callees)),
            });
            if node.first_child != NONE {
                n = node.first_child;
                depth = depth.saturating_add(1);
                continue;
            }
            // The next sibling of this node or of its nearest caller that has one.
            let mut at = node;
            n = loop {
                if at.next_sibling != NONE {
                    break at.next_sibling;
                }
                if at.parent == 0 || at.parent == NONE {
                    break 0;
                }
                match nodes.get(at.parent as usize) {
                    Some(up) => at = up,
                    None => break 0,
                }
                depth = depth.saturating_sub(1);
            };
        }
    }
}

/// A profile read into per-thread trees.
struct Read {
    threads: Vec<(ThreadId, ThreadTree)>,
    /// Returned calls over all paths.
    calls: u64,
    problems: Vec<String>,
    truncation: Option<Truncation>,
}

fn read(profile: &Profile<'_>) -> Read {
    let pid = u32::try_from(profile.header.pid).unwrap_or(0);
    let mut threads: Vec<(ThreadId, ThreadTree)> = Vec::new();
    let mut thread_index: HashMap<ThreadId, usize> = HashMap::new();
    let mut current = 0usize;
    let mut calls = 0u64;
    let mut problems = Vec::new();
    let mut empty = 0u64;
    let mut wrapped = 0u64;
    let mut full = 0u64;
    let mut it = profile.entries();
    for entry in it.by_ref() {
        match entry {
            ProfileEntry::Block(b) => {
                let key = ThreadId { pid, tid: b.tid };
                current = *thread_index.entry(key).or_insert_with(|| {
                    threads.push((key, ThreadTree::default()));
                    threads.len() - 1
                });
            }
            ProfileEntry::Record(r) => {
                if r.path.is_empty() {
                    empty += 1;
                    if empty == 1 {
                        problems.push(format!(
                            "record #{} at offset {:#x}: an empty call path (skipped)",
                            r.index, r.offset
                        ));
                    }
                    continue;
                }
                calls = calls.saturating_add(r.call_count);
                // A time that wrapped below zero (the runtime's unwinding after an exception
                // or longjmp) is no time at all.
                let time = if r.cumulative_time >= WRAPPED {
                    wrapped += 1;
                    if wrapped == 1 {
                        problems.push(format!(
                            "record #{} at offset {:#x}: cumulative time {} wrapped below zero (frames left by an exception or longjmp; the runtime subtracts their time from their callers'): counted as 0",
                            r.index, r.offset, r.cumulative_time
                        ));
                    }
                    0
                } else {
                    r.cumulative_time
                };
                if let Some((_, t)) = threads.get_mut(current) {
                    if !t.add(r.path.root_first(), r.call_count, time) {
                        full += 1;
                        if full == 1 {
                            problems.push(format!(
                                "record #{} at offset {:#x}: the thread's call tree is full (4G call paths): skipped, with the records after it that add paths",
                                r.index, r.offset
                            ));
                        }
                    }
                }
            }
            ProfileEntry::Problem(e) => problems.push(e.to_string()),
        }
    }
    if empty > 1 {
        problems.push(format!(
            "{empty} records with an empty call path in all (skipped)"
        ));
    }
    Read {
        threads,
        calls,
        problems,
        truncation: it.truncation().cloned(),
    }
}

fn summary_of(r: &Read) -> FeedSummary {
    FeedSummary {
        calls: BuilderStats::default(),
        threads: r.threads.len() as u32,
        call_events: r.calls,
        other_events: 0,
        problems: r.problems.clone(),
        truncation: r.truncation.clone(),
        ..FeedSummary::default()
    }
}

/// Runs `make`'s fold on every thread of `profile`: each path that has calls or time goes to
/// [`Fold::call_path`] (raw ticks). `call_events` of the summary counts the returned calls. A
/// fold that needs single calls (it refuses the paths) gets nothing, and a problem says so.
pub fn fold<F: Fold>(profile: &Profile<'_>, make: impl Fn(ThreadId) -> F) -> Folded<ThreadId, F> {
    let r = read(profile);
    let mut summary = summary_of(&r);
    let mut refused = 0u64;
    let mut threads = Vec::with_capacity(r.threads.len());
    for (key, tree) in &r.threads {
        let mut f = make(*key);
        tree.paths(|stack, n, callees| {
            let path = CallPath {
                thread: 0,
                stack,
                calls: n.calls,
                inclusive: n.inclusive,
                exclusive: n.inclusive.saturating_sub(callees),
            };
            if !f.call_path(&path) {
                refused += 1;
            }
        });
        threads.push((*key, f, BuilderStats::default()));
    }
    if refused > 0 {
        summary.problems.push(format!(
            "{refused} call path(s) not used: this analysis needs single calls with times, which an XRay profiling-mode file does not have"
        ));
    }
    Folded { threads, summary }
}

/// Feeds `profile` to `sink`: the process (the header's pid, named `name`), its threads in
/// order of first appearance (`thread <tid>`), then each thread's call paths (callers before
/// callees) in nanoseconds through `clock` (raw ticks when the clock is unknown). There are no
/// calls, samples or instants, and the origin is 0.
pub fn feed(
    profile: &Profile<'_>,
    functions: &FunctionTable,
    clock: Clock,
    name: &str,
    sink: &mut dyn EventSink,
) -> io::Result<FeedSummary> {
    let r = read(profile);
    let summary = summary_of(&r);
    let pid = u32::try_from(profile.header.pid).unwrap_or(0);
    sink.begin(&TraceInfo {
        format: "xray-profile",
        functions,
        clock,
        origin_ns: 0,
        name,
        samples: None,
        origin_unix_ns: None,
    })?;
    sink.process(&ProcessInfo { pid, name })?;
    for (i, (key, _)) in r.threads.iter().enumerate() {
        sink.thread(&ThreadInfo {
            index: i as u32,
            pid: key.pid,
            tid: key.tid,
            name: &format!("thread {}", key.tid),
        })?;
    }
    let views: Vec<TreeView<'_>> = r
        .threads
        .iter()
        .map(|(_, tree)| TreeView { tree, clock })
        .collect();
    let trees: Vec<&dyn CallTree> = views.iter().map(|v| v as &dyn CallTree).collect();
    if sink.call_trees(&trees)? {
        sink.finish()?;
        return Ok(summary);
    }
    for (i, (_, tree)) in r.threads.iter().enumerate() {
        let mut result = Ok(());
        tree.paths(|stack, n, callees| {
            if result.is_err() {
                return;
            }
            result = sink.call_path(&CallPath {
                thread: i as u32,
                stack,
                calls: n.calls,
                inclusive: clock.to_ns(n.inclusive),
                exclusive: clock.to_ns(n.inclusive.saturating_sub(callees)),
            });
        });
        result?;
    }
    sink.finish()?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Recorded, RecordedEvent};
    use crate::stack::StackTree;
    use profkit_xray::profile::write::{PathRecord, ProfileWriter};
    use profkit_xray::profile::ProfileHeader;

    /// main (1) → work (2) → leaf (3), work twice, plus a second root `main` (runtime: a new
    /// root each time the stack is empty) and a second block of the same thread.
    fn sample() -> Vec<u8> {
        let mut w = ProfileWriter::new(&ProfileHeader {
            pid: 77,
            ..ProfileHeader::default()
        });
        w.block(
            5,
            &[
                PathRecord::new(&[1], 1, 100),
                PathRecord::new(&[1, 2], 2, 60),
                PathRecord::new(&[1, 2, 3], 4, 20),
                PathRecord::new(&[1], 1, 10),
            ],
        )
        .unwrap();
        w.block(6, &[PathRecord::new(&[2], 3, 9)]).unwrap();
        w.block(5, &[PathRecord::new(&[1, 2, 3], 1, 5)]).unwrap();
        w.finish()
    }

    #[test]
    fn paths_add_up_and_exclusive_is_inclusive_less_callees() {
        let bytes = sample();
        let p = Profile::parse(&bytes).unwrap();
        let folded = fold(&p, |_| StackTree::new());
        assert_eq!(folded.summary.call_events, 1 + 2 + 4 + 1 + 3 + 1);
        assert_eq!(folded.threads.len(), 2);
        assert_eq!(folded.threads[0].0, ThreadId { pid: 77, tid: 5 });
        let paths = folded.threads[0].1.paths();
        let got: Vec<(Vec<u32>, u64, u64, u64)> = paths
            .iter()
            .map(|p| {
                let ids = p.path.iter().map(|f| f.0).collect();
                (ids, p.count, p.inclusive, p.exclusive)
            })
            .collect();
        assert_eq!(
            got,
            [
                (vec![1], 2, 110, 50),
                (vec![1, 2], 2, 60, 35),
                (vec![1, 2, 3], 5, 25, 25),
            ]
        );
    }

    #[test]
    fn wrapped_times_count_as_zero_and_are_reported() {
        let mut w = ProfileWriter::new(&ProfileHeader::default());
        let wrapped = u64::MAX - 99;
        w.block(
            1,
            &[
                PathRecord::new(&[1], 1, wrapped),
                PathRecord::new(&[1, 2], 1, 30),
            ],
        )
        .unwrap();
        let bytes = w.finish();
        let p = Profile::parse(&bytes).unwrap();
        let folded = fold(&p, |_| StackTree::new());
        assert_eq!(folded.summary.problems.len(), 1);
        assert!(folded.summary.problems[0].contains("wrapped below zero"));
        let paths = folded.threads[0].1.paths();
        assert_eq!((paths[0].inclusive, paths[0].exclusive), (0, 0));
        assert_eq!((paths[1].inclusive, paths[1].exclusive), (30, 30));
    }

    #[test]
    fn a_fold_that_needs_calls_gets_nothing_and_says_so() {
        let bytes = sample();
        let p = Profile::parse(&bytes).unwrap();
        let folded = fold(&p, |_| ());
        assert_eq!(folded.summary.problems.len(), 1);
        assert!(folded.summary.problems[0].contains("needs single calls"));
    }

    #[test]
    fn the_stream_declares_threads_then_paths_in_ns() {
        let bytes = sample();
        let p = Profile::parse(&bytes).unwrap();
        let mut r = Recorded::default();
        // 2 ticks per ns.
        feed(
            &p,
            &FunctionTable::new(),
            Clock::new(2_000_000_000),
            "t",
            &mut r,
        )
        .unwrap();
        assert!(r.finished);
        assert_eq!(r.format, "xray-profile");
        let first = &r.events[..3];
        assert!(matches!(&first[0], RecordedEvent::Process { pid: 77, .. }));
        assert!(matches!(
            &first[1],
            RecordedEvent::Thread {
                index: 0,
                tid: 5,
                ..
            }
        ));
        assert!(matches!(
            &first[2],
            RecordedEvent::Thread {
                index: 1,
                tid: 6,
                ..
            }
        ));
        let paths: Vec<_> = r.events[3..].to_vec();
        assert_eq!(
            paths[0],
            RecordedEvent::CallPath {
                thread: 0,
                stack: vec![FuncId(1)],
                calls: 2,
                inclusive: 55,
                exclusive: 25
            }
        );
        assert_eq!(paths.len(), 4);
    }

    /// A sink that takes every thread's tree and rebuilds its paths from the walk.
    #[derive(Default)]
    struct Trees {
        paths: Vec<RecordedEvent>,
    }

    impl EventSink for Trees {
        fn begin(&mut self, _: &TraceInfo<'_>) -> io::Result<()> {
            Ok(())
        }
        fn call_trees(&mut self, trees: &[&dyn CallTree]) -> io::Result<bool> {
            for (thread, tree) in trees.iter().enumerate() {
                self.tree(thread as u32, *tree);
            }
            Ok(true)
        }
        fn finish(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Trees {
        fn tree(&mut self, thread: u32, tree: &dyn CallTree) {
            let mut stack: Vec<FuncId> = Vec::new();
            let mut nodes = 0;
            tree.walk(&mut |n| {
                nodes += 1;
                assert!(
                    n.depth as usize <= stack.len() + 1,
                    "a walk goes one deeper at most"
                );
                stack.truncate(n.depth as usize - 1);
                stack.push(n.func);
                if n.calls > 0 || n.inclusive > 0 {
                    self.paths.push(RecordedEvent::CallPath {
                        thread,
                        stack: stack.clone(),
                        calls: n.calls,
                        inclusive: n.inclusive,
                        exclusive: n.exclusive,
                    });
                }
            });
            assert_eq!(nodes, tree.len());
        }
    }

    /// The tree a sink takes whole holds the paths (and values) the stream gives one by one,
    /// each node once, callers before callees.
    #[test]
    fn a_tree_taken_whole_holds_the_streamed_paths() {
        let mut w = ProfileWriter::new(&ProfileHeader::default());
        w.block(
            5,
            &[
                PathRecord::new(&[1, 2, 3, 4], 1, 50),
                PathRecord::new(&[1, 2, 5], 2, 30),
                PathRecord::new(&[1], 1, 100),
                PathRecord::new(&[6, 2, 5], 1, 7),
                PathRecord::new(&[1, 2], 1, 90),
                PathRecord::new(&[1, 7], 3, 4),
            ],
        )
        .unwrap();
        w.block(9, &[PathRecord::new(&[2, 3], 1, 9)]).unwrap();
        let bytes = w.finish();
        let p = Profile::parse(&bytes).unwrap();
        let clock = Clock::new(2_000_000_000);
        let mut streamed = Recorded::default();
        feed(&p, &FunctionTable::new(), clock, "t", &mut streamed).unwrap();
        let mut streamed: Vec<_> = streamed
            .events
            .into_iter()
            .filter(|e| matches!(e, RecordedEvent::CallPath { .. }))
            .collect();
        let mut trees = Trees::default();
        feed(&p, &FunctionTable::new(), clock, "t", &mut trees).unwrap();
        let key = |e: &RecordedEvent| format!("{e:?}");
        streamed.sort_by_key(key);
        trees.paths.sort_by_key(key);
        assert_eq!(streamed.len(), 7);
        assert_eq!(trees.paths, streamed);
    }

    #[test]
    fn a_sink_without_call_paths_fails_loudly() {
        struct Nothing;
        impl EventSink for Nothing {
            fn begin(&mut self, _: &TraceInfo<'_>) -> io::Result<()> {
                Ok(())
            }
            fn finish(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let bytes = sample();
        let p = Profile::parse(&bytes).unwrap();
        let e = feed(&p, &FunctionTable::new(), Clock::new(0), "t", &mut Nothing).unwrap_err();
        assert!(crate::events::CannotShow::of(&e).is_some(), "{e}");
    }
}
