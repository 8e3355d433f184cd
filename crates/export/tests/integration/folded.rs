//! Folded stacks: exclusive time, inclusive time and counts against sums computed from the
//! synthetic call trees; the flame-graph property (a frame's width, the sum of the lines under
//! it, is its inclusive time); golden files; the SVG drawn by inferno (feature `svg`).

use std::collections::BTreeMap;

use profkit_export::folded::FoldedWriter;
use profkit_export::Options;

use crate::synthetic::{self, expected_folded, golden};

fn folded(options: &Options) -> String {
    String::from_utf8(synthetic::run(FoldedWriter::new(Vec::new(), options)).into_inner()).unwrap()
}

fn parse(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .map(|l| {
            let (stack, v) = l.rsplit_once(' ').unwrap();
            (stack.to_string(), v.parse().unwrap())
        })
        .collect()
}

#[test]
fn exclusive_inclusive_counts() {
    let [exclusive, inclusive, counts] = expected_folded();
    let ex = folded(&Options::default());
    assert_eq!(parse(&ex), exclusive);
    assert_eq!(ex.lines().count(), exclusive.len(), "one line per stack");
    let inc = Options {
        inclusive: true,
        ..Options::default()
    };
    assert_eq!(parse(&folded(&inc)), inclusive);
    let cnt = Options {
        counts: true,
        ..Options::default()
    };
    assert_eq!(parse(&folded(&cnt)), counts);
    golden("synthetic.folded", ex.as_bytes());
    golden("synthetic.counts.folded", folded(&cnt).as_bytes());
}

#[test]
fn lines_are_sorted_and_escaped() {
    let text = folded(&Options::default());
    let lines: Vec<&str> = text.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    assert_eq!(lines, sorted);
    // Function 6's name holds `;` and a line break: still one frame on one line (the break
    // escaped as `\n`).
    assert!(text.contains("main;we\"ird:na\\me\\né 499\n"), "{text}");
}

/// In exclusive mode the folded lines make a correct flame graph: the sum of the values of
/// the lines at or under a stack is the inclusive time of the calls with that stack (plus the
/// weight of the samples under it).
#[test]
fn exclusive_lines_sum_to_inclusive_time() {
    let lines = parse(&folded(&Options::default()));
    let [_, inclusive, _] = expected_folded();
    for (stack, total) in &inclusive {
        let under: u64 = lines
            .iter()
            .filter(|(s, _)| *s == stack || s.starts_with(&format!("{stack};")))
            .map(|(_, v)| v)
            .sum();
        // The samples' weights are in `inclusive` at their own stack only; add those under it.
        let samples_below: u64 = synthetic::samples()
            .iter()
            .map(|(_, _, st, w)| {
                let path: Vec<String> = st.iter().map(|&f| synthetic::name(f)).collect();
                (path.join(";"), *w)
            })
            .filter(|(p, _)| p.starts_with(&format!("{stack};")))
            .map(|(_, w)| w)
            .sum();
        assert_eq!(under, total + samples_below, "{stack}");
    }
    // The top-level frames' widths: main = 10000 (thread 0) + 2001 (thread 1).
    let main: u64 = lines
        .iter()
        .filter(|(s, _)| s.split(';').next() == Some("main"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(main, 12_001);
}

#[cfg(feature = "svg")]
#[test]
fn svg_flame_graph() {
    let w = synthetic::run(FoldedWriter::new_svg(Vec::new(), &Options::default()));
    let svg = String::from_utf8(w.into_inner()).unwrap();
    assert!(svg.starts_with("<?xml"), "{}", &svg[..100.min(svg.len())]);
    assert!(svg.contains("<svg"));
    assert!(svg.contains("synthetic trace"), "title");
    // inferno's tooltips hold inclusive times: the root is everything (calls and samples),
    // the top-level `eval` is thread 2's call plus the 4 samples under it. (`main`, 0.01% of
    // the total, is below inferno's minimum width and not drawn.)
    assert!(
        svg.contains("<title>all (123,468,894 ns, 100%)</title>"),
        "{svg}"
    );
    assert!(
        svg.contains("<title>eval (123,456,793 ns, 99.99%)</title>"),
        "{svg}"
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    let counts = Options {
        counts: true,
        title: Some("Calls".into()),
        ..Options::default()
    };
    let svg =
        String::from_utf8(synthetic::run(FoldedWriter::new_svg(Vec::new(), &counts)).into_inner())
            .unwrap();
    assert!(svg.contains("Calls"));
}

#[cfg(not(feature = "svg"))]
#[test]
fn svg_needs_the_feature() {
    let out = synthetic::scratch("nofeature.svg");
    let err = profkit_export::open(
        profkit_export::Format::Svg,
        &profkit_export::Output::path(out),
        &Options::default(),
    )
    .err()
    .unwrap();
    assert!(
        profkit_model::events::CannotShow::of(&err).is_some(),
        "{err}"
    );
}
