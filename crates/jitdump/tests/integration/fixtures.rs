//! Real files from real producers (tests/fixtures/jitdump/README.md) and the hand-made ones.

use profkit_jitdump::validate::Severity;
use profkit_jitdump::{validate, DebugInfo, JitDump, Record, RecordType, Scan};

use crate::{codes, fixture, handmade};

/// `id N ... count C` lines of a `*.stats.txt` file.
fn stats_counts(name: &str) -> Vec<(u32, u64)> {
    let text = String::from_utf8(fixture(name)).unwrap();
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("id ")?;
            let id: u32 = rest.split_whitespace().next()?.parse().ok()?;
            let words: Vec<&str> = rest.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "count")?;
            Some((id, words.get(at + 1)?.parse().ok()?))
        })
        .collect()
}

fn check_counts(dump: &str, stats: &str) -> Scan {
    let bytes = fixture(dump);
    let parsed = JitDump::parse(&bytes).unwrap();
    let s = Scan::of(&parsed);
    assert!(
        s.truncation.is_none() && s.error.is_none(),
        "{dump}: {:?}",
        s.truncation
    );
    assert_eq!(s.malformed_records, 0);
    let expected = stats_counts(stats);
    assert!(!expected.is_empty(), "{stats} has no counts");
    for (id, n) in expected {
        assert_eq!(s.count(RecordType(id)), n, "{dump}: count of id {id}");
    }
    s
}

#[test]
fn node_counts_match_the_independent_walker() {
    let s = check_counts("node-perf-prof.dump.gz", "node-perf-prof.stats.txt");
    assert_eq!(s.count(RecordType::CODE_LOAD), 2210);
    assert_eq!(s.debug_entries, 506);
    let s = check_counts(
        "node-perf-prof-only-functions.dump",
        "node-perf-prof-only-functions.stats.txt",
    );
    assert_eq!(s.total_records(), 84);
}

#[test]
fn wasmtime_counts_and_names() {
    let s = check_counts("wasmtime-jitdump.dump", "wasmtime-jitdump.stats.txt");
    assert_eq!(s.count(RecordType::CODE_LOAD), 10);
    let bytes = fixture("wasmtime-jitdump.dump");
    let dump = JitDump::parse(&bytes).unwrap();
    let names: Vec<String> = dump
        .records()
        .filter_map(|r| match r.unwrap().parse().unwrap() {
            Record::CodeLoad(l) => Some(l.name_lossy().into_owned()),
            _ => None,
        })
        .collect();
    assert!(names.iter().any(|n| n.contains("fib")), "{names:?}");
    assert!(validate(&bytes).findings.is_empty());
}

#[test]
fn node_validation_names_v8_quirks() {
    for name in [
        "node-perf-prof.dump.gz",
        "node-perf-prof-only-functions.dump",
    ] {
        let bytes = fixture(name);
        let report = validate(&bytes);
        assert_eq!(
            codes(&report),
            [
                "debug-info-address-bias-0x40",
                "debug-info-corrupt",
                "header-pad-nonzero",
                "header-timestamp-clock",
            ],
            "{name}"
        );
        let corrupt: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.code == "debug-info-corrupt")
            .collect();
        assert_eq!(
            corrupt.len(),
            9,
            "{name}: the 9 DEBUG_INFO records of busy.js"
        );
        assert!(corrupt
            .iter()
            .all(|f| f.severity == Severity::Error && f.record.is_some()));
        assert!(corrupt[0].message.contains("V8"), "{}", corrupt[0].message);
        let bias = report
            .findings
            .iter()
            .find(|f| f.code == "debug-info-address-bias-0x40")
            .unwrap();
        assert_eq!(bias.severity, Severity::Warning);
    }
    // The record the fixture README names: #36 at offset 21226 in the small dump.
    let report = validate(&fixture("node-perf-prof-only-functions.dump"));
    assert!(report
        .findings
        .iter()
        .any(|f| f.code == "debug-info-corrupt" && f.record == Some(36) && f.offset == 21226));
}

