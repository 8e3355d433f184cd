//! `graph` and `diff`: llvm-xray graph / graph-diff parity (the same lines; profkit sorts them,
//! llvm-xray prints its hash tables' order), the per-function diff table against `account`,
//! differential flame graphs, perf.data and Mono inputs.
//! A module of `tests/integration/main.rs`.

use std::collections::{BTreeMap, HashMap};

use crate::support;
use crate::xray::{golden, llvm, llvm22, ok, profkit};

fn sorted(dot: &str) -> Vec<String> {
    let mut v: Vec<String> = dot.lines().map(str::to_string).collect();
    v.sort();
    v
}

/// A graph-diff DOT with every vertex number replaced by the vertex's label, sorted: profkit
/// numbers vertices in name order, llvm-xray in its string map's order.
fn canonical_diff(dot: &str) -> Vec<String> {
    let mut label: HashMap<String, String> = HashMap::new();
    for line in dot.lines() {
        if let Some((v, rest)) = line.split_once(" [label=\"") {
            if !v.contains(' ') {
                let l = rest.split('"').next().unwrap();
                label.insert(v.to_string(), l.to_string());
            }
        }
    }
    let name = |v: &str| label.get(v).cloned().unwrap_or_else(|| format!("?{v}"));
    let mut out: Vec<String> = dot
        .lines()
        .map(|line| {
            if let Some((edge, rest)) = line.split_once(" [") {
                if let Some((a, b)) = edge.split_once(" -> ") {
                    return format!("{} -> {} [{rest}", name(a), name(b));
                }
                if label.contains_key(edge) {
                    return format!("V [{rest}");
                }
            }
            line.to_string()
        })
        .collect();
    out.sort();
    out
}

/// Binary, trace and options: the clang-14 demo (basic and FDR), clang-22 programs without
/// debug info, with a shared object, with a wrapped flight recorder, and the LZ4 library.
const GRAPHS: &[(&str, &str, &[&str])] = &[
    ("demo", "demo-basic.xray", &[]),
    (
        "demo",
        "demo-fdr.xray",
        &["-e", "sum", "-v", "count", "-c", "90p", "-b", "min"],
    ),
    (
        "nodebug",
        "nodebug-basic.xray",
        &["-d", "-e", "count", "-v", "med"],
    ),
    (
        "dso-main",
        "dso-basic.xray",
        &["-e", "max", "-v", "99p", "-c", "count", "-b", "sum"],
    ),
    // llvm-xray stops at the wrapped recorder's exits without an enter unless -k.
    ("wrap", "wrap-fdr.xray", &["-k", "-e", "min", "-c", "min"]),
    (
        "lz4run",
        "lz4-64k.xray",
        &["-e", "count", "-v", "sum", "-c", "med", "-b", "count"],
    ),
    (
        "lz4run",
        "lz4-128k.xray",
        &["-d", "-e", "90p", "-v", "min", "-c", "99p", "-b", "max"],
    ),
];

fn graph_args<'a>(bin: &'a str, trace: &'a str, opts: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["graph", "-m", bin, trace];
    args.extend_from_slice(opts);
    args
}

#[test]
fn graph_lines_match_llvm_xray_14_and_22() {
    // Golden: llvm-xray 14 on the LZ4 library (scripts/fixtures/xray-lz4.sh).
    let ours = ok(&graph_args("lz4run", "lz4-64k.xray", GRAPHS[5].2));
    assert_eq!(sorted(&ours), sorted(&golden("lz4-graph.dot")));
    assert!(ours.contains("[label=\"{LZ4_compress_HC|"), "{ours}");
    for (bin, trace, opts) in GRAPHS {
        let args = graph_args(bin, trace, opts);
        let ours = sorted(&ok(&args));
        let theirs_args = &args[..];
        if let Some(theirs) = llvm(theirs_args) {
            assert_eq!(ours, sorted(&theirs), "llvm-xray 14: {args:?}");
        }
        if let Some(theirs) = llvm22(theirs_args) {
            assert_eq!(ours, sorted(&theirs), "llvm-xray 22: {args:?}");
        }
    }
}

