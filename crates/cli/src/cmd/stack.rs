//! `profkit stack FILE [-m BIN]`: aggregated call stacks of an XRay trace or a Mono file
//! (from its calls, or from its sample hits' managed backtraces when it has no calls).

use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use profkit_analysis::account::human_time;
use profkit_analysis::llvm_stack::{Aggregation, LlvmStackTrie, LlvmThreadStack};
use profkit_model::feed::FoldOptions;
use profkit_model::replay::Mode;
use profkit_model::stack::{StackSink, StackTree, Value};
use profkit_model::{MismatchPolicy, Source};

use crate::cli::{StackAggregation, StackArgs};
use crate::output;
use crate::source::Opened;

pub fn run(args: &StackArgs) -> Result<ExitCode> {
    let opened = Opened::open(&args.file, &args.input)?;
    let src = opened.source(&args.instr_map, args.clock.tsc_hz, None, "stack")?;
    if args.llvm {
        if src.has_only_call_paths() {
            return Err(anyhow!(
                "{}: --llvm reproduces llvm-xray stack, which cannot read XRay profiling-mode files (llvm #88761); use the default output or --folded",
                opened.name()
            ));
        }
        return llvm(args, &opened, &src);
    }
    let release = |s, e| opened.release(s, e);
    let opts = FoldOptions {
        release: Some(&release),
        ..FoldOptions::default()
    };
    let folded = src.fold(&opts, |_| StackTree::new());
    output::print_feed_problems(opened.name(), &folded.summary);
    if folded.summary.call_events == 0 {
        return samples(args, &opened, &src);
    }
    let names = src.functions();
    let clock = src.clock();
    let to_ns = |v: u64| clock.to_ns(v);
    let time = |v: u64| human_time(&clock, v);
    let value = match (args.aggregation, args.inclusive) {
        (StackAggregation::Count, _) => Value::Count,
        (StackAggregation::Time, true) => Value::Inclusive,
        (StackAggregation::Time, false) => Value::Exclusive,
    };
    let mut out = output::stdout();
    if args.per_thread {
        for (key, tree, _) in &folded.threads {
            if args.folded {
                let prefix = src.thread_label(key);
                tree.write_folded(&mut out, names, value, Some(&prefix), &to_ns)?;
            } else {
                writeln!(out, "{}:", src.thread_title(key))?;
                tree.write_top(&mut out, names, 20, &time)?;
                writeln!(out)?;
            }
        }
    } else {
        let mut all = StackTree::new();
        for (_, tree, _) in &folded.threads {
            all.merge(tree);
        }
        if args.folded {
            all.write_folded(&mut out, names, value, None, &to_ns)?;
        } else {
            all.write_top(&mut out, names, 20, &time)?;
        }
    }
    out.flush()?;
    if src.has_only_call_paths() && clock.ticks_per_second == 0 && value != Value::Count {
        output::print_ticks_note(opened.name());
    }
    Ok(ExitCode::SUCCESS)
}

/// A file without calls: the stacks of its samples (Mono sample hits), values = samples.
fn samples(args: &StackArgs, opened: &Opened, src: &Source<'_>) -> Result<ExitCode> {
    let release = |s, e| opened.release(s, e);
    let mut sink = StackSink::new();
    let summary = src.feed(opened.name(), None, Some(&release), &mut sink)?;
    output::print_feed_problems(opened.name(), &summary);
    if sink.samples == 0 {
        return Err(anyhow!(
            "{}: no function calls and no sampled stacks (XRay: an empty trace; Mono: profile with `log:calls` or `log:sample`)",
            opened.name()
        ));
    }
    let mut out = output::stdout();
    let ident = |v: u64| v;
    // Values are sample weights; the table has always shown them as nanoseconds.
    let time = |v: u64| profkit_analysis::account::human_ns(v);
    if args.folded {
        sink.tree()
            .write_folded(&mut out, &sink.functions, Value::Exclusive, None, &ident)?;
    } else {
        sink.tree()
            .write_top(&mut out, &sink.functions, 20, &time)?;
    }
    out.flush()?;
    output::print_note(&format!(
        "{}: {} sample(s) with stacks (values are sample counts)",
        opened.name(),
        sink.samples
    ));
    Ok(ExitCode::SUCCESS)
}

/// `llvm-xray stack`'s layouts, with its rules.
fn llvm(args: &StackArgs, opened: &Opened, src: &Source<'_>) -> Result<ExitCode> {
    let release = |s, e| opened.release(s, e);
    let opts = FoldOptions {
        policy: MismatchPolicy::UnwindAll,
        mode: Mode::Ordered,
        release: Some(&release),
        ..FoldOptions::default()
    };
    let folded = src.fold(&opts, |k| LlvmThreadStack::new(k.tid as u32));
    output::print_feed_problems(opened.name(), &folded.summary);
    let not_found = folded.summary.calls.unmatched_exits;
    let trie = LlvmStackTrie::from_threads(folded.threads.into_iter().map(|t| t.1));
    if trie.is_empty() {
        return Err(anyhow!(
            "{}: no instrumented calls were accounted in the input file",
            opened.name()
        ));
    }
    let names = src.functions();
    let mut out = output::stdout();
    if args.folded {
        let agg = match args.aggregation {
            StackAggregation::Time => Aggregation::Time,
            StackAggregation::Count => Aggregation::Count,
        };
        if args.aggregate_threads {
            trie.write_flame_aggregated(&mut out, names, agg)?;
        } else {
            trie.write_flame(&mut out, names, agg)?;
        }
    } else if args.aggregate_threads {
        trie.write_human_aggregated(&mut out, names)?;
    } else if args.per_thread {
        trie.write_human_per_thread(&mut out, names)?;
    } else {
        trie.write_human(&mut out, names)?;
    }
    out.flush()?;
    if not_found > 0 {
        output::print_note(&format!(
            "{}: {not_found} exit(s) had no matching enter (llvm-xray stack fails on these without -k)",
            opened.name()
        ));
    }
    Ok(ExitCode::SUCCESS)
}
