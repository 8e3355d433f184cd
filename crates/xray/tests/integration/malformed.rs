//! Malformed input: truncations, unknown kinds, grammar violations, hostile sizes.

use profkit_xray::write::{encode_fdr_record, BasicTraceWriter, FdrTraceWriter, OwnedEvent};
use profkit_xray::{
    verify, BasicRecord, ErrorKind, EventKind, FdrEntry, FdrRecord, FileHeader, FunctionKind,
    MetadataKind, Severity, SkipKind, Trace,
};

use profkit_xray::dump::{dump, DumpOptions};
use profkit_xray::harness::{check_dump, check_summary, check_yaml_paths};

use crate::common::fixture;
use crate::synthetic::write_fdr;

fn check_every_cut(data: &[u8]) {
    let full = Trace::parse(data).unwrap();
    let full_events = full.decode().event_count();
    let full_problems = full.decode().problems.len();
    let boundaries: Vec<u64> = full.layout().buffers.iter().map(|b| b.end).collect();
    for cut in 0..data.len() {
        let part = &data[..cut];
        let Ok(t) = Trace::parse(part) else {
            assert!(cut < 32, "cut {cut}");
            assert!(matches!(Trace::parse(part), Err(e) if e.kind() == ErrorKind::Truncated));
            continue;
        };
        let d = t.decode();
        let ds = t.decode_sequential();
        assert_eq!(d, ds, "cut {cut}");
        assert!(d.event_count() <= full_events);
        let _ = verify(&t);
        check_summary(&t);
        if cut % 5 == 0 {
            check_dump(&t);
            check_yaml_paths(&t);
        }
        let at_boundary = cut == 32 || boundaries.contains(&(cut as u64));
        if t.header.is_fdr() {
            if !at_boundary {
                let tr = d
                    .truncation
                    .as_ref()
                    .unwrap_or_else(|| panic!("cut {cut}: no truncation"));
                assert!(tr.offset <= cut as u64, "cut {cut}: {tr}");
                assert_eq!(tr.record, Some(d.records), "cut {cut}");
                assert_eq!(t.truncation().map(|t| t.offset), Some(tr.offset));
                let v = verify(&t);
                let f = v.findings.iter().find(|f| f.code == "truncated").unwrap();
                assert_eq!((f.offset, f.record), (tr.offset, tr.record), "cut {cut}");
            } else {
                assert_eq!(d.truncation, None, "cut {cut}");
            }
        } else {
            assert_eq!(d.truncation.is_some(), (cut - 32) % 32 != 0, "cut {cut}");
            assert_eq!(d.truncation.as_ref(), t.truncation());
        }
        // Every buffer stops before the cut: decoding problems are never about the cut.
        assert!(
            d.problems.len() <= full_problems,
            "cut {cut}: {:?}",
            d.problems
        );
    }
}

#[test]
fn truncated_at_every_offset_real_fdr() {
    check_every_cut(&fixture("demo-fdr.xray"));
}

#[test]
fn truncated_at_every_offset_real_basic() {
    let data = fixture("demo-basic.xray");
    check_every_cut(&data[..32 * 40]);
}

#[test]
fn truncated_at_every_offset_synthetic() {
    for v in 1..=5 {
        let data = write_fdr(v);
        if v == 1 {
            // Cuts inside zero padding are not truncations of a record; check decoding only.
            for cut in 0..data.len() {
                if let Ok(t) = Trace::parse(&data[..cut]) {
                    let _ = t.decode();
                    let _ = verify(&t);
                }
            }
        } else {
            check_every_cut(&data);
        }
    }
}

