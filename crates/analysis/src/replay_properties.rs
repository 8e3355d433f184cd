//! The replay's promise: however a thread's calls are cut into pieces, and in whichever mode,
//! the fold ends up as if the calls had been fed to one span builder in order.

use proptest::prelude::*;

use crate::account::Accounting;
use crate::graph::{CallGraph, GraphStats};
use profkit_model::func::FuncId;
use profkit_model::replay::pipeline::{self, Workers};
use profkit_model::replay::*;
use profkit_model::span::SpanSink;
use profkit_model::span::{BuilderStats, CallKind, MismatchPolicy, SpanBuilder};
use profkit_model::stack::{PathStats, StackTree};

/// Both folds at once.
#[derive(Default)]
struct Both {
    acc: Accounting,
    tree: StackTree,
    graph: CallGraph,
}

impl SpanSink for Both {
    fn enter(&mut self, func: FuncId, time: u64, depth: u32) {
        self.tree.enter(func, time, depth);
        self.graph.enter(func, time, depth);
    }
    fn span(&mut self, span: &profkit_model::span::Span) {
        self.acc.span(span);
        self.tree.span(span);
        self.graph.span(span);
    }
}

impl Fold for Both {
    type Part = Both;
    fn resolve(&mut self, part: Both) {
        self.acc.resolve(part.acc);
        self.tree.resolve(part.tree);
        self.graph.resolve(part.graph);
    }
}

type Rows = Vec<(u32, u64, u64, u64)>;

type Summary = (Rows, Vec<PathStats>, BuilderStats, GraphStats);

fn summary(mut b: Both, stats: BuilderStats) -> Summary {
    let rows = b
        .acc
        .rows()
        .iter()
        .map(|r| (r.func.0, r.count, r.sum, r.max))
        .collect();
    (rows, b.tree.paths(), stats, b.graph.stats())
}

fn sequential(calls: &[Call], policy: MismatchPolicy) -> Summary {
    let mut b = SpanBuilder::new(0, policy);
    let mut f = Both::default();
    for c in calls {
        b.event(c.kind, c.func, c.time, &mut f);
    }
    let (stats, _) = b.finish();
    summary(f, stats)
}

/// Cuts `calls` at `cuts`, builds every piece on its own, applies them in order.
fn pieces(calls: &[Call], cuts: &[usize], mode: Mode, policy: MismatchPolicy) -> Summary {
    let mut bounds: Vec<usize> = cuts.iter().map(|&c| c % (calls.len() + 1)).collect();
    bounds.push(0);
    bounds.push(calls.len());
    bounds.sort_unstable();
    let mut r = ThreadReplay::new(0, policy, Both::default(), false);
    for w in bounds.windows(2) {
        let mut pb: PieceBuilder<Both, ()> = PieceBuilder::new(mode, policy, 0);
        for c in &calls[w[0]..w[1]] {
            pb.call(c.kind, c.func, c.time);
        }
        r.apply(pb.finish(), |_, ()| {});
    }
    let (f, stats) = r.finish(false);
    summary(f, stats)
}

fn arb_calls() -> impl Strategy<Value = Vec<Call>> {
    // Few functions and a bias towards enters keep stacks deep and mismatches frequent.
    prop::collection::vec((0u8..10, 1u32..6, 0u64..50), 0..120).prop_map(|v| {
        let mut t = 1000u64;
        v.into_iter()
            .map(|(k, f, dt)| {
                t += dt;
                let kind = match k {
                    0..=4 => CallKind::Enter,
                    5..=8 => CallKind::Exit,
                    _ => CallKind::TailExit,
                };
                Call {
                    kind,
                    func: FuncId(f),
                    time: t,
                }
            })
            .collect()
    })
}

