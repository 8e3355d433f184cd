//! A C program linked to the staticlib: 8 threads × 1000 events of every kind.

use std::collections::HashMap;
use std::process::Command;

use profkit_jitdump::read::{FunctionRecord, InlineCallRecord, LineRecord, Range};

use crate::support::{c_host, read_dump, Load};

fn pattern(t: i64, i: i64, n: usize) -> Vec<u8> {
    (0..n).map(|j| (t * 31 + i * 7 + j as i64) as u8).collect()
}

#[test]
fn eight_threads_every_event_kind() {
    let dir = tempfile::tempdir().unwrap();
    let exe = c_host("threads", dir.path());
    run_and_check(&exe, &dir, &[]);
}

/// Runs the threads program and checks its dump against its manifest.
pub fn run_and_check(exe: &std::path::Path, dir: &tempfile::TempDir, env: &[(&str, &str)]) {
    let out = Command::new(exe)
        .envs(env.iter().copied())
        .env("PROFKIT_JITDUMP_DIR", dir.path())
        .env("PROFKIT_JIT_INLINE_DELAY_MS", "600000")
        .env("PROFKIT_PERFMAP", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid = out_pid(dir);
    let loads = read_dump(&dir.path().join(format!("jit-{pid}.dump")));
    let manifest = String::from_utf8(out.stdout).unwrap();
    // Expected LOADs per thread, in order.
    let mut expected: HashMap<u32, Vec<Vec<&str>>> = HashMap::new();
    for line in manifest.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        expected.entry(f[1].parse().unwrap()).or_default().push(f);
    }
    let mut got: HashMap<u32, Vec<&Load>> = HashMap::new();
    for l in &loads {
        got.entry(l.tid).or_default().push(l);
    }
    assert_eq!(expected.len(), 9, "8 threads + main");
    let total: usize = expected.values().map(Vec::len).sum();
    assert_eq!(loads.len(), total);
    assert_eq!(total, 8 * 625 + 1);
    let mut indexes: Vec<u64> = loads.iter().map(|l| l.code_index).collect();
    indexes.sort_unstable();
    indexes.dedup();
    assert_eq!(indexes.len(), loads.len(), "code_index unique");
    for (tid, exp) in &expected {
        let g = &got[tid];
        assert_eq!(g.len(), exp.len(), "tid {tid}");
        for (e, l) in exp.iter().zip(g) {
            let addr = u64::from_str_radix(e[2].trim_start_matches("0x"), 16).unwrap();
            let size: usize = e[3].parse().unwrap();
            let (t, i): (i64, i64) = (e[4].parse().unwrap(), e[5].parse().unwrap());
            let kind = e[6];
            assert_eq!(l.code_addr, addr, "{e:?}");
            assert_eq!(l.name, e[7], "{e:?}");
            assert_eq!(l.code.len(), size, "{e:?}");
            if kind != "9" {
                assert_eq!(l.code, pattern(t, i, size), "{e:?}");
            }
            let file = format!("file_t{t}.c");
            match kind {
                "0" => assert_eq!(
                    l.lines,
                    vec![
                        (addr, 10, file.clone()),
                        (addr + 4, 11, file.clone()),
                        (addr + 12, 12, file.clone())
                    ]
                ),
                "2" => assert_eq!(
                    l.lines,
                    vec![(addr, 20, file.clone()), (addr + 8, 21, file.clone())]
                ),
                "3" => check_inline_tree(l, addr, e[8]),
                _ => assert!(l.lines.is_empty() && l.di2.is_none(), "{e:?}"),
            }
            if kind != "3" {
                assert!(l.di2.is_none());
            }
        }
    }
}

fn check_inline_tree(l: &Load, addr: u64, i3_name: &str) {
    let p = "p.c".to_string();
    assert_eq!(
        l.lines,
        vec![
            (addr, 100, p.clone()),
            (addr + 16, 101, p.clone()),
            (addr + 40, 102, p)
        ]
    );
    let d = l.di2.as_ref().expect("DEBUG_INFO2");
    assert_eq!(d.files, ["p.c", "inl1.c", "inl2.c", "<unknown>"]);
    assert_eq!(d.function_names, [l.name.as_str(), "inl1", "inl2", i3_name]);
    let f = |n, file, line| FunctionRecord {
        function_name_index: n,
        file_index: file,
        start_line: line,
        start_column: 0,
        flags: 0,
    };
    assert_eq!(
        d.functions,
        [f(0, 0, 100), f(1, 1, 200), f(2, 2, 300), f(3, 3, 0)]
    );
    let c = |depth, function_index, call_line_number| InlineCallRecord {
        depth,
        range_count: 1,
        function_index,
        call_line_number,
        call_column_number: 0,
    };
    assert_eq!(d.inline_calls, [c(0, 1, 100), c(1, 2, 201), c(0, 3, 102)]);
    let r = |start_offset, size| Range { start_offset, size };
    assert_eq!(d.ranges, [r(8, 32), r(16, 8), r(48, 8)]);
    let ln = |code_offset, file_index, line_number| LineRecord {
        code_offset,
        file_index,
        line_number,
        column_number: 0,
    };
    assert_eq!(
        d.lines,
        [
            ln(0, 0, 100),
            ln(8, 1, 200),
            ln(16, 2, 300),
            ln(24, 1, 201),
            ln(40, 0, 102)
        ]
    );
}

pub fn out_pid(dir: &tempfile::TempDir) -> u32 {
    let mut pids = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            n.strip_prefix("jit-")?.strip_suffix(".dump")?.parse().ok()
        })
        .collect::<Vec<u32>>();
    assert_eq!(pids.len(), 1, "exactly one dump");
    pids.pop().unwrap()
}
