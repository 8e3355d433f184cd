//! XRay commands: parity with llvm-xray 14 (golden files, and live when `llvm-xray` is on the
//! machine) where llvm-xray is right, pinned answers where it is wrong.
//! A module of `tests/integration/main.rs`.

use std::path::PathBuf;
use std::process::Command as StdCommand;

use crate::support;

pub(crate) fn dir() -> PathBuf {
    support::fixture_dir("xray")
}

pub(crate) fn golden(name: &str) -> String {
    std::fs::read_to_string(dir().join("llvm-xray").join(name)).unwrap()
}

pub(crate) fn profkit(args: &[&str]) -> (String, String, i32) {
    support::run_in("xray", args)
}

pub(crate) fn ok(args: &[&str]) -> String {
    support::ok_in("xray", args)
}

/// Runs llvm-xray (Debian package `llvm`; .ci/run installs it). Without it the live half of a
/// test is skipped with a note, or fails under `PROFKIT_REQUIRE_EXTERNAL=1`.
pub(crate) fn llvm(args: &[&str]) -> Option<String> {
    run_llvm_xray(
        "llvm-xray",
        "llvm-xray (Debian package llvm, LLVM 14)",
        args,
    )
}

/// Runs llvm-xray 22 (Debian package `llvm-22`; .ci/run installs it), as [`llvm`].
pub(crate) fn llvm22(args: &[&str]) -> Option<String> {
    run_llvm_xray(
        "llvm-xray-22",
        "llvm-xray-22 (Debian package llvm-22)",
        args,
    )
}