#[test]
fn truncated_keeps_complete_records() {
    let data = write_fdr(5);
    let full = Trace::parse(&data).unwrap().decode();
    let cut = &data[..data.len() - 5];
    let d = Trace::parse(cut).unwrap().decode();
    // The cut is at the start of the last record (the typed event marker).
    let last = Trace::parse(&data)
        .unwrap()
        .fdr_records()
        .filter_map(|e| match e {
            FdrEntry::Record(r) => Some(r.offset),
            _ => None,
        })
        .last()
        .unwrap();
    let t = d.truncation.as_ref().unwrap();
    assert_eq!(t.offset, last);
    // Only the last (typed) event is lost.
    assert_eq!(d.event_count(), full.event_count() - 1);
    let msg = d.truncation.unwrap().to_string();
    assert!(msg.contains("truncated"), "{msg}");
}

fn fdr_with(version: u16, body: &[FdrRecord<'_>]) -> Vec<u8> {
    let h = FileHeader::fdr(version);
    let mut content = Vec::new();
    for r in body {
        encode_fdr_record(&mut content, r, &h);
    }
    let mut w = FdrTraceWriter::new(h);
    if version >= 2 {
        w.record(&FdrRecord::BufferExtents {
            size: content.len() as u64,
        });
    }
    w.raw(&content);
    w.finish()
}

fn preamble() -> Vec<FdrRecord<'static>> {
    vec![
        FdrRecord::NewBuffer { tid: 7 },
        FdrRecord::WalltimeMarker {
            seconds: 1,
            micros: 2,
        },
        FdrRecord::Pid { pid: 9 },
        FdrRecord::NewCpuId { cpu: 1, tsc: 100 },
    ]
}

fn enter(id: u32) -> FdrRecord<'static> {
    FdrRecord::Function {
        kind: FunctionKind::ENTER,
        func_id: id,
        tsc_delta: 1,
    }
}

#[test]
fn unknown_metadata_kind_is_reported_not_fatal() {
    let mut body = preamble();
    body.push(enter(1));
    body.push(FdrRecord::UnknownMetadata {
        kind: MetadataKind(12),
        payload: [0; 15],
    });
    body.push(enter(2));
    let data = fdr_with(5, &body);
    let t = Trace::parse(&data).unwrap();
    let d = t.decode();
    assert_eq!(d.event_count(), 2);
    assert_eq!(d.problems.len(), 1);
    let off = 32 + 16 + 16 * 4 + 8;
    assert_eq!(d.problems[0].known_offset(), Some(off));
    assert_eq!(d.problems[0].record, Some(6));
    let r = verify(&t);
    let f = r
        .findings
        .iter()
        .find(|f| f.severity == Severity::Error)
        .unwrap();
    assert_eq!((f.offset, f.record), (off, Some(6)));
    assert!(f.message.contains("12"), "{}", f.message);
}

#[test]
fn unknown_function_kind_is_reported() {
    let mut body = preamble();
    body.push(FdrRecord::Function {
        kind: FunctionKind(5),
        func_id: 1,
        tsc_delta: 0,
    });
    body.push(enter(2));
    let data = fdr_with(5, &body);
    let t = Trace::parse(&data).unwrap();
    let d = t.decode();
    assert_eq!(d.event_count(), 1);
    assert_eq!(d.problems.len(), 1);
    assert!(d.problems[0].to_string().contains("kind 5"));
    assert!(verify(&t)
        .findings
        .iter()
        .any(|f| f.code == "function-kind"));
}

#[test]
fn grammar_function_right_after_new_buffer() {
    let body = vec![FdrRecord::NewBuffer { tid: 7 }, enter(1)];
    let data = fdr_with(5, &body);
    let r = verify(&Trace::parse(&data).unwrap());
    let f = &r.findings[0];
    assert_eq!(f.code, "block-grammar");
    assert_eq!(f.offset, 32 + 16 + 16);
    assert_eq!(f.record, Some(2));
    assert!(
        f.message.contains("from NewBuffer to Function"),
        "{}",
        f.message
    );
}

#[test]
fn grammar_block_starting_with_function() {
    let data = fdr_with(5, &[enter(1)]);
    let t = Trace::parse(&data).unwrap();
    let r = verify(&t);
    assert!(
        r.findings
            .iter()
            .any(|f| f.code == "block-grammar"
                && f.message.contains("from BufferExtents to Function"))
    );
}

