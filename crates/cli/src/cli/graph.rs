//! Arguments of the comparisons and graphs: `graph`, `diff`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use profkit_analysis::graph::GraphStat;

use super::{InputOpts, ProfileClockOpts};

/// A statistic that labels or colours a graph (llvm-xray's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum GraphStatArg {
    #[default]
    None,
    Count,
    Min,
    Med,
    #[value(name = "90p")]
    P90,
    #[value(name = "99p")]
    P99,
    Max,
    Sum,
}

impl From<GraphStatArg> for GraphStat {
    fn from(a: GraphStatArg) -> GraphStat {
        match a {
            GraphStatArg::None => GraphStat::None,
            GraphStatArg::Count => GraphStat::Count,
            GraphStatArg::Min => GraphStat::Min,
            GraphStatArg::Med => GraphStat::Median,
            GraphStatArg::P90 => GraphStat::P90,
            GraphStatArg::P99 => GraphStat::P99,
            GraphStatArg::Max => GraphStat::Max,
            GraphStatArg::Sum => GraphStat::Sum,
        }
    }
}

/// Labels and colours of a DOT graph (llvm-xray graph's options).
#[derive(Debug, Args)]
pub struct GraphStyleArgs {
    /// Label edges with this statistic of their calls.
    #[arg(short = 'e', long, value_enum, default_value = "none")]
    pub edge_label: GraphStatArg,
    /// Label vertices with this statistic of the function's calls.
    #[arg(short = 'v', long, value_enum, default_value = "none")]
    pub vertex_label: GraphStatArg,
    /// Colour edges by this statistic (`--edge-color` is graph-diff's name).
    #[arg(
        short = 'c',
        long,
        visible_alias = "edge-color",
        value_enum,
        default_value = "none"
    )]
    pub color_edges: GraphStatArg,
    /// Colour vertices by this statistic (`--vertex-color` is graph-diff's name).
    #[arg(
        short = 'b',
        long,
        visible_alias = "vertex-color",
        value_enum,
        default_value = "none"
    )]
    pub color_vertices: GraphStatArg,
}

impl GraphStyleArgs {
    /// The model's style.
    pub fn style(&self) -> profkit_analysis::graph::dot::Style {
        profkit_analysis::graph::dot::Style {
            edge_label: self.edge_label.into(),
            edge_color: self.color_edges.into(),
            vertex_label: self.vertex_label.into(),
            vertex_color: self.color_vertices.into(),
        }
    }
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// XRay trace (binary or llvm-xray YAML) or Mono log profiler file with calls (`-` for stdin).
    pub file: PathBuf,
    /// The instrumented binary, for function names (repeat for shared objects, as `account`).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Vec<String>,
    #[command(flatten)]
    pub style: GraphStyleArgs,
    /// Deduce sibling calls (llvm-xray -d): an exit of a function deeper in the stack closes
    /// the frames above it; without it such an exit is skipped (llvm-xray -k).
    #[arg(short = 'd', long = "deduce-sibling-calls")]
    pub deduce_sibling_calls: bool,
    /// Accepted for llvm-xray compatibility; profkit always keeps going.
    #[arg(short = 'k', long = "keep-going")]
    pub keep_going: bool,
    /// Output file (default: stdout).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub input: InputOpts,
}

/// Output of `diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// A table.
    Text,
    /// CSV.
    Csv,
    /// JSON (profkit.diff/1).
    Json,
    /// Differential folded stacks (`stack A B`), the input of differential flame graphs.
    Folded,
    /// A differential flame graph (SVG; red grew, blue shrank).
    Svg,
}

/// Which change orders `diff`'s table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffSort {
    #[value(name = "self")]
    SelfTime,
    Total,
    Calls,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline: an XRay trace or profiling-mode file, Mono file or perf.data (`-` for
    /// stdin).
    pub a: PathBuf,
    /// The comparison, of the same kind.
    pub b: PathBuf,
    /// The instrumented binary of both XRay inputs (repeat for shared objects).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Vec<String>,
    /// The instrumented binary of A only (`-m1` in llvm-xray graph-diff).
    #[arg(long = "instr-map-1", visible_alias = "m1", value_name = "BIN")]
    pub instr_map_1: Vec<String>,
    /// The instrumented binary of B only (`-m2` in llvm-xray graph-diff).
    #[arg(long = "instr-map-2", visible_alias = "m2", value_name = "BIN")]
    pub instr_map_2: Vec<String>,
    /// Output format (ignored with --graph).
    #[arg(short, long, value_enum, default_value = "text")]
    pub format: DiffFormat,
    /// The difference of the call graphs as DOT (llvm-xray graph-diff; not of XRay
    /// profiling-mode files, whose calls have no single durations).
    #[arg(long, conflicts_with = "tsc_hz")]
    pub graph: bool,
    #[command(flatten)]
    pub style: GraphStyleArgs,
    /// With --graph: cut vertex names to this many bytes.
    #[arg(short = 't', long = "vertex-label-trun", default_value_t = 40)]
    pub truncate: usize,
    /// Order the table by the absolute change of this.
    #[arg(short, long, value_enum, default_value = "self")]
    pub sort: DiffSort,
    /// Only the first N rows.
    #[arg(short = 'p', long = "top", value_name = "N")]
    pub top: Option<usize>,
    /// With -f folded/svg: scale B's values so both inputs have the same total (compare shapes,
    /// not amounts).
    #[arg(long)]
    pub normalize: bool,
    /// Deduce sibling calls (llvm-xray -d); with --graph, without it a mismatched exit is
    /// skipped.
    #[arg(short = 'd', long = "deduce-sibling-calls")]
    pub deduce_sibling_calls: bool,
    /// Accepted for llvm-xray compatibility; profkit always keeps going.
    #[arg(short = 'k', long = "keep-going")]
    pub keep_going: bool,
    /// Output file (default: stdout).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub clock: ProfileClockOpts,
    #[command(flatten)]
    pub input: InputOpts,
}
