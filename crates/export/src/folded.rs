//! Folded stacks (`main;parse;lex 1234` lines, the input of flamegraph.pl and inferno) and,
//! with cargo feature `svg`, SVG flame graphs drawn by inferno (CDDL-1.0).
//!
//! Stacks are aggregated in memory in a call tree shared by every thread (memory grows with
//! the number of distinct stacks, not with the trace): each thread's open calls are a path in
//! the tree; an [`EventSink::exit`] adds to the node of the call that returned (its self time
//! is its duration less its callees' durations, computed here from the calls seen), a
//! [`EventSink::sample`] adds its weight to the node of its leaf frame. The value of a line is:
//!
//! * by default, the **exclusive** (self) time in nanoseconds of the calls with that stack —
//!   so a frame's width in a flame graph, the sum of its line and of every line below it, is
//!   its inclusive time;
//! * with [`Options::counts`], the number of calls with that stack;
//! * with [`Options::inclusive`], the inclusive time (llvm-xray's flame output: not a correct
//!   flame graph input, since parents would count their children twice);
//! * for samples, their weight, whatever the options.
//!
//! Lines come sorted by stack; stacks whose value is 0 are left out. Frame names have `;`
//! replaced by `:` and line breaks by spaces, so every name stays one frame.

use std::io::{self, Write};

use profkit_model::events::{EventSink, Sample, TraceInfo};
use profkit_model::func::FuncId;
use profkit_model::span::Span;

use crate::chrome::shared::{push_u64, FxHashMap, IdMap, Names, OutStream};
use crate::{Options, Output};

/// A writer into `output`: folded text, or an SVG flame graph when `svg`.
pub fn sink(
    output: &Output,
    options: &Options,
    svg: bool,
) -> io::Result<Box<dyn EventSink + Send>> {
    if svg && !cfg!(feature = "svg") {
        return Err(crate::unsupported(
            "this profkit was built without the `svg` feature (inferno)",
        ));
    }
    let out = OutStream::open(output, !svg)?;
    let mut w = FoldedWriter::new(out, options);
    w.svg = svg;
    Ok(Box::new(w))
}

/// What a line's value measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Self time in ns (the default).
    Exclusive,
    /// Inclusive time in ns.
    Inclusive,
    /// Number of calls.
    Counts,
}

impl Weight {
    /// The weight the options ask for (`counts` wins over `inclusive`).
    pub fn from_options(options: &Options) -> Weight {
        if options.counts {
            Weight::Counts
        } else if options.inclusive {
            Weight::Inclusive
        } else {
            Weight::Exclusive
        }
    }
}

/// A node of the call tree: a stack.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Parent node (the root is 0 and its own parent).
    parent: u32,
    func: FuncId,
    value: u64,
}

/// An open call of a thread.
#[derive(Clone, Copy, Debug)]
struct Open {
    /// Its node in the call tree.
    node: u32,
    /// Time spent in the callees that returned so far.
    callees: u64,
}

/// Aggregates stacks and writes them, folded or as an SVG, at [`EventSink::finish`]. See the
/// [module docs](self).
pub struct FoldedWriter<W: Write> {
    out: W,
    weight: Weight,
    svg: bool,
    title: Option<String>,
    names: Names,
    nodes: Vec<Node>,
    children: FxHashMap<(u32, FuncId), u32>,
    /// Per thread, its open calls, innermost last.
    stacks: IdMap<Vec<Open>>,
    calls: bool,
    samples: bool,
    finished: bool,
}

impl<W: Write> FoldedWriter<W> {
    /// A writer of folded text into `out`, weighing stacks as `options` asks.
    pub fn new(out: W, options: &Options) -> Self {
        FoldedWriter {
            out,
            weight: Weight::from_options(options),
            svg: false,
            title: options.title.clone(),
            names: Names::default(),
            nodes: vec![Node {
                parent: 0,
                func: FuncId(0),
                value: 0,
            }],
            children: FxHashMap::default(),
            stacks: IdMap::default(),
            calls: false,
            samples: false,
            finished: false,
        }
    }

    /// A writer of an SVG flame graph into `out` (feature `svg`).
    #[cfg(feature = "svg")]
    pub fn new_svg(out: W, options: &Options) -> Self {
        let mut w = Self::new(out, options);
        w.svg = true;
        w
    }

