//! Malformed input: truncation at every offset of a small real file, hostile fields, unknown
//! events and bad magics. Nothing panics; problems carry offsets; the file goes on.

use profkit_mlpd::stream::StreamReader;
use profkit_mlpd::validate::codes;
use profkit_mlpd::validate::validate;
use profkit_mlpd::write::Writer;
use profkit_mlpd::{ErrorKind, EventKind, File, Header};

use super::{fixtures, load};

/// What decoding a whole file finds: every problem (the buffer scan's and the events'), the
/// cut, and the methods entered.
struct Scan {
    problems: Vec<profkit_mlpd::Error>,
    truncated: bool,
    methods: std::collections::BTreeSet<u64>,
    leaves: u64,
    skipped_bytes: u64,
}

fn scan(f: &File<'_>) -> Scan {
    let mut s = Scan {
        problems: Vec::new(),
        truncated: false,
        methods: Default::default(),
        leaves: 0,
        skipped_bytes: 0,
    };
    let mut bufs = f.buffers();
    for b in bufs.by_ref() {
        match b {
            Ok(b) => {
                let mut evs = b.events();
                for ev in evs.by_ref() {
                    match ev {
                        Ok(e) => match e.kind {
                            EventKind::Enter { method } => {
                                s.methods.insert(method);
                            }
                            EventKind::Leave { .. } => s.leaves += 1,
                            _ => {}
                        },
                        Err(e) => s.problems.push(e),
                    }
                }
                s.skipped_bytes += evs.remaining() as u64;
            }
            Err(e) => s.problems.push(e),
        }
    }
    s.truncated = bufs.truncation().is_some();
    s
}

fn decode_all(data: &[u8]) -> (usize, usize) {
    let Ok(f) = File::parse(data) else {
        return (0, 1);
    };
    let (mut ok, mut bad) = (0, 0);
    for b in f.buffers() {
        match b {
            Ok(b) => {
                for e in b.events() {
                    match e {
                        Ok(e) => {
                            ok += 1;
                            // walk the lazy lists too
                            match e.kind {
                                EventKind::Alloc { backtrace, .. }
                                | EventKind::Throw { backtrace, .. } => {
                                    backtrace.count();
                                }
                                EventKind::SampleHit { ips, frames, .. } => {
                                    ips.count();
                                    frames.count();
                                }
                                EventKind::HeapObject { refs, .. } => {
                                    refs.count();
                                }
                                EventKind::CountersDesc { descs } => {
                                    descs.count();
                                }
                                EventKind::Counters { values, .. } => {
                                    values.count();
                                }
                                _ => {}
                            }
                        }
                        Err(_) => bad += 1,
                    }
                }
            }
            Err(_) => bad += 1,
        }
    }
    (ok, bad)
}

#[test]
fn truncation_at_every_offset_never_panics() {
    let data = load(&fixtures().join("hello_nodefaults.mlpd"));
    let full = decode_all(&data);
    assert_eq!(full.1, 0);
    let mut last_ok = 0;
    for cut in 0..data.len() {
        let (ok, _bad) = decode_all(&data[..cut]);
        assert!(ok >= last_ok.min(ok), "monotone-ish");
        last_ok = ok;
        if cut >= 128 && cut % 997 == 0 {
            let f = File::parse(&data[..cut]).expect("header");
            let r = scan(&f);
            // a cut inside a buffer is reported as a truncation
            assert!(
                r.problems.iter().all(|p| p.is_truncation()),
                "{cut}: {:?}",
                r.problems
            );
        }
    }
}

#[test]
fn truncated_buffer_is_reported_with_its_offset() {
    let data = load(&fixtures().join("hello_calls.mlpd"));
    let cut = data.len() - 3;
    let f = File::parse(&data[..cut]).expect("header");
    let r = scan(&f);
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert!(r.problems[0].is_truncation());
    assert!(r.problems[0].offset as usize <= cut);
}

#[test]
fn flipped_bytes_never_panic() {
    let data = load(&fixtures().join("hello_nodefaults.mlpd"));
    let mut seed = 0x1234_5678_9abc_def0u64;
    for i in 0..3000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut d = data.clone();
        let pos = 32 + (seed as usize % (d.len() - 32));
        d[pos] = (seed >> 32) as u8;
        if i % 3 == 0 {
            let p2 = 32 + ((seed >> 20) as usize % (d.len() - 32));
            d[p2] = 0xff;
        }
        decode_all(&d);
        if i % 50 == 0 {
            if let Ok(f) = File::parse(&d) {
                let _ = scan(&f);
            }
        }
    }
}

