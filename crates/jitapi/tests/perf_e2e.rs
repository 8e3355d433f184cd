//! End to end with perf: a JIT program reports three functions, runs under
//! `perf record -k 1`; `perf inject --jit` + `perf report` must name them.

use std::process::Command;

use crate::support::{compile_c, crate_dir, read_dump, staticlib};

#[cfg(target_arch = "x86_64")]
#[test]
fn perf_inject_names_jit_functions() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("jitloop");
    compile_c(
        &[&crate_dir().join("tests/c/jitloop.c")],
        &exe,
        &[
            staticlib().to_str().unwrap(),
            "-lpthread",
            "-ldl",
            "-lm",
            "-lgcc_s",
        ],
    );
    let Some(perf) = profkit_testkit::perf("perf_inject_names_jit_functions") else {
        // The JIT side still has to work without perf.
        let st = Command::new(&exe)
            .current_dir(dir.path())
            .env("PROFKIT_JITDUMP_DIR", dir.path())
            .status()
            .unwrap();
        assert!(st.success());
        return;
    };
    let data = dir.path().join("perf.data");
    let st = Command::new(&perf)
        .args(["record", "-q", "-k", "1", "-e", "cpu-clock", "-o"])
        .arg(&data)
        .arg(&exe)
        .current_dir(dir.path())
        .env("PROFKIT_JITDUMP_DIR", dir.path())
        .env("PERF_BUILDID_DIR", dir.path().join("buildid"))
        .status()
        .unwrap();
    assert!(st.success(), "perf record");
    let dump = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("jit-"))
        .expect("jit-<pid>.dump");
    let loads = read_dump(&dump);
    let names: Vec<_> = loads.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["jitfn_alpha", "jitfn_beta", "jitfn_gamma"]);
    let injected = dir.path().join("perf.jit.data");
    let o = Command::new(&perf)
        .args(["inject", "--jit", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&injected)
        .current_dir(dir.path())
        .env("PERF_BUILDID_DIR", dir.path().join("buildid"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "perf inject: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new(&perf)
        .args(["report", "--stdio", "--sort", "sym", "-i"])
        .arg(&injected)
        .current_dir(dir.path())
        .env("PERF_BUILDID_DIR", dir.path().join("buildid"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "perf report: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    for f in ["jitfn_alpha", "jitfn_beta", "jitfn_gamma"] {
        assert!(
            report.contains(f),
            "{f} missing from perf report:\n{report}"
        );
    }
}
