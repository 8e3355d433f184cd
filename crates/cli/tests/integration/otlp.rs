//! OpenTelemetry profiles out (`convert -o x.otlp.pb` / `x.otlp.json`), decoded by the official
//! generated Python classes (PyPI `opentelemetry-proto`, installed by
//! scripts/ci/install-export-py.sh) through scripts/export/otlp_check.py: every table's
//! indices in range, the values of each sample type adding up to the folded output's total
//! (exclusive time, `--counts` for calls, period for perf.data samples), the JIT names in the
//! dictionary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{fixture, fixture_dir, profkit};

/// The venv's Python with the official OTLP classes, or `None` (a failure under
/// `PROFKIT_REQUIRE_EXTERNAL=1`).
fn otlp_python(test: &str) -> Option<PathBuf> {
    profkit_testkit::external(
        test,
        "Python with opentelemetry-proto (scripts/ci/install-export-py.sh)",
        profkit_testkit::deps_dir().join("venv/bin/python"),
        |py| {
            Command::new(py)
                .args([
                    "-c",
                    "from opentelemetry.proto.profiles.v1development import profiles_pb2",
                ])
                .status()
                .is_ok_and(|s| s.success())
        },
    )
}

fn convert(input: &str, extra: &[&str], output: &Path, cwd: &Path) -> String {
    let o = profkit()
        .current_dir(cwd)
        .arg("convert")
        .arg(input)
        .args(extra)
        .arg("-o")
        .arg(output)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "convert {input} -o {output:?}: {err}");
    err
}

/// The folded output of `input` (with `extra` arguments): its total and its frames.
fn folded(input: &str, extra: &[&str], cwd: &Path) -> (u64, BTreeSet<String>) {
    let o = profkit()
        .current_dir(cwd)
        .args(["convert", input, "-f", "folded", "-o", "-"])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut total = 0;
    let mut frames = BTreeSet::new();
    for line in String::from_utf8(o.stdout).unwrap().lines() {
        let (stack, w) = line.rsplit_once(' ').unwrap();
        total += w.parse::<u64>().unwrap();
        for f in stack.split(';') {
            frames.insert(f.strip_suffix(" (inlined)").unwrap_or(f).to_string());
        }
    }
    (total, frames)
}

/// Converts `input` to both encodings and checks each with otlp_check.py.
fn check(python: &Path, input: &str, extra: &[&str], cwd: &Path, args: &[String]) {
    let out = tempfile::tempdir().unwrap();
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/export/otlp_check.py");
    for name in ["out.otlp.pb", "out.otlp.json"] {
        let path = out.path().join(name);
        convert(input, extra, &path, cwd);
        let o = Command::new(python)
            .arg(&script)
            .arg(&path)
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{input} -> {name}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

fn totals(pairs: &[(&str, u64)]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|(t, n)| ["--total".to_string(), format!("{t}={n}")])
        .collect()
}

fn names<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    names
        .into_iter()
        .flat_map(|n| ["--name".to_string(), n.clone()])
        .collect()
}

#[test]
fn perf_data_with_jitdump_decodes_with_every_sample_and_the_js_names() {
    let test = "otlp::perf_data_with_jitdump_decodes_with_every_sample_and_the_js_names";
    let Some(python) = otlp_python(test) else {
        return;
    };
    let (dir, data) = crate::perf::recording("node-fp", Some(("node-fp.jit-30519.dump.gz", 30519)));
    let data = data.to_str().unwrap();
    let (total, frames) = folded(data, &[], dir.path());
    // perf report --stats: 355 samples of period 1001001.
    assert_eq!(total, 355 * 1_001_001);
    let js: Vec<&String> = frames.iter().filter(|f| f.starts_with("JS:")).collect();
    assert!(js.len() >= 3, "{frames:?}");
    // cpu-clock samples weigh time on a CPU: `cpu`/`nanoseconds`
    let mut args = totals(&[("cpu", total)]);
    args.extend(names(js));
    // The kinds, and node's build id on its mapping.
    for a in [
        "profkit.code.kind=jit",
        "profkit.code.kind=native",
        "profile.frame.type=native",
        "profile.frame.type=v8js",
    ] {
        args.extend(["--attr".to_string(), a.to_string()]);
    }
    check(&python, data, &[], dir.path(), &args);

    // The mapping table holds the build ids perf recorded.
    let out = dir.path().join("b.otlp.json");
    convert(data, &[], &out, dir.path());
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let strings = json["dictionary"]["stringTable"].as_array().unwrap();
    assert!(strings
        .iter()
        .any(|s| s == "process.executable.build_id.gnu"));
    let mappings = json["dictionary"]["mappingTable"].as_array().unwrap();
    assert!(mappings
        .iter()
        .any(|m| m["memoryStart"].is_string() && m["attributeIndices"].is_array()));
    // 64-bit integers are strings in OTLP/JSON; 32-bit ones numbers.
    let p = &json["resourceProfiles"][0]["scopeProfiles"][0]["profiles"][0];
    assert!(p["samples"][0]["values"][0].is_string());
    assert!(p["samples"][0]["timestampsUnixNano"][0].is_string());
    assert!(p["samples"][0]["stackIndex"].is_number());

    // The sample type is what perf's event measures, the period perf's: -F 999 of cpu-clock.
    let string = |i: &serde_json::Value| strings[i.as_u64().unwrap_or(0) as usize].clone();
    assert_eq!(string(&p["sampleType"]["typeStrindex"]), "cpu");
    assert_eq!(string(&p["sampleType"]["unitStrindex"]), "nanoseconds");
    assert_eq!(string(&p["periodType"]["typeStrindex"]), "cpu");
    assert_eq!(p["period"], "1001001");
    // Times are UNIX time through the recording's CLOCK_DATA (perf record -k 1): `profkit info`
    // shows wall clock 1795548133121696000 ns at the reference; the samples are within the
    // minute around it, not CLOCK_MONOTONIC's ~10,000 s since boot.
    let reference: u64 = 1_795_548_133_121_696_000;
    let near = |v: &serde_json::Value| {
        let t: u64 = v.as_str().unwrap().parse().unwrap();
        t.abs_diff(reference) < 60_000_000_000
    };
    assert!(near(&p["timeUnixNano"]), "{}", p["timeUnixNano"]);
    for s in p["samples"].as_array().unwrap() {
        for t in s["timestampsUnixNano"].as_array().unwrap() {
            assert!(near(t), "{t}");
        }
    }
}

