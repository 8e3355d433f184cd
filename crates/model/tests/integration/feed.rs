//! The feed drivers on the committed real files: every input format becomes a well-formed
//! event stream (balanced, nested, per-thread time order) with the numbers the analyses give.

use std::collections::HashMap;
use std::path::PathBuf;

use profkit_model::events::{Recorded, RecordedEvent};
use profkit_model::feed::FoldOptions;
use profkit_model::feed::{self, Filter, Selection};
use profkit_model::FunctionTable;
use profkit_xray::{InstrMap, Symbolizer, Trace};

fn fixture(dir: &str, name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(dir)
        .join(name);
    std::fs::read(p).unwrap()
}

/// Checks the EventSink contract and returns (enters, exits, instants, samples, code).
fn check_stream(r: &Recorded) -> (usize, usize, usize, usize, usize) {
    assert!(r.finished);
    let mut open: HashMap<u32, Vec<(profkit_model::FuncId, u64)>> = HashMap::new();
    let mut last: HashMap<u32, u64> = HashMap::new();
    let mut declared = std::collections::HashSet::new();
    let (mut enters, mut exits, mut instants, mut samples, mut code) = (0, 0, 0, 0, 0);
    for e in &r.events {
        match e {
            RecordedEvent::Thread { index, .. } => {
                assert!(declared.insert(*index), "thread {index} declared twice");
            }
            RecordedEvent::Enter {
                thread,
                func,
                time,
                depth,
                ..
            } => {
                assert!(declared.contains(thread));
                let st = open.entry(*thread).or_default();
                assert_eq!(*depth as usize, st.len());
                let l = last.entry(*thread).or_default();
                assert!(*time >= *l, "time goes back on thread {thread}");
                *l = *time;
                st.push((*func, *time));
                enters += 1;
            }
            RecordedEvent::Exit(s) => {
                let st = open.entry(s.thread).or_default();
                let (f, t) = st.pop().expect("exit without enter");
                assert_eq!((f, t), (s.func, s.start));
                assert_eq!(s.depth as usize, st.len());
                assert!(s.end >= s.start && s.self_time <= s.end - s.start);
                let l = last.entry(s.thread).or_default();
                assert!(s.end >= *l, "time goes back on thread {}", s.thread);
                *l = s.end;
                exits += 1;
            }
            RecordedEvent::Instant { thread, .. } => {
                assert!(declared.contains(thread));
                instants += 1;
            }
            RecordedEvent::Sample { thread, stack, .. } => {
                assert!(declared.contains(thread));
                assert!(!stack.is_empty());
                samples += 1;
            }
            RecordedEvent::Code { .. } => code += 1,
            _ => {}
        }
    }
    assert!(open.values().all(|s| s.is_empty()), "calls left open");
    // Exclusive times add up to the time of the outermost calls (to rounding).
    let (mut self_sum, mut roots) = (0u64, 0u64);
    for e in &r.events {
        if let RecordedEvent::Exit(s) = e {
            self_sum += s.self_time;
            if s.depth == 0 {
                roots += s.end - s.start;
            }
        }
    }
    assert!(
        self_sum <= roots && self_sum + exits as u64 >= roots,
        "{self_sum} vs {roots}"
    );
    (enters, exits, instants, samples, code)
}

#[test]
fn xray_fdr_and_basic() {
    let bin = fixture("xray", "demo");
    let map = InstrMap::from_object(&bin).unwrap();
    let sym = Symbolizer::new(&bin).ok();
    let names = feed::xray::function_table(&map, sym.as_ref());
    for file in ["demo-fdr.xray", "demo-basic.xray"] {
        let data = fixture("xray", file);
        let trace = Trace::parse(&data).unwrap();
        let mut r = Recorded::default();
        let summary =
            feed::xray::feed(&trace, &names, "demo", &Default::default(), &mut r).unwrap();
        let (enters, exits, instants, _, _) = check_stream(&r);
        assert_eq!(enters, exits);
        // Every span the accounting counts is in the stream, plus the calls still open at
        // the end (closed at the thread's last event).
        let folded = feed::xray::fold(&trace, &FoldOptions::default(), |_| ());
        let stats = folded.summary.calls;
        assert_eq!(exits as u64, stats.spans + stats.unfinished, "{file}");
        assert_eq!(summary.calls.spans, stats.spans + stats.unfinished);
        assert_eq!(instants as u64, folded.summary.other_events, "{file}");
        assert!(r.functions.as_ref().unwrap().len() > 3);
        assert!(exits > 0);
    }
}

