//! The `convert_all` fuzz target's checks (`profkit_export::harness::check_convert`: detection,
//! every driver, every writer, output bounded by the input, the Firefox samples tables profkit
//! writes equal to fxprof's) on the committed real fixtures and
//! on the target's saved inputs, `fuzz/regressions/convert_all/` (each a past finding).

use std::path::{Path, PathBuf};

use profkit_export::harness::check_convert;

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn saved_fuzz_inputs_convert_within_bounds() {
    let dir = root().join("fuzz/regressions/convert_all");
    let inputs = files(&dir);
    assert!(!inputs.is_empty());
    for f in inputs {
        check_convert(&std::fs::read(&f).unwrap());
    }
}

#[test]
fn small_real_fixtures_convert_within_bounds() {
    let fx = root().join("tests/fixtures");
    let mut n = 0;
    for dir in ["xray", "jitdump", "mlpd", "mlpd/synthetic", "perf"] {
        for f in files(&fx.join(dir)) {
            let len = std::fs::metadata(&f).unwrap().len();
            if len <= 256 << 10 {
                check_convert(&std::fs::read(&f).unwrap());
                n += 1;
            }
        }
    }
    assert!(n > 20, "{n} fixtures");
}