#[test]
fn perf_data_with_perf_map_decodes() {
    let Some(python) = otlp_python("otlp::perf_data_with_perf_map_decodes") else {
        return;
    };
    let dir = fixture_dir("perf");
    let (total, frames) = folded("node-basic-prof.data", &[], &dir);
    let js: Vec<&String> = frames.iter().filter(|f| f.starts_with("JS:")).collect();
    assert!(!js.is_empty(), "{frames:?}");
    let mut args = totals(&[("cpu", total)]);
    args.extend(names(js.into_iter().take(5)));
    check(&python, "node-basic-prof.data", &[], &dir, &args);
}

#[test]
fn xray_trace_decodes_with_calls_and_time() {
    let Some(python) = otlp_python("otlp::xray_trace_decodes_with_calls_and_time") else {
        return;
    };
    let dir = fixture_dir("xray");
    let m = ["-m", "demo"];
    let (time, frames) = folded("demo-fdr.xray", &m, &dir);
    let (calls, _) = folded("demo-fdr.xray", &["-m", "demo", "--counts"], &dir);
    let mut args = totals(&[("time", time), ("calls", calls)]);
    args.extend(names(&frames));
    check(&python, "demo-fdr.xray", &m, &dir, &args);
}

#[test]
fn xray_profile_decodes() {
    let Some(python) = otlp_python("otlp::xray_profile_decodes") else {
        return;
    };
    let dir = fixture_dir("xray");
    let (time, _) = folded("profiling.xprof", &[], &dir);
    let (calls, _) = folded("profiling.xprof", &["--counts"], &dir);
    let args = totals(&[("time", time), ("calls", calls)]);
    check(&python, "profiling.xprof", &[], &dir, &args);
}

#[test]
fn mono_calls_and_samples_decode() {
    let Some(python) = otlp_python("otlp::mono_calls_and_samples_decode") else {
        return;
    };
    let dir = fixture_dir("mlpd");
    let (time, frames) = folded("busy_calls.mlpd", &[], &dir);
    let (calls, _) = folded("busy_calls.mlpd", &["--counts"], &dir);
    let mut args = totals(&[("time", time), ("calls", calls)]);
    args.extend(names(frames.iter().take(20)));
    args.extend([
        "--attr".to_string(),
        "profile.frame.type=dotnet".to_string(),
    ]);
    check(&python, "busy_calls.mlpd", &[], &dir, &args);

    let (samples, frames) = folded("cpu_sample.mlpd", &[], &dir);
    let mut args = totals(&[("samples", samples)]);
    args.extend(names(&frames));
    check(&python, "cpu_sample.mlpd", &[], &dir, &args);
}

#[test]
fn jitdump_decodes_with_a_load_per_record_and_tiers() {
    let Some(python) = otlp_python("otlp::jitdump_decodes_with_a_load_per_record_and_tiers") else {
        return;
    };
    // 28 JIT_CODE_LOAD records (`profkit info`), their names those of the perf map.
    let dump = fixture("jitdump", "node-perf-prof-only-functions.dump");
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("x.map");
    convert(&dump, &[], &map, dir.path());
    let text = std::fs::read_to_string(&map).unwrap();
    let live: Vec<String> = text
        .lines()
        .map(|l| l.splitn(3, ' ').nth(2).unwrap().to_string())
        .collect();
    assert!(live.iter().any(|n| n.starts_with("JS:")));
    let mut args = totals(&[("jit_code_loads", 28)]);
    args.extend(names(&live));
    check(&python, &dump, &[], dir.path(), &args);

    // Two loads and a move; the SAMPLY_JIT_TIER tiers become location attributes.
    let handmade = fixture("jitdump", "handmade/all-records-le.dump");
    let mut args = totals(&[("jit_code_loads", 3)]);
    for a in [
        "profkit.jit.tier=Turbofan",
        "profkit.jit.tier=Baseline",
        "profkit.code.kind=jit",
    ] {
        args.extend(["--attr".to_string(), a.to_string()]);
    }
    check(&python, &handmade, &[], dir.path(), &args);
}
