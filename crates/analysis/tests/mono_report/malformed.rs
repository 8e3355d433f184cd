//! Malformed input: truncation at every offset of a small real file, hostile fields, unknown
//! events and bad magics. Nothing panics; problems carry offsets; the file goes on.

use profkit_analysis::mono_report::{self as report, Options};
use profkit_mlpd::validate::codes;
use profkit_mlpd::write::Writer;
use profkit_mlpd::{File, Header};

use super::{fixtures, load};

/// The report of a file cut inside its buffers (the readers' own cut tests are mlpd's) says
/// only that it is cut.
#[test]
fn truncation_at_every_offset_never_panics() {
    let data = load(&fixtures().join("hello_nodefaults.mlpd"));
    for cut in (997..data.len()).step_by(997) {
        let f = File::parse(&data[..cut]).expect("header");
        let r = report::compute(&f, &Options::default());
        // a cut inside a buffer is reported as a truncation
        assert!(
            r.problems.iter().all(|p| p.is_truncation()),
            "{cut}: {:?}",
            r.problems
        );
    }
}

#[test]
fn truncated_buffer_is_reported_with_its_offset() {
    let data = load(&fixtures().join("hello_calls.mlpd"));
    let cut = data.len() - 3;
    let f = File::parse(&data[..cut]).expect("header");
    let r = report::compute(&f, &Options::default());
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert!(r.problems[0].is_truncation());
    assert!(r.problems[0].offset as usize <= cut);
}

/// The report of a file with flipped bytes never panics (the readers' own flipped-byte test
/// is mlpd's).
#[test]
fn flipped_bytes_never_panic() {
    let data = load(&fixtures().join("hello_nodefaults.mlpd"));
    let mut seed = 0x1234_5678_9abc_def0u64;
    for i in 0..300 {
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
        if let Ok(f) = File::parse(&d) {
            report::compute(&f, &Options::default());
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
    let r = report::compute(&f, &Options::default());
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
    assert_eq!(r.calls.len(), 1);
    assert_eq!(r.calls[0].1.total_ns, 100);
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
        let r = report::compute(&f, &Options::default());
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
    let r = report::compute(&f, &Options::default());
    assert_eq!(r.problems.len(), 1);
    assert_eq!(r.problems[0].code, Some(codes::BAD_BUFFER_MAGIC));
    assert_eq!(r.calls.len(), 1);
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
        let streamed = report::compute_stream(&bytes[..], &Options::default());
        let Ok(f) = File::parse(&bytes) else {
            assert!(streamed.is_err(), "{}", path.display());
            n += 1;
            continue;
        };
        let r = report::compute(&f, &Options::default());
        let full = report::compute(
            &f,
            &Options {
                traces: true,
                track: vec![0x10],
                ..Options::default()
            },
        );
        assert_eq!(r.calls, full.calls, "{}", path.display());
        if let Ok(s) = streamed {
            assert_eq!(
                (s.events, &s.calls),
                (r.events, &r.calls),
                "{}",
                path.display()
            );
        }
        let mut out = Vec::new();
        report::write_text(&mut out, &r, &report::SECTIONS, true).expect("text");
        report::write_text(&mut out, &full, &report::SECTIONS, true).expect("text");
        let _ = report::to_json(&full);
        n += 1;
    }
    assert!(n >= 2, "{n} regression inputs");
}
