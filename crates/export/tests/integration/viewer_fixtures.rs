//! Chrome JSON, Perfetto, speedscope and folded stacks on the committed real files (XRay FDR
//! and basic traces of the demo program, Mono log profiler files with calls and with samples,
//! jitdumps), fed by profkit-model's drivers: every output holds what the stream held, golden
//! files pin the small ones, and the external checkers (Perfetto's protos, the speedscope
//! schema, speedscope in Chromium) accept them.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::process::Command;

use profkit_export::chrome::ChromeWriter;
use profkit_export::folded::FoldedWriter;
use profkit_export::perfetto::PerfettoWriter;
use profkit_export::speedscope::SpeedscopeWriter;
use profkit_export::Options;
use profkit_model::events::{EventSink, Recorded, RecordedEvent};
use profkit_model::feed;
use serde_json::Value;

use crate::synthetic::{self, check_output, golden, scratch, script};

fn fixture(path: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(path);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Feeds the fixture at `path` (by its directory: xray, mlpd, jitdump) to `sink`.
fn feed_fixture(path: &str, sink: &mut dyn EventSink) -> io::Result<()> {
    let data = fixture(path);
    let name = path.rsplit('/').next().unwrap_or(path);
    match path.split('/').next() {
        Some("xray") => {
            let bin = fixture("xray/demo");
            let map = profkit_xray::InstrMap::from_object(&bin).unwrap();
            let sym = profkit_xray::Symbolizer::new(&bin).ok();
            let names = feed::xray::function_table(&map, sym.as_ref());
            let trace = profkit_xray::Trace::parse(&data).unwrap();
            feed::xray::feed(&trace, &names, "demo", &Default::default(), sink)?;
        }
        Some("mlpd") => {
            let f = profkit_mlpd::File::parse(&data).unwrap();
            let methods = feed::mlpd::methods(&f);
            feed::mlpd::feed(&f, &methods, name, None, sink)?;
        }
        Some("jitdump") => {
            feed::jitdump::feed(&data, name, sink)?;
        }
        other => panic!("no driver for {other:?}"),
    }
    Ok(())
}

fn run<S: EventSink>(path: &str, mut sink: S) -> S {
    feed_fixture(path, &mut sink).unwrap();
    sink
}

/// What the stream holds: (exits, instants, samples, code regions, time of the outermost calls).
fn counts(path: &str) -> (usize, usize, usize, usize, u64) {
    let r = run(path, Recorded::default());
    let mut c = (0, 0, 0, 0, 0);
    for e in &r.events {
        match e {
            RecordedEvent::Exit(s) => {
                c.0 += 1;
                if s.depth == 0 {
                    c.4 += s.duration();
                }
            }
            RecordedEvent::Instant { .. } => c.1 += 1,
            RecordedEvent::Sample { .. } => c.2 += 1,
            RecordedEvent::Code { .. } => c.3 += 1,
            _ => {}
        }
    }
    c
}

/// The files of the external checks (Python decoding and schema validation of the 2 MB
/// outputs of busy_everything.mlpd take most of a minute).
const SMALL_FILES: [&str; 5] = [
    "xray/demo-fdr.xray",
    "xray/demo-basic.xray",
    "mlpd/hello_calls.mlpd",
    "mlpd/cpu_sample.mlpd",
    "jitdump/handmade/all-records-le.dump",
];

const FILES: [&str; 6] = [
    "xray/demo-fdr.xray",
    "xray/demo-basic.xray",
    "mlpd/hello_calls.mlpd",
    "mlpd/cpu_sample.mlpd",
    "mlpd/busy_everything.mlpd",
    "jitdump/handmade/all-records-le.dump",
];

fn file_tag(path: &str) -> String {
    path.rsplit('/').next().unwrap().replace('.', "_")
}

#[test]
fn chrome_json_holds_the_stream() {
    for path in FILES {
        let (exits, instants, samples, code, _) = counts(path);
        let out = run(path, ChromeWriter::new(Vec::new())).into_inner();
        let doc: Value = serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{path}: {e}"));
        let evs = doc["traceEvents"].as_array().unwrap();
        let n = |ph: &str| evs.iter().filter(|e| e["ph"] == ph).count();
        assert_eq!(n("X") + n("B"), exits, "{path}");
        assert_eq!(n("B"), n("E"), "{path}");
        assert_eq!(n("i"), instants + samples + code, "{path}");
        assert!(evs.iter().any(|e| e["ph"] == "M"), "{path}: names");
    }
    golden(
        "demo-fdr.xray.chrome.json",
        &run("xray/demo-fdr.xray", ChromeWriter::new(Vec::new())).into_inner(),
    );
    golden(
        "all-records-le.dump.chrome.json",
        &run(
            "jitdump/handmade/all-records-le.dump",
            ChromeWriter::new(Vec::new()),
        )
        .into_inner(),
    );
}

#[test]
fn xray_custom_event_payloads_reach_chrome_args() {
    let out = run("xray/demo-fdr.xray", ChromeWriter::new(Vec::new())).into_inner();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    let custom: Vec<&Value> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "xray.custom")
        .collect();
    assert!(!custom.is_empty());
    assert!(custom
        .iter()
        .all(|e| e["args"].as_object().is_some_and(|a| !a.is_empty())));
}