#[test]
fn xray_custom_events_keep_their_payload() {
    let data = fixture("xray", "demo-fdr.xray");
    let trace = Trace::parse(&data).unwrap();
    let mut r = Recorded::default();
    feed::xray::feed(
        &trace,
        &FunctionTable::new(),
        "demo",
        &Default::default(),
        &mut r,
    )
    .unwrap();
    let payloads: Vec<_> = r
        .events
        .iter()
        .filter_map(|e| match e {
            RecordedEvent::Instant { category, args, .. } if category == "xray.custom" => {
                Some(args[0].1.clone())
            }
            _ => None,
        })
        .collect();
    assert!(!payloads.is_empty());
}

#[test]
fn mlpd_calls_and_samples() {
    for (file, want_calls, want_samples) in [
        ("busy_calls.mlpd", true, false),
        ("cpu_sample.mlpd", false, true),
        ("busy_everything.mlpd", true, false),
    ] {
        let data = fixture("mlpd", file);
        let f = profkit_mlpd::File::parse(&data).unwrap();
        let methods = feed::mlpd::methods(&f);
        let mut r = Recorded::default();
        let summary = feed::mlpd::feed(&f, &methods, file, None, &mut r).unwrap();
        let (enters, exits, _, samples, code) = check_stream(&r);
        assert_eq!(enters, exits);
        assert_eq!(want_calls, exits > 0, "{file}");
        if want_samples {
            assert!(samples > 0, "{file}");
        }
        assert!(code > 0, "{file}: JIT events become code regions");
        assert_eq!(summary.threads as usize, {
            r.events
                .iter()
                .filter(|e| matches!(e, RecordedEvent::Thread { .. }))
                .count()
        });
    }
}

#[test]
fn jitdump_loads_and_moves() {
    let data = fixture("jitdump", "handmade/all-records-le.dump");
    let mut r = Recorded::default();
    feed::jitdump::feed(&data, "all", &mut r).unwrap();
    let code: Vec<_> = r
        .events
        .iter()
        .filter_map(|e| match e {
            RecordedEvent::Code {
                address,
                name,
                event,
                ..
            } => Some((*address, name.clone(), *event)),
            _ => None,
        })
        .collect();
    // JIT_TIER records attach to the next LOAD of their address, and a MOVE keeps the tier.
    let tiers: Vec<_> = r
        .events
        .iter()
        .filter_map(|e| match e {
            RecordedEvent::Code { tier, .. } => Some(tier.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        tiers,
        vec![
            Some("Turbofan".to_string()),
            Some("Baseline".to_string()),
            Some("Baseline".to_string())
        ]
    );
    use profkit_model::events::CodeEvent;
    assert_eq!(
        code,
        vec![
            (
                0x7000_1000,
                "JS:*outer app.js:10:0".to_string(),
                CodeEvent::Load
            ),
            (0x7000_2000, "Baseline: helper".to_string(), CodeEvent::Load),
            (
                0x7000_3000,
                "Baseline: helper".to_string(),
                CodeEvent::Move {
                    old_address: 0x7000_2000
                }
            ),
        ]
    );
}

#[test]
fn filter_keeps_a_window_balanced() {
    let data = fixture("xray", "demo-fdr.xray");
    let trace = Trace::parse(&data).unwrap();
    let mut all = Recorded::default();
    feed::xray::feed(
        &trace,
        &FunctionTable::new(),
        "d",
        &Default::default(),
        &mut all,
    )
    .unwrap();
    let end = all
        .events
        .iter()
        .filter_map(|e| match e {
            RecordedEvent::Exit(s) => Some(s.end),
            _ => None,
        })
        .max()
        .unwrap();
    let mut f = Filter::new(
        Recorded::default(),
        Selection {
            time: Some((end / 3, 2 * end / 3)),
            threads: vec![],
            ..Selection::default()
        },
    );
    feed::xray::feed(
        &trace,
        &FunctionTable::new(),
        "d",
        &Default::default(),
        &mut f,
    )
    .unwrap();
    let r = f.into_inner();
    let (enters, exits, ..) = check_stream(&r);
    assert_eq!(enters, exits);
    assert!(exits > 0);
    for e in &r.events {
        if let RecordedEvent::Exit(s) = e {
            assert!(s.start >= end / 3 && s.end <= 2 * end / 3);
        }
    }
}
