//! Intel's official static stub (built by the `ittapi-sys` crate) loading our cdylib through
//! `INTEL_JIT_PROFILER64`, with 8 reporting threads.

use std::path::PathBuf;

// ittapi-sys is a dev-dependency only for its build script's libittnotify.a; its Rust side is
// not linked here (its iJIT_* symbols would clash with ours).

use crate::c_threads::run_and_check;
use crate::support::{cdylib, compile_c, crate_dir, profile_dir};

/// `libittnotify.a` as ittapi-sys's build script left it.
fn ittnotify_archive() -> PathBuf {
    let build = profile_dir().join("build");
    std::fs::read_dir(&build)
        .unwrap()
        .map(|e| e.unwrap().path().join("out/libittnotify.a"))
        .find(|p| p.exists())
        .expect("ittapi-sys built libittnotify.a")
}

/// Intel's `jitprofiling.h` from the ittapi-sys sources, if the registry copy is found.
fn intel_include() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = home.join("registry/src");
    for reg in std::fs::read_dir(src).ok()? {
        let p = reg.ok()?.path().join("ittapi-sys-0.5.0/c-library/include");
        if p.join("jitprofiling.h").exists() {
            return Some(p);
        }
    }
    None
}

#[test]
fn intel_stub_loads_our_collector() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("stub_threads");
    let include = intel_include().unwrap_or_else(|| crate_dir().join("include"));
    let include_arg = format!("-I{}", include.display());
    compile_c(
        &[&crate_dir().join("tests/c/threads.c")],
        &exe,
        &[
            "-DUSE_INTEL_STUB",
            &include_arg,
            ittnotify_archive().to_str().unwrap(),
            "-lpthread",
            "-ldl",
        ],
    );
    let lib = cdylib();
    run_and_check(
        &exe,
        &dir,
        &[("INTEL_JIT_PROFILER64", lib.to_str().unwrap())],
    );
}
