//! Parquet (feature `parquet`): the synthetic trace written as the four tables and read back
//! by DuckDB (PyPI): row counts, per-function totals equal to profkit-model's accounting,
//! JSON args, code regions with unload times, several row groups, and docs/fleet.md's main
//! query run over two "hosts".
#![cfg(feature = "parquet")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use profkit_analysis::account::Accounting;
use profkit_export::parquet::{table_paths, ParquetSink};
use profkit_export::{Format, Options, Output};
use profkit_model::events::{CodeEvent, CodeRegion, EventSink, Recorded, RecordedEvent, TraceInfo};
use profkit_model::{Clock, FunctionTable};
use serde_json::Value;

use crate::synthetic::{self, call_count, check_output, deps_dir, external, scratch};

/// The venv's Python when it can import duckdb (scripts/ci/install-export-py.sh).
pub fn duckdb_python(test: &str) -> Option<PathBuf> {
    let py = external(
        test,
        "the Python venv with duckdb (scripts/ci/install-export-py.sh)",
        deps_dir().join("venv/bin/python"),
    )?;
    let ok = Command::new(&py)
        .args(["-c", "import duckdb"])
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    profkit_testkit::missing(
        test,
        "duckdb in the Python venv (scripts/ci/install-export-py.sh)",
        "`import duckdb` fails",
    )
}

/// Runs `sql` statements (one per element) in DuckDB with `cwd` as working directory and
/// returns each result as a JSON array of rows.
pub fn duckdb(py: &Path, cwd: &Path, sql: &[&str]) -> Vec<Value> {
    let script = r#"
import duckdb, json, sys
con = duckdb.connect()
out = []
for q in json.loads(sys.argv[1]):
    out.append([list(r) for r in con.execute(q).fetchall()])
print(json.dumps(out, default=str))
"#;
    let out = check_output(
        Command::new(py)
            .current_dir(cwd)
            .arg("-c")
            .arg(script)
            .arg(serde_json::to_string(sql).unwrap()),
    );
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    v.as_array().unwrap().clone()
}

fn write_synthetic(dir: &Path, file: &str, rows: usize) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(file);
    synthetic::run(
        ParquetSink::with_row_group_size(&profkit_export::Output::path(&path), &path, rows)
            .unwrap(),
    );
    path
}

/// (count, sum of durations) per function id, from profkit-model's accounting of the spans.
fn accounting() -> BTreeMap<u64, (u64, u64)> {
    let rec = synthetic::run(Recorded::default());
    let mut acc = Accounting::default();
    for e in &rec.events {
        if let RecordedEvent::Exit(span) = e {
            acc.record(span.func, span.duration());
        }
    }
    acc.rows()
        .into_iter()
        .map(|r| (u64::from(r.func.0), (r.count, r.sum)))
        .collect()
}

#[test]
fn table_paths_beside_the_output() {
    let [s, e, f, c, sa, st, fr, ma] = table_paths(Path::new("/x/out.parquet"));
    assert_eq!(s, Path::new("/x/out.parquet"));
    assert_eq!(e, Path::new("/x/out.events.parquet"));
    assert_eq!(f, Path::new("/x/out.functions.parquet"));
    assert_eq!(c, Path::new("/x/out.code.parquet"));
    assert_eq!(sa, Path::new("/x/out.samples.parquet"));
    assert_eq!(st, Path::new("/x/out.stacks.parquet"));
    assert_eq!(fr, Path::new("/x/out.frames.parquet"));
    assert_eq!(ma, Path::new("/x/out.mappings.parquet"));
    let [_, e, f, c, sa, ..] = table_paths(Path::new("host1/spans.parquet"));
    assert_eq!(e, Path::new("host1/events.parquet"));
    assert_eq!(f, Path::new("host1/functions.parquet"));
    assert_eq!(c, Path::new("host1/code.parquet"));
    assert_eq!(sa, Path::new("host1/samples.parquet"));
    assert!(profkit_export::open(Format::Parquet, &Output::stdout(), &Options::default()).is_err());
}

