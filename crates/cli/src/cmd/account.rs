//! `profkit account FILE [-m BIN]`: per-function latencies of the calls of an XRay trace or a
//! Mono `calls` file; counts and sums of an XRay profiling-mode file.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Result};
use profkit_analysis::account::{self, Accounting, Report, SortKey};
use profkit_model::feed::{FeedSummary, FoldOptions};
use profkit_model::{Clock, FunctionTable, MismatchPolicy};

use crate::cli::{AccountArgs, AccountFormat, AccountSort, SortOrder};
use crate::output;
use crate::source::Opened;

pub fn run(args: &AccountArgs) -> Result<ExitCode> {
    let opened = Opened::open(&args.file, &args.input)?;
    let src = opened.source(&args.instr_map, args.clock.tsc_hz, None, "account")?;
    let paths_only = src.has_only_call_paths();
    if paths_only && args.llvm {
        bail!(
            "{}: --llvm reproduces llvm-xray account, which cannot read XRay profiling-mode files (llvm #88761); use the default table or --json",
            opened.name()
        );
    }
    // llvm-xray without -d leaves a mismatched exit alone; profkit deduces sibling calls.
    let policy = if src.format() == "xray" && args.llvm && !args.deduce_sibling_calls {
        MismatchPolicy::Ignore
    } else {
        MismatchPolicy::Unwind
    };
    let release = |s, e| opened.release(s, e);
    let opts = FoldOptions {
        policy,
        release: Some(&release),
        ..FoldOptions::default()
    };
    let folded = src.fold(&opts, |_| Accounting::new());
    let summary = folded.summary.clone();
    output::print_feed_problems(opened.name(), &summary);
    let acc = folded.merged(Accounting::merge).unwrap_or_default();
    print_accounting(
        args,
        acc,
        src.functions(),
        src.clock(),
        &summary,
        !paths_only,
    )?;
    if paths_only && summary.call_events > 0 && !args.json {
        output::print_note(&format!(
            "{}: an XRay profiling-mode file keeps per call path only the number of calls and their total time: min, median, p90, p99 and max are not available; sum is inclusive time{}",
            opened.name(),
            if src.clock().ticks_per_second == 0 {
                ", in TSC ticks (give --tsc-hz to convert)"
            } else {
                ""
            }
        ));
    }
    if summary.call_events == 0 {
        output::print_note(&format!(
            "{}: no function calls in the input (Mono: profile with `--profile=log:calls`)",
            opened.name()
        ));
    } else if !args.json && (summary.calls.unfinished > 0 || summary.calls.unmatched_exits > 0) {
        output::print_note(&format!(
            "{}: {} call(s) never returned, {} exit(s) had no enter (not counted)",
            opened.name(),
            summary.calls.unfinished,
            summary.calls.unmatched_exits
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Sorts and cuts (`-s`, `-r`, `-p`) the rows of `acc` and prints them in the layout `args`
/// asks for.
fn print_accounting(
    args: &AccountArgs,
    mut acc: Accounting,
    names: &FunctionTable,
    clock: Clock,
    summary: &FeedSummary,
    latencies: bool,
) -> Result<()> {
    let stats = &summary.calls;
    let mut rows = acc.rows();
    let total = rows.len();
    warn_unmapped_objects(args, &rows, names);
    let key = match args.sort {
        AccountSort::Funcid => SortKey::FuncId,
        AccountSort::Count => SortKey::Count,
        AccountSort::Min => SortKey::Min,
        AccountSort::Med => SortKey::Med,
        AccountSort::P90 => SortKey::P90,
        AccountSort::P99 => SortKey::P99,
        AccountSort::Max => SortKey::Max,
        AccountSort::Sum => SortKey::Sum,
        AccountSort::Func => SortKey::Func,
    };
    account::sort_rows(&mut rows, key, args.sortorder == SortOrder::Dsc, names);
    if let Some(n) = args.top.filter(|&n| n > 0) {
        rows.truncate(n);
    }
    let report = Report {
        rows: &rows,
        total_functions: total,
        names,
        clock,
        unfinished: stats.unfinished,
        unmatched_exits: stats.unmatched_exits,
        latencies,
        truncation: summary.truncation.as_ref(),
    };
    let mut out = output::stdout();
    if args.json {
        account::write_json(&mut out, &report)?;
    } else if args.llvm {
        match args.format {
            AccountFormat::Text => account::write_llvm_text(&mut out, &report)?,
            AccountFormat::Csv => account::write_llvm_csv(&mut out, &report)?,
        }
    } else {
        account::write_table(&mut out, &report)?;
    }
    out.flush()?;
    Ok(())
}

/// With `-m`, says which shared objects (`-fxray-shared`: ids past 2^24) have calls but no map,
/// and which were given a map that lacks some of their function ids (`-m` out of registration
/// order names such an object after another object's map).
fn warn_unmapped_objects(args: &AccountArgs, rows: &[account::Row], names: &FunctionTable) {
    if args.instr_map.is_empty() {
        return;
    }
    let given = crate::instr_maps::instr_maps(&args.instr_map).unwrap_or_default();
    // object -> (function ids without a name, the first of them)
    let mut missing: std::collections::BTreeMap<u32, (usize, u32)> = Default::default();
    for r in rows
        .iter()
        .filter(|r| r.func.0 >> 24 != 0 && names.get(r.func).is_none())
    {
        let e = missing.entry(r.func.0 >> 24).or_insert((0, r.func.0));
        e.0 += 1;
        e.1 = e.1.min(r.func.0);
    }
    let file = args.file.display();
    for (object, (n, id)) in missing {
        match given.iter().find(|(o, _)| u32::from(*o) == object) {
            Some((_, path)) => output::print_note(&format!(
                "{file}: shared object {object} has calls to {n} function id(s) (first #{id}) that its map {} does not have: give the -m binaries in the order the runtime registered them (the executable first), or pin each with -m ID=PATH",
                path.display()
            )),
            None => output::print_note(&format!(
                "{file}: shared object {object} has calls but no instrumentation map: give it with -m (after the executable, in registration order) or -m {object}=PATH"
            )),
        }
    }
}
