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
        let ahead = pd.with_events_read_ahead(None, |ev| {
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
    // The one-pass reader ends as the walk of the checked file does: the same events, cut
    // and error.
    if let Ok((one, ())) = PerfData::parse_one_pass(bytes, None, |_| ()) {
        let walk = |ev: &mut profkit_perf::Events<_>| {
            while let Some(Ok(_)) = ev.next_event() {}
            ev.outcome()
        };
        let checked = PerfData::parse(bytes)
            .ok()
            .and_then(|pd| pd.events().ok().map(|mut e| walk(&mut e)));
        let got = one.with_events_read_ahead(None, walk).ok();
        // Except that it does not inflate COMPRESSED records (the header of a file that has
        // them lists the COMPRESSED feature, and such a file is checked first): it stops there.
        let unlisted = |o: &Option<profkit_perf::Outcome>| {
            o.as_ref()
                .and_then(|o| o.error.as_ref())
                .is_some_and(|e| e.to_string().contains("lists no COMPRESSED feature"))
        };
        if unlisted(&got) {
            let (got, checked) = (got.unwrap(), checked.unwrap());
            assert_eq!(got.events, checked.events, "one pass");
            let offset =
                |o: &profkit_perf::Outcome| o.error.as_ref().and_then(|e| e.known_offset());
            assert_eq!(offset(&got), offset(&checked), "one pass");
        } else {
            assert_eq!(got, checked, "one pass");
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

/// The records of the data section of a file-mode `bytes`: `(offset, bytes)`.
fn records(bytes: &[u8]) -> Vec<(usize, Vec<u8>)> {
    let (d_off, d_size) = data_section(bytes);
    let mut out = Vec::new();
    let mut off = d_off;
    while off < d_off + d_size {
        let size = u16::from_le_bytes(bytes[off + 6..off + 8].try_into().unwrap()) as usize;
        out.push((off, bytes[off..off + size].to_vec()));
        off += size;
    }
    out
}

/// `good` (file mode) with `data` as its data section and no feature sections.
fn with_data(good: &[u8], data: &[u8]) -> Vec<u8> {
    let (d_off, _) = data_section(good);
    let mut b = good[..d_off].to_vec();
    put64(&mut b, 48, data.len() as u64);
    b[72..104].fill(0);
    b.extend_from_slice(data);
    b
}

/// A PERF_RECORD_COMPRESSED record holding `payload`.
fn compressed_record(payload: &[u8]) -> Vec<u8> {
    let mut r = 81u32.to_le_bytes().to_vec();
    r.extend_from_slice(&0u16.to_le_bytes());
    r.extend_from_slice(&u16::try_from(payload.len() + 8).unwrap().to_le_bytes());
    r.extend_from_slice(payload);
    r
}

/// `raw` as COMPRESSED records as `perf record -z` writes them: zstd frames of `piece` bytes
/// (cut anywhere: a record continues in the next frame), `per_record` frames a record.
fn compress(raw: &[u8], piece: usize, per_record: usize) -> Vec<u8> {
    let frames: Vec<Vec<u8>> = raw
        .chunks(piece)
        .map(|c| {
            let mut z = vec![0u8; zstd_safe::compress_bound(c.len())];
            let n = zstd_safe::compress(&mut z[..], c, 1).unwrap();
            z.truncate(n);
            z
        })
        .collect();
    frames
        .chunks(per_record)
        .flat_map(|fs| compressed_record(&fs.concat()))
        .collect()
}

/// A zstd frame of `n` bytes `b` in RLE blocks: 4 bytes per 128 KiB.
fn zstd_rle(n: u64, b: u8) -> Vec<u8> {
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    let mut left = n;
    while left > 0 {
        let size = left.min(128 << 10) as u32;
        left -= u64::from(size);
        let head = u32::from(left == 0) | (1 << 1) | (size << 3);
        z.extend_from_slice(&head.to_le_bytes()[..3]);
        z.push(b);
    }
    z
}

/// `(type, time, body)` of events.
type EventList = Vec<(u32, Option<u64>, Vec<u8>)>;

/// Every event of `bytes` as `(type, time, body)`, sorted, and whether a cut was reported.
fn all_events(bytes: &[u8]) -> (EventList, bool, Option<String>) {
    let pd = PerfData::parse(bytes).unwrap();
    let mut ev = pd.events().unwrap();
    let mut out = Vec::new();
    let mut err = None;
    while let Some(e) = ev.next_event() {
        match e {
            Ok(e) if e.record_type.0 != 68 => out.push((e.record_type.0, e.time, e.body.to_vec())),
            Ok(_) => {}
            Err(e) => err = Some(e.to_string()),
        }
    }
    out.sort();
    (out, ev.truncation().is_some(), err)
}

#[test]
fn compressed_records_read_as_their_inflated_records() {
    let good = fixture("node-fp.data");
    let recs = records(&good);
    let raw: Vec<u8> = recs.iter().flat_map(|r| r.1.clone()).collect();
    let plain = all_events(&with_data(&good, &raw));
    assert!(plain.0.len() > 100 && !plain.1 && plain.2.is_none());
    // The first records plain (as perf writes its synthesized ones), the rest compressed.
    let head: Vec<u8> = recs[..20].iter().flat_map(|r| r.1.clone()).collect();
    let z = compress(&raw[head.len()..], 2000, 8);
    let file = with_data(&good, &[head.clone(), z.clone()].concat());
    assert_eq!(all_events(&file), plain);

    // A cut inside the last COMPRESSED record keeps what zstd decodes before it (B12).
    let mut last = head.len();
    let mut at = head.len();
    while at < head.len() + z.len() {
        last = at;
        at += u16::from_le_bytes(
            z[at - head.len() + 6..at - head.len() + 8]
                .try_into()
                .unwrap(),
        ) as usize;
    }
    let (d_off, _) = data_section(&file);
    let at_start = all_events(&file[..d_off + last]);
    let size = at - last;
    let mid = all_events(&file[..d_off + last + size * 3 / 4]);
    assert!(at_start.1 && mid.1, "both cuts are reported");
    assert!(
        mid.0.len() > at_start.0.len(),
        "{} events at the record's start, {} at 3/4 of it",
        at_start.0.len(),
        mid.0.len()
    );
    assert!(mid.0.iter().all(|e| plain.0.contains(e)));
}

#[test]
fn zstd_bombs_are_refused_with_their_offset() {
    let good = fixture("node-fp.data");
    let recs = records(&good);
    let head: Vec<u8> = recs[..20].iter().flat_map(|r| r.1.clone()).collect();
    let (d_off, _) = data_section(&good);
    let bombs: Vec<(&str, Vec<u8>)> = vec![
        // 1 GiB of zeros in 32 KiB.
        ("zeros", zstd_rle(1 << 30, 0)),
        // 128 MiB of one 17,476-byte record kind repeated (0x44 bytes).
        ("window bytes", zstd_rle(128 << 20, 0x44)),
        // 1,048,577 FINISHED_ROUNDs.
        ("window records", {
            let rounds: Vec<u8> = [68u32.to_le_bytes(), [0, 0, 8, 0]]
                .concat()
                .repeat((1 << 20) + 1);
            let mut z = vec![0u8; zstd_safe::compress_bound(rounds.len())];
            let n = zstd_safe::compress(&mut z[..], &rounds, 1).unwrap();
            z.truncate(n);
            z
        }),
    ];
    for (what, payload) in bombs {
        let rec = compressed_record(&payload);
        let file = with_data(&good, &[head.clone(), rec].concat());
        let v = validate(&file);
        let f = v
            .findings
            .iter()
            .find(|f| f.message.contains("COMPRESSED record"))
            .unwrap_or_else(|| panic!("{what}: {:?}", v.findings));
        assert_eq!(f.offset as usize, d_off + head.len(), "{what}");
        assert_eq!(f.record, Some(20), "{what}");
        // The records before it are read.
        let (events, _, err) = all_events(&file);
        assert!(events.len() >= 15, "{what}: {}", events.len());
        assert!(err.unwrap().contains("COMPRESSED record"), "{what}");
        exercise(&file);
    }
}

/// A zstd frame of `blocks` stored raw (a decoder hands out each block as it completes it).
fn zstd_raw(blocks: &[&[u8]]) -> Vec<u8> {
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    for (i, b) in blocks.iter().enumerate() {
        let last = u32::from(i + 1 == blocks.len());
        let head = last | (u32::try_from(b.len()).unwrap() << 3);
        z.extend_from_slice(&head.to_le_bytes()[..3]);
        z.extend_from_slice(b);
    }
    z
}

/// A COMPRESSED record holding COMPRESSED records (perf never nests them) that the file cuts
/// (found by the perf_mutate fuzz target: a 380 KB file took 387 MB). The records zstd decodes
/// before a cut are kept and read after the clean data, where linux-perf-data inflated the
/// nested bombs whole, past the window bound: 128 MiB of 0x44 records, 1 GiB of zeros. Nested
/// COMPRESSED (and AUXTRACE) records are not kept now.
#[test]
fn a_cut_compressed_record_does_not_keep_nested_compressed_records() {
    let good = fixture("node-fp.data");
    let recs = records(&good);
    let head: Vec<u8> = recs[..20].iter().flat_map(|r| r.1.clone()).collect();
    for bomb in [zstd_rle(128 << 20, 0x44), zstd_rle(1 << 30, 0)] {
        let nested = [compressed_record(&bomb), recs[20].1.clone()].concat();
        let outer = compressed_record(&zstd_raw(&[&nested, &[0u8; 4000]]));
        let file = with_data(&good, &[head.clone(), outer.clone()].concat());
        // Cut in the second block: the first one (the nested records) is decoded.
        let cut = &file[..file.len() - 1000];
        let pd = PerfData::parse(cut).unwrap();
        let s = summary(&pd);
        assert!(s.records <= 22, "{} records", s.records);
        let (events, cut_seen, _) = all_events(cut);
        assert!(cut_seen);
        assert!(events.len() <= 21, "{} events", events.len());
        assert!(events.iter().all(|e| e.0 != 0x4444_4444));
        exercise(cut);
    }
}

/// A pipe's HEADER_ATTR whose attr size is larger than the record: an error of `validate` at
/// its offset (it passed with 0 errors, and `inject` then failed blaming its output: B10).
#[test]
fn a_pipe_attr_larger_than_its_record_is_an_error() {
    let mut b = fixture("node-pipe.data");
    assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), 64);
    b[16 + 8 + 4..16 + 8 + 8].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let v = validate(&b);
    assert!(v.has_errors(), "{:?}", v.findings);
    let f = v
        .findings
        .iter()
        .find(|f| f.message.contains("HEADER_ATTR"))
        .unwrap();
    assert_eq!(f.offset, 16, "{f:?}");
    exercise(&b);
}

#[test]
fn a_finished_round_with_a_body_is_corrupt() {
    // linux-perf-data would read its body as the next record's header.
    let mut bytes = fixture("node-fp.data");
    let (start, _) = data_section(&bytes);
    let mut off = start;
    for _ in 0..40 {
        off += u16::from_le_bytes(bytes[off + 6..off + 8].try_into().unwrap()) as usize;
    }
    bytes[off..off + 4].copy_from_slice(&68u32.to_le_bytes());
    let want = format!("offset {off:#x}");
    for one_pass in [false, true] {
        let outcome = |e: &mut profkit_perf::Events<_>| {
            while let Some(Ok(_)) = e.next_event() {}
            e.outcome()
        };
        let got = if one_pass {
            let (pd, ()) = PerfData::parse_one_pass(&bytes, None, |_| ()).unwrap();
            pd.with_events_read_ahead(None, outcome).unwrap()
        } else {
            outcome(&mut PerfData::parse(&bytes).unwrap().events().unwrap())
        };
        let err = got.error.expect("an error").to_string();
        assert!(
            err.contains("FINISHED_ROUND record of") && err.contains(&want),
            "{err}"
        );
        assert!(got.events > 0, "the records before it are delivered");
    }
    exercise(&bytes);
}
