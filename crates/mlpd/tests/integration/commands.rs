//! What `profkit validate`, `info` and `dump` show of a Mono file, computed by the crate
//! (`validate`, `summary`, `dump`): on every fixture, against the code table in docs/mono.md,
//! and on hostile input (never a panic).

use std::collections::BTreeMap;

use profkit_common::Severity;
use profkit_mlpd::validate::{codes, validate, validate_bytes};
use profkit_mlpd::{dump, summary, File};

use super::{fixtures, load, mlpd_files};

#[test]
fn real_fixtures_validate_without_errors() {
    for path in mlpd_files() {
        let data = load(&path);
        let v = validate(&File::parse(&data).expect("header"));
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(!v.has_errors(), "{name}: {:?}", v.errors().next());
        let mut by_code: BTreeMap<&str, usize> = BTreeMap::new();
        for f in &v.findings {
            *by_code.entry(f.code).or_default() += 1;
            // every finding about an event has its record; offsets are inside the file
            assert!(f.offset < data.len() as u64, "{name}: {f}");
        }
        // every Mono 6.8 file has wrapped time deltas
        assert!(by_code.contains_key(codes::MONO_TIME_WRAP), "{name}");
        if name.contains("calls") || name.contains("everything") || name == "hello_zip.mlpd" {
            assert_eq!(by_code.get(codes::UNMATCHED_LEAVE), Some(&1), "{name}");
        }
        if name.contains("alloc") || name.contains("everything") || name == "busy_zip.mlpd" {
            assert!(by_code.contains_key(codes::VTABLE_BEFORE_LOAD), "{name}");
        }
        assert_eq!(v.truncation, None);
    }
}

/// docs/mono.md lists every code with its severity.
#[test]
fn the_code_table_is_documented() {
    let doc = std::fs::read_to_string(fixtures().join("../../../docs/mono.md")).expect("docs");
    let common = profkit_common::finding::COMMON_CODES;
    for (code, sev, _) in codes::ALL.iter().chain(common.iter()) {
        let sev = match sev {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let row = format!("| `{code}` | {sev} |");
        assert!(doc.contains(&row), "docs/mono.md lacks {row}");
    }
}

#[test]
fn summaries_add_up() {
    for path in mlpd_files() {
        let data = load(&path);
        let f = File::parse(&data).expect("header");
        let s = summary::summary(&f);
        let events: u64 = f
            .buffers()
            .flatten()
            .map(|b| b.events().flatten().count() as u64)
            .sum();
        assert_eq!(s.records, events, "{}", path.display());
        assert_eq!(s.kinds.iter().map(|(_, n)| n).sum::<u64>(), events);
        assert_eq!(s.threads.iter().map(|t| t.records).sum::<u64>(), events);
        assert_eq!(s.problems, 0);
        assert!(s.time.is_some_and(|t| t.duration_ns > 0));
        if path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("busy")
        {
            assert!(
                s.threads
                    .iter()
                    .any(|t| t.name.as_deref() == Some("MainWorker")),
                "{}",
                path.display()
            );
        }
    }
}

#[test]
fn dump_has_a_line_per_buffer_and_event() {
    let data = load(&fixtures().join("hello_calls.mlpd"));
    let f = File::parse(&data).expect("header");
    let buffers = f.buffers().count();
    let events: usize = f.buffers().flatten().map(|b| b.events().count()).sum();
    for json in [false, true] {
        let mut out = Vec::new();
        let problems = if json {
            dump::write_ndjson(&f, &mut out)
        } else {
            dump::write_text(&f, &mut out)
        }
        .expect("write");
        assert!(problems.is_empty());
        let text = String::from_utf8(out).expect("utf8");
        assert_eq!(text.lines().count(), 1 + buffers + events);
    }
}

/// Flipped bytes, cuts, and the fuzz regressions: validate, summary and dump never panic, and
/// agree on the events and the cut.
#[test]
fn hostile_input_never_panics() {
    let data = load(&fixtures().join("hello_nodefaults.mlpd"));
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..600 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut d = data.clone();
        let pos = 32 + (seed as usize % (d.len() - 32));
        d[pos] = (seed >> 32) as u8;
        if i % 4 == 0 {
            d.truncate(pos + 1);
        }
        inputs.push(d);
    }
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions/mlpd_read");
    for entry in std::fs::read_dir(&dir).expect("fuzz/regressions/mlpd_read") {
        inputs.push(std::fs::read(entry.expect("entry").path()).expect("read"));
    }
    for d in inputs {
        let v = validate_bytes(&d);
        let Ok(f) = File::parse(&d) else {
            assert!(v.has_errors());
            continue;
        };
        let s = summary::summary(&f);
        assert_eq!(s.records, v.records);
        assert_eq!(s.truncation, v.truncation);
        let mut out = Vec::new();
        dump::write_text(&f, &mut out).expect("text");
        dump::write_ndjson(&f, &mut out).expect("ndjson");
    }
}
