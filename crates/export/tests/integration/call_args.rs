//! XRay's logged function arguments (`xray_log_args`) from the real demo traces (clang-14, FDR
//! and basic mode) through profkit-model's driver into the Chrome JSON, Perfetto and Parquet
//! writers: every call with arguments shows them, in order, on its own thread, and no other
//! call shows any. The expected arguments come from the XRay reader's own decode of the file
//! (which the CLI tests check against llvm-xray's YAML).

use std::collections::BTreeMap;
use std::path::PathBuf;

use profkit_export::chrome::ChromeWriter;
#[cfg(feature = "parquet")]
use profkit_export::parquet::ParquetSink;
use profkit_export::perfetto::{uuid, PerfettoWriter};
use profkit_model::events::{EventSink, Recorded, RecordedEvent};
use profkit_model::feed;
use serde_json::Value;

#[cfg(feature = "parquet")]
use crate::parquet::{duckdb, duckdb_python};
#[cfg(feature = "parquet")]
use crate::synthetic::scratch;

/// Per thread id, the argument lists of its calls that logged any, in time order.
type ArgsByTid = BTreeMap<u64, Vec<Vec<u64>>>;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/xray")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn feed_xray(file: &str, sink: &mut dyn EventSink) {
    let bin = fixture("demo");
    let map = profkit_xray::InstrMap::from_object(&bin).unwrap();
    let names = feed::xray::function_table(&map, None);
    let data = fixture(file);
    let trace = profkit_xray::Trace::parse(&data).unwrap();
    feed::xray::feed(&trace, &names, file, &Default::default(), sink).unwrap();
}

/// What the reader decodes: the EnterArg events' arguments per thread.
fn expected(file: &str) -> ArgsByTid {
    let data = fixture(file);
    let trace = profkit_xray::Trace::parse(&data).unwrap();
    let mut out = ArgsByTid::new();
    for t in trace.decode().threads {
        let mut events = t.events.clone();
        events.sort_by_key(|e| e.tsc);
        for e in events.iter().filter(|e| !e.args.is_empty()) {
            out.entry(u64::from(t.key.tid))
                .or_default()
                .push(e.args.to_vec());
        }
    }
    assert!(!out.is_empty(), "{file} logs no arguments");
    out
}

/// Thread index → tid, from the recorded stream (which must carry the same arguments).
fn threads(file: &str) -> BTreeMap<u32, u64> {
    let mut r = Recorded::default();
    feed_xray(file, &mut r);
    let mut tids = BTreeMap::new();
    let mut args = ArgsByTid::new();
    for e in &r.events {
        match e {
            RecordedEvent::Thread { index, tid, .. } => {
                tids.insert(*index, *tid);
            }
            RecordedEvent::Enter {
                thread, args: a, ..
            } if !a.is_empty() => {
                args.entry(tids[thread]).or_default().push(a.clone());
            }
            _ => {}
        }
    }
    assert_eq!(args, expected(file), "{file}: the model's stream");
    tids
}

#[cfg(feature = "parquet")]
fn numbers(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn chrome_json_shows_the_arguments_of_each_call() {
    for file in ["demo-fdr.xray", "demo-basic.xray"] {
        let mut w = ChromeWriter::new(Vec::new());
        feed_xray(file, &mut w);
        let doc: Value = serde_json::from_slice(&w.into_inner()).unwrap();
        let mut calls: Vec<(u64, f64, Vec<u64>)> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" || e["ph"] == "B")
            .filter_map(|e| {
                let args = e.get("args")?.as_object()?;
                let list = (0..args.len())
                    .map(|i| args[&format!("arg{i}")].as_u64().unwrap())
                    .collect();
                Some((e["tid"].as_u64()?, e["ts"].as_f64()?, list))
            })
            .collect();
        calls.sort_by(|a, b| (a.0, a.1).partial_cmp(&(b.0, b.1)).unwrap());
        let mut got = ArgsByTid::new();
        for (tid, _, args) in calls {
            got.entry(tid).or_default().push(args);
        }
        assert_eq!(got, expected(file), "{file}");
    }
}

#[test]
fn perfetto_slices_carry_the_arguments_as_annotations() {
    for file in ["demo-fdr.xray", "demo-basic.xray"] {
        let tids = threads(file);
        let mut w = PerfettoWriter::new(Vec::new());
        feed_xray(file, &mut w);
        let Some(doc) = crate::perfetto::decode(
            "call_args::perfetto_slices_carry_the_arguments_as_annotations",
            &w.into_inner(),
            "call-args.pftrace",
        ) else {
            return;
        };
        let tid_of: BTreeMap<String, u64> = tids
            .iter()
            .map(|(index, tid)| (uuid::thread(*index).to_string(), *tid))
            .collect();
        let mut got = ArgsByTid::new();
        for e in doc["events"].as_array().unwrap() {
            let notes = e["annotations"].as_object().unwrap();
            if e["type"] != "TYPE_SLICE_BEGIN" || notes.is_empty() {
                continue;
            }
            let list = (0..notes.len())
                .map(|i| notes[&format!("arg{i}")].as_u64().unwrap())
                .collect();
            let tid = tid_of[e["track"].as_str().unwrap()];
            got.entry(tid).or_default().push(list);
        }
        assert_eq!(got, expected(file), "{file}");
    }
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_spans_have_an_args_list_column() {
    let Some(py) = duckdb_python("call_args::parquet_spans_have_an_args_list_column") else {
        return;
    };
    for file in ["demo-fdr.xray", "demo-basic.xray"] {
        let dir = scratch(&format!("call-args-{file}"));
        std::fs::create_dir_all(&dir).unwrap();
        // Small row groups: lists must survive the cut between groups.
        let path = dir.join("spans.parquet");
        let mut sink =
            ParquetSink::with_row_group_size(&profkit_export::Output::path(&path), &path, 7)
                .unwrap();
        feed_xray(file, &mut sink);
        let rows = duckdb(
            &py,
            &dir,
            &[
                "select thread, args from 'spans.parquet' where args is not null order by thread, start_ns",
                "select count(*) from 'spans.parquet' where args is null",
                "select count(*) from 'spans.parquet'",
            ],
        );
        let mut got = ArgsByTid::new();
        for r in rows[0].as_array().unwrap() {
            got.entry(r[0].as_u64().unwrap())
                .or_default()
                .push(numbers(&r[1]));
        }
        let want = expected(file);
        assert_eq!(got, want, "{file}");
        let with_args: usize = want.values().map(Vec::len).sum();
        let total = rows[2][0][0].as_u64().unwrap() as usize;
        assert_eq!(
            rows[1][0][0].as_u64().unwrap() as usize,
            total - with_args,
            "{file}: calls without arguments have a null list"
        );
    }
}
