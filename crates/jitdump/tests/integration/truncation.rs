//! Cutting real files at every offset: never a panic, always a prefix plus a truncation.

use profkit_jitdump::{validate, FollowReader, JitDump, Scan};

use crate::{fixture, handmade};

/// Offsets where records end in `bytes` (the header's end first).
fn boundaries(bytes: &[u8]) -> Vec<usize> {
    let dump = JitDump::parse(bytes).unwrap();
    let mut ends = vec![dump.header().total_size as usize];
    for r in dump.records() {
        let r = r.unwrap();
        ends.push(r.offset as usize + r.total_size());
    }
    ends
}

fn cut_everywhere(bytes: &[u8]) {
    let ends = boundaries(bytes);
    let header_len = ends[0];
    for cut in 0..=bytes.len() {
        let part = &bytes[..cut];
        let report = validate(part);
        let Ok(dump) = JitDump::parse(part) else {
            assert!(
                cut < header_len,
                "header must parse once complete (cut {cut})"
            );
            assert!(report.findings.iter().any(|f| f.code == "header-invalid"));
            continue;
        };
        let mut records = dump.records();
        let mut complete = 0;
        for r in &mut records {
            r.unwrap();
            complete += 1;
        }
        let expected = ends.iter().filter(|&&e| e <= cut).count() - 1;
        assert_eq!(complete, expected, "cut at {cut}");
        let at_boundary = ends.contains(&cut);
        match records.truncation() {
            None => assert!(at_boundary, "cut at {cut} must be reported"),
            Some(t) => {
                assert!(!at_boundary, "cut at {cut} is a boundary");
                assert_eq!(
                    t.offset as usize, ends[expected],
                    "truncation offset at cut {cut}"
                );
                assert_eq!(t.record, Some(expected as u64));
                assert!(report
                    .findings
                    .iter()
                    .any(|f| f.code == "truncated" && f.offset == t.offset));
            }
        }
        let s = Scan::of(&dump);
        assert_eq!(s.total_records() as usize, expected);
    }
}

#[test]
fn node_dump_cut_at_every_offset() {
    cut_everywhere(&fixture("node-perf-prof-only-functions.dump"));
}

#[test]
fn wasmtime_dump_cut_at_every_offset() {
    cut_everywhere(&fixture("wasmtime-jitdump.dump"));
}

#[test]
fn handmade_files_cut_at_every_offset() {
    for endian in [
        profkit_jitdump::Endian::Little,
        profkit_jitdump::Endian::Big,
    ] {
        cut_everywhere(&handmade::all_records(endian));
    }
}

#[test]
fn every_parse_of_a_cut_record_fails_cleanly() {
    // Cutting a record and fixing its total_size to the cut makes its body short: parse()
    // must return an error (or a shorter valid record), never panic.
    let bytes = handmade::all_records(profkit_jitdump::Endian::Little);
    let dump = JitDump::parse(&bytes).unwrap();
    for r in dump.records() {
        let r = r.unwrap();
        for len in 0..r.body.len() {
            let mut raw = r;
            raw.body = &r.body[..len];
            let _ = raw.parse();
        }
    }
}

#[test]
fn follow_reader_sees_the_same_records_chunk_by_chunk() {
    let bytes = fixture("node-perf-prof-only-functions.dump");
    let expected = boundaries(&bytes).len() - 1;
    for chunk in [1usize, 7, 16, 100, 4096] {
        let src = crate::follow::Growing::default();
        let mut reader = FollowReader::new(src.clone());
        let mut seen = 0;
        for piece in bytes.chunks(chunk) {
            src.append(piece);
            reader.fill().unwrap();
            while let Some(r) = reader.next_record().unwrap() {
                assert_eq!(r.index, seen);
                seen += 1;
            }
        }
        assert_eq!(seen, expected, "chunk {chunk}");
        assert_eq!(reader.pending_bytes(), 0);
    }
}
