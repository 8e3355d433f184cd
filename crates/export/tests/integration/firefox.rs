//! Firefox Profiler: the synthetic trace as a processed profile, read back as JSON: the
//! structure fxprof writes (meta versions, threads per process), call-tree self times equal
//! to exclusive traced time, markers with their fields, the JIT library resolving code
//! addresses, categories from V8 names, weights past `i32::MAX`, gzip output; sampled
//! stacks with their source lines (a frame per function and line, the function's file and
//! start line, its module as its library); what the Firefox Profiler app shows first (issue
//! #28): sample counts and traced milliseconds, the interval, counters past a handful as
//! markers, the busiest thread selected, one thread per trace thread.

use std::collections::BTreeMap;
use std::io::Read;

use profkit_export::firefox::FirefoxSink;
use profkit_export::{Format, Options, Output};
use profkit_model::events::{
    ArgValue, Counter, Enter, EventSink, Instant, ProcessInfo, Sample, ThreadInfo, TraceInfo,
};
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

/// Sample `i`'s weight: nanoseconds for a traced thread (`tracing-ms`: milliseconds in the
/// file), the count for a sampled one.
pub fn weight(t: &Value, i: usize) -> u64 {
    let s = &t["samples"];
    match s["weightType"].as_str().unwrap() {
        "tracing-ms" => (s["weight"][i].as_f64().unwrap() * 1e6).round() as u64,
        "samples" => s["weight"][i].as_u64().unwrap(),
        other => panic!("weight type {other}"),
    }
}