#[test]
fn v8_corrupt_debug_info_is_recovered_by_fixed_stride() {
    let bytes = fixture("node-perf-prof-only-functions.dump");
    let dump = JitDump::parse(&bytes).unwrap();
    let mut pending: Option<DebugInfo<'_>> = None;
    let mut recovered = 0;
    for raw in dump.records() {
        match raw.unwrap().parse().unwrap() {
            Record::DebugInfo(d) => pending = Some(d),
            Record::CodeLoad(l) => {
                let Some(d) = pending.take() else { continue };
                if matches!(
                    d.walk_end(),
                    profkit_jitdump::read::DebugWalkEnd::Exact { .. }
                ) {
                    continue;
                }
                let stride = d
                    .fixed_stride()
                    .expect("V8's corrupt records have one stride");
                assert_eq!(stride, 16 + 35, "34-byte path + NUL");
                for i in 0..d.nr_entry as usize {
                    let e = d.entry_at_stride(stride, i).unwrap();
                    let off = e.addr - l.code_addr;
                    assert!(
                        (0x40..=l.code_size + 0x40).contains(&off),
                        "entry {i}: {off:#x}"
                    );
                    assert!(
                        e.line >= 1 && e.line < 100,
                        "busy.js is short: line {}",
                        e.line
                    );
                    assert!(e.file.ends_with(b"tures/node/busy.js"));
                }
                recovered += 1;
            }
            _ => {}
        }
    }
    assert_eq!(recovered, 9);
}

#[test]
fn handmade_files_are_reproducible_and_validate_as_documented() {
    for h in handmade::all() {
        let committed = fixture(&format!("handmade/{}", h.name));
        assert_eq!(
            committed, h.bytes,
            "{}: committed file differs; run `cargo run -p profkit-jitdump --example make_fixtures`",
            h.name
        );
        let report = validate(&h.bytes);
        assert_eq!(
            codes(&report),
            h.codes,
            "{}: {:#?}",
            h.name,
            report.findings
        );
    }
}

#[test]
fn big_and_little_endian_files_decode_to_the_same_records() {
    let le = handmade::all_records(profkit_jitdump::Endian::Little);
    let be = handmade::all_records(profkit_jitdump::Endian::Big);
    assert_ne!(le, be);
    let a = JitDump::parse(&le).unwrap();
    let b = JitDump::parse(&be).unwrap();
    assert_eq!(a.endian(), profkit_jitdump::Endian::Little);
    assert_eq!(b.endian(), profkit_jitdump::Endian::Big);
    let ra: Vec<_> = a.records().map(|r| r.unwrap()).collect();
    let rb: Vec<_> = b.records().map(|r| r.unwrap()).collect();
    assert_eq!(ra.len(), 10);
    for (x, y) in ra.iter().zip(&rb) {
        assert_eq!(
            (x.record_type, x.timestamp, x.offset),
            (y.record_type, y.timestamp, y.offset)
        );
        crate::roundtrip::assert_same_record(&x.parse().unwrap(), &y.parse().unwrap());
    }
}

#[test]
fn extended_header_is_skipped() {
    let bytes = fixture("handmade/header-extended.dump");
    let dump = JitDump::parse(&bytes).unwrap();
    assert_eq!(dump.header().total_size, 48);
    assert_eq!(dump.header().extra, &[0xAB; 8]);
    let first = dump.records().next().unwrap().unwrap();
    assert_eq!(first.offset, 48);
    assert_eq!(first.record_type, RecordType::CODE_LOAD);
}

#[test]
fn record_size_8_is_corrupt_not_truncated() {
    let bytes = fixture("handmade/record-size-8.dump");
    let dump = JitDump::parse(&bytes).unwrap();
    let mut records = dump.records();
    assert!(records.next().unwrap().is_ok());
    let err = records.next().unwrap().unwrap_err();
    assert_eq!(err.record, Some(1));
    assert_eq!(err.offset, 103);
    assert!(err.message.contains("total_size 8"), "{}", err.message);
    assert_eq!(
        err.to_string(),
        "record #1 at offset 0x67: JIT_CODE_LOAD total_size 8 is below the 16-byte record header"
    );
    assert!(records.next().is_none());
    assert!(records.truncation().is_none());
}

#[test]
fn unwinding_info_splits_eh_frame_and_header() {
    let (eh, hdr) = handmade::unwind_tables();
    let bytes = handmade::all_records(profkit_jitdump::Endian::Big);
    let dump = JitDump::parse(&bytes).unwrap();
    let u = dump
        .records()
        .find_map(|r| match r.unwrap().parse().unwrap() {
            Record::UnwindingInfo(u) => Some(u),
            _ => None,
        })
        .unwrap();
    assert_eq!(u.eh_frame(), &eh[..]);
    assert_eq!(u.eh_frame_hdr(), &hdr[..]);
    assert_eq!(u.mapped_size, (eh.len() + hdr.len()) as u64);
}
