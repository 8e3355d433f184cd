//! What every profkit test binary shares (a dev-dependency, never published):
//!
//! * [`fixture`] and [`root`]: paths of the committed real files (`tests/fixtures/…`);
//!   [`read_fixture_gunzipped`] reads one inflated, [`fixture_named`] finds one by prefix.
//! * [`golden`]: compares an output with a committed golden file; `PROFKIT_BLESS=1` rewrites
//!   the file instead (the one bless switch of the workspace). A mismatch leaves the actual
//!   output beside the test's scratch files and says where.
//! * [`tool`] / [`external`]: an external program a test needs (llvm-xray, perf, mono, clang,
//!   node packages …). When it is missing the test is skipped with a note on stderr — unless
//!   `PROFKIT_REQUIRE_EXTERNAL=1` (CI sets it and installs the tools), where the test fails.
//!   Nothing here changes system settings.
//! * [`Xorshift`]: a seeded pseudo-random sequence for randomized tests (reproducible runs).
#![allow(clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A xorshift64 sequence: the same seed gives the same numbers on every run.
pub struct Xorshift(u64);

impl Xorshift {
    /// A sequence from `seed` (not 0).
    pub fn new(seed: u64) -> Xorshift {
        Xorshift(seed.max(1))
    }

    /// The next number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        let s = &mut self.0;
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        s.checked_rem(n).unwrap_or(0)
    }
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// `tests/fixtures/<rel>` of the workspace.
pub fn fixture(rel: impl AsRef<Path>) -> PathBuf {
    root().join("tests/fixtures").join(rel)
}

/// Reads a fixture (panics with its path when it is missing).
pub fn read_fixture(rel: impl AsRef<Path>) -> Vec<u8> {
    let p = fixture(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Reads a fixture, gunzipped when it is gzip (by its magic, whatever its name).
pub fn read_fixture_gunzipped(rel: impl AsRef<Path>) -> Vec<u8> {
    use std::io::Read;
    let bytes = read_fixture(&rel);
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return bytes;
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{}: {e}", rel.as_ref().display()));
    out
}

/// The name of the first (in sorted order) fixture in `tests/fixtures/<dir>` whose name starts
/// with `prefix` (jitdumps and perf maps carry a pid in their names).
pub fn fixture_named(dir: &str, prefix: &str) -> String {
    let path = fixture(dir);
    let mut names: Vec<String> = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no fixture {dir}/{prefix}*"))
}

/// The files of `tests/fixtures/<dir>` whose extension is `ext`, sorted.
pub fn fixture_files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let path = fixture(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// Whether golden files are being rewritten (`PROFKIT_BLESS=1`).
pub fn blessing() -> bool {
    std::env::var_os("PROFKIT_BLESS").is_some_and(|v| v == "1")
}

/// Whether a missing external tool fails the test (`PROFKIT_REQUIRE_EXTERNAL=1`, set by CI).
pub fn external_required() -> bool {
    std::env::var_os("PROFKIT_REQUIRE_EXTERNAL").is_some_and(|v| v == "1")
}

/// A scratch directory shared by the tests of this run (under the target directory).
pub fn scratch_dir() -> PathBuf {
    let base = std::env::var_os("CARGO_TARGET_TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = base.join("profkit-tests");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Compares `actual` with the golden file `path` (relative paths are from the workspace
/// root); with `PROFKIT_BLESS=1` writes `actual` there instead.
pub fn golden(path: impl AsRef<Path>, actual: &[u8]) {
    let path = root().join(path);
    if blessing() {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run the test with PROFKIT_BLESS=1 to create it)",
            path.display()
        )
    });
    if expected != actual {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dump = scratch_dir().join(format!("{name}.actual"));
        let _ = std::fs::write(&dump, actual);
        panic!(
            "{} differs from the output (actual output in {}; PROFKIT_BLESS=1 accepts it)",
            path.display(),
            dump.display()
        );
    }
}

/// [`golden`] for text.
pub fn golden_str(path: impl AsRef<Path>, actual: &str) {
    golden(path, actual.as_bytes())
}

/// `Some(path)` when `path` exists and `usable` accepts it. Otherwise the test `test` cannot
/// run: under `PROFKIT_REQUIRE_EXTERNAL=1` that is a failure (naming `what` and how to get
/// it); elsewhere a "skipped" note goes to stderr (past the harness's capture) and the answer
/// is `None`.
pub fn external(
    test: &str,
    what: &str,
    path: PathBuf,
    usable: impl FnOnce(&Path) -> bool,
) -> Option<PathBuf> {
    if path.exists() && usable(&path) {
        return Some(path);
    }
    let why = if path.exists() {
        format!("{} is not usable", path.display())
    } else {
        format!("{} missing", path.display())
    };
    missing(test, what, &why)
}

/// The program `name` on `PATH` (see [`external`]); `what` says how to install it.
pub fn tool(test: &str, name: &str, what: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    match found {
        Some(p) => Some(p),
        None => missing(test, what, &format!("`{name}` is not on PATH")),
    }
}

/// Reports a missing tool: a failure under `PROFKIT_REQUIRE_EXTERNAL=1`, else a note.
pub fn missing<T>(test: &str, what: &str, why: &str) -> Option<T> {
    if external_required() {
        panic!("{test}: needs {what}, which is not installed ({why})");
    }
    let _ = writeln!(
        std::io::stderr(),
        "{test}: skipped: needs {what}, which is not installed ({why})"
    );
    None
}

/// Where scripts/ci/install-export-deps.sh and install-export-py.sh put the Python venv
/// (duckdb, wasmtime) and npm packages: `PROFKIT_EXPORT_DEPS`, default `target/export-deps`
/// in the workspace.
pub fn deps_dir() -> PathBuf {
    match std::env::var_os("PROFKIT_EXPORT_DEPS") {
        Some(d) => PathBuf::from(d),
        None => root().join("target/export-deps"),
    }
}

/// Whether `perf record` works on this machine (it needs `perf_event_paranoid` <= 1 or
/// root); `None` with the reason through [`missing`] when it does not. Changes nothing.
///
/// The probe runs once per test process (tests run in parallel threads, and a probe per
/// test raced: one removed the directory another's `perf record` was writing into, which
/// CI saw as a failed probe with an empty message), in a directory of its own.
pub fn perf(test: &str) -> Option<PathBuf> {
    static PROBE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let perf = tool(test, "perf", "perf (linux-perf)")?;
    let probe = PROBE.get_or_init(|| probe_perf_record(&perf));
    match probe {
        Ok(()) => Some(perf),
        Err(why) => missing(
            test,
            "a working `perf record` (root, or kernel.perf_event_paranoid <= 1)",
            why,
        ),
    }
}

/// `perf record` of `true` into a fresh directory; the error is perf's own message. A failure
/// is tried again once, so a machine busy with other tests' recordings is not taken for one
/// that cannot record.
fn probe_perf_record(perf: &Path) -> Result<(), String> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mut why = String::new();
    for _ in 0..2 {
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("profkit-perf-probe-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = std::fs::create_dir(&dir) {
            why = format!("cannot create {}: {e}", dir.display());
            continue;
        }
        let out = Command::new(perf)
            .args(["record", "-k", "1", "-e", "cpu-clock", "-o"])
            .arg(dir.join("probe.data"))
            .arg("true")
            .output();
        let _ = std::fs::remove_dir_all(&dir);
        match out {
            Ok(o) if o.status.success() => return Ok(()),
            Ok(o) => {
                why = format!(
                    "{}: {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                )
            }
            Err(e) => why = format!("cannot run {}: {e}", perf.display()),
        }
    }
    Err(why)
}