/// Self weight per leaf function and total weight of a thread's samples (ns when traced).
fn self_weights(t: &Value) -> (BTreeMap<String, u64>, u64) {
    let leaves = leaf_names(t);
    let s = &t["samples"];
    let mut out = BTreeMap::new();
    let mut total = 0;
    for (i, stack) in s["stack"].as_array().unwrap().iter().enumerate() {
        let w = weight(t, i);
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
        (meta["interval"].as_f64().unwrap() - 1e-4).abs() < 1e-12,
        "the sampling period: samples 100 ns apart"
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
        assert_eq!(t["samples"]["weightType"], "tracing-ms");
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
fn sampled_stacks_count_their_hits() {
    let p = profile();
    let t = thread(&p, "mono thread (samples)");
    assert_eq!(t["samples"]["weightType"], "samples");
    let (got, total) = self_weights(t);
    // Hits 1, 2, 1: a sample weighs its hits; the CPU time is hits x the 100 ns period.
    assert_eq!(total, 4);
    assert_eq!(got["lex"], 2);
    assert_eq!(got["eval"], 2);
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

/// Begins a trace of `format` named `n` with `table`, and declares process 1 (`p`).
fn begin<W: std::io::Write + Send>(
    s: &mut FirefoxSink<W>,
    format: &'static str,
    table: &FunctionTable,
) {
    s.begin(&TraceInfo {
        format,
        functions: table,
        clock: Clock::default(),
        origin_ns: 0,
        name: "n",
        samples: None,
        origin_unix_ns: None,
    })
    .unwrap();
    s.process(&ProcessInfo { pid: 1, name: "p" }).unwrap();
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
    begin(&mut s, format, &table);
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
            s.enter(&Enter::new(0, FuncId(func), time, depth)).unwrap();
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

/// A function: (id, name, file, start line, module).
type Func<'a> = (u32, &'a str, Option<&'a str>, u32, Option<&'a str>);

/// A sample: (thread, time, stack of (func id, line), outermost first).
type Sampled<'a> = (u32, u64, &'a [(u32, u32)]);

/// A sampled perf.data-like trace of `funcs` and `samples` on threads 0 (tid 1) and 1 (tid 2)
/// of pid 1.
fn sampled_profile(funcs: &[Func<'_>], samples: &[Sampled<'_>]) -> Value {
    let mut table = FunctionTable::new();
    for &(id, n, file, line, module) in funcs {
        table.insert(
            FuncId(id),
            FuncInfo {
                name: Some(n.to_string()),
                file: file.map(str::to_string),
                line,
                module: module.map(str::to_string),
                ..FuncInfo::default()
            },
        );
    }
    let mut out = Vec::new();
    let mut s = FirefoxSink::new(&mut out, false, None);
    begin(&mut s, "perf", &table);
    for (index, name) in [(0, "t"), (1, "u")] {
        s.thread(&ThreadInfo {
            index,
            pid: 1,
            tid: u64::from(index) + 1,
            name,
        })
        .unwrap();
    }
    for &(thread, time, frames) in samples {
        let stack: Vec<FuncId> = frames.iter().map(|f| FuncId(f.0)).collect();
        let lines: Vec<u32> = frames.iter().map(|f| f.1).collect();
        s.sample(&Sample {
            thread,
            time,
            stack: &stack,
            lines: &lines,
            weight: 1000,
            shared: 0,
        })
        .unwrap();
    }
    s.finish().unwrap();
    drop(s);
    let p: Value = serde_json::from_slice(&out).unwrap();
    check_tables(&p);
    p
}

/// The processed format's rules that the source columns touch: every column of the frame,
/// func, stack and sample tables has `length` entries; string indices are in `stringArray`;
/// func indices in `funcTable`.
fn check_tables(p: &Value) {
    for t in p["threads"].as_array().unwrap() {
        let strings = t["stringArray"].as_array().unwrap().len() as u64;
        for table in ["frameTable", "funcTable", "stackTable", "samples"] {
            let tb = &t[table];
            let n = tb["length"].as_u64().unwrap() as usize;
            for (k, col) in tb.as_object().unwrap() {
                if let Some(a) = col.as_array() {
                    assert_eq!(a.len(), n, "{table}.{k}");
                }
            }
        }
        let ft = &t["funcTable"];
        let funcs = ft["length"].as_u64().unwrap();
        for col in ["name", "fileName"] {
            for i in ft[col].as_array().unwrap() {
                assert!(
                    i.is_null() || i.as_u64().unwrap() < strings,
                    "funcTable.{col}"
                );
            }
        }
        for l in ft["lineNumber"].as_array().unwrap() {
            assert!(l.is_null() || l.as_u64().unwrap() > 0);
        }
        for f in t["frameTable"]["func"].as_array().unwrap() {
            assert!(f.as_u64().unwrap() < funcs);
        }
        for l in t["frameTable"]["line"].as_array().unwrap() {
            assert!(l.is_null() || l.as_u64().unwrap() > 0, "line 0 is null");
        }
    }
}

/// (func name, line) of each frame.
fn frame_lines(t: &Value) -> Vec<(String, Value)> {
    let ft = &t["frameTable"];
    (0..ft["length"].as_u64().unwrap() as usize)
        .map(|f| {
            let func = &ft["func"][f];
            (
                string(t, &t["funcTable"]["name"][func.as_u64().unwrap() as usize]),
                ft["line"][f].clone(),
            )
        })
        .collect()
}

/// The func index of the function named `name` (exactly one).
fn func_named(t: &Value, name: &str) -> usize {
    let ft = &t["funcTable"];
    let found: Vec<usize> = (0..ft["length"].as_u64().unwrap() as usize)
        .filter(|&f| string(t, &ft["name"][f]) == name)
        .collect();
    assert_eq!(found.len(), 1, "one func {name}");
    found[0]
}

const HOT: Func = (2, "hot", Some("src/hot.js"), 10, Some("app.js"));
const MAIN: Func = (1, "main", Some("src/main.js"), 1, Some("app.js"));
const LIBC: Func = (3, "memcpy", None, 0, Some("libc.so.6"));

#[test]
fn a_function_sampled_at_two_lines_has_two_frames_and_one_func() {
    let p = sampled_profile(
        &[MAIN, HOT, LIBC],
        &[
            (0, 0, &[(1, 3), (2, 12)]),
            (0, 100, &[(1, 3), (2, 15)]),
            (0, 200, &[(1, 3), (2, 12)]),
            (0, 300, &[(1, 4), (2, 15), (3, 0)]),
        ],
    );
    let t = thread(&p, "p");
    let mut hot: Vec<Value> = frame_lines(t)
        .into_iter()
        .filter(|(n, _)| n == "hot")
        .map(|(_, l)| l)
        .collect();
    hot.sort_by_key(|l| l.as_u64());
    assert_eq!(hot, [12, 15], "a frame per sampled line");
    let main: Vec<Value> = frame_lines(t)
        .into_iter()
        .filter(|(n, _)| n == "main")
        .map(|(_, l)| l)
        .collect();
    assert_eq!(main.len(), 2, "main at lines 3 and 4: {main:?}");
    // One func each, with the file (through stringArray) and start line.
    let ft = &t["funcTable"];
    let f = func_named(t, "hot");
    assert_eq!(string(t, &ft["fileName"][f]), "src/hot.js");
    assert_eq!(ft["lineNumber"][f], 10);
    let m = func_named(t, "main");
    assert_eq!(string(t, &ft["fileName"][m]), "src/main.js");
    assert_eq!(ft["lineNumber"][m], 1);
    assert_eq!(ft["isJS"][f], false);
    // A function with no file or line keeps nulls.
    let c = func_named(t, "memcpy");
    assert!(ft["fileName"][c].is_null() && ft["lineNumber"][c].is_null());
    assert!(ft["columnNumber"]
        .as_array()
        .unwrap()
        .iter()
        .all(Value::is_null));
    // Self weights per function count their samples.
    let (got, total) = self_weights(t);
    assert_eq!(total, 4);
    assert_eq!(got["hot"], 3);
    assert_eq!(got["memcpy"], 1);
    assert!(!got.contains_key("main"));
}

#[test]
fn a_frame_at_line_0_has_a_null_line() {
    let p = sampled_profile(
        &[MAIN, HOT, LIBC],
        &[(0, 0, &[(1, 0), (3, 0)]), (0, 100, &[(1, 7), (3, 0)])],
    );
    let t = thread(&p, "p");
    let mut lines = frame_lines(t);
    lines.sort_by_key(|(n, l)| (n.clone(), l.as_u64()));
    assert_eq!(
        lines,
        [
            ("main".to_string(), Value::Null),
            ("main".to_string(), 7.into()),
            ("memcpy".to_string(), Value::Null),
        ]
    );
}

#[test]
fn a_sampled_function_s_library_is_its_module() {
    let p = sampled_profile(
        &[MAIN, HOT, LIBC, (4, "mystery", None, 0, None)],
        &[(0, 0, &[(1, 3), (2, 12), (3, 0)]), (0, 100, &[(4, 0)])],
    );
    let t = thread(&p, "p");
    let libs = p["libs"].as_array().unwrap();
    let lib_of = |name: &str| {
        let f = func_named(t, name);
        let r = t["funcTable"]["resource"][f].as_u64().unwrap() as usize;
        let lib = t["resourceTable"]["lib"][r].as_u64().unwrap() as usize;
        libs[lib]["name"].as_str().unwrap().to_string()
    };
    assert_eq!(lib_of("main"), "app.js");
    assert_eq!(lib_of("hot"), "app.js");
    assert_eq!(lib_of("memcpy"), "libc.so.6");
    assert_eq!(
        lib_of("mystery"),
        "(unknown)",
        "no module: a library per kind"
    );
    // Nothing to symbolicate: the profile says it is symbolicated.
    assert_eq!(p["meta"]["symbolicated"], true);
    // The synthetic addresses are above the JIT libraries' range.
    for a in t["frameTable"]["address"].as_array().unwrap() {
        assert!(a.as_u64().unwrap() >= 0x8000_0000);
    }
}

#[test]
fn threads_sampling_one_function_get_its_file_each() {
    let p = sampled_profile(
        &[MAIN, HOT],
        &[
            (0, 0, &[(1, 3), (2, 12)]),
            (1, 0, &[(2, 15)]),
            (1, 100, &[(2, 12)]),
        ],
    );
    let mut addresses = Vec::new();
    for name in ["p", "u"] {
        let t = thread(&p, name);
        let f = func_named(t, "hot");
        assert_eq!(string(t, &t["funcTable"]["fileName"][f]), "src/hot.js");
        let ft = &t["frameTable"];
        for i in 0..ft["length"].as_u64().unwrap() as usize {
            if ft["func"][i] == f {
                addresses.push((ft["line"][i].as_u64().unwrap(), ft["address"][i].clone()));
            }
        }
    }
    // One address per (function, line), the same in both threads.
    addresses.sort_by_key(|a| a.0);
    addresses.dedup();
    assert_eq!(addresses.len(), 2, "{addresses:?}");
}

#[test]
fn traced_calls_and_jit_markers_keep_null_lines() {
    // Traced calls are label frames; the synthetic trace has sampled stacks, JIT code
    // markers and traced calls together.
    let p = profile();
    check_tables(&p);
    let mut synthetic = 0;
    for t in p["threads"].as_array().unwrap() {
        let ft = &t["frameTable"];
        for i in 0..ft["length"].as_u64().unwrap() as usize {
            let address = ft["address"][i].as_i64().unwrap();
            if address < 0x8000_0000 {
                assert!(ft["line"][i].is_null(), "label or JIT library frame");
                let func = ft["func"][i].as_u64().unwrap() as usize;
                assert!(t["funcTable"]["fileName"][func].is_null());
            } else {
                synthetic += 1;
            }
        }
    }
    assert!(synthetic > 0, "the Mono samples' frames");
    let t = thread(&p, "main");
    assert!(t["frameTable"]["address"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a.as_i64().unwrap() < 0x8000_0000));
}

// ---------------------------------------------------------------------------------------------
// Issue #28: what the Firefox Profiler app shows first.

/// Item 1 and 2: a sample weighs 1 (the call tree counts samples: "352 samples" for 352
/// samples, not their periods), its CPU time is the sampling period, and `meta.interval` is
/// that period in ms.
#[test]
fn sampled_weights_count_samples_and_the_interval_is_the_period() {
    let ms = 1_000_000;
    let p = sampled_profile(
        &[MAIN, HOT],
        &[
            (0, 0, &[(1, 3), (2, 12)]),
            (0, ms, &[(1, 3), (2, 15)]),
            (0, 2 * ms, &[(1, 3)]),
            (0, 3 * ms + 10, &[(2, 12)]),
            (1, 5 * ms, &[(2, 12)]),
        ],
    );
    assert_eq!(p["meta"]["interval"], 1.0, "the median gap: 1 ms");
    let t = thread(&p, "p");
    let s = &t["samples"];
    assert_eq!(s["weightType"], "samples");
    assert_eq!(s["weight"], serde_json::json!([1, 1, 1, 1]));
    // threadCPUDelta in µs (meta.sampleUnits): the period per sample.
    assert_eq!(
        s["threadCPUDelta"],
        serde_json::json!([1000, 1000, 1000, 1000])
    );
    // Every thread uses the recording's period, also one sampled once.
    let u = thread(&p, "u");
    assert_eq!(u["samples"]["threadCPUDelta"], serde_json::json!([1000]));
}

/// A one-call trace on a clock of `ticks_per_second`, through a sink of `format`.
fn traced_on_clock(format: &'static str, ticks_per_second: u64, time_ns: u64) -> Value {
    let mut table = FunctionTable::new();
    table.insert(
        FuncId(1),
        FuncInfo {
            name: Some("main".into()),
            ..FuncInfo::default()
        },
    );
    let mut out = Vec::new();
    let mut s = FirefoxSink::new(&mut out, false, None);
    s.begin(&TraceInfo {
        format,
        functions: &table,
        clock: Clock::new(ticks_per_second),
        origin_ns: 0,
        name: "n",
        samples: None,
        origin_unix_ns: None,
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
    s.enter(&Enter::new(0, FuncId(1), 0, 0)).unwrap();
    s.exit(&Span {
        func: FuncId(1),
        thread: 0,
        start: 0,
        end: time_ns,
        depth: 0,
        self_time: time_ns,
    })
    .unwrap();
    s.finish().unwrap();
    drop(s);
    serde_json::from_slice(&out).unwrap()
}

/// Item 1 and 2: traced calls weigh their time in milliseconds (`tracing-ms`: the call tree
/// says "Running Time (ms)"), fractions kept; the interval is the tracer's resolution: its
/// clock's tick, at least the nanosecond the times are in.
#[test]
fn traced_weights_are_milliseconds_and_the_interval_is_the_clock_tick() {
    let p = traced_on_clock("xray", 3_000_000_000, 1_234_567);
    let t = thread(&p, "p");
    assert_eq!(t["samples"]["weightType"], "tracing-ms");
    assert_eq!(t["samples"]["weight"], serde_json::json!([1.234567]));
    let interval = |p: &Value| p["meta"]["interval"].as_f64().unwrap();
    assert!((interval(&p) - 1e-6).abs() < 1e-12, "a 3 GHz TSC: 1 ns");
    let p = traced_on_clock("mlpd", 1_000_000, 5_000);
    assert!((interval(&p) - 1e-3).abs() < 1e-12, "a 1 MHz clock: 1 µs");
    assert_eq!(
        thread(&p, "p")["samples"]["weight"],
        serde_json::json!([0.005])
    );
}

/// Item 3: of Mono's performance counters only a handful are tracks (the GC heap, memory,
/// allocations, JIT-compiled methods, GC collections); the others are `counter` markers (marker
/// chart and table, not the timeline) on the process's busiest thread. Other inputs' counters
/// all stay tracks.
#[test]
fn mono_counters_past_a_handful_are_markers() {
    let run = |format: &'static str| -> Value {
        let table = FunctionTable::new();
        let mut out = Vec::new();
        let mut s = FirefoxSink::new(&mut out, false, None);
        begin(&mut s, format, &table);
        for (index, name) in [(0, "idle"), (1, "busy")] {
            s.thread(&ThreadInfo {
                index,
                pid: 1,
                tid: u64::from(index) + 10,
                name,
            })
            .unwrap();
        }
        s.sample(&Sample {
            thread: 1,
            time: 5,
            stack: &[],
            lines: &[],
            weight: 3,
            shared: 0,
        })
        .unwrap();
        for (i, name) in ["GC heap size", "User Time", "Working Set", "JIT/codegen"]
            .into_iter()
            .enumerate()
        {
            for k in 0..2u32 {
                s.counter(&Counter {
                    pid: 1,
                    name,
                    time: u64::from(k) * 100,
                    value: f64::from(k) + i as f64,
                })
                .unwrap();
            }
        }
        s.finish().unwrap();
        drop(s);
        serde_json::from_slice(&out).unwrap()
    };
    let counter_names = |p: &Value| -> Vec<String> {
        p["counters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    let p = run("mlpd");
    assert_eq!(counter_names(&p), ["GC heap size", "Working Set"]);
    let t = thread(&p, "busy");
    let m = &t["markers"];
    let mut seen: Vec<(String, f64)> = (0..m["length"].as_u64().unwrap() as usize)
        .map(|i| {
            assert_eq!(m["data"][i]["type"], "counter");
            (
                string(t, &m["name"][i]),
                m["data"][i]["value"].as_f64().unwrap(),
            )
        })
        .collect();
    seen.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(
        seen,
        [
            ("JIT/codegen".to_string(), 3.0),
            ("JIT/codegen".to_string(), 4.0),
            ("User Time".to_string(), 1.0),
            ("User Time".to_string(), 2.0),
        ]
    );
    let schema = p["meta"]["markerSchema"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "counter")
        .unwrap();
    let display: Vec<&str> = schema["display"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(
        display.contains(&"marker-table") && !display.contains(&"timeline-overview"),
        "{display:?}"
    );
    // Another input's counters are all tracks.
    assert_eq!(counter_names(&run("xray")).len(), 4);
}

/// Item 4: a thread whose markers come before its samples is one thread (its name, its real
/// tid), and the thread with the most sampled or traced time is selected when the profile
/// opens.
#[test]
fn one_thread_per_trace_thread_and_the_busiest_is_selected() {
    let table = FunctionTable::new();
    let mut out = Vec::new();
    let mut s = FirefoxSink::new(&mut out, false, None);
    begin(&mut s, "mlpd", &table);
    for (index, tid, name) in [(0, 3_841_674_176, "Main"), (1, 7, "Second")] {
        s.thread(&ThreadInfo {
            index,
            pid: 1,
            tid,
            name,
        })
        .unwrap();
    }
    s.instant(&Instant {
        thread: 0,
        time: 0,
        name: "gc",
        category: "gc",
        args: &[("generation", ArgValue::U64(0))],
    })
    .unwrap();
    // Second is sampled first, Main most.
    for (thread, time, weight) in [(1, 1, 1), (0, 10, 1), (0, 20, 2), (0, 30, 1)] {
        s.sample(&Sample {
            thread,
            time,
            stack: &[],
            lines: &[],
            weight,
            shared: 0,
        })
        .unwrap();
    }
    s.finish().unwrap();
    drop(s);
    let p: Value = serde_json::from_slice(&out).unwrap();
    let threads = p["threads"].as_array().unwrap();
    let names: Vec<&str> = threads
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let main = threads.iter().position(|t| t["name"] == "Main").unwrap();
    let t = &threads[main];
    assert_eq!(t["tid"], "3841674176", "the real tid, no `.1`");
    assert_eq!(t["markers"]["length"], 1);
    assert_eq!(t["samples"]["length"], 3);
    assert_eq!(
        p["meta"]["initialSelectedThreads"],
        serde_json::json!([main])
    );
}

/// Item 6: a function's file is the path as recorded (what a source server is asked for),
/// and a placeholder such as V8's `<unknown>` is no file.
#[test]
fn files_are_as_recorded_and_placeholders_are_none() {
    let p = sampled_profile(
        &[
            (1, "main", Some("/srv/app/main.js"), 1, Some("jit-1.dump")),
            (2, "anon", Some("<unknown>"), 0, Some("jit-1.dump")),
            (
                3,
                "builtin",
                Some("node:internal/console"),
                4,
                Some("jit-1.dump"),
            ),
            (
                4,
                "libc",
                Some("./csu/../sysdeps/x.h"),
                9,
                Some("libc.so.6"),
            ),
        ],
        &[(0, 0, &[(1, 2), (2, 0), (3, 5), (4, 10)])],
    );
    let t = thread(&p, "p");
    let ft = &t["funcTable"];
    let file = |name: &str| {
        let f = &ft["fileName"][func_named(t, name)];
        (!f.is_null()).then(|| string(t, f))
    };
    assert_eq!(file("main").as_deref(), Some("/srv/app/main.js"));
    assert_eq!(file("anon"), None);
    assert_eq!(file("builtin").as_deref(), Some("node:internal/console"));
    assert_eq!(file("libc").as_deref(), Some("./csu/../sysdeps/x.h"));
}
