//! The call tree the profile writers (pprof, OTLP) build while events stream in, before they
//! encode it at the end: one trie per thread, a node per distinct (parent, function, line),
//! so memory follows the number of distinct stacks, not of calls or samples.
//!
//! Each node holds what ended at it:
//! * traced calls ([`EventSink::enter`]/[`EventSink::exit`]): the number of calls and their
//!   **exclusive** time (a call's duration less its callees' durations, from the spans
//!   themselves);
//! * call-path totals (XRay profiling mode): their calls and exclusive time, likewise;
//! * samples: what the writer keeps of them ([`Observations`]: pprof sums the weights, OTLP
//!   keeps each sample's time and weight).
//!
//! Node 0.. are in creation order; a thread's root has no function. The tree refuses to grow
//! past a writer's node limit (the profile is built whole in memory) with an error that says
//! what to convert to instead.
//!
//! [`EventSink::enter`]: profkit_model::events::EventSink::enter
//! [`EventSink::exit`]: profkit_model::events::EventSink::exit

use std::collections::HashMap;
use std::io;

use rustc_hash::FxHashMap;

use profkit_model::events::{CallPath, Enter, Sample, ThreadInfo};
use profkit_model::span::Span;
use profkit_model::FuncId;

/// Sentinel parent of the thread roots.
pub const NO_PARENT: u32 = u32::MAX;

/// What a node keeps of the samples that end at it.
pub trait Observations: Default {
    /// A sample at `time` (ns since the origin) of `weight`.
    fn add(&mut self, time: u64, weight: u64);
    /// Whether no sample ended here.
    fn is_empty(&self) -> bool;
}

/// The sum of the weights.
impl Observations for u64 {
    fn add(&mut self, _time: u64, weight: u64) {
        *self = self.saturating_add(weight);
    }
    fn is_empty(&self) -> bool {
        *self == 0
    }
}

/// Every sample's (time, weight).
impl Observations for Vec<(u64, u64)> {
    fn add(&mut self, time: u64, weight: u64) {
        self.push((time, weight));
    }
    fn is_empty(&self) -> bool {
        <[(u64, u64)]>::is_empty(self)
    }
}

/// A node: a thread root (`func == None`) or a frame.
#[derive(Clone, Debug, Default)]
pub struct Node<S> {
    /// The parent node ([`NO_PARENT`] for a root).
    pub parent: u32,
    /// The function (`None` for a root).
    pub func: Option<FuncId>,
    /// The sample's line in `func` (0 = none said).
    pub line: u32,
    /// Thread index of the root this node hangs under.
    pub thread: u32,
    /// Traced calls that ended here.
    pub calls: u64,
    /// Their exclusive time.
    pub time: u64,
    /// The samples that ended here.
    pub samples: S,
}

impl<S: Observations> Node<S> {
    /// Whether nothing ended at this node (only calls through it).
    pub fn is_empty(&self) -> bool {
        self.calls == 0 && self.time == 0 && self.samples.is_empty()
    }
}

/// A thread as the input declared it.
#[derive(Clone, Debug, Default)]
pub struct ThreadMeta {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u64,
    /// Display name.
    pub name: String,
}

#[derive(Clone, Debug, Default)]
struct ThreadState {
    root: Option<u32>,
    /// Open calls: trie node and the time spent in their completed callees.
    stack: Vec<(u32, u64)>,
}

/// The call tree of a trace (see the module docs).
#[derive(Debug)]
pub struct CallTree<S> {
    /// Every node, in creation order.
    pub nodes: Vec<Node<S>>,
    /// The threads declared, by index.
    pub meta: HashMap<u32, ThreadMeta>,
    /// Whether calls (or call-path totals) were traced.
    pub traced: bool,
    /// Whether stacks were sampled.
    pub sampled: bool,
    /// The last event's time.
    pub last_time: u64,
    children: FxHashMap<(u32, FuncId, u32), u32>,
    threads: HashMap<u32, ThreadState>,
    /// (most nodes, the writer's name for the error).
    limit: (usize, &'static str),
}

impl<S: Observations> CallTree<S> {
    /// An empty tree of at most `max_nodes` nodes, for the `writer` output (named in the error
    /// past the limit).
    pub fn new(max_nodes: usize, writer: &'static str) -> Self {
        CallTree {
            nodes: Vec::new(),
            meta: HashMap::new(),
            traced: false,
            sampled: false,
            last_time: 0,
            children: FxHashMap::default(),
            threads: HashMap::new(),
            limit: (max_nodes, writer),
        }
    }

    /// Remembers a thread's ids and name.
    pub fn thread(&mut self, thread: &ThreadInfo<'_>) {
        self.meta.insert(
            thread.index,
            ThreadMeta {
                pid: thread.pid,
                tid: thread.tid,
                name: thread.name.to_string(),
            },
        );
    }

