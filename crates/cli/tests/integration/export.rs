//! `profkit convert` to the viewers' formats and `profkit symbolize`, end to end on the
//! committed real files of every input format.

use serde_json::Value;

use crate::support::{fixture, run};

/// (input, -m binary) for one real file of each input format.
fn inputs() -> Vec<(&'static str, String, Option<String>)> {
    vec![
        (
            "xray",
            fixture("xray", "demo-fdr.xray"),
            Some(fixture("xray", "demo")),
        ),
        ("xray-basic", fixture("xray", "demo-basic.xray"), None),
        ("mlpd-calls", fixture("mlpd", "busy_calls.mlpd"), None),
        ("mlpd-sample", fixture("mlpd", "cpu_sample.mlpd"), None),
        (
            "jitdump",
            fixture("jitdump", "node-perf-prof.dump.gz"),
            None,
        ),
    ]
}

fn convert(input: &str, bin: Option<&str>, out: &str, extra: &[&str]) -> (String, i32) {
    let mut args = vec!["convert", input, "-o", out];
    if let Some(b) = bin {
        args.extend(["-m", b]);
    }
    args.extend(extra);
    let (_, err, code) = run(&args);
    (err, code)
}

#[test]
fn every_input_converts_to_every_timeline_format() {
    let dir = tempfile::tempdir().unwrap();
    for (label, input, bin) in inputs() {
        for ext in [
            "json",
            "json.gz",
            "pftrace",
            "fxprof.json.gz",
            "parquet",
            "map",
        ] {
            let out = dir.path().join(format!("{label}.{ext}"));
            let out = out.to_str().unwrap();
            let (err, code) = convert(&input, bin.as_deref(), out, &[]);
            if ext == "map" && label == "xray-basic" {
                // No -m: no function addresses to list.
                assert_eq!(code, 2, "{err}");
                assert!(err.contains("pass the binary with -m"), "{err}");
                continue;
            }
            assert_eq!(code, 0, "{label} -> {ext}: {err}");
            let len = std::fs::metadata(out).unwrap().len();
            assert!(len > 0, "{label} -> {ext}: empty output");
        }
        let out = dir.path().join(format!("{label}.json"));
        let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap())
            .unwrap_or_else(|e| panic!("{label}: chrome JSON does not parse: {e}"));
        let events = v["traceEvents"].as_array().unwrap();
        assert!(events.len() > 3, "{label}");
    }
}

#[test]
fn stack_formats_need_calls_or_samples() {
    let dir = tempfile::tempdir().unwrap();
    for (label, input, bin) in inputs() {
        for ext in ["speedscope.json", "folded", "svg", "pb.gz"] {
            let out = dir.path().join(format!("{label}.{ext}"));
            let out = out.to_str().unwrap();
            let (err, code) = convert(&input, bin.as_deref(), out, &[]);
            if label == "jitdump" {
                assert_eq!(code, 2, "{label} -> {ext}");
                assert!(err.contains("code loads, not calls or samples"), "{err}");
            } else {
                assert_eq!(code, 0, "{label} -> {ext}: {err}");
                assert!(
                    std::fs::metadata(out).unwrap().len() > 0,
                    "{label} -> {ext}"
                );
            }
        }
    }
}

#[test]
fn folded_from_xray_matches_stack_folded() {
    // convert -o x.folded and `stack --folded` are two routes to the same exclusive-time stacks.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.folded");
    let input = fixture("xray", "demo-fdr.xray");
    let bin = fixture("xray", "demo");
    let (err, code) = convert(&input, Some(&bin), out.to_str().unwrap(), &[]);
    assert_eq!(code, 0, "{err}");
    let total = |text: &str| -> u64 {
        text.lines()
            .filter_map(|l| l.rsplit_once(' '))
            .map(|(_, v)| v.parse::<u64>().unwrap())
            .sum()
    };
    let converted = std::fs::read_to_string(&out).unwrap();
    assert!(
        converted.lines().any(|l| l.contains("fib(int)")),
        "{converted}"
    );
    assert!(total(&converted) > 0);
}

