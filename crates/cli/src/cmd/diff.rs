//! `profkit diff A B`: what changed between two profiles of the same kind (two XRay traces,
//! two XRay profiling-mode files, two Mono files, two perf.data recordings): a per-function
//! table (text, CSV, JSON), a differential flame graph (`-f folded|svg`), or the difference of
//! the call graphs as DOT (`--graph`, llvm-xray graph-diff; not of profiling-mode files, which
//! have no single calls).

use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use profkit_analysis::diff::{self, DiffKey, DiffReport, DiffUnit};
use profkit_analysis::graph::dot;
use profkit_export::folded::{differential, write_differential_svg};
use profkit_export::Output;
use profkit_model::func::FunctionTable;
use profkit_model::stack::{StackSink, Value};

mod inputs;

use inputs::{profile_totals, stacks, Kind, Stacks};

use crate::cli::{DiffArgs, DiffFormat, DiffSort};
use crate::graphs::call_graph;
use crate::output;
use crate::source::Opened;
use profkit_model::detect::Format;

pub fn run(args: &DiffArgs) -> Result<ExitCode> {
    let maps = |own: &Vec<String>| {
        if own.is_empty() {
            args.instr_map.clone()
        } else {
            own.clone()
        }
    };
    let inputs = [
        (Opened::open(&args.a, &args.input)?, maps(&args.instr_map_1)),
        (Opened::open(&args.b, &args.input)?, maps(&args.instr_map_2)),
    ];
    let target = match &args.output {
        Some(p) => Output::staged(p),
        None => Output::stdout(),
    };
    let mut out = target.create()?;
    if args.graph {
        let [a, b] = inputs
            .each_ref()
            .map(|(o, m)| named(o.name(), call_graph(o, m, args.deduce_sibling_calls)));
        let (a, b) = (a?, b?);
        dot::write_graph_diff(
            &mut out,
            a.named(),
            b.named(),
            args.style.style(),
            args.truncate,
        )?;
    } else {
        // --tsc-hz is for profiling-mode files (`source` refuses it for anything else); a
        // profile and another kind are refused below by kind, whatever it says.
        let profile = inputs
            .each_ref()
            .map(|(o, _)| o.format == Format::XrayProfile);
        let tsc_hz = args.clock.tsc_hz.filter(|_| profile[0] == profile[1]);
        // A table needs only each input's per-function totals, a flame graph only each input's
        // folded lines: they are taken, and the input's call tree let go, before the next input
        // is read (two trees at once passed 2 GB on XRay profiles naming 12.5M functions each:
        // issue #23 B5).
        let flame = matches!(args.format, DiffFormat::Folded | DiffFormat::Svg);
        // The totals of a profiling-mode file are made from the driver's own call tree (no
        // `StackTree` of it: TotalsSink).
        let read = |(o, m): &(Opened, Vec<String>), is_profile: bool| -> Result<(Stacks, Digest)> {
            if !flame && is_profile {
                let (s, functions, raw) = named(o.name(), profile_totals(o, m, tsc_hz))?;
                return Ok((s, Digest::Totals(functions, raw)));
            }
            let mut s = named(o.name(), stacks(o, m, tsc_hz))?;
            let kept = digest(&mut s, flame);
            Ok((s, kept))
        };
        let (a, digest_a) = read(&inputs[0], profile[0])?;
        let (b, digest_b) = read(&inputs[1], profile[1])?;
        let [name_a, name_b] = [inputs[0].0.name(), inputs[1].0.name()];
        if a.kind != b.kind {
            bail!(
                "{name_a} has {} and {name_b} has {}: compare two profiles of the same kind",
                a.kind.describe(),
                b.kind.describe()
            );
        }
        if a.unit != b.unit {
            bail!(
                "{name_a} has times in {} and {name_b} in {}: compare two profiles timed by one clock",
                a.unit.name(),
                b.unit.name()
            );
        }
        match (digest_a, digest_b) {
            (Digest::Totals(functions_a, raw_a), Digest::Totals(functions_b, raw_b)) => table(
                args,
                [name_a, name_b],
                [&a, &b],
                [raw_a.resolve(&functions_a), raw_b.resolve(&functions_b)],
                &mut out,
            )?,
            (Digest::Lines(lines_a), Digest::Lines(lines_b)) => {
                let written =
                    flame_graph(args, [name_a, name_b], a.unit, [lines_a, lines_b], &mut out);
                // As `convert` says it: the output's name, then what could not be written.
                let out_name = args
                    .output
                    .as_ref()
                    .map_or("<stdout>".into(), |p| p.display().to_string());
                written.with_context(|| format!("{out_name}: cannot write"))?
            }
            _ => bail!("internal: a diff of a table and a flame graph"),
        }
        if a.kind == Kind::CallPaths && a.unit == DiffUnit::Ticks {
            output::print_ticks_note(name_a);
            output::print_ticks_note(name_b);
        }
    }
    out.flush()?;
    drop(out);
    target.commit()?;
    Ok(ExitCode::SUCCESS)
}

