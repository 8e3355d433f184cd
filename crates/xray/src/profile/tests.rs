use proptest::prelude::*;

use super::write::{PathRecord, ProfileWriter};
use super::*;

/// The real profile of tests/fixtures/xray (clang-22, `scripts/fixtures/xray-profiling.sh`).
fn fixture() -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/xray/profiling.xprof");
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Blocks (tid, records root first) and problems of `data`.
type Read = (Vec<(u64, Vec<PathRecord>)>, Vec<Error>, Option<Truncation>);

fn read_all(data: &[u8]) -> Read {
    let p = Profile::parse(data).unwrap();
    let mut blocks: Vec<(u64, Vec<PathRecord>)> = Vec::new();
    let mut problems = Vec::new();
    let mut it = p.entries();
    for e in it.by_ref() {
        match e {
            ProfileEntry::Block(b) => blocks.push((b.tid, Vec::new())),
            ProfileEntry::Record(r) => {
                let rec = PathRecord {
                    path: r.path.root_first().collect(),
                    call_count: r.call_count,
                    cumulative_time: r.cumulative_time,
                };
                blocks.last_mut().unwrap().1.push(rec);
            }
            ProfileEntry::Problem(e) => problems.push(e),
        }
    }
    (blocks, problems, it.truncation().cloned())
}

#[test]
fn real_file() {
    let data = fixture();
    let p = Profile::parse(&data).unwrap();
    assert_eq!(p.header.version, PROFILE_VERSION);
    assert_eq!(p.header.endian, Endian::Little);
    let (blocks, problems, cut) = read_all(&data);
    assert!(problems.is_empty() && cut.is_none());
    assert_eq!(blocks.len(), 4);
    // Function ids (instrumentation map of tests/fixtures/xray/profiling): 2 emit_run, 4
    // expand_run, 7 fib, 10 worker, 11 run.
    let calls = |id: u32| -> u64 {
        blocks
            .iter()
            .flat_map(|b| &b.1)
            .filter(|r| r.path.last() == Some(&id))
            .map(|r| r.call_count)
            .sum()
    };
    assert_eq!(calls(2), 4096);
    assert_eq!(calls(4), 4096);
    assert_eq!(calls(7), 1682);
    assert_eq!(calls(10), 4);
    assert_eq!(calls(11), 1);
    // The main thread's block is last: run > worker > ….
    assert_eq!(blocks[3].1[0].path, [11]);
    assert_eq!(blocks[3].1[1].path, [11, 10]);
    // The writer writes the same bytes back.
    let mut w = ProfileWriter::new(&p.header);
    for (tid, recs) in &blocks {
        w.block(*tid, recs).unwrap();
    }
    assert_eq!(w.finish(), data);
}

#[test]
fn every_cut_gives_a_prefix_and_says_where() {
    let data = fixture();
    let (full, _, _) = read_all(&data);
    let all: Vec<&PathRecord> = full.iter().flat_map(|b| &b.1).collect();
    // Where blocks start: a cut there leaves a shorter but complete file.
    let mut starts = Vec::new();
    for e in Profile::parse(&data).unwrap().entries() {
        if let ProfileEntry::Block(b) = e {
            starts.push(b.offset as usize);
        }
    }
    for len in 0..data.len() {
        let cut = &data[..len];
        let Ok(p) = Profile::parse(cut) else {
            assert!(len < PROFILE_HEADER_SIZE, "len {len}");
            continue;
        };
        let (blocks, problems, truncation) = read_all(cut);
        assert!(problems.is_empty(), "len {len}: {problems:?}");
        let got: Vec<&PathRecord> = blocks.iter().flat_map(|b| &b.1).collect();
        assert_eq!(got[..], all[..got.len()], "len {len}");
        if len == PROFILE_HEADER_SIZE || starts.contains(&len) {
            assert_eq!(truncation, None, "len {len}");
        } else {
            let t = truncation
                .as_ref()
                .unwrap_or_else(|| panic!("len {len}: no cut reported"));
            assert!(t.offset <= len as u64, "len {len}: {t}");
            assert_eq!(t.record, Some(got.len() as u64), "len {len}: {t}");
        }
        // The other walks agree.
        let v = verify::verify(&p);
        assert_eq!(v.truncation, truncation, "len {len}");
        let s = summary::summary(&p);
        assert_eq!(s.records, got.len() as u64);
        assert_eq!(s.truncation, truncation);
        let d = dump::dump(&p, false, &mut Vec::new()).unwrap();
        assert_eq!(d.truncation, truncation);
    }
}

