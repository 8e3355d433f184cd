//! The runtime matrix: each JIT runtime recorded live (`perf record -k 1 -g`), then
//! `profkit convert` against `perf inject --jit` + `perf report` (the top 30 named user
//! symbols within 0.5 points, none missing) and `profkit inject` + `perf report` against perf
//! inject's report. Runtimes: OpenJDK (perf map at exit), Erlang/OTP BeamAsm (jitdump and
//! perf map), PHP's opcache JIT (perf map and jitdump; its code is in `/dev/zero (deleted)`),
//! QEMU user mode (jitdump and perf map). node and wasmtime are in `perf.rs`.
//!
//! The workloads are in scripts/fixtures/<runtime>/; each recording takes about a second. The
//! runtimes write to /tmp (maps, some dumps): the tests take one lock, note what /tmp held
//! before, and remove what their run added.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::perf::{
    convert_folded, folded_self_shares, normalize, perf_report_shares, record_live, run_perf_inject,
};
use crate::support::profkit;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The JIT files in /tmp (`perf-*.map`, `jit-*.dump`).
fn tmp_jit_files() -> BTreeSet<PathBuf> {
    std::fs::read_dir("/tmp")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    (n.starts_with("perf-") && n.ends_with(".map"))
                        || (n.starts_with("jit-") && n.ends_with(".dump"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Removes the /tmp files a run added when dropped.
struct TmpGuard(BTreeSet<PathBuf>);

impl TmpGuard {
    fn new() -> TmpGuard {
        TmpGuard(tmp_jit_files())
    }

    /// What the run added so far.
    fn added(&self) -> Vec<PathBuf> {
        tmp_jit_files().difference(&self.0).cloned().collect()
    }
}

impl Drop for TmpGuard {
    fn drop(&mut self) {
        for p in self.added() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// perf's top named user symbols (up to 30) have our self share within 0.5 points, and
/// none is missing from ours.
fn assert_matches_perf(
    what: &str,
    perf_shares: &[(f64, bool, String)],
    ours: &HashMap<String, f64>,
) {
    let named: Vec<_> = perf_shares
        .iter()
        .filter(|(_, k, name)| {
            !k && !name.is_empty() && name != "[unknown]" && !name.starts_with("0x")
        })
        .take(30)
        .collect();
    assert!(
        named.len() >= 3,
        "{what}: perf named only {} symbols",
        named.len()
    );
    let mut report = Vec::new();
    let mut worst = 0f64;
    for (share, _, name) in &named {
        let mine = ours.get(&normalize(name)).copied();
        worst = worst.max((mine.unwrap_or(0.0) - share).abs());
        if mine.is_none() && *share >= 0.5 {
            worst = worst.max(f64::INFINITY);
        }
        report.push(format!("{share:6.2} {:6.2} {name}", mine.unwrap_or(0.0)));
    }
    assert!(
        worst <= 0.5,
        "{what}: self shares differ by {worst:.2} points:\nperf   ours\n{}",
        report.join("\n")
    );
}

/// `profkit inject` + perf report names what perf inject + perf report names, with the same
/// shares (perf reads both).
fn assert_inject_matches_perf(
    what: &str,
    perf: &Path,
    data: &Path,
    perf_injected: &Path,
    extra: &[&str],
) {
    let ours = data.with_extension("profkit.data");
    let o = profkit()
        .args(["inject", "-i"])
        .arg(data)
        .arg("-o")
        .arg(&ours)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{what}: profkit inject: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let theirs: HashMap<String, f64> = perf_report_shares(perf, perf_injected)
        .into_iter()
        .filter(|(_, k, _)| !k)
        .map(|(s, _, n)| (normalize(&n), s))
        .collect();
    let mine = perf_report_shares(perf, &ours);
    assert_matches_perf(&format!("{what} (profkit inject)"), &mine, &theirs);
}

/// Records `program args` in a fresh directory holding `scripts/fixtures/<script>`, and
/// checks convert and inject against perf. Returns the directory and the recording.
fn check_runtime(
    what: &str,
    perf: &Path,
    script: &str,
    program: &Path,
    args: &[&str],
    prepare: impl FnOnce(&Path),
) -> (tempfile::TempDir, PathBuf) {
    let (dir, data) = record_live(perf, &[], script, program, args, prepare);
    let ours = folded_self_shares(&convert_folded(&data));
    let injected = run_perf_inject(perf, &data);
    assert_matches_perf(what, &perf_report_shares(perf, &injected), &ours);
    assert_inject_matches_perf(what, perf, &data, &injected, &[]);
    (dir, data)
}

/// Runs `program args` in `dir` (a compiler: javac, erlc, cc), which must succeed.
fn build_in(dir: &Path, program: &Path, args: &[&str]) {
    let o = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        program.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn tool(test: &str, name: &str, what: &str) -> Option<PathBuf> {
    profkit_testkit::tool(test, name, what)
}

#[test]
fn openjdk_perf_map() {
    let test = "runtimes::openjdk_perf_map";
    let (Some(perf), Some(java), Some(javac)) = (
        profkit_testkit::perf(test),
        tool(
            test,
            "java",
            "OpenJDK (apt-get install default-jdk-headless)",
        ),
        tool(
            test,
            "javac",
            "OpenJDK (apt-get install default-jdk-headless)",
        ),
    ) else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = TmpGuard::new();
    let args = [
        "-XX:+UnlockDiagnosticVMOptions",
        "-XX:+DumpPerfMapAtExit",
        "-XX:+PreserveFramePointer",
        "-cp",
        ".",
        "Busy",
        "1500",
    ];
    let compile = |dir: &Path| {
        build_in(dir, &javac, &["Busy.java"]);
    };
    let (dir, data) = check_runtime("OpenJDK", &perf, "java/Busy.java", &java, &args, compile);
    let ours = folded_self_shares(&convert_folded(&data));
    assert!(
        // As perf names it (the test's normalized form): `Busy.sieve`.
        ours.get("Busy.sieve").is_some_and(|&s| s > 20.0),
        "{ours:?}"
    );
    // HotSpot's C++ frames: in full by default, as perf prints them with --short-names.
    let full = dir.path().join("full.folded");
    let o = profkit()
        .arg("convert")
        .arg(&data)
        .arg("-o")
        .arg(&full)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let full = std::fs::read_to_string(full).unwrap();
    assert!(
        full.lines()
            .flat_map(|l| l.rsplit_once(' ').unwrap().0.split(';'))
            .any(|f| f.contains("::") && f.ends_with(')')),
        "no C++ parameter lists in {}",
        &full[..full.len().min(2000)]
    );
    let short = dir.path().join("short.folded");
    let o = profkit()
        .arg("convert")
        .arg(&data)
        .arg("-o")
        .arg(&short)
        .arg("--short-names")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let short = std::fs::read_to_string(short).unwrap();
    let with_params: Vec<&str> = short
        .lines()
        .flat_map(|l| l.rsplit_once(' ').unwrap().0.split(';'))
        // (Thunks are described, not named: `{virtual override thunk({offset(-8)}, f)}`.)
        .filter(|f| !f.contains("thunk("))
        // A parameter list ends a name (template arguments may hold casts: `<(unsigned long)5>`).
        .filter(|f| {
            f.contains("::")
                && (f.ends_with(") const") || (f.ends_with(')') && !f.ends_with("operator()")))
        })
        .collect();
    assert!(
        with_params.is_empty(),
        "{:?}",
        &with_params[..with_params.len().min(5)]
    );
    // The map moved away from /tmp: `inject --jit-dir` still names the Java methods.
    let maps: Vec<PathBuf> = tmp
        .added()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "map"))
        .collect();
    assert_eq!(maps.len(), 1, "{maps:?}");
    let moved = dir.path().join("moved");
    std::fs::create_dir_all(&moved).unwrap();
    let map = moved.join(maps[0].file_name().unwrap());
    std::fs::rename(&maps[0], &map).unwrap();
    let out = dir.path().join("moved.data");
    let o = profkit()
        .args(["inject", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&out)
        .arg("--jit-dir")
        .arg(&moved)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let named = perf_report_shares(&perf, &out);
    assert!(
        named
            .iter()
            .any(|(s, _, n)| n == "long Busy.sieve(int)" && *s > 20.0),
        "{named:?}"
    );
    // And a map of another name, given for its pid.
    let pid = map
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_start_matches("perf-")
        .trim_end_matches(".map")
        .to_string();
    let renamed = moved.join("java.map");
    std::fs::rename(&map, &renamed).unwrap();
    let o = profkit()
        .arg("convert")
        .arg(&data)
        .arg("-o")
        .arg(dir.path().join("renamed.folded"))
        .arg("--perf-map")
        .arg(format!("{pid}={}", renamed.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let folded = std::fs::read_to_string(dir.path().join("renamed.folded")).unwrap();
    assert!(folded.contains("long Busy.sieve(int)"));
}

fn erlang(test: &str) -> Option<(PathBuf, PathBuf)> {
    Some((
        tool(test, "erl", "Erlang/OTP (apt-get install erlang-base)")?,
        tool(test, "erlc", "Erlang/OTP (apt-get install erlang-base)")?,
    ))
}

fn erlc(erlc: &Path) -> impl FnOnce(&Path) + '_ {
    move |dir: &Path| {
        build_in(dir, erlc, &["busy.erl"]);
    }
}

/// Records busy.erl under `erl +JPperf MODE` and checks it against perf; the lock and the
/// /tmp guard (the dump or map stays until they are dropped), or `None` when a tool is missing.
fn erlang_run(test: &str, mode: &str) -> Option<(std::sync::MutexGuard<'static, ()>, TmpGuard)> {
    let (Some(perf), Some((erl, erlc_path))) = (profkit_testkit::perf(test), erlang(test)) else {
        return None;
    };
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = TmpGuard::new();
    let args = ["-noshell", "+JPperf", mode, "-s", "busy", "main", "2000"];
    check_runtime(
        &format!("Erlang (+JPperf {mode})"),
        &perf,
        "erlang/busy.erl",
        &erl,
        &args,
        erlc(&erlc_path),
    );
    Some((one, tmp))
}

#[test]
fn erlang_jitdump() {
    let Some((_one, tmp)) = erlang_run("runtimes::erlang_jitdump", "dump") else {
        return;
    };
    // The dump: its errors are only OTP's early first entries; the terminators are one
    // named warning; every entry keeps its own line at its own address.
    let dump = tmp
        .added()
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "dump"))
        .expect("erl wrote /tmp/jit-<pid>.dump");
    let o = profkit()
        .args(["validate", "--json"])
        .arg(&dump)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let codes: BTreeSet<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert!(
        codes.iter().all(|c| *c == "debug-info-before-function"),
        "{codes:?}"
    );
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert!(
        warnings.contains(&"debug-info-end-terminator"),
        "{warnings:?}"
    );
    assert!(
        !warnings
            .iter()
            .any(|w| w.starts_with("debug-info-address-bias")),
        "{warnings:?}"
    );
    assert!(v["error_count"].as_u64().unwrap() >= codes.len() as u64);
    check_entries_symbolize_to_their_lines(&dump);
}

/// `symbolize` of each DEBUG_INFO entry's address gives that entry's line (for entries inside
/// their function's code, the first hundred tables).
fn check_entries_symbolize_to_their_lines(dump: &Path) {
    let o = profkit()
        .args(["dump", "--json"])
        .arg(dump)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let mut pending: Vec<(u64, u64)> = Vec::new();
    let mut checks: Vec<(u64, u64)> = Vec::new();
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        match r["type"].as_str().unwrap_or("") {
            "JIT_CODE_DEBUG_INFO" => {
                pending = r["entries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| (e["addr"].as_u64().unwrap(), e["line"].as_u64().unwrap()))
                    .collect();
            }
            "JIT_CODE_LOAD" => {
                let (start, size) = (
                    r["code_addr"].as_u64().unwrap(),
                    r["code_size"].as_u64().unwrap(),
                );
                checks.extend(
                    pending
                        .drain(..)
                        .filter(|&(a, l)| a >= start && a < start + size && l > 0),
                );
                pending.clear();
            }
            _ => {}
        }
        if checks.len() > 200 {
            break;
        }
    }
    assert!(checks.len() > 20, "{} entries to check", checks.len());
    // Later entries at the same address win; keep the last line per address.
    let by_addr: HashMap<u64, u64> = checks.iter().copied().collect();
    let mut cmd = profkit();
    cmd.args(["symbolize", "--json"]).arg(dump);
    let addrs: Vec<u64> = by_addr.keys().copied().collect();
    for a in &addrs {
        cmd.arg(format!("{a:#x}"));
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["debug_bias"], 0);
    let mut wrong = Vec::new();
    for r in v["results"].as_array().unwrap() {
        let addr = r["address"].as_str().unwrap();
        let addr = u64::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap();
        let line = r["frames"][0]["line"].as_u64();
        if line != by_addr.get(&addr).copied() {
            wrong.push(format!(
                "{addr:#x}: {line:?}, entry says {:?}",
                by_addr.get(&addr)
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn erlang_perf_map() {
    erlang_run("runtimes::erlang_perf_map", "map");
}

/// opcache's JIT on the command line; `file_update_protection=0` because opcache does not
/// cache (so never JITs) a script modified in the last 2 seconds, and the test has just copied
/// it.
const PHP_JIT: [&str; 8] = [
    "-d",
    "opcache.file_update_protection=0",
    "-d",
    "opcache.enable_cli=1",
    "-d",
    "opcache.jit=tracing",
    "-d",
    "opcache.jit_buffer_size=32M",
];

fn php(test: &str, debug: &str) {
    let Some(perf) = profkit_testkit::perf(test) else {
        return;
    };
    let Some(php) = tool(test, "php", "PHP (apt-get install php-cli php-opcache)") else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _tmp = TmpGuard::new();
    let mut args: Vec<&str> = PHP_JIT.to_vec();
    let debug = format!("opcache.jit_debug={debug}");
    args.extend(["-d", &debug, "busy.php", "800"]);
    let (_dir, data) = check_runtime(
        &format!("PHP ({debug})"),
        &perf,
        "php/busy.php",
        &php,
        &args,
        |_| {},
    );
    // The JIT buffer is opcache's shared mapping, `/dev/zero (deleted)`: named from the map.
    let ours = folded_self_shares(&convert_folded(&data));
    let traces: f64 = ours
        .iter()
        .filter(|(k, _)| k.starts_with("TRACE-"))
        .map(|(_, v)| v)
        .sum();
    assert!(traces > 20.0, "{ours:?}");
    assert!(
        !ours.keys().any(|k| k.contains("zero (deleted)")),
        "{ours:?}"
    );
}

#[test]
fn php_perf_map() {
    php("runtimes::php_perf_map", "0x10");
}

#[test]
fn php_jitdump() {
    php("runtimes::php_jitdump", "0x20");
}

fn qemu(test: &str, flag: &str) {
    let Some(perf) = profkit_testkit::perf(test) else {
        return;
    };
    let (Some(qemu), Some(cc)) = (
        tool(
            test,
            "qemu-x86_64",
            "QEMU user mode (apt-get install -t bookworm-backports qemu-user)",
        ),
        tool(test, "cc", "a C compiler (gcc) with static libc"),
    ) else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _tmp = TmpGuard::new();
    let build = |dir: &Path| {
        build_in(dir, &cc, &["-O1", "-static", "-o", "busy", "busy.c"]);
    };
    let (dir, _data) = check_runtime(
        &format!("QEMU ({flag})"),
        &perf,
        "qemu/busy.c",
        &qemu,
        &[flag, "./busy", "800"],
        build,
    );
    if flag == "-jitdump" {
        // QEMU's terminators are accepted: the dump validates with exit 0.
        let dump = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "dump"))
            .expect("qemu wrote jit-<pid>.dump in its directory");
        let o = profkit().arg("validate").arg(&dump).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{text}");
        assert!(text.contains("debug-info-end-terminator"), "{text}");
        assert!(!text.contains("bias"), "{text}");
    }
}

#[test]
fn qemu_jitdump() {
    qemu("runtimes::qemu_jitdump", "-jitdump");
}

#[test]
fn qemu_perf_map() {
    qemu("runtimes::qemu_perf_map", "-perfmap");
}

/// Builds scripts/fixtures/native/SOURCE with `cc FLAGS` and records it: perf, the directory and
/// the recording (`None` when perf or a compiler is missing).
fn record_c(
    test: &str,
    source: &str,
    flags: &[&str],
) -> Option<(PathBuf, tempfile::TempDir, PathBuf)> {
    let perf = profkit_testkit::perf(test)?;
    let cc = tool(test, "cc", "a C compiler (gcc)")?;
    let build = |dir: &Path| {
        let mut args = flags.to_vec();
        args.extend(["-o", "program", source]);
        build_in(dir, &cc, &args);
    };
    let script = format!("native/{source}");
    let (dir, data) = record_live(&perf, &[], &script, Path::new("./program"), &[], build);
    Some((perf, dir, data))
}

/// glibc's aliases (one address, several names: `__memmove_*`/`__memcpy_*`, `free`/`cfree@…`,
/// versioned `pthread_rwlock_*@GLIBC_2.2.5`/`@@GLIBC_2.34`) are named as perf names them.
#[test]
fn glibc_aliases_named_as_perf_names_them() {
    let test = "runtimes::glibc_aliases_named_as_perf_names_them";
    let Some((perf, _dir, data)) = record_c(test, "glibc-aliases.c", &["-O1"]) else {
        return;
    };
    let ours = folded_self_shares(&convert_folded(&data));
    // perf 6.1 names the first PLT stub `_init` (its `_init` is unsized and stretched over
    // `.plt`); profkit names it `free@plt`, as objdump does.
    let theirs: Vec<_> = perf_report_shares(&perf, &data)
        .into_iter()
        .filter(|(_, _, n)| n != "_init")
        .collect();
    assert!(
        theirs.iter().any(|(_, _, n)| n == "cfree@GLIBC_2.2.5"),
        "{theirs:?}"
    );
    assert_matches_perf("glibc aliases", &theirs, &ours);
}

/// A native call that is the last instruction of its function (`noreturn`) returns to the next
/// function's first byte: perf names the caller by that next function (`after+0x0`, which never
/// ran); profkit looks return addresses up at `ra - 1` and names the true caller, `begin`. (JIT
/// code is the exception: Erlang returns to function entries on purpose, and such a return
/// address names the function it starts.)
#[test]
fn a_noreturn_call_names_its_true_caller() {
    let test = "runtimes::a_noreturn_call_names_its_true_caller";
    let flags = ["-O1", "-fno-omit-frame-pointer", "-fno-align-functions"];
    let Some((_perf, _dir, data)) = record_c(test, "noreturn-call.c", &flags) else {
        return;
    };
    let folded = convert_folded(&data);
    assert!(
        folded.lines().any(|l| l.contains(";main;begin;finish ")),
        "{folded}"
    );
    assert!(!folded.contains(";after;"), "{folded}");
}