#[test]
fn grammar_terminal_state() {
    let body = vec![
        FdrRecord::NewBuffer { tid: 7 },
        FdrRecord::WalltimeMarker {
            seconds: 1,
            micros: 2,
        },
    ];
    let data = fdr_with(5, &body);
    let r = verify(&Trace::parse(&data).unwrap());
    assert_eq!(r.findings.len(), 1);
    assert_eq!(r.findings[0].code, "block-terminal");
    assert!(r.findings[0].message.contains("WallClockTime"));
}

#[test]
fn grammar_pid_is_optional_and_callarg_after_any_function() {
    let body = vec![
        FdrRecord::NewBuffer { tid: 7 },
        FdrRecord::WalltimeMarker {
            seconds: 1,
            micros: 2,
        },
        FdrRecord::NewCpuId { cpu: 1, tsc: 100 },
        enter(1),
        FdrRecord::CallArgument { arg: 5 },
        FdrRecord::CallArgument { arg: 6 },
    ];
    let data = fdr_with(5, &body);
    let t = Trace::parse(&data).unwrap();
    assert!(verify(&t).findings.is_empty());
    let d = t.decode();
    let e = &d.threads[0].events[0];
    assert_eq!(e.kind, EventKind::EnterArg);
    assert_eq!(e.args.to_vec(), vec![5, 6]);
}

#[test]
fn end_of_buffer_at_version_2_is_an_error() {
    let mut body = preamble();
    body.remove(2);
    body.push(enter(1));
    body.push(FdrRecord::EndOfBuffer);
    let data = fdr_with(2, &body);
    let t = Trace::parse(&data).unwrap();
    let r = verify(&t);
    assert!(r.findings.iter().any(|f| f.severity == Severity::Error
        && f.message.contains("no longer supported starting version 2")));
    assert!(!t.decode().problems.is_empty());
}

#[test]
fn unsupported_versions_and_types() {
    for (ty, v) in [(1u16, 6u16), (1, 0), (0, 4), (0, 0), (2, 1)] {
        let mut h = FileHeader::fdr(5);
        h.trace_type = profkit_xray::TraceType(ty);
        h.version = v;
        let mut data = h.to_bytes().to_vec();
        data.extend_from_slice(&[0u8; 64]);
        let e = Trace::parse(&data).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert_eq!(e.known_offset(), Some(0));
    }
    assert!(Trace::parse(&[1, 0, 1]).unwrap_err().is_truncation());
}

#[test]
fn hostile_sizes() {
    // Custom event claiming i32::MAX bytes, extents claiming u64::MAX, negative sizes.
    let h = FileHeader::fdr(5);
    let mut body = Vec::new();
    for r in preamble() {
        encode_fdr_record(&mut body, &r, &h);
    }
    let mut marker = Vec::new();
    encode_fdr_record(
        &mut marker,
        &FdrRecord::CustomEvent {
            size: 1,
            time: profkit_xray::CustomEventTime::Delta(0),
            data: b"x",
        },
        &h,
    );
    for size in [i32::MAX, -5, 0] {
        let mut m = marker.clone();
        m[1..5].copy_from_slice(&size.to_le_bytes());
        m.truncate(16);
        let mut content = body.clone();
        content.extend_from_slice(&m);
        content.extend_from_slice(&[0u8; 40]);
        let mut data = h.to_bytes().to_vec();
        let mut ext = Vec::new();
        encode_fdr_record(
            &mut ext,
            &FdrRecord::BufferExtents {
                size: content.len() as u64,
            },
            &h,
        );
        data.extend_from_slice(&ext);
        data.extend_from_slice(&content);
        let t = Trace::parse(&data).unwrap();
        let d = t.decode();
        assert_eq!(
            d.problems.len() + d.truncation.iter().count(),
            1,
            "size {size}: {d:?}"
        );
        assert!(verify(&t).has_errors());
    }
    let mut data = h.to_bytes().to_vec();
    encode_fdr_record(&mut data, &FdrRecord::BufferExtents { size: u64::MAX }, &h);
    encode_fdr_record(&mut data, &FdrRecord::NewBuffer { tid: 1 }, &h);
    let d = Trace::parse(&data).unwrap().decode();
    assert!(d.truncation.is_some());
}

