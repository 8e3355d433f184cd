#![no_main]
//! Fuzz the XRay profiling-mode reader and its driver: the header, the block/record walk,
//! `verify`, `summary` and `dump` (they must agree on records and the cut; a clean file must be
//! written back byte for byte) — `profkit_xray::harness::check_profile`, which the regression
//! test replays too — then profkit-model's driver on the same bytes: the stream (threads
//! declared before their paths, every path non-empty with exclusive <= inclusive) must carry
//! the totals the folds (stack tree, accounting) get.

use libfuzzer_sys::fuzz_target;
use profkit_analysis::account::Accounting;
use profkit_model::events::{Recorded, RecordedEvent};
use profkit_model::feed::xray_profile;
use profkit_model::stack::StackTree;
use profkit_model::{Clock, FunctionTable};
use profkit_xray::profile::Profile;

fuzz_target!(|data: &[u8]| {
    profkit_xray::harness::check_profile(data);
    let Ok(p) = Profile::parse(data) else {
        return;
    };
    let mut rec = Recorded::default();
    let summary = xray_profile::feed(&p, &FunctionTable::new(), Clock::new(0), "fuzz", &mut rec)
        .expect("the recorder takes every event");
    assert!(rec.finished);
    let mut declared = 0u32;
    let mut stream_calls = 0u128;
    let mut stream_paths = 0usize;
    for e in &rec.events {
        match e {
            RecordedEvent::Thread { index, .. } => {
                assert_eq!(*index, declared);
                declared += 1;
            }
            RecordedEvent::CallPath {
                thread,
                stack,
                calls,
                inclusive,
                exclusive,
            } => {
                assert!(*thread < declared, "a path after its thread");
                assert!(!stack.is_empty());
                assert!(exclusive <= inclusive);
                stream_calls += u128::from(*calls);
                stream_paths += 1;
            }
            RecordedEvent::Process { .. } => {}
            other => panic!("a profile gives no {other:?}"),
        }
    }
    assert_eq!(summary.threads, declared);
    let folded = xray_profile::fold(&p, |_| StackTree::new());
    assert_eq!(folded.threads.len() as u32, declared);
    let tree_paths: usize = folded.threads.iter().map(|t| t.1.paths().len()).sum();
    assert!(tree_paths <= stream_paths);
    let acc = xray_profile::fold(&p, |_| Accounting::new());
    assert!(acc.summary.problems.len() == summary.problems.len());
    let mut merged = acc.merged(Accounting::merge).unwrap_or_default();
    let acc_calls: u128 = merged.rows().iter().map(|r| u128::from(r.count)).sum();
    // Per-function counts saturate at u64::MAX; below that they are the stream's.
    if stream_calls < u128::from(u64::MAX) {
        assert_eq!(acc_calls, stream_calls);
    }
});
