//! A C host misusing the API (issue #14 items 7-8): one oversized method is rejected before
//! anything is copied and recording goes on; on a full disk the API reports failure instead
//! of success with an empty dump.

use std::path::Path;
use std::process::Command;

use crate::support::{c_host, read_dump};

/// Runs the host with `mode` ("huge" or "full"): (stdout, stderr, success).
fn run(mode: &str, dir: &Path) -> (String, String, bool) {
    let out = Command::new(c_host("misuse", dir))
        .arg(mode)
        .env("PROFKIT_JITDUMP_DIR", dir)
        .env("PROFKIT_PERFMAP", "0")
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

fn only_dump(dir: &Path) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "dump"))
        .expect("a jit-PID.dump")
}

#[test]
fn an_oversized_method_is_rejected_and_recording_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (out, err, ok) = run("huge", dir.path());
    assert!(ok, "{err}");
    assert_eq!(out, "0\n1\n");
    assert_eq!(
        err.lines().filter(|l| l.contains("profkit-jitapi")).count(),
        1,
        "{err}"
    );
    let rss: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("rss_kb="))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(rss < 200_000, "nothing of the 4 GiB is copied: {rss} KB");
    let names: Vec<String> = read_dump(&only_dump(dir.path()))
        .into_iter()
        .map(|l| l.name)
        .collect();
    assert_eq!(names, ["after_huge"]);
}

#[test]
fn a_full_disk_is_reported_as_failure() {
    let dir = tempfile::tempdir().unwrap();
    let (out, err, ok) = run("full", dir.path());
    assert!(ok, "{err}");
    assert_eq!(out, "0\n0\n", "{err}");
    assert!(err.contains("profkit-jitapi"), "{err}");
}