#[test]
fn junk_between_buffers_is_skipped_and_reported() {
    let data = write_fdr(5);
    let t = Trace::parse(&data).unwrap();
    let second = t.layout().buffers[1].extents_offset.unwrap() as usize;
    let mut bad = data[..second].to_vec();
    let junk: Vec<u8> = (0..24u8).map(|i| i.wrapping_mul(37) | 0x40).collect();
    bad.extend_from_slice(&junk);
    bad.extend_from_slice(&data[second..]);
    let t2 = Trace::parse(&bad).unwrap();
    let d = t2.decode();
    assert_eq!(d.skips.len(), 1);
    assert_eq!(d.skips[0].offset, second as u64);
    assert_eq!(d.skips[0].len, 24);
    assert_eq!(d.skips[0].kind, SkipKind::Junk);
    let key = |d: &profkit_xray::Decoded<'_>| -> Vec<(u32, EventKind, u64, u32, Vec<u8>)> {
        d.events()
            .map(|e| (e.tid, e.kind, e.tsc, e.func_id, e.data.to_vec()))
            .collect()
    };
    assert_eq!(key(&d), key(&t.decode()));
    let r = verify(&t2);
    assert!(r
        .findings
        .iter()
        .any(|f| f.code == "junk-between-buffers" && f.offset == second as u64));
    assert!(!r.has_errors());
}

#[test]
fn basic_arg_payload_must_match() {
    let h = FileHeader::basic(3);
    let mut w = BasicTraceWriter::new(h);
    w.record(&BasicRecord::Function {
        cpu: 1,
        kind: FunctionKind::ENTER_ARGS,
        func_id: 5,
        tsc: 10,
        tid: 1,
        pid: 2,
    });
    w.record(&BasicRecord::ArgPayload {
        func_id: 5,
        tid: 1,
        pid: 2,
        arg: 99,
    });
    w.record(&BasicRecord::ArgPayload {
        func_id: 6,
        tid: 1,
        pid: 2,
        arg: 100,
    });
    w.record(&BasicRecord::Unknown {
        record_type: profkit_xray::BasicRecordType(9),
    });
    w.record(&BasicRecord::Function {
        cpu: 1,
        kind: FunctionKind(6),
        func_id: 5,
        tsc: 10,
        tid: 1,
        pid: 2,
    });
    let data = w.finish();
    let t = Trace::parse(&data).unwrap();
    let d = t.decode();
    assert_eq!(d.event_count(), 1);
    assert_eq!(d.threads[0].events[0].args.to_vec(), vec![99]);
    assert_eq!(d.problems.len(), 3);
    assert_eq!(d.problems[0].known_offset(), Some(32 + 64));
    assert_eq!(d.problems[0].record, Some(2));
    assert_eq!(verify(&t).findings.len(), 3);
}

#[test]
fn basic_header_only_is_empty_not_an_error() {
    // llvm-xray rejects this (and reports "Unsupported version ... 768", issue #57657).
    let data = FileHeader::basic(3).to_bytes();
    let d = Trace::parse(&data).unwrap().decode();
    assert_eq!(d.event_count(), 0);
    assert!(d.is_clean());
}

#[test]
fn callargument_without_function() {
    let mut body = preamble();
    body.push(FdrRecord::CallArgument { arg: 1 });
    let data = fdr_with(5, &body);
    let t = Trace::parse(&data).unwrap();
    assert_eq!(t.decode().problems.len(), 1);
    assert!(verify(&t)
        .findings
        .iter()
        .any(|f| f.code == "block-grammar"));
}