#[test]
fn header_errors_name_what_was_expected() {
    let e = Profile::parse(&[0; 10]).unwrap_err();
    assert!(e.is_truncation());
    assert_eq!(
        e.to_string(),
        "offset 0x0: truncated profile file header: needs 32 bytes, 10 available"
    );
    let e = Profile::parse(&[0; 40]).unwrap_err().to_string();
    assert!(e.contains("expected the XRay profiling-mode magic"), "{e}");
    let mut h = ProfileHeader::default().to_bytes();
    h[8] = 0x25;
    let e = Profile::parse(&h).unwrap_err().to_string();
    assert!(e.contains("version 0x20180425"), "{e}");
    // The magic as a little-endian and as a big-endian number.
    assert!(ProfileHeader::is_profile(b"forpyarx"));
    assert!(ProfileHeader::is_profile(b"xrayprof"));
    assert!(!ProfileHeader::is_profile(b"xrayprog"));
    assert!(!ProfileHeader::is_profile(b"xray"));
}

#[test]
fn big_endian_files_read() {
    let header = ProfileHeader {
        endian: Endian::Big,
        pid: 9,
        timestamp_ns: 77,
        ..ProfileHeader::default()
    };
    let mut w = ProfileWriter::new(&header);
    let recs = [
        PathRecord::new(&[1], 1, 10),
        PathRecord::new(&[1, 0x8100_0002], 2, 4),
    ];
    w.block(5, &recs).unwrap();
    let bytes = w.finish();
    assert_eq!(&bytes[..8], b"xrayprof");
    let p = Profile::parse(&bytes).unwrap();
    assert_eq!(p.header, header);
    let (blocks, problems, cut) = read_all(&bytes);
    assert!(problems.is_empty() && cut.is_none());
    assert_eq!(blocks, [(5, recs.to_vec())]);
}

#[test]
fn bad_blocks_and_records_are_problems() {
    // A block whose size is below its header: the walk stops there.
    let mut w = ProfileWriter::new(&ProfileHeader::default());
    w.block(
        1,
        &[PathRecord::new(&[3], 1, 2), PathRecord::new(&[3, 4], 1, 2)],
    )
    .unwrap();
    let mut bytes = w.finish();
    let good = bytes.len();
    bytes.extend_from_slice(&8u32.to_le_bytes());
    bytes.extend_from_slice(&[0; 12]);
    let (blocks, problems, cut) = read_all(&bytes);
    assert_eq!(blocks.len(), 1);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].known_offset(), Some(good as u64));
    assert!(
        problems[0].to_string().contains("block size 8"),
        "{}",
        problems[0]
    );
    assert_eq!(cut, None);
    let v = verify::verify(&Profile::parse(&bytes).unwrap());
    assert_eq!(v.findings[0].code, verify::codes::BLOCK_SIZE);

    // A record whose path has no 0 in its block: the rest of the block is skipped, the next
    // block is read.
    let mut w = ProfileWriter::new(&ProfileHeader::default());
    // Counts without a zero half, so no 0 follows the path once its own 0 is gone.
    let full = u64::MAX;
    w.block(
        1,
        &[
            PathRecord::new(&[3], 1, 2),
            PathRecord::new(&[3, 4], full, full),
        ],
    )
    .unwrap();
    w.block(2, &[PathRecord::new(&[7], 1, 1)]).unwrap();
    let mut bytes = w.finish();
    // The second record's 0 (after ids 4, 3) becomes 9: no 0 until the block's end.
    let zero = PROFILE_HEADER_SIZE + BLOCK_HEADER_SIZE + 24 + 8;
    assert_eq!(bytes[zero..zero + 4], [0; 4]);
    bytes[zero] = 9;
    let (blocks, problems, cut) = read_all(&bytes);
    assert_eq!(cut, None);
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].1.len(), 1);
    assert_eq!(blocks[1].1, [PathRecord::new(&[7], 1, 1)]);
    assert_eq!(problems.len(), 1);
    let e = problems[0].to_string();
    assert_eq!(
        e,
        "record #1 at offset 0x48: expected a record inside its block (path ids, a 0, call count and time), found it needs at least 48 bytes, 28 remain in the block"
    );
    let v = verify::verify(&Profile::parse(&bytes).unwrap());
    let codes: Vec<&str> = v.findings.iter().map(|f| f.code).collect();
    assert_eq!(codes, [verify::codes::RECORD_OVERRUN]);
}

