//! Integration tests of profkit-perf: real recordings, truncation, hostile input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod fixtures;
mod hostile;
mod truncation;
mod write;

/// `tests/fixtures/perf/<name>`, gunzipped when it is gzip.
pub fn fixture(name: &str) -> Vec<u8> {
    profkit_testkit::read_fixture_gunzipped(format!("perf/{name}"))
}

/// The committed fixture whose name starts with `prefix` (jitdumps and maps carry the pid).
pub fn fixture_named(prefix: &str) -> String {
    profkit_testkit::fixture_named("perf", prefix)
}

/// perf's own count of `kind` records (`perf report --stats`), from `<name>.stats.txt`.
pub fn perf_count(name: &str, kind: &str) -> Option<u64> {
    let text = String::from_utf8(profkit_testkit::read_fixture(format!(
        "perf/{name}.stats.txt"
    )))
    .unwrap();
    let agg = text.split("stats:\n").nth(1)?;
    agg.lines()
        .take_while(|l| !l.ends_with("stats:"))
        .find_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix(kind)?.strip_prefix(" events:")?;
            rest.split_whitespace().next()?.parse().ok()
        })
}

/// The codes of a validation report, sorted and unique.
pub fn codes(v: &profkit_perf::Validation) -> Vec<&'static str> {
    let mut c: Vec<_> = v.findings.iter().map(|f| f.code).collect();
    c.sort_unstable();
    c.dedup();
    c
}
