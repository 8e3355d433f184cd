//! A cut file is reported the same way by every command (issue #14): one stderr line
//! `warning: FILE: truncated at offset …`, and `"truncated": {offset, record, reason}` in its
//! JSON; everything before the cut is used.

use serde_json::Value;

use crate::support::{fixture, run};

/// The first `len` bytes of a fixture, in a temporary file.
fn cut(dir: &str, name: &str, len: usize, tmp: &tempfile::TempDir) -> String {
    let data = std::fs::read(fixture(dir, name)).unwrap();
    let path = tmp.path().join(name.replace('/', "-"));
    std::fs::write(&path, &data[..len.min(data.len() - 1)]).unwrap();
    path.display().to_string()
}

/// Runs `args`, expecting success, the stderr note, and JSON whose `pointer` is a cut.
fn reports_the_cut(args: &[&str], pointer: &str) {
    let (out, err, code) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    assert!(err.contains(": truncated at offset 0x"), "{args:?}: {err}");
    let doc: Value = serde_json::from_str(out.lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"));
    let t = doc.pointer(pointer).unwrap_or(&Value::Null);
    assert!(
        t["offset"].is_u64() && t["reason"].is_string(),
        "{args:?}: {t}"
    );
}

#[test]
fn every_json_output_reports_a_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let xray = cut("xray", "demo-fdr.xray", 3000, &tmp);
    let whole = fixture("xray", "demo-fdr.xray");
    let jit = cut("jitdump", "wasmtime-jitdump.dump", 1000, &tmp);
    let mlpd = cut("mlpd", "synthetic/v17.mlpd", 583, &tmp);
    reports_the_cut(&["info", "--json", &xray], "/truncated");
    reports_the_cut(&["account", "--json", &xray], "/truncated");
    reports_the_cut(&["diff", "-f", "json", &xray, &whole], "/truncated/a");
    reports_the_cut(&["info", "--json", &jit], "/truncated");
    reports_the_cut(&["symbolize", "--json", &jit, "0x10"], "/truncated");
    reports_the_cut(&["info", "--json", &mlpd], "/truncated");
    reports_the_cut(&["report", "--json", &mlpd], "/truncated");
}

#[test]
fn symbolize_text_notes_a_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let jit = cut("jitdump", "wasmtime-jitdump.dump", 1000, &tmp);
    let (_, err, code) = run(&["symbolize", &jit, "0x10"]);
    assert_eq!(code, 0);
    assert!(err.contains("truncated at offset 0x"), "{err}");
}
