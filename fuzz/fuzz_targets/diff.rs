#![no_main]
//! `diff` across kinds: the input cut in two (at a point its first two bytes give), each half
//! detected and read into stacks as `profkit diff` does, the rows written for every key as
//! text, CSV and JSON, and the differential folded lines and SVG; outputs bounded by the input's size
//! (`check_diff`).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    check_diff(data);
});

/// `diff` across kinds on any bytes (the `diff` fuzz target): the input cut in two at a point
/// its first two bytes give, each half detected and fed into a `StackSink` as `profkit diff`
/// does, then the per-function rows (every key) written as text, CSV and JSON and the
/// differential folded lines; every output bounded by the inputs' size.
fn check_diff(data: &[u8]) {
    use profkit_analysis::diff::{self, DiffKey, DiffReport, DiffUnit};
    use profkit_model::stack::{StackSink, Value};
    let Some((&[hi, lo], rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let cut = (usize::from(hi) << 8 | usize::from(lo)).min(rest.len());
    let (a, b) = rest.split_at(cut);
    let stacks = |bytes: &[u8]| -> Option<StackSink> {
        let source = profkit_export::harness::source(profkit_model::detect::detect(bytes)?, bytes)?;
        let mut sink = StackSink::new();
        source
            .feed("fuzz", Some(profkit_model::replay::pipeline::Workers::SEQUENTIAL), None, &mut sink)
            .ok()?;
        Some(sink)
    };
    let (Some(a), Some(b)) = (stacks(a), stacks(b)) else {
        return;
    };
    let limit = profkit_export::harness::output_limit(data.len());
    let ident = |v: u64| v;
    let (ta, tb) = (
        diff::totals(a.tree(), &a.functions, &ident),
        diff::totals(b.tree(), &b.functions, &ident),
    );
    for key in [DiffKey::SelfTime, DiffKey::Total, DiffKey::Calls] {
        let rows = diff::rows(ta.clone(), tb.clone(), key);
        let report = DiffReport {
            a: "a",
            b: "b",
            rows: &rows,
            functions: rows.len(),
            key,
            unit: DiffUnit::Weight,
            truncated: [None, None],
        };
        for write in [diff::write_text, diff::write_csv, diff::write_json] {
            let mut out = profkit_export::harness::Counting::default();
            let _ = write(&mut out, &report);
            assert!(out.bytes <= limit, "diff output {} over {limit}", out.bytes);
        }
    }
    let lines = |s: &StackSink| {
        s.tree()
            .folded_lines(&s.functions, Value::Exclusive, None, &|v| v)
    };
    for normalize in [false, true] {
        let merged = profkit_export::folded::differential(&lines(&a), &lines(&b), normalize);
        let bytes: usize = merged.iter().map(|l| l.len() + 1).sum();
        assert!(
            bytes as u64 <= limit,
            "differential lines {bytes} over {limit}"
        );
        // The differential flame graph (its bound of frames is counted from the sorted lines).
        let mut svg = profkit_export::harness::Counting::default();
        let _ = profkit_export::folded::write_differential_svg(&mut svg, &merged, "a → b", "samples");
    }
}

