//! The committed real files (tests/fixtures: clang-14 XRay FDR, Mono 6.8 log profiler, node
//! `--perf-prof` jitdump) fed through profkit-model's drivers into the Firefox, pprof, perf map
//! and Parquet writers, checked against the same stream recorded in memory.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::PathBuf;

use profkit_export::firefox::FirefoxSink;
use profkit_export::perfmap::PerfMapSink;
use profkit_export::pprof::PprofSink;
use profkit_export::Output;
use profkit_model::events::{CodeEvent, EventSink, Recorded, RecordedEvent};
use profkit_model::feed;
use serde_json::Value;

use crate::synthetic::scratch;

fn fixture(dir: &str, name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(dir)
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// An input of the fixtures.
#[derive(Clone, Copy, Debug)]
pub enum Input {
    /// XRay FDR trace of the demo program, symbolized from its binary.
    XrayFdr,
    /// A Mono log profiler file.
    Mlpd(&'static str),
    /// node `--perf-prof` jitdump (2210 code loads).
    NodeJitdump,
}

/// Feeds `input` to `sink` through profkit-model's driver.
pub fn feed(input: Input, sink: &mut dyn EventSink) {
    match input {
        Input::XrayFdr => {
            let bin = fixture("xray", "demo");
            let map = profkit_xray::InstrMap::from_object(&bin).unwrap();
            let sym = profkit_xray::Symbolizer::new(&bin).ok();
            let names = feed::xray::function_table(&map, sym.as_ref());
            let data = fixture("xray", "demo-fdr.xray");
            let trace = profkit_xray::Trace::parse(&data).unwrap();
            feed::xray::feed(&trace, &names, "demo-fdr.xray", &Default::default(), sink).unwrap();
        }
        Input::Mlpd(file) => {
            let data = fixture("mlpd", file);
            let f = profkit_mlpd::File::parse(&data).unwrap();
            let methods = feed::mlpd::methods(&f);
            feed::mlpd::feed(&f, &methods, file, None, sink).unwrap();
        }
        Input::NodeJitdump => {
            let gz = fixture("jitdump", "node-perf-prof.dump.gz");
            let mut data = Vec::new();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_end(&mut data)
                .unwrap();
            feed::jitdump::feed(&data, "node-perf-prof.dump", sink).unwrap();
        }
    }
}

/// The stream of `input` recorded in memory.
pub fn recorded(input: Input) -> Recorded {
    let mut r = Recorded::default();
    feed(input, &mut r);
    r
}

/// Exclusive time per thread index, from the recorded spans' durations and depths (a call's
/// duration minus its callees').
fn self_per_thread(r: &Recorded) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    let mut callees: HashMap<u32, Vec<u64>> = HashMap::new();
    for e in &r.events {
        if let RecordedEvent::Exit(s) = e {
            let c = callees.entry(s.thread).or_default();
            let d = s.depth as usize;
            if c.len() < d + 2 {
                c.resize(d + 2, 0);
            }
            let inner = std::mem::take(&mut c[d + 1]);
            c[d] += s.duration();
            *out.entry(s.thread).or_default() += s.duration() - inner;
        }
    }
    out
}

fn firefox(input: Input) -> Value {
    let mut out = Vec::new();
    {
        let mut s = FirefoxSink::new(&mut out, false, None);
        feed(input, &mut s);
    }
    serde_json::from_slice(&out).unwrap()
}

/// The sum of a thread's sample weights: traced ns (`tracing-ms`), or samples.
fn weights(t: &Value) -> u64 {
    let n = t["samples"]["length"].as_u64().unwrap() as usize;
    (0..n).map(|i| crate::firefox::weight(t, i)).sum()
}

/// Whether thread `t` counts samples (else it weighs traced time).
fn is_sampled(t: &Value) -> bool {
    t["samples"]["weightType"] == "samples"
}

#[test]
fn firefox_xray_weights_are_traced_time() {
    let r = recorded(Input::XrayFdr);
    let want: u64 = self_per_thread(&r).values().sum();
    let p = firefox(Input::XrayFdr);
    let threads = p["threads"].as_array().unwrap();
    assert!(threads.iter().all(|t| !is_sampled(t)), "traced time");
    let got: u64 = threads.iter().map(weights).sum();
    assert_eq!(
        got, want,
        "total sample weight = total exclusive (traced) time"
    );
    let markers: u64 = threads
        .iter()
        .map(|t| t["markers"]["length"].as_u64().unwrap())
        .sum();
    let instants = r
        .events
        .iter()
        .filter(|e| matches!(e, RecordedEvent::Instant { .. }))
        .count() as u64;
    assert_eq!(markers, instants);
    assert!(markers > 0, "the custom events");
    // Function names from the instrumentation map's symbols.
    let names: Vec<&str> = threads
        .iter()
        .flat_map(|t| t["stringArray"].as_array().unwrap())
        .filter_map(|s| s.as_str())
        .collect();
    assert!(names.iter().any(|n| n.contains("fib")), "{names:?}");
}

#[test]
fn firefox_node_jitdump_code_resolves() {
    let r = recorded(Input::NodeJitdump);
    let code: Vec<(u64, String)> = r
        .events
        .iter()
        .filter_map(|e| match e {
            RecordedEvent::Code { address, name, .. } => Some((*address, name.clone())),
            _ => None,
        })
        .collect();
    assert!(code.len() > 2000);
    let p = firefox(Input::NodeJitdump);
    assert!(p["libs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["name"] == "JIT"));
    let mut resolved = 0;
    for t in p["threads"].as_array().unwrap() {
        let m = &t["markers"];
        for i in 0..m["length"].as_u64().unwrap() as usize {
            let data = &m["data"][i];
            let name = t["stringArray"][data["name"].as_u64().unwrap() as usize]
                .as_str()
                .unwrap();
            let stack = data["cause"]["stack"].as_u64().unwrap() as usize;
            let frame = t["stackTable"]["frame"][stack].as_u64().unwrap() as usize;
            let func = t["frameTable"]["func"][frame].as_u64().unwrap() as usize;
            let fname = t["stringArray"][t["funcTable"]["name"][func].as_u64().unwrap() as usize]
                .as_str()
                .unwrap();
            assert_eq!(fname, name, "the marker's address resolves to its code");
            resolved += 1;
        }
    }
    assert_eq!(resolved, code.len());
    // V8 names get the JavaScript category.
    let cats: Vec<&str> = p["meta"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(cats.contains(&"JavaScript"));
}

#[test]
fn firefox_mono_samples_and_calls() {
    for file in ["cpu_sample.mlpd", "busy_calls.mlpd"] {
        let r = recorded(Input::Mlpd(file));
        let p = firefox(Input::Mlpd(file));
        let threads = p["threads"].as_array().unwrap();
        let hits: u64 = r
            .events
            .iter()
            .filter_map(|e| match e {
                RecordedEvent::Sample { weight, .. } => Some(*weight),
                _ => None,
            })
            .sum();
        let traced: u64 = self_per_thread(&r).values().sum();
        let (sampled, timed): (Vec<&Value>, Vec<&Value>) =
            threads.iter().partition(|t| is_sampled(t));
        // Issue #28 item 1: hits count as samples, traced calls as time.
        assert_eq!(
            sampled.iter().map(|t| weights(t)).sum::<u64>(),
            hits,
            "{file}"
        );
        assert_eq!(
            timed.iter().map(|t| weights(t)).sum::<u64>(),
            traced,
            "{file}"
        );
        assert!(p["libs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["name"] == "JIT"));
        // Item 3: Mono's ~240 performance counters are a handful of tracks and markers.
        let counters = p["counters"].as_array().unwrap().len();
        assert!(
            (1..=5).contains(&counters),
            "{file}: {counters} counter tracks"
        );
        let counter_markers: usize = threads
            .iter()
            .map(|t| {
                let m = &t["markers"];
                (0..m["length"].as_u64().unwrap() as usize)
                    .filter(|&i| m["data"][i]["type"] == "counter")
                    .count()
            })
            .sum();
        assert!(
            counter_markers > 200,
            "{file}: {counter_markers} counter markers"
        );
        // Item 4: the busiest thread is selected; tids are the file's (no `.1`).
        let selected = p["meta"]["initialSelectedThreads"][0].as_u64().unwrap() as usize;
        let busiest = |t: &Value| {
            if is_sampled(t) {
                // (hits x the sampling period in ms, as ns)
                weights(t) * (p["meta"]["interval"].as_f64().unwrap() * 1e6) as u64
            } else {
                weights(t)
            }
        };
        let most = threads.iter().map(busiest).max().unwrap();
        assert_eq!(busiest(&threads[selected]), most, "{file}");
        assert!(weights(&threads[selected]) > 0, "{file}");
        for t in threads {
            let tid = t["tid"].as_str().unwrap();
            assert!(!tid.contains('.'), "{file}: tid {tid}");
        }
        if file == "cpu_sample.mlpd" {
            assert_eq!(threads[selected]["name"], "Main");
            assert!(threads
                .iter()
                .all(|t| !t["name"].as_str().unwrap().ends_with("(samples)")));
            // Item 2: the interval is the sampling period (the file samples every 20 ms).
            let interval = p["meta"]["interval"].as_f64().unwrap();
            assert!((19.0..21.0).contains(&interval), "{interval} ms");
        } else {
            assert_eq!(threads[selected]["name"], "MainWorker");
            let interval = p["meta"]["interval"].as_f64().unwrap();
            assert!(
                (interval - 1e-6).abs() < 1e-12,
                "Mono's clock: ns, not {interval}"
            );
        }
    }
}

/// Issue #28 items 1, 2 and 5 on the node `-g` recording: 352 samples of node's main thread
/// count as 352 samples, the interval is the 999 Hz period, and frame-pointer chains end at
/// the first return address no mapping holds (no `0x643134373334782f`-like root made of ASCII
/// bytes, no `0x0000000000000000`), counted in the driver's report.
#[test]
fn firefox_perf_data_counts_samples_and_ends_broken_chains() {
    use profkit_model::feed::perf::{JitSearch, PerfOptions};
    let dir = scratch("firefox-node-fp");
    std::fs::create_dir_all(&dir).unwrap();
    let gz = fixture("perf", "node-fp.jit-30519.dump.gz");
    let mut dump = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut dump)
        .unwrap();
    std::fs::write(dir.join("jit-30519.dump"), dump).unwrap();
    let nowhere = PathBuf::from("/nonexistent/profkit-test");
    let opts = PerfOptions {
        jit: JitSearch {
            dump_files: vec![(30519, dir.join("jit-30519.dump"))],
            tmp: nowhere,
            ..JitSearch::default()
        },
        kallsyms: Some(PathBuf::from("/nonexistent/kallsyms")),
        ..PerfOptions::default()
    };
    let data = fixture("perf", "node-fp.data");
    let mut out = Vec::new();
    let report = {
        let mut s = FirefoxSink::new(&mut out, false, None);
        let (_, report) = feed::perf::feed(&data, "node-fp.data", &opts, None, &mut s).unwrap();
        report
    };
    let p: Value = serde_json::from_slice(&out).unwrap();
    let threads = p["threads"].as_array().unwrap();
    let node = threads.iter().find(|t| t["tid"] == "30519").unwrap();
    assert_eq!(node["samples"]["weightType"], "samples");
    // perf report --stats: 355 samples, 352 of them node's main thread.
    assert_eq!(weights(node), 352);
    assert_eq!(threads.iter().map(weights).sum::<u64>(), 355);
    let interval = p["meta"]["interval"].as_f64().unwrap();
    assert!((0.9..1.1).contains(&interval), "{interval} ms at -F 999");
    let selected = p["meta"]["initialSelectedThreads"][0].as_u64().unwrap() as usize;
    assert_eq!(threads[selected]["tid"], "30519");
    // The roots of the call tree: no address-named function made of ASCII or zeros.
    for t in threads {
        let st = &t["stackTable"];
        let samples = &t["samples"]["stack"];
        for s in samples.as_array().unwrap() {
            let Some(mut s) = s.as_u64().map(|s| s as usize) else {
                continue;
            };
            while let Some(prefix) = st["prefix"][s].as_u64() {
                s = prefix as usize;
            }
            let frame = st["frame"][s].as_u64().unwrap() as usize;
            let func = t["frameTable"]["func"][frame].as_u64().unwrap() as usize;
            let name = t["stringArray"][t["funcTable"]["name"][func].as_u64().unwrap() as usize]
                .as_str()
                .unwrap();
            let hex = name
                .strip_prefix("0x")
                .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(!hex, "root {name}");
        }
    }
    assert!(report.fp_cut.samples > 0 && report.fp_cut.frames >= report.fp_cut.samples);
    assert!(report
        .warnings()
        .iter()
        .any(|w| w.contains("frame-pointer callchains ended")));
}

#[test]
fn pprof_totals_on_real_inputs() {
    for input in [
        Input::XrayFdr,
        Input::Mlpd("busy_calls.mlpd"),
        Input::Mlpd("cpu_sample.mlpd"),
    ] {
        let r = recorded(input);
        let mut pb = Vec::new();
        {
            let mut s = PprofSink::new(&mut pb, false, false);
            feed(input, &mut s);
        }
        let d = crate::pprof::decode(&pb);
        assert_eq!(d.strings[0], "");
        let col = |name: &str| d.sample_types.iter().position(|t| t.0 == name);
        let sum = |i: usize| d.samples.iter().map(|s| s.1[i]).sum::<u64>();
        let exits = r
            .events
            .iter()
            .filter(|e| matches!(e, RecordedEvent::Exit(_)))
            .count() as u64;
        let traced: u64 = self_per_thread(&r).values().sum();
        let hits: u64 = r
            .events
            .iter()
            .filter_map(|e| match e {
                RecordedEvent::Sample { weight, .. } => Some(*weight),
                _ => None,
            })
            .sum();
        if exits > 0 {
            assert_eq!(sum(col("calls").unwrap()), exits, "{input:?}");
            assert_eq!(sum(col("time").unwrap()), traced, "{input:?}");
        }
        if hits > 0 {
            assert_eq!(sum(col("samples").unwrap()), hits, "{input:?}");
        }
    }
}

#[test]
fn perf_map_from_jitdump_and_xray() {
    // node: every code load, no reuse in this file.
    let r = recorded(Input::NodeJitdump);
    let mut live: HashMap<u64, String> = HashMap::new();
    for e in &r.events {
        if let RecordedEvent::Code {
            address,
            name,
            event,
            ..
        } = e
        {
            if let CodeEvent::Move { old_address } = event {
                live.remove(old_address);
            }
            live.insert(*address, name.replace('\n', " "));
        }
    }
    let path = scratch("real-node.map");
    {
        let mut s = PerfMapSink::new(Output::path(path.clone()));
        feed(Input::NodeJitdump, &mut s);
    }
    let text = std::fs::read(&path).unwrap();
    let mut got = HashMap::new();
    for e in profkit_jitdump::perfmap::entries(&text) {
        let e = e.unwrap();
        got.insert(e.start, String::from_utf8(e.name.to_vec()).unwrap());
    }
    assert_eq!(got, live);
    assert!(profkit_jitdump::perfmap::looks_like_perf_map(&text));

    // XRay: the instrumented functions' addresses from the instrumentation map.
    let path = scratch("real-xray.map");
    {
        let mut s = PerfMapSink::new(Output::path(path.clone()));
        feed(Input::XrayFdr, &mut s);
    }
    let text = std::fs::read(&path).unwrap();
    let entries: Vec<_> = profkit_jitdump::perfmap::entries(&text)
        .map(|e| e.unwrap())
        .collect();
    let with_addr = r_xray_addresses();
    assert_eq!(entries.len(), with_addr);
    assert!(entries.iter().all(|e| e.size > 0));
}

fn r_xray_addresses() -> usize {
    let r = recorded(Input::XrayFdr);
    let mut a: Vec<u64> = r
        .functions
        .unwrap()
        .iter()
        .filter_map(|(_, f)| f.address)
        .collect();
    a.sort_unstable();
    a.dedup();
    a.len()
}

/// Parquet of the XRay trace and the node jitdump, read by DuckDB: per-function counts and
/// totals equal profkit-model's accounting of the same spans; one code row per code event.
#[cfg(feature = "parquet")]
#[test]
fn parquet_real_inputs_in_duckdb() {
    use profkit_analysis::account::Accounting;
    use profkit_export::parquet::ParquetSink;

    use crate::parquet::{duckdb, duckdb_python};

    let Some(py) = duckdb_python("parquet_real_inputs_in_duckdb") else {
        return;
    };
    let dir = scratch("parquet-real");
    std::fs::create_dir_all(&dir).unwrap();
    {
        let mut s = ParquetSink::create(&dir.join("xray.parquet")).unwrap();
        feed(Input::XrayFdr, &mut s);
        let mut s = ParquetSink::create(&dir.join("node.parquet")).unwrap();
        feed(Input::NodeJitdump, &mut s);
    }
    let r = recorded(Input::XrayFdr);
    let mut acc = Accounting::default();
    for e in &r.events {
        if let RecordedEvent::Exit(s) = e {
            acc.record(s.func, s.duration());
        }
    }
    let want: BTreeMap<u64, (u64, u64)> = acc
        .rows()
        .into_iter()
        .map(|row| (u64::from(row.func.0), (row.count, row.sum)))
        .collect();
    let node_code = recorded(Input::NodeJitdump)
        .events
        .iter()
        .filter(|e| matches!(e, RecordedEvent::Code { .. }))
        .count();
    let out = duckdb(
        &py,
        &dir,
        &[
            "SELECT function_id, count(*), sum(end_ns - start_ns) FROM 'xray.parquet' GROUP BY 1",
            "SELECT count(*), count(DISTINCT address), min(source) FROM 'node.code.parquet'",
            "SELECT count(*) FROM 'xray.events.parquet'",
            "SELECT sum(self_ns) FROM 'xray.parquet'",
        ],
    );
    let got: BTreeMap<u64, (u64, u64)> = out[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row[0].as_u64().unwrap(),
                (row[1].as_u64().unwrap(), row[2].as_u64().unwrap()),
            )
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(out[1][0][0].as_u64().unwrap() as usize, node_code);
    assert_eq!(out[1][0][2], "node-perf-prof.dump");
    assert!(out[2][0][0].as_u64().unwrap() > 0, "custom events");
    let traced: u64 = self_per_thread(&r).values().sum();
    assert!(traced > 0);
    assert_eq!(out[3][0][0].as_u64().unwrap(), traced);
}

/// Golden outputs of the Firefox, pprof and perf map writers on the real fixtures (the Chrome,
/// Perfetto, speedscope and folded goldens are in `viewer_fixtures`); `PROFKIT_BLESS=1`
/// rewrites them after a deliberate change.
#[test]
fn golden_outputs_of_real_files() {
    use crate::synthetic::golden;
    for (input, tag) in [
        (Input::XrayFdr, "demo-fdr.xray"),
        (Input::Mlpd("cpu_sample.mlpd"), "cpu_sample.mlpd"),
        (Input::Mlpd("hello_calls.mlpd"), "hello_calls.mlpd"),
    ] {
        let mut json = Vec::new();
        {
            let mut s = FirefoxSink::new(&mut json, false, None);
            feed(input, &mut s);
        }
        // Pretty-printed so a difference reads as a diff.
        let v: Value = serde_json::from_slice(&json).unwrap();
        golden(
            &format!("{tag}.firefox.json"),
            serde_json::to_string_pretty(&v).unwrap().as_bytes(),
        );
        let mut pb = Vec::new();
        {
            let mut s = PprofSink::new(&mut pb, false, false);
            feed(input, &mut s);
        }
        golden(&format!("{tag}.pprof.pb"), &pb);
    }
    let path = scratch("golden-node.map");
    {
        let mut s = PerfMapSink::new(Output::path(path.clone()));
        feed(Input::NodeJitdump, &mut s);
    }
    let from_sink = std::fs::read(&path).unwrap();
    golden("node-perf-prof.dump.map", &from_sink);
    // One perf-map meaning: profkit-jitdump's own conversion (what `profkit convert
    // x.dump -o x.map` runs) writes the same file as the event-stream sink.
    let gz = fixture("jitdump", "node-perf-prof.dump.gz");
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut data)
        .unwrap();
    let dump = profkit_jitdump::JitDump::parse(&data).unwrap();
    let mut direct = Vec::new();
    profkit_jitdump::convert::jitdump_to_perf_map(&dump, &mut direct).unwrap();
    assert!(
        direct == from_sink,
        "jitdump_to_perf_map and PerfMapSink disagree"
    );
}
