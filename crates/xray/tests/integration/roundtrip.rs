//! Round trips: write -> read gives the same events (proptest), FDR v1-5 and basic v1-3.

use proptest::prelude::*;

use profkit_xray::write::{BasicTraceWriter, FdrTraceWriter, OwnedEvent};
use profkit_xray::{EventKind, FileHeader, Trace};

type RawEvent = (u8, u32, u64, u16, Vec<u64>, u16, Vec<u8>);

fn event(fdr: bool, version: u16) -> impl Strategy<Value = RawEvent> {
    let kinds = if fdr && version >= 5 {
        6u8
    } else if fdr {
        5
    } else {
        4
    };
    (
        0..kinds,
        0u32..=0x0FFF_FFFF,
        prop_oneof![0u64..1000, 0u64..(1u64 << 34)],
        prop_oneof![Just(0u16), 0u16..4],
        proptest::collection::vec(any::<u64>(), 0..3),
        any::<u16>(),
        proptest::collection::vec(any::<u8>(), 1..40),
    )
}

fn build(fdr: bool, version: u16, raw: Vec<RawEvent>) -> Vec<OwnedEvent> {
    let mut tsc = 1_000u64;
    let mut out = Vec::new();
    for (k, id, dt, cpu, args, ty, data) in raw {
        tsc += dt;
        let kind = [
            EventKind::Enter,
            EventKind::Exit,
            EventKind::TailExit,
            EventKind::EnterArg,
            EventKind::CustomEvent,
            EventKind::TypedEvent,
        ][k as usize];
        let cpu = if fdr { cpu } else { cpu & 0xff };
        let mut ev = OwnedEvent {
            kind: Some(kind),
            func_id: id,
            tsc,
            cpu,
            ..Default::default()
        };
        match kind {
            EventKind::EnterArg => ev.args = args,
            EventKind::CustomEvent => {
                ev.func_id = 0;
                ev.data = data;
                if version < 4 {
                    // v1-3 custom events carry no CPU: they take the thread's current one.
                    ev.cpu = out.last().map_or(0, |e: &OwnedEvent| e.cpu);
                    if out.is_empty() {
                        ev.cpu = 0;
                    }
                }
            }
            EventKind::TypedEvent => {
                ev.func_id = 0;
                ev.data = data;
                ev.event_type = ty;
            }
            _ => {}
        }
        if !fdr {
            ev.func_id &= 0x7fff_ffff;
        }
        out.push(ev);
    }
    out
}

fn check_fdr(version: u16, buffer_size: u64, threads: Vec<Vec<OwnedEvent>>) {
    let mut h = FileHeader::fdr(version);
    h.buffer_size = buffer_size;
    let mut w = FdrTraceWriter::new(h);
    for (i, evs) in threads.iter().enumerate() {
        w.thread(77, 1000 + i as u32, evs).unwrap();
    }
    let data = w.finish();
    let t = Trace::parse(&data).unwrap();
    let d = t.decode();
    assert!(d.is_clean(), "{:?} {:?}", d.problems, d.truncation);
    assert!(!profkit_xray::verify(&t).has_errors());
    assert_eq!(d, t.decode_sequential());
    let nonempty: Vec<&Vec<OwnedEvent>> = threads.iter().filter(|t| !t.is_empty()).collect();
    assert_eq!(d.threads.len(), nonempty.len());
    for (th, evs) in d.threads.iter().zip(nonempty) {
        let got: Vec<OwnedEvent> = th.events.iter().map(OwnedEvent::from_event).collect();
        assert_eq!(&got, evs);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn fdr_v5(raw in proptest::collection::vec(proptest::collection::vec(event(true, 5), 0..60), 1..4)) {
        let threads = raw.into_iter().map(|r| build(true, 5, r)).collect();
        check_fdr(5, 512, threads);
    }

    #[test]
    fn fdr_v1_to_v4(version in 1u16..=4, raw in proptest::collection::vec(proptest::collection::vec(event(true, 4), 0..40), 1..3)) {
        let threads = raw.into_iter().map(|r| build(true, version, r)).collect();
        check_fdr(version, if version == 1 { 2048 } else { 0 }, threads);
    }

    #[test]
    fn basic_v1_to_v3(version in 1u16..=3, raw in proptest::collection::vec(event(false, 3), 0..80)) {
        let evs = build(false, version, raw);
        let mut w = BasicTraceWriter::new(FileHeader::basic(version));
        w.thread(55, 66, &evs).unwrap();
        let data = w.finish();
        let d = Trace::parse(&data).unwrap().decode();
        prop_assert!(d.is_clean());
        let got: Vec<OwnedEvent> = d.events().map(OwnedEvent::from_event).collect();
        prop_assert_eq!(got, evs);
        if let Some(t) = d.threads.first() {
            prop_assert_eq!(t.key.pid, if version >= 3 { 55 } else { 0 });
        }
    }
}

#[test]
fn split_threads_across_buffers_keep_order() {
    // Many small buffers per thread, threads interleaved: blocks are read in file order.
    let mut evs = Vec::new();
    for i in 0..500u64 {
        evs.push(OwnedEvent::function(
            if i % 2 == 0 {
                EventKind::Enter
            } else {
                EventKind::Exit
            },
            (i % 7) as u32 + 1,
            10 + i * 3,
        ));
    }
    check_fdr(5, 256, vec![evs.clone(), evs.clone(), evs]);
}
