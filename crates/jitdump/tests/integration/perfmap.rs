//! perf map reading, writing and validation.

use profkit_jitdump::perfmap::{entries, parse_line, validate, write_entry};

use crate::fixture;

#[test]
fn producers_layouts_parse() {
    // V8 / CPython: bare hex; JDK: 0x and zero-padded, names with spaces; wasmtime: 0x on the
    // address only.
    assert_eq!(
        parse_line(b"18c4000 300 Builtin:Foo").unwrap(),
        (0x18c4000, 0x300, &b"Builtin:Foo"[..])
    );
    assert_eq!(
        parse_line(b"0x00007f3c8cec7620 0x00000000000000d8 long Busy.f(long)").unwrap(),
        (0x7f3c_8cec_7620, 0xd8, &b"long Busy.f(long)"[..])
    );
    assert_eq!(
        parse_line(b"0x7f00 8b fib").unwrap(),
        (0x7f00, 0x8b, &b"fib"[..])
    );
    assert_eq!(parse_line(b"10 20 ").unwrap().2, b"");
}

#[test]
fn malformed_lines_have_line_numbers() {
    let text = b"1000 10 ok\n\nzzz 10 bad\n2000 20\n3000  30 two spaces\n4000 40 fine\r\n";
    let all: Vec<_> = entries(text).collect();
    assert_eq!(all.len(), 5);
    assert_eq!(all[0].as_ref().unwrap().name, b"ok");
    assert_eq!(all[1].as_ref().unwrap_err().line, 3);
    assert!(all[1]
        .as_ref()
        .unwrap_err()
        .message
        .contains("hexadecimal start"));
    assert_eq!(all[2].as_ref().unwrap_err().line, 4);
    assert_eq!(all[3].as_ref().unwrap_err().line, 5);
    assert_eq!(all[4].as_ref().unwrap().name, b"fine");
    assert_eq!(all[4].as_ref().unwrap().line, 6);
    let report = validate(text);
    assert_eq!(report.errors().count(), 3);
}

#[test]
fn write_then_read() {
    let mut out = Vec::new();
    write_entry(&mut out, 0x7f00_0000_1000, 0x40, b"JS:*fib /tmp/a.js:1:1").unwrap();
    write_entry(&mut out, 0x10, 0, b"zero").unwrap();
    assert!(write_entry(&mut out, 1, 1, b"a\nb").is_err());
    assert_eq!(out, b"7f0000001000 40 JS:*fib /tmp/a.js:1:1\n10 0 zero\n");
    let e: Vec<_> = entries(&out).map(Result::unwrap).collect();
    assert_eq!(
        (e[0].start, e[0].size, e[0].name),
        (0x7f00_0000_1000, 0x40, &b"JS:*fib /tmp/a.js:1:1"[..])
    );
}

#[test]
fn real_perf_maps_are_clean() {
    for (name, lines) in [
        ("node-perf-basic-prof.map", 2504),
        ("wasmtime-perfmap.map", 10),
    ] {
        let text = fixture(name);
        let n = entries(&text).map(Result::unwrap).count();
        assert_eq!(n, lines, "{name}");
        assert!(!validate(&text).has_errors());
    }
}

mod map {
    use profkit_jitdump::convert::{
        jitdump_to_perf_map, perf_map_to_jitdump, perf_map_to_perf_map,
    };
    use profkit_jitdump::perfmap::{entries, map_of, MapBuilder};
    use profkit_jitdump::write::{HeaderOptions, JitDumpWriter};
    use profkit_jitdump::{CodeMove, Endian, JitDump};
    use proptest::prelude::*;

    use crate::{fixture, handmade};

    fn lines(map: &MapBuilder) -> Vec<(u64, u64, Vec<u8>)> {
        map.iter()
            .map(|(s, e)| (s, e.size, e.name.clone()))
            .collect()
    }

