//! profkit-mlpd's integration tests (one binary): parity with mprof-report's committed outputs,
//! round trips through the writer for every data version, malformed input, and what validate,
//! summary and dump make of the fixtures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod commands;
mod malformed;
mod roundtrip;

use std::path::PathBuf;

/// `tests/fixtures/mlpd` at the workspace root.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mlpd")
}

/// The committed `.mlpd` files (sorted).
pub fn mlpd_files() -> Vec<PathBuf> {
    profkit_testkit::fixture_files("mlpd", "mlpd")
}

/// A fixture's bytes, decompressed.
pub fn load(path: &std::path::Path) -> Vec<u8> {
    let raw = std::fs::read(path).expect("read fixture");
    profkit_mlpd::open::decompress(&raw)
        .expect("gunzip")
        .into_owned()
}
