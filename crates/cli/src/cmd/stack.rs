//! `profkit stack FILE [-m BIN]`: aggregated call stacks of an XRay trace.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use profkit_model::ingest;
use profkit_model::stack::{Aggregation, LlvmStackTrie, StackTree, Value};
use profkit_model::MismatchPolicy;

use super::xray;
use crate::cli::{StackAggregation, StackArgs};
use crate::output;

pub fn run(args: &StackArgs) -> Result<ExitCode> {
    if super::mlpd::is_mlpd(&args.file, args.input.input_format) {
        return super::mlpd::stack(args);
    }
    let loaded = xray::load(&args.file, args.input.input_format, "stack")?;
    let trace = loaded.trace()?;
    let input = &loaded.input;
    let names = xray::names(args.instr_map.as_deref())?;
    let mut out = output::stdout();
    if args.llvm {
        let mut trie = LlvmStackTrie::new();
        let mut not_found = 0u64;
        let problems = ingest::xray::for_each_call(&trace, |key, kind, func, tsc| {
            if !trie.record(key.tid, kind, func, tsc) {
                not_found += 1;
            }
        });
        xray::report_problems(&input.name, &problems, None);
        if trie.is_empty() {
            return Err(anyhow!(
                "{}: no instrumented calls were accounted in the input file",
                input.name
            ));
        }
        if args.folded {
            let agg = match args.aggregation {
                StackAggregation::Time => Aggregation::Time,
                StackAggregation::Count => Aggregation::Count,
            };
            if args.aggregate_threads {
                trie.write_flame_aggregated(&mut out, &names, agg)?;
            } else {
                trie.write_flame(&mut out, &names, agg)?;
            }
        } else if args.aggregate_threads {
            trie.write_human_aggregated(&mut out, &names)?;
        } else if args.per_thread {
            trie.write_human_per_thread(&mut out, &names)?;
        } else {
            trie.write_human(&mut out, &names)?;
        }
        out.flush()?;
        if not_found > 0 {
            output::print_note(&format!(
                "{}: {not_found} exit(s) had no matching enter (llvm-xray stack fails on these without -k)",
                input.name
            ));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let ing = ingest::xray::build(&trace, MismatchPolicy::Unwind, true, |_| StackTree::new());
    xray::report_problems(&input.name, &ing.problems, ing.truncation.as_ref());
    let clock = ingest::xray::clock(&trace.header);
    let to_ns = |v: u64| clock.to_ns(v);
    let value = match (args.aggregation, args.inclusive) {
        (StackAggregation::Count, _) => Value::Count,
        (StackAggregation::Time, true) => Value::Inclusive,
        (StackAggregation::Time, false) => Value::Exclusive,
    };
    if args.per_thread {
        for (key, tree, _) in &ing.threads {
            let prefix = format!("thread_{}", key.tid);
            if args.folded {
                tree.write_folded(&mut out, &names, value, Some(&prefix), &to_ns)?;
            } else {
                writeln!(out, "Thread {} (pid {}):", key.tid, key.pid)?;
                tree.write_top(&mut out, &names, 20, &to_ns)?;
                writeln!(out)?;
            }
        }
    } else {
        let mut all = StackTree::new();
        for (_, tree, _) in &ing.threads {
            all.merge(tree);
        }
        if args.folded {
            all.write_folded(&mut out, &names, value, None, &to_ns)?;
        } else {
            all.write_top(&mut out, &names, 20, &to_ns)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
