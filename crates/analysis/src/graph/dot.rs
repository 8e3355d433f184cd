//! DOT output of call graphs, with the labels, colours and line rules of `llvm-xray graph` and
//! `llvm-xray graph-diff`.
//!
//! The lines are llvm-xray's; their order is not: llvm-xray walks its hash tables (an order
//! that differs between LLVM 14 and 22), profkit writes edges by caller then callee and
//! vertices by id (`graph`) or name (`graph-diff`, whose vertices are numbered in name order,
//! the root `F0` first). Names are escaped so that every name stays one DOT string (llvm-xray
//! escapes only `&`, `<`, `>` in `graph` and nothing in `graph-diff`).

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::color::Scale;
use super::{Caller, GraphStat, GraphStats};
use crate::account::Row;
use profkit_model::clock::Clock;
use profkit_model::func::FunctionTable;

/// What labels and colours a graph's edges and vertices (llvm-xray's `-e`, `-c`, `-v`, `-b`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    /// Edge label.
    pub edge_label: GraphStat,
    /// Edge colour.
    pub edge_color: GraphStat,
    /// Vertex label (beside the name, in a record).
    pub vertex_label: GraphStat,
    /// Vertex colour.
    pub vertex_color: GraphStat,
}

/// A graph with its names and clock.
#[derive(Clone, Copy)]
pub struct Named<'a> {
    /// The statistics.
    pub stats: &'a GraphStats,
    /// Function names (`#N` for unknown ids).
    pub names: &'a FunctionTable,
    /// The clock of the durations.
    pub clock: Clock,
}

/// Longest name shown in a vertex (longer ones are cut and end in `...`), as llvm-xray.
pub const NAME_LIMIT: usize = 40;

/// `name` cut to `limit` bytes (at a character boundary) plus `...` when longer.
fn truncate(name: &str, limit: usize) -> String {
    if name.len() <= limit {
        return name.to_string();
    }
    let mut end = limit;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", name.get(..end).unwrap_or_default())
}

/// Escapes `name` for a DOT string: `&`, `<`, `>` as entities (as llvm-xray), `"` and `\`
/// with a backslash, and in a record label also `{`, `}`, `|` (C++ lambdas are `{lambda()#1}`).
fn escape(name: &str, record: bool) -> String {
    let mut s = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' | '\\' => {
                s.push('\\');
                s.push(c);
            }
            '{' | '}' | '|' if record => {
                s.push('\\');
                s.push(c);
            }
            // Control characters: profkit's one control escaper (`\\n`, `\\u001b`).
            c if c.is_control() => s.push_str(&profkit_common::json::controls_escaped(
                c.encode_utf8(&mut [0; 4]),
            )),
            _ => s.push(c),
        }
    }
    s
}

/// The largest value of `stat` over `rows` (0 when empty).
fn max_of<'r>(stat: GraphStat, rows: impl Iterator<Item = &'r Row>, clock: Clock) -> f64 {
    rows.map(|r| stat.value(r, clock)).fold(0.0, f64::max)
}

/// `llvm-xray graph`'s DOT: an edge per caller → callee (`F0` is the root: calls with no frame
/// under them), a vertex per function; labels and colours as `style` asks (colour = the
/// square root of the statistic over its largest value, on ColorBrewer OrRd).
pub fn write_graph(out: &mut dyn Write, g: Named<'_>, style: Style) -> io::Result<()> {
    let Named {
        stats,
        names,
        clock,
    } = g;
    writeln!(out, "digraph xray {{")?;
    let record = style.vertex_label != GraphStat::None;
    if record {
        writeln!(out, "node [shape=record];")?;
    }
    let scale = Scale::SEQUENTIAL;
    let edge_max = max_of(
        style.edge_color,
        stats.edges.iter().map(|e| &e.stats),
        clock,
    );
    for e in &stats.edges {
        let caller = match e.caller {
            Caller::Root => 0,
            Caller::Func(f) => f.0,
        };
        write!(
            out,
            "F{caller} -> F{} [label=\"{}\"",
            e.callee.0,
            style.edge_label.label(&e.stats, clock)
        )?;
        if style.edge_color != GraphStat::None {
            let v = style.edge_color.value(&e.stats, clock);
            write!(out, " color=\"{}\"", scale.color((v / edge_max).sqrt()))?;
        }
        writeln!(out, "];")?;
    }
    let vertex_max = max_of(style.vertex_color, stats.functions.iter(), clock);
    for row in &stats.functions {
        let name = escape(&truncate(&names.name(row.func), NAME_LIMIT), record);
        write!(out, "F{} [label=\"", row.func.0)?;
        if record {
            write!(out, "{{{name}|{}}}\"", style.vertex_label.label(row, clock))?;
        } else {
            write!(out, "{name}\"")?;
        }
        if style.vertex_color != GraphStat::None {
            let v = style.vertex_color.value(row, clock);
            write!(out, " color=\"{}\"", scale.color((v / vertex_max).sqrt()))?;
        }
        writeln!(out, "];")?;
    }
    writeln!(out, "}}")
}

/// A vertex or edge of two graphs matched by name: its statistics in each (if present).
type Pair<'a> = [Option<&'a Row>; 2];

