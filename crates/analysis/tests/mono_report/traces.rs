//! `--traces` parity with mprof-report 6.8 (`NAME.traces.txt`): the same backtraces with the
//! same counts under each entry. mprof-report prints backtraces of equal count in hash order;
//! profkit sorts them by frames, so blocks are compared as multisets (and profkit's must be in
//! descending count order).

use std::collections::BTreeMap;

use profkit_analysis::mono_report::{self as report, Options, Report};
use profkit_mlpd::File;

use super::{load, mlpd_files};

/// A backtrace block: (count, what, frames); heap-shot reference lines have count 0.
type Block = (u64, String, Vec<String>);

/// An entry: its line as printed (the call section without its Total column, which profkit
/// corrects for recursion) and its blocks.
type Entry = (String, Vec<Block>);

/// Text → (section, entry name) → entry.
pub fn blocks(text: &str) -> BTreeMap<(String, String), Entry> {
    let mut out: BTreeMap<(String, String), Entry> = BTreeMap::new();
    let mut section = String::new();
    let mut key = (String::new(), String::new());
    let mut lines = text.lines().peekable();
    let is_num = |w: &str| w.parse::<f64>().is_ok();
    while let Some(line) = lines.next() {
        if line.is_empty() || line.starts_with("unmatched leave") {
            continue;
        }
        if !line.starts_with('\t') && !line.starts_with(' ') && !line.starts_with(char::is_numeric)
        {
            section = line.to_string();
            continue;
        }
        let t = line.trim_start_matches('\t');
        let depth = line.len() - t.len();
        if let Some(rest) = t.strip_prefix("Heap shot ") {
            section = format!("Heap shot {}", rest.split(' ').next().unwrap_or(""));
            continue;
        }
        if depth == 1 && t.ends_with(" from:") && t.split(' ').next().is_some_and(is_num) {
            let mut it = t.splitn(2, ' ');
            let n: u64 = it.next().unwrap_or("0").parse().unwrap_or(0);
            let what = it
                .next()
                .unwrap_or("")
                .trim_end_matches(" from:")
                .to_string();
            let mut frames = Vec::new();
            while let Some(l) = lines.peek() {
                if l.starts_with("\t\t") && !l.trim_start().starts_with(char::is_numeric) {
                    frames.push(l.trim_start_matches('\t').to_string());
                    lines.next();
                } else {
                    break;
                }
            }
            out.entry(key.clone())
                .or_default()
                .1
                .push((n, what, frames));
            continue;
        }
        if depth == 2 {
            // heap shot lines under a class: root and reverse references
            out.entry(key.clone())
                .or_default()
                .1
                .push((0, t.to_string(), Vec::new()));
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        let name_at = words.iter().position(|w| !is_num(w)).unwrap_or(0);
        let mut name = words[name_at..].join(" ");
        if let Some(i) = name.find(" (bytes: ") {
            name.truncate(i);
        }
        let shown = if section == "Method call summary" {
            words.get(1..).unwrap_or(&[]).join(" ")
        } else {
            words.join(" ")
        };
        key = (section.clone(), name);
        out.entry(key.clone()).or_default().0 = shown;
    }
    out
}

fn compute(path: &std::path::Path, traces: bool) -> Report {
    let data = load(path);
    let file = File::parse(&data).expect("header");
    report::compute(
        &file,
        &Options {
            parallel: true,
            traces,
            ..Options::default()
        },
    )
}

fn text(r: &Report) -> String {
    let mut v = Vec::new();
    let sections: Vec<&str> = report::SECTIONS
        .iter()
        .copied()
        .filter(|&s| s != "stats")
        .collect();
    report::write_text(&mut v, r, &sections, false).expect("write");
    String::from_utf8(v).expect("utf8")
}

/// Every entry both reports print with the same numbers has the same backtraces (entries
/// whose numbers differ are mprof-report's documented errors: late-bound classes, pinned
/// handles, recursion in Total, heap-shot ties at the top-30 cut).
#[test]
fn traces_match_mprof_report() {
    let mut checked = 0;
    for f in mlpd_files() {
        let Ok(golden) = std::fs::read_to_string(f.with_extension("traces.txt")) else {
            continue;
        };
        let ours = text(&compute(&f, true));
        let (g, o) = (blocks(&golden), blocks(&ours));
        let (mut same, mut all) = (0, 0);
        for (k, (line, gb)) in &g {
            if gb.is_empty() {
                continue;
            }
            all += 1;
            let Some((oline, ob)) = o.get(k) else {
                continue;
            };
            // late binding: mprof-report names some referencing classes "unresolved"
            let unresolved = gb.iter().any(|b| b.1.contains("unresolved class"));
            if line != oline || unresolved {
                continue;
            }
            let mut a = gb.clone();
            if k.0 == "Monitor lock summary" {
                // mprof-report bug 6.4.5: without backtraces in the events it counts each
                // contention twice (CONTENTION and DONE); profkit counts it once
                for blk in &mut a {
                    if let Some(mine) = ob.iter().find(|x| x.2 == blk.2 && x.0 > 0) {
                        if mine.0 * 2 == blk.0 {
                            blk.0 = mine.0;
                        }
                    }
                }
            }
            let mut b = ob.clone();
            a.sort();
            b.sort();
            assert_eq!(a, b, "{}: {k:?}", f.display());
            same += 1;
        }
        // profkit's blocks come in descending order of count
        for (k, (_, ob)) in &o {
            for what in [
                "calls",
                "bytes",
                "throws",
                "contentions",
                "created",
                "destroyed",
            ] {
                let counts: Vec<u64> = ob.iter().filter(|b| b.1 == what).map(|b| b.0).collect();
                assert!(
                    counts.windows(2).all(|w| w[0] >= w[1]),
                    "{}: {k:?} order",
                    f.display()
                );
            }
        }
        assert!(
            same * 10 >= all * 8,
            "{}: only {same} of {all} entries compared",
            f.display()
        );
        checked += same;
    }
    assert!(checked > 300, "compared {checked} entries");
}

/// Traces do not change the numbers: the sequential replay they force (every call through the
/// stitcher) gives the same report as the per-buffer replay.
#[test]
fn traces_do_not_change_the_numbers() {
    for f in mlpd_files() {
        let a = compute(&f, false);
        let mut b = compute(&f, true);
        b.traces = None;
        assert_eq!(text(&a), text(&b), "{}", f.display());
        assert_eq!(a.unmatched_leaves, b.unmatched_leaves);
        assert_eq!(a.unfinished, b.unfinished);
    }
}
