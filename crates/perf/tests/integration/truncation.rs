//! Cutting real recordings at many offsets: every complete record before the cut is
//! delivered, then a truncation at the end of the last complete record; never a panic.

use profkit_perf::{validate, PerfData, PerfStream};

use crate::fixture;

/// Record boundaries of the data section `[start, end)`: `(offset, type)` of each record and
/// the end of the last one (plain 8-byte-header walk; the fixtures have no AUXTRACE).
fn records(bytes: &[u8], start: usize, end: usize) -> Vec<(usize, u32, usize)> {
    let mut out = Vec::new();
    let mut off = start;
    while off + 8 <= end {
        let ty = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap());
        let size = u16::from_le_bytes(bytes[off + 6..off + 8].try_into().unwrap()) as usize;
        assert!(size >= 8);
        if off + size > end {
            break;
        }
        out.push((off, ty, off + size));
        off += size;
    }
    out
}

/// Offsets to cut at: every byte of the header region and around each record boundary, and
/// every `stride`-th byte elsewhere.
fn cuts(len: usize, recs: &[(usize, u32, usize)], header_end: usize, stride: usize) -> Vec<usize> {
    let mut c: Vec<usize> = (0..header_end.min(len)).collect();
    for r in recs.iter().step_by(7) {
        for d in [0usize, 1, 7, 8, 9] {
            c.push(r.0 + d);
            c.push(r.2.saturating_sub(d));
        }
    }
    c.extend((0..len).step_by(stride));
    c.push(len);
    c.sort_unstable();
    c.dedup();
    c.retain(|&x| x <= len);
    c
}

/// Events delivered, the truncation, and whether an error came, for a walk on this thread;
/// a walk with the records read ahead on another thread must see the same.
fn delivered(pd: &PerfData<'_>) -> (u64, Option<profkit_perf::Truncation>, bool) {
    let walk = |events: &mut profkit_perf::Events<_>| {
        let mut n = 0;
        let mut err = false;
        while let Some(ev) = events.next_event() {
            match ev {
                Ok(_) => n += 1,
                Err(_) => err = true,
            }
        }
        (n, events.truncation(), err)
    };
    let here = walk(&mut pd.events().unwrap());
    let ahead = pd.with_events_read_ahead(None, walk).unwrap();
    assert_eq!(here, ahead, "read ahead");
    here
}

/// Types linux-perf-data consumes instead of delivering.
fn is_delivered(ty: u32) -> bool {
    ty != 68
}

#[test]
fn file_mode_cut_at_many_offsets() {
    let bytes = fixture("node-fp.data");
    let data_off = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let data_size = u64::from_le_bytes(bytes[48..56].try_into().unwrap()) as usize;
    let recs = records(&bytes, data_off, data_off + data_size);
    let total = recs.iter().filter(|r| is_delivered(r.1)).count() as u64;
    for cut in cuts(bytes.len(), &recs, data_off + 64, 61) {
        let part = &bytes[..cut];
        let v = validate(part);
        let Ok(pd) = PerfData::parse(part) else {
            assert!(cut < data_off, "cut {cut}: a complete header must parse");
            assert!(v.findings.iter().any(|f| f.code == "header-invalid"));
            continue;
        };
        let (n, trunc, err) = delivered(&pd);
        assert!(!err, "cut {cut}");
        if cut >= data_off + data_size {
            // Only feature sections are missing.
            assert_eq!(n, total, "cut {cut}");
            assert!(trunc.is_none());
            continue;
        }
        let complete: Vec<_> = recs.iter().filter(|r| r.2 <= cut).collect();
        let expect = complete.iter().filter(|r| is_delivered(r.1)).count() as u64;
        assert_eq!(n, expect, "cut {cut}");
        let last_end = complete.last().map_or(data_off, |r| r.2);
        match trunc {
            None => assert_eq!(cut, last_end, "cut {cut} inside a record must be reported"),
            Some(t) => {
                assert_eq!(t.offset as usize, last_end, "cut {cut}");
                assert_eq!(t.record, Some(complete.len() as u64));
                assert!(v
                    .findings
                    .iter()
                    .any(|f| f.code == "truncated" && f.offset == t.offset));
            }
        }
        assert!(
            v.findings.iter().any(|f| f.code == "data-past-end"),
            "cut {cut}"
        );
    }
}

#[test]
fn pipe_mode_cut_at_many_offsets() {
    let bytes = fixture("node-pipe.data");
    let recs = records(&bytes, 16, bytes.len());
    // Attr and feature records at the start are metadata, read when the stream opens.
    let first_event = recs.iter().position(|r| r.1 != 64 && r.1 != 80).unwrap();
    let meta_end = recs[first_event].0;
    for cut in cuts(bytes.len(), &recs, 64, 53) {
        let part = &bytes[..cut];
        let _ = validate(part);
        let stream = PerfStream::open(part);
        let Ok(pd) = PerfData::parse(part) else {
            assert!(
                cut <= meta_end + 8 || cut < 16,
                "cut {cut} past the metadata must open"
            );
            assert!(stream.is_err());
            continue;
        };
        let (n, trunc, err) = delivered(&pd);
        assert!(!err, "cut {cut}");
        let complete: Vec<_> = recs.iter().filter(|r| r.2 <= cut).collect();
        let expect = complete
            .iter()
            .skip(first_event)
            .filter(|r| is_delivered(r.1))
            .count() as u64;
        assert_eq!(n, expect, "cut {cut}");
        let last_end = complete.last().map_or(16, |r| r.2);
        match &trunc {
            None => assert_eq!(cut, last_end, "cut {cut}"),
            Some(t) => assert_eq!(t.offset as usize, last_end, "cut {cut}"),
        }
        // The stream reader agrees.
        let mut stream = stream.unwrap();
        let events = stream.events();
        let mut m = 0;
        while let Some(ev) = events.next_event() {
            ev.unwrap();
            m += 1;
        }
        assert_eq!(m, n, "cut {cut}");
        assert_eq!(events.truncation(), trunc, "cut {cut}");
    }
}

/// perf's console lines captured after a pipe recording's last record are named as trailing
/// text, at the record number `dump` would give the next event (not as a cut record of a
/// made-up type numbered among the pipe's header records).
#[test]
fn text_after_a_pipe_recording_is_trailing_garbage() {
    let mut bytes = fixture("node-pipe.data");
    let clean = validate(&bytes);
    assert!(clean.truncation.is_none());
    let events = {
        let pd = PerfData::parse(&bytes).unwrap();
        let mut ev = pd.events().unwrap();
        let mut n = 0u64;
        while let Some(e) = ev.next_event() {
            e.unwrap();
            n += 1;
        }
        n
    };
    bytes.extend_from_slice(b"[ perf record: Woken up 1 times to write data ]\n[ perf record: Captured and wrote 0.1 MB - ]\n");
    let v = validate(&bytes);
    let t = v.truncation.expect("the text is reported");
    assert!(
        t.reason.starts_with("trailing garbage: 93 bytes of text"),
        "{}",
        t.reason
    );
    assert_eq!(t.record, Some(events));
}
