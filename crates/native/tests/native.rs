//! profkit-native integration tests (one binary; modules per area). The test programs are
//! built at run time by scripts/fixtures/native.sh (a C compiler and binutils are external
//! tools: without them these tests are skipped, and fail under PROFKIT_REQUIRE_EXTERNAL=1).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::sync::OnceLock;

    /// The directory with the programs of scripts/fixtures/native.sh (built once per run),
    /// or `None` (skipped) when a C compiler, objcopy or bash is missing.
    pub fn programs(test: &str) -> Option<&'static Path> {
        static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
        for (tool, what) in [
            ("cc", "a C compiler (gcc)"),
            ("objcopy", "binutils"),
            ("bash", "bash"),
        ] {
            profkit_testkit::tool(test, tool, what)?;
        }
        BUILT
            .get_or_init(|| {
                let out = profkit_testkit::scratch_dir().join("native-programs");
                let _ = std::fs::remove_dir_all(&out);
                let script = profkit_testkit::root().join("scripts/fixtures/native.sh");
                let o = Command::new("bash")
                    .arg(&script)
                    .arg(&out)
                    .output()
                    .unwrap();
                assert!(
                    o.status.success(),
                    "{}: {}",
                    script.display(),
                    String::from_utf8_lossy(&o.stderr)
                );
                Some(out)
            })
            .as_deref()
    }

    /// Output of a command that must succeed.
    pub fn run(cmd: &mut Command) -> String {
        let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        assert!(
            o.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }
}

#[path = "native/finder.rs"]
mod finder;
#[path = "native/jit.rs"]
mod jit;
#[path = "native/kernel.rs"]
mod kernel;
#[path = "native/malformed.rs"]
mod malformed;
#[path = "native/perf.rs"]
mod perf;
#[path = "native/symbols.rs"]
mod symbols;
