//! Call graphs of opened inputs (`graph`, `diff --graph`).

use anyhow::{anyhow, Result};
use profkit_analysis::graph::dot::Named;
use profkit_analysis::graph::{CallGraph, GraphStats};
use profkit_model::feed::FoldOptions;
use profkit_model::{Clock, FunctionTable, MismatchPolicy};

use crate::output;
use crate::source::Opened;

/// A call graph with what names it.
pub struct Built {
    pub stats: GraphStats,
    pub names: FunctionTable,
    pub clock: Clock,
}

impl Built {
    pub fn named(&self) -> Named<'_> {
        Named {
            stats: &self.stats,
            names: &self.names,
            clock: self.clock,
        }
    }
}

/// Folds `opened`'s calls into a call graph (every thread merged). Without `deduce`, an exit
/// that does not match the top frame is skipped (llvm-xray -k); with it, the frames above a
/// matching one are closed (-d).
pub fn call_graph(opened: &Opened, instr_maps: &[String], deduce: bool) -> Result<Built> {
    if opened.format == profkit_model::detect::Format::XrayProfile {
        return Err(anyhow!(
            "{}: an XRay profiling-mode file keeps per-path totals, not the single calls a call graph's latency statistics need (`account`, `stack` and `diff` without --graph read it)",
            opened.name()
        ));
    }
    let src = opened.source(instr_maps, None, None, "graph")?;
    let policy = if deduce {
        MismatchPolicy::Unwind
    } else {
        MismatchPolicy::Ignore
    };
    let release = |s, e| opened.release(s, e);
    let opts = FoldOptions {
        policy,
        release: Some(&release),
        ..FoldOptions::default()
    };
    let folded = src.fold(&opts, |_| CallGraph::new());
    let summary = folded.summary.clone();
    output::print_feed_problems(opened.name(), &summary);
    if summary.call_events == 0 {
        return Err(anyhow!(
            "{}: no function calls in the input (XRay: an empty trace; Mono: profile with `--profile=log:calls`)",
            opened.name()
        ));
    }
    if summary.calls.unmatched_exits > 0 {
        output::print_note(&format!(
            "{}: {} exit(s) had no matching enter and were skipped{}",
            opened.name(),
            summary.calls.unmatched_exits,
            if deduce {
                ""
            } else {
                " (-d closes the frames above a matching one)"
            }
        ));
    }
    let graph = folded.merged(CallGraph::merge).unwrap_or_default().stats();
    Ok(Built {
        stats: graph,
        names: src.functions().clone(),
        clock: src.clock(),
    })
}
