//! Firefox Profiler: the synthetic trace as a processed profile, read back as JSON: the
//! structure fxprof writes (meta versions, threads per process), call-tree self times equal
//! to exclusive traced time, markers with their fields, the JIT library resolving code
//! addresses, categories from V8 names, weights past `i32::MAX`, gzip output.

use std::collections::BTreeMap;
use std::io::Read;

use profkit_export::firefox::FirefoxSink;
use profkit_export::{Format, Options, Output};
use profkit_model::events::{EventSink, ProcessInfo, ThreadInfo, TraceInfo};
use profkit_model::span::Span;
use profkit_model::{Clock, FuncId, FuncInfo, FunctionTable};
use serde_json::Value;

use crate::synthetic::{self, calls, name, scratch, Call};

fn profile() -> Value {
    let mut out = Vec::new();
    synthetic::run(FirefoxSink::new(&mut out, false, None));
    serde_json::from_slice(&out).unwrap()
}

/// The thread named `name`; `main` is thread 0 of the synthetic trace (tid 100 = its pid, so
/// the process's main thread, which carries the process's name).
fn thread<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            if name == "main" {
                t["tid"] == "100" && t["isMainThread"] == true
            } else {
                t["name"] == name
            }
        })
        .unwrap_or_else(|| panic!("no thread {name}"))
}

fn string(t: &Value, i: &Value) -> String {
    t["stringArray"][i.as_u64().unwrap() as usize]
        .as_str()
        .unwrap()
        .to_string()
}

/// The function name of each stack's leaf frame.
fn leaf_names(t: &Value) -> Vec<String> {
    let st = &t["stackTable"];
    let n = st["length"].as_u64().unwrap() as usize;
    (0..n)
        .map(|s| {
            let frame = st["frame"][s].as_u64().unwrap() as usize;
            let func = t["frameTable"]["func"][frame].as_u64().unwrap() as usize;
            string(t, &t["funcTable"]["name"][func])
        })
        .collect()
}

/// Self weight per leaf function and total weight of a thread's samples.
fn self_weights(t: &Value) -> (BTreeMap<String, u64>, u64) {
    let leaves = leaf_names(t);
    let s = &t["samples"];
    let mut out = BTreeMap::new();
    let mut total = 0;
    for (i, stack) in s["stack"].as_array().unwrap().iter().enumerate() {
        let w = s["weight"][i].as_u64().unwrap();
        total += w;
        if let Some(stack) = stack.as_u64() {
            *out.entry(leaves[stack as usize].clone()).or_default() += w;
        }
    }
    (out, total)
}

fn exclusive(thread: u32) -> BTreeMap<String, u64> {
    fn walk(c: &Call, out: &mut BTreeMap<String, u64>) {
        let kids: u64 = c.children.iter().map(|k| k.end - k.start).sum();
        *out.entry(name(c.func)).or_default() += c.end - c.start - kids;
        for k in &c.children {
            walk(k, out);
        }
    }
    let mut out = BTreeMap::new();
    for (t, cs) in calls() {
        if t == thread {
            for c in &cs {
                walk(c, &mut out);
            }
        }
    }
    out.retain(|_, v| *v > 0);
    out
}