#[test]
fn duckdb_reads_the_tables() {
    let Some(py) = duckdb_python("duckdb_reads_the_tables") else {
        return;
    };
    let dir = scratch("parquet-synthetic");
    // 3 rows per row group: several row groups per table.
    write_synthetic(&dir, "out.parquet", 3);
    let r = duckdb(
        &py,
        &dir,
        &[
            "SELECT count(*), count(DISTINCT source), min(source) FROM 'out.parquet'",
            "SELECT function_id, count(*), sum(end_ns - start_ns), sum(self_ns) FROM 'out.parquet' GROUP BY 1 ORDER BY 1",
            "SELECT count(*) FROM parquet_metadata('out.parquet') WHERE column_id = 0",
            "SELECT process, thread, time_ns, category, name, json_extract(args, '$.n')::BIGINT, json_extract_string(args, '$.payload') FROM 'out.events.parquet' ORDER BY time_ns",
            "SELECT id, name, file, line, module, address FROM 'out.functions.parquet' ORDER BY id",
            "SELECT pid, address, size, load_ns, unload_ns, name FROM 'out.code.parquet' ORDER BY load_ns",
            "SELECT sum(self_ns) FROM 'out.parquet'",
            "SELECT function, depth FROM 'out.parquet' WHERE thread = 139638282147448",
        ],
    );
    assert_eq!(
        r[0][0],
        serde_json::json!([call_count(), 1, "synthetic trace"])
    );
    let acc = accounting();
    let mut got = BTreeMap::new();
    for row in r[1].as_array().unwrap() {
        let id = row[0].as_u64().unwrap();
        got.insert(id, (row[1].as_u64().unwrap(), row[2].as_u64().unwrap()));
    }
    assert_eq!(
        got, acc,
        "per-function count and total = the model's accounting"
    );
    assert!(r[2][0][0].as_u64().unwrap() > 1, "several row groups");
    let events = r[3].as_array().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(
        events[0],
        serde_json::json!([
            100,
            100,
            300,
            "xray.custom",
            "custom event",
            5,
            "hello \"xray\""
        ])
    );
    assert_eq!(events[1][0], 100);
    assert_eq!(events[1][1], 101);
    assert_eq!(events[1][6], "00ff01");
    let functions = r[4].as_array().unwrap();
    assert_eq!(functions.len(), 6);
    assert_eq!(
        functions[0],
        serde_json::json!([1, "main", "main.c", 10, null, null])
    );
    assert_eq!(functions[2][2], Value::Null);
    let code = r[5].as_array().unwrap();
    assert_eq!(code.len(), 2);
    assert_eq!(
        code[0],
        serde_json::json!([100, 4096, 64, 50, null, "JIT fn A"])
    );
    let traced: u64 = synthetic::calls()
        .iter()
        .flat_map(|(_, cs)| cs.iter().map(|c| c.end - c.start))
        .sum();
    assert_eq!(r[6][0][0].as_u64().unwrap(), traced);
    // Thread 2's 64-bit tid (0x7f00_1234_5678) survives.
    assert_eq!(r[7].as_array().unwrap().len(), 2);
}

#[test]
fn code_unload_times_from_moves_and_reuse() {
    let Some(py) = duckdb_python("code_unload_times_from_moves_and_reuse") else {
        return;
    };
    let dir = scratch("parquet-code");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("code-test.parquet");
    let mut s = ParquetSink::create(&path).unwrap();
    let t = FunctionTable::new();
    s.begin(&TraceInfo {
        format: "jitdump",
        functions: &t,
        clock: Clock::default(),
        origin_ns: 0,
        name: "node.dump",
        samples: None,
        origin_unix_ns: None,
    })
    .unwrap();
    let r = |time, address, name, event| CodeRegion {
        thread: None,
        pid: 9,
        time,
        address,
        size: 16,
        name,
        event,
        code_index: None,
        tier: None,
    };
    s.code(&r(1, 0x100, "a", CodeEvent::Load)).unwrap();
    s.code(&r(2, 0x200, "b", CodeEvent::Load)).unwrap();
    s.code(&r(3, 0x300, "a", CodeEvent::Move { old_address: 0x100 }))
        .unwrap();
    s.code(&r(4, 0x200, "c", CodeEvent::Load)).unwrap();
    s.finish().unwrap();
    let rows = duckdb(
        &py,
        &dir,
        &["SELECT address, load_ns, unload_ns, name, source FROM 'code-test.code.parquet' ORDER BY load_ns"],
    );
    assert_eq!(
        rows[0],
        serde_json::json!([
            [256, 1, 3, "a", "node.dump"],
            [512, 2, 4, "b", "node.dump"],
            [768, 3, null, "a", "node.dump"],
            [512, 4, null, "c", "node.dump"]
        ])
    );
    // The other tables exist and are empty.
    let rows = duckdb(
        &py,
        &dir,
        &[
            "SELECT count(*) FROM 'code-test.parquet'",
            "SELECT count(*) FROM 'code-test.events.parquet'",
        ],
    );
    assert_eq!(
        rows,
        vec![serde_json::json!([[0]]), serde_json::json!([[0]])]
    );
}

