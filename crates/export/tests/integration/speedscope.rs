//! speedscope: the synthetic trace against a golden file; parsed back and checked (frames,
//! balanced evented profiles per thread, the sampled profile); validated against the JSON
//! schema shipped in the npm `speedscope` package; loaded into the real speedscope app in
//! headless Chromium (scripts/export/speedscope_render.mjs).

use std::collections::HashMap;
use std::process::Command;

use profkit_export::speedscope::SpeedscopeWriter;
use serde_json::Value;

use crate::synthetic::{self, call_count, check_output, expected_spans, golden, scratch, script};

fn output() -> Vec<u8> {
    synthetic::run(SpeedscopeWriter::new(Vec::new())).into_inner()
}

#[test]
fn golden_synthetic() {
    golden("synthetic.speedscope.json", &output());
}

#[test]
fn profiles_are_balanced_and_complete() {
    let doc: Value = serde_json::from_slice(&output()).unwrap();
    assert_eq!(doc["$schema"], profkit_export::speedscope::SCHEMA_URL);
    assert_eq!(doc["name"], "synthetic trace");
    let frames: Vec<&str> = doc["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let mut unique = frames.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        frames.len(),
        "frames are shared, not repeated"
    );
    let main = &doc["shared"]["frames"][frames.iter().position(|&f| f == "main").unwrap()];
    assert_eq!(main["file"], "main.c");
    assert_eq!(main["line"], 10);

    let profiles = doc["profiles"].as_array().unwrap();
    let evented: Vec<&Value> = profiles.iter().filter(|p| p["type"] == "evented").collect();
    assert_eq!(evented.len(), 3, "one per thread with calls");
    let mut spans = Vec::new();
    let mut opens = 0;
    for (thread, p) in evented.iter().enumerate() {
        assert_eq!(p["unit"], "nanoseconds");
        let mut stack: Vec<(u64, u64)> = Vec::new();
        let mut last = p["startValue"].as_u64().unwrap();
        for e in p["events"].as_array().unwrap() {
            let at = e["at"].as_u64().unwrap();
            let frame = e["frame"].as_u64().unwrap();
            assert!(at >= last, "events in time order");
            last = at;
            match e["type"].as_str().unwrap() {
                "O" => {
                    opens += 1;
                    stack.push((frame, at));
                }
                "C" => {
                    let (open, start) = stack.pop().expect("balanced");
                    assert_eq!(open, frame, "closes the innermost frame");
                    spans.push((thread as u32, frames[frame as usize].to_string(), start, at));
                }
                t => panic!("event type {t}"),
            }
        }
        assert!(stack.is_empty());
        assert_eq!(p["endValue"].as_u64().unwrap(), last);
    }
    assert_eq!(opens, call_count());
    spans.sort();
    assert_eq!(spans, expected_spans());

    let sampled: Vec<&Value> = profiles.iter().filter(|p| p["type"] == "sampled").collect();
    assert_eq!(sampled.len(), 1);
    let s = sampled[0];
    let stacks: Vec<Vec<&str>> = s["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|st| {
            st.as_array()
                .unwrap()
                .iter()
                .map(|f| frames[f.as_u64().unwrap() as usize])
                .collect()
        })
        .collect();
    assert_eq!(
        stacks,
        [vec!["eval", "lex"], vec!["eval"], vec!["eval", "lex"]]
    );
    assert_eq!(s["weights"], serde_json::json!([1, 2, 1]));
    assert_eq!(
        s["endValue"].as_u64().unwrap() - s["startValue"].as_u64().unwrap(),
        4
    );
}

#[test]
fn unbalanced_input_stays_balanced() {
    use profkit_model::events::{Enter, EventSink};
    use profkit_model::func::{FuncId, FunctionTable};
    use profkit_model::span::Span;
    let mut w = SpeedscopeWriter::new(Vec::new());
    let table = FunctionTable::new();
    w.begin(&profkit_model::events::TraceInfo {
        format: "t",
        functions: &table,
        clock: profkit_model::Clock::default(),
        origin_ns: 0,
        name: "t",
        samples: None,
        origin_unix_ns: None,
    })
    .unwrap();
    // An exit with nothing open, then a call never closed.
    w.exit(&Span {
        func: FuncId(1),
        thread: 0,
        start: 0,
        end: 5,
        depth: 0,
        self_time: 5,
    })
    .unwrap();
    w.enter(&Enter::new(0, FuncId(2), 10, 0)).unwrap();
    w.finish().unwrap();
    let doc: Value = serde_json::from_slice(w.get_ref()).unwrap();
    let events = doc["profiles"][0]["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1]["type"], "C");
}

/// Writes the synthetic trace to a scratch file and returns its path.
fn scratch_file() -> std::path::PathBuf {
    let path = scratch("synthetic.speedscope.json");
    std::fs::write(&path, output()).unwrap();
    path
}

#[test]
fn valid_against_the_shipped_schema() {
    const TEST: &str = "speedscope::valid_against_the_shipped_schema";
    let (Some(python), Some(modules)) = (synthetic::python(TEST), synthetic::node_modules(TEST))
    else {
        return;
    };
    let schema = modules.join("speedscope/dist/release/file-format-schema.json");
    let out = check_output(
        Command::new(python)
            .arg(script("speedscope_schema.py"))
            .arg(scratch_file())
            .arg(schema),
    );
    assert_eq!(out.trim(), "ok");
}

#[test]
fn renders_in_speedscope_in_chromium() {
    const TEST: &str = "speedscope::renders_in_speedscope_in_chromium";
    let (Some(modules), Some(chromium)) =
        (synthetic::node_modules(TEST), synthetic::chromium(TEST))
    else {
        return;
    };
    let shot = scratch("synthetic.speedscope.png");
    let out = check_output(
        Command::new("node")
            .arg(script("speedscope_render.mjs"))
            .arg(modules)
            .arg(chromium)
            .arg(scratch_file())
            .arg(&shot),
    );
    let summary: HashMap<String, Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["problems"], serde_json::json!([]), "{out}");
    assert_eq!(summary["title"], "synthetic trace - speedscope", "{out}");
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000, "{out}");
}
