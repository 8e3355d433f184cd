//! `profkit account FILE [-m BIN]`: per-function latencies of an XRay trace.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use profkit_model::account::{self, Accounting, Report, SortKey};
use profkit_model::{ingest, BuilderStats, Clock, FunctionTable, MismatchPolicy};

use super::xray;
use crate::cli::{AccountArgs, AccountFormat, AccountSort, SortOrder};
use crate::output;

pub fn run(args: &AccountArgs) -> Result<ExitCode> {
    if super::mlpd::is_mlpd(&args.file, args.input.input_format) {
        return super::mlpd::account(args);
    }
    let loaded = xray::load(&args.file, args.input.input_format, "account")?;
    let trace = loaded.trace()?;
    let input = &loaded.input;
    let names = xray::names(args.instr_map.as_deref())?;
    let policy = if args.llvm && !args.deduce_sibling_calls {
        MismatchPolicy::Ignore
    } else {
        MismatchPolicy::Unwind
    };
    let ing = ingest::xray::account(&trace, policy, &|s, e| loaded.release(s, e));
    let stats = ing.stats;
    xray::report_problems(&input.name, &ing.problems, ing.truncation.as_ref());
    print_accounting(
        args,
        ing.accounting,
        &names,
        ingest::xray::clock(&trace.header),
        &stats,
    )?;
    if !args.json && (stats.unfinished > 0 || stats.unmatched_exits > 0) {
        output::print_note(&format!(
            "{}: {} call(s) never returned, {} exit(s) had no enter (not counted)",
            input.name, stats.unfinished, stats.unmatched_exits
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Sorts and cuts (`-s`, `-r`, `-p`) the rows of `acc` and prints them in the layout `args`
/// asks for. Shared by every input format.
pub fn print_accounting(
    args: &AccountArgs,
    mut acc: Accounting,
    names: &FunctionTable,
    clock: Clock,
    stats: &BuilderStats,
) -> Result<()> {
    let mut rows = acc.rows();
    let total = rows.len();
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
    };
    print_report(args, &report)
}

/// Prints an accounting report in the layout `args` asks for (`--json`, `--llvm [-f csv]`, or
/// the default table).
fn print_report(args: &AccountArgs, report: &Report<'_>) -> Result<()> {
    let mut out = output::stdout();
    if args.json {
        account::write_json(&mut out, report)?;
    } else if args.llvm {
        match args.format {
            AccountFormat::Text => account::write_llvm_text(&mut out, report)?,
            AccountFormat::Csv => account::write_llvm_csv(&mut out, report)?,
        }
    } else {
        account::write_table(&mut out, report)?;
    }
    out.flush()?;
    Ok(())
}
