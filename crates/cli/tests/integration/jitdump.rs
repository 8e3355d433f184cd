//! jitdump and perf map through the CLI: the JSON shapes, exit codes, truncation, conversion.

use std::path::PathBuf;

use serde_json::Value;

use crate::support::{profkit, run};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(crate::support::fixture("jitdump", name))
}

fn json(s: &str) -> Value {
    serde_json::from_str(s.trim()).unwrap_or_else(|e| panic!("{e}: {s}"))
}

fn path(name: &str) -> String {
    crate::support::fixture("jitdump", name)
}

#[test]
fn info_json_has_the_documented_shape() {
    let (out, err, code) = run(&["info", "--json", &path("node-perf-prof.dump.gz")]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    assert_eq!(v["schema"], "profkit.info/2");
    assert_eq!(v["format"], "jitdump");
    assert!(v["kind"].as_str().unwrap().contains("little-endian"));
    assert_eq!(v["header"]["version"], 1);
    assert_eq!(v["compression"], "gzip");
    assert!(v["file"]
        .as_str()
        .unwrap()
        .ends_with("node-perf-prof.dump.gz"));
    assert_eq!(v["kinds"]["JIT_CODE_LOAD"], 2210);
    assert_eq!(v["kinds"]["JIT_CODE_DEBUG_INFO"], 28);
    assert_eq!(v["kinds"]["JIT_CODE_UNWINDING_INFO"], 2210);
    assert_eq!(v["kinds"]["JIT_CODE_MOVE"], 0);
    assert_eq!(v["kinds"]["SAMPLY_JIT_CODE_DEBUG_INFO2"], 0);
    assert_eq!(v["records"], 4448);
    assert_eq!(v["truncated"], Value::Null);
    assert_eq!(v["header"]["pad1"], 0xDEAD_BEEFu32);
    assert_eq!(v["details"]["pids"].as_array().unwrap().len(), 1);
}

#[test]
fn info_on_several_files_prints_one_object_each() {
    let (out, _, code) = run(&[
        "info",
        "--json",
        &path("wasmtime-jitdump.dump"),
        &path("wasmtime-perfmap.map"),
        &path("handmade/all-records-be.dump"),
    ]);
    assert_eq!(code, 0);
    let lines: Vec<Value> = out.lines().map(json).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["kinds"]["JIT_CODE_LOAD"], 10);
    assert_eq!(lines[1]["format"], "perf-map");
    assert_eq!(lines[1]["records"], 10);
    assert!(lines[2]["kind"].as_str().unwrap().contains("big-endian"));
    for kind in [
        "JIT_CODE_MOVE",
        "JIT_CODE_CLOSE",
        "SAMPLY_JIT_CODE_DEBUG_INFO2",
        "SAMPLY_EMBEDDED_SOURCE_FILE",
    ] {
        assert_eq!(lines[2]["kinds"][kind], 1, "{kind}");
    }
    assert_eq!(lines[2]["kinds"]["SAMPLY_JIT_TIER"], 2);
}

#[test]
fn truncated_file_is_reported_with_the_cut_offset() {
    let (out, err, code) = run(&["info", "--json", &path("handmade/truncated.dump")]);
    assert_eq!(code, 0, "info succeeds on a cut-off file");
    let v = json(&out);
    assert_eq!(v["truncated"]["offset"], 192);
    assert!(v["truncated"]["reason"]
        .as_str()
        .unwrap()
        .contains("only 108 bytes remain"));
    assert!(
        err.contains("warning:") && err.contains("truncated at offset 0xc0 (record #2)"),
        "{err}"
    );
    let (out, _, code) = run(&["validate", &path("handmade/truncated.dump")]);
    assert_eq!(code, 1);
    assert!(
        out.contains("error[truncated] record #2 at offset 0xc0"),
        "{out}"
    );
}

#[test]
fn validate_json_on_node_names_the_corrupt_records() {
    let (out, _, code) = run(&[
        "validate",
        "--json",
        &path("node-perf-prof-only-functions.dump"),
    ]);
    assert_eq!(code, 1, "errors exit 1");
    let v = json(&out);
    assert_eq!(v["schema"], "profkit.validate/1");
    assert_eq!(v["format"], "jitdump");
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 9);
    let first = &errors[0];
    assert_eq!(first["code"], "debug-info-corrupt");
    assert_eq!(first["record"], 36);
    assert_eq!(first["offset"], 21226);
    assert!(first["message"].as_str().unwrap().contains("V8"));
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    assert!(warnings.contains(&"debug-info-address-bias-0x40"));
    assert!(warnings.contains(&"header-pad-nonzero"));
}

