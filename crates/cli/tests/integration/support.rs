//! What the CLI test modules share: running the binary and finding fixtures.

use std::path::PathBuf;

use assert_cmd::Command;

/// `tests/fixtures/<dir>/<name>` as a string argument.
pub fn fixture(dir: &str, name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(dir)
        .join(name)
        .display()
        .to_string()
}

/// The profkit binary, without colour.
pub fn profkit() -> Command {
    let mut c = Command::cargo_bin("profkit").unwrap();
    c.env("NO_COLOR", "1");
    c
}

/// `tests/fixtures/<dir>`.
pub fn fixture_dir(dir: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(dir)
}

fn outcome(mut c: Command) -> (String, String, i32) {
    let o = c.output().unwrap();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

/// Runs profkit: (stdout, stderr, exit code).
pub fn run(args: &[&str]) -> (String, String, i32) {
    let mut c = profkit();
    c.args(args);
    outcome(c)
}

/// Runs profkit in `tests/fixtures/<dir>` (so fixture names are relative).
pub fn run_in(dir: &str, args: &[&str]) -> (String, String, i32) {
    let mut c = profkit();
    c.current_dir(fixture_dir(dir)).args(args);
    outcome(c)
}

/// [`run_in`], asserting success; the standard output.
pub fn ok_in(dir: &str, args: &[&str]) -> String {
    let (out, err, code) = run_in(dir, args);
    assert_eq!(code, 0, "profkit {args:?} failed: {err}");
    out
}
