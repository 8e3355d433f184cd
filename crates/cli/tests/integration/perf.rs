//! perf.data end to end, against perf itself: `profkit convert` of the committed recordings
//! (tests/fixtures/perf) must give each symbol the self share `perf inject --jit` + `perf
//! report` gives it, and `--call-graph dwarf` samples in JIT code must reach `node::Start` as
//! often as perf's own unwinding makes them. perf needs the jitdump at the path it recorded
//! (`/tmp/profkit-fixtures-perf/node/`) and the perf map in /tmp: the tests put them there.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{fixture_dir, profkit};

/// Where the fixtures' recordings ran: their jitdump markers point here.
const RECORDED_DIR: &str = "/tmp/profkit-fixtures-perf/node";

fn gunzip_to(src: &Path, dst: &Path) {
    let mut bytes = Vec::new();
    let f = std::fs::File::open(src).unwrap();
    flate2::read::GzDecoder::new(f)
        .read_to_end(&mut bytes)
        .unwrap();
    std::fs::write(dst, bytes).unwrap();
}

/// A scratch directory holding `data` as `<stem>.data` with its jitdump beside it as
/// `jit-<pid>.dump` (where `profkit convert` looks without arguments).
pub(crate) fn recording(stem: &str, dump: Option<(&str, u32)>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = fixture_dir("perf");
    let data = dir.path().join(format!("{stem}.data"));
    let plain = fixtures.join(format!("{stem}.data"));
    if plain.exists() {
        std::fs::copy(&plain, &data).unwrap();
    } else {
        gunzip_to(&fixtures.join(format!("{stem}.data.gz")), &data);
    }
    if let Some((name, pid)) = dump {
        gunzip_to(
            &fixtures.join(name),
            &dir.path().join(format!("jit-{pid}.dump")),
        );
    }
    (dir, data)
}

/// Self weight per leaf frame of a folded file, as shares in percent.
pub(crate) fn folded_self_shares(folded: &str) -> HashMap<String, f64> {
    let mut weights: HashMap<String, u64> = HashMap::new();
    let mut total = 0u64;
    for line in folded.lines() {
        let (stack, w) = line.rsplit_once(' ').unwrap();
        let w: u64 = w.parse().unwrap();
        // perf report's symbol is the function the address is in: the innermost frame
        // that was not inlined.
        let leaf = stack
            .rsplit(';')
            .find(|f| !f.ends_with(" (inlined)"))
            .unwrap();
        *weights.entry(normalize(leaf)).or_default() += w;
        total += w;
    }
    assert!(total > 0, "empty folded output");
    weights
        .into_iter()
        .map(|(k, v)| (k, 100.0 * v as f64 / total as f64))
        .collect()
}

/// A C++ name as `perf report` prints it: no parameters, no return type, no `[clone …]`.
/// JIT names (`JS:*f file.js:1:2`) stay whole.
pub(crate) fn normalize(name: &str) -> String {
    if name.starts_with("JS:") || name.starts_with("Builtin:") || !name.contains('(') {
        return name.to_string();
    }
    let name = name.replace("(anonymous namespace)", "\u{1}");
    let name = match name.find(" [clone") {
        Some(i) => &name[..i],
        None => &name[..],
    };
    let mut depth = 0i32;
    let mut cut = name.len();
    let mut last_space = None;
    for (i, c) in name.char_indices() {
        match c {
            '<' | '{' => depth += 1,
            '>' | '}' => depth -= 1,
            '(' if depth == 0 => {
                cut = i;
                break;
            }
            ' ' if depth == 0 => last_space = Some(i),
            _ => {}
        }
    }
    let head = &name[..cut];
    let head = match last_space {
        Some(i) if i < cut => &head[i + 1..],
        _ => head,
    };
    head.replace('\u{1}', "(anonymous namespace)")
}

/// `perf report --stdio --no-children --sort sym -g none` of `data`: (share, is kernel, name),
/// summed per name.
pub(crate) fn perf_report_shares(perf: &Path, data: &Path) -> Vec<(f64, bool, String)> {
    let out = Command::new(perf)
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "sym",
            "-g",
            "none",
            "-i",
        ])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut by_name: HashMap<(bool, String), f64> = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let line = line.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let Some((share, rest)) = line.split_once('%') else {
            continue;
        };
        let Ok(share) = share.trim().parse::<f64>() else {
            continue;
        };
        let rest = rest.trim();
        let kernel = rest.starts_with("[k]");
        let name = rest.get(4..).unwrap_or("").trim().to_string();
        *by_name.entry((kernel, name)).or_default() += share;
    }
    let mut v: Vec<_> = by_name.into_iter().map(|((k, n), s)| (s, k, n)).collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    v
}