#[test]
fn validate_text_and_exit_codes() {
    let (out, _, code) = run(&["validate", &path("wasmtime-jitdump.dump")]);
    assert_eq!(code, 0);
    assert!(out.contains("0 errors, 0 warnings"), "{out}");
    let (out, _, code) = run(&["validate", &path("handmade/cpython-quirks.dump")]);
    assert_eq!(code, 0, "warnings alone exit 0");
    assert!(out.contains("warning[elf-mach-zero] offset 0xc"), "{out}");
    assert!(out.contains("warning[unwinding-mapped-size]"), "{out}");
    assert!(!out.contains('\u{1b}'), "no colour when not a terminal");
    let (out, _, code) = run(&["validate", &path("handmade/llvm-quirks.dump")]);
    assert_eq!(code, 1);
    assert!(
        out.contains("error[unknown-flags]") && out.contains("warning[vma-zero]"),
        "{out}"
    );
}

#[test]
fn corrupt_record_error_message() {
    let (_, err, code) = run(&["dump", &path("handmade/record-size-8.dump")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("record-size-8.dump: record #1 at offset 0x67: JIT_CODE_LOAD total_size 8 is below the 16-byte record header"),
        "{err}"
    );
}

#[test]
fn dump_json_is_ndjson_per_record() {
    let (out, _, code) = run(&[
        "dump",
        "--json",
        "--code",
        &path("handmade/all-records-le.dump"),
    ]);
    assert_eq!(code, 0);
    let lines: Vec<Value> = out.lines().map(json).collect();
    assert_eq!(lines.len(), 11, "header + 10 records");
    assert_eq!(lines[0]["type"], "HEADER");
    let load = lines.iter().find(|l| l["type"] == "JIT_CODE_LOAD").unwrap();
    assert_eq!(load["name"], "JS:*outer app.js:10:0");
    assert_eq!(load["code_addr"], 0x7000_1000u64);
    assert!(load["code"].as_str().unwrap().starts_with("000102"));
    let tier = lines
        .iter()
        .find(|l| l["type"] == "SAMPLY_JIT_TIER")
        .unwrap();
    assert_eq!(tier["color_name"], "green");
    let di2 = lines
        .iter()
        .find(|l| l["type"] == "SAMPLY_JIT_CODE_DEBUG_INFO2")
        .unwrap();
    assert_eq!(
        di2["function_names"],
        serde_json::json!(["outer", "inl_a", "inl_b"])
    );
}

#[test]
fn dump_text_shows_recovered_v8_lines() {
    let (out, _, code) = run(&["dump", &path("node-perf-prof-only-functions.dump")]);
    assert_eq!(code, 0);
    assert!(out.contains("CORRUPT (file names overwritten; entries recovered by fixed stride)"));
    assert!(
        out.contains("…tures/node/busy.js"),
        "recovered file name tail"
    );
}

#[test]
fn stdin_and_pipes() {
    let bytes = std::fs::read(fixture("wasmtime-jitdump.dump")).unwrap();
    let o = profkit()
        .args(["info", "--json", "-"])
        .write_stdin(bytes)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(json(&String::from_utf8_lossy(&o.stdout))["file"], "<stdin>");
    // A closed pipe is not an error: `profkit dump big.dump | head -1`.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("profkit"))
        .args(["dump", &path("node-perf-prof.dump.gz")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn convert_jitdump_to_perf_map_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("out.map");
    let (_, err, code) = run(&[
        "convert",
        &path("wasmtime-jitdump.dump"),
        "-o",
        map.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&map).unwrap();
    assert_eq!(text.lines().count(), 10);
    assert!(text.lines().any(|l| l.ends_with(" fib")), "{text}");
    // perf map -> jitdump: LOADs without code bytes, which validate as such.
    let dump = dir.path().join("perf-123.dump");
    let renamed = dir.path().join("perf-123.map");
    std::fs::rename(&map, &renamed).unwrap();
    let (_, err, code) = run(&[
        "convert",
        renamed.to_str().unwrap(),
        "-o",
        dump.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (out, _, _) = run(&["info", "--json", dump.to_str().unwrap()]);
    let v = json(&out);
    assert_eq!(v["kinds"]["JIT_CODE_LOAD"], 10);
    assert_eq!(v["details"]["loads_without_code"], 10);
    assert_eq!(v["header"]["pid"], 123);
}

#[test]
fn convert_reencodes_to_big_endian_losslessly() {
    let dir = tempfile::tempdir().unwrap();
    let be = dir.path().join("be.dump");
    let le = dir.path().join("le.dump");
    let src = path("handmade/all-records-le.dump");
    assert_eq!(
        run(&[
            "convert",
            &src,
            "-o",
            be.to_str().unwrap(),
            "--endian",
            "big"
        ])
        .2,
        0
    );
    assert_eq!(
        std::fs::read(&be).unwrap(),
        std::fs::read(fixture("handmade/all-records-be.dump")).unwrap(),
        "re-encoding gives the writer's big-endian file byte for byte"
    );
    assert_eq!(
        run(&[
            "convert",
            be.to_str().unwrap(),
            "-o",
            le.to_str().unwrap(),
            "--endian",
            "little"
        ])
        .2,
        0
    );
    assert_eq!(std::fs::read(&le).unwrap(), std::fs::read(&src).unwrap());
    // Node's corrupt DEBUG_INFO survives a byte swap through the recovered stride.
    let node_be = dir.path().join("node-be.dump");
    let (_, err, code) = run(&[
        "convert",
        &path("node-perf-prof-only-functions.dump"),
        "-o",
        node_be.to_str().unwrap(),
        "--endian",
        "big",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "nothing skipped: {err}");
    let (out, _, _) = run(&["validate", "--json", node_be.to_str().unwrap()]);
    assert_eq!(json(&out)["errors"].as_array().unwrap().len(), 9);
}

#[test]
fn usage_and_unknown_input_exit_2() {
    let (_, err, code) = run(&["info"]);
    assert_eq!(code, 2, "{err}");
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, [0u8, 1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
    let (_, err, code) = run(&["info", junk.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("error: ") && err.contains("unknown format"),
        "{err}"
    );
    let (_, err, code) = run(&["info", "/nonexistent/jit-1.dump"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot open"), "{err}");
    let (_, err, code) = run(&["convert", &path("wasmtime-jitdump.dump"), "-o", "x.unknown"]);
    assert_eq!(code, 2);
    assert!(err.contains("pass -f (perfetto"), "{err}");
}

#[test]
fn dump_follow_reads_a_growing_file_until_close() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("jit-1.dump");
    let bytes = std::fs::read(fixture("handmade/all-records-le.dump")).unwrap();
    std::fs::write(&live, &bytes[..100]).unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("profkit"))
        .args([
            "dump",
            "--follow",
            "--timeout",
            "20",
            live.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&live)
        .unwrap();
    std::io::Write::write_all(&mut f, &bytes[100..]).unwrap();
    drop(f);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.lines().count(),
        1 + 10 + out.lines().filter(|l| l.starts_with("    ")).count()
    );
    assert!(
        out.lines().last().unwrap().contains("JIT_CODE_CLOSE"),
        "{out}"
    );
}

#[test]
fn completions_are_generated() {
    let (out, _, code) = run(&["completions", "bash"]);
    assert_eq!(code, 0);
    assert!(out.contains("profkit"));
}

/// A JIT name with ESC, a bell and a newline: `dump` prints it escaped, one line per record,
/// no raw control character (B9).
#[test]
fn dump_escapes_control_characters_in_names() {
    let dir = tempfile::tempdir().unwrap();
    let name = b"evil\x1b[31mRED\x1b[0m\nline2\x07\0";
    let mut body = Vec::new();
    for v in [1234u32, 1234] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    for v in [0x1000u64, 0x1000, 16, 1] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    body.extend_from_slice(name);
    body.extend_from_slice(&[0x90; 16]);
    let mut file = Vec::new();
    for v in [0x4A69_5444u32, 1, 40, 62, 0, 1234] {
        file.extend_from_slice(&v.to_le_bytes());
    }
    file.extend_from_slice(&[0; 16]);
    file.extend_from_slice(&0u32.to_le_bytes());
    file.extend_from_slice(&((16 + body.len()) as u32).to_le_bytes());
    file.extend_from_slice(&1u64.to_le_bytes());
    file.extend_from_slice(&body);
    std::fs::write(dir.path().join("evil.dump"), &file).unwrap();
    let o = crate::support::profkit()
        .current_dir(dir.path())
        .args(["dump", "evil.dump"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(
        !o.stdout.iter().any(|&b| b < 0x20 && b != b'\n'),
        "{:?}",
        String::from_utf8_lossy(&o.stdout)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains("name evil\\u001b[31mRED\\u001b[0m\\nline2\\u0007"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 2, "{out}");
}

/// `dump --follow` of a file truncated and rewritten: the shrink is noticed, said, and the file
/// read again from its start (it kept reading at its old offset: B11).
#[test]
fn dump_follow_starts_over_when_the_file_shrinks() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("jit-1.dump");
    let bytes = std::fs::read(fixture("handmade/all-records-le.dump")).unwrap();
    let part = bytes.len() - 40;
    std::fs::write(&live, &bytes[..part]).unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("profkit"))
        .args([
            "dump",
            "--follow",
            "--timeout",
            "20",
            live.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pause = || std::thread::sleep(std::time::Duration::from_millis(400));
    pause();
    // Truncated (as a JIT restarting with the same pid does), then written again whole.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&live)
        .unwrap();
    pause();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&live)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("shrank") && err.contains("again from the start"),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("HEADER")).count(),
        2,
        "{out}"
    );
    assert!(
        out.lines().last().unwrap().contains("JIT_CODE_CLOSE"),
        "{out}"
    );
}
