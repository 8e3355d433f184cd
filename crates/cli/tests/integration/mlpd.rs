//! Mono log profiler commands: `report` (parity with mprof-report's committed outputs),
//! `info`, `dump`, `validate`, `account` and `stack` on .mlpd files (plain and gzip).
//! A module of `tests/integration/main.rs`.

use std::path::PathBuf;

use crate::support;

fn dir() -> PathBuf {
    support::fixture_dir("mlpd")
}

fn run(args: &[&str]) -> (String, String, i32) {
    support::run_in("mlpd", args)
}

fn ok(args: &[&str]) -> String {
    support::ok_in("mlpd", args)
}

/// The lines of one section of a report text (from its title to the next blank line).
fn section<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut on = false;
    for l in text.lines() {
        if l == title {
            on = true;
            continue;
        }
        if on {
            if l.is_empty() {
                break;
            }
            out.push(l);
        }
    }
    out
}

#[test]
fn report_sections_match_mprof_report() {
    for name in [
        "busy_everything",
        "busy_monitor_bt",
        "cpu_sample",
        "hello_default",
    ] {
        let ours = ok(&["report", &format!("{name}.mlpd")]);
        let golden = std::fs::read_to_string(dir().join(format!("{name}.report.txt"))).unwrap();
        for title in [
            "JIT summary",
            "GC summary",
            "Exception summary",
            "Monitor lock summary",
            "Metadata summary",
            "Statistical samples summary",
        ] {
            let mut a = section(&golden, title);
            let mut b: Vec<&str> = section(&ours, title)
                .into_iter()
                .filter(|l| !l.contains("handles pinned"))
                .collect();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "{name}: {title}");
        }
    }
}