#[test]
fn unknown_event_skips_the_rest_of_its_buffer_only() {
    let mut w = Writer::new(Header {
        major: 3,
        data_version: 17,
        ptrsize: 8,
        ..Header::default()
    });
    let mut b = w.buffer(1, 100);
    b.enter(110, 0x5000);
    b.raw(&[0x6e, 1, 2, 3]); // mono#8463's "unhandled profiler event 0x6e"
    b.finish();
    let mut b = w.buffer(1, 200);
    b.leave(210, 0x5000);
    b.finish();
    let bytes = w.into_bytes();
    let f = File::parse(&bytes).expect("header");
    let r = scan(&f);
    assert_eq!(r.problems.len(), 1);
    assert_eq!(r.problems[0].code, Some(codes::UNKNOWN_EVENT));
    assert!(
        r.problems[0]
            .message
            .starts_with("unknown event byte 0x6e (type 14, exinfo 0x60) for data version 17"),
        "{}",
        r.problems[0]
    );
    assert_eq!(r.skipped_bytes, 3);
    assert_eq!(r.methods.len(), 1);
    assert_eq!(r.leaves, 1, "the next buffer decodes");
    // the message names the buffer, the event and the offset
    assert!(
        r.problems[0]
            .to_string()
            .starts_with("buffer #0, event #1 at offset 0x"),
        "{}",
        r.problems[0]
    );
}

#[test]
fn hostile_counts_do_not_allocate_or_panic() {
    for v in [1u8, 12, 13, 17] {
        let mut w = Writer::new(Header {
            major: Header::major_for(v),
            data_version: v,
            ptrsize: 8,
            ..Header::default()
        });
        let mut b = w.buffer(1, 0);
        // GC_MOVE with 2^63 objects, an alloc backtrace with a huge count, a heap object with huge refs
        b.raw(&[
            0x31, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ]);
        b.finish();
        let mut b = w.buffer(1, 0);
        b.raw(&[0x10, 0x01, 0x00, 0x00, 0x08]);
        if v < 13 {
            b.raw(&[0x00]);
        }
        b.raw(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        b.finish();
        let mut b = w.buffer(1, 0);
        b.raw(&[0x26]);
        if v >= 13 {
            b.raw(&[0x01]);
        }
        b.raw(&[0x00, 0x00, 0x08]);
        if v >= 16 {
            b.raw(&[0x00]);
        }
        b.raw(&[0xff, 0xff, 0xff, 0x7f]);
        b.finish();
        // an 11-byte LEB
        let mut b = w.buffer(1, 0);
        b.raw(&[
            0x23, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00,
        ]);
        b.finish();
        // a string without NUL
        let mut b = w.buffer(1, 0);
        b.raw(&[0x43, 0x01, 0x00, 0x00, 0x10, b'a', b'b']);
        b.finish();
        let bytes = w.into_bytes();
        let f = File::parse(&bytes).expect("header");
        let r = scan(&f);
        assert_eq!(r.problems.len(), 5, "v{v}: {:?}", r.problems);
        assert!(r
            .problems
            .iter()
            .any(|p| p.code == Some(codes::LEB_TOO_LONG)));
        assert!(r
            .problems
            .iter()
            .any(|p| p.code == Some(codes::UNTERMINATED_STRING)));
        assert!(r.problems.iter().any(|p| p.code == Some(codes::BAD_VALUE)));
    }
}

#[test]
fn bad_buffer_magic_resyncs_at_the_next_buffer() {
    let mut w = Writer::new(Header {
        major: 3,
        data_version: 17,
        ptrsize: 8,
        ..Header::default()
    });
    w.raw(b"garbage!");
    let mut b = w.buffer(1, 100);
    b.enter(110, 0x5000);
    b.leave(120, 0x5000);
    b.finish();
    let bytes = w.into_bytes();
    let f = File::parse(&bytes).expect("header");
    let r = scan(&f);
    assert_eq!(r.problems.len(), 1);
    assert_eq!(r.problems[0].code, Some(codes::BAD_BUFFER_MAGIC));
    assert_eq!(r.methods.len(), 1);
}

#[test]
fn bad_headers_are_errors() {
    assert_eq!(
        File::parse(b"").map(|_| ()).unwrap_err().kind(),
        ErrorKind::Truncated
    );
    let e = File::parse(b"\x01ZPX").map(|_| ()).unwrap_err();
    assert_eq!(
        (e.kind(), e.code),
        (ErrorKind::Malformed, Some(codes::HEADER_INVALID))
    );
    let h = Header {
        major: 3,
        data_version: 18,
        ptrsize: 8,
        ..Header::default()
    }
    .encode();
    let e = File::parse(&h).map(|_| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert_eq!(
        e.to_string(),
        "offset 0x6: unsupported data version 18 (profkit reads 1-17)"
    );
    let h = Header {
        major: 3,
        data_version: 17,
        ptrsize: 8,
        args: "x".into(),
        ..Header::default()
    }
    .encode();
    for cut in 0..h.len() {
        assert!(File::parse(&h[..cut]).is_err());
    }
    // a string length past the end
    let mut h = Header {
        major: 1,
        data_version: 13,
        ptrsize: 8,
        ..Header::default()
    }
    .encode();
    let n = h.len();
    h[n - 6..n - 2].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(File::parse(&h).is_err());
}

#[test]
fn major_zero_header_is_32_bytes() {
    for v in [1u8, 4, 8, 11, 12] {
        let h = Header {
            major: 0,
            minor: 4,
            data_version: v,
            ptrsize: 8,
            pid: 7,
            port: 99,
            sysid: 3,
            ..Header::default()
        };
        let b = h.encode();
        assert_eq!(b.len(), 32);
        let p = File::parse(&b).expect("parse").header;
        assert_eq!((p.pid, p.size), (7, 32));
        if v >= 4 {
            assert_eq!((p.port, p.sysid), (99, 3));
        }
    }
}

/// Inputs the `mlpd_read` fuzz target found (and hand-made hostile ones) in
/// `fuzz/regressions/mlpd_read/`: every one goes through what the target does without a panic,
/// and the stream reader and the sequential replay agree with the slice reader.
#[test]
fn fuzz_regressions_stay_fixed() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions/mlpd_read");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("fuzz/regressions/mlpd_read") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read");
        let v = profkit_mlpd::validate::validate_bytes(&bytes);
        // the stream source (gzip, stdin) finds the same, where the file does
        let found = |v: &profkit_common::Validation| -> Vec<_> {
            v.findings
                .iter()
                .map(|f| (f.code, f.severity, f.offset, f.record))
                .collect()
        };
        for capacity in [1, 61] {
            let r = std::io::BufReader::with_capacity(capacity, &bytes[..]);
            let s = profkit_mlpd::validate::validate_stream(r);
            assert_eq!(found(&s), found(&v), "{}", path.display());
        }
        let Ok(f) = File::parse(&bytes) else {
            n += 1;
            continue;
        };
        let mut s = profkit_mlpd::source::StreamBuffers::new(&bytes[..]).expect("header");
        assert_eq!(
            format!("{:?}", profkit_mlpd::summary::summary_of(&mut s)),
            format!("{:?}", profkit_mlpd::summary::summary(&f)),
            "{}",
            path.display()
        );
        let _ = scan(&f);
        let _ = profkit_mlpd::summary::summary(&f);
        let mut out = Vec::new();
        let _ = profkit_mlpd::dump::write_text(&f, &mut out);
        let _ = profkit_mlpd::dump::write_ndjson(&f, &mut out);
        if let Ok(mut r) = StreamReader::new(&bytes[..]) {
            while let Some(b) = r.next_buffer(Vec::new()) {
                let _ = b;
            }
        }
        n += 1;
    }
    assert!(n >= 3, "{n} regression inputs");
}

