#![no_main]
//! Fuzz the model's analyses of XRay traces: any bytes that parse as a trace are folded into
//! accountings and call graphs (buffers replayed on their own and in order, which must agree),
//! fed to the stack aggregation, and written by the DOT and diff writers. Nothing may panic.

use std::io;

use libfuzzer_sys::fuzz_target;
use profkit_analysis::account::Accounting;
use profkit_analysis::diff;
use profkit_model::feed::{xray, FoldOptions};
use profkit_analysis::graph::dot::{write_graph, write_graph_diff, Named, Style};
use profkit_analysis::graph::{CallGraph, GraphStat};
use profkit_model::replay::Mode;
use profkit_model::stack::StackSink;
use profkit_model::FunctionTable;
use profkit_xray::Trace;

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = Trace::parse(data) else {
        return;
    };
    let names = FunctionTable::new();
    let clock = xray::clock(&trace.header);
    let graph = |mode| {
        let opts = FoldOptions {
            mode,
            ..FoldOptions::default()
        };
        xray::fold(&trace, &opts, |_| CallGraph::new())
            .merged(CallGraph::merge)
            .unwrap_or_default()
            .stats()
    };
    let local = graph(Mode::Local);
    assert_eq!(local, graph(Mode::Ordered));
    let _ = xray::fold(&trace, &FoldOptions::default(), |_| Accounting::new())
        .merged(Accounting::merge)
        .map(|mut a| a.rows());
    let g = Named {
        stats: &local,
        names: &names,
        clock,
    };
    let style = Style {
        edge_label: GraphStat::Median,
        edge_color: GraphStat::Count,
        vertex_label: GraphStat::Sum,
        vertex_color: GraphStat::Min,
    };
    write_graph(&mut io::sink(), g, style).unwrap();
    write_graph_diff(&mut io::sink(), g, g, style, 5).unwrap();
    let mut sink = StackSink::new();
    let opts = xray::FeedOptions::default();
    if xray::feed(&trace, &names, "fuzz", &opts, &mut sink).is_ok() {
        let t = diff::totals(sink.tree(), &sink.functions, &|v| v);
        let rows = diff::rows(t.clone(), t.clone(), diff::DiffKey::Total);
        assert!(rows.iter().all(|r| r.a == r.b));
        let report = diff::DiffReport {
            a: "a",
            b: "b",
            rows: &rows,
            functions: rows.len(),
            key: diff::DiffKey::Total,
            unit: diff::DiffUnit::Nanoseconds,
            truncated: [None, None],
        };
        diff::write_text(&mut io::sink(), &report).unwrap();
        diff::write_json(&mut io::sink(), &report).unwrap();
    }
});