#[test]
fn graph_names_functions_of_shared_objects() {
    let dot = ok(&[
        "graph",
        "-m",
        "dso-main",
        "-m",
        "libdso.so",
        "dso-basic.xray",
    ]);
    let vertices: Vec<&str> = dot
        .lines()
        .filter(|l| !l.contains("->") && l.contains("label"))
        .collect();
    assert_eq!(vertices.len(), 2, "{dot}");
    assert!(vertices.iter().all(|l| !l.contains("label=\"#")), "{dot}");
    // The library's function has a packed id (object 1, function 2).
    assert!(dot.contains("F16777218 [label=\"lib_entry\"]"), "{dot}");
}

#[test]
fn graph_diff_matches_llvm_xray_14_and_22() {
    let lz4 = [
        "lz4-64k.xray",
        "lz4-128k.xray",
        "-e",
        "sum",
        "-c",
        "sum",
        "-v",
        "med",
        "-b",
        "90p",
    ];
    let mut args = vec!["diff", "--graph"];
    args.extend_from_slice(&lz4);
    assert_eq!(
        canonical_diff(&ok(&args)),
        canonical_diff(&golden("lz4-graph-diff.dot"))
    );
    let cases: &[&[&str]] = &[
        &lz4,
        &["demo-basic.xray", "demo-fdr.xray"],
        &[
            "demo-basic.xray",
            "demo-fdr.xray",
            "-e",
            "count",
            "-c",
            "med",
            "-v",
            "99p",
            "-b",
            "max",
        ],
        &[
            "demo-basic.xray",
            "demo-fdr.xray",
            "-e",
            "min",
            "-c",
            "min",
            "-v",
            "min",
            "-b",
            "min",
            "-t",
            "3",
        ],
    ];
    for case in cases {
        let mut ours = vec!["diff", "--graph"];
        ours.extend_from_slice(case);
        let ours = canonical_diff(&ok(&ours));
        let mut theirs = vec!["graph-diff"];
        theirs.extend_from_slice(case);
        if let Some(t) = llvm(&theirs) {
            assert_eq!(ours, canonical_diff(&t), "llvm-xray 14: {case:?}");
        }
        if let Some(t) = llvm22(&theirs) {
            assert_eq!(ours, canonical_diff(&t), "llvm-xray 22: {case:?}");
        }
    }
    // With -m profkit names the functions (llvm-xray graph-diff ignores its -m).
    let named = ok(&[
        "diff",
        "--graph",
        "-m",
        "lz4run",
        "lz4-64k.xray",
        "lz4-128k.xray",
    ]);
    assert!(
        named.contains("tooltip=\"main -> LZ4_compress_HC\""),
        "{named}"
    );
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&ok(args)).unwrap()
}

#[test]
fn diff_table_agrees_with_account() {
    let d = json(&[
        "diff",
        "-m",
        "lz4run",
        "lz4-64k.xray",
        "lz4-128k.xray",
        "-f",
        "json",
    ]);
    assert_eq!(d["schema"], "profkit.diff/1");
    assert_eq!(d["unit"], "ns");
    let rows = d["functions"].as_array().unwrap();
    // Sorted by the absolute change of self time, largest first.
    let changes: Vec<i64> = rows
        .iter()
        .map(|r| r["delta"]["self"].as_i64().unwrap().abs())
        .collect();
    assert!(changes.windows(2).all(|w| w[0] >= w[1]), "{changes:?}");
    for (side, trace) in [("a", "lz4-64k.xray"), ("b", "lz4-128k.xray")] {
        let acc = json(&["account", "--json", "-m", "lz4run", trace]);
        // Per name (static functions of lz4.c and lz4hc.c share names): calls and sum (ns).
        let mut by_name: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for f in acc["functions"].as_array().unwrap() {
            let e = by_name
                .entry(f["name"].as_str().unwrap().to_string())
                .or_default();
            e.0 += f["count"].as_u64().unwrap();
            e.1 += f["sum_ns"].as_u64().unwrap();
        }
        for r in rows {
            let name = r["name"].as_str().unwrap();
            let t = &r[side];
            let calls = t["calls"].as_u64().unwrap();
            let Some(&(count, sum)) = by_name.get(name) else {
                assert_eq!(calls, 0, "{name} in {trace}");
                continue;
            };
            assert_eq!(calls, count, "{name} in {trace}");
            let (total, own) = (t["total"].as_u64().unwrap(), t["self"].as_u64().unwrap());
            assert!(own <= total, "{name}");
            // Nothing in this program recurses: inclusive time is account's sum, to a ns per
            // call (the stream converts each time to ns, account the sum).
            assert!(
                total.abs_diff(sum) <= calls,
                "{name} in {trace}: {total} vs {sum}"
            );
        }
    }
    let text = ok(&[
        "diff",
        "-m",
        "lz4run",
        "lz4-64k.xray",
        "lz4-128k.xray",
        "-p",
        "3",
    ]);
    assert!(text.contains("3 of "), "{text}");
    let csv = ok(&[
        "diff",
        "-m",
        "lz4run",
        "lz4-64k.xray",
        "lz4-128k.xray",
        "-f",
        "csv",
        "-s",
        "calls",
    ]);
    assert!(csv.starts_with("function,self_a_ns,"), "{csv}");
    assert_eq!(csv.lines().count(), rows.len() + 1);
}