/// A file cut anywhere past its header, also between two events of a buffer (where every
/// event before the cut decodes cleanly), is reported as truncated by the slice reader and the
/// stream reader; a cut at a buffer boundary leaves a complete (shorter) file.
#[test]
fn every_cut_past_the_header_is_a_truncation() {
    let dir = fixtures().join("synthetic");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("synthetic")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mlpd"))
        .collect();
    files.sort();
    assert!(files.len() >= 9);
    let mut between_events = 0;
    for path in files {
        let data = std::fs::read(&path).expect("read");
        let file = File::parse(&data).expect("header");
        // where the complete buffers end
        let ends: Vec<u64> = file
            .buffers()
            .flatten()
            .filter(|b| !b.truncated)
            .map(|b| b.end())
            .collect();
        let event_ends: Vec<u64> = file
            .buffers()
            .flatten()
            .flat_map(|b| b.events().flatten().map(|e| e.offset + u64::from(e.size)))
            .collect();
        for cut in file.header.size + 1..data.len() {
            let d = &data[..cut];
            let f = File::parse(d).expect("header");
            let boundary = ends.contains(&(cut as u64));
            let t = f.truncation();
            assert_eq!(t.is_some(), !boundary, "{} cut at {cut}", path.display());
            let mut scan = f.buffers();
            for _ in scan.by_ref() {}
            assert_eq!(scan.truncation(), t);
            let mut stream = StreamReader::new(d).expect("header");
            while stream.next_buffer(Vec::new()).is_some() {}
            assert_eq!(stream.truncation(), t, "{} cut at {cut}", path.display());
            // validate reports it as `truncated` (at the incomplete event's start)
            let v = validate(&f);
            let cuts: Vec<_> = v
                .findings
                .iter()
                .filter(|x| x.code == "truncated")
                .collect();
            assert_eq!(
                cuts.len(),
                usize::from(!boundary),
                "{} cut at {cut}",
                path.display()
            );
            assert_eq!(v.truncation.is_some(), !boundary);
            if let (Some(vt), Some(t)) = (&v.truncation, &t) {
                assert!(vt.offset <= t.offset && vt.offset >= file.header.size as u64);
                assert_eq!(vt.record, Some(v.records));
            }
            if let Some(t) = t {
                assert!(t.offset <= cut as u64);
                if event_ends.contains(&(cut as u64)) && !boundary {
                    // between two events: nothing else says the file is cut
                    between_events += 1;
                    assert_eq!(t.offset, cut as u64);
                    let (_, bad) = decode_all(d);
                    assert_eq!(bad, 0, "{} cut at {cut}", path.display());
                }
            }
        }
    }
    assert!(between_events > 100, "{between_events}");
}
