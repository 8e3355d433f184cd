//! profkit-analysis integration tests: llvm-xray's percentile definitions, account and stack
//! against llvm-xray's goldens, the buffer-parallel replay against one span builder, and Mono's
//! report (tests/mono_report/).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::PathBuf;

use profkit_analysis::account::{self, Accounting, Report, SortKey};
use profkit_analysis::llvm_stack::{LlvmStackTrie, LlvmThreadStack};
use profkit_model::feed::{xray as fx, FoldOptions};
use profkit_model::replay::{pipeline::Workers, Mode};
use profkit_model::{FuncId, FunctionTable, MismatchPolicy, SpanBuilder};
use profkit_xray::write::{FdrTraceWriter, OwnedEvent};
use profkit_xray::{EventKind, FileHeader, InstrMap, Symbolizer, Trace};
use proptest::prelude::*;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/xray")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

fn brute(mut v: Vec<u64>) -> (u64, u64, u64) {
    v.sort_unstable();
    let n = v.len();
    (
        v[n / 2],
        v[(n as f64 * 0.9).floor() as usize],
        v[(n as f64 * 0.99).floor() as usize],
    )
}

proptest! {
    #[test]
    fn percentiles_are_llvm_order_statistics(v in proptest::collection::vec(0u64..1_000_000, 1..400)) {
        let mut w = v.clone();
        let r = account::stats(FuncId(1), &mut w);
        let (m, p90, p99) = brute(v.clone());
        prop_assert_eq!((r.median, r.p90, r.p99), (m, p90, p99));
        prop_assert_eq!(r.count, v.len() as u64);
        prop_assert_eq!(r.sum, v.iter().sum::<u64>());
        prop_assert_eq!(r.min, *v.iter().min().unwrap());
        prop_assert_eq!(r.max, *v.iter().max().unwrap());
    }
}

fn demo_names() -> FunctionTable {
    let bin = read("demo");
    let map = InstrMap::from_object(&bin).unwrap();
    let sym = Symbolizer::new(&bin).unwrap();
    fx::function_table(&map, Some(&sym))
}

fn account_text(file: &str, policy: MismatchPolicy) -> String {
    let data = read(file);
    let trace = Trace::parse(&data).unwrap();
    let names = demo_names();
    let (mut rows, st) = account_fast(&trace, policy);
    let total = rows.len();
    account::sort_rows(&mut rows, SortKey::FuncId, false, &names);
    let mut out = Vec::new();
    account::write_llvm_text(
        &mut out,
        &Report {
            rows: &rows,
            total_functions: total,
            names: &names,
            clock: fx::clock(&trace.header),
            unfinished: st.unfinished,
            unmatched_exits: st.unmatched_exits,
            latencies: true,
            truncation: None,
        },
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn fdr_account_matches_llvm_golden() {
    let golden = std::fs::read_to_string(fixture("llvm-xray/fdr-account.txt")).unwrap();
    assert_eq!(
        account_text("demo-fdr.xray", MismatchPolicy::Ignore),
        golden
    );
    assert_eq!(
        account_text("demo-fdr.xray", MismatchPolicy::Unwind),
        golden
    );
}

#[test]
fn basic_account_pinned_answer() {
    // llvm-xray 14 fails on this file (main's records come after the workers'), and with -k -d
    // drops records older than the first one: 233 fib calls and 3 workers. The program made
    // 242 fib calls (fib(6..9)), 4 workers and 1 main.
    let text = account_text("demo-basic.xray", MismatchPolicy::Unwind);
    let counts: Vec<(String, String)> = text
        .lines()
        .skip(2)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect();
    let want = [
        ("1", "242"),
        ("2", "12"),
        ("3", "12"),
        ("4", "12"),
        ("5", "12"),
        ("6", "4"),
        ("7", "1"),
    ];
    assert_eq!(
        counts,
        want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
    );
    assert!(text.ends_with("demo.cc:60:21: main\n"), "{text}");
}

#[test]
fn fdr_stack_matches_llvm_golden() {
    let data = read("demo-fdr.xray");
    let trace = Trace::parse(&data).unwrap();
    let opts = FoldOptions {
        policy: MismatchPolicy::UnwindAll,
        mode: Mode::Ordered,
        ..FoldOptions::default()
    };
    let folded = fx::fold(&trace, &opts, |k| LlvmThreadStack::new(k.tid));
    let trie = LlvmStackTrie::from_threads(folded.threads.into_iter().map(|t| t.1));
    let mut out = Vec::new();
    trie.write_human(&mut out, &demo_names()).unwrap();
    let golden = std::fs::read_to_string(fixture("llvm-xray/fdr-stack.txt")).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), golden);
}

