//! `profkit diff A B`: what changed between two profiles of the same kind (two XRay traces,
//! two Mono files, two perf.data recordings): a per-function table (text, CSV, JSON), a
//! differential flame graph (`-f folded|svg`), or the difference of the call graphs as DOT
//! (`--graph`, llvm-xray graph-diff).

use profkit_common::Truncation;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Result};
use profkit_export::folded::{differential, write_differential_svg};
use profkit_export::Output;
use profkit_model::diff::{self, DiffKey, DiffReport};
use profkit_model::graph::dot;
use profkit_model::stack::{StackSink, Value};

use crate::cli::{DiffArgs, DiffFormat, DiffSort};
use crate::graphs::call_graph;
use crate::output;
use crate::source::Opened;

pub fn run(args: &DiffArgs) -> Result<ExitCode> {
    let maps = |own: &Vec<String>| {
        if own.is_empty() {
            args.instr_map.clone()
        } else {
            own.clone()
        }
    };
    let inputs = [
        (
            Opened::open(&args.a, args.input.input_format)?,
            maps(&args.instr_map_1),
        ),
        (
            Opened::open(&args.b, args.input.input_format)?,
            maps(&args.instr_map_2),
        ),
    ];
    let target = match &args.output {
        Some(p) => Output::staged(p),
        None => Output::stdout(),
    };
    let mut out = target.create()?;
    if args.graph {
        let [a, b] = inputs
            .each_ref()
            .map(|(o, m)| call_graph(o, m, args.deduce_sibling_calls));
        let (a, b) = (a?, b?);
        dot::write_graph_diff(
            &mut out,
            a.named(),
            b.named(),
            args.style.style(),
            args.truncate,
        )?;
    } else {
        let [a, b] = inputs.each_ref().map(|(o, m)| stacks(o, m));
        let ((a, cut_a), (b, cut_b)) = (a?, b?);
        if a.calls != b.calls {
            bail!(
                "{} has {} and {} has {}: compare two profiles of the same kind",
                inputs[0].0.name(),
                kind(&a),
                inputs[1].0.name(),
                kind(&b)
            );
        }
        let cuts = [cut_a.as_ref(), cut_b.as_ref()];
        table_or_flame(args, [&inputs[0].0, &inputs[1].0], [&a, &b], cuts, &mut out)?;
    }
    out.flush()?;
    drop(out);
    target.commit()?;
    Ok(ExitCode::SUCCESS)
}

fn kind(s: &StackSink) -> &'static str {
    if s.calls {
        "function calls"
    } else {
        "samples"
    }
}

/// Every thread's stacks of `opened` (calls, else samples), values in ns or sample weight.
/// The input's stacks, and where it is cut if it is.
fn stacks(opened: &Opened, instr_maps: &[String]) -> Result<(StackSink, Option<Truncation>)> {
    if opened.format == crate::detect::Format::XrayProfile {
        bail!(
            "{}: `diff` does not compare XRay profiling-mode files yet (their ticks have no clock; compare `stack --folded --tsc-hz HZ` outputs)",
            opened.name()
        );
    }
    let src = opened.source(instr_maps, None, "diff")?;
    let release = |s, e| opened.release(s, e);
    let mut sink = StackSink::new();
    let summary = src.feed(opened.name(), None, Some(&release), &mut sink)?;
    output::print_feed_problems(opened.name(), &summary);
    if sink.tree().is_empty() {
        bail!(
            "{}: no function calls and no sampled stacks to compare",
            opened.name()
        );
    }
    Ok((sink, summary.truncation))
}

fn table_or_flame(
    args: &DiffArgs,
    opened: [&Opened; 2],
    sinks: [&StackSink; 2],
    truncated: [Option<&Truncation>; 2],
    out: &mut dyn Write,
) -> Result<()> {
    let [a, b] = sinks;
    let [name_a, name_b] = opened.map(Opened::name);
    let nanoseconds = a.calls;
    if matches!(args.format, DiffFormat::Folded | DiffFormat::Svg) {
        let lines = |s: &StackSink| {
            s.tree()
                .folded_lines(&s.functions, Value::Exclusive, None, &|v| v)
        };
        let merged = differential(&lines(a), &lines(b), args.normalize);
        if args.format == DiffFormat::Svg {
            let title = format!("{name_a} → {name_b}");
            let unit = if nanoseconds { "ns" } else { "samples" };
            write_differential_svg(out, &merged, &title, unit)?;
        } else {
            for line in &merged {
                writeln!(out, "{line}")?;
            }
        }
        return Ok(());
    }
    let key = match args.sort {
        DiffSort::SelfTime => DiffKey::SelfTime,
        DiffSort::Total => DiffKey::Total,
        DiffSort::Calls => DiffKey::Calls,
    };
    let ident = |v: u64| v;
    let mut rows = diff::rows(
        &diff::totals(a.tree(), &a.functions, &ident),
        &diff::totals(b.tree(), &b.functions, &ident),
        key,
    );
    let functions = rows.len();
    if let Some(n) = args.top.filter(|&n| n > 0) {
        rows.truncate(n);
    }
    let report = DiffReport {
        a: name_a,
        b: name_b,
        rows: &rows,
        functions,
        key,
        nanoseconds,
        truncated,
    };
    match args.format {
        DiffFormat::Csv => diff::write_csv(out, &report)?,
        DiffFormat::Json => diff::write_json(out, &report)?,
        _ => diff::write_text(out, &report)?,
    }
    Ok(())
}
