//! gzip and stdin inputs of `info`, `dump` and `validate` (issues #13 and #14): a jitdump or
//! Mono file is read as a stream — the same output as the plain file, a cut gzip file gives its
//! prefix and the cut, and memory stays flat whatever the decompressed size.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{fixture, profkit};

/// The fixtures that are gzip: (directory, name).
const GZIP_FIXTURES: [(&str, &str); 3] = [
    ("jitdump", "node-perf-prof.dump.gz"),
    ("mlpd", "busy_zip.mlpd"),
    ("mlpd", "hello_zip.mlpd"),
];

/// Every output of the three commands, text and JSON.
const COMMANDS: [&[&str]; 6] = [
    &["info"],
    &["info", "--json"],
    &["dump"],
    &["dump", "--json"],
    &["validate"],
    &["validate", "--json"],
];

fn inflate(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

/// Runs `profkit ARGS NAME` in `dir`: (stdout, stderr, exit code).
fn run_on(dir: &Path, args: &[&str], name: &str) -> (String, String, i32) {
    let o = profkit()
        .current_dir(dir)
        .args(args)
        .arg(name)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

/// `info`'s output says whether the input was compressed; nothing else may differ.
fn without_compression(out: &str) -> String {
    out.replace(", gzip-compressed,", ",")
        .replace("\"compression\":\"gzip\"", "\"compression\":null")
}

/// `plain` and its gzip (same file name, two directories): every command says the same.
#[test]
fn gzip_fixtures_read_like_their_plain_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("plain"), tmp.path().join("gzip"));
    for d in [&a, &b] {
        std::fs::create_dir(d).unwrap();
    }
    for (dir, name) in GZIP_FIXTURES {
        let gz = std::fs::read(fixture(dir, name)).unwrap();
        std::fs::write(a.join("f"), inflate(&gz)).unwrap();
        std::fs::write(b.join("f"), &gz).unwrap();
        for args in COMMANDS {
            let plain = run_on(&a, args, "f");
            let (out, err, code) = run_on(&b, args, "f");
            assert!(!plain.0.is_empty(), "{name} {args:?}: {}", plain.1);
            assert_eq!(
                (without_compression(&out), err, code),
                plain,
                "{name} {args:?}"
            );
        }
        // the same bytes on stdin
        let plain = run_on(&a, &["validate", "--json"], "f");
        let o = profkit()
            .args(["validate", "--json", "-"])
            .write_stdin(gz)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).replace("<stdin>", "f");
        assert_eq!(out, plain.0, "{name} on stdin");
    }
}

/// The records of a JSON dump (the lines before a `truncated` line; a Mono buffer's line says
/// whether it is cut, which is not compared).
fn records(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| !l.starts_with("{\"truncated\""))
        .map(|l| l.replace("\"truncated\":true}", "\"truncated\":false}"))
        .collect()
}

/// A gzip file cut anywhere gives what was inflated before the cut, and says where it is cut:
/// a stderr note naming the file and the offset, `"truncated"` in every JSON output.
#[test]
fn a_cut_gzip_file_gives_its_prefix_and_the_cut() {
    let tmp = tempfile::tempdir().unwrap();
    for (dir, name) in GZIP_FIXTURES {
        let gz = std::fs::read(fixture(dir, name)).unwrap();
        std::fs::write(tmp.path().join("whole"), &gz).unwrap();
        let whole = run_on(tmp.path(), &["dump", "--json"], "whole").0;
        let whole = records(&whole);
        for k in 1..=7 {
            // from a few KiB in to the last bytes (inside the gzip trailer)
            let len = match k {
                7 => gz.len() - 3,
                _ => 2000 + (gz.len() - 2000) * k / 7,
            };
            std::fs::write(tmp.path().join("cut"), &gz[..len]).unwrap();
            let (out, err, code) = run_on(tmp.path(), &["dump", "--json"], "cut");
            let what = format!("{name} cut at {len}");
            assert_eq!(code, 0, "{what}: {err}");
            assert!(
                err.contains("warning: cut: truncated at offset 0x"),
                "{what}: {err}"
            );
            let last: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
            assert!(last["truncated"]["offset"].is_u64(), "{what}: {last}");
            let got = records(&out);
            assert!(got.len() > 1, "{what}: nothing before the cut");
            // the prefix: every record before the cut, as the whole file has it
            assert_eq!(got[..], whole[..got.len()], "{what}");
            for args in [&["info", "--json"][..], &["validate", "--json"]] {
                let (out, err, code) = run_on(tmp.path(), args, "cut");
                assert_eq!(
                    code,
                    i32::from(args[0] == "validate"),
                    "{what} {args:?}: {err}"
                );
                let v: Value = serde_json::from_str(&out).unwrap();
                assert!(v["truncated"]["offset"].is_u64(), "{what} {args:?}: {v}");
                assert!(
                    v["truncated"]["reason"]
                        .as_str()
                        .unwrap()
                        .contains("the stream fails"),
                    "{what} {args:?}: {v}"
                );
            }
            let (out, err, code) = run_on(tmp.path(), &["info"], "cut");
            assert_eq!(code, 0, "{what}: {err}");
            assert!(
                out.contains("truncated: truncated at offset 0x"),
                "{what}: {out}"
            );
            assert!(
                err.contains("warning: cut: truncated at offset 0x"),
                "{what}: {err}"
            );
        }
        // cut before anything could be inflated: an error that says so, never silence
        std::fs::write(tmp.path().join("cut"), &gz[..12]).unwrap();
        let (_, err, code) = run_on(tmp.path(), &["info"], "cut");
        assert_eq!(code, 2);
        assert!(
            err.contains("cut: gzip data is corrupt or cut off"),
            "{err}"
        );
    }
}

