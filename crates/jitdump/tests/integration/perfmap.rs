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