#[test]
fn random_bytes_never_panic() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..300 {
        let mut data = FileHeader::fdr(1 + (round % 5) as u16).to_bytes().to_vec();
        for _ in 0..(round * 3) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data.push(x as u8);
        }
        let t = Trace::parse(&data).unwrap();
        let _ = t.decode();
        let _ = verify(&t);
        let _ = t.fdr_records().count();
    }
    let _ = OwnedEvent::default();
}

#[test]
fn buffer_without_new_cpu_id_continues_the_threads_tsc() {
    let h = FileHeader::fdr(5);
    let mut data = h.to_bytes().to_vec();
    let mut buffer = |recs: &[FdrRecord<'_>]| {
        let mut content = Vec::new();
        for r in recs {
            encode_fdr_record(&mut content, r, &h);
        }
        encode_fdr_record(
            &mut data,
            &FdrRecord::BufferExtents {
                size: content.len() as u64,
            },
            &h,
        );
        data.extend_from_slice(&content);
    };
    let mut first = preamble();
    first.push(enter(1));
    buffer(&first);
    let mut other = preamble();
    other[0] = FdrRecord::NewBuffer { tid: 8 };
    other.push(enter(5));
    buffer(&other);
    buffer(&[
        FdrRecord::NewBuffer { tid: 7 },
        FdrRecord::WalltimeMarker {
            seconds: 1,
            micros: 3,
        },
        FdrRecord::Pid { pid: 9 },
        enter(2),
    ]);
    let t = Trace::parse(&data).unwrap();
    let d = t.decode();
    assert_eq!(d, t.decode_sequential());
    let th = d.threads.iter().find(|th| th.key.tid == 7).unwrap();
    let tscs: Vec<u64> = th.events.iter().map(|e| e.tsc).collect();
    assert_eq!(tscs, vec![101, 102]);
    assert!(verify(&t)
        .findings
        .iter()
        .any(|f| f.code == "block-grammar" && f.message.contains("PIDEntry to Function")));
}

#[test]
fn docs_list_every_validation_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/xray.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let rows: Vec<(String, String)> = doc
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let code = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((code.to_string(), cells.get(2)?.to_string()))
        })
        .collect();
    // The traces' table (with the common codes), then profiling mode's (with `truncated`).
    let truncated = profkit_common::finding::COMMON_CODES
        .iter()
        .filter(|(c, _, _)| *c == profkit_common::finding::TRUNCATED);
    let table = profkit_xray::verify::codes::ALL
        .iter()
        .chain(profkit_common::finding::COMMON_CODES)
        .chain(profkit_xray::profile::verify::codes::ALL)
        .chain(truncated)
        .map(|(c, s, _)| (c.to_string(), s.name().to_string()))
        .collect::<Vec<_>>();
    assert_eq!(rows, table);
}

#[test]
fn dump_of_a_truncated_basic_trace_reports_the_cut() {
    let data = fixture("demo-basic.xray");
    let t = Trace::parse(&data[..data.len() - 5]).unwrap();
    let mut out = Vec::new();
    let o = dump(&t, &DumpOptions::default(), &mut out).unwrap();
    let tr = o.truncation.unwrap();
    assert_eq!(tr.offset, data.len() as u64 - 32);
    assert_eq!(tr.record, Some((data.len() as u64 - 32) / 32 - 1));
    assert_eq!(t.truncation(), Some(&tr));
    let mut json = Vec::new();
    let opts = DumpOptions {
        json: true,
        ..DumpOptions::default()
    };
    dump(&t, &opts, &mut json).unwrap();
    let first = String::from_utf8(json).unwrap();
    assert!(
        first.starts_with(
            "{\"args\":[],\"cpu\":0,\"func_id\":6,\"kind\":\"function-enter\",\"offset\":32,\"pid\":12014,\"tid\":12015,\"tsc\":"
        ),
        "{}",
        &first[..200]
    );
}