fn run_llvm_xray(tool: &str, what: &str, args: &[&str]) -> Option<String> {
    let tool = profkit_testkit::tool(&format!("{tool} {}", args.join(" ")), tool, what)?;
    let o = StdCommand::new(&tool)
        .current_dir(dir())
        .args(args)
        .output()
        .ok()?;
    assert!(
        o.status.success(),
        "{} {args:?}: {}",
        tool.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn account_llvm_text_and_csv_match_golden() {
    assert_eq!(
        ok(&["account", "--llvm", "-m", "demo", "demo-fdr.xray"]),
        golden("fdr-account.txt")
    );
    assert_eq!(
        ok(&[
            "account",
            "--llvm",
            "-k",
            "-d",
            "-m",
            "demo",
            "demo-fdr.xray"
        ]),
        golden("fdr-account-kd.txt")
    );
    assert_eq!(
        ok(&[
            "account",
            "--llvm",
            "-f",
            "csv",
            "-k",
            "-d",
            "-m",
            "demo",
            "demo-fdr.xray"
        ]),
        golden("fdr-account-csv.txt")
    );
}

#[test]
fn account_live_parity_with_llvm_xray() {
    for extra in [
        &[][..],
        &["-s", "sum", "-r", "dsc", "-p", "3"][..],
        &["-s", "count", "-r", "asc"][..],
        &["-f", "csv", "-s", "max", "-r", "dsc"][..],
    ] {
        let mut l = vec!["account", "-m", "./demo"];
        l.extend_from_slice(extra);
        l.push("demo-fdr.xray");
        let Some(want) = llvm(&l) else { return };
        let mut p = vec!["account", "--llvm", "-m", "./demo"];
        p.extend_from_slice(extra);
        p.push("demo-fdr.xray");
        assert_eq!(ok(&p), want, "{extra:?}");
    }
    // Without -m both print #N and (unknown).
    if let Some(want) = llvm(&["account", "demo-fdr.xray"]) {
        assert_eq!(ok(&["account", "--llvm", "demo-fdr.xray"]), want);
    }
}

#[test]
fn account_names_functions_of_a_binary_without_debug_info_as_llvm() {
    // llvm-symbolizer's rules, which llvm-xray prints: `<invalid>:0:0` for a global function,
    // the STT_FILE symbol's name for a static one (clang-22 -O0, no -g; llvm-xray 14 and 22
    // agree, scripts/fixtures/xray-llvm22.sh).
    let args = ["account", "-m", "./nodebug", "nodebug-basic.xray"];
    let mut ours = vec!["account", "--llvm"];
    ours.extend_from_slice(&args[1..]);
    let got = ok(&ours);
    assert_eq!(got, golden("nodebug-account.txt"));
    assert!(got.contains("nodebug.c:0:0: stat_fn") && got.contains("<invalid>:0:0: fib"));
    for want in [llvm(&args), llvm22(&args)].into_iter().flatten() {
        assert_eq!(got, want);
    }
}

#[test]
fn wrapped_flight_recorder_is_read_in_time_order() {
    // buffer_max=3: the runtime reused its buffers, so the file holds the thread's newest block
    // first. Read in file order, the thread's stack broke at the wrap (1 call never returned,
    // 3 exits without an enter); in time order only the exits whose enters were overwritten
    // remain. llvm-xray 14 and 22 sort the records the same way in their YAML.
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("wrap.yaml");
    let o = support::profkit()
        .current_dir(dir())
        .args(["convert", "-m", "./wrap", "wrap-fdr.xray", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert_eq!(yaml, golden("wrap-convert-yaml.txt"));
    let (stdout, stderr, code) = profkit(&["account", "--llvm", "-m", "./wrap", "wrap-fdr.xray"]);
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with("Functions with latencies: 2\n"),
        "{stdout}"
    );
    assert!(
        stderr.contains("0 call(s) never returned, 2 exit(s) had no enter"),
        "{stderr}"
    );
    let args = ["convert", "-m", "./wrap", "-f", "yaml", "wrap-fdr.xray"];
    for want in [llvm(&args), llvm22(&args)].into_iter().flatten() {
        assert_eq!(yaml, want);
    }
}

#[test]
fn shared_object_functions_are_named_in_an_fdr_trace() {
    // The same library traced in FDR mode (clang-22, dso-fdr.cc): llvm-xray 22 names only the
    // executable's function; profkit with both maps names all three.
    let one = ok(&["account", "--llvm", "-m", "./dso-fdr", "dso-fdr.xray"]);
    assert_eq!(one, golden("dso-fdr-account-22.txt"));
    let args = ["account", "-m", "./dso-fdr", "dso-fdr.xray"];
    if let Some(want) = llvm22(&args) {
        assert_eq!(one, want);
    }
    let want = one
        .replace("(unknown): #16777217", "<invalid>:0:0: lib_leaf")
        .replace("(unknown): #16777218", "<invalid>:0:0: lib_entry");
    let both = ok(&[
        "account",
        "--llvm",
        "-m",
        "./dso-fdr",
        "-m",
        "./libdso.so",
        "dso-fdr.xray",
    ]);
    assert_eq!(both, want);
    let info = ok(&["info", "dso-fdr.xray"]);
    assert!(
        info.contains("objects:   0 (40 events), 1 (1240 events)"),
        "{info}"
    );
    let folded = ok(&[
        "stack",
        "--folded",
        "-m",
        "./dso-fdr",
        "-m",
        "./libdso.so",
        "dso-fdr.xray",
    ]);
    // main began before the recorder started: its calls are the roots.
    assert!(folded.contains("\nlib_entry;lib_leaf "), "{folded}");
}

#[test]
fn shared_object_functions_are_named_with_one_map_per_object() {
    // dso-main calls lib_entry in libdso.so (-fxray-shared): the runtime writes its id packed,
    // object 1 << 24 | 2. llvm-xray 22 takes one map and prints `(unknown): #16777218`; so does
    // `--llvm` with the executable's map alone, and with the library's map too it is named.
    let (one, err, _) = profkit(&["account", "--llvm", "-m", "./dso-main", "dso-basic.xray"]);
    assert_eq!(one, golden("dso-account-22.txt"));
    assert!(
        err.contains("shared object 1 has calls but no instrumentation map"),
        "{err}"
    );
    let args = ["account", "-m", "./dso-main", "dso-basic.xray"];
    for want in [llvm(&args), llvm22(&args)].into_iter().flatten() {
        assert_eq!(one, want);
    }
    let want = one.replace("(unknown): #16777218", "<invalid>:0:0: lib_entry");
    let both = ["-m", "./dso-main", "-m", "./libdso.so"];
    let pinned = ["-m", "./dso-main", "-m", "1=./libdso.so"];
    for maps in [both, pinned] {
        let mut a = vec!["account", "--llvm"];
        a.extend_from_slice(&maps);
        a.push("dso-basic.xray");
        assert_eq!(ok(&a), want, "{maps:?}");
    }
    let mut a = vec!["stack"];
    a.extend_from_slice(&both);
    a.push("dso-basic.xray");
    assert!(ok(&a).contains("main > lib_entry"));
    let info = ok(&["info", "dso-basic.xray"]);
    assert!(
        info.contains("objects:   0 (2 events), 1 (40 events)"),
        "{info}"
    );
    let (_, err, code) = profkit(&[
        "account",
        "-m",
        "0=./dso-main",
        "-m",
        "0=./libdso.so",
        "dso-basic.xray",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("object id 0 is given twice"), "{err}");
    // An id past 255 (8 bits) is refused as such, not opened as a file named `256=./libdso.so`.
    let (_, err, code) = profkit(&[
        "account",
        "-m",
        "./dso-main",
        "-m",
        "256=./libdso.so",
        "dso-basic.xray",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("-m 256=./libdso.so: object id 256 is not one XRay can give (0-255)"),
        "{err}"
    );
}

#[test]
fn empty_basic_log_is_an_empty_trace() {
    // `nodebug` run with patch_premain=false: a 32-byte header and nothing else. llvm-xray 22
    // fails on it ("Unsupported version for Basic/Naive Mode logging: 768", llvm #57657).
    let out = ok(&["account", "--llvm", "-m", "./nodebug", "empty-basic.xray"]);
    assert!(out.starts_with("Functions with latencies: 0\n"), "{out}");
    assert!(ok(&["info", "empty-basic.xray"]).contains("records:   0"));
}

#[test]
fn account_basic_mode_pinned() {
    // llvm-xray 14 fails on this file (rc=1, see golden stderr); profkit gives the true counts:
    // 242 fib calls, 4 workers (llvm -k -d: 233 and 3), and main.
    assert!(golden("basic-account.stderr").contains("Failed accounting"));
    let out = ok(&["account", "--llvm", "-m", "demo", "demo-basic.xray"]);
    let counts: Vec<&str> = out
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(counts, ["242", "12", "12", "12", "12", "4", "1"]);
    assert!(out.starts_with("Functions with latencies: 7\n"));
}

#[test]
fn account_json_and_table() {
    let out = ok(&["account", "--json", "-m", "demo", "demo-fdr.xray"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema"], "profkit.account/1");
    let f = &v["functions"][0];
    assert_eq!(f["id"], 1);
    assert_eq!(f["name"], "fib(int)");
    assert_eq!(f["debug"], "demo.cc:0:0");
    assert_eq!(f["count"], 242);
    assert_eq!(f["min_ns"], 90);
    assert_eq!(f["p99_ns"], 14650);
    assert_eq!(f["sum_ns"], 269300);
    assert_eq!(v["unfinished"], 0);
    assert_eq!(v["unmatched_exits"], 0);
    let table = ok(&["account", "demo-fdr.xray"]);
    assert!(table.lines().next().unwrap().starts_with("id  function"));
    assert!(table.contains("#1 "), "{table}");
    assert!(table.contains("µs"), "{table}");
}

#[test]
fn stack_llvm_matches_golden_and_live() {
    assert_eq!(
        ok(&["stack", "--llvm", "-k", "-m", "demo", "demo-fdr.xray"]),
        golden("fdr-stack.txt")
    );
    assert_eq!(
        ok(&["stack", "--llvm", "-k", "-m", "demo", "demo-basic.xray"]),
        golden("basic-stack.txt")
    );
    if let Some(want) = llvm(&[
        "stack",
        "-m",
        "./demo",
        "--per-thread-stacks",
        "demo-fdr.xray",
    ]) {
        assert_eq!(
            ok(&[
                "stack",
                "--llvm",
                "--per-thread",
                "-m",
                "demo",
                "demo-fdr.xray"
            ]),
            want
        );
    }
    for agg in ["time", "count"] {
        let a = format!("--aggregation-type={agg}");
        if let Some(want) = llvm(&[
            "stack",
            "-m",
            "./demo",
            "--all-stacks",
            "--stack-format=flame",
            &a,
            "demo-fdr.xray",
        ]) {
            assert_eq!(
                ok(&[
                    "stack",
                    "--llvm",
                    "--folded",
                    "--aggregation",
                    agg,
                    "-m",
                    "demo",
                    "demo-fdr.xray"
                ]),
                want
            );
        }
    }
}

#[test]
fn stack_llvm_aggregate_threads_matches_golden_and_live() {
    for mode in ["fdr", "basic"] {
        let trace = format!("demo-{mode}.xray");
        let human = ok(&[
            "stack",
            "--llvm",
            "--aggregate-threads",
            "-m",
            "demo",
            &trace,
        ]);
        assert_eq!(human, golden(&format!("{mode}-stack-aggregate.txt")));
        let flame = ok(&[
            "stack",
            "--llvm",
            "--aggregate-threads",
            "--all-stacks",
            "-m",
            "demo",
            &trace,
        ]);
        assert_eq!(flame, golden(&format!("{mode}-stack-aggregate-flame.txt")));
        if let Some(want) = llvm(&[
            "stack",
            "-m",
            "./demo",
            "-k",
            "--aggregate-threads",
            "--all-stacks",
            "--stack-format=flame",
            "--aggregation-type=count",
            &trace,
        ]) {
            assert_eq!(
                ok(&[
                    "stack",
                    "--llvm",
                    "--aggregate-threads",
                    "--folded",
                    "--aggregation-type",
                    "count",
                    "-m",
                    "demo",
                    &trace,
                ]),
                want
            );
        }
    }
    // llvm-xray refuses the combination too.
    let (_, err, code) = profkit(&[
        "stack",
        "--llvm",
        "--aggregate-threads",
        "--per-thread-stacks",
        "demo-fdr.xray",
    ]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn stack_folded_is_exclusive() {
    let excl = ok(&["stack", "--folded", "-m", "demo", "demo-fdr.xray"]);
    let incl = ok(&[
        "stack",
        "--folded",
        "--inclusive",
        "-m",
        "demo",
        "demo-fdr.xray",
    ]);
    let val = |t: &str, key: &str| -> u64 {
        t.lines()
            .find(|l| l.rsplit_once(' ').unwrap().0 == key)
            .unwrap()
            .rsplit_once(' ')
            .unwrap()
            .1
            .parse()
            .unwrap()
    };
    // worker's self time = inclusive minus its callees' inclusive time.
    let w_incl = val(&incl, "worker(void*)");
    let children: u64 = incl
        .lines()
        .filter(|l| l.starts_with("worker(void*);") && l.matches(';').count() == 1)
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(val(&excl, "worker(void*)"), w_incl - children);
    let per_thread = ok(&["stack", "--folded", "--per-thread", "demo-fdr.xray"]);
    assert!(per_thread.lines().all(|l| l.starts_with("thread_")));
}

#[test]
fn extract_matches_golden_and_loads_typed_sleds() {
    assert_eq!(ok(&["extract", "demo"]), golden("extract.txt"));
    assert_eq!(
        ok(&["extract", "--symbolize", "demo"]),
        golden("extract-symbolize.txt")
    );
    assert_eq!(
        ok(&["extract", "sled-v1-pie"]),
        golden("extract-v1-pie.txt")
    );
    // llvm-xray 14 fails with "Exec format error" on kind-5 sleds; profkit loads them.
    assert!(golden("extract-typed.stderr").contains("Exec format error"));
    assert!(ok(&["extract", "demo-typed"]).contains("kind: typed-event"));
}

#[test]
fn dump_matches_fdr_dump() {
    assert_eq!(ok(&["dump", "demo-fdr.xray"]), golden("fdr-fdr-dump.txt"));
    let v = ok(&["dump", "--verify", "demo-fdr.xray"]);
    assert_eq!(v.matches("[New Block]").count(), 8);
    let nd = ok(&["dump", "--json", "demo-fdr.xray"]);
    for l in nd.lines() {
        let _: serde_json::Value = serde_json::from_str(l).unwrap();
    }
    assert_eq!(nd.lines().count(), 652);
}

#[test]
fn convert_yaml_matches_golden_and_reads_back() {
    assert_eq!(
        ok(&["convert", "demo-fdr.xray", "-f", "yaml", "-o", "-"]),
        golden("fdr-convert-yaml.txt")
    );
    assert_eq!(
        ok(&[
            "convert",
            "demo-fdr.xray",
            "-m",
            "demo",
            "--symbolize",
            "-f",
            "yaml",
            "-o",
            "-"
        ]),
        golden("fdr-convert-yaml-symbolize.txt")
    );
    // --no-sort: the same records; threads in file order (llvm: its hash-map order).
    let mut a: Vec<String> = ok(&[
        "convert",
        "demo-fdr.xray",
        "--no-sort",
        "-f",
        "yaml",
        "-o",
        "-",
    ])
    .lines()
    .map(String::from)
    .collect();
    let mut b: Vec<String> = golden("fdr-convert-yaml-nosort.txt")
        .lines()
        .map(String::from)
        .collect();
    a.sort();
    b.sort();
    assert!(a == b, "--no-sort records differ from llvm's");
    assert_eq!(
        ok(&["convert", "demo-basic.xray", "-f", "yaml", "-o", "-"]),
        golden("basic-convert-yaml.txt")
    );
    let tmp = tempfile::tempdir().unwrap();
    let y = tmp.path().join("t.yaml");
    let y = y.to_str().unwrap();
    ok(&["convert", "demo-fdr.xray", "-o", y]);
    // Read back: same accounting, same YAML again.
    assert_eq!(
        ok(&["account", "--llvm", "-m", "demo", y]),
        golden("fdr-account.txt")
    );
    let y2 = tmp.path().join("t2.yaml");
    ok(&["convert", y, "-o", y2.to_str().unwrap()]);
    assert_eq!(std::fs::read(y).unwrap(), std::fs::read(&y2).unwrap());
}

#[test]
fn validate_and_info() {
    let (out, _, code) = profkit(&["validate", "--json", "demo-fdr.xray"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema"], "profkit.validate/1");
    assert_eq!(v["format"], "xray");
    assert_eq!(v["errors"].as_array().unwrap().len(), 0);
    // A truncated copy: an error with an offset, exit 1, no panic.
    let data = std::fs::read(dir().join("demo-fdr.xray")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cut = tmp.path().join("cut.xray");
    std::fs::write(&cut, &data[..data.len() - 5]).unwrap();
    let (out, _, code) = profkit(&["validate", "--json", cut.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["errors"][0]["offset"].as_u64().is_some());
    let info = ok(&["info", "--json", "demo-fdr.xray"]);
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(v["details"]["mode"], "fdr");
    assert_eq!(v["header"]["version"], 5);
    assert_eq!(v["threads"].as_array().unwrap().len(), 4);
    assert!(ok(&["info", "demo-basic.xray"]).contains("basic mode version 3"));
}

#[test]
fn truncated_traces_never_panic() {
    let data = std::fs::read(dir().join("demo-fdr.xray")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for cut in (33..data.len()).step_by(397) {
        let p = tmp.path().join(format!("c{cut}.xray"));
        std::fs::write(&p, &data[..cut]).unwrap();
        for cmd in ["account", "stack", "dump", "info"] {
            let (_, err, code) = profkit(&[cmd, p.to_str().unwrap()]);
            assert!(code == 0 || code == 2, "{cmd} at {cut}: {err}");
            assert!(!err.contains("panicked"), "{cmd} at {cut}: {err}");
        }
    }
}

#[test]
fn dump_reports_a_cut_file() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, cut) in [("demo-basic.xray", 5), ("demo-fdr.xray", 3)] {
        let data = std::fs::read(dir().join(name)).unwrap();
        let p = tmp.path().join(name);
        std::fs::write(&p, &data[..data.len() - cut]).unwrap();
        for json in [false, true] {
            let mut args = vec!["dump", p.to_str().unwrap()];
            if json {
                args.push("--json");
            }
            let (out, err, code) = profkit(&args);
            assert_eq!(code, 0, "{name}: {err}");
            assert!(err.contains("truncated at offset"), "{name}: {err}");
            assert!(out.lines().count() > 100, "{name}");
        }
    }
}

// ---- Profiling mode (xray_mode=xray-profiling): tests/fixtures/xray/profiling{,.xprof} ----
//
// llvm-xray cannot read these files (llvm #88761): the oracle is the program
// (scripts/fixtures/xray/profiling.c), whose call counts follow from its code.

/// Calls per function of `profiling` (3 worker threads and the main thread, 4 rounds each;
/// fib(10..13)); `main` is entered before profiling starts and is not in the profile.
pub(crate) const PROFILE_CALLS: [(&str, u64); 11] = [
    ("fill_block", 16),
    ("emit_run", 4096),
    ("rle_encode", 16),
    ("expand_run", 4096),
    ("rle_decode", 16),
    ("checksum", 32),
    ("fib", 1682),
    ("leaf", 16),
    ("tail_caller", 16),
    ("worker", 4),
    ("run", 1),
];

/// `account --json` rows of `file`: name → (count, sum).
pub(crate) fn profile_account(
    file: &str,
    extra: &[&str],
) -> (serde_json::Value, Vec<(String, u64, u64)>) {
    let mut args = vec!["account", "--json", "-m", "profiling", file];
    args.extend_from_slice(extra);
    let v: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
    let rows = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["count"].as_u64().unwrap(),
                f["sum_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    (v, rows)
}

/// Per function (the leaf of each line), the values of folded lines.
pub(crate) fn folded_by_leaf(folded: &str) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    for l in folded.lines() {
        let (stack, v) = l.rsplit_once(' ').unwrap();
        let leaf = stack.rsplit(';').next().unwrap().to_string();
        *m.entry(leaf).or_insert(0) += v.parse::<u64>().unwrap();
    }
    m
}

#[test]
fn profile_info_dump_and_validate() {
    let info = ok(&["info", "profiling.xprof"]);
    assert!(
        info.contains("LLVM XRay profiling mode version 0x20180424, little-endian, 3496 bytes"),
        "{info}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["info", "--json", "profiling.xprof"])).unwrap();
    assert_eq!(v["format"], "xray-profile");
    assert_eq!(v["records"], 83);
    assert_eq!(v["header"]["version"], 0x2018_0424);
    assert_eq!(v["details"]["blocks"], 4);
    assert_eq!(v["details"]["calls"], 9991);
    assert_eq!(v["time"], serde_json::Value::Null);
    let tids: Vec<u64> = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tid"].as_u64().unwrap())
        .collect();
    // Three workers, then the main thread (tid = pid), which hands its data over at exit.
    assert_eq!(tids.len(), 4);
    assert_eq!(tids[3], v["header"]["pid"].as_u64().unwrap());

    let (out, _, code) = profkit(&["validate", "profiling.xprof"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 errors, 0 warnings"), "{out}");

    let dump = ok(&["dump", "profiling.xprof"]);
    let mut lines = dump.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!("block #0 at 0x20: thread {}, number 0, 732 bytes", tids[0])
    );
    assert!(lines
        .next()
        .unwrap()
        .starts_with("  #0 at 0x30: 10 calls 1 time "));
    let json = ok(&["dump", "--json", "profiling.xprof"]);
    let kinds: Vec<String> = json
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["type"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(kinds.iter().filter(|k| *k == "Block").count(), 4);
    assert_eq!(kinds.iter().filter(|k| *k == "Path").count(), 83);
}

#[test]
fn profile_account_counts_what_the_program_calls() {
    let (v, rows) = profile_account("profiling.xprof", &[]);
    assert_eq!(v["time_unit"], "ticks");
    let got: Vec<(&str, u64)> = rows.iter().map(|r| (r.0.as_str(), r.1)).collect();
    assert_eq!(got, PROFILE_CALLS);
    // No single durations: the latency columns are null, the sums are there.
    for f in v["functions"].as_array().unwrap() {
        for k in ["min_ns", "median_ns", "p90_ns", "p99_ns", "max_ns"] {
            assert!(f[k].is_null(), "{f}");
        }
        assert!(f["sum_ns"].as_u64().unwrap() > 0, "{f}");
    }
    // run calls everything on the main thread: its inclusive time covers its worker's.
    let sum = |name: &str| rows.iter().find(|r| r.0 == name).unwrap().2;
    assert!(sum("run") > sum("worker") / 4);
    // --tsc-hz converts ticks: at 2 GHz every sum halves (rounded down).
    let (v2, rows2) = profile_account("profiling.xprof", &["--tsc-hz", "2000000000"]);
    assert_eq!(v2["time_unit"], "ns");
    for (a, b) in rows.iter().zip(&rows2) {
        assert_eq!(b.2, a.2 / 2, "{}", a.0);
    }
    // The table says which columns it cannot fill, and why.
    let (table, err, code) = profkit(&["account", "-m", "profiling", "profiling.xprof"]);
    assert_eq!(code, 0);
    assert!(table.lines().nth(7).unwrap().contains(" fib "), "{table}");
    assert!(
        table
            .lines()
            .all(|l| l.starts_with("id") || l.contains("  -  ")),
        "{table}"
    );
    assert!(table.contains(" ticks"), "{table}");
    assert!(
        err.contains("min, median, p90, p99 and max are not available"),
        "{err}"
    );
    // llvm-xray's layout is for what llvm-xray reads.
    let (_, err, code) = profkit(&["account", "--llvm", "-m", "profiling", "profiling.xprof"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read XRay profiling-mode files"),
        "{err}"
    );
    // --tsc-hz is for profiles only.
    let (_, err, code) = profkit(&["account", "--tsc-hz", "1000", "demo-fdr.xray"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--tsc-hz applies to XRay profiling-mode files"),
        "{err}"
    );
}

#[test]
fn profile_stack_gives_counts_and_exclusive_time_per_path() {
    let counts = ok(&[
        "stack",
        "--folded",
        "--aggregation",
        "count",
        "-m",
        "profiling",
        "profiling.xprof",
    ]);
    let by_leaf = folded_by_leaf(&counts);
    for (name, n) in PROFILE_CALLS {
        assert_eq!(by_leaf[name], n, "{name}");
    }
    // A path per recursion depth: fib(13) on the main thread recurses 13 deep.
    let deepest = format!("run;worker{}", ";fib".repeat(13));
    assert!(
        counts
            .lines()
            .any(|l| l.starts_with(&format!("{deepest} "))),
        "{counts}"
    );
    assert!(!counts.contains(&format!("{deepest};fib")));
    // The tail call: leaf's caller is worker, whom tail_caller left.
    assert!(counts.contains("\nrun;worker;leaf 4\n"), "{counts}");
    assert!(counts.contains("\nrun;worker;tail_caller 4\n"), "{counts}");
    // Exclusive times add up to the roots' inclusive times.
    let excl = ok(&["stack", "--folded", "-m", "profiling", "profiling.xprof"]);
    let incl = ok(&[
        "stack",
        "--folded",
        "--inclusive",
        "-m",
        "profiling",
        "profiling.xprof",
    ]);
    let total = |t: &str, roots_only: bool| -> u64 {
        t.lines()
            .filter(|l| !roots_only || !l.contains(';'))
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(total(&excl, false), total(&incl, true));
    // Per thread: one prefix per thread, the main thread's paths under run.
    let per = ok(&[
        "stack",
        "--folded",
        "--per-thread",
        "-m",
        "profiling",
        "profiling.xprof",
    ]);
    let threads: std::collections::BTreeSet<&str> =
        per.lines().map(|l| l.split(';').next().unwrap()).collect();
    assert_eq!(threads.len(), 4);
    let table = ok(&["stack", "-m", "profiling", "profiling.xprof"]);
    assert!(
        table.starts_with("Unique stacks: 44; top 20 by self time:"),
        "{table}"
    );
    let (_, err, code) = profkit(&["stack", "--llvm", "-m", "profiling", "profiling.xprof"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read XRay profiling-mode files"),
        "{err}"
    );
}

#[test]
fn profile_converts_to_flame_graph_viewers() {
    let tmp = tempfile::tempdir().unwrap();
    let out = |name: &str| tmp.path().join(name).display().to_string();
    // Folded: the one folded writer, so convert and stack agree line for line.
    let conv = ok(&[
        "convert",
        "-m",
        "profiling",
        "profiling.xprof",
        "-f",
        "folded",
        "--counts",
        "-o",
        "-",
    ]);
    let stack = ok(&[
        "stack",
        "--folded",
        "--aggregation",
        "count",
        "-m",
        "profiling",
        "profiling.xprof",
    ]);
    assert_eq!(conv, stack);
    // speedscope: a sampled profile per thread, weights = exclusive time.
    let ss = out("p.speedscope.json");
    let (_, err, code) = profkit(&[
        "convert",
        "-m",
        "profiling",
        "--tsc-hz",
        "1000000000",
        "profiling.xprof",
        "-o",
        &ss,
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&ss).unwrap()).unwrap();
    let profiles = v["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 4);
    let excl = ok(&["stack", "--folded", "-m", "profiling", "profiling.xprof"]);
    let weights: u64 = profiles
        .iter()
        .inspect(|p| {
            assert_eq!(p["type"], "sampled");
            assert_eq!(p["unit"], "nanoseconds");
        })
        .flat_map(|p| p["weights"].as_array().unwrap())
        .map(|w| w.as_u64().unwrap())
        .sum();
    let folded_total: u64 = excl
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(weights, folded_total);
    // Without --tsc-hz the unit is not claimed, and a note says so.
    let (_, err, code) = profkit(&["convert", "profiling.xprof", "-o", &ss]);
    assert_eq!(code, 0);
    assert!(err.contains("times are TSC ticks"), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&ss).unwrap()).unwrap();
    assert_eq!(v["profiles"][0]["unit"], "none");
    // pprof and Firefox are written.
    for name in ["p.pb.gz", "p.firefox.json.gz"] {
        let (_, err, code) = profkit(&[
            "convert",
            "-m",
            "profiling",
            "profiling.xprof",
            "-o",
            &out(name),
        ]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(std::fs::metadata(out(name)).unwrap().len() > 100, "{name}");
    }
    // Timelines cannot be drawn from call-path totals: refused before anything is written.
    for f in ["chrome", "perfetto", "parquet"] {
        let o = out(&format!("p.{f}"));
        let (_, err, code) = profkit(&["convert", "profiling.xprof", "-f", f, "-o", &o]);
        assert_eq!(code, 2, "{f}");
        assert!(err.contains("no timeline"), "{f}: {err}");
        assert!(!std::path::Path::new(&o).exists(), "{f}");
    }
    let (_, err, code) = profkit(&[
        "convert",
        "profiling.xprof",
        "-f",
        "folded",
        "--time",
        "0-1",
        "-o",
        "-",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("has no times"), "{err}");
}

#[test]
fn truncated_profiles_give_what_is_complete() {
    let data = std::fs::read(dir().join("profiling.xprof")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for cut in (20..data.len()).step_by(211) {
        let p = tmp.path().join(format!("c{cut}.xprof"));
        std::fs::write(&p, &data[..cut]).unwrap();
        let p = p.to_str().unwrap();
        for cmd in ["account", "stack", "dump", "info", "validate"] {
            let (_, err, code) = profkit(&[cmd, p]);
            assert!(code <= 2, "{cmd} at {cut}: {err}");
            assert!(!err.contains("panicked"), "{cmd} at {cut}: {err}");
            if cut >= 32 && cmd != "validate" {
                assert!(
                    err.contains("truncated at offset") || code == 2,
                    "{cmd} at {cut}: {err}"
                );
            }
        }
    }
    // A cut inside the main thread's block: the workers' calls are all there.
    let p = tmp.path().join("cut.xprof");
    std::fs::write(&p, &data[..data.len() - 100]).unwrap();
    let (v, rows) = profile_account(p.to_str().unwrap(), &[]);
    let _ = v;
    let workers = rows.iter().find(|r| r.0 == "worker").unwrap().1;
    assert!(workers >= 3, "{rows:?}");
    let (out, _, code) = profkit(&["validate", p.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("error[truncated]"), "{out}");
}

/// llvm-xray 22 names the function ids profkit names (`extract`), and still cannot read a
/// profiling-mode file (llvm #88761: when it can, compare its numbers here).
#[test]
fn profile_function_ids_agree_with_llvm_xray_extract() {
    let ours = ok(&["extract", "--symbolize", "profiling"]);
    let Some(theirs) = llvm22(&["extract", "--symbolize", "profiling"]) else {
        return;
    };
    let names = |t: &str| -> Vec<(u64, String)> {
        t.lines()
            .filter(|l| l.contains("kind: function-enter"))
            .map(|l| {
                let f = profkit_xray::yaml::parse_flow_map(l.trim_start_matches("- "), 1).unwrap();
                let get = |k: &str| f.iter().find(|(key, _)| key == k).unwrap().1.clone();
                (get("id").parse().unwrap(), get("function-name"))
            })
            .collect()
    };
    assert_eq!(names(&ours), names(&theirs));
    let want: Vec<(u64, String)> = PROFILE_CALLS
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (i as u64 + 1, n.to_string()))
        .chain([(12, "main".to_string())])
        .collect();
    assert_eq!(names(&ours), want);
    let o = StdCommand::new("llvm-xray-22")
        .current_dir(dir())
        .args(["account", "-m", "profiling", "profiling.xprof"])
        .output()
        .unwrap();
    assert!(
        !o.status.success(),
        "llvm-xray 22 reads profiling mode now: compare with it"
    );
}

/// A fresh run of the program (clang-22 and its XRay profiling runtime): the counts are the
/// program's, whatever the TIDs and times of this run.
#[test]
fn profile_of_a_fresh_run_counts_what_the_program_calls() {
    let test = "profile_of_a_fresh_run_counts_what_the_program_calls";
    let Some(clang) = profkit_testkit::tool(test, "clang-22", "clang-22 and libclang-rt-22-dev")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let src = support::fixture_dir("..").join("../scripts/fixtures/xray/profiling.c");
    let bin = tmp.path().join("profiling");
    let o = StdCommand::new(clang)
        .args([
            "-O1",
            "-g",
            "-fxray-instrument",
            "-fxray-instruction-threshold=1",
            "-fxray-modes=xray-profiling",
            "-pthread",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = StdCommand::new(&bin)
        .current_dir(tmp.path())
        .env(
            "XRAY_OPTIONS",
            "patch_premain=true xray_mode=xray-profiling xray_logfile_base=run.",
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("MISMATCH"));
    let profile = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("run."))
        .expect("the runtime wrote a profile at exit");
    let out = support::ok_in(
        "xray",
        &[
            "account",
            "--json",
            "-m",
            bin.to_str().unwrap(),
            profile.to_str().unwrap(),
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let got: Vec<(String, u64)> = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = PROFILE_CALLS
        .iter()
        .map(|(n, c)| (n.to_string(), *c))
        .collect();
    assert_eq!(got, want);
}

/// C++ exceptions leave frames without an exit: the runtime nests later calls under them and
/// its unwinding wraps times below zero (scripts/fixtures/xray/profiling-exceptions.cc).
#[test]
fn profile_of_exceptions_reports_wrapped_times_and_counts_them_as_zero() {
    let (out, _, code) = profkit(&["validate", "--json", "profiling-exceptions.xprof"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let warnings = v["warnings"].as_array().unwrap();
    assert!(!warnings.is_empty(), "{out}");
    assert!(
        warnings.iter().all(|w| w["code"] == "profile-time-wrapped"),
        "{out}"
    );
    let (out, err, code) = profkit(&["account", "--json", "profiling-exceptions.xprof"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("wrapped below zero"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for f in v["functions"].as_array().unwrap() {
        assert!(f["sum_ns"].as_u64().unwrap() < 1 << 62, "{f}");
    }
    let folded = ok(&[
        "stack",
        "--folded",
        "--inclusive",
        "profiling-exceptions.xprof",
    ]);
    for l in folded.lines() {
        let v: u64 = l.rsplit_once(' ').unwrap().1.parse().unwrap();
        assert!(v < 1 << 62, "{l}");
    }
}

/// (tid, arguments) of every call that logged arguments, sorted.
fn logged_args_of_yaml(yaml: &str) -> Vec<(u64, Vec<u64>)> {
    let field = |line: &str, key: &str| -> Option<String> {
        let at = line.find(key)? + key.len();
        let rest = line[at..].trim_start();
        Some(rest.split([',', '}']).next()?.trim().to_string())
    };
    let mut out: Vec<(u64, Vec<u64>)> = yaml
        .lines()
        .filter(|l| l.contains("function-enter-arg"))
        .map(|l| {
            let tid = field(l, "thread:").unwrap().parse().unwrap();
            let at = l.find("args:").unwrap();
            let list = &l[at..];
            let inner = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
            let args = inner
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().parse().unwrap())
                .collect();
            (tid, args)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn convert_shows_logged_arguments_as_llvm_xray_decodes_them() {
    for file in ["demo-fdr.xray", "demo-basic.xray"] {
        let Some(yaml) = llvm(&["convert", "-f", "yaml", file]) else {
            return;
        };
        let want = logged_args_of_yaml(&yaml);
        assert!(!want.is_empty(), "{file}: llvm-xray sees no arguments");
        let json = ok(&["convert", file, "-m", "demo", "-f", "chrome", "-o", "-"]);
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let mut got: Vec<(u64, Vec<u64>)> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| {
                let args = e.get("args").filter(|_| e["ph"] == "X" || e["ph"] == "B")?;
                let args = args.as_object()?;
                let list = (0..args.len())
                    .map(|i| args[&format!("arg{i}")].as_u64().unwrap())
                    .collect();
                Some((e["tid"].as_u64()?, list))
            })
            .collect();
        got.sort();
        assert_eq!(got, want, "{file}");
    }
}

#[test]
fn extract_of_a_program_and_its_shared_object_packs_the_library_ids() {
    let both = ok(&["extract", "dso-main", "libdso.so"]);
    let Some(main) = llvm22(&["extract", "dso-main"]) else {
        return;
    };
    let lib = llvm22(&["extract", "libdso.so"]).unwrap();
    let entries = |yaml: &str| -> Vec<String> {
        yaml.lines()
            .filter(|l| l.starts_with("- "))
            .map(str::to_string)
            .collect()
    };
    let mut want = entries(&main);
    for line in entries(&lib) {
        let id: u32 = line["- { id: ".len()..line.find(',').unwrap()]
            .parse()
            .unwrap();
        want.push(line.replacen(&format!("id: {id},"), &format!("id: {},", 1 << 24 | id), 1));
    }
    assert_eq!(entries(&both), want);
    // Pinned ids, and the names of both objects.
    let pinned = ok(&["extract", "0=dso-main", "3=libdso.so", "--symbolize"]);
    assert!(
        pinned.contains(&format!("id: {}, ", 3 << 24 | 1)),
        "{pinned}"
    );
    assert!(pinned.contains("function-name: lib_leaf") && pinned.contains("function-name: main"));
}

#[test]
fn stripped_real_program_accounts_and_extracts_as_llvm_xray() {
    // The LZ4 library (scripts/fixtures/xray-lz4.sh) with its debug info stripped (`strip -g`
    // keeps the symbol table and its STT_FILE symbols): names come from llvm-symbolizer's
    // symbol-table rules.
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("lz4nodebug");
    let st = StdCommand::new("strip")
        .arg("-g")
        .arg(dir_file("lz4run"))
        .arg("-o")
        .arg(&bin)
        .status()
        .expect("strip (binutils)");
    assert!(st.success());
    let bin = bin.display().to_string();
    let trace = dir_file("lz4-64k.xray");
    let ours = ok(&["account", "--llvm", "-m", &bin, &trace]);
    assert!(ours.contains("<invalid>:0:0: LZ4F_"), "{ours}");
    let extract = ok(&["extract", "-s", &bin]);
    for tool in [llvm, llvm22] {
        if let Some(want) = tool(&["account", "-m", &bin, &trace]) {
            assert_eq!(ours, want);
        }
        if let Some(want) = tool(&["extract", "-s", &bin]) {
            assert_eq!(extract, want);
        }
    }
}

fn dir_file(name: &str) -> String {
    dir().join(name).display().to_string()
}

#[test]
fn shared_object_map_without_the_traced_ids_is_named_in_the_note() {
    // dso-basic.xray with lib_entry's packed id 1 << 24 | 2 changed to 1 << 24 | 7, an id that
    // libdso.so (2 functions) does not have: what `-m` out of registration order looks like.
    // The note names the map that was given instead of saying there is none.
    let mut bytes = std::fs::read(dir().join("dso-basic.xray")).unwrap();
    let mut patched = 0;
    for rec in bytes[32..].chunks_exact_mut(32) {
        if rec[4..8] == 0x0100_0002u32.to_le_bytes() {
            rec[4..8].copy_from_slice(&0x0100_0007u32.to_le_bytes());
            patched += 1;
        }
    }
    assert_eq!(patched, 40);
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("dso-id7.xray");
    std::fs::write(&trace, &bytes).unwrap();
    let trace = trace.to_str().unwrap();
    let (out, err, code) = profkit(&["account", "-m", "./dso-main", "-m", "./libdso.so", trace]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("#16777223"), "{out}");
    assert!(
        err.contains(
            "shared object 1 has calls to 1 function id(s) (first #16777223) that its map ./libdso.so does not have"
        ),
        "{err}"
    );
    assert!(!err.contains("no instrumentation map"), "{err}");
    let (_, err, _) = profkit(&["account", "-m", "./dso-main", trace]);
    assert!(
        err.contains("shared object 1 has calls but no instrumentation map"),
        "{err}"
    );
}