#[test]
fn structure_is_what_fxprof_writes() {
    let p = profile();
    let meta = &p["meta"];
    assert!(meta["version"].as_u64().is_some());
    assert_eq!(meta["preprocessedProfileVersion"], 55);
    assert_eq!(meta["product"], "synthetic trace");
    assert!(
        (meta["interval"].as_f64().unwrap() - 1e-6).abs() < 1e-12,
        "1 ns"
    );
    for key in ["libs", "threads", "counters", "pages"] {
        assert!(p[key].is_array(), "{key}");
    }
    let threads: Vec<(String, String)> = p["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["pid"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (name, pid) in [
        ("demo-app", "100"),
        ("io", "100"),
        ("mono thread", "200"),
        ("mono thread (samples)", "200"),
        ("JIT", "200"),
    ] {
        assert!(
            threads.contains(&(name.to_string(), pid.to_string())),
            "{name} in {threads:?}"
        );
    }
    assert_eq!(thread(&p, "main")["processName"], "demo-app");
    assert_eq!(thread(&p, "io")["isMainThread"], false);
    for t in p["threads"].as_array().unwrap() {
        for table in [
            "samples",
            "stackTable",
            "frameTable",
            "funcTable",
            "markers",
        ] {
            assert!(t[table]["length"].is_u64(), "{table}");
        }
    }
    // Counters are deltas: 1.0, +1.5, -2.5 for `heap`.
    let heap = p["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "heap")
        .unwrap();
    assert_eq!(
        heap["samples"]["count"],
        serde_json::json!([1.0, 1.5, -2.5])
    );
}

#[test]
fn self_time_is_exclusive_traced_time() {
    let p = profile();
    for (thread_name, index) in [("main", 0), ("io", 1), ("mono thread", 2)] {
        let t = thread(&p, thread_name);
        assert_eq!(t["samples"]["weightType"], "samples");
        let (got, total) = self_weights(t);
        let want = exclusive(index);
        assert_eq!(got, want, "{thread_name}");
        let traced: u64 = calls()
            .iter()
            .filter(|(i, _)| *i == index)
            .flat_map(|(_, cs)| cs.iter().map(|c| c.end - c.start))
            .sum();
        assert_eq!(total, traced, "{thread_name}");
    }
}

#[test]
fn sampled_stacks_weighted_by_the_period() {
    let p = profile();
    let t = thread(&p, "mono thread (samples)");
    let (got, total) = self_weights(t);
    // Samples 100 ns apart: each hit weighs 100 ns.
    assert_eq!(total, 400);
    assert_eq!(got["lex"], 200);
    assert_eq!(got["eval"], 200);
}

#[test]
fn markers_carry_their_args() {
    let p = profile();
    let t = thread(&p, "main");
    let m = &t["markers"];
    let i = (0..m["length"].as_u64().unwrap() as usize)
        .find(|&i| string(t, &m["name"][i]) == "custom event")
        .unwrap();
    let data = &m["data"][i];
    assert_eq!(data["type"], "xray.custom");
    assert_eq!(string(t, &data["payload"]), "hello \"xray\"");
    assert_eq!(data["n"], 5.0);
    assert!((m["startTime"][i].as_f64().unwrap() - 0.0003).abs() < 1e-12);
    let schema = p["meta"]["markerSchema"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "xray.typed")
        .unwrap();
    let keys: Vec<&str> = schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["type", "payload", "neg", "f", "s"]);
    let io = thread(&p, "io");
    let data = &io["markers"]["data"][0];
    assert_eq!(
        string(io, &data["payload"]),
        "00ff01",
        "binary payload as hex"
    );
    assert_eq!(data["neg"], -4.0);
}

#[test]
fn jit_code_resolves_through_the_jit_library() {
    let p = profile();
    let libs = p["libs"].as_array().unwrap();
    assert!(libs
        .iter()
        .any(|l| l["name"] == "JIT" && l["path"] == "jit-100"));
    let t = thread(&p, "main");
    let m = &t["markers"];
    let i = (0..m["length"].as_u64().unwrap() as usize)
        .find(|&i| m["data"][i]["type"] == "JIT code")
        .unwrap();
    let data = &m["data"][i];
    assert_eq!(string(t, &data["name"]), "JIT fn A");
    assert_eq!(string(t, &data["address"]), "0x1000");
    assert_eq!(string(t, &data["event"]), "load");
    let stack = data["cause"]["stack"].as_u64().unwrap() as usize;
    assert_eq!(
        leaf_names(t)[stack],
        "JIT fn A",
        "the address resolves to its symbol"
    );
    let frame = t["stackTable"]["frame"][stack].as_u64().unwrap() as usize;
    assert_eq!(
        t["frameTable"]["address"][frame], 0,
        "relative address in the library"
    );
    let jit = p["meta"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["name"] == "JIT")
        .unwrap();
    assert_eq!(t["frameTable"]["category"][frame], jit);
}

