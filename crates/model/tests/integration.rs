//! profkit-model integration tests: the span builder's edge cases, stack trees, the JIT code
//! map, the drivers (tests/integration/feed.rs) and perf.data (tests/integration/perf.rs).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::PathBuf;

use profkit_model::feed::{xray as fx, FoldOptions};
use profkit_model::stack::{StackTree, Value};
use profkit_model::{CallKind, FuncId, FunctionTable, MismatchPolicy, Span, SpanBuilder};
use profkit_xray::Trace;
use proptest::prelude::*;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/xray")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

fn spans(
    events: &[(CallKind, u32, u64)],
    policy: MismatchPolicy,
) -> (Vec<Span>, profkit_model::BuilderStats) {
    let mut out = Vec::new();
    let mut b = SpanBuilder::new(0, policy);
    let mut sink = |s: &Span| out.push(*s);
    for &(k, f, t) in events {
        b.event(k, FuncId(f), t, &mut sink);
    }
    let (stats, _) = b.finish();
    (out, stats)
}

use CallKind::{Enter as E, Exit as X, TailExit as T};

#[test]
fn nested_calls_have_self_time_and_depth() {
    let (s, st) = spans(
        &[(E, 1, 0), (E, 2, 10), (X, 2, 30), (X, 1, 100)],
        MismatchPolicy::Unwind,
    );
    assert_eq!(s.len(), 2);
    assert_eq!(
        (s[0].func, s[0].depth, s[0].duration(), s[0].self_time),
        (FuncId(2), 1, 20, 20)
    );
    assert_eq!(
        (s[1].func, s[1].depth, s[1].duration(), s[1].self_time),
        (FuncId(1), 0, 100, 80)
    );
    assert_eq!(st.spans, 2);
    assert_eq!(st.max_depth, 2);
}

#[test]
fn unmatched_exit_and_unfinished_calls() {
    // Trace started inside 9 (exit without enter); 3 never returns.
    let (s, st) = spans(
        &[(X, 9, 5), (E, 1, 10), (X, 1, 20), (E, 3, 30)],
        MismatchPolicy::Unwind,
    );
    assert_eq!(s.len(), 1);
    assert_eq!(st.unmatched_exits, 1);
    assert_eq!(st.unfinished, 1);
}

#[test]
fn tail_exit_closes_the_caller() {
    // tail_caller(5) tail-calls leaf(4): XRay writes the tail exit before leaf's enter.
    let (s, _) = spans(
        &[(E, 5, 0), (T, 5, 10), (E, 4, 12), (X, 4, 20)],
        MismatchPolicy::Unwind,
    );
    assert_eq!(
        s.iter()
            .map(|x| (x.func.0, x.duration()))
            .collect::<Vec<_>>(),
        vec![(5, 10), (4, 8)]
    );
}

#[test]
fn recursion_pairs_innermost_first() {
    let (s, _) = spans(
        &[
            (E, 1, 0),
            (E, 1, 5),
            (E, 1, 7),
            (X, 1, 8),
            (X, 1, 9),
            (X, 1, 20),
        ],
        MismatchPolicy::Unwind,
    );
    assert_eq!(
        s.iter().map(|x| x.duration()).collect::<Vec<_>>(),
        vec![1, 4, 20]
    );
    assert_eq!(s.iter().map(|x| x.depth).collect::<Vec<_>>(), vec![2, 1, 0]);
}

#[test]
fn deduce_sibling_calls_rule() {
    // f -> g -> h, exits of h and f only (g's exit lost): llvm -d charges g and f up to f's exit.
    let ev = [(E, 1, 0), (E, 2, 10), (E, 3, 20), (X, 3, 30), (X, 1, 50)];
    let (s, st) = spans(&ev, MismatchPolicy::Unwind);
    assert_eq!(
        s.iter()
            .map(|x| (x.func.0, x.duration()))
            .collect::<Vec<_>>(),
        vec![(3, 10), (2, 40), (1, 50)]
    );
    assert_eq!(st.deduced, 1);
    // Without -d (llvm -k): the exit is skipped and f, g stay open.
    let (s, st) = spans(&ev, MismatchPolicy::Ignore);
    assert_eq!(s.len(), 1);
    assert_eq!(st.unmatched_exits, 1);
    assert_eq!(st.unfinished, 2);
}

#[test]
fn exit_of_unknown_function_leaves_stack_alone() {
    let (s, st) = spans(&[(E, 1, 0), (X, 7, 5), (X, 1, 10)], MismatchPolicy::Unwind);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].duration(), 10);
    assert_eq!(st.unmatched_exits, 1);
}

proptest! {
    #[test]
    fn builder_never_loses_matched_calls(depths in proptest::collection::vec(0u8..3, 1..60)) {
        // A random well-nested sequence: every enter is matched, so spans == enters.
        let mut ev = Vec::new();
        let mut stack = Vec::new();
        let mut t = 0;
        for d in depths {
            t += 1;
            if d == 0 && !stack.is_empty() {
                let f = stack.pop().unwrap();
                ev.push((X, f, t));
            } else {
                let f = u32::from(d) + 1;
                stack.push(f);
                ev.push((E, f, t));
            }
        }
        while let Some(f) = stack.pop() { t += 1; ev.push((X, f, t)); }
        let enters = ev.iter().filter(|e| e.0 == E).count();
        let (s, st) = spans(&ev, MismatchPolicy::Unwind);
        prop_assert_eq!(s.len(), enters);
        prop_assert_eq!(st.unmatched_exits + st.unfinished, 0);
        let self_sum: u64 = s.iter().map(|x| x.self_time).sum();
        let top_sum: u64 = s.iter().filter(|x| x.depth == 0).map(|x| x.duration()).sum();
        prop_assert_eq!(self_sum, top_sum);
    }
}

#[test]
fn folded_exclusive_sums_to_inclusive_roots() {
    let data = read("demo-fdr.xray");
    let trace = Trace::parse(&data).unwrap();
    let folded = fx::fold(&trace, &FoldOptions::default(), |_| StackTree::new());
    let mut all = StackTree::new();
    for (_, t, _) in &folded.threads {
        all.merge(t);
    }
    let paths = all.paths();
    let excl: u64 = paths.iter().map(|p| p.exclusive).sum();
    let roots: u64 = paths
        .iter()
        .filter(|p| p.path.len() == 1)
        .map(|p| p.inclusive)
        .sum();
    assert_eq!(excl, roots);
    let names = FunctionTable::new();
    let mut out = Vec::new();
    all.write_folded(&mut out, &names, Value::Exclusive, None, &|v| v)
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.lines().any(|l| l.starts_with("#6;#1;#1 ")), "{text}");
}

// Newer areas, one module each under tests/integration/.
#[path = "integration/feed.rs"]
mod feed;
#[path = "integration/perf.rs"]
mod perf;
