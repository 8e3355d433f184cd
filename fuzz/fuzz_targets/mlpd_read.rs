//! profkit-mlpd's reader on arbitrary bytes: header, buffers, every event and every lazy list,
//! its validate, summary and dump, then the report (profkit-model's `mono_report`: per-buffer
//! replay and, with traces and tracking, the ordered one) from the slice and from the streaming
//! reader; and the stream source of `info`/`dump`/`validate` (gzip, stdin) through a small
//! buffer must give the summary and validation of the slice. Must never panic or allocate from
//! unchecked counts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use profkit_mlpd::{EventKind, File};
use profkit_analysis::mono_report::{self as report, Find, Options};

fuzz_target!(|data: &[u8]| {
    stream_source_agrees(data);
    // the stream reader sees the same bytes (it must agree with the slice reader's report)
    let streamed = report::compute_stream(data, &Options::default());
    let Ok(file) = File::parse(data) else {
        assert!(streamed.is_err());
        return;
    };
    for b in file.buffers().flatten() {
        for ev in b.events().flatten() {
            match ev.kind {
                EventKind::Alloc { backtrace, .. }
                | EventKind::Throw { backtrace, .. }
                | EventKind::Monitor { backtrace, .. } => {
                    backtrace.count();
                }
                EventKind::GcMove { objects } => {
                    objects.count();
                }
                EventKind::HeapObject { refs, .. } => {
                    refs.count();
                }
                EventKind::HeapRoots { roots, .. } => {
                    roots.count();
                }
                EventKind::SampleHit { ips, frames, .. } => {
                    ips.count();
                    frames.count();
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
    }
    let _ = profkit_mlpd::validate::validate(&file);
    let _ = profkit_mlpd::summary::summary(&file);
    let mut text = Vec::new();
    let _ = profkit_mlpd::dump::write_text(&file, &mut text);
    let _ = profkit_mlpd::dump::write_ndjson(&file, &mut text);
    let r = report::compute(&file, &Options::default());
    if let Ok(s) = &streamed {
        assert_eq!(s.events, r.events);
        assert_eq!(s.calls, r.calls);
        assert_eq!(s.alloc, r.alloc);
    }
    let mut out = Vec::new();
    let _ = report::write_text(&mut out, &r, &report::SECTIONS, true);
    let _ = report::to_json(&r);
    // the sequential replay (traces) and tracking give the same calls
    let full = report::compute(
        &file,
        &Options {
            traces: true,
            find: Some(Find {
                min_size: 1,
                name: None,
            }),
            ..Options::default()
        },
    );
    assert_eq!(full.calls, r.calls);
    let _ = report::write_text(&mut out, &full, &report::SECTIONS, true);
    let _ = report::to_json(&full);
});

/// `summary` and `validate` over the stream source equal those over the bytes.
fn stream_source_agrees(data: &[u8]) {
    let capacity = 1 + usize::from(data.last().copied().unwrap_or(0) % 61);
    let reader = || std::io::BufReader::with_capacity(capacity, data);
    // The same findings, where (a stream's messages may count what it has read, not the
    // file's size).
    let found = |v: &profkit_common::Validation| -> Vec<_> {
        v.findings
            .iter()
            .map(|f| (f.code, f.severity, f.offset, f.record))
            .collect()
    };
    let a = profkit_mlpd::validate::validate_bytes(data);
    let b = profkit_mlpd::validate::validate_stream(reader());
    assert_eq!(found(&a), found(&b));
    if let (Ok(file), Ok(mut s)) = (
        File::parse(data),
        profkit_mlpd::source::StreamBuffers::new(reader()),
    ) {
        let a = profkit_mlpd::summary::summary(&file);
        let b = profkit_mlpd::summary::summary_of(&mut s);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}
