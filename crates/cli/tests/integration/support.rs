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

/// Runs profkit: (stdout, stderr, exit code).
pub fn run(args: &[&str]) -> (String, String, i32) {
    let o = profkit().args(args).output().unwrap();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}
