//! `profkit record`, live: each runtime recorded with no flag of the user's (profkit sets the
//! runtime's JIT switch), the workload's own JIT functions named by `convert DIR`, and the
//! perf.data read by unmodified `perf script`; node in its own pid and mount namespaces with
//! a private tmpfs /tmp; and the bad conditions (command not found, a crash, Ctrl-C, a full
//! disk) give clear errors and keep what was recorded.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{fixture_dir, profkit};

/// Whether this machine lets profkit sample (perf_event_paranoid and privileges): the same
/// probe as the perf tests' (`perf record` of `true`).
fn can_sample(test: &str) -> bool {
    profkit_testkit::perf(test).is_some()
}

/// A fresh directory holding `scripts/fixtures/<script>`.
fn workdir(script: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture_dir("../../scripts/fixtures").join(script);
    std::fs::copy(&src, dir.path().join(src.file_name().unwrap())).unwrap();
    dir
}

/// `profkit record -d DIR -- program args` in `cwd`.
fn record(cwd: &Path, dir: &Path, program: &Path, args: &[&str]) -> Output {
    profkit()
        .args(["record", "-q", "-d"])
        .arg(dir)
        .arg("--")
        .arg(program)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// Removes the files the recorded processes left in /tmp (the kept copies are in the
/// recording).
fn clean_tmp(m: &serde_json::Value) {
    for f in m["jit_files"].as_array().into_iter().flatten() {
        let recorded = PathBuf::from(f["recorded"].as_str().unwrap_or(""));
        if recorded.starts_with("/tmp") && f.get("ns_pid").is_none() {
            let _ = std::fs::remove_file(recorded);
        }
    }
}

/// The frame names of `convert DIR -o x.folded`.
fn frames(dir: &Path) -> BTreeSet<String> {
    let out = dir.with_extension("folded");
    let o = profkit()
        .arg("convert")
        .arg(dir)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .flat_map(|(stack, _)| stack.split(';').map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// `perf script` reads the recording's perf.data and shows `samples` samples.
fn perf_reads(test: &str, dir: &Path, samples: u64) {
    let Some(perf) = profkit_testkit::tool(test, "perf", "perf (linux-perf)") else {
        return;
    };
    let o = Command::new(perf)
        .args(["script", "-F", "comm,pid,tid,time,event", "-i"])
        .arg(dir.join("perf.data"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "perf script: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines = String::from_utf8_lossy(&o.stdout).lines().count() as u64;
    assert_eq!(
        lines, samples,
        "perf script shows every sample profkit counted"
    );
}

/// What one runtime's live test records and expects.
struct Case<'a> {
    test: &'a str,
    /// `scripts/fixtures/<script>`, copied into the working directory.
    script: &'a str,
    /// A compiler run on the script first (`javac`, `erlc`).
    compile: Option<&'a Path>,
    program: &'a Path,
    args: &'a [&'a str],
    /// The runtime profkit must recognise.
    runtime: &'a str,
    /// The kind of JIT file it must keep (`jitdump`, `perf-map`).
    kind: &'a str,
    /// Frame names `convert` must show (substrings).
    names: &'a [&'a str],
}

/// Records the case's program (its JIT switch set by profkit alone) and checks that the
/// runtime was recognised, its JIT file kept, its names named by `convert`, nothing lost, and
/// that perf reads the file.
fn check(c: &Case<'_>) {
    let cwd = workdir(c.script);
    if let Some(compiler) = c.compile {
        let file = Path::new(c.script).file_name().unwrap();
        let o = Command::new(compiler)
            .arg(file)
            .current_dir(cwd.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}: {}",
            c.test,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let dir = cwd.path().join("rec");
    let o = record(cwd.path(), &dir, c.program, c.args);
    assert!(
        o.status.success(),
        "{}: {}",
        c.test,
        String::from_utf8_lossy(&o.stderr)
    );
    let m = manifest(&dir);
    clean_tmp(&m);
    assert!(
        m["runtimes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == c.runtime),
        "{}: {m}",
        c.test
    );
    assert!(
        m["jit_files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == c.kind),
        "{}: no {} kept: {m}",
        c.test,
        c.kind
    );
    assert_eq!(m["lost"], 0, "{}: {m}", c.test);
    let samples = m["samples"].as_u64().unwrap();
    assert!(samples > 100, "{}: {samples} samples", c.test);
    let frames = frames(&dir);
    for name in c.names {
        assert!(
            frames.iter().any(|f| f.contains(name)),
            "{}: no frame names {name}: {:?}",
            c.test,
            frames.iter().take(40).collect::<Vec<_>>()
        );
    }
    perf_reads(c.test, &dir, samples);
}

#[test]
fn node_is_named_with_no_flag() {
    let test = "record::node_is_named_with_no_flag";
    let Some(node) = profkit_testkit::tool(test, "node", "Node.js") else {
        return;
    };
    if !can_sample(test) {
        return;
    }
    check(&Case {
        test,
        script: "node/busy.js",
        compile: None,
        program: &node,
        args: &["busy.js", "800"],
        runtime: "node",
        kind: "jitdump",
        names: &["fib", "work"],
    });
}

#[test]
fn openjdk_is_named_with_no_flag() {
    let test = "record::openjdk_is_named_with_no_flag";
    let (Some(java), Some(javac)) = (
        profkit_testkit::tool(test, "java", "OpenJDK (default-jdk-headless)"),
        profkit_testkit::tool(test, "javac", "OpenJDK (default-jdk-headless)"),
    ) else {
        return;
    };
    if !can_sample(test) {
        return;
    }
    check(&Case {
        test,
        script: "java/Busy.java",
        compile: Some(&javac),
        program: &java,
        args: &["-cp", ".", "Busy", "1500"],
        runtime: "openjdk",
        kind: "perf-map",
        names: &["Busy."],
    });
}

#[test]
fn erlang_is_named_with_no_flag() {
    let test = "record::erlang_is_named_with_no_flag";
    let (Some(erl), Some(erlc)) = (
        profkit_testkit::tool(test, "erl", "Erlang/OTP (erlang-base)"),
        profkit_testkit::tool(test, "erlc", "Erlang/OTP (erlang-base)"),
    ) else {
        return;
    };
    if !can_sample(test) {
        return;
    }
    check(&Case {
        test,
        script: "erlang/busy.erl",
        compile: Some(&erlc),
        program: &erl,
        args: &["-noshell", "-s", "busy", "main", "1500"],
        runtime: "erlang",
        kind: "jitdump",
        names: &["busy:"],
    });
}

#[test]
fn mono_is_named_with_no_flag() {
    let test = "record::mono_is_named_with_no_flag";
    let (Some(mono), Some(mcs)) = (
        profkit_testkit::tool(test, "mono", "Mono (mono-runtime mono-devel)"),
        profkit_testkit::tool(test, "mcs", "Mono (mono-runtime mono-devel)"),
    ) else {
        return;
    };
    if !can_sample(test) {
        return;
    }
    // Debian 12's Mono 6.8 refuses --jitdump: profkit asks it and sets --jitmap
    check(&Case {
        test,
        script: "mono/Busy.cs",
        compile: Some(&mcs),
        program: &mono,
        args: &["Busy.exe", "38", "3"],
        runtime: "mono",
        kind: "perf-map",
        names: &["Busy:Fib"],
    });
}

#[test]
fn php_jit_is_named_when_the_user_enabled_it() {
    let test = "record::php_jit_is_named_when_the_user_enabled_it";
    let Some(php) = profkit_testkit::tool(test, "php", "PHP (php-cli php-opcache)") else {
        return;
    };
    if !can_sample(test) {
        return;
    }
    // The user turns the JIT on (as they would); profkit adds only its jitdump switch.
    let args = [
        "-d",
        "opcache.file_update_protection=0",
        "-d",
        "opcache.enable_cli=1",
        "-d",
        "opcache.jit=1205",
        "-d",
        "opcache.jit_buffer_size=32M",
        "busy.php",
        "800",
    ];
    check(&Case {
        test,
        script: "php/busy.php",
        compile: None,
        program: &php,
        args: &args,
        runtime: "php",
        kind: "jitdump",
        names: &["fib"],
    });
}

#[test]
fn wasmtime_through_the_jit_profiling_api() {
    let test = "record::wasmtime_through_the_jit_profiling_api";
    let python = profkit_testkit::deps_dir().join("venv/bin/python");
    let Some(python) = profkit_testkit::external(
        test,
        "Python with wasmtime (scripts/ci/install-export-py.sh)",
        python,
        |p| {
            Command::new(p)
                .args(["-c", "import wasmtime"])
                .output()
                .is_ok_and(|o| o.status.success())
        },
    ) else {
        return;
    };
    if !can_sample(test) {
        return;
    }
    let collector = jitapi_collector();
    let cwd = workdir("wasmtime/fib.py");
    let script = std::fs::read_to_string(cwd.path().join("fib.py")).unwrap();
    // wasmtime reports its code to VTune's API: profkit's collector turns that into a jitdump
    std::fs::write(
        cwd.path().join("fib.py"),
        script.replace(
            "config.profiler = \"jitdump\"",
            "config.profiler = \"vtune\"",
        ),
    )
    .unwrap();
    let dir = cwd.path().join("rec");
    let o = profkit()
        .args(["record", "-q", "-d"])
        .arg(&dir)
        .arg("--")
        .arg(&python)
        .args(["fib.py", "1500"])
        .env("PROFKIT_JITAPI_LIB", &collector)
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = manifest(&dir);
    assert!(
        m["jit_files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "jitdump"),
        "{m}"
    );
    let frames = frames(&dir);
    assert!(frames.iter().any(|f| f.contains("fib")), "{frames:?}");
}

/// profkit's JIT Profiling API collector: beside the profkit binary after a `cargo build`,
/// else built once into its own target directory (`cargo test` builds only the rlib, and the
/// outer `cargo test` holds the build lock of the workspace's target directory) — the
/// directory profkit-jitapi's own tests use.
fn jitapi_collector() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_profkit"));
    let beside = exe.with_file_name("libprofkit_jitapi.so");
    if beside.is_file() {
        return beside;
    }
    let target = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("jitapi-c-artifacts");
    let status = Command::new(env!("CARGO"))
        .args(["build", "-p", "profkit-jitapi", "--lib", "--target-dir"])
        .arg(&target)
        .status()
        .unwrap();
    assert!(status.success(), "cargo build -p profkit-jitapi");
    target.join("debug/libprofkit_jitapi.so")
}

#[test]
fn node_in_a_container_with_a_private_tmp() {
    let test = "record::node_in_a_container_with_a_private_tmp";
    let (Some(node), Some(unshare)) = (
        profkit_testkit::tool(test, "node", "Node.js"),
        profkit_testkit::tool(test, "unshare", "util-linux"),
    ) else {
        return;
    };
    if !can_sample(test) {
        return;
    }
    let cwd = workdir("node/busy.js");
    let dir = cwd.path().join("rec");
    // node writes jit-<its namespace pid>.dump in its private /tmp, gone with the namespace
    // (the script is read before the tmpfs hides the test's own directory under /tmp)
    let inner = format!(
        "s=$(cat {}/busy.js) && mount -t tmpfs none /tmp && printf '%s' \"$s\" > /tmp/busy.js && cd /tmp && {} busy.js 800",
        cwd.path().display(),
        node.display()
    );
    let o = record(
        cwd.path(),
        &dir,
        &unshare,
        &["-p", "-f", "-m", "--mount-proc", "sh", "-c", &inner],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = manifest(&dir);
    let kept = m["jit_files"].as_array().unwrap();
    assert!(
        kept.iter()
            .any(|f| f["kind"] == "jitdump" && f.get("ns_pid").is_some()),
        "{m}"
    );
    let frames = frames(&dir);
    assert!(frames.iter().any(|f| f.contains("fib")), "{frames:?}");
}

#[test]
fn bad_conditions_say_what_and_keep_the_recording() {
    let test = "record::bad_conditions_say_what_and_keep_the_recording";
    if !can_sample(test) {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    // a command that does not exist: an error, exit 2, nothing half-written
    let dir = cwd.path().join("none");
    let o = record(cwd.path(), &dir, Path::new("no-such-command-profkit"), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("command not found"),
        "{o:?}"
    );
    // a command that crashes: its status is profkit's, the recording is kept
    let dir = cwd.path().join("crash");
    let o = record(cwd.path(), &dir, Path::new("sh"), &["-c", "kill -SEGV $$"]);
    assert_eq!(o.status.code(), Some(128 + 11), "{o:?}");
    assert_eq!(manifest(&dir)["exit_status"], 128 + 11);
    assert!(dir.join("perf.data").is_file());
    // an exit status passes through
    let dir = cwd.path().join("status");
    let o = record(cwd.path(), &dir, Path::new("sh"), &["-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{o:?}");
    // a directory that is not a recording is refused, untouched
    let other = cwd.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("mine.txt"), "keep").unwrap();
    let o = record(cwd.path(), &other, Path::new("true"), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a profkit recording"));
    assert_eq!(
        std::fs::read_to_string(other.join("mine.txt")).unwrap(),
        "keep"
    );
    // a second recording moves the first to DIR.old
    let o = record(cwd.path(), &dir, Path::new("true"), &[]);
    assert!(o.status.success());
    assert!(cwd.path().join("status.old/manifest.json").is_file());
}

#[test]
fn ctrl_c_stops_the_command_and_keeps_everything() {
    let test = "record::ctrl_c_stops_the_command_and_keeps_everything";
    if !can_sample(test) {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let dir = cwd.path().join("rec");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_profkit"));
    cmd.args(["record", "-q", "-d"])
        .arg(&dir)
        .args(["--", "sh", "-c", "while :; do :; done"]);
    // As from a terminal: a harness started in the background of a script (`cmd &`) ignores
    // SIGINT, the command would inherit that and outlive the Ctrl-C passed on to it.
    // SAFETY: pre_exec runs signal(2), async-signal-safe, in the child before exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 2), "{status:?}");
    let m = manifest(&dir);
    assert!(m["samples"].as_u64().unwrap() > 100, "{m}");
}

#[test]
fn a_full_disk_is_an_error_naming_the_file() {
    let test = "record::a_full_disk_is_an_error_naming_the_file";
    // SAFETY: geteuid has no preconditions.
    if !can_sample(test) || unsafe { libc::geteuid() } != 0 {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let mnt = cwd.path().join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "none"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        profkit_testkit::missing::<()>(test, "a tmpfs mount (root)", "mount failed");
        return;
    }
    let dir = mnt.join("rec");
    let o = record(
        cwd.path(),
        &dir,
        Path::new("sh"),
        &["-c", "i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done"],
    );
    let _ = Command::new("umount").arg(&mnt).status();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    // the file that did not fit is named (perf.data, or a copy after it: kallsyms, a dump)
    assert!(
        err.contains("No space left") && err.contains(&*dir.to_string_lossy()),
        "{err}"
    );
}

#[test]
fn attach_to_a_running_process_until_ctrl_c() {
    let test = "record::attach_to_a_running_process_until_ctrl_c";
    if !can_sample(test) {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let mut busy = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let dir = cwd.path().join("rec");
    // 4 kHz: a sample must land in a PLT stub (a few instructions dash calls through per loop);
    // at the default 999 Hz, 1.5 s had none in about one run of five.
    let mut rec = Command::new(env!("CARGO_BIN_EXE_profkit"))
        .args(["record", "-q", "-F", "4000", "-d"])
        .arg(&dir)
        .args(["-p", &busy.id().to_string()])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    let status = rec.wait().unwrap();
    let _ = busy.kill();
    let _ = busy.wait();
    assert!(status.success(), "{status:?}");
    let m = manifest(&dir);
    assert_eq!(m["attached"], busy.id());
    assert!(m["samples"].as_u64().unwrap() > 100, "{m}");
    // the process's mappings were synthesized: its samples are named by its binaries
    // (Debian's sh is dash, stripped: `dash+0x…`; libc's functions by name)
    let frames = frames(&dir);
    assert!(
        frames
            .iter()
            .any(|f| f.starts_with("dash+") || f.starts_with("bash")),
        "{frames:?}"
    );
    assert!(frames.iter().any(|f| f.ends_with("@plt")), "{frames:?}");
}

#[test]
fn dwarf_call_chains_unwind_through_node_jit_code() {
    let test = "record::dwarf_call_chains_unwind_through_node_jit_code";
    let Some(node) = profkit_testkit::tool(test, "node", "Node.js") else {
        return;
    };
    if !can_sample(test) {
        return;
    }
    let cwd = workdir("node/busy.js");
    let dir = cwd.path().join("rec");
    let o = profkit()
        .args(["record", "-q", "-g", "dwarf", "-d"])
        .arg(&dir)
        .arg("--")
        .arg(&node)
        .args(["busy.js", "600"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = manifest(&dir);
    clean_tmp(&m);
    assert_eq!(m["call_graph"], "dwarf");
    let frames = frames(&dir);
    assert!(frames.iter().any(|f| f.contains("fib")), "{frames:?}");
    perf_reads(test, &dir, m["samples"].as_u64().unwrap());
}

#[test]
fn xray_calls_and_samples_share_one_timeline() {
    let test = "record::xray_calls_and_samples_share_one_timeline";
    let Some(clang) = profkit_testkit::tool(test, "clang-22", "clang-22 and libclang-rt-22-dev")
    else {
        return;
    };
    if !can_sample(test) {
        return;
    }
    let cwd = workdir("xray/timeline.c");
    let o = Command::new(clang)
        .args([
            "-O1",
            "-g",
            "-fno-omit-frame-pointer",
            "-fxray-instrument",
            "-fxray-instruction-threshold=1",
            "timeline.c",
            "-o",
            "timeline",
        ])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = cwd.path().join("rec");
    let o = record(cwd.path(), &dir, &cwd.path().join("timeline"), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = manifest(&dir);
    assert_eq!(m["runtimes"][0], "xray", "{m}");
    assert_eq!(m["xray_logs"].as_array().map(Vec::len), Some(1), "{m}");
    assert!(m["clock_reference"]["tsc"].as_u64().is_some(), "{m}");

    // Chrome JSON: the calls as X events, the samples as instants, on the same pid/tid
    let json = cwd.path().join("t.json");
    let o = profkit()
        .args(["convert", "-f", "chrome"])
        .arg(&dir)
        .arg("-o")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("XRay calls joined"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().or(v.as_array()).unwrap();
    let spins: Vec<(f64, f64, u64)> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "spin")
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (
                ts,
                ts + e["dur"].as_f64().unwrap(),
                e["tid"].as_u64().unwrap(),
            )
        })
        .collect();
    // three rounds of leaf_a and leaf_b, each one spin call
    assert_eq!(spins.len(), 6, "{spins:?}");
    let in_spin: Vec<(f64, u64)> = events
        .iter()
        .filter(|e| {
            e["ph"] == "i"
                && e["args"]["stack"]
                    .as_str()
                    .is_some_and(|s| s.ends_with(";spin"))
        })
        .map(|e| (e["ts"].as_f64().unwrap(), e["tid"].as_u64().unwrap()))
        .collect();
    assert!(in_spin.len() > 50, "{} samples in spin", in_spin.len());
    // a sample in spin lies inside one of spin's calls (within a sampling period), on its thread
    let inside = in_spin
        .iter()
        .filter(|(t, tid)| {
            spins
                .iter()
                .any(|(a, b, st)| st == tid && *a - 1000.0 <= *t && *t <= *b + 1000.0)
        })
        .count();
    assert!(
        inside * 100 >= in_spin.len() * 98,
        "{inside} of {} samples in spin fall inside its XRay calls: the clocks are not aligned",
        in_spin.len()
    );
    // and the Perfetto trace takes both
    let o = profkit()
        .arg("convert")
        .arg(&dir)
        .arg("-o")
        .arg(cwd.path().join("t.pftrace"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // and the Firefox profile: the samples counted on one thread, the calls' traced time on
    // a second one of the same process
    let fx = cwd.path().join("t.fxprof.json");
    let o = profkit()
        .arg("convert")
        .arg(&dir)
        .arg("-o")
        .arg(&fx)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&fx).unwrap()).unwrap();
    let weights: Vec<&str> = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["samples"]["weightType"].as_str())
        .collect();
    assert!(weights.contains(&"samples"), "{weights:?}");
    assert!(weights.contains(&"tracing-ms"), "{weights:?}");
}
