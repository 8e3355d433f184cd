//! Inputs that once made a fuzz target fail (`fuzz/regressions/xray_read/`,
//! `fuzz/regressions/xray_yaml/`, `fuzz/regressions/xray_profile/`,
//! `fuzz/regressions/instr_map/`) run through the same
//! checks as the targets
//! (`profkit_xray::harness`).

use std::path::PathBuf;
use std::time::Instant;

/// A target's checks.
type Check = fn(&[u8]);

#[test]
fn fuzz_regressions_stay_fixed() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let targets: [(&str, Check); 4] = [
        ("xray_read", profkit_xray::harness::check_read),
        ("xray_yaml", profkit_xray::harness::check_yaml),
        ("xray_profile", profkit_xray::harness::check_profile),
        ("instr_map", profkit_xray::harness::check_instr_map),
    ];
    let mut n = 0;
    for (target, check) in targets {
        let Ok(dir) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        for entry in dir {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let start = Instant::now();
            check(&bytes);
            assert!(
                start.elapsed().as_secs() < 5,
                "{target}/{name} is slow again"
            );
            n += 1;
        }
    }
    assert!(n >= 1, "regression inputs found: {n}");
}

/// The instrumentation-map target's checks on the real instrumented binaries.
#[test]
fn instr_map_checks_hold_on_real_binaries() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/xray");
    for bin in [
        "demo",
        "nodebug",
        "libdso.so",
        "dso-main",
        "sled-v1-pie",
        "lz4run",
    ] {
        profkit_xray::harness::check_instr_map(&std::fs::read(dir.join(bin)).unwrap());
    }
}
