//! mprof-report's sections (profkit_analysis::mono_report) on the real Mono fixtures: parity with
//! mprof-report's committed outputs, its options, traces, streams, malformed input.

mod malformed;
mod options;
mod parity;
mod stream;
mod traces;

use std::path::PathBuf;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mlpd")
}

pub fn mlpd_files() -> Vec<PathBuf> {
    profkit_testkit::fixture_files("mlpd", "mlpd")
}

pub fn load(path: &std::path::Path) -> Vec<u8> {
    let raw = std::fs::read(path).expect("read fixture");
    profkit_mlpd::open::decompress(&raw)
        .expect("gunzip")
        .into_owned()
}

/// The synthetic files of every data version no packaged Mono writes: late binding works for
/// classes too, and the numbers are the ones the writer put there.
#[test]
fn report_on_every_synthetic_version() {
    use profkit_analysis::mono_report::{compute, Options};
    for v in [1u8, 4, 8, 11, 13, 14, 15, 16, 17] {
        let bytes = load(&fixtures().join(format!("synthetic/v{v}.mlpd")));
        let f = profkit_mlpd::File::parse(&bytes).expect("header");
        let r = compute(&f, &Options::default());
        assert!(r.problems.is_empty(), "v{v}: {:?}", r.problems);
        assert_eq!(r.alloc.len(), 1, "v{v}: {:?}", r.alloc);
        assert_eq!(r.alloc[0], ("System.String".to_string(), 56, 2), "v{v}");
        assert_eq!(r.exceptions.0, 2);
        assert_eq!(r.monitor_totals, (1, 1, 1), "v{v}");
        let g = r.calls.iter().find(|(n, _)| n == "A:G ()").expect("A:G");
        assert_eq!((g.1.calls, g.1.total_ns), (1, 10));
        let fcall = r.calls.iter().find(|(n, _)| n == "A:F ()").expect("A:F");
        assert_eq!((fcall.1.total_ns, fcall.1.self_ns), (30, 20));
    }
}