/// A one-thread trace of `calls` (func, name, start, end, depth, self) through the sink.
fn small_profile(
    format: &'static str,
    names: &[(u32, &str)],
    spans: &[(u32, u64, u64, u32, u64)],
) -> Value {
    let mut table = FunctionTable::new();
    for (id, n) in names {
        table.insert(
            FuncId(*id),
            FuncInfo {
                name: Some(n.to_string()),
                ..FuncInfo::default()
            },
        );
    }
    let mut out = Vec::new();
    let mut s = FirefoxSink::new(&mut out, false, Some("title".into()));
    s.begin(&TraceInfo {
        format,
        functions: &table,
        clock: Clock::default(),
        origin_ns: 0,
        name: "n",
    })
    .unwrap();
    s.process(&ProcessInfo { pid: 1, name: "p" }).unwrap();
    s.thread(&ThreadInfo {
        index: 0,
        pid: 1,
        tid: 1,
        name: "t",
    })
    .unwrap();
    // (tid 1 = pid 1: the main thread, shown as "p".)
    // Enters in start order, exits in end order (properly nested input).
    let mut evs: Vec<(u64, bool, usize)> = Vec::new();
    for (i, sp) in spans.iter().enumerate() {
        evs.push((sp.1, true, i));
        evs.push((sp.2, false, i));
    }
    evs.sort_by_key(|e| {
        (
            e.0,
            e.1,
            if e.1 {
                spans[e.2].3
            } else {
                u32::MAX - spans[e.2].3
            },
        )
    });
    for (time, enter, i) in evs {
        let (func, start, end, depth, self_time) = spans[i];
        if enter {
            s.enter(0, FuncId(func), time, depth, &[]).unwrap();
        } else {
            s.exit(&Span {
                func: FuncId(func),
                thread: 0,
                start,
                end,
                depth,
                self_time,
            })
            .unwrap();
        }
    }
    s.finish().unwrap();
    drop(s);
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn categories_from_v8_names() {
    let p = small_profile(
        "jitdump",
        &[
            (1, "JS:~main x.js:1:1"),
            (2, "JS:*fib x.js:2:1"),
            (3, "Builtin:ArrayMap"),
            (4, "LazyCompile:^g x.js:3"),
        ],
        &[
            (1, 0, 100, 0, 40),
            (2, 10, 40, 1, 20),
            (3, 20, 30, 2, 10),
            (4, 50, 80, 1, 30),
        ],
    );
    assert_eq!(p["meta"]["product"], "title");
    let cats = p["meta"]["categories"].as_array().unwrap();
    let t = thread(&p, "p");
    let ft = &t["frameTable"];
    let mut seen = BTreeMap::new();
    for f in 0..ft["length"].as_u64().unwrap() as usize {
        let func = ft["func"][f].as_u64().unwrap() as usize;
        let name = string(t, &t["funcTable"]["name"][func]);
        let cat = &cats[ft["category"][f].as_u64().unwrap() as usize];
        let sub = cat["subcategories"][ft["subcategory"][f].as_u64().unwrap() as usize]
            .as_str()
            .unwrap()
            .to_string();
        let is_js = t["funcTable"]["isJS"][func].as_bool().unwrap();
        seen.insert(
            name,
            (cat["name"].as_str().unwrap().to_string(), sub, is_js),
        );
    }
    let e = |c: &str, s: &str, js: bool| (c.to_string(), s.to_string(), js);
    assert_eq!(
        seen["JS:~main x.js:1:1"],
        e("JavaScript", "Interpreted", true)
    );
    assert_eq!(seen["JS:*fib x.js:2:1"], e("JavaScript", "Optimized", true));
    assert_eq!(
        seen["LazyCompile:^g x.js:3"],
        e("JavaScript", "Baseline", true)
    );
    assert_eq!(seen["Builtin:ArrayMap"].0, "Builtin");
    assert_eq!(p["meta"]["usesOnlyOneStackType"], false);
}

#[test]
fn weights_past_i32_max_are_split() {
    let five_s = 5_000_000_000u64;
    let p = small_profile("xray", &[(1, "main")], &[(1, 0, five_s, 0, five_s)]);
    let (got, total) = self_weights(thread(&p, "p"));
    assert_eq!(total, five_s);
    assert_eq!(got["main"], five_s);
    let cats = p["meta"]["categories"].as_array().unwrap();
    let t = thread(&p, "p");
    let c = t["frameTable"]["category"][0].as_u64().unwrap() as usize;
    assert_eq!(cats[c]["name"], "Native", "XRay functions are native code");
}

#[test]
fn gzip_unless_named_json() {
    let gz = scratch("synthetic.fxprof.json.gz");
    let plain = scratch("synthetic.fxprof.json");
    for path in [&gz, &plain] {
        let mut sink = profkit_export::open(
            Format::Firefox,
            &Output::path(path.to_path_buf()),
            &Options::default(),
        )
        .unwrap();
        synthetic::feed(&mut *sink).unwrap();
    }
    let raw = std::fs::read(&gz).unwrap();
    assert_eq!(&raw[..2], &[0x1f, 0x8b]);
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_end(&mut json)
        .unwrap();
    let a: Value = serde_json::from_slice(&json).unwrap();
    let b: Value = serde_json::from_slice(&std::fs::read(&plain).unwrap()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a, profile());
}

/// Issue #14 item 1: a call of 10^18 ns (a corrupt TSC jump) once became ~4.7 x 10^8 samples
/// of `i32::MAX` ns. Samples per gap are capped: the output stays bounded by the events.
#[test]
fn a_huge_time_gap_gives_a_bounded_number_of_samples() {
    let doc = small_profile(
        "xray",
        &[(1, "main")],
        &[(1, 0, 1_000_000_000_000_000_000, 0, 0)],
    );
    let t = &doc["threads"][0];
    let n = t["samples"]["length"].as_u64().unwrap();
    assert!(
        (1..=profkit_export::firefox::MAX_SAMPLES_PER_GAP + 1).contains(&n),
        "{n} samples"
    );
}
