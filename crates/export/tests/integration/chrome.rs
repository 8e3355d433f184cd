//! Chrome Trace Event JSON: the synthetic trace against a golden file, parsed back with
//! serde_json and checked event by event; gzip output; nanosecond timestamps.

use std::collections::HashMap;
use std::io::Read;

use profkit_export::chrome::ChromeWriter;
use profkit_export::{Format, Options, Output};
use serde_json::Value;

use crate::synthetic::{self, call_count, golden, name, scratch};

fn output() -> Vec<u8> {
    synthetic::run(ChromeWriter::new(Vec::new())).into_inner()
}

fn events(doc: &Value) -> &Vec<Value> {
    doc["traceEvents"].as_array().expect("traceEvents array")
}

#[test]
fn golden_synthetic() {
    golden("synthetic.chrome.json", &output());
}

#[test]
fn parses_and_holds_every_event() {
    let out = output();
    let doc: Value = serde_json::from_slice(&out).expect("valid JSON");
    assert_eq!(doc["displayTimeUnit"], "ns");
    let evs = events(&doc);
    let by_ph = |ph: &str| evs.iter().filter(|e| e["ph"] == ph).collect::<Vec<_>>();

    // Metadata: two processes, three threads, the 64-bit tid shown as 2^30 + index.
    let meta = by_ph("M");
    let pname: HashMap<u64, &str> = meta
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pname,
        HashMap::from([(100, "demo-app"), (200, "worker-proc")])
    );
    let tname: HashMap<(u64, u64), &str> = meta
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (
                (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tname,
        HashMap::from([
            ((100, 100), "main"),
            ((100, 101), "io"),
            ((200, (1 << 30) + 2), "mono thread")
        ])
    );

    // One X event per call — or a B/E pair for the call whose callee starts at the same
    // nanosecond (eval and fib at 5000 on thread 0) — names from the function table (escaped
    // characters survive).
    let mut xs = by_ph("X");
    let bs = by_ph("B");
    assert_eq!(bs.len(), 1);
    assert_eq!(bs[0]["name"], "eval");
    assert_eq!(by_ph("E").len(), 1);
    assert_eq!(xs.len() + bs.len(), call_count());
    xs.extend(bs);
    let names: Vec<&str> = xs.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert!(names.contains(&name(6).as_str()), "{names:?}");
    assert!(names.contains(&"#7"));
    let eval = xs
        .iter()
        .find(|e| e["name"] == "eval" && e["tid"] == (1u64 << 30) + 2)
        .unwrap();
    assert_eq!(eval["ts"].as_f64(), Some(0.0));
    assert_eq!(eval["dur"].as_f64(), Some(123_456.789));

    // Instants: payloads as text, or hex when not UTF-8; numbers as numbers.
    let inst = by_ph("i");
    let custom = inst.iter().find(|e| e["cat"] == "xray.custom").unwrap();
    assert_eq!(custom["args"]["payload"], "hello \"xray\"");
    assert_eq!(custom["args"]["n"], 5);
    assert_eq!(custom["ts"].as_f64(), Some(0.3));
    let typed = inst.iter().find(|e| e["cat"] == "xray.typed").unwrap();
    assert_eq!(typed["args"]["payload"], "00ff01");
    assert_eq!(typed["args"]["neg"], -4);
    assert_eq!(typed["args"]["f"], 1.5);
    assert_eq!(typed["args"]["s"], "a\"b");
    let jit: Vec<_> = inst.iter().filter(|e| e["cat"] == "jit").collect();
    assert_eq!(jit.len(), 2);
    assert_eq!(jit[0]["args"]["address"], "0x1000");
    assert_eq!(jit[0]["args"]["code_index"], 1);
    assert_eq!(jit[1]["s"], "p");
    assert_eq!(jit[1]["args"]["event"], "move");
    assert_eq!(jit[1]["args"]["old_address"], "0x1000");
    let samples: Vec<_> = inst.iter().filter(|e| e["cat"] == "sample").collect();
    assert_eq!(samples.len(), 3);
    assert_eq!(samples[0]["name"], "lex");
    assert_eq!(samples[0]["args"]["stack"], "eval;lex");

    // Counters.
    let cs = by_ph("C");
    assert_eq!(cs.len(), synthetic::COUNTERS.len());
    assert_eq!(cs[1]["name"], "heap");
    assert_eq!(cs[1]["args"]["value"], 2.5);
    assert_eq!(cs[1]["ts"].as_f64(), Some(5.0));
}