/// The SQL of docs/fleet.md's main query (the block after `<!-- fleet-main-query -->`).
fn fleet_query() -> String {
    doc_query("fleet-main-query")
}

/// The SQL block after `<!-- marker -->` in docs/fleet.md.
fn doc_query(marker: &str) -> String {
    let doc = std::fs::read_to_string(synthetic::workspace().join("docs/fleet.md")).unwrap();
    let after = doc
        .split(&format!("<!-- {marker} -->"))
        .nth(1)
        .expect("docs/fleet.md marks the query");
    let block = after.split("```sql").nth(1).unwrap();
    block.split("```").next().unwrap().trim().to_string()
}

#[test]
fn fleet_doc_query_aggregates_hosts() {
    let Some(py) = duckdb_python("fleet_doc_query_aggregates_hosts") else {
        return;
    };
    let dir = scratch("parquet-fleet");
    let _ = std::fs::remove_dir_all(&dir);
    for host in ["host1", "host2"] {
        write_synthetic(&dir.join(host), "spans.parquet", 1 << 20);
        assert!(dir.join(host).join("functions.parquet").exists());
    }
    let q = fleet_query();
    let rows = duckdb(&py, &dir, &[q.as_str()]);
    // Columns: function, calls, total_ns, self_ns, (hosts).
    let acc = accounting();
    let names = synthetic::functions();
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (id, (count, sum)) in &acc {
        let n = names.name(profkit_model::FuncId(*id as u32));
        let e = want.entry(n).or_default();
        e.0 += 2 * count;
        e.1 += 2 * sum;
    }
    let mut got: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for row in rows[0].as_array().unwrap() {
        got.insert(
            row[0].as_str().unwrap().to_string(),
            (row[1].as_u64().unwrap(), row[2].as_u64().unwrap()),
        );
    }
    assert_eq!(got, want);
}

#[test]
fn fleet_doc_sample_queries() {
    let Some(py) = duckdb_python("fleet_doc_sample_queries") else {
        return;
    };
    let dir = scratch("parquet-fleet-samples");
    let _ = std::fs::remove_dir_all(&dir);
    for host in ["host1", "host2"] {
        write_synthetic(&dir.join(host), "spans.parquet", 2);
    }
    let (self_q, total_q) = (
        doc_query("fleet-samples-query"),
        doc_query("fleet-samples-inclusive-query"),
    );
    let rows = duckdb(&py, &dir, &[self_q.as_str(), total_q.as_str()]);
    // Expected from the samples themselves: leaf weight and, once per sample, every frame.
    let names = synthetic::functions();
    let name = |f: u32| names.name(profkit_model::FuncId(f));
    let (mut want_self, mut want_total) = (BTreeMap::new(), BTreeMap::new());
    for (_, _, stack, weight) in synthetic::samples() {
        *want_self.entry(name(*stack.last().unwrap())).or_insert(0) += 2 * weight;
        let mut seen = stack.clone();
        seen.sort();
        seen.dedup();
        for f in seen {
            *want_total.entry(name(f)).or_insert(0) += 2 * weight;
        }
    }
    let got = |r: &Value| -> BTreeMap<String, u64> {
        r.as_array()
            .unwrap()
            .iter()
            .map(|row| {
                (
                    row[0].as_str().unwrap().to_string(),
                    row[1].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(got(&rows[0]), want_self);
    assert_eq!(got(&rows[1]), want_total);
    let pct: f64 = rows[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[2].as_f64().unwrap())
        .sum();
    assert!((pct - 100.0).abs() < 0.1, "{pct}");
}