/// An error reading one of the two inputs names it (unless it already does).
fn named<T>(name: &str, r: Result<T>) -> Result<T> {
    r.map_err(|e| {
        if format!("{e:#}").contains(name) {
            e
        } else {
            e.context(name.to_string())
        }
    })
}

/// What `diff` keeps of an input once its call tree is let go.
enum Digest {
    /// Its functions and their totals (a table).
    Totals(FunctionTable, diff::RawTotals),
    /// Its folded lines, exclusive values (a flame graph).
    Lines(Vec<String>),
}

/// What is kept of an input (`s`, whose call tree is let go): its folded lines for a flame
/// graph, else its functions and their totals.
fn digest(s: &mut Stacks, flame: bool) -> Digest {
    let sink = std::mem::replace(&mut s.sink, StackSink::new());
    let ident = |v: u64| v;
    if flame {
        let lines = sink
            .tree()
            .folded_lines(&sink.functions, Value::Exclusive, None, &ident);
        return Digest::Lines(lines);
    }
    let raw = diff::RawTotals::of_stack_tree(sink.tree(), &sink.functions, &ident);
    Digest::Totals(sink.functions, raw)
}

/// The differential flame graph (folded or SVG) of the inputs' folded lines.
fn flame_graph(
    args: &DiffArgs,
    names: [&str; 2],
    unit: DiffUnit,
    [a, b]: [Vec<String>; 2],
    out: &mut dyn Write,
) -> Result<()> {
    let merged = differential(&a, &b, args.normalize);
    drop((a, b));
    if args.format == DiffFormat::Svg {
        let title = format!("{} → {}", names[0], names[1]);
        let count_name = match unit {
            DiffUnit::Weight => "samples",
            u => u.name(),
        };
        write_differential_svg(out, &merged, &title, count_name)?;
    } else {
        for line in &merged {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// The per-function table (text, CSV, JSON) of the inputs' totals.
fn table(
    args: &DiffArgs,
    [name_a, name_b]: [&str; 2],
    inputs: [&Stacks; 2],
    [totals_a, totals_b]: [diff::InputTotals<'_>; 2],
    out: &mut dyn Write,
) -> Result<()> {
    let key = match args.sort {
        DiffSort::SelfTime => DiffKey::SelfTime,
        DiffSort::Total => DiffKey::Total,
        DiffSort::Calls => DiffKey::Calls,
    };
    let mut rows = diff::rows(totals_a, totals_b, key);
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
        unit: inputs[0].unit,
        truncated: inputs.map(|s| s.truncation.as_ref()),
    };
    match args.format {
        DiffFormat::Csv => diff::write_csv(out, &report)?,
        DiffFormat::Json => diff::write_json(out, &report)?,
        _ => diff::write_text(out, &report)?,
    }
    Ok(())
}
