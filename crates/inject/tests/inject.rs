//! Integration tests of profkit-inject (one binary):
//!
//! * `cases`: refusals, missing dumps, perf maps, pipe mode, cut and corrupt input;
//! * `elf`: the ELF builder on the committed node jitdump, read back with `object`;
//! * `oracle`: `perf report` on our output against `perf inject --jit`'s (needs perf: skipped
//!   without it unless `PROFKIT_REQUIRE_EXTERNAL=1`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "inject/cases.rs"]
mod cases;
#[path = "inject/elf.rs"]
mod elf;
#[path = "inject/oracle.rs"]
mod oracle;

use std::path::{Path, PathBuf};

/// `tests/fixtures/perf/<name>`, gunzipped when it is gzip.
pub fn fixture(name: &str) -> Vec<u8> {
    profkit_testkit::read_fixture_gunzipped(format!("perf/{name}"))
}

/// The committed fixture whose name starts with `prefix` (jitdumps and maps carry the pid).
pub fn fixture_named(prefix: &str) -> String {
    profkit_testkit::fixture_named("perf", prefix)
}

/// A recording and its jitdump copied into a fresh directory under /tmp, the recording's
/// marker mmap pointing at the copy (perf inject reads the dump at the marker's path and
/// writes its ELFs beside it). Returns the directory (removed on drop) and the recording's
/// path.
pub fn stage(data: &str, dump_prefix: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("pkinj")
        .tempdir_in("/tmp")
        .unwrap();
    let dump_name = fixture_named(dump_prefix);
    let pid = dump_name
        .trim_start_matches(dump_prefix)
        .trim_end_matches(".dump.gz")
        .to_string();
    let file = format!("jit-{pid}.dump");
    std::fs::write(dir.path().join(&file), fixture(&dump_name)).unwrap();
    let mut bytes = fixture(data);
    let old = format!("/tmp/profkit-fixtures-perf/node/{file}");
    let new = dir.path().join(&file).display().to_string();
    assert!(new.len() <= old.len(), "{new} is longer than {old}");
    let at = find(&bytes, old.as_bytes()).expect("the marker path is in the recording");
    let mut patch = new.into_bytes();
    patch.resize(old.len(), 0);
    bytes[at..at + old.len()].copy_from_slice(&patch);
    let path = dir.path().join("perf.data");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Files in `dir` whose names start with `prefix`.
pub fn count_files(dir: &Path, prefix: &str) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with(prefix))
            })
            .count()
        })
        .unwrap_or(0)
}
