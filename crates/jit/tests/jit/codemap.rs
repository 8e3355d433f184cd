//! The code map on real and hand-made jitdumps: address@time → function, inline frames,
//! file:line, with V8's DEBUG_INFO bias removed and its corrupt records recovered.

use std::path::PathBuf;

use profkit_jit::CodeMap;
use profkit_jitdump::JitDump;

fn jitdump(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/jitdump")
        .join(name);
    std::fs::read(p).unwrap()
}

#[test]
fn node_fib_lines_come_from_the_recovered_debug_info() {
    let data = jitdump("node-perf-prof-only-functions.dump");
    let map = CodeMap::from_jitdump(&JitDump::parse(&data).unwrap());
    // Node 20 biases DEBUG_INFO addresses by the 0x40-byte Code header.
    assert_eq!(map.debug_bias, 0x40);
    assert!(map.problems.is_empty(), "{:?}", map.problems);
    let fib = map
        .regions()
        .iter()
        .find(|r| r.name.starts_with("JS:*fib "))
        .expect("the optimized fib");
    let debug = fib.debug.as_ref().expect("fib has a line table");
    assert_eq!(debug.source, "DEBUG_INFO (recovered)");
    // Every address of fib's code maps into fib's body (busy.js lines 7-9), in the script
    // whose full path the name gives.
    for off in (0..fib.size).step_by(8) {
        let s = map.lookup(fib.start + off, Some(fib.load_time)).unwrap();
        assert_eq!(s.region.start, fib.start);
        let f = s.frames.last().unwrap();
        assert_eq!(f.function, fib.name);
        if f.line != 0 {
            assert!((7..=9).contains(&f.line), "{off:#x}: line {}", f.line);
            assert_eq!(
                f.file.as_deref(),
                Some("/tmp/profkit-fixtures/node/busy.js")
            );
        }
    }
    // The recursive call `fib(n - 1)` starts at line 8, column 22 (V8's 1-based column).
    let calls: Vec<_> = debug.rows.iter().filter(|r| r.line == 8).collect();
    assert!(calls.iter().any(|r| r.column == 22), "{calls:?}");
    // Before the load, nothing was there.
    assert!(map.lookup(fib.start, Some(fib.load_time - 1)).is_none());
}

#[test]
fn inline_frames_moves_and_close() {
    let data = jitdump("handmade/all-records-le.dump");
    let map = CodeMap::from_jitdump(&JitDump::parse(&data).unwrap());
    // +0x1a lies in inl_b (inlined into inl_a at lib.js:5:9, itself inlined into outer at
    // app.js:12:5).
    let s = map.lookup(0x7000_101a, None).unwrap();
    let frames: Vec<_> = s
        .frames
        .iter()
        .map(|f| {
            (
                f.function.as_str(),
                f.file.as_deref(),
                f.line,
                f.column,
                f.inlined,
            )
        })
        .collect();
    assert_eq!(
        frames,
        vec![
            ("inl_b", Some("lib.js"), 31, 6, true),
            ("inl_a", Some("lib.js"), 5, 9, true),
            ("JS:*outer app.js:10:0", Some("app.js"), 12, 5, false),
        ]
    );
    // The helper moved from 0x70002000 to 0x70003000 at 1000000030; CLOSE at 1000000040.
    let before = map.lookup(0x7000_2004, Some(1_000_000_025)).unwrap();
    assert_eq!(before.region.name, "Baseline: helper");
    assert_eq!(before.region.end_reason, Some("moved"));
    assert!(map.lookup(0x7000_2004, Some(1_000_000_035)).is_none());
    let after = map.lookup(0x7000_3004, Some(1_000_000_035)).unwrap();
    assert_eq!(after.offset, 4);
    assert!(map.lookup(0x7000_3004, Some(1_000_000_045)).is_none());
    // Without a time, the last code at the address answers even after CLOSE.
    assert!(map.lookup(0x7000_3004, None).is_some());
}

#[test]
fn address_reuse_ends_the_old_region() {
    use profkit_jitdump::{CodeLoadData, HeaderOptions, JitDumpWriter};
    let mut w = JitDumpWriter::new(Vec::new(), &HeaderOptions::default()).unwrap();
    let code = [0x90u8; 32];
    let load = |name: &'static str, index, ts| CodeLoadData {
        timestamp: ts,
        tid: 1,
        ..CodeLoadData::new(index, 0x1000, &code, name)
    };
    w.write_code_load(&load("first", 1, 10)).unwrap();
    w.write_code_load(&load("second", 2, 20)).unwrap();
    let data = w.into_inner();
    let map = CodeMap::from_jitdump(&JitDump::parse(&data).unwrap());
    assert_eq!(map.lookup(0x1010, Some(15)).unwrap().region.name, "first");
    assert_eq!(map.lookup(0x1010, Some(25)).unwrap().region.name, "second");
    assert_eq!(map.lookup(0x1010, None).unwrap().region.name, "second");
    assert_eq!(map.regions()[0].end_reason, Some("address reused"));
    assert!(map.lookup(0x2000, None).is_none());
}

#[test]
fn offsets_with_one_location_key_have_the_same_frames() {
    // node: line tables without inline calls (the key is the row); the hand-made dump: a
    // region with inline calls (the key is the offset).
    for name in [
        "node-perf-prof-only-functions.dump",
        "handmade/all-records-le.dump",
    ] {
        let data = jitdump(name);
        let map = CodeMap::from_jitdump(&JitDump::parse(&data).unwrap());
        let mut shared = 0;
        for (index, r) in map.regions().iter().enumerate() {
            let mut seen: std::collections::HashMap<u64, Vec<_>> = Default::default();
            for off in 0..r.size.min(4096) {
                let key = map.location_key(index, off);
                let frames: Vec<_> = map
                    .frames_at(index, off)
                    .into_iter()
                    .map(|f| (f.function, f.file, f.line, f.column, f.inlined))
                    .collect();
                match seen.get(&key) {
                    Some(first) => {
                        assert_eq!(first, &frames, "{name}: {} +{off:#x}", r.name);
                        shared += 1;
                    }
                    None => {
                        seen.insert(key, frames);
                    }
                }
            }
            // Distinct rows of a table without inline calls give distinct keys.
            if let Some(t) = r.debug.as_ref().filter(|t| t.inlines.is_empty()) {
                let keys: std::collections::HashSet<u64> = t
                    .rows
                    .iter()
                    .map(|row| map.location_key(index, row.offset))
                    .collect();
                let offsets: std::collections::HashSet<u64> =
                    t.rows.iter().map(|row| row.offset).collect();
                assert_eq!(keys.len(), offsets.len(), "{name}: {}", r.name);
            }
        }
        assert!(shared > 0, "{name}");
    }
}