/// Sum of the values of folded lines (`stack v`).
fn folded_total(folded: &str) -> u64 {
    folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum()
}

#[test]
fn diff_differential_flame_graph() {
    let d = ok(&[
        "diff",
        "-m",
        "lz4run",
        "lz4-64k.xray",
        "lz4-128k.xray",
        "-f",
        "folded",
    ]);
    let (mut a, mut b) = (0u64, 0u64);
    for line in d.lines() {
        let mut f = line.rsplitn(3, ' ');
        b += f.next().unwrap().parse::<u64>().unwrap();
        a += f.next().unwrap().parse::<u64>().unwrap();
        assert!(f.next().unwrap().starts_with("main"), "{line}");
    }
    for (total, trace) in [(a, "lz4-64k.xray"), (b, "lz4-128k.xray")] {
        let folded = ok(&["stack", "--folded", "-m", "lz4run", trace]);
        let lines = folded.lines().count() as u64;
        assert!(
            total.abs_diff(folded_total(&folded)) <= 2 * lines,
            "{trace}"
        );
    }
    let svg = profkit_testkit::scratch_dir().join("diff-lz4.svg");
    ok(&[
        "diff",
        "-m",
        "lz4run",
        "lz4-64k.xray",
        "lz4-128k.xray",
        "-f",
        "svg",
        "-o",
        svg.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("LZ4_compress_HC"),
        "{}",
        &svg[..200]
    );
}

#[test]
fn diff_of_perf_recordings_and_of_different_kinds() {
    let perf = support::fixture_dir("perf");
    // The jitdump beside the recording: its marker's path in /tmp holds one only after other
    // tests put it there (on a fresh machine this test can run first).
    let (_dir, a) = crate::perf::recording("node-fp", Some(("node-fp.jit-30519.dump.gz", 30519)));
    let b = perf.join("node-basic-prof.data");
    let d: serde_json::Value = serde_json::from_str(&support::ok_in(
        "perf",
        &[
            "diff",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "-f",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(d["unit"], "weight");
    let names: Vec<&str> = d["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(names.iter().any(|n| n.starts_with("JS:*fib")), "{names:?}");
    let (_, err, code) = profkit(&["diff", "demo-basic.xray", a.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("same kind"), "{err}");
    // A profiling-mode file has no single calls: no call graph, refused rather than empty.
    for args in [
        &["graph", "profiling.xprof"][..],
        &["diff", "--graph", "profiling.xprof", "profiling.xprof"],
    ] {
        let (out, err, code) = profkit(args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
        assert!(
            err.contains("profiling-mode file keeps per-path totals, not the single calls"),
            "{err}"
        );
        assert!(err.contains("`diff` without --graph"), "{err}");
    }
}

/// `diff -f json` of two profiling-mode files named by `profiling`, and its rows by name.
fn profile_diff(
    a: &str,
    b: &str,
    extra: &[&str],
) -> (serde_json::Value, BTreeMap<String, serde_json::Value>) {
    let mut args = vec!["diff", "-m", "profiling", a, b, "-f", "json"];
    args.extend_from_slice(extra);
    let d = json(&args);
    assert_eq!(d["schema"], "profkit.diff/1");
    let rows = d["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap().to_string(), r.clone()))
        .collect();
    (d, rows)
}

#[test]
fn diff_of_a_profile_with_itself_is_all_zero() {
    let (d, rows) = profile_diff("profiling.xprof", "profiling.xprof", &[]);
    assert_eq!(d["unit"], "ticks");
    assert_eq!(rows.len(), crate::xray::PROFILE_CALLS.len());
    for (name, r) in &rows {
        assert_eq!(r["a"], r["b"], "{name}");
        assert_eq!(
            r["delta"],
            serde_json::json!({"calls": 0, "self": 0, "total": 0}),
            "{name}"
        );
    }
    let folded = ok(&[
        "diff",
        "-m",
        "profiling",
        "profiling.xprof",
        "profiling.xprof",
        "-f",
        "folded",
    ]);
    for line in folded.lines() {
        let mut f = line.rsplitn(3, ' ');
        assert_eq!(f.next(), f.next(), "{line}");
    }
}

/// Two real profiles of one program, 4 and 8 rounds (scripts/fixtures/xray-profiling.sh): per
/// function, the diff is the difference of what `account` and `stack` say of each.
#[test]
fn diff_of_two_profiles_is_the_difference_of_their_accounts() {
    let (a, b) = ("profiling.xprof", "profiling-8rounds.xprof");
    for tsc_hz in [None, Some("2000000000")] {
        let extra: Vec<&str> = tsc_hz.iter().flat_map(|hz| ["--tsc-hz", *hz]).collect();
        let (d, rows) = profile_diff(a, b, &extra);
        // ticks unless the TSC frequency is given, as `account --json` says (`time_unit`).
        let (acc_a, _) = crate::xray::profile_account(a, &extra);
        assert_eq!(d["unit"], acc_a["time_unit"]);
        assert_eq!(d["unit"], if tsc_hz.is_some() { "ns" } else { "ticks" });
        assert_eq!(rows.len(), crate::xray::PROFILE_CALLS.len());
        let changes: Vec<i64> = d["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["delta"]["self"].as_i64().unwrap().abs())
            .collect();
        assert!(changes.windows(2).all(|w| w[0] >= w[1]), "{changes:?}");
        for (side, file) in [("a", a), ("b", b)] {
            let (_, acc) = crate::xray::profile_account(file, &extra);
            let stack = |more: &[&str]| {
                let mut args = vec!["stack", "--folded", "-m", "profiling", file];
                args.extend_from_slice(more);
                args.extend_from_slice(&extra);
                ok(&args)
            };
            let own = crate::xray::folded_by_leaf(&stack(&[]));
            let inclusive = stack(&["--inclusive"]);
            for (name, count, sum) in &acc {
                let t = &rows[name][side];
                assert_eq!(t["calls"].as_u64().unwrap(), *count, "{name} in {file}");
                assert_eq!(t["self"].as_u64().unwrap(), own[name], "{name} in {file}");
                // Total: account's sum, except for the recursive fib, whose total counts each
                // stack once: the inclusive time of its outermost calls.
                let total = if name == "fib" {
                    inclusive
                        .lines()
                        .filter(|l| l.matches("fib").count() == 1 && l.contains(";fib "))
                        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
                        .sum()
                } else {
                    *sum
                };
                assert_eq!(t["total"].as_u64().unwrap(), total, "{name} in {file}");
            }
        }
        for (name, r) in &rows {
            for k in ["calls", "self", "total"] {
                let v = |side: &str| r[side][k].as_i64().unwrap();
                assert_eq!(
                    r["delta"][k].as_i64().unwrap(),
                    v("b") - v("a"),
                    "{name} {k}"
                );
            }
        }
        // The program's code: twice the rounds, twice the calls of everything a round calls.
        for (name, calls) in crate::xray::PROFILE_CALLS {
            let grew = !matches!(name, "fib" | "worker" | "run");
            let want = if grew { calls as i64 } else { 0 };
            assert_eq!(rows[name]["delta"]["calls"], want, "{name}");
        }
    }
    // The text table states the unit; -p and -s as for traces.
    let (text, err, code) = profkit(&["diff", "-m", "profiling", a, b, "-p", "3", "-s", "total"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("\n3 of 11 function(s), by change of total time, in TSC ticks\n"),
        "{text}"
    );
    assert!(text.lines().nth(4).unwrap().ends_with("  worker"), "{text}");
    assert!(err.contains("times are TSC ticks"), "{err}");
    let text = ok(&["diff", "-m", "profiling", a, b, "--tsc-hz", "2000000000"]);
    assert!(!text.contains("ticks") && text.contains(" µs"), "{text}");
    let csv = ok(&["diff", "-m", "profiling", a, b, "-f", "csv"]);
    assert!(
        csv.starts_with("function,self_a_ticks,self_b_ticks,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 12);
}

#[test]
fn diff_of_two_profiles_as_a_differential_flame_graph() {
    let (a, b) = ("profiling.xprof", "profiling-8rounds.xprof");
    let per_stack = |folded: &str| -> BTreeMap<String, u64> {
        folded
            .lines()
            .map(|l| {
                let (s, v) = l.rsplit_once(' ').unwrap();
                (s.to_string(), v.parse().unwrap())
            })
            .collect()
    };
    let diff = |more: &[&str]| {
        let mut args = vec!["diff", "-m", "profiling", a, b, "-f", "folded"];
        args.extend_from_slice(more);
        let (mut from_a, mut from_b) = (BTreeMap::new(), BTreeMap::new());
        for line in ok(&args).lines() {
            let mut f = line.rsplitn(3, ' ');
            let vb: u64 = f.next().unwrap().parse().unwrap();
            let va: u64 = f.next().unwrap().parse().unwrap();
            let stack = f.next().unwrap().to_string();
            if va > 0 {
                from_a.insert(stack.clone(), va);
            }
            if vb > 0 {
                from_b.insert(stack, vb);
            }
        }
        (from_a, from_b)
    };
    // Each side's values are that profile's exclusive time per stack, as `stack --folded`.
    let (from_a, from_b) = diff(&[]);
    let stack = |file: &str| {
        let mut s = per_stack(&ok(&["stack", "--folded", "-m", "profiling", file]));
        s.retain(|_, v| *v > 0);
        s
    };
    assert_eq!(from_a, stack(a));
    assert_eq!(from_b, stack(b));
    // --normalize scales A to B's total.
    let (na, nb) = diff(&["--normalize"]);
    let (ta, tb): (u64, u64) = (na.values().sum(), nb.values().sum());
    assert!(ta.abs_diff(tb) <= na.len() as u64, "{ta} vs {tb}");
    let svg = profkit_testkit::scratch_dir().join("diff-profiles.svg");
    let (_, err, code) = profkit(&[
        "diff",
        "-m",
        "profiling",
        a,
        b,
        "-f",
        "svg",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("rle_encode"),
        "{}",
        &svg[..200]
    );
    assert!(svg.contains(" ticks"), "{}", &svg[..200]);
}

/// A profile and anything else are two kinds: refused, naming both files and kinds, whatever
/// the order and whether --tsc-hz is given.
#[test]
fn diff_of_a_profile_and_another_kind_is_refused() {
    let mono = support::fixture("mlpd", "busy_calls.mlpd");
    let perf = support::fixture("perf", "node-fp.data");
    let profile = "profiling.xprof";
    let profile_kind = "profiling.xprof has call-path totals (an XRay profiling-mode file)";
    for (other, kind) in [
        ("demo-basic.xray", "function calls"),
        (mono.as_str(), "function calls"),
        (perf.as_str(), "samples"),
    ] {
        for tsc in [&[][..], &["--tsc-hz", "1000000000"]] {
            for (a, b) in [(profile, other), (other, profile)] {
                let mut args = vec!["diff", a, b];
                args.extend_from_slice(tsc);
                let (out, err, code) = profkit(&args);
                assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
                assert!(err.contains(profile_kind), "{args:?}: {err}");
                assert!(err.contains(&format!("{other} has {kind}")), "{err}");
                assert!(
                    err.contains("compare two profiles of the same kind"),
                    "{err}"
                );
            }
        }
    }
    // --tsc-hz is for profiling-mode files, as in `account`.
    let (_, err, code) = profkit(&[
        "diff",
        "--tsc-hz",
        "1000",
        "demo-basic.xray",
        "demo-fdr.xray",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--tsc-hz applies to XRay profiling-mode files"),
        "{err}"
    );
}

#[test]
fn graph_of_a_mono_calls_file() {
    let (dot, err, code) = support::run_in("mlpd", &["graph", "busy_calls.mlpd", "-e", "count"]);
    assert_eq!(code, 0, "{err}");
    assert!(dot.starts_with("digraph xray {\nF0 -> "), "{dot}");
    assert!(dot.contains("Main"), "{dot}");
}
