//! `summary` and `perfmap::summary`: what `profkit info` shows, in profkit-common's shape.

use profkit_common::summary::Source;
use profkit_common::Value;
use profkit_jitdump::{perfmap, summary, JitDump};

use crate::{fixture, handmade};

fn text(s: &profkit_common::Summary) -> String {
    let mut out = Vec::new();
    s.write_text(
        &mut out,
        &Source {
            file: "x",
            size: 1,
            compression: None,
        },
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn every_record_kind_header_threads_and_time() {
    for (endian, name) in [
        (profkit_jitdump::Endian::Little, "little"),
        (profkit_jitdump::Endian::Big, "big"),
    ] {
        let bytes = handmade::all_records(endian);
        let dump = JitDump::parse(&bytes).unwrap();
        let s = summary(&dump);
        assert_eq!(s.format, "jitdump");
        assert_eq!(s.kind, format!("jitdump version 1, {name}-endian"));
        assert_eq!(s.records, 10);
        let kinds: Vec<(&str, u64)> = s.kinds.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        assert_eq!(kinds.len(), 8, "every known kind, zero counts included");
        assert_eq!(kinds[0].0, "JIT_CODE_LOAD");
        for (k, n) in [
            ("JIT_CODE_MOVE", 1),
            ("JIT_CODE_CLOSE", 1),
            ("SAMPLY_JIT_CODE_DEBUG_INFO2", 1),
            ("SAMPLY_EMBEDDED_SOURCE_FILE", 1),
            ("SAMPLY_JIT_TIER", 2),
        ] {
            assert!(kinds.contains(&(k, n)), "{k}: {kinds:?}");
        }
        assert_eq!(kinds.iter().map(|k| k.1).sum::<u64>(), s.records);
        let names: Vec<&str> = s.header.iter().map(|h| h.0).collect();
        assert_eq!(
            names,
            [
                "version",
                "total_size",
                "elf_mach",
                "elf_mach_name",
                "pad1",
                "pid",
                "timestamp",
                "flags"
            ]
        );
        assert!(!s.threads.is_empty());
        assert!(s.threads.iter().all(|t| t.pid.is_some() && t.records > 0));
        let t = s.time.unwrap();
        assert_eq!(t.duration_ns, t.last - t.first);
        assert_eq!(s.problems, 0);
        assert!(s.truncation.is_none());
        assert!(s.detail("stopped_at").is_none());
    }
}

#[test]
fn node_counts_reuse_and_code_bytes() {
    let bytes = fixture("node-perf-prof.dump.gz");
    let s = summary(&JitDump::parse(&bytes).unwrap());
    assert_eq!(s.kinds[0], ("JIT_CODE_LOAD".to_string(), 2210));
    assert_eq!(s.detail("debug_entries"), Some(&Value::U64(506)));
    assert_eq!(
        s.detail("pids")
            .map(Value::to_text)
            .unwrap()
            .split(", ")
            .count(),
        1
    );
    assert!(matches!(s.header[4], ("pad1", Value::Hex(0xdead_beef))));
    let out = text(&s);
    assert!(out.contains("JIT_CODE_LOAD"), "{out}");
    assert!(out.contains("pad1 0xdeadbeef"), "{out}");
    assert!(out.contains("code bytes stored:"), "{out}");
}

#[test]
fn truncation_and_the_corrupt_record_that_stops_the_scan() {
    let bytes = fixture("handmade/truncated.dump");
    let s = summary(&JitDump::parse(&bytes).unwrap());
    let t = s.truncation.as_ref().unwrap();
    assert_eq!((t.offset, t.record), (192, Some(2)));
    assert!(t.reason.contains("only 108 bytes remain"), "{t}");

    let bytes = fixture("handmade/record-size-8.dump");
    let s = summary(&JitDump::parse(&bytes).unwrap());
    assert_eq!(s.records, 1);
    assert_eq!(s.problems, 1);
    let stop =
        "record #1 at offset 0x67: JIT_CODE_LOAD total_size 8 is below the 16-byte record header";
    assert_eq!(s.first_problem.as_deref(), Some(stop));
    assert_eq!(s.detail("stopped_at"), Some(&Value::Str(stop.to_string())));
    assert!(s.truncation.is_none());
}

#[test]
fn perf_map_summary() {
    let text_map = fixture("wasmtime-perfmap.map");
    let s = perfmap::summary(&text_map);
    assert_eq!(s.format, "perf-map");
    assert_eq!(s.records, 10);
    assert_eq!(s.problems, 0);
    assert_eq!(
        s.detail("address_range"),
        Some(&Value::List(vec![
            Value::Hex(0x7f16_7e7c_0000),
            Value::Hex(0x7f16_7e7c_0506 + 0x71)
        ]))
    );
    let s = perfmap::summary(b"1000 10 a\nnot a line\n1000 20 b\n");
    assert_eq!(s.records, 2);
    assert_eq!(s.problems, 1);
    assert_eq!(s.detail("reused_addresses"), Some(&Value::U64(1)));
    assert!(s.first_problem.unwrap().starts_with("line 2 "));
}