#[test]
fn folded_sums_to_the_traced_time() {
    for path in FILES {
        let (exits, _, samples, _, outermost) = counts(path);
        let text = String::from_utf8(
            run(path, FoldedWriter::new(Vec::new(), &Options::default())).into_inner(),
        )
        .unwrap();
        let total: u64 = text
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        if samples == 0 {
            // The whole flame graph's width, the sum of the self times, is the time of the
            // outermost calls.
            assert_eq!(total, outermost, "{path}");
            assert!(exits == 0 || total > 0, "{path}");
        } else {
            assert!(total >= samples as u64, "{path}");
        }
        let calls: u64 = String::from_utf8(
            run(
                path,
                FoldedWriter::new(
                    Vec::new(),
                    &Options {
                        counts: true,
                        ..Options::default()
                    },
                ),
            )
            .into_inner(),
        )
        .unwrap()
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
        if samples == 0 {
            assert_eq!(calls, exits as u64, "{path}");
        }
    }
    for path in [
        "xray/demo-fdr.xray",
        "mlpd/hello_calls.mlpd",
        "mlpd/cpu_sample.mlpd",
    ] {
        let out = run(path, FoldedWriter::new(Vec::new(), &Options::default())).into_inner();
        golden(
            &format!("{}.folded", path.rsplit('/').next().unwrap()),
            &out,
        );
    }
}

#[test]
fn perfetto_decodes_with_perfettos_protos() {
    golden(
        "demo-fdr.xray.pftrace",
        &run("xray/demo-fdr.xray", PerfettoWriter::new(Vec::new())).into_inner(),
    );
    for path in SMALL_FILES {
        let (exits, instants, samples, code, _) = counts(path);
        let out = run(path, PerfettoWriter::new(Vec::new())).into_inner();
        let file = format!("{}.pftrace", file_tag(path));
        let Some(doc) = crate::perfetto::decode(
            "viewer_fixtures::perfetto_decodes_with_perfettos_protos",
            &out,
            &file,
        ) else {
            return;
        };
        let events = doc["events"].as_array().unwrap();
        let n = |t: &str| events.iter().filter(|e| e["type"] == t).count();
        assert_eq!(n("TYPE_SLICE_BEGIN"), exits, "{path}");
        assert_eq!(n("TYPE_SLICE_END"), exits, "{path}");
        assert_eq!(n("TYPE_INSTANT"), instants + code, "{path}");
        assert_eq!(doc["samples"].as_array().unwrap().len(), samples, "{path}");
        // Slices nest per track and every begin has a resolved name.
        let mut depth: HashMap<&str, i64> = HashMap::new();
        for e in events {
            let d = depth.entry(e["track"].as_str().unwrap()).or_default();
            match e["type"].as_str().unwrap() {
                "TYPE_SLICE_BEGIN" => {
                    assert!(e["name"].as_str().is_some_and(|s| !s.is_empty()), "{path}");
                    *d += 1;
                }
                "TYPE_SLICE_END" => {
                    *d -= 1;
                    assert!(*d >= 0, "{path}: end without begin");
                }
                _ => {}
            }
        }
        assert!(depth.values().all(|&d| d == 0), "{path}");
    }
}

#[test]
fn speedscope_matches_the_schema() {
    const TEST: &str = "viewer_fixtures::speedscope_matches_the_schema";
    golden(
        "demo-fdr.xray.speedscope.json",
        &run("xray/demo-fdr.xray", SpeedscopeWriter::new(Vec::new())).into_inner(),
    );
    let (Some(python), Some(modules)) = (synthetic::python(TEST), synthetic::node_modules(TEST))
    else {
        return;
    };
    let schema = modules.join("speedscope/dist/release/file-format-schema.json");
    for path in SMALL_FILES {
        let out = run(path, SpeedscopeWriter::new(Vec::new())).into_inner();
        let file = scratch(&format!("{}.speedscope.json", file_tag(path)));
        std::fs::write(&file, out).unwrap();
        let ok = check_output(
            Command::new(&python)
                .arg(script("speedscope_schema.py"))
                .arg(&file)
                .arg(&schema),
        );
        assert_eq!(ok.trim(), "ok", "{path}");
    }
}

#[test]
fn speedscope_renders_real_files_in_chromium() {
    const TEST: &str = "viewer_fixtures::speedscope_renders_real_files_in_chromium";
    let (Some(modules), Some(chromium)) =
        (synthetic::node_modules(TEST), synthetic::chromium(TEST))
    else {
        return;
    };
    // One traced XRay file and one sampled Mono file: the two kinds of profile; and a jitdump,
    // which has neither.
    for path in [
        "xray/demo-fdr.xray",
        "mlpd/cpu_sample.mlpd",
        "jitdump/handmade/all-records-le.dump",
    ] {
        let out = run(path, SpeedscopeWriter::new(Vec::new())).into_inner();
        let file = scratch(&format!("{}.render.speedscope.json", file_tag(path)));
        std::fs::write(&file, out).unwrap();
        let shot = scratch(&format!("{}.speedscope.png", file_tag(path)));
        let summary = check_output(
            Command::new("node")
                .arg(script("speedscope_render.mjs"))
                .arg(&modules)
                .arg(&chromium)
                .arg(&file)
                .arg(&shot),
        );
        let v: Value = serde_json::from_str(&summary).unwrap();
        assert_eq!(v["problems"], serde_json::json!([]), "{path}: {summary}");
    }
}

#[test]
fn chrome_json_of_real_files_loads_in_a_viewer() {
    const TEST: &str = "viewer_fixtures::chrome_json_of_real_files_loads_in_a_viewer";
    for path in ["xray/demo-fdr.xray", "mlpd/hello_calls.mlpd"] {
        let file = scratch(&format!("{}.viewer.json", file_tag(path)));
        std::fs::write(&file, run(path, ChromeWriter::new(Vec::new())).into_inner()).unwrap();
        if !synthetic::speedscope_renders(TEST, &file) {
            return;
        }
    }
}