/// Runs `profkit ARGS`: its stdout, exit code and peak resident memory (KiB).
///
/// The peak is the child's own `VmHWM`, read from /proc while it runs (the peak only grows, so
/// the last reading is the peak up to a few ms before exit). Not `wait4`'s `ru_maxrss`: Linux
/// carries the spawning process's high-water mark into a child at `exec`, so under `cargo test`
/// (every test in one process) the child was charged the test process's memory.
fn peak_rss_kib(args: &[&str]) -> (String, i32, i64) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_profkit"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).unwrap();
        out
    });
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0i64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_path) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok());
            peak = peak.max(hwm.unwrap_or(0));
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    assert!(peak > 0, "no VmHWM read for {args:?}");
    (reader.join().unwrap(), status.code().unwrap_or(-1), peak)
}

/// A gzip jitdump of `copies` × the records of the node fixture (each copy its own gzip member,
/// so it is cheap to write): (path, decompressed size, records).
fn big_jitdump(dir: &Path, copies: usize) -> (PathBuf, u64, u64) {
    let plain = inflate(&std::fs::read(fixture("jitdump", "node-perf-prof.dump.gz")).unwrap());
    let (header, body) = plain.split_at(40);
    let member = gzip(body);
    let path = dir.join("big.dump.gz");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    f.write_all(&gzip(header)).unwrap();
    for _ in 0..copies {
        f.write_all(&member).unwrap();
    }
    f.flush().unwrap();
    (
        path,
        (40 + body.len() * copies) as u64,
        4448 * copies as u64,
    )
}

/// `info` and `validate` of a ≥ 300 MB (decompressed) gzip jitdump stay at a few MB.
#[test]
fn memory_stays_flat_on_a_big_gzip_stream() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, size, records) = big_jitdump(tmp.path(), 170);
    assert!(size >= 300 << 20);
    let path = path.display().to_string();
    for (args, code) in [
        (["info", "--json", &path], 0),
        (["validate", "--json", &path], 1),
    ] {
        let (out, got, kib) = peak_rss_kib(&args);
        // (the copies repeat code indexes: validation errors; the point is the memory)
        assert_eq!(got, code, "{args:?}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["records"].as_u64(), Some(records), "{args:?}");
        assert!(
            kib < 64 << 10,
            "{args:?}: peak RSS {kib} KiB for {size} bytes"
        );
        if args[0] == "info" {
            assert_eq!(v["size"].as_u64(), Some(size));
        }
    }
}

