//! Synthetic traces of every version: every metadata kind, per-version payloads.

use profkit_xray::write::{FdrTraceWriter, OwnedEvent};
use profkit_xray::{
    verify, CustomEventTime, EventKind, FdrEntry, FdrRecord, FileHeader, MetadataKind, Severity,
    Trace,
};

/// Two threads exercising enter, enter-args + CallArgument, exit, custom event, tail exit,
/// TSCWrap (big delta), a CPU change and (v5) a typed event.
pub fn sample_events(version: u16) -> Vec<(u32, u32, Vec<OwnedEvent>)> {
    let mut out = Vec::new();
    for (tid, base) in [(101u32, 1_000u64), (102, 5_000)] {
        let mut v = vec![
            OwnedEvent::function(EventKind::Enter, 1, base),
            OwnedEvent {
                args: vec![42, 7],
                ..OwnedEvent::function(EventKind::EnterArg, 2, base + 10)
            },
            OwnedEvent::function(EventKind::Exit, 2, base + 20),
            OwnedEvent {
                kind: Some(EventKind::CustomEvent),
                tsc: base + 30,
                data: b"hello \x00\xff binary".to_vec(),
                ..Default::default()
            },
            OwnedEvent::function(EventKind::Enter, 3, base + 40),
            OwnedEvent::function(EventKind::TailExit, 3, base + 50),
            // Delta > i32::MAX: needs a TSCWrap.
            OwnedEvent::function(EventKind::Exit, 1, base + (1 << 33)),
            OwnedEvent {
                cpu: 3,
                ..OwnedEvent::function(EventKind::Enter, 0x0FFF_FFFF, base + (1 << 33) + 5)
            },
        ];
        if version >= 5 {
            v.push(OwnedEvent {
                kind: Some(EventKind::TypedEvent),
                tsc: base + (1 << 33) + 9,
                cpu: 3,
                event_type: 42,
                data: b"typed".to_vec(),
                ..Default::default()
            });
        }
        out.push((4242, tid, v));
    }
    out
}

pub fn write_fdr(version: u16) -> Vec<u8> {
    let mut w = FdrTraceWriter::new(FileHeader::fdr(version));
    w.set_walltime(1234, 567_890);
    for (pid, tid, evs) in sample_events(version) {
        w.thread(pid, tid, &evs).unwrap();
    }
    w.finish()
}

fn kinds(data: &[u8]) -> Vec<MetadataKind> {
    let t = Trace::parse(data).unwrap();
    let mut k: Vec<MetadataKind> = t
        .fdr_records()
        .filter_map(|e| match e {
            FdrEntry::Record(r) => r.record.metadata_kind(),
            FdrEntry::Skip(_) => None,
            other => panic!("{other:?}"),
        })
        .collect();
    k.sort();
    k.dedup();
    k
}

#[test]
fn every_metadata_kind_per_version() {
    use MetadataKind as K;
    for version in 1..=5u16 {
        let data = write_fdr(version);
        let mut expect = vec![
            K::NEW_BUFFER,
            K::NEW_CPU_ID,
            K::TSC_WRAP,
            K::WALLTIME_MARKER,
        ];
        expect.extend([K::CUSTOM_EVENT_MARKER, K::CALL_ARGUMENT]);
        if version == 1 {
            expect.push(K::END_OF_BUFFER);
        } else {
            expect.push(K::BUFFER_EXTENTS);
        }
        if version >= 3 {
            expect.push(K::PID);
        }
        if version >= 5 {
            expect.push(K::TYPED_EVENT_MARKER);
        }
        expect.sort();
        assert_eq!(kinds(&data), expect, "version {version}");
        let t = Trace::parse(&data).unwrap();
        let r = verify(&t);
        assert!(!r.has_errors(), "v{version}: {:?}", r.findings);
        let blocks = t
            .fdr_records()
            .filter(|e| {
                matches!(
                    e,
                    profkit_xray::FdrEntry::Record(r)
                        if matches!(r.record, profkit_xray::FdrRecord::NewBuffer { .. })
                )
            })
            .count();
        assert_eq!(blocks, 2);
    }
}

