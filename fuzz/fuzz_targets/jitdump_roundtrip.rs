#![no_main]
//! Parse → `convert::reencode` into the other byte order → parse again. The re-encoded file
//! must parse, walk without error or truncation, and hold the same JIT_CODE_LOADs (names,
//! addresses, sizes, code bytes) in the same order. Re-encoding it back and over again must
//! give the first pass's bytes again (a fixed point after one normalisation), except for files
//! with corrupt DEBUG_INFO records (see below).

use libfuzzer_sys::fuzz_target;
use profkit_jitdump::convert::{header_like, reencode};
use profkit_jitdump::read::DebugWalkEnd;
use profkit_jitdump::{Endian, JitDump, JitDumpWriter, Record};

#[derive(Debug, PartialEq, Eq)]
struct Load {
    name: Vec<u8>,
    code_addr: u64,
    vma: u64,
    code_size: u64,
    code_index: u64,
    code: Option<Vec<u8>>,
}

fn loads(dump: &JitDump<'_>) -> Vec<Load> {
    dump.records()
        .map_while(|r| r.ok())
        .filter_map(|raw| match raw.parse() {
            Ok(Record::CodeLoad(l)) => Some(Load {
                name: l.name.to_vec(),
                code_addr: l.code_addr,
                vma: l.vma,
                code_size: l.code_size,
                code_index: l.code_index,
                code: l.code.map(<[u8]>::to_vec),
            }),
            _ => None,
        })
        .collect()
}

fn other(e: Endian) -> Endian {
    match e {
        Endian::Little => Endian::Big,
        Endian::Big => Endian::Little,
    }
}

fn reencode_to(dump: &JitDump<'_>, endian: Endian) -> Vec<u8> {
    let mut w = JitDumpWriter::new(Vec::new(), &header_like(dump, endian))
        .expect("writing a header into a Vec cannot fail");
    reencode(dump, &mut w).expect("re-encoding a parsed dump into a Vec must not fail");
    w.into_inner()
}

fuzz_target!(|data: &[u8]| {
    let Ok(first) = JitDump::parse(data) else {
        return;
    };
    let swapped = other(first.endian());
    let bytes = reencode_to(&first, swapped);

    let second = JitDump::parse(&bytes).expect("the re-encoded header must parse");
    assert_eq!(second.endian(), swapped);
    let mut records = second.records();
    for r in &mut records {
        let raw = r.expect("the re-encoded records must walk without error");
        // Every record the writer produced from a parsed record must parse again (records
        // that failed to parse or are unknown are dropped when the byte order changes).
        if let Err(e) = raw.parse() {
            panic!("re-encoded record does not parse: {e}");
        }
    }
    assert!(
        records.truncation().is_none(),
        "re-encoded file is truncated: {:?}",
        records.truncation()
    );

    let before = loads(&first);
    let after = loads(&second);
    assert_eq!(
        before.len(),
        after.len(),
        "LOAD count changed by re-encoding"
    );
    for (i, (a, b)) in before.iter().zip(&after).enumerate() {
        assert_eq!(a, b, "LOAD #{i} changed by re-encoding");
    }

    // Back to the original byte order and once more: the second round trip changes nothing.
    let back = reencode_to(&second, first.endian());
    let third = JitDump::parse(&back).expect("the twice re-encoded header must parse");
    assert_eq!(loads(&third), after);
    // A corrupt DEBUG_INFO (entries that do not walk to the record's end) is carried over
    // by the fixed-stride recovery, a heuristic whose pick depends on the byte order of the
    // numbers, and a recovered record can walk cleanly in the other byte order: such files
    // need more than one round to settle, so only their LOADs are compared (above).
    let recovered = first.records().map_while(Result::ok).any(|r| {
        matches!(r.parse(), Ok(Record::DebugInfo(d))
            if !matches!(d.walk_end(), DebugWalkEnd::Exact { .. }))
    });
    if !recovered {
        let again = reencode_to(&third, swapped);
        assert!(
            again == bytes,
            "re-encoding is not a fixed point after one round:\n{bytes:?}\n{again:?}"
        );
    }
});