#[test]
fn report_selects_sections_and_rejects_unknown_ones() {
    let out = ok(&["report", "--reports=jit,exception", "busy_default.mlpd"]);
    assert!(out.contains("JIT summary") && out.contains("Exception summary"));
    assert!(!out.contains("GC summary"));
    let (_, err, code) = run(&["report", "--reports=nope", "busy_default.mlpd"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown section"), "{err}");
}

#[test]
fn report_json_has_the_schema_and_every_called_method() {
    let out = ok(&["report", "--json", "busy_calls.mlpd"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema"], "profkit.mlpd-report/1");
    assert_eq!(v["header"]["data_version"], 17);
    assert_eq!(v["header"]["arch"], "x86-64");
    let calls = v["calls"].as_array().unwrap();
    let fib = calls
        .iter()
        .find(|c| c["method"] == "Busy:Fib (int)")
        .unwrap();
    assert!(fib["calls"].as_u64().unwrap() > 1000);
    // recursion counted once: Fib's total is below Main's
    let main = calls
        .iter()
        .find(|c| c["method"] == "Busy:Main (string[])")
        .unwrap();
    assert!(fib["total_ns"].as_u64().unwrap() <= main["total_ns"].as_u64().unwrap());
    // methods under 1 ms are listed too
    assert!(calls
        .iter()
        .any(|c| c["total_ns"].as_u64().unwrap() < 1_000_000));
    let golden = std::fs::read_to_string(dir().join("busy_calls.report.txt")).unwrap();
    let total: u64 = golden
        .lines()
        .find_map(|l| l.strip_prefix("Total calls: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        calls
            .iter()
            .map(|c| c["calls"].as_u64().unwrap())
            .sum::<u64>(),
        total
    );
}

#[test]
fn report_reads_gzip_transparently() {
    let out = ok(&["report", "--reports=call", "hello_zip.mlpd"]);
    assert!(out.contains("Method call summary"));
    let golden = std::fs::read_to_string(dir().join("hello_zip.report.txt")).unwrap();
    let t = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("Total calls"))
            .map(str::to_string)
    };
    assert_eq!(t(&out), t(&golden));
}

#[test]
fn report_fixes_unresolved_vtables() {
    let out = ok(&["report", "--reports=alloc", "busy_calls_alloc.mlpd"]);
    assert!(!out.contains("unresolved"), "{out}");
    let golden = std::fs::read_to_string(dir().join("busy_calls_alloc.report.txt")).unwrap();
    assert!(golden.contains("unresolved class (nil)"));
    let total = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("Total memory"))
            .map(str::to_string)
    };
    assert_eq!(total(&out), total(&golden));
}

#[test]
fn report_thread_and_time_filters() {
    let all = ok(&["report", "--json", "busy_calls_alloc.mlpd"]);
    let v: serde_json::Value = serde_json::from_str(&all).unwrap();
    let main = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "MainWorker")
        .unwrap()["id"]
        .as_u64()
        .unwrap();
    let one = ok(&[
        "report",
        "--json",
        "--thread",
        &format!("{main:#x}"),
        "busy_calls_alloc.mlpd",
    ]);
    let w: serde_json::Value = serde_json::from_str(&one).unwrap();
    let n = |v: &serde_json::Value| {
        v["alloc"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["count"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert!(n(&w) < n(&v));
    let none = ok(&[
        "report",
        "--json",
        "--time",
        "1000-2000",
        "busy_calls_alloc.mlpd",
    ]);
    let z: serde_json::Value = serde_json::from_str(&none).unwrap();
    assert_eq!(z["calls"].as_array().unwrap().len(), 0);
    let (_, err, code) = run(&["report", "--time", "x", "busy_calls_alloc.mlpd"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn info_dump_validate() {
    let out = ok(&["info", "hello_calls.mlpd"]);
    assert!(out.contains("data version 17"), "{out}");
    let j = ok(&["info", "--json", "hello_zip.mlpd"]);
    let v: serde_json::Value = serde_json::from_str(j.lines().next().unwrap()).unwrap();
    assert_eq!(v["format"], "mlpd");
    assert_eq!(v["compression"], "gzip");
    let d = ok(&["dump", "hello_calls.mlpd"]);
    assert!(d.contains("enter method=") && d.contains("jit method="));
    let dj = ok(&["dump", "--json", "hello_calls.mlpd"]);
    for l in dj.lines().take(50) {
        serde_json::from_str::<serde_json::Value>(l).unwrap();
    }
    let val = ok(&["validate", "busy_everything.mlpd"]);
    assert!(val.contains("0 errors"), "{val}");
    assert!(val.contains("mono-time-wrap"), "{val}");
}

#[test]
fn validate_reports_a_truncated_file() {
    let data = std::fs::read(dir().join("hello_calls.mlpd")).unwrap();
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("cut.mlpd");
    std::fs::write(&p, &data[..data.len() - 100]).unwrap();
    let (out, _err, code) = run(&["validate", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("file ends inside"), "{out}");
}

#[test]
fn account_and_folded_stacks_from_calls() {
    let out = ok(&["account", "busy_calls.mlpd"]);
    assert!(out.contains("Busy:Fib (int)"), "{out}");
    let folded = ok(&["stack", "--folded", "busy_calls.mlpd"]);
    assert!(
        folded
            .lines()
            .any(|l| l.contains("Busy:Main (string[]);Busy:Fib (int);Busy:Fib (int)")),
        "{folded}"
    );
    for l in folded.lines() {
        let (_, v) = l.rsplit_once(' ').unwrap();
        v.parse::<u64>().unwrap();
    }
    let gz = ok(&["account", "--json", "hello_zip.mlpd"]);
    assert!(gz.contains("Hello:Square"), "{gz}");
}

#[test]
fn folded_stacks_from_samples() {
    let (out, err, code) = run(&["stack", "--folded", "cpu_sample.mlpd"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.contains("Cpu:Work (int)")), "{out}");
    assert!(err.contains("sample"), "{err}");
}

#[test]
fn report_streams_gzip_and_stdin_with_the_same_result() {
    // busy_zip is gzip (read as a stream); the same bytes on stdin, and decompressed on stdin
    let file = ok(&["report", "--json", "busy_zip.mlpd"]);
    let raw = std::fs::read(dir().join("busy_zip.mlpd")).unwrap();
    let piped = |bytes: Vec<u8>| {
        let o = support::profkit()
            .args(["report", "--json", "-"])
            .write_stdin(bytes)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    assert_eq!(piped(raw.clone()), file);
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut plain).unwrap();
    assert_eq!(piped(plain), file);
}

#[test]
fn report_rejects_other_formats_in_a_stream() {
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, b"DTiJ\x01\x00\x00\x00 a jitdump, not mlpd").unwrap();
        e.finish().unwrap()
    };
    let t = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(t.path(), gz).unwrap();
    let (_, err, code) = run(&["report", t.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("jitdump"), "{err}");
}

/// `--traces`: backtraces under each entry, as mprof-report prints them (the library's tests
/// compare them with mprof-report's output); the JSON carries them too.
#[test]
fn report_traces_text_and_json() {
    let out = ok(&[
        "report",
        "--traces",
        "--reports=alloc,call,exception",
        "busy_calls_alloc.mlpd",
    ]);
    assert!(out.contains(" calls from:\n\t\t"), "{out}");
    assert!(out.contains(" bytes from:\n\t\t"));
    let golden = std::fs::read_to_string(dir().join("busy_calls_alloc.traces.txt")).unwrap();
    let block = "\t27552 bytes from:\n\t\tBusy:Build (int)\n";
    assert!(golden.contains(block));
    assert!(out.contains(block), "{out}");
    let j: serde_json::Value = serde_json::from_str(&ok(&[
        "report",
        "--traces",
        "--json",
        "busy_calls_alloc.mlpd",
    ]))
    .unwrap();
    let fib = j["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["method"] == "Busy:Fib (int)")
        .unwrap();
    let traces = fib["traces"].as_array().unwrap();
    assert!(!traces.is_empty());
    assert!(traces[0]["frames"].as_array().unwrap().len() <= 6);
    assert!(j["alloc"][0]["traces"].is_array());
    // without --traces there are none
    let j: serde_json::Value =
        serde_json::from_str(&ok(&["report", "--json", "busy_calls_alloc.mlpd"])).unwrap();
    assert!(j["calls"][0].get("traces").is_none());
}

#[test]
fn report_sort_find_and_track_options() {
    let by_calls = ok(&[
        "report",
        "--method-sort=calls",
        "--reports=call",
        "busy_calls.mlpd",
    ]);
    let calls: Vec<u64> = by_calls
        .lines()
        .skip_while(|l| !l.starts_with("Total(ms)"))
        .skip(1)
        .take_while(|l| !l.starts_with("Total calls"))
        .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
    assert!(
        calls.len() > 3 && calls.windows(2).all(|w| w[0] >= w[1]),
        "{calls:?}"
    );
    let by_count = ok(&[
        "report",
        "--alloc-sort=count",
        "--reports=alloc",
        "busy_alloc_bt.mlpd",
    ]);
    assert!(by_count.contains("Allocation summary"));
    // --find prints only the found objects' events, in mprof-report's words
    let found = ok(&["report", "--find=S:2000", "busy_alloc_bt.mlpd"]);
    let golden =
        std::fs::read_to_string(dir().join("options/alloc_bt.find-size-traces.txt")).unwrap();
    let created = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("Object "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(created(&found), created(&golden));
    let addr = created(&golden)[0]
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    let tracked = ok(&[
        "report",
        &format!("--track={addr}"),
        "--json",
        "busy_alloc_bt.mlpd",
    ]);
    let j: serde_json::Value = serde_json::from_str(&tracked).unwrap();
    assert_eq!(j["tracking"][0]["event"], "created");
    let (_, err, code) = run(&["report", "--find=X:1", "busy_alloc_bt.mlpd"]);
    assert_eq!(code, 2, "{err}");
}

/// Issue #13 on real files: the frames Environment.Exit leaves open are closed at their
/// thread's last event (mprof-report's rows), every thread is listed (one of Threads.exe's
/// workers has no name), and a collection that ends on another thread than it started is
/// counted with its real pause.
#[test]
fn report_closes_open_frames_lists_every_thread_and_pairs_gcs_across_threads() {
    let out = ok(&["report", "threads_calls.mlpd"]);
    let golden = std::fs::read_to_string(dir().join("threads_calls.report.txt")).unwrap();
    let exit = |s: &str| {
        s.lines()
            .find(|l| l.ends_with("System.Environment:Exit (int)"))
            .map(str::to_string)
    };
    assert!(exit(&golden).is_some());
    assert_eq!(exit(&out), exit(&golden), "{out}");
    let mut a = section(&golden, "Thread summary");
    let b = section(&out, "Thread summary");
    let mut sorted = b.clone();
    sorted.sort_by_key(|l| (l.split("name: ").nth(1).unwrap_or(""), l.to_string()));
    assert_eq!(b, sorted, "thread rows in name order");
    let mut b = b;
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
    let j = ok(&["report", "--json", "threads_calls.mlpd"]);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let threads = v["threads"].as_array().unwrap();
    assert_eq!(threads.len(), a.len());
    assert!(threads.iter().any(|t| t["name"] == ""), "{threads:?}");
    let exit = v["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["method"] == "(wrapper managed-to-native) System.Environment:Exit (int)")
        .unwrap();
    assert_eq!(exit["calls"], 1);
    assert!(exit["total_ns"].as_u64().unwrap() > 1_000_000_000, "{exit}");
    assert_eq!(v["stats"]["unfinished_frames"], 3);

    let gc = ok(&["report", "--reports=gc", "churn_gc_heapshot.mlpd"]);
    assert!(
        gc.contains("\tGen1 collections: 7, max time: 855us, total time: 3327us, average: 475us\n"),
        "{gc}"
    );
}

/// Plain `account` on a Mono file: the function column is at most
/// profkit_analysis::account::FUNCTION_COLUMN wide (Mono's wrapper names run to 280 characters);
/// JSON keeps the names whole.
#[test]
fn account_table_caps_the_function_column() {
    let out = ok(&["account", "threads_calls.mlpd"]);
    let width = out.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(width < 160, "{width}: {out}");
    assert!(out.lines().any(|l| l.contains("...")), "{out}");
    let j = ok(&["account", "--json", "threads_calls.mlpd"]);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let longest = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().chars().count())
        .max()
        .unwrap();
    assert!(longest > 100, "{longest}");
}
