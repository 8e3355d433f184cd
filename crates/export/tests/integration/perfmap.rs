//! perf map: code loads, moves and address reuse; function-table addresses (XRay) with sizes
//! from the next function; one file per process; every line parsed back by profkit-jitdump's
//! perf map reader.

use std::collections::BTreeMap;

use profkit_export::perfmap::PerfMapSink;
use profkit_export::{Format, Options, Output};
use profkit_jitdump::perfmap::entries;
use profkit_model::events::{CodeEvent, CodeRegion, EventSink, ProcessInfo, TraceInfo};
use profkit_model::{Clock, FuncId, FuncInfo, FunctionTable};

use crate::synthetic::{self, scratch};

/// Parses a perf map, checking every line is `START SIZE name` in bare lowercase hex.
fn parse(text: &str) -> BTreeMap<u64, (u64, String)> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ' ');
        let (a, s) = (parts.next().unwrap(), parts.next().unwrap());
        for h in [a, s] {
            assert!(
                !h.is_empty()
                    && h.bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "bare lowercase hex expected: {line:?}"
            );
        }
    }
    for e in entries(text.as_bytes()) {
        let e = e.unwrap();
        out.insert(
            e.start,
            (e.size, String::from_utf8(e.name.to_vec()).unwrap()),
        );
    }
    out
}

fn region(
    pid: u32,
    time: u64,
    address: u64,
    size: u64,
    name: &str,
    event: CodeEvent,
) -> CodeRegion<'_> {
    CodeRegion {
        thread: None,
        pid,
        time,
        address,
        size,
        name,
        event,
        code_index: None,
        tier: None,
    }
}

fn begin(sink: &mut dyn EventSink, functions: &FunctionTable) {
    sink.begin(&TraceInfo {
        format: "jitdump",
        functions,
        clock: Clock::default(),
        origin_ns: 0,
        name: "t",
        samples: None,
        origin_unix_ns: None,
    })
    .unwrap();
}

#[test]
fn loads_moves_and_reuse() {
    let path = scratch("perfmap-moves/perf-42.map");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut sink = PerfMapSink::new(Output::path(path.clone()));
    begin(&mut sink, &FunctionTable::new());
    sink.process(&ProcessInfo {
        pid: 42,
        name: "node",
    })
    .unwrap();
    let evs = [
        region(
            42,
            1,
            0x7f00_0000_1000,
            0x40,
            "JS:*fib x.js:1:1",
            CodeEvent::Load,
        ),
        region(
            42,
            2,
            0x7f00_0000_2000,
            0x80,
            "Builtin:ArrayMap",
            CodeEvent::Load,
        ),
        region(
            42,
            3,
            0x7f00_0000_3000,
            0x40,
            "JS:*fib x.js:1:1",
            CodeEvent::Move {
                old_address: 0x7f00_0000_1000,
            },
        ),
        region(
            42,
            4,
            0x7f00_0000_2000,
            0x20,
            "JS:~reused\nname",
            CodeEvent::Load,
        ),
    ];
    for e in &evs {
        sink.code(e).unwrap();
    }
    sink.finish().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let m = parse(&text);
    assert_eq!(m.len(), 2, "{text}");
    assert_eq!(m[&0x7f00_0000_3000], (0x40, "JS:*fib x.js:1:1".to_string()));
    assert_eq!(m[&0x7f00_0000_2000], (0x20, "JS:~reused name".to_string()));
    assert!(
        text.starts_with("7f0000002000 20 JS:~reused name\n"),
        "{text}"
    );
}

#[test]
fn a_load_evicts_every_entry_it_overlaps() {
    let path = scratch("perfmap-overlap/perf-7.map");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut sink = PerfMapSink::new(Output::path(path.clone()));
    begin(&mut sink, &FunctionTable::new());
    for e in [
        region(7, 1, 0x1000, 0x100, "a", CodeEvent::Load),
        region(7, 2, 0x1100, 0x100, "b", CodeEvent::Load),
        region(7, 3, 0x1300, 0x10, "c", CodeEvent::Load),
        // Reuses the end of `a` and the start of `b` (a perf map has no times: the last
        // writer wins per address range).
        region(7, 4, 0x10f0, 0x20, "d", CodeEvent::Load),
        // A move whose driver did not know the name keeps the old entry's.
        region(
            7,
            5,
            0x2000,
            0x10,
            "",
            CodeEvent::Move {
                old_address: 0x1300,
            },
        ),
    ] {
        sink.code(&e).unwrap();
    }
    sink.finish().unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "10f0 20 d\n2000 10 c\n"
    );
}

#[test]
fn function_table_addresses_get_sizes_from_the_next_function() {
    let mut t = FunctionTable::new();
    for (id, name, addr) in [
        (1, Some("main"), Some(0x401000)),
        (2, Some("worker"), Some(0x401100)),
        (3, None, Some(0x402000)),
        (4, Some("no address"), None),
    ] {
        t.insert(
            FuncId(id),
            FuncInfo {
                name: name.map(str::to_string),
                address: addr,
                ..FuncInfo::default()
            },
        );
    }
    let mut out = Vec::new();
    {
        let path = scratch("perfmap-xray.map");
        let mut sink = profkit_export::open(
            Format::PerfMap,
            &Output::path(path.clone()),
            &Options::default(),
        )
        .unwrap();
        begin(&mut *sink, &t);
        sink.process(&ProcessInfo {
            pid: 7,
            name: "demo",
        })
        .unwrap();
        sink.finish().unwrap();
        drop(sink);
        out.extend(std::fs::read(&path).unwrap());
    }
    let m = parse(std::str::from_utf8(&out).unwrap());
    assert_eq!(
        m.into_iter().collect::<Vec<_>>(),
        vec![
            (0x401000, (0x100, "main".to_string())),
            (0x401100, (0xf00, "worker".to_string())),
            (0x402000, (1, "#3".to_string())),
        ]
    );
}

#[test]
fn one_file_per_process() {
    let dir = scratch("perfmap-synthetic");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.map");
    synthetic::run(PerfMapSink::new(Output::path(path.clone())));
    // The synthetic trace loads "JIT fn A" at 0x1000 in pid 100 and moves one to 0x2000 in
    // pid 200; the first declared process (100) goes to the output.
    let first = parse(&std::fs::read_to_string(&path).unwrap());
    assert_eq!(first.get(&0x1000), Some(&(0x40, "JIT fn A".to_string())));
    let other = parse(&std::fs::read_to_string(dir.join("perf-200.map")).unwrap());
    assert_eq!(other.get(&0x2000), Some(&(0x40, "JIT fn A".to_string())));
    assert_eq!(other.len(), 1);
}
