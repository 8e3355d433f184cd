//! Call graphs: who called whom, with the durations of the calls along each edge
//! (`llvm-xray graph`), and the difference of two call graphs (`llvm-xray graph-diff`).
//!
//! * [`CallGraph`] is a [`Fold`]: per thread it follows the real stack, so that every completed
//!   call is counted on the edge from its caller (the frame under it; [`Caller::Root`] for an
//!   outermost call) to its function, and on the function itself. A buffer replayed on its own
//!   leaves its outermost calls' caller open until the stitcher knows it.
//! * [`CallGraph::stats`] turns the durations into [`GraphStats`]: one [`Row`] per edge and per
//!   function (a function's durations are those of all its incoming edges, as in llvm-xray).
//! * [`dot`] writes both graphs as DOT, with llvm-xray's labels, colours and layout rules.

pub mod color;
pub mod dot;

use std::collections::{HashMap, HashSet};

use crate::account::{Accounting, Durations, Row};
use profkit_model::clock::Clock;
use profkit_model::func::FuncId;
use profkit_model::replay::Fold;
use profkit_model::span::{Span, SpanSink};

/// The caller side of an edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Caller {
    /// No frame under the call: the thread's outermost calls (llvm-xray's vertex `F0`).
    Root,
    /// A function.
    Func(FuncId),
}

/// Durations of every completed call per caller → callee edge and per function, plus every
/// function entered (also those that never returned). A [`SpanSink`] and a [`Fold`].
///
/// Edges are keyed by the frame under the call *in this graph*: `None` is the thread's root
/// for a fold, and the frame a part inherited for a part (set when it is resolved).
#[derive(Debug, Default)]
pub struct CallGraph {
    path: Vec<FuncId>,
    edges: HashMap<(Option<FuncId>, FuncId), Durations>,
    functions: Accounting,
    entered: HashSet<FuncId>,
}

impl SpanSink for CallGraph {
    #[inline]
    fn enter(&mut self, func: FuncId, _time: u64, _depth: u32) {
        self.path.push(func);
        self.entered.insert(func);
    }

    #[inline]
    fn span(&mut self, span: &Span) {
        self.path.pop();
        let caller = self.path.last().copied();
        self.edges
            .entry((caller, span.func))
            .or_default()
            .push(span.duration());
        self.functions.record(span.func, span.duration());
    }
}

/// A worker's part is a graph of its own; its outermost calls get the frame open when it is
/// resolved as their caller.
impl Fold for CallGraph {
    type Part = CallGraph;

    fn resolve(&mut self, part: CallGraph) {
        let under = self.path.last().copied();
        self.absorb(part, under);
    }
}

impl CallGraph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `other`: another thread's graph (`under` = `None`), or a part whose outermost
    /// calls were made by `under`.
    fn absorb(&mut self, other: CallGraph, under: Option<FuncId>) {
        for ((caller, func), d) in other.edges {
            let caller = caller.or(under);
            let mine = self.edges.entry((caller, func)).or_default();
            if mine.is_empty() {
                *mine = d;
            } else {
                mine.merge(d);
            }
        }
        self.functions.merge(other.functions);
        self.entered.extend(other.entered);
    }

    /// Adds another thread's graph.
    pub fn merge(&mut self, other: CallGraph) {
        self.absorb(other, None);
    }

    /// The statistics of every edge and function, sorted by caller and callee, and by function.
    pub fn stats(mut self) -> GraphStats {
        let mut edges: Vec<Edge> = self
            .edges
            .iter_mut()
            .map(|(&(caller, callee), d)| Edge {
                caller: caller.map_or(Caller::Root, Caller::Func),
                callee,
                stats: d.row(callee),
            })
            .collect();
        edges.sort_by_key(|e| (e.caller, e.callee));
        let mut rows: HashMap<FuncId, Row> = self
            .functions
            .rows()
            .into_iter()
            .map(|r| (r.func, r))
            .collect();
        let mut functions: Vec<Row> = self
            .entered
            .iter()
            .map(|&f| rows.remove(&f).unwrap_or_else(|| Row::empty(f)))
            .collect();
        // A function whose enter the trace lacks still has completed calls.
        functions.extend(rows.into_values());
        functions.sort_by_key(|r| r.func);
        GraphStats { edges, functions }
    }
}

/// One caller → callee edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The calling function, or the root.
    pub caller: Caller,
    /// The called function.
    pub callee: FuncId,
    /// The durations of the calls along this edge (`stats.func` is the callee).
    pub stats: Row,
}

/// A call graph's statistics (raw clock units), sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphStats {
    /// Every edge, by caller then callee (root edges first).
    pub edges: Vec<Edge>,
    /// Every function entered or returned from, by id; its durations are those of all its
    /// incoming edges.
    pub functions: Vec<Row>,
}

/// A statistic of a [`Row`] that labels or colours a graph's edges and vertices (llvm-xray's
/// `none`, `count`, `min`, `med`, `90p`, `99p`, `max`, `sum`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GraphStat {
    /// Nothing.
    #[default]
    None,
    /// Number of calls.
    Count,
    /// Shortest call.
    Min,
    /// Median call.
    Median,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// Longest call.
    Max,
    /// Total time.
    Sum,
}

impl GraphStat {
    /// The statistic as llvm-xray computes it: the count, or the duration in seconds (`ticks /
    /// frequency` in double; raw ticks when the frequency is unknown). `None` is 0.
    pub fn value(self, row: &Row, clock: Clock) -> f64 {
        let ticks = match self {
            GraphStat::None => return 0.0,
            GraphStat::Count => return row.count as f64,
            GraphStat::Min => row.min,
            GraphStat::Median => row.median,
            GraphStat::P90 => row.p90,
            GraphStat::P99 => row.p99,
            GraphStat::Max => row.max,
            GraphStat::Sum => row.sum,
        };
        clock.to_seconds_f64(ticks as f64)
    }

    /// The statistic as llvm-xray prints it in a label: the count as an integer, durations as
    /// `%e` (`8.431480e-04`), nothing for `None`.
    pub fn label(self, row: &Row, clock: Clock) -> String {
        match self {
            GraphStat::None => String::new(),
            GraphStat::Count => row.count.to_string(),
            _ => crate::llvm::format_e(self.value(row, clock)),
        }
    }
}
