//! docs/fleet.md's fleet queries in DuckDB and in Apache Spark (local mode) over the same
//! hive-partitioned tree, built by scripts/fleet/example.sh from the fixtures with this
//! profkit; scripts/fleet/compare.py runs every `<!-- fleet-query: NAME -->` block in both
//! (one Spark session) and compares the answers. Needs the venv of
//! scripts/ci/install-export-py.sh (duckdb, pyspark) and Java 17+ (`java` on PATH); a missing
//! one fails the test under `PROFKIT_REQUIRE_EXTERNAL=1`.

use std::path::PathBuf;
use std::process::Command;

fn python_with(test: &str, modules: &str) -> Option<PathBuf> {
    profkit_testkit::external(
        test,
        "Python with duckdb and pyspark (scripts/ci/install-export-py.sh)",
        profkit_testkit::deps_dir().join("venv/bin/python"),
        |py| {
            Command::new(py)
                .args(["-c", &format!("import {modules}")])
                .status()
                .is_ok_and(|s| s.success())
        },
    )
}

#[test]
fn duckdb_and_spark_agree() {
    let test = "fleet::duckdb_and_spark_agree";
    let Some(python) = python_with(test, "duckdb, pyspark") else {
        return;
    };
    if profkit_testkit::tool(test, "java", "Java 17+ (Debian: default-jdk-headless)").is_none() {
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    // 6 recordings: 5 hosts, 2 days, each of the three inputs twice.
    let o = Command::new("bash")
        .arg(root.join("scripts/fleet/example.sh"))
        .arg(&fleet)
        .arg("6")
        .env("PROFKIT", env!("CARGO_BIN_EXE_profkit"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "example.sh: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(fleet
        .join("host=host0/date=2026-11-01/run=r000/mappings.parquet")
        .exists());
    let o = Command::new(&python)
        .arg(root.join("scripts/fleet/compare.py"))
        .arg(&fleet)
        .arg(root.join("docs/fleet.md"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "compare.py: {stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let queries: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = queries
        .iter()
        .map(|q| q["query"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["top-self", "by-process", "by-tier", "time-histogram"],
        "{stdout}"
    );
}