/// perf inject --jit of `data`, with the dump where the recording says it was.
///
/// The dump is copied under a name of this process's own and renamed into place: other tests
/// running at the same time (`diff` of the committed recordings) find the dump at that path
/// too, and must never read a copy half written.
fn perf_inject(perf: &Path, data: &Path, dump: &Path, pid: u32) -> PathBuf {
    std::fs::create_dir_all(RECORDED_DIR).unwrap();
    let dir = Path::new(RECORDED_DIR);
    let partial = dir.join(format!(
        ".jit-{pid}.dump.{}.{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::copy(dump, &partial).unwrap();
    std::fs::rename(&partial, dir.join(format!("jit-{pid}.dump"))).unwrap();
    run_perf_inject(perf, data)
}

/// `perf inject --jit -i data -o data.jit.data` (the dump where the recording says it is),
/// with a build-id cache of its own beside `data`: perf inject files this machine's
/// /proc/kallsyms under the recorded kernel's build id, which would make every later perf
/// report (and profkit) name that kernel's frames from the wrong table.
pub(crate) fn run_perf_inject(perf: &Path, data: &Path) -> PathBuf {
    let out = data.with_extension("jit.data");
    let cache = data.with_extension("buildid");
    let o = Command::new(perf)
        .arg("--buildid-dir")
        .arg(&cache)
        .args(["inject", "--jit", "-i"])
        .arg(data)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "perf inject ({}): {}{}",
        o.status,
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    out
}

/// `profkit convert data -o data.folded --short-names` (C++ names as perf prints them).
pub(crate) fn convert_folded(data: &Path) -> String {
    let out = data.with_extension("folded");
    let o = profkit()
        .arg("convert")
        .arg(data)
        .arg("-o")
        .arg(&out)
        .arg("--short-names")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}

/// perf's top `n` user-space symbols with a name (not `[unknown]` or a bare address) have our
/// self share to within `tolerance` points.
fn assert_same_shares(perf_shares: &[(f64, bool, String)], ours: &HashMap<String, f64>, n: usize) {
    let named = perf_shares
        .iter()
        .filter(|(_, k, name)| {
            !k && !name.is_empty() && name != "[unknown]" && !name.starts_with("0x")
        })
        .take(n);
    let mut report = Vec::new();
    let mut worst = 0f64;
    for (share, _, name) in named {
        let mine = ours.get(&normalize(name)).copied().unwrap_or(0.0);
        worst = worst.max((mine - share).abs());
        report.push(format!("{share:6.2} {mine:6.2} {name}"));
    }
    assert!(
        report.len() == n,
        "perf named only {} symbols",
        report.len()
    );
    assert!(
        worst <= 0.5,
        "self shares differ by {worst:.2} points:\nperf   ours\n{}",
        report.join("\n")
    );
}

#[test]
fn fp_self_shares_match_perf_inject_and_report() {
    let test = "perf::fp_self_shares_match_perf_inject_and_report";
    let (dir, data) = recording("node-fp", Some(("node-fp.jit-30519.dump.gz", 30519)));
    let folded = convert_folded(&data);
    let ours = folded_self_shares(&folded);
    // JIT frames sit under their JS callers: the JS entry and node's own frames above them.
    assert!(folded
        .lines()
        .any(|l| l.contains("JS:") && l.contains(";node::Start;")));
    let Some(perf) = profkit_testkit::perf(test) else {
        return;
    };
    let injected = perf_inject(&perf, &data, &dir.path().join("jit-30519.dump"), 30519);
    assert_same_shares(&perf_report_shares(&perf, &injected), &ours, 12);
}

/// `stack` of a recording names its frames as `convert` does (it printed function ids,
/// `#8 > #9`, before: the names a perf.data declares while it is read were not used), and the
/// same stacks carry the same sample counts.
#[test]
fn stack_of_a_recording_names_frames_as_convert_does() {
    let (_dir, data) = recording("node-fp", Some(("node-fp.jit-30519.dump.gz", 30519)));
    let o = profkit()
        .args(["stack", "--folded", "--short-names"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stack = String::from_utf8(o.stdout).unwrap();
    assert!(!stack.contains('#'), "unnamed frames: {stack}");
    let sorted = |text: &str| {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    assert_eq!(sorted(&stack), sorted(&convert_folded(&data)));
}

#[test]
fn perf_map_self_shares_match_perf_report() {
    let test = "perf::perf_map_self_shares_match_perf_report";
    let (dir, data) = recording("node-basic-prof", None);
    let map = fixture_dir("perf").join("node-basic-prof.perf-30665.map");
    std::fs::copy(&map, dir.path().join("perf-30665.map")).unwrap();
    let ours = folded_self_shares(&convert_folded(&data));
    assert!(
        ours.keys().any(|k| k.starts_with("JS:")),
        "no JIT names from the perf map"
    );
    let Some(perf) = profkit_testkit::perf(test) else {
        return;
    };
    // perf reads perf maps from /tmp only.
    std::fs::copy(&map, "/tmp/perf-30665.map").unwrap();
    assert_same_shares(&perf_report_shares(&perf, &data), &ours, 12);
}

/// Of the samples whose leaf is JIT code, the share whose stack reaches `node::Start`.
fn jit_reaching_start(stacks: impl Iterator<Item = (Vec<String>, u64)>) -> (f64, u64) {
    let (mut jit, mut reach) = (0u64, 0u64);
    for (frames, n) in stacks {
        let Some(leaf) = frames.last() else { continue };
        if !(leaf.starts_with("JS:")
            || leaf.starts_with("Builtin:")
            || leaf.starts_with("Builtins_"))
        {
            continue;
        }
        jit += n;
        if frames.iter().any(|f| f.starts_with("node::Start")) {
            reach += n;
        }
    }
    (
        if jit == 0 {
            0.0
        } else {
            100.0 * reach as f64 / jit as f64
        },
        jit,
    )
}

#[test]
fn dwarf_unwinding_reaches_node_start_like_perf() {
    let test = "perf::dwarf_unwinding_reaches_node_start_like_perf";
    let (dir, data) = recording("node-dwarf", Some(("node-dwarf.jit-30565.dump.gz", 30565)));
    let folded = profkit()
        .arg("convert")
        .arg(&data)
        .args(["-o", "-", "-f", "folded", "--counts"])
        .output()
        .unwrap();
    assert!(
        folded.status.success(),
        "{}",
        String::from_utf8_lossy(&folded.stderr)
    );
    let ours = jit_reaching_start(String::from_utf8_lossy(&folded.stdout).lines().map(|l| {
        let (stack, n) = l.rsplit_once(' ').unwrap();
        (
            stack.split(';').map(str::to_string).collect(),
            n.parse().unwrap(),
        )
    }));
    assert!(ours.1 > 0, "no samples in JIT code");
    let Some(perf) = profkit_testkit::perf(test) else {
        return;
    };
    let injected = perf_inject(&perf, &data, &dir.path().join("jit-30565.dump"), 30565);
    let script = Command::new(&perf)
        .args(["script", "-F", "ip,sym", "-i"])
        .arg(&injected)
        .output()
        .unwrap();
    assert!(script.status.success());
    // perf script: one block per sample, innermost first, blank line between samples.
    let text = String::from_utf8_lossy(&script.stdout);
    let theirs = jit_reaching_start(text.split("\n\n").map(|block| {
        let mut frames: Vec<String> = block
            .lines()
            .filter_map(|l| l.trim().split_once(' ').map(|(_, s)| s.to_string()))
            .collect();
        frames.reverse();
        (frames, 1)
    }));
    eprintln!(
        "JIT samples reaching node::Start: ours {:.1}% of {}, perf {:.1}% of {}",
        ours.0, ours.1, theirs.0, theirs.1
    );
    // --counts counts samples: as many JIT samples as perf script shows.
    assert_eq!(
        ours.1, theirs.1,
        "JIT samples: ours {}, perf {}",
        ours.1, theirs.1
    );
    assert!(
        ours.0 + 5.0 >= theirs.0,
        "JIT samples reaching node::Start: ours {:.1}% of {}, perf {:.1}% of {}",
        ours.0,
        ours.1,
        theirs.0,
        theirs.1
    );
}

/// A recording made now, of node on this machine (the committed ones were made elsewhere):
/// `perf record -k 1 -g node --perf-prof`, then the same comparison with perf.
/// Records `program args` with `perf record -k 1 -g -F 999 [events]` in a fresh directory holding
/// a copy of `scripts/fixtures/<script>` (the runtime writes its jitdump there).
pub(crate) fn record_live(
    perf: &Path,
    events: &[&str],
    script: &str,
    program: &Path,
    args: &[&str],
    prepare: impl FnOnce(&Path),
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture_dir("../../scripts/fixtures").join(script);
    std::fs::copy(&src, dir.path().join(src.file_name().unwrap())).unwrap();
    prepare(dir.path());
    let data = dir.path().join("live.data");
    let o = Command::new(perf)
        .args(["record", "-q", "-k", "1", "-g", "-F", "999"])
        .args(events)
        .arg("-o")
        .arg(&data)
        .arg("--")
        .arg(program)
        .args(args)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "perf record: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (dir, data)
}

#[test]
fn live_node_recording_matches_perf() {
    let test = "perf::live_node_recording_matches_perf";
    let Some(perf) = profkit_testkit::perf(test) else {
        return;
    };
    let Some(node) = profkit_testkit::tool(test, "node", "Node.js") else {
        return;
    };
    // About 1,000 samples: one sample is 0.1 point of a share.
    let args = [
        "--perf-prof",
        "--interpreted-frames-native-stack",
        "busy.js",
        "1000",
    ];
    let (_dir, data) = record_live(&perf, &[], "node/busy.js", &node, &args, |_| {});
    // The dump stays where node wrote it: profkit finds it through perf's marker mmap.
    let ours = folded_self_shares(&convert_folded(&data));
    let injected = run_perf_inject(&perf, &data);
    assert_same_shares(&perf_report_shares(&perf, &injected), &ours, 12);
}

#[test]
fn firefox_profile_has_one_sample_per_perf_sample() {
    let (_dir, data) = recording("node-fp", Some(("node-fp.jit-30519.dump.gz", 30519)));
    let out = data.with_extension("fxprof.json");
    let o = profkit()
        .arg("convert")
        .arg(&data)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: serde_json::Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    let samples: u64 = p["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["samples"]["length"].as_u64().unwrap())
        .sum();
    // perf report --stats: 355 samples (tests/fixtures/perf/node-fp.stats.txt).
    assert_eq!(samples, 355);
    // Source lines: the optimized fib is one function of busy.js starting at line 7 (its V8
    // name), sampled at lines of its body (the jitdump's DEBUG_INFO).
    let main = p["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "node")
        .unwrap();
    let strings = main["stringArray"].as_array().unwrap();
    let string = |v: &serde_json::Value| strings[v.as_u64().unwrap() as usize].as_str().unwrap();
    let funcs = &main["funcTable"];
    let fib: Vec<usize> = (0..funcs["length"].as_u64().unwrap() as usize)
        .filter(|&i| string(&funcs["name"][i]).starts_with("JS:*fib "))
        .collect();
    assert_eq!(fib.len(), 1, "one func for fib");
    assert!(string(&funcs["fileName"][fib[0]]).ends_with("/busy.js"));
    assert_eq!(funcs["lineNumber"][fib[0]], 7);
    let frames = &main["frameTable"];
    let lines: std::collections::BTreeSet<u64> = (0..frames["length"].as_u64().unwrap() as usize)
        .filter(|&i| frames["func"][i].as_u64() == Some(fib[0] as u64))
        .filter_map(|i| frames["line"][i].as_u64())
        .collect();
    assert!(
        !lines.is_empty() && lines.iter().all(|l| (7..=9).contains(l)),
        "{lines:?}"
    );
}

/// The Python of the venv scripts/ci/install-export-py.sh fills, with wasmtime from PyPI.
fn wasmtime_python(test: &str) -> Option<PathBuf> {
    profkit_testkit::external(
        test,
        "Python with wasmtime (scripts/ci/install-export-py.sh)",
        profkit_testkit::deps_dir().join("venv/bin/python"),
        |py| {
            Command::new(py)
                .args(["-c", "import wasmtime"])
                .status()
                .is_ok_and(|s| s.success())
        },
    )
}

#[test]
fn live_wasmtime_recording_matches_perf() {
    let test = "perf::live_wasmtime_recording_matches_perf";
    let Some(perf) = profkit_testkit::perf(test) else {
        return;
    };
    let Some(python) = wasmtime_python(test) else {
        return;
    };
    let (_dir, data) = record_live(
        &perf,
        &[],
        "wasmtime/fib.py",
        &python,
        &["fib.py", "1500"],
        |_| {},
    );
    let folded = convert_folded(&data);
    let ours = folded_self_shares(&folded);
    // The wasm functions are named by wasmtime's dump, `fib` under `loop`.
    assert!(ours.get("fib").is_some_and(|&s| s > 50.0), "{ours:?}");
    assert!(folded.lines().any(|l| l.contains(";loop;fib")));
    let injected = run_perf_inject(&perf, &data);
    assert_same_shares(&perf_report_shares(&perf, &injected), &ours, 12);
}

/// wasmtime with `--call-graph dwarf`: profkit unwinds through the JIT frames into the Python
/// interpreter (perf 6.1's own unwinding of `perf inject --jit`'s output, and of profkit
/// inject's, stops at `fib`: docs/perf.md), and `profkit inject`'s `-g none` report is perf
/// inject's.
#[test]
fn live_wasmtime_dwarf_unwinds_through_jit_frames() {
    let test = "perf::live_wasmtime_dwarf_unwinds_through_jit_frames";
    let Some(perf) = profkit_testkit::perf(test) else {
        return;
    };
    let Some(python) = wasmtime_python(test) else {
        return;
    };
    let (_dir, data) = record_live(
        &perf,
        &["--call-graph", "dwarf", "-F", "499"],
        "wasmtime/fib.py",
        &python,
        &["fib.py", "1500"],
        |_| {},
    );
    let folded = convert_folded(&data);
    let (mut fib, mut reach) = (0u64, 0u64);
    for line in folded.lines() {
        let (stack, w) = line.rsplit_once(' ').unwrap();
        let w: u64 = w.parse().unwrap();
        if stack.ends_with(";fib") {
            fib += w;
            if stack.contains("PyEval") || stack.contains("Py_RunMain") {
                reach += w;
            }
        }
    }
    assert!(fib > 0, "no samples in fib");
    assert!(
        reach * 10 >= fib * 9,
        "{reach} of {fib} fib samples reach the interpreter"
    );
    let injected = run_perf_inject(&perf, &data);
    let ours = data.with_extension("profkit.data");
    let o = profkit()
        .args(["inject", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&ours)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sorted = |data: &Path| {
        let mut v: Vec<(u64, bool, String)> = perf_report_shares(&perf, data)
            .into_iter()
            .map(|(s, k, n)| ((s * 100.0).round() as u64, k, n))
            .collect();
        v.sort();
        v
    };
    assert_eq!(sorted(&ours), sorted(&injected));
}

#[test]
fn event_picks_which_samples_are_used() {
    let test = "perf::event_picks_which_samples_are_used";
    let Some(perf) = profkit_testkit::perf(test) else {
        return;
    };
    let Some(node) = profkit_testkit::tool(test, "node", "Node.js") else {
        return;
    };
    let events = ["-e", "cpu-clock", "-e", "page-faults"];
    let args = ["--perf-prof", "busy.js", "300"];
    let (_dir, data) = record_live(&perf, &events, "node/busy.js", &node, &args, |_| {});
    // perf's own count of each event's samples.
    let o = Command::new(&perf)
        .args(["report", "--stats", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let stats = String::from_utf8_lossy(&o.stdout);
    let per_event: Vec<u64> = stats
        .lines()
        .filter(|l| l.trim_start().starts_with("SAMPLE events:") && !l.contains('%'))
        .filter_map(|l| l.split_whitespace().last()?.parse().ok())
        .collect();
    assert_eq!(per_event.len(), 2, "{stats}");
    let samples_of = |event: Option<&str>| -> (u64, String) {
        let out = data.with_extension(format!("{}.folded", event.unwrap_or("first")));
        let mut c = profkit();
        c.arg("convert")
            .arg(&data)
            .arg("--counts")
            .arg("-o")
            .arg(&out);
        if let Some(e) = event {
            c.args(["--event", e]);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let folded = std::fs::read_to_string(out).unwrap();
        let n = folded
            .lines()
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum();
        (n, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (first, warn) = samples_of(None);
    assert_eq!(first, per_event[0]);
    assert!(warn.contains("only cpu-clock is used"), "{warn}");
    assert_eq!(samples_of(Some("cpu-clock")).0, per_event[0]);
    assert_eq!(samples_of(Some("page-faults")).0, per_event[1]);
    let o = profkit()
        .arg("convert")
        .arg(&data)
        .args(["--event", "cycles", "-o"])
        .arg(data.with_extension("x.folded"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("has no event \"cycles\" (its events: cpu-clock, page-faults)"));
}

/// A recording without the kernel's build id is named with this machine's /proc/kallsyms only
/// when it proves it is this kernel (release, hostname, `_text`): one made under another
/// hostname (`unshare -u`) keeps `[kernel]` and says why; `--kallsyms` overrides.
#[test]
fn foreign_kernel_is_not_named_from_local_kallsyms() {
    let test = "perf::foreign_kernel_is_not_named_from_local_kallsyms";
    let (Some(perf), Some(cc), Some(unshare)) = (
        profkit_testkit::perf(test),
        profkit_testkit::tool(test, "cc", "a C compiler (gcc)"),
        profkit_testkit::tool(test, "unshare", "util-linux"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("sys.c");
    std::fs::write(
        &src,
        "#include <unistd.h>\nint main(void){for(int i=0;i<400000;i++){int fd=dup(1);close(fd);}return 0;}\n",
    )
    .unwrap();
    let bin = dir.path().join("sys");
    assert!(Command::new(&cc)
        .arg("-O1")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap()
        .success());
    let record = |name: &str, host: Option<&str>| {
        let data = dir.path().join(name);
        let perf_cmd = format!(
            "{} record -q --no-buildid -k 1 -o {} {}",
            perf.display(),
            data.display(),
            bin.display()
        );
        let status = match host {
            Some(h) => Command::new(&unshare)
                .args(["-u", "sh", "-c", &format!("hostname {h} && {perf_cmd}")])
                .stdout(std::process::Stdio::null())
                .status(),
            None => Command::new("sh")
                .args(["-c", &perf_cmd])
                .stdout(std::process::Stdio::null())
                .status(),
        };
        assert!(status.unwrap().success(), "{perf_cmd}");
        data
    };
    let convert = |data: &Path, extra: &[&str]| {
        let out = data.with_extension("folded");
        let o = profkit()
            .arg("convert")
            .arg(data)
            .arg("-o")
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (
            std::fs::read_to_string(out).unwrap(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let kernel_named = |folded: &str| folded.lines().any(|l| l.contains("do_syscall_64"));
    let (local, _) = convert(&record("local.data", None), &[]);
    assert!(kernel_named(&local), "{local}");
    let foreign = record("foreign.data", Some("profkit-elsewhere"));
    let (folded, stderr) = convert(&foreign, &[]);
    assert!(!kernel_named(&folded), "{folded}");
    assert!(folded.contains("[kernel]"), "{folded}");
    assert!(
        stderr.contains("profkit-elsewhere") && stderr.contains("--kallsyms"),
        "{stderr}"
    );
    let (folded, _) = convert(&foreign, &["--kallsyms", "/proc/kallsyms"]);
    assert!(kernel_named(&folded), "{folded}");
}

/// `diff A B` names the input it could not read (B10).
#[test]
fn diff_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = fixture_dir("perf").join("node-fp.data");
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(dir.path().join("short.data"), &bytes[..100]).unwrap();
    for args in [
        ["diff", "short.data", good.to_str().unwrap()],
        ["diff", good.to_str().unwrap(), "short.data"],
    ] {
        let o = profkit()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("error: short.data: "), "{err}");
    }
}

/// `ulimit -v 2000000` (2 GB of address space) does not trip on a small recording: mimalloc's
/// arenas and glibc's per-thread arenas are bounded before anything allocates (B5: VmPeak was
/// 1.9-2.3 GB, and the binary could not be read: "Cannot allocate memory").
#[test]
fn two_gb_of_address_space_is_enough() {
    let (dir, data) = recording("node-fp", Some(("node-fp.jit-30519.dump.gz", 30519)));
    let bin = assert_cmd::cargo::cargo_bin("profkit");
    for out in ["out.folded", "out.parquet", "out.json", "out.perfetto"] {
        let o = Command::new("sh")
            .current_dir(dir.path())
            .args(["-c", "ulimit -v 2000000 && exec \"$0\" \"$@\""])
            .arg(&bin)
            .args(["convert", data.to_str().unwrap(), "-o", out])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{out}: {err}");
        assert!(
            !err.contains("Cannot allocate memory") && !err.contains("panicked"),
            "{out}: {err}"
        );
    }
}