#[test]
fn timestamps_have_three_decimals() {
    let out = String::from_utf8(output()).unwrap();
    let mut seen = 0;
    for key in ["\"ts\":", "\"dur\":"] {
        for (at, _) in out.match_indices(key) {
            let num: String = out[at + key.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let (_, frac) = num.split_once('.').unwrap_or_else(|| panic!("{num}"));
            assert_eq!(frac.len(), 3, "{num}");
            seen += 1;
        }
    }
    assert!(seen > 20);
}

/// Rebuilds the calls from X and B/E events, in file order as viewers do for equal
/// timestamps: (pid, tid, name, start ns, end ns), sorted; checks that B/E pairs match.
fn calls(doc: &Value) -> Vec<(u64, u64, String, u64, u64)> {
    // Back to integer ns through the text, exactly.
    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    let mut open: HashMap<(u64, u64), Vec<(String, u64)>> = HashMap::new();
    let mut out = Vec::new();
    for e in events(doc) {
        let key = || (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        match e["ph"].as_str().unwrap() {
            "X" => {
                let start = ns(&e["ts"]);
                let (pid, tid) = key();
                let name = e["name"].as_str().unwrap().to_string();
                out.push((pid, tid, name, start, start + ns(&e["dur"])));
            }
            "B" => open
                .entry(key())
                .or_default()
                .push((e["name"].as_str().unwrap().to_string(), ns(&e["ts"]))),
            "E" => {
                let (name, start) = open.get_mut(&key()).unwrap().pop().expect("E after B");
                let (pid, tid) = key();
                out.push((pid, tid, name, start, ns(&e["ts"])));
            }
            _ => {}
        }
    }
    assert!(open.values().all(Vec::is_empty));
    out.sort();
    out
}

#[test]
fn calls_nest_per_thread() {
    let doc: Value = serde_json::from_slice(&output()).unwrap();
    let all = calls(&doc);
    assert_eq!(all.len(), call_count());
    // Replay each thread's events as a viewer does: stable-sorted by start time, file order
    // kept at equal times; each call must fit in the innermost open one.
    type Spans = Vec<(u64, u64, usize)>;
    let mut per_thread: HashMap<(u64, u64), Spans> = HashMap::new();
    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    for (order, e) in events(&doc).iter().enumerate() {
        let key = (
            e["pid"].as_u64().unwrap_or(0),
            e["tid"].as_u64().unwrap_or(0),
        );
        match e["ph"].as_str().unwrap() {
            "X" => {
                let s = ns(&e["ts"]);
                per_thread
                    .entry(key)
                    .or_default()
                    .push((s, s + ns(&e["dur"]), order));
            }
            "B" => {
                // Its end is the matching E's; find it in `all`.
                let s = ns(&e["ts"]);
                let end = all
                    .iter()
                    .find(|c| (c.0, c.1) == key && c.2 == e["name"] && c.3 == s)
                    .unwrap()
                    .4;
                per_thread.entry(key).or_default().push((s, end, order));
            }
            _ => {}
        }
    }
    for spans in per_thread.values_mut() {
        spans.sort_by_key(|&(s, _, order)| (s, order));
        let mut open: Vec<u64> = Vec::new();
        for &(s, e, _) in spans.iter() {
            while open.last().is_some_and(|&end| end <= s && end != e.max(s)) {
                open.pop();
            }
            if let Some(&end) = open.last() {
                assert!(
                    e <= end,
                    "call {s}..{e} overlaps its caller ending at {end}"
                );
            }
            open.push(e);
        }
    }
}

#[test]
fn gzip_output_and_open() {
    let path = scratch("synthetic.json.gz");
    let sink = profkit_export::open(
        Format::Chrome,
        &Output::path(path.clone()),
        &Options::default(),
    )
    .unwrap();
    let mut sink = sink;
    synthetic::feed(&mut *sink).unwrap();
    drop(sink);
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    assert_eq!(text, output());

    let plain = scratch("synthetic.json");
    let mut sink = profkit_export::open(
        Format::Chrome,
        &Output::path(plain.clone()),
        &Options::default(),
    )
    .unwrap();
    synthetic::feed(&mut *sink).unwrap();
    drop(sink);
    assert_eq!(std::fs::read(&plain).unwrap(), output());
}

#[test]
fn empty_trace_is_valid() {
    use profkit_model::events::EventSink;
    let mut w = ChromeWriter::new(Vec::new());
    w.finish().unwrap();
    let doc: Value = serde_json::from_slice(w.get_ref()).unwrap();
    assert!(events(&doc).is_empty());
}

/// A real viewer opens the output: speedscope's Chrome trace-event importer, in headless
/// Chromium, with no warning (it warns when an `E` matches no open `B`, or calls overlap).
#[test]
fn loads_in_a_viewer() {
    const TEST: &str = "chrome::loads_in_a_viewer";
    let file = scratch("synthetic.viewer.json");
    std::fs::write(&file, output()).unwrap();
    synthetic::speedscope_renders(TEST, &file);
}