/// Formats read whole (here an XRay trace) are inflated into a temporary file, up to a bound:
/// within it a gzip file reads like its plain bytes, beyond it the command fails at once and
/// says why.
#[test]
fn other_formats_inflate_up_to_a_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("plain"), tmp.path().join("gzip"));
    for d in [&a, &b] {
        std::fs::create_dir(d).unwrap();
    }
    let plain = std::fs::read(fixture("xray", "demo-fdr.xray")).unwrap();
    std::fs::write(a.join("t"), &plain).unwrap();
    std::fs::write(b.join("t"), gzip(&plain)).unwrap();
    for args in COMMANDS {
        let (out, err, code) = run_on(&b, args, "t");
        assert_eq!(
            (without_compression(&out), err, code),
            run_on(&a, args, "t"),
            "{args:?}"
        );
    }
    let o = profkit()
        .current_dir(&b)
        .env("PROFKIT_MAX_INFLATED", "1K")
        .args(["info", "t"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error: t: an LLVM XRay trace is inflated whole from a gzip stream")
            && err.contains("over the limit of 1024 bytes (PROFKIT_MAX_INFLATED"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

/// A gzip basic-mode XRay log of `pairs` enter/exit pairs of function 1 on one thread, TSCs
/// rising (each 1 MiB of records its own gzip member, so it is cheap to write): (path,
/// decompressed size).
fn big_basic_xray(dir: &Path, pairs: u64) -> (PathBuf, u64) {
    let mut header = Vec::new();
    header.extend_from_slice(&3u16.to_le_bytes()); // version
    header.extend_from_slice(&0u16.to_le_bytes()); // basic
    header.extend_from_slice(&3u32.to_le_bytes()); // constant + nonstop TSC
    header.extend_from_slice(&1_000_000_000u64.to_le_bytes());
    header.extend_from_slice(&[0u8; 16]);
    let record = |kind: u8, tsc: u64| {
        let mut r = [0u8; 32];
        r[3] = kind;
        r[4..8].copy_from_slice(&1i32.to_le_bytes());
        r[8..16].copy_from_slice(&tsc.to_le_bytes());
        r[16..20].copy_from_slice(&7u32.to_le_bytes());
        r[20..24].copy_from_slice(&7u32.to_le_bytes());
        r
    };
    let path = dir.join("big.xray.gz");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    f.write_all(&gzip(&header)).unwrap();
    let mut chunk = Vec::with_capacity(1 << 20);
    for i in 0..pairs {
        chunk.extend_from_slice(&record(0, 10 * i));
        chunk.extend_from_slice(&record(1, 10 * i + 5));
        if chunk.len() >= 1 << 20 || i + 1 == pairs {
            f.write_all(&gzip(&chunk)).unwrap();
            chunk.clear();
        }
    }
    f.flush().unwrap();
    (path, 32 + 64 * pairs)
}

/// A format read whole (XRay) from a ≥ 300 MB (decompressed) gzip stream: `account` and
/// `stack` read the inflated temporary file as a mapped file, so memory stays at a few tens of
/// MB, as for the plain file.
#[test]
fn a_big_gzip_stream_read_whole_stays_out_of_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let pairs = 5_000_000;
    let (path, size) = big_basic_xray(tmp.path(), pairs);
    assert!(size >= 300 << 20);
    let path = path.display().to_string();
    for args in [["account", "--json", &path], ["stack", "--folded", &path]] {
        let (out, code, kib) = peak_rss_kib(&args);
        assert_eq!(code, 0, "{args:?}");
        if args[0] == "account" {
            let v: Value = serde_json::from_str(&out).unwrap();
            let count = v["functions"][0]["count"].as_u64();
            assert_eq!(count, Some(pairs), "{out:.400}");
        }
        assert!(
            kib < 96 << 10,
            "{args:?}: peak RSS {kib} KiB for {size} bytes"
        );
    }
}

/// `inject` reads a gzip recording like every command: inflated through the spool, bounded by
/// `PROFKIT_MAX_INFLATED` (it was inflated into memory whatever its size: B6).
#[test]
fn inject_inflates_gzip_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(fixture("perf", "node-fp.data")).unwrap();
    std::fs::write(dir.path().join("rec.data.gz"), gzip(&plain)).unwrap();
    let o = profkit()
        .current_dir(dir.path())
        .env("PROFKIT_MAX_INFLATED", "64K")
        .args(["inject", "-i", "rec.data.gz", "-o", "out.data"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("rec.data.gz") && err.contains("PROFKIT_MAX_INFLATED"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "only the input remains");
    let o = profkit()
        .current_dir(dir.path())
        .args(["inject", "-i", "rec.data.gz", "-o", "out.data"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(dir.path().join("out.data").is_file());
}

/// A gzip recording that inflates (under the default `PROFKIT_MAX_INFLATED`) past the address
/// space `ulimit -v` leaves: an error that says so and what to do, exit 2, not the OS's
/// "Cannot allocate memory" of the failed mapping (B6). 335 MB from 344 KB: the recording and
/// 320 members of 1 MiB of zeros.
#[test]
fn a_gzip_stream_past_the_address_space_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(fixture("perf", "node-fp.data")).unwrap();
    let mut bomb = gzip(&plain);
    let zeros = gzip(&vec![0u8; 1 << 20]);
    for _ in 0..320 {
        bomb.extend_from_slice(&zeros);
    }
    std::fs::write(dir.path().join("bomb.data.gz"), bomb).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("profkit");
    let o = std::process::Command::new("sh")
        .current_dir(dir.path())
        .args(["-c", "ulimit -v 300000 && exec \"$0\" \"$@\""])
        .arg(&bin)
        .args(["inject", "-i", "bomb.data.gz", "-o", "out.data"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bomb.data.gz: the input inflates to 335")
            && err.contains("ulimit -v")
            && err.contains("PROFKIT_MAX_INFLATED"),
        "{err}"
    );
    assert!(!err.contains("Cannot allocate memory"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "only the input remains");
}
