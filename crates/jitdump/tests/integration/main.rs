//! Integration tests of profkit-jitdump: real fixtures, hand-made files, round trips,
//! truncation and hostile input. One test binary (link time matters on 2 cores).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../support/handmade.rs"]
mod handmade;

mod fixtures;
mod follow;
mod hostile;
mod perfmap;
mod roundtrip;
mod summary;
mod truncation;

use std::path::PathBuf;

/// `tests/fixtures/jitdump/<name>` (gzip unwrapped).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/jitdump")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
            .unwrap();
        out
    } else {
        bytes
    }
}

/// The codes of a validation report, sorted and unique.
pub fn codes(report: &profkit_jitdump::Validation) -> Vec<&'static str> {
    let mut c: Vec<_> = report.findings.iter().map(|f| f.code).collect();
    c.sort_unstable();
    c.dedup();
    c
}