/// Relative change of `stat` from the first graph to the second (`b / a - 1`).
fn rel_diff(stat: GraphStat, pair: Pair<'_>, clocks: [Clock; 2]) -> Option<f64> {
    let [Some(a), Some(b)] = pair else {
        return None;
    };
    Some(stat.value(b, clocks[1]) / stat.value(a, clocks[0]) - 1.0)
}

/// A ratio as llvm's `formatv("{0:P}")`: percent with two decimals, `nan`, `INF`, `-INF`.
fn percent(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v < 0.0 { "-INF" } else { "INF" }.into()
    } else {
        format!("{:.2}%", v * 100.0)
    }
}

/// Colour of a matched vertex or edge: green if only in the second graph, red if only in the
/// first, black without a colour statistic, else its relative change on PiYG.
fn diff_color(stat: GraphStat, pair: Pair<'_>, clocks: [Clock; 2]) -> String {
    let scale = Scale::DIVERGING;
    match pair {
        [None, _] => scale.color(2.0),
        [_, None] => scale.color(-2.0),
        _ if stat == GraphStat::None => "black".into(),
        _ => scale.color(rel_diff(stat, pair, clocks).map_or(0.0, |d| d.clamp(-1.0, 1.0))),
    }
}

/// `llvm-xray graph-diff`'s DOT of graphs `a` and `b`: functions matched by name, edges by
/// their two names; labels are relative changes, colours relative changes on PiYG (green:
/// only in `b`, red: only in `a`), an edge's width its relative change of the colour statistic
/// when above 100%. Names longer than `truncate` bytes are cut.
pub fn write_graph_diff(
    out: &mut dyn Write,
    a: Named<'_>,
    b: Named<'_>,
    style: Style,
    truncate_at: usize,
) -> io::Result<()> {
    let clocks = [a.clock, b.clock];
    // Name → statistics in each graph; the root is the empty name, numbered F0.
    let mut vertices: BTreeMap<String, Pair<'_>> = BTreeMap::new();
    vertices.insert(String::new(), [None, None]);
    let mut edges: BTreeMap<(String, String), Pair<'_>> = BTreeMap::new();
    for (side, g) in [a, b].iter().enumerate() {
        for row in &g.stats.functions {
            let slot = vertices.entry(g.names.name(row.func)).or_default();
            if let Some(s) = slot.get_mut(side) {
                *s = Some(row);
            }
        }
        for e in &g.stats.edges {
            let caller = match e.caller {
                Caller::Root => String::new(),
                Caller::Func(f) => g.names.name(f),
            };
            let slot = edges.entry((caller, g.names.name(e.callee))).or_default();
            if let Some(s) = slot.get_mut(side) {
                *s = Some(&e.stats);
            }
        }
    }
    let number: BTreeMap<&str, usize> = vertices
        .keys()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let no = |name: &str| number.get(name).copied().unwrap_or(0);
    let record = style.vertex_label != GraphStat::None;
    writeln!(out, "digraph xrayDiff {{")?;
    if record {
        writeln!(out, "node [shape=record]")?;
    }
    for ((caller, callee), pair) in &edges {
        let label = match style.edge_label {
            GraphStat::None => String::new(),
            stat => rel_diff(stat, *pair, clocks)
                .map(percent)
                .unwrap_or_default(),
        };
        let color = diff_color(style.edge_color, *pair, clocks);
        let width = match style.edge_color {
            GraphStat::None => 1.0,
            stat => rel_diff(stat, *pair, clocks).map_or(1.0, |d| if d > 1.0 { d } else { 1.0 }),
        };
        let tail = if caller.is_empty() { "F0" } else { caller };
        writeln!(
            out,
            "F{} -> F{} [tooltip=\"{} -> {}\" label=\"{label}\" color=\"{color}\" labelfontcolor=\"{color}\" penwidth={width:.2}]",
            no(caller),
            no(callee),
            escape(tail, false),
            escape(callee, false),
        )?;
    }
    for (name, pair) in &vertices {
        if name.is_empty() {
            writeln!(out, "F{} [label=\"F0\"]", no(name))?;
            continue;
        }
        let shown = escape(&truncate(name, truncate_at), record);
        let label = match (
            style.vertex_label,
            rel_diff(style.vertex_label, *pair, clocks),
        ) {
            (GraphStat::None, _) | (_, None) => shown,
            (_, Some(d)) => format!("{{{shown}|{}}}", percent(d)),
        };
        let color = diff_color(style.vertex_color, *pair, clocks);
        writeln!(out, "F{} [label=\"{label}\" color=\"{color}\"]", no(name))?;
    }
    writeln!(out, "}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_and_escaped() {
        assert_eq!(truncate("abc", 2), "ab...");
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("aé", 2), "a...");
        assert_eq!(escape("f<int>(a&b)", false), "f&lt;int&gt;(a&amp;b)");
        assert_eq!(escape("{lambda()#1}|\"", true), "\\{lambda()#1\\}\\|\\\"");
        assert_eq!(escape("{x}", false), "{x}");
    }

    #[test]
    fn percent_like_formatv() {
        assert_eq!(percent(-0.7582), "-75.82%");
        assert_eq!(percent(0.0), "0.00%");
        assert_eq!(percent(f64::INFINITY), "INF");
        assert_eq!(percent(f64::NAN), "nan");
    }
}