#[test]
fn verify_names_quirks_and_order() {
    let mut w = ProfileWriter::new(&ProfileHeader::default());
    w.block(
        1,
        &[
            PathRecord::new(&[1], 1, 1 << 63),
            // Its caller [1, 2] has no record before it.
            PathRecord::new(&[1, 2, 3], 1, 1),
            PathRecord::new(&[1, 2], 1, 1),
            PathRecord::new(&[1, 2, 3], 1, 1),
        ],
    )
    .unwrap();
    w.block_numbered(5, 1, &[PathRecord::new(&[1], 1, 1)])
        .unwrap();
    let mut bytes = w.finish();
    // An empty path: a record that is only its 0 and counts.
    let mut b = Vec::new();
    b.extend_from_slice(&(16u32 + 20).to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&2u64.to_le_bytes());
    b.extend_from_slice(&[0; 20]);
    bytes.extend_from_slice(&b);
    let v = verify::verify(&Profile::parse(&bytes).unwrap());
    let codes: Vec<&str> = v.findings.iter().map(|f| f.code).collect();
    assert_eq!(
        codes,
        [
            verify::codes::TIME_WRAPPED,
            verify::codes::PATH_ORDER,
            verify::codes::BLOCK_NUMBER,
            verify::codes::THREAD_REPEATED,
            verify::codes::BLOCK_NUMBER,
            verify::codes::EMPTY_PATH,
        ]
    );
    assert!(!v.has_errors() || codes.contains(&verify::codes::EMPTY_PATH));
    assert_eq!(v.records, 6);
    for f in &v.findings {
        assert!(verify::codes::ALL
            .iter()
            .any(|(c, s, _)| *c == f.code && *s == f.severity));
    }
}

#[test]
fn writer_refuses_what_it_cannot_write() {
    let mut w = ProfileWriter::new(&ProfileHeader::default());
    assert!(w.block(1, &[PathRecord::new(&[1, 0], 1, 1)]).is_err());
    assert_eq!(w.bytes().len(), PROFILE_HEADER_SIZE);
}

#[test]
fn dump_lines() {
    let mut w = ProfileWriter::new(&ProfileHeader::default());
    w.block(
        9,
        &[
            PathRecord::new(&[10], 1, 100),
            PathRecord::new(&[10, 7], 2, 30),
        ],
    )
    .unwrap();
    let p_bytes = w.finish();
    let p = Profile::parse(&p_bytes).unwrap();
    let mut text = Vec::new();
    let o = dump::dump(&p, false, &mut text).unwrap();
    assert_eq!(o.records, 2);
    assert_eq!(
        String::from_utf8(text).unwrap(),
        "block #0 at 0x20: thread 9, number 0, 68 bytes\n  #0 at 0x30: 10 calls 1 time 100\n  #1 at 0x48: 10 > 7 calls 2 time 30\n"
    );
    let mut js = Vec::new();
    dump::dump(&p, true, &mut js).unwrap();
    assert_eq!(
        String::from_utf8(js).unwrap(),
        "{\"cut\":false,\"index\":0,\"number\":0,\"offset\":32,\"size\":68,\"tid\":9,\"type\":\"Block\"}\n\
         {\"block\":0,\"calls\":1,\"index\":0,\"offset\":48,\"path\":[10],\"tid\":9,\"time\":100,\"type\":\"Path\"}\n\
         {\"block\":0,\"calls\":2,\"index\":1,\"offset\":72,\"path\":[10,7],\"tid\":9,\"time\":30,\"type\":\"Path\"}\n"
    );
}

fn arb_block() -> impl Strategy<Value = (u64, Vec<PathRecord>)> {
    let rec = (
        proptest::collection::vec(1u32..=u32::MAX, 0..6),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(path, c, t)| PathRecord {
            path,
            call_count: c,
            cumulative_time: t,
        });
    (any::<u64>(), proptest::collection::vec(rec, 0..6))
}

proptest! {
    #[test]
    fn write_then_read_gives_back_what_was_written(
        big in any::<bool>(),
        pid in any::<u64>(),
        ts in any::<u64>(),
        blocks in proptest::collection::vec(arb_block(), 0..5),
    ) {
        let header = ProfileHeader {
            endian: if big { Endian::Big } else { Endian::Little },
            pid,
            timestamp_ns: ts,
            ..ProfileHeader::default()
        };
        let mut w = ProfileWriter::new(&header);
        for (tid, recs) in &blocks {
            w.block(*tid, recs).unwrap();
        }
        let bytes = w.finish();
        let p = Profile::parse(&bytes).unwrap();
        prop_assert_eq!(p.header, header);
        let (got, problems, cut) = read_all(&bytes);
        prop_assert!(problems.is_empty());
        prop_assert_eq!(cut, None);
        prop_assert_eq!(got, blocks.clone());
        let v = verify::verify(&p);
        prop_assert_eq!(v.records, blocks.iter().map(|b| b.1.len() as u64).sum::<u64>());
    }

    #[test]
    fn any_bytes_after_a_header_never_panic(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut bytes = ProfileHeader::default().to_bytes().to_vec();
        bytes.extend_from_slice(&body);
        let p = Profile::parse(&bytes).unwrap();
        let n = p.entries().count();
        prop_assert!(n <= bytes.len());
        let _ = verify::verify(&p);
        let _ = summary::summary(&p);
        let _ = dump::dump(&p, true, &mut Vec::new()).unwrap();
    }
}

#[test]
fn fuzz_checks_hold_on_the_real_file_and_its_cuts() {
    let data = fixture();
    for len in (0..=data.len()).step_by(7).chain([data.len()]) {
        crate::harness::check_profile(&data[..len]);
    }
}