/// Two threads, each with many small buffers interleaved in the file; wall times chosen so
/// that llvm's invalid block comparator would reorder them.
fn multi_buffer_trace() -> Vec<u8> {
    let mut h = FileHeader::fdr(5);
    h.buffer_size = 256;
    let mut w = FdrTraceWriter::new(h);
    let mut threads: Vec<Vec<OwnedEvent>> = Vec::new();
    for t in 0..2u64 {
        let mut evs = Vec::new();
        let mut tsc = 1_000 + t;
        for _ in 0..200 {
            evs.push(OwnedEvent::function(EventKind::Enter, 1, tsc));
            evs.push(OwnedEvent::function(EventKind::Enter, 2, tsc + 3));
            evs.push(OwnedEvent::function(EventKind::Exit, 2, tsc + 5));
            evs.push(OwnedEvent::function(EventKind::Exit, 1, tsc + 10));
            tsc += 20;
        }
        threads.push(evs);
    }
    // Interleave: write chunks of each thread alternately (each chunk → its own buffers).
    for chunk in 0..10 {
        for (t, evs) in threads.iter().enumerate() {
            w.set_walltime(100 - chunk as i64, (chunk as i32) * 1000);
            w.thread(42, 7 + t as u32, &evs[chunk * 80..(chunk + 1) * 80])
                .unwrap();
        }
    }
    w.finish()
}

#[test]
fn multi_buffer_threads_stay_in_file_order() {
    let data = multi_buffer_trace();
    let trace = Trace::parse(&data).unwrap();
    assert!(trace.layout().buffers.len() > 40);
    let (mut rows, st) = account_fast(&trace, MismatchPolicy::Ignore);
    assert_eq!((st.unmatched_exits, st.unfinished), (0, 0));
    rows.sort_by_key(|r| r.func);
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].count, rows[0].min, rows[0].max, rows[0].sum),
        (400, 10, 10, 4000)
    );
    assert_eq!((rows[1].count, rows[1].min, rows[1].max), (400, 2, 2));
    // The replay and one span builder per thread agree.
    let (_, seq) = account_via_build(&trace, MismatchPolicy::Ignore);
    assert_eq!(seq, st);
}

#[test]
fn typed_event_type_does_not_stick_and_events_are_not_calls() {
    let mut w = FdrTraceWriter::new(FileHeader::fdr(5));
    let typed = OwnedEvent {
        kind: Some(EventKind::TypedEvent),
        tsc: 15,
        event_type: 42,
        data: b"t".to_vec(),
        ..Default::default()
    };
    w.thread(
        1,
        2,
        &[
            OwnedEvent::function(EventKind::Enter, 1, 10),
            typed,
            OwnedEvent::function(EventKind::Exit, 1, 20),
        ],
    )
    .unwrap();
    let data = w.finish();
    let trace = Trace::parse(&data).unwrap();
    let d = trace.decode();
    let evs = &d.threads[0].events;
    assert_eq!(evs[1].event_type, 42);
    assert_eq!(
        evs[2].event_type, 0,
        "llvm-xray 14 would print type: 42 here"
    );
    let folded = fx::fold(&trace, &FoldOptions::default(), |_| Accounting::new());
    assert_eq!(folded.summary.other_events, 1);
    let mut acc = folded.merged(Accounting::merge).unwrap();
    assert_eq!(acc.rows()[0].sum, 10);
}

/// The reference: every thread's decoded events through one span builder, threads merged in
/// order of first appearance.
fn account_via_build(
    trace: &Trace<'_>,
    policy: MismatchPolicy,
) -> (Vec<account::Row>, profkit_model::BuilderStats) {
    let d = trace.decode();
    let mut acc = Accounting::new();
    let mut st = profkit_model::BuilderStats::default();
    for (i, t) in d.threads.iter().enumerate() {
        let mut b = SpanBuilder::new(i as u32, policy);
        let mut a = Accounting::new();
        for ev in &t.events {
            if let Some(k) = fx::call_kind(ev.kind) {
                b.event(k, FuncId(ev.func_id), ev.tsc, &mut a);
            }
        }
        let (s, _) = b.finish();
        st.merge(&s);
        acc.merge(a);
    }
    (acc.rows(), st)
}

/// The replay: buffers in parallel (`Mode::Local`), or in order, or on one thread.
fn account_with(
    trace: &Trace<'_>,
    policy: MismatchPolicy,
    mode: Mode,
    workers: Workers,
) -> (Vec<account::Row>, profkit_model::BuilderStats) {
    let opts = FoldOptions {
        policy,
        mode,
        workers,
        ..FoldOptions::default()
    };
    let folded = fx::fold(trace, &opts, |_| Accounting::new());
    let st = folded.summary.calls;
    let mut acc = folded.merged(Accounting::merge).unwrap_or_default();
    (acc.rows(), st)
}

