//! Perfetto protobuf: the synthetic trace against a golden file, and decoded with Perfetto's
//! own protos (PyPI `perfetto`, through scripts/export/perfetto_decode.py) with its content
//! checked: tracks, slice names and nesting, instants and their annotations, counters.

use std::collections::HashMap;
use std::process::Command;

use profkit_export::perfetto::{uuid, PerfettoWriter};
use serde_json::Value;

use crate::synthetic::{self, call_count, check_output, expected_spans, golden, scratch, script};

fn output() -> Vec<u8> {
    synthetic::run(PerfettoWriter::new(Vec::new())).into_inner()
}

#[test]
fn golden_synthetic() {
    golden("synthetic.pftrace", &output());
}

/// Decodes `bytes` with Perfetto's protos; `None` when the tools are missing (and allowed to be).
pub fn decode(test: &str, bytes: &[u8], file: &str) -> Option<Value> {
    let python = synthetic::python(test)?;
    let path = scratch(file);
    std::fs::write(&path, bytes).unwrap();
    let out = check_output(
        Command::new(python)
            .arg(script("perfetto_decode.py"))
            .arg(&path),
    );
    Some(serde_json::from_str(&out).unwrap())
}

#[test]
fn decodes_with_perfettos_protos() {
    let Some(doc) = decode(
        "perfetto::decodes_with_perfettos_protos",
        &output(),
        "synthetic.pftrace",
    ) else {
        return;
    };
    assert_eq!(doc["sequences"], serde_json::json!([1]));
    let tracks = doc["tracks"].as_object().unwrap();
    let track = |u: u64| &tracks[&u.to_string()];
    assert_eq!(track(uuid::process(100))["name"], "demo-app");
    assert_eq!(track(uuid::process(200))["name"], "worker-proc");
    for (index, pid, tid, name) in synthetic::THREADS {
        let t = track(uuid::thread(index));
        assert_eq!(t["kind"], "thread");
        assert_eq!(t["pid"], pid);
        assert_eq!(t["name"], name);
        let shown = if tid > i32::MAX as u64 {
            (1 << 30) + u64::from(index)
        } else {
            tid
        };
        assert_eq!(t["tid"], shown);
    }
    let counters: Vec<&Value> = tracks.values().filter(|t| t["kind"] == "counter").collect();
    assert_eq!(counters.len(), 2);
    assert!(counters
        .iter()
        .any(|t| t["name"] == "heap" && t["parent"] == uuid::process(100)));

    let events = doc["events"].as_array().unwrap();
    let of_type = |ty: &str| {
        events
            .iter()
            .filter(|e| e["type"] == ty)
            .collect::<Vec<_>>()
    };
    assert_eq!(of_type("TYPE_SLICE_BEGIN").len(), call_count());
    assert_eq!(of_type("TYPE_SLICE_END").len(), call_count());

    // Rebuild the slices per track: names, nesting and times are the calls'.
    let thread_of: HashMap<String, u32> = synthetic::THREADS
        .iter()
        .map(|t| (uuid::thread(t.0).to_string(), t.0))
        .collect();
    let mut open: HashMap<&str, Vec<(String, u64)>> = HashMap::new();
    let mut spans = Vec::new();
    let mut last_ts: HashMap<&str, u64> = HashMap::new();
    for e in events {
        let track = e["track"].as_str().unwrap();
        let ts = e["ts"].as_u64().unwrap();
        let last = last_ts.entry(track).or_insert(0);
        assert!(ts >= *last, "time goes back on track {track}");
        *last = ts;
        match e["type"].as_str().unwrap() {
            "TYPE_SLICE_BEGIN" => open
                .entry(track)
                .or_default()
                .push((e["name"].as_str().unwrap().to_string(), ts)),
            "TYPE_SLICE_END" => {
                let (name, start) = open.get_mut(track).unwrap().pop().expect("balanced");
                spans.push((thread_of[track], name, start, ts));
            }
            _ => {}
        }
    }
    assert!(open.values().all(Vec::is_empty));
    spans.sort();
    assert_eq!(spans, expected_spans());

    // Instants with their payloads.
    let instants = of_type("TYPE_INSTANT");
    let by_cat = |c: &str| {
        instants
            .iter()
            .filter(|e| e["categories"][0] == c)
            .collect::<Vec<_>>()
    };
    let custom = by_cat("xray.custom");
    assert_eq!(custom.len(), 1);
    assert_eq!(custom[0]["name"], "custom event");
    assert_eq!(custom[0]["annotations"]["payload"], "hello \"xray\"");
    assert_eq!(custom[0]["annotations"]["n"], 5);
    let typed = by_cat("xray.typed")[0];
    assert_eq!(typed["annotations"]["payload"], "00ff01");
    assert_eq!(typed["annotations"]["neg"], -4);
    assert_eq!(typed["annotations"]["f"], 1.5);
    assert_eq!(typed["annotations"]["s"], "a\"b");
    assert!(
        by_cat("sample").is_empty(),
        "samples are perf samples, not instants"
    );
    let samples = doc["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 3);
    let names = |s: &Value| -> Vec<String> {
        s["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&samples[0]), ["eval", "lex"]);
    assert_eq!(samples[0]["cpu_mode"], "MODE_USER");
    let jit = by_cat("jit");
    assert_eq!(jit.len(), 2);
    assert_eq!(jit[0]["annotations"]["address"], 0x1000);
    assert_eq!(jit[0]["track"], uuid::thread(0).to_string());
    assert_eq!(jit[1]["track"], uuid::process(200).to_string());
    assert_eq!(jit[1]["annotations"]["old_address"], 0x1000);

    // Counters.
    let values: Vec<f64> = of_type("TYPE_COUNTER")
        .iter()
        .map(|e| e["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [1.0, 2.5, 0.0, 4096.0]);
}
