//! Hostile size fields and byte flips: an error or a finding, never a panic or a huge
//! allocation.

use profkit_perf::{dump, summary, validate, EventData, PerfData};

use crate::{codes, fixture};

fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Everything a reader does with a file: open, every event, validate, summary, dump.
fn exercise(bytes: &[u8]) {
    let _ = validate(bytes);
    if let Ok(pd) = PerfData::parse(bytes) {
        let _ = summary(&pd);
        let _ = dump::write(
            &pd,
            dump::DumpOptions {
                json: true,
                stacks: true,
            },
            &mut std::io::sink(),
        );
        let _ = dump::write(&pd, dump::DumpOptions::default(), &mut std::io::sink());
        let ahead = pd.with_events_read_ahead(|ev| {
            let mut n = 0u64;
            while let Some(Ok(_)) = ev.next_event() {
                n += 1;
            }
            n
        });
        if let Ok(mut ev) = pd.events() {
            let mut here = 0u64;
            while let Some(e) = ev.next_event() {
                if let Ok(e) = e {
                    here += 1;
                    if let EventData::Sample(s) = &e.data {
                        if let Some(c) = &s.callchain {
                            let _ = c.split();
                        }
                        if let Some(r) = &s.user_regs {
                            let _ = r.iter().count();
                        }
                    }
                }
            }
            assert_eq!(ahead.ok(), Some(here), "read ahead");
        }
    }
}

fn data_section(bytes: &[u8]) -> (usize, usize) {
    (
        u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize,
        u64::from_le_bytes(bytes[48..56].try_into().unwrap()) as usize,
    )
}

#[test]
fn hostile_header_fields() {
    let good = fixture("node-fp.data");
    // attr_size 0 (linux-perf-data divides by it), huge sections, data past the end.
    for (off, v) in [
        (16, 0u64),
        (16, u64::MAX),
        (24, u64::MAX),
        (32, u64::MAX),
        (40, u64::MAX),
        (48, u64::MAX),
        (48, 1 << 40),
        (56, 8),
        (64, u64::MAX),
        (72, u64::MAX),
        (8, 17),
        (8, u64::MAX),
    ] {
        let mut b = good.clone();
        put64(&mut b, off, v);
        exercise(&b);
    }
    // Every feature table entry pointing far away, or huge.
    let (d_off, d_size) = data_section(&good);
    let table = d_off + d_size;
    let n = u64::from_le_bytes(good[72..80].try_into().unwrap()).count_ones() as usize;
    for i in 0..n {
        for (field, v) in [(0, u64::MAX - 4), (8, u64::MAX), (8, 1 << 40), (0, 0)] {
            let mut b = good.clone();
            put64(&mut b, table + i * 16 + field, v);
            let v = validate(&b);
            let _ = codes(&v);
            exercise(&b);
        }
    }
}

#[test]
fn hostile_feature_contents() {
    let good = fixture("node-fp.data");
    let pd = PerfData::parse(&good).unwrap();
    // EVENT_DESC (bit 12) and CMDLINE (bit 11) with huge counts: dropped or reported.
    for bit in [11u32, 12, 2, 29, 7] {
        let s = pd
            .header()
            .feature_sections
            .iter()
            .find(|f| f.bit == bit)
            .unwrap()
            .section;
        for (rel, v) in [
            (0usize, u32::MAX),
            (4, u32::MAX),
            (0, 0x7fff_ffff),
            (8, u32::MAX),
        ] {
            let mut b = good.clone();
            let at = s.offset as usize + rel;
            if at + 4 <= s.offset as usize + s.size as usize {
                b[at..at + 4].copy_from_slice(&v.to_le_bytes());
                exercise(&b);
            }
        }
    }
}

#[test]
fn hostile_records() {
    let good = fixture("node-fp.data");
    let (d_off, d_size) = data_section(&good);
    // Find records by walking headers.
    let mut recs = Vec::new();
    let mut off = d_off;
    while off < d_off + d_size {
        let ty = u32::from_le_bytes(good[off..off + 4].try_into().unwrap());
        let size = u16::from_le_bytes(good[off + 6..off + 8].try_into().unwrap()) as usize;
        recs.push((off, ty, size));
        off += size;
    }
    // A record of size 0 in the middle: corrupt, reported with its offset and index.
    let (mid_off, _, _) = recs[recs.len() / 2];
    let mut b = good.clone();
    b[mid_off + 6..mid_off + 8].copy_from_slice(&0u16.to_le_bytes());
    let v = validate(&b);
    let f = v
        .findings
        .iter()
        .find(|f| f.code == "record-size-invalid")
        .unwrap();
    assert_eq!(f.offset as usize, mid_off);
    assert_eq!(f.record, Some((recs.len() / 2) as u64));
    exercise(&b);

    // A SAMPLE whose callchain nr is huge (linux-perf-event-reader's nr * 8 overflows).
    let (s_off, _, _) = *recs.iter().find(|r| r.1 == 9).unwrap();
    // IP, TID, TIME, PERIOD, then CALLCHAIN nr (sample_type IP|TID|TIME|CALLCHAIN|PERIOD).
    let mut b = good.clone();
    put64(&mut b, s_off + 8 + 32, 1 << 61);
    let v = validate(&b);
    assert!(codes(&v).contains(&"record-malformed"), "{:?}", codes(&v));
    exercise(&b);

    // An MMAP2 with a build id length over 20 (linux-perf-event-reader asserts on it).
    let (m_off, _, _) = *recs.iter().find(|r| r.1 == 10).unwrap();
    let mut b = good.clone();
    let misc = u16::from_le_bytes(b[m_off + 4..m_off + 6].try_into().unwrap()) | (1 << 14);
    b[m_off + 4..m_off + 6].copy_from_slice(&misc.to_le_bytes());
    b[m_off + 8 + 32] = 200;
    let v = validate(&b);
    assert!(codes(&v).contains(&"record-malformed"), "{:?}", codes(&v));
    exercise(&b);

    // An AUXTRACE record claiming a huge payload.
    let mut b = good.clone();
    b[mid_off..mid_off + 4].copy_from_slice(&71u32.to_le_bytes());
    put64(&mut b, mid_off + 8, u64::MAX - 100);
    let v = validate(&b);
    assert!(v.has_errors());
    exercise(&b);

    // Unknown record types pass through and are reported.
    let mut b = good.clone();
    b[mid_off..mid_off + 4].copy_from_slice(&40u32.to_le_bytes());
    let v = validate(&b);
    assert!(
        codes(&v).contains(&"unknown-record-type"),
        "{:?}",
        codes(&v)
    );
}

#[test]
fn byte_flips_never_panic() {
    for name in ["node-fp.data", "node-pipe.data"] {
        let good = fixture(name);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..300 {
            let mut b = good.clone();
            for _ in 0..1 + next() % 8 {
                let i = (next() % b.len() as u64) as usize;
                b[i] = next() as u8;
            }
            exercise(&b);
        }
    }
}

/// Inputs the fuzzers once broke, in `fuzz/regressions/perf_read/`: every entry point reads
/// them without panicking or allocating from an unchecked count (an allocation of the size a
/// field asks for would abort this test).
#[test]
fn fuzz_regressions_stay_fixed() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions/perf_read");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        exercise(&std::fs::read(entry.unwrap().path()).unwrap());
        n += 1;
    }
    assert!(n > 0, "no regression inputs in {}", dir.display());
}