fn account_fast(
    trace: &Trace<'_>,
    policy: MismatchPolicy,
) -> (Vec<account::Row>, profkit_model::BuilderStats) {
    let fast = account_with(trace, policy, Mode::Local, Workers::per_core());
    assert_eq!(
        account_with(trace, policy, Mode::Ordered, Workers::SEQUENTIAL),
        fast
    );
    fast
}

#[test]
fn parallel_account_matches_sequential_on_fixtures() {
    for f in ["demo-fdr.xray", "demo-basic.xray"] {
        let data = read(f);
        let trace = Trace::parse(&data).unwrap();
        for policy in [MismatchPolicy::Ignore, MismatchPolicy::Unwind] {
            assert_eq!(
                account_fast(&trace, policy),
                account_via_build(&trace, policy),
                "{f}"
            );
        }
    }
    let data = multi_buffer_trace();
    let trace = Trace::parse(&data).unwrap();
    assert_eq!(
        account_fast(&trace, MismatchPolicy::Ignore),
        account_via_build(&trace, MismatchPolicy::Ignore)
    );
}

#[test]
fn durations_histogram_is_exact() {
    let mut acc = Accounting::new();
    let mut all = Vec::new();
    let mut x: u64 = 12345;
    for i in 0..20_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let d = if i % 7 == 0 {
            (x >> 33) % 100_000
        } else {
            (x >> 33) % 5000
        };
        acc.record(FuncId(3), d);
        all.push(d);
    }
    let row = acc.rows()[0];
    assert_eq!(row, account::stats(FuncId(3), &mut all));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn parallel_account_matches_sequential(
        ops in proptest::collection::vec((0u8..3, 1u32..5, 0u64..3000), 1..400),
        threads in 1u32..3,
        unwind in any::<bool>(),
    ) {
        let mut h = FileHeader::fdr(5);
        h.buffer_size = 128;
        let mut w = FdrTraceWriter::new(h);
        for t in 0..threads {
            let mut tsc = 1000u64;
            let evs: Vec<OwnedEvent> = ops
                .iter()
                .map(|&(k, f, d)| {
                    tsc += d;
                    let kind = match k {
                        0 => EventKind::Enter,
                        1 => EventKind::Exit,
                        _ => EventKind::TailExit,
                    };
                    OwnedEvent::function(kind, f + t, tsc)
                })
                .collect();
            w.thread(1, 10 + t, &evs).unwrap();
        }
        let data = w.finish();
        let trace = Trace::parse(&data).unwrap();
        let policy = if unwind { MismatchPolicy::Unwind } else { MismatchPolicy::Ignore };
        prop_assert_eq!(account_fast(&trace, policy), account_via_build(&trace, policy));
    }
}

/// An XRay profiling-mode file's call paths give accounting its counts and sums.
#[test]
fn xray_profile_accounting_gets_counts_and_sums() {
    use profkit_xray::profile::write::{PathRecord, ProfileWriter};
    use profkit_xray::profile::{Profile, ProfileHeader};
    let mut w = ProfileWriter::new(&ProfileHeader {
        pid: 77,
        ..ProfileHeader::default()
    });
    w.block(
        5,
        &[
            PathRecord::new(&[1], 1, 100),
            PathRecord::new(&[1, 2], 2, 60),
            PathRecord::new(&[1, 2, 3], 4, 20),
            PathRecord::new(&[1], 1, 10),
        ],
    )
    .unwrap();
    w.block(6, &[PathRecord::new(&[2], 3, 9)]).unwrap();
    w.block(5, &[PathRecord::new(&[1, 2, 3], 1, 5)]).unwrap();
    let bytes = w.finish();
    let p = Profile::parse(&bytes).unwrap();
    let folded = profkit_model::feed::xray_profile::fold(&p, |_| Accounting::new());
    assert!(folded.summary.problems.is_empty());
    let mut acc = folded.merged(Accounting::merge).unwrap();
    let mut rows = acc.rows();
    rows.sort_by_key(|r| r.func.0);
    let got: Vec<(u32, u64, u64)> = rows.iter().map(|r| (r.func.0, r.count, r.sum)).collect();
    assert_eq!(got, [(1, 2, 110), (2, 5, 69), (3, 5, 25)]);
}

#[path = "mono_report/mod.rs"]
mod mono_report;