    /// The output.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The output, giving up the writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn child(&mut self, parent: u32, func: FuncId) -> u32 {
        if let Some(&c) = self.children.get(&(parent, func)) {
            return c;
        }
        let c = self.nodes.len() as u32;
        self.nodes.push(Node {
            parent,
            func,
            value: 0,
        });
        self.children.insert((parent, func), c);
        c
    }

    fn add(&mut self, node: u32, v: u64) {
        if let Some(n) = self.nodes.get_mut(node as usize) {
            n.value = n.value.saturating_add(v);
        }
    }

    /// The folded lines, sorted, without a trailing newline on the last.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut path: Vec<FuncId> = Vec::new();
        for node in self.nodes.iter().skip(1).filter(|n| n.value > 0) {
            path.clear();
            path.push(node.func);
            let mut p = node.parent;
            // The tree has no cycles (a parent is always created before its children); the
            // bound guards against one anyway.
            while p != 0 && path.len() <= self.nodes.len() {
                let Some(n) = self.nodes.get(p as usize) else {
                    break;
                };
                path.push(n.func);
                p = n.parent;
            }
            let mut line = String::new();
            for (i, &f) in path.iter().rev().enumerate() {
                if i > 0 {
                    line.push(';');
                }
                push_frame_name(&mut line, &self.names.get(f));
            }
            line.push(' ');
            let mut v = Vec::new();
            push_u64(&mut v, node.value);
            line.push_str(std::str::from_utf8(&v).unwrap_or("0"));
            lines.push(line);
        }
        lines.sort_unstable();
        lines
    }

    #[cfg(feature = "svg")]
    fn write_svg(&mut self, lines: &[String]) -> io::Result<()> {
        let mut opts = inferno::flamegraph::Options::default();
        opts.title = self
            .title
            .clone()
            .unwrap_or_else(|| "Flame Graph".to_string());
        opts.count_name = match self.weight {
            Weight::Counts if !self.samples => "calls",
            _ if self.samples && !self.calls => "samples",
            _ => "ns",
        }
        .to_string();
        opts.deterministic = true;
        inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut self.out)
    }

    #[cfg(not(feature = "svg"))]
    fn write_svg(&mut self, _lines: &[String]) -> io::Result<()> {
        Err(crate::unsupported(
            "this profkit was built without the `svg` feature (inferno)",
        ))
    }
}

/// Appends `name` with `;` → `:` and line breaks → spaces (empty names become `?`).
fn push_frame_name(out: &mut String, name: &str) {
    if name.is_empty() {
        out.push('?');
        return;
    }
    out.extend(name.chars().map(|c| match c {
        ';' => ':',
        '\n' | '\r' => ' ',
        c => c,
    }));
}

impl<W: Write + Send> EventSink for FoldedWriter<W> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        self.names = Names::new(trace.functions);
        if self.title.is_none() && !trace.name.is_empty() {
            self.title = Some(trace.name.to_string());
        }
        Ok(())
    }

    fn enter(&mut self, thread: u32, func: FuncId, _time: u64, depth: u32) -> io::Result<()> {
        let mut stack = std::mem::take(self.stacks.get_or_insert_with(thread, Vec::new));
        // Trust the driver's depth if the stack disagrees (it never should).
        stack.truncate(depth as usize);
        let parent = stack.last().map_or(0, |f| f.node);
        let node = self.child(parent, func);
        stack.push(Open { node, callees: 0 });
        *self.stacks.get_or_insert_with(thread, Vec::new) = stack;
        Ok(())
    }

    fn exit(&mut self, span: &Span) -> io::Result<()> {
        self.calls = true;
        let mut stack = std::mem::take(self.stacks.get_or_insert_with(span.thread, Vec::new));
        stack.truncate(span.depth as usize + 1);
        let duration = span.duration();
        let (node, self_ns) = match stack.pop() {
            // Self time from the callees seen, so it holds whatever the driver computed.
            Some(open) => (open.node, duration.saturating_sub(open.callees)),
            // No enter seen for this call: count it at the top level.
            None => (self.child(0, span.func), span.self_time),
        };
        if let Some(parent) = stack.last_mut() {
            parent.callees = parent.callees.saturating_add(duration);
        }
        *self.stacks.get_or_insert_with(span.thread, Vec::new) = stack;
        let v = match self.weight {
            Weight::Exclusive => self_ns,
            Weight::Inclusive => duration,
            Weight::Counts => 1,
        };
        self.add(node, v);
        Ok(())
    }

    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        self.samples = true;
        let mut node = 0;
        for &f in s.stack {
            node = self.child(node, f);
        }
        if node != 0 {
            self.add(node, s.weight);
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let lines = self.lines();
        if self.svg {
            self.write_svg(&lines)?;
        } else {
            let mut buf = Vec::with_capacity(1 << 16);
            for l in &lines {
                buf.extend_from_slice(l.as_bytes());
                buf.push(b'\n');
                if buf.len() >= 1 << 16 {
                    self.out.write_all(&buf)?;
                    buf.clear();
                }
            }
            self.out.write_all(&buf)?;
        }
        self.out.flush()
    }
}
