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
    // dump --json: NDJSON whose last line is the cut.
    for input in [&xray, &jit, &mlpd] {
        let (out, err, code) = run(&["dump", "--json", input]);
        assert_eq!(code, 0, "{err}");
        let last: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert!(last["truncated"]["offset"].is_u64(), "{input}: {last}");
    }
}

#[test]
fn symbolize_text_notes_a_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let jit = cut("jitdump", "wasmtime-jitdump.dump", 1000, &tmp);
    let (_, err, code) = run(&["symbolize", &jit, "0x10"]);
    assert_eq!(code, 0);
    assert!(err.contains("truncated at offset 0x"), "{err}");
}

/// Issue #14 item 6: an input error names the input, and no output is left behind.
#[test]
fn input_errors_name_the_input_and_leave_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = cut("jitdump", "wasmtime-jitdump.dump", 11, &tmp);
    let mlpd = fixture("mlpd", "hello_default.mlpd");
    for (input, out) in [
        (&dump, "x.json"),
        (&dump, "x.parquet"),
        (&dump, "x.svg"),
        (&mlpd, "h.svg"),
    ] {
        let out = tmp.path().join(out).display().to_string();
        let (_, err, code) = run(&["convert", input, "-o", &out]);
        assert_eq!(code, 2, "{input} -> {out}: {err}");
        let input_name = std::path::Path::new(input).file_name().unwrap();
        let first = err.split(": ").nth(1).unwrap_or_default();
        assert!(
            first.ends_with(&*input_name.to_string_lossy()),
            "{input} -> {out}: {err}"
        );
        assert!(!err.contains("cannot write"), "{err}");
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.starts_with("x.")
                    || n.starts_with("h.")
                    || n.starts_with(".x")
                    || n.starts_with(".h")
            })
            .collect();
        assert!(left.is_empty(), "{out}: left behind {left:?}");
    }
}

/// Issue #14 item 3: a cut gzip stream is a truncation like any other: every command uses what
/// was inflated before the cut and says where it is cut.
#[test]
fn a_cut_gzip_stream_gives_its_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let jit = cut("jitdump", "node-perf-prof.dump.gz", 300_000, &tmp);
    let mlpd = cut("mlpd", "busy_zip.mlpd", 20_000, &tmp);
    for args in [
        vec!["info", &jit],
        vec!["dump", &jit],
        vec!["symbolize", &jit, "0x10"],
        vec!["info", &mlpd],
        vec!["dump", &mlpd],
        vec!["report", &mlpd],
    ] {
        let (out, err, code) = run(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(err.contains("truncated at offset 0x"), "{args:?}: {err}");
        assert!(!out.is_empty(), "{args:?}");
    }
    let (_, err, code) = run(&["validate", &jit]);
    assert_eq!(code, 1, "a cut is a validation error: {err}");
    let out = tmp.path().join("c.json").display().to_string();
    let (_, err, code) = run(&["convert", &jit, "-o", &out]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::metadata(&out).unwrap().len() > 1000);
}

/// Issue #14 item 2: a gzip bomb that is no known format fails at once, without inflating it.
#[test]
fn a_gzip_stream_of_no_known_format_fails_before_it_is_inflated() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("zeros.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..256 {
        gz.write_all(&zeros).unwrap();
    }
    gz.finish().unwrap();
    let started = std::time::Instant::now();
    let (_, err, code) = run(&["info", &path.display().to_string()]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown format"), "{err}");
    // 256 MiB inflated would take seconds; the check reads 64 KiB.
    assert!(started.elapsed().as_secs() < 2, "{:?}", started.elapsed());
}