    #[test]
    fn last_writer_wins_per_address_range() {
        let mut m = MapBuilder::new();
        m.load(0x1000, 0x100, b"a");
        m.load(0x1100, 0x100, b"b");
        m.load(0x1200, 0, b"zero");
        m.load(0x2000, 0x10, b"c");
        // Overlaps the end of `a` and the start of `b`: both were reused.
        m.load(0x10f0, 0x20, b"new\nline");
        assert_eq!(
            lines(&m),
            [
                (0x10f0, 0x20, b"new line".to_vec()),
                (0x1200, 0, b"zero".to_vec()),
                (0x2000, 0x10, b"c".to_vec())
            ]
        );
        // A zero-size entry occupies its address.
        m.load(0x11f0, 0x11, b"d");
        assert!(m.covering(0x1200).is_some_and(|(s, _)| s == 0x11f0));
        // Moves: by the old entry's name, or the given one; nothing names an unknown move.
        assert!(m.move_code(0x2000, 0x3000, 0x10, None));
        assert!(m.move_code(0x10f0, 0x4000, 0x20, Some(b"renamed")));
        assert!(!m.move_code(0x9999, 0x5000, 0x10, None));
        assert_eq!(
            lines(&m),
            [
                (0x11f0, 0x11, b"d".to_vec()),
                (0x3000, 0x10, b"c".to_vec()),
                (0x4000, 0x20, b"renamed".to_vec())
            ]
        );
        // Function-table entries fill gaps only, cut at the next entry.
        assert!(!m.add_if_free(0x3008, 4, b"covered"));
        assert!(m.add_if_free(0x2ff0, 0x100, b"gap"));
        assert_eq!(m.covering(0x2ff0).map(|(_, e)| e.size), Some(0x10));
        let mut out = Vec::new();
        assert_eq!(m.write(&mut out).unwrap(), 4);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "11f0 11 d\n2ff0 10 gap\n3000 10 c\n4000 20 renamed\n"
        );
    }

    fn via_jitdump(text: &[u8]) -> Vec<u8> {
        let mut w = JitDumpWriter::new(
            Vec::new(),
            &HeaderOptions {
                pid: 1,
                timestamp: 0,
                ..HeaderOptions::default()
            },
        )
        .unwrap();
        perf_map_to_jitdump(text, 1, &mut w).unwrap();
        let bytes = w.into_inner();
        let mut out = Vec::new();
        jitdump_to_perf_map(&JitDump::parse(&bytes).unwrap(), &mut out).unwrap();
        out
    }

    fn direct(text: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        perf_map_to_perf_map(text, &mut out).unwrap();
        out
    }

    /// jitdump → perf map is a fixed point of perf map → jitdump → perf map.
    fn check_jitdump(bytes: &[u8]) -> Vec<u8> {
        let mut map = Vec::new();
        jitdump_to_perf_map(&JitDump::parse(bytes).unwrap(), &mut map).unwrap();
        assert_eq!(via_jitdump(&map), map);
        assert_eq!(direct(&map), map);
        map
    }

    #[test]
    fn jitdump_and_perf_map_paths_agree_on_real_files() {
        for name in [
            "wasmtime-jitdump.dump",
            "node-perf-prof.dump.gz",
            "node-perf-prof-only-functions.dump",
        ] {
            let map = check_jitdump(&fixture(name));
            let n = entries(&map).count();
            assert!(n > 0, "{name}");
        }
        for name in ["node-perf-basic-prof.map", "wasmtime-perfmap.map"] {
            let text = fixture(name);
            assert_eq!(via_jitdump(&text), direct(&text), "{name}");
        }
        // The wasmtime map is already sorted and free of overlaps: normalising only drops
        // the 0x.
        let text = fixture("wasmtime-perfmap.map");
        let plain = String::from_utf8(text.clone()).unwrap().replace("0x", "");
        assert_eq!(String::from_utf8(direct(&text)).unwrap(), plain);
    }

    #[test]
    fn moves_in_a_jitdump_keep_their_names() {
        let bytes = handmade::all_records(Endian::Little);
        let dump = JitDump::parse(&bytes).unwrap();
        let moved: Vec<CodeMove> = dump
            .records()
            .filter_map(|r| match r.ok()?.parse().ok()? {
                profkit_jitdump::Record::CodeMove(m) => Some(m),
                _ => None,
            })
            .collect();
        assert_eq!(moved.len(), 1);
        let map = check_jitdump(&bytes);
        let (m, bad) = map_of(&map);
        assert!(bad.is_empty());
        assert!(m.covering(moved[0].old_code_addr).is_none());
        assert!(m.covering(moved[0].new_code_addr).is_some());
    }

    /// The meaning, written the slow way: every load drops all earlier entries it overlaps.
    fn model(loads: &[(u64, u64, u8)]) -> Vec<(u64, u64, Vec<u8>)> {
        let mut live: Vec<(u64, u64, Vec<u8>)> = Vec::new();
        for &(s, size, n) in loads {
            let e = s + size.max(1);
            live.retain(|&(s2, size2, _)| s2 + size2.max(1) <= s || e <= s2);
            live.push((s, size, vec![b'a' + n]));
        }
        live.sort();
        live
    }

    proptest! {
        #[test]
        fn loads_match_the_model(loads in prop::collection::vec((0u64..64, 0u64..12, 0u8..26), 0..40)) {
            let mut m = MapBuilder::new();
            for &(s, size, n) in &loads {
                m.load(s, size, &[b'a' + n]);
            }
            prop_assert_eq!(lines(&m), model(&loads));
            let mut text = Vec::new();
            for &(s, size, n) in &loads {
                profkit_jitdump::perfmap::write_entry(&mut text, s, size, &[b'a' + n]).unwrap();
            }
            let map = direct(&text);
            prop_assert_eq!(via_jitdump(&text), map.clone());
            prop_assert_eq!(direct(&map), map);
        }
    }
}