#[test]
fn decoded_events_per_version() {
    for version in 1..=5u16 {
        let data = write_fdr(version);
        let t = Trace::parse(&data).unwrap();
        let d = t.decode();
        assert!(
            d.is_clean(),
            "v{version}: {:?} {:?}",
            d.problems,
            d.truncation
        );
        assert_eq!(d.threads.len(), 2);
        for (th, (pid, tid, evs)) in d.threads.iter().zip(sample_events(version)) {
            assert_eq!(th.key.tid, tid);
            // v1/v2 have no Pid record: pid unknown (llvm-xray shows pid = tid for v2).
            assert_eq!(th.key.pid, if version >= 3 { pid } else { 0 });
            let got: Vec<OwnedEvent> = th.events.iter().map(OwnedEvent::from_event).collect();
            assert_eq!(got, evs, "version {version}");
        }
        // v1 buffers are padded to the header's buffer size.
        if version == 1 {
            assert_eq!((data.len() - 32) % 4096, 0);
            assert!(d
                .skips
                .iter()
                .all(|s| s.kind == profkit_xray::SkipKind::Padding));
            assert_eq!(d.skips.len(), 2);
        } else {
            assert!(d.skips.is_empty());
        }
    }
}

#[test]
fn custom_event_layouts() {
    for version in 1..=5u16 {
        let data = write_fdr(version);
        let t = Trace::parse(&data).unwrap();
        let custom = t
            .fdr_records()
            .find_map(|e| match e {
                FdrEntry::Record(r) => match r.record {
                    FdrRecord::CustomEvent { time, size, data } => {
                        Some((time, size, data.to_vec()))
                    }
                    _ => None,
                },
                _ => None,
            })
            .unwrap();
        assert_eq!(custom.1 as usize, custom.2.len());
        match (version, custom.0) {
            (5, CustomEventTime::Delta(d)) => assert_eq!(d, 10),
            (4, CustomEventTime::Absolute { tsc, cpu }) => assert_eq!((tsc, cpu), (1030, Some(0))),
            (1..=3, CustomEventTime::Absolute { tsc, cpu }) => assert_eq!((tsc, cpu), (1030, None)),
            other => panic!("v{version}: {other:?}"),
        }
    }
}

#[test]
fn walltime_and_records_have_offsets() {
    let data = write_fdr(5);
    let t = Trace::parse(&data).unwrap();
    let mut last = 0;
    for e in t.fdr_records() {
        let FdrEntry::Record(r) = e else { panic!() };
        assert!(r.offset >= 32 && r.offset >= last);
        last = r.offset;
        if let FdrRecord::WalltimeMarker { seconds, micros } = r.record {
            assert_eq!((seconds, micros), (1234, 567_890));
        }
    }
    // Records after a custom event payload are unaligned.
    assert!(t
        .fdr_records()
        .any(|e| matches!(e, FdrEntry::Record(r) if r.offset % 8 != 0)));
}

#[test]
fn big_endian_fdr_and_basic() {
    for version in 1..=5u16 {
        let mut h = FileHeader::fdr(version);
        h.endian = profkit_xray::Endian::Big;
        let mut w = FdrTraceWriter::new(h);
        for (pid, tid, evs) in sample_events(version) {
            w.thread(pid, tid, &evs).unwrap();
        }
        let data = w.finish();
        let t = Trace::parse(&data).unwrap();
        assert_eq!(t.header.endian, profkit_xray::Endian::Big);
        let d = t.decode();
        assert!(d.is_clean(), "{:?}", d.problems);
        let got: Vec<OwnedEvent> = d.threads[0]
            .events
            .iter()
            .map(OwnedEvent::from_event)
            .collect();
        assert_eq!(got, sample_events(version)[0].2);
    }
}

#[test]
fn ticks_to_ns() {
    let mut h = FileHeader::fdr(5);
    h.cycle_frequency = 2_000_000_000;
    assert_eq!(h.ticks_to_ns(3_000), 1_500);
    h.cycle_frequency = 0;
    assert_eq!(h.ticks_to_ns(3_000), 3_000);
    h.cycle_frequency = 3;
    assert_eq!(h.ticks_to_ns(u64::MAX), u64::MAX);
}

#[test]
fn bitfield_is_masked() {
    let mut h = FileHeader::basic(3);
    h.bitfield = 0xff;
    let bytes = h.to_bytes();
    let t = Trace::parse(&bytes).unwrap();
    assert!(t.header.constant_tsc() && t.header.nonstop_tsc());
    let r = verify(&t);
    assert!(r
        .findings
        .iter()
        .any(|f| f.code == "header-bitfield" && f.severity == Severity::Warning));
}

#[test]
fn packed_dso_ids() {
    assert_eq!(profkit_xray::split_packed_id((3 << 24) | 17), (3, 17));
}
