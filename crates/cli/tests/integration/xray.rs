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