#[test]
fn time_and_thread_filters() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("xray", "demo-fdr.xray");
    let all = dir.path().join("all.json");
    let cut = dir.path().join("cut.json");
    assert_eq!(convert(&input, None, all.to_str().unwrap(), &[]).1, 0);
    let (err, code) = convert(
        &input,
        None,
        cut.to_str().unwrap(),
        &["--time", "0-0.000002"],
    );
    assert_eq!(code, 0, "{err}");
    let count = |p: &std::path::Path| {
        let v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
        v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .count()
    };
    assert!(count(&cut) < count(&all), "the window keeps fewer calls");
    let (err, code) = convert(&input, None, cut.to_str().unwrap(), &["--time", "2-1"]);
    assert_eq!(code, 2);
    assert!(err.contains("FROM is after TO"), "{err}");
    let none = dir.path().join("none.json");
    let (err, code) = convert(&input, None, none.to_str().unwrap(), &["--thread", "1"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(count(&none), 0, "no thread 1 in the demo trace");
}

#[test]
fn unknown_output_name_is_a_usage_error() {
    let (_, err, code) = run(&[
        "convert",
        &fixture("xray", "demo-fdr.xray"),
        "-o",
        "/tmp/profkit-x.unknownext",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot tell the output format"), "{err}");
}

#[test]
fn symbolize_node_addresses() {
    let dump = fixture("jitdump", "node-perf-prof-only-functions.dump");
    // JS:*fib is at 0x7f9c167c6540 (364 bytes, record #56 in the .stats.txt); +0x60 is the
    // recursive call at busy.js:8:22.
    let (out, err, code) = run(&["symbolize", &dump, "0x7f9c167c65a0", "0x10"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("0x7f9c167c65a0: JS:*fib /tmp/profkit-fixtures/node/busy.js:7:13 + 0x60"),
        "{out}"
    );
    assert!(
        out.contains("at /tmp/profkit-fixtures/node/busy.js:8:22"),
        "{out}"
    );
    assert!(out.contains("0x10: ??"), "{out}");
    let (out, _, code) = run(&["symbolize", "--json", &dump, "0x7f9c167c65a0@1"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["schema"], "profkit.symbolize/1");
    assert_eq!(v["debug_bias"], 64);
    assert_eq!(v["results"][0]["found"], false, "not loaded yet at t=1");
    let (out, _, _) = run(&["symbolize", "--json", &dump, "0x7f9c167c65a0"]);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["offset"], 0x60);
    assert_eq!(r["region"]["code_index"], 18);
    assert_eq!(r["frames"][0]["line"], 8);
    assert_eq!(r["frames"][0]["file"], "/tmp/profkit-fixtures/node/busy.js");
}

#[test]
fn symbolize_rejects_other_formats_and_bad_addresses() {
    let (_, err, code) = run(&["symbolize", &fixture("xray", "demo-fdr.xray"), "0x1"]);
    assert_eq!(code, 2, "{err}");
    let (_, err, code) = run(&[
        "symbolize",
        &fixture("jitdump", "node-perf-prof-only-functions.dump"),
        "nothex",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("hex"), "{err}");
}

#[test]
fn firefox_categories_come_from_jit_tier_records() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("all.firefox.json");
    let input = fixture("jitdump", "handmade/all-records-le.dump");
    let (err, code) = convert(&input, None, out.to_str().unwrap(), &[]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let cats: Vec<(String, String)> = v["meta"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["color"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // all-records-le.dump: `JS:*outer` from a green "Turbofan" tier, `Baseline: helper` from
    // a lightblue "Baseline" tier (colour indices 6 and 1).
    assert!(
        cats.contains(&("Turbofan".into(), "green".into())),
        "{cats:?}"
    );
    assert!(
        cats.contains(&("Baseline".into(), "lightblue".into())),
        "{cats:?}"
    );
}
