//! Shared helpers: locating the built library, compiling C, reading dumps back.

use std::path::{Path, PathBuf};
use std::process::Command;

use profkit_jitdump::{DebugInfo2Data, JitDump, Record};

/// `target/<profile>/` of this test binary.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Directory holding `libprofkit_jitapi.a` and `.so`.
///
/// `cargo test` builds only the rlib of a library that integration tests use, so unless a
/// `cargo build` already put the C artifacts next to the test binary's profile directory, the
/// tests build them once with cargo into their own target directory (a different one, so the
/// outer `cargo test`'s build lock is not needed).
pub fn artifacts_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let here = profile_dir();
        let fresh = |dir: &Path| {
            let lib = dir.join("libprofkit_jitapi.a");
            let test_exe = std::env::current_exe().unwrap();
            let newer = |p: &Path| {
                let m = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
                matches!((m(p), m(&test_exe)), (Some(a), Some(b)) if a >= b)
            };
            lib.exists() && dir.join("libprofkit_jitapi.so").exists() && newer(&lib)
        };
        if fresh(&here) {
            return here;
        }
        let target = here.parent().unwrap().join("jitapi-c-artifacts");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "-p", "profkit-jitapi", "--lib", "--target-dir"])
            .arg(&target)
            .current_dir(crate_dir())
            .status()
            .expect("run cargo build for the C artifacts");
        assert!(st.success(), "cargo build -p profkit-jitapi failed");
        target.join("debug")
    })
    .clone()
}

pub fn staticlib() -> PathBuf {
    let p = artifacts_dir().join("libprofkit_jitapi.a");
    assert!(p.exists(), "{} not built", p.display());
    p
}

pub fn cdylib() -> PathBuf {
    let p = artifacts_dir().join("libprofkit_jitapi.so");
    assert!(p.exists(), "{} not built", p.display());
    p
}

/// Compiles `sources` into `out` with `cc`, linking `extra` arguments last.
pub fn compile_c(sources: &[&Path], out: &Path, extra: &[&str]) {
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cmd.arg("-O1").arg("-g").arg("-o").arg(out);
    cmd.arg("-I").arg(crate_dir().join("include"));
    cmd.args(sources);
    cmd.args(extra);
    let st = cmd.status().expect("run cc");
    assert!(st.success(), "cc failed: {cmd:?}");
}

/// Compiles the C host `tests/c/<name>.c` into `dir/<name>`, linked to the staticlib.
pub fn c_host(name: &str, dir: &Path) -> PathBuf {
    let exe = dir.join(name);
    let lib = staticlib();
    compile_c(
        &[&crate_dir().join(format!("tests/c/{name}.c"))],
        &exe,
        &[lib.to_str().unwrap(), "-lpthread", "-ldl", "-lm", "-lgcc_s"],
    );
    exe
}

/// One LOAD with what was written before it.
#[derive(Debug, Clone)]
pub struct Load {
    pub tid: u32,
    #[allow(dead_code)]
    pub timestamp: u64,
    pub code_addr: u64,
    pub code_index: u64,
    pub name: String,
    pub code: Vec<u8>,
    /// DEBUG_INFO entries as (addr, line, file).
    pub lines: Vec<(u64, u32, String)>,
    pub di2: Option<DebugInfo2Data>,
}

/// Validates `path` (zero errors) and returns its LOADs in file order.
pub fn read_dump(path: &Path) -> Vec<Load> {
    let bytes = std::fs::read(path).unwrap();
    let report = profkit_jitdump::validate(&bytes);
    let errors: Vec<_> = report.errors().collect();
    assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    let dump = JitDump::parse(&bytes).unwrap();
    let mut loads = Vec::new();
    let mut lines = Vec::new();
    let mut di2 = None;
    for r in dump.records() {
        let r = r.unwrap();
        match r.parse().unwrap() {
            Record::DebugInfo(d) => {
                lines = d
                    .entries()
                    .map(|e| (e.addr, e.line, String::from_utf8_lossy(e.file).into_owned()))
                    .collect();
            }
            Record::DebugInfo2(d) => di2 = Some(DebugInfo2Data::from_record(&d)),
            Record::CodeLoad(l) => loads.push(Load {
                tid: l.tid,
                timestamp: r.timestamp,
                code_addr: l.code_addr,
                code_index: l.code_index,
                name: String::from_utf8_lossy(l.name).into_owned(),
                code: l.code.unwrap_or(&[]).to_vec(),
                lines: std::mem::take(&mut lines),
                di2: di2.take(),
            }),
            _ => {}
        }
    }
    loads
}
