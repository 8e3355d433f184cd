//! After fork the child writes its own jit-<childpid>.dump and never the parent's records.

use std::process::Command;

use crate::support::{c_host, read_dump};

#[test]
fn child_writes_its_own_dump() {
    let dir = tempfile::tempdir().unwrap();
    let exe = c_host("fork", dir.path());
    let out = Command::new(&exe)
        .env("PROFKIT_JITDUMP_DIR", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let child: u32 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let names = |pid: u32| -> Vec<String> {
        read_dump(&dir.path().join(format!("jit-{pid}.dump")))
            .into_iter()
            .map(|l| l.name)
            .collect()
    };
    let parent_pid = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            n.strip_prefix("jit-")?
                .strip_suffix(".dump")?
                .parse::<u32>()
                .ok()
        })
        .find(|&p| p != child)
        .expect("parent dump");
    assert_eq!(names(child), ["in_child"]);
    assert_eq!(names(parent_pid), ["before_fork", "in_parent"]);
}
