//! A C host misusing the API (issue #14 items 7-8): one oversized method is rejected before
//! anything is copied and recording goes on; on a full disk the API reports failure instead
//! of success with an empty dump.

use std::path::Path;
use std::process::Command;

use crate::support::{compile_c, crate_dir, read_dump, staticlib};

fn host(dir: &Path) -> std::path::PathBuf {
    let exe = dir.join("misuse");
    compile_c(
        &[&crate_dir().join("tests/c/misuse.c")],
        &exe,
        &[
            staticlib().to_str().unwrap(),
            "-lpthread",
            "-ldl",
            "-lm",
            "-lgcc_s",
        ],
    );
    exe
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
    let exe = host(dir.path());
    let out = Command::new(&exe)
        .arg("huge")
        .env("PROFKIT_JITDUMP_DIR", dir.path())
        .env("PROFKIT_PERFMAP", "0")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n1\n");
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
    let exe = host(dir.path());
    let out = Command::new(&exe)
        .arg("full")
        .env("PROFKIT_JITDUMP_DIR", dir.path())
        .env("PROFKIT_PERFMAP", "0")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n0\n", "{err}");
    assert!(err.contains("profkit-jitapi"), "{err}");
}
