//! Hostile size and count fields: errors with offsets, never a panic or a huge allocation.

use profkit_jitdump::write::{HeaderOptions, JitDumpWriter};
use profkit_jitdump::{validate, Endian, JitDump, Record, RecordType};

fn one_record(id: RecordType, body: &[u8]) -> Vec<u8> {
    let header = HeaderOptions {
        endian: Endian::Little,
        pid: 1,
        timestamp: 0,
        ..HeaderOptions::default()
    };
    let mut w = JitDumpWriter::new(Vec::new(), &header).unwrap();
    w.write_raw_record(id, 5, body).unwrap();
    w.into_inner()
}

fn parse_err(bytes: &[u8]) -> profkit_jitdump::Error {
    let dump = JitDump::parse(bytes).unwrap();
    let raw = dump.records().next().unwrap().unwrap();
    let err = raw.parse().unwrap_err();
    assert_eq!(err.record, Some(0));
    assert!(err.offset >= 40 && err.offset < bytes.len() as u64, "{err}");
    // The validator reports the same problem, and does not panic.
    let report = validate(bytes);
    assert!(
        report.findings.iter().any(|f| f.code == "record-malformed"),
        "{report:#?}"
    );
    err
}

fn le64(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn load_below_fixed_part() {
    let e = parse_err(&one_record(RecordType::CODE_LOAD, &[0; 12]));
    assert_eq!(
        e.to_string(),
        "record #0 at offset 0x28: JIT_CODE_LOAD total_size 28 is below its 56-byte fixed part"
    );
}

#[test]
fn load_with_huge_code_size() {
    let mut body = vec![0u8; 40];
    body[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    body.extend_from_slice(b"f\0abc");
    let e = parse_err(&one_record(RecordType::CODE_LOAD, &body));
    assert!(
        e.message
            .contains("code_size 18446744073709551615 but 3 bytes follow"),
        "{e}"
    );
}

#[test]
fn load_name_without_nul() {
    let mut body = vec![0u8; 40];
    body.extend_from_slice(b"abc");
    let e = parse_err(&one_record(RecordType::CODE_LOAD, &body));
    assert!(e.message.contains("not NUL-terminated"));
}

#[test]
fn debug_info_with_huge_nr_entry() {
    let mut body = le64(&[0x1000, u64::MAX]);
    body.extend_from_slice(&[0; 40]);
    let e = parse_err(&one_record(RecordType::CODE_DEBUG_INFO, &body));
    assert!(
        e.message
            .contains("nr_entry 18446744073709551615 cannot fit in 40 bytes"),
        "{e}"
    );
    assert_eq!(e.offset, 40 + 16 + 8, "points at the nr_entry field");
}

#[test]
fn unwinding_with_hostile_sizes() {
    let e = parse_err(&one_record(
        RecordType::CODE_UNWINDING_INFO,
        &le64(&[u64::MAX, 0, 0]),
    ));
    assert!(e.message.contains("unwind_data_size"));
    let mut body = le64(&[4, 8, 4]);
    body.extend_from_slice(&[1, 2, 3, 4]);
    let e = parse_err(&one_record(RecordType::CODE_UNWINDING_INFO, &body));
    assert!(e
        .message
        .contains("eh_frame_hdr_size 8 exceeds unwind_data_size 4"));
}

#[test]
fn debug_info2_with_hostile_counts() {
    for field in 0..8 {
        let mut body = vec![0u8; 32];
        body[field * 4..field * 4 + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let bytes = one_record(RecordType::SAMPLY_DEBUG_INFO2, &body);
        let dump = JitDump::parse(&bytes).unwrap();
        let raw = dump.records().next().unwrap().unwrap();
        match raw.parse() {
            // Counts of strings are only checked against the strings found (validator).
            Ok(Record::DebugInfo2(d)) => {
                assert!(field == 0 || field == 2, "field {field}");
                assert_eq!(d.files().count() + d.function_names().count(), 0);
                let report = validate(&bytes);
                assert!(report
                    .findings
                    .iter()
                    .any(|f| f.code == "debug-info2-string-count"));
            }
            Ok(other) => panic!("{other:?}"),
            Err(e) => assert!(e.message.contains("needs"), "field {field}: {e}"),
        }
    }
}

#[test]
fn extension_records_with_hostile_sizes() {
    let mut body = vec![0u8; 16];
    body[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
    parse_err(&one_record(RecordType::SAMPLY_EMBEDDED_SOURCE_FILE, &body));
    let mut body = vec![0u8; 16];
    body[0..4].copy_from_slice(&4u32.to_le_bytes());
    body[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    body.extend_from_slice(b"a.j\0");
    parse_err(&one_record(RecordType::SAMPLY_EMBEDDED_SOURCE_FILE, &body));
    // A JIT_TIER whose name has no NUL: maybe a DEBUG_INFO2 draft using the same id.
    let mut body = vec![0u8; 16];
    body.extend_from_slice(b"abc");
    let e = parse_err(&one_record(RecordType::SAMPLY_JIT_TIER, &body));
    assert!(e.message.contains("DEBUG_INFO2"));
}

#[test]
fn header_problems() {
    assert!(JitDump::parse(b"").is_err());
    assert!(JitDump::parse(b"JiT").is_err());
    let e = JitDump::parse(
        b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
    )
    .unwrap_err();
    assert!(e.message.contains("neither"), "{e}");
    let mut h = one_record(RecordType::CODE_CLOSE, &[]);
    h[8..12].copy_from_slice(&20u32.to_le_bytes());
    assert!(JitDump::parse(&h)
        .unwrap_err()
        .message
        .contains("below the 40-byte header"));
    h[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(JitDump::parse(&h)
        .unwrap_err()
        .message
        .contains("runs past"));
    // Version 2 (Mono once wrote it) still parses; the validator reports it.
    let mut v2 = one_record(RecordType::CODE_CLOSE, &[]);
    v2[4..8].copy_from_slice(&2u32.to_le_bytes());
    assert!(JitDump::parse(&v2).is_ok());
    assert!(validate(&v2)
        .findings
        .iter()
        .any(|f| f.code == "unsupported-version"));
}

#[test]
fn random_bytes_after_a_valid_header_never_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for len in 0..600 {
        let mut bytes = one_record(RecordType::CODE_CLOSE, &[]);
        bytes.truncate(40);
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Small sizes and ids make records that parse far enough to matter.
            bytes.push(if state.is_multiple_of(3) {
                (state >> 8) as u8 % 40
            } else {
                (state >> 16) as u8
            });
        }
        let _ = validate(&bytes);
        let dump = JitDump::parse(&bytes).unwrap();
        for r in dump.records().flatten() {
            if let Ok(Record::DebugInfo(d)) = r.parse() {
                let _ = d.walk_end();
                let _ = d.fixed_stride();
            }
        }
    }
}

#[test]
fn fuzz_regressions_stay_fixed() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("jitdump") || name.starts_with("validate")) {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let start = std::time::Instant::now();
        let _ = validate(&bytes);
        if let Ok(dump) = JitDump::parse(&bytes) {
            for r in dump.records().flatten() {
                let _ = r.parse();
            }
        }
        // A FollowReader fed the file in two pieces sees the same records as the slice reader.
        let cut = bytes.len().min(10);
        let src = crate::follow::Growing::default();
        let mut follow = profkit_jitdump::FollowReader::new(src.clone());
        src.append(&bytes[..cut]);
        follow.fill().unwrap();
        while let Ok(Some(_)) = follow.next_record() {}
        src.append(&bytes[cut..]);
        follow.fill().unwrap();
        while let Ok(Some(_)) = follow.next_record() {}
        assert!(start.elapsed().as_secs() < 5, "{name} is slow again");
        n += 1;
    }
    assert!(n >= 4, "regression inputs found: {n}");
}