    fn root(&mut self, thread: u32) -> u32 {
        let st = self.threads.entry(thread).or_default();
        if let Some(r) = st.root {
            return r;
        }
        let id = self.nodes.len() as u32;
        self.nodes.push(Node {
            parent: NO_PARENT,
            func: None,
            line: 0,
            thread,
            calls: 0,
            time: 0,
            samples: S::default(),
        });
        st.root = Some(id);
        id
    }

    fn child(&mut self, parent: u32, func: FuncId, line: u32, thread: u32) -> io::Result<u32> {
        if let Some(&id) = self.children.get(&(parent, func, line)) {
            return Ok(id);
        }
        let (max, writer) = self.limit;
        if self.nodes.len() >= max {
            return Err(io::Error::other(format!(
                "{writer} output: more than {max} distinct stack frames (a function at a line under a stack): the profile is built whole in memory (~250 bytes a frame: the call tree, locations, functions and their names) before it is written; convert to folded or speedscope instead"
            )));
        }
        let id = self.nodes.len() as u32;
        self.children.insert((parent, func, line), id);
        self.nodes.push(Node {
            parent,
            func: Some(func),
            line,
            thread,
            calls: 0,
            time: 0,
            samples: S::default(),
        });
        Ok(id)
    }

    /// Adds a call-path total.
    pub fn call_path(&mut self, p: &CallPath<'_>) -> io::Result<()> {
        self.traced = true;
        let mut node = self.root(p.thread);
        for &f in p.stack {
            node = self.child(node, f, 0, p.thread)?;
        }
        if let Some(n) = self.nodes.get_mut(node as usize) {
            n.calls = n.calls.saturating_add(p.calls);
            n.time = n.time.saturating_add(p.exclusive);
        }
        Ok(())
    }

    /// Opens a call.
    pub fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        self.traced = true;
        self.last_time = self.last_time.max(call.time);
        let root = self.root(call.thread);
        let parent = self
            .threads
            .get(&call.thread)
            .and_then(|t| t.stack.last().map(|e| e.0))
            .unwrap_or(root);
        let node = self.child(parent, call.func, 0, call.thread)?;
        if let Some(t) = self.threads.get_mut(&call.thread) {
            t.stack.push((node, 0));
        }
        Ok(())
    }

    /// Closes the innermost open call of the span's thread.
    pub fn exit(&mut self, span: &Span) {
        self.last_time = self.last_time.max(span.end);
        let Some(t) = self.threads.get_mut(&span.thread) else {
            return;
        };
        let Some((node, callees)) = t.stack.pop() else {
            return;
        };
        let duration = span.duration();
        if let Some(parent) = t.stack.last_mut() {
            parent.1 = parent.1.saturating_add(duration);
        }
        if let Some(n) = self.nodes.get_mut(node as usize) {
            n.calls += 1;
            n.time += duration.saturating_sub(callees);
        }
    }

    /// Adds a sampled stack (an empty one is ignored).
    pub fn sample(&mut self, sample: &Sample<'_>) -> io::Result<()> {
        if sample.stack.is_empty() {
            return Ok(());
        }
        self.sampled = true;
        self.last_time = self.last_time.max(sample.time);
        let mut node = self.root(sample.thread);
        for (i, f) in sample.stack.iter().enumerate() {
            node = self.child(node, *f, sample.line(i), sample.thread)?;
        }
        if let Some(n) = self.nodes.get_mut(node as usize) {
            n.samples.add(sample.time, sample.weight);
        }
        Ok(())
    }

    /// The pid of a thread index (0 when undeclared).
    pub fn pid(&self, thread: u32) -> u32 {
        self.meta.get(&thread).map_or(0, |m| m.pid)
    }
}

/// The [`EventSink`](profkit_model::events::EventSink) methods of a writer whose stacks are the
/// [`CallTree`] in its `tree` field: threads, calls, call-path totals and samples go to the
/// tree (used inside the writer's `impl EventSink`).
macro_rules! tree_events {
    () => {
        fn thread(&mut self, thread: &ThreadInfo<'_>) -> io::Result<()> {
            self.tree.thread(thread);
            Ok(())
        }

        fn call_path(&mut self, p: &CallPath<'_>) -> io::Result<()> {
            self.tree.call_path(p)
        }

        fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
            self.tree.enter(call)
        }

        fn exit(&mut self, span: &Span) -> io::Result<()> {
            self.tree.exit(span);
            Ok(())
        }

        fn sample(&mut self, sample: &Sample<'_>) -> io::Result<()> {
            self.tree.sample(sample)
        }
    };
}
pub(crate) use tree_events;