fn arb_policy() -> impl Strategy<Value = MismatchPolicy> {
    prop_oneof![
        Just(MismatchPolicy::Unwind),
        Just(MismatchPolicy::Ignore),
        Just(MismatchPolicy::UnwindAll)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn local_pieces_equal_sequential(
        calls in arb_calls(),
        cuts in prop::collection::vec(0usize..200, 0..8),
        policy in arb_policy(),
    ) {
        let want = sequential(&calls, policy);
        prop_assert_eq!(pieces(&calls, &cuts, Mode::Local, policy), want.clone());
        prop_assert_eq!(pieces(&calls, &cuts, Mode::Ordered, policy), want);
    }
}

#[test]
fn an_exit_of_an_inherited_frame_ends_a_phase() {
    let c = |kind, f, time| Call {
        kind,
        func: FuncId(f),
        time,
    };
    let mut pb: PieceBuilder<Accounting, ()> =
        PieceBuilder::new(Mode::Local, MismatchPolicy::Unwind, 0);
    // inherited: f1 (entered before the piece)
    for call in [
        c(CallKind::Enter, 2, 10),
        c(CallKind::Exit, 2, 15),
        c(CallKind::Exit, 1, 20), // closes the inherited f1
        c(CallKind::Enter, 3, 30),
    ] {
        pb.call(call.kind, call.func, call.time);
    }
    let p = pb.finish();
    assert_eq!(p.phases.len(), 2);
    assert_eq!(p.phases[0].child, 5);
    assert_eq!(p.phases[0].peak, 1);
    assert_eq!(p.phases[0].end, Some(c(CallKind::Exit, 1, 20)));
    assert_eq!(p.open.len(), 1);
    assert_eq!(p.counts.spans, 1);
    assert!(p.ordered.is_empty());
}

#[test]
fn an_unresolvable_exit_orders_the_rest() {
    let mut pb: PieceBuilder<Accounting, &str> =
        PieceBuilder::new(Mode::Local, MismatchPolicy::Unwind, 0);
    pb.call(CallKind::Enter, FuncId(2), 10);
    pb.other("before");
    pb.call(CallKind::Exit, FuncId(1), 20); // f1 is not on the piece's stack
    pb.call(CallKind::Enter, FuncId(4), 30);
    pb.other("after");
    let p = pb.finish();
    assert_eq!(p.open.len(), 1);
    assert_eq!(p.others, ["before", "after"]);
    assert_eq!(
        p.ordered,
        vec![
            Item::Other,
            Item::Call(Call {
                kind: CallKind::Exit,
                func: FuncId(1),
                time: 20
            }),
            Item::Call(Call {
                kind: CallKind::Enter,
                func: FuncId(4),
                time: 30
            }),
            Item::Other,
        ]
    );
}

#[test]
fn monotonic_replay_clamps_times() {
    let mut r = ThreadReplay::new(0, MismatchPolicy::Unwind, Accounting::new(), true);
    let mut pb: PieceBuilder<Accounting, u64> =
        PieceBuilder::new(Mode::Ordered, MismatchPolicy::Unwind, 0);
    pb.call(CallKind::Enter, FuncId(1), 100);
    pb.other(50);
    pb.call(CallKind::Exit, FuncId(1), 90);
    let mut seen = Vec::new();
    r.apply(pb.finish(), |r, t| seen.push(r.time(t)));
    assert_eq!(seen, [100]);
    let (mut acc, stats) = r.finish(false);
    assert_eq!(acc.rows()[0].sum, 0);
    assert_eq!(stats.spans, 1);
}

#[test]
fn pipeline_keeps_job_order() {
    for workers in [
        Workers::SEQUENTIAL,
        Workers {
            threads: 1,
            in_flight: 2,
        },
        Workers {
            threads: 3,
            in_flight: 4,
        },
    ] {
        let mut jobs = 0u32..200;
        let mut seen = Vec::new();
        let states = pipeline::run(
            workers,
            move || jobs.next(),
            || 0u64,
            |w: &mut u64, job: u32, emit: &mut dyn FnMut((u32, u32))| {
                // uneven work and several pieces per job
                let n = job % 5;
                for i in 0..n {
                    *w += 1;
                    emit((job, i));
                }
            },
            |p| -> Result<(), ()> {
                seen.push(p);
                Ok(())
            },
        )
        .unwrap();
        let want: Vec<(u32, u32)> = (0..200)
            .flat_map(|j| (0..j % 5).map(move |i| (j, i)))
            .collect();
        assert_eq!(seen, want);
        assert_eq!(states.iter().sum::<u64>(), want.len() as u64);
    }
}

#[test]
fn pipeline_stops_at_the_first_error() {
    let mut jobs = 0u32..100_000;
    let mut applied = 0;
    let r = pipeline::run(
        Workers {
            threads: 2,
            in_flight: 3,
        },
        move || jobs.next(),
        || (),
        |_: &mut (), job: u32, emit: &mut dyn FnMut(u32)| emit(job),
        |p| {
            applied += 1;
            if p == 10 {
                Err("stop")
            } else {
                Ok(())
            }
        },
    );
    assert_eq!(r.err(), Some("stop"));
    assert_eq!(applied, 11);
}
