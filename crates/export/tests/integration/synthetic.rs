//! A synthetic trace fed straight into a sink (nested and recursive calls on three threads of
//! two processes, instants with text and binary payloads, counters, samples, code loads and
//! moves), the expectations derived from it, golden files, and the lookup of the external
//! tools (Python venv, npm packages, Chromium) the format checks use.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use profkit_model::events::{
    Arg, ArgValue, CodeEvent, CodeRegion, Counter, Enter, EventSink, Instant, ProcessInfo, Sample,
    ThreadInfo, TraceInfo,
};
use profkit_model::func::{FuncId, FuncInfo, FunctionTable};
use profkit_model::span::Span;
use profkit_model::Clock;

/// A call and its callees.
pub struct Call {
    pub func: u32,
    pub start: u64,
    pub end: u64,
    pub children: Vec<Call>,
}

fn c(func: u32, start: u64, end: u64, children: Vec<Call>) -> Call {
    Call {
        func,
        start,
        end,
        children,
    }
}

/// The functions: 7 has no name (shown as `#7`), 6 has characters every format must escape.
pub fn functions() -> FunctionTable {
    let mut t = FunctionTable::new();
    let named = [
        (1, "main", Some("main.c"), 10),
        (2, "parse", Some("parse.c"), 20),
        (3, "lex", None, 0),
        (4, "eval", Some("eval.c"), 30),
        (5, "fib", None, 0),
        (6, "we\"ird;na\\me\né", None, 0),
    ];
    for (id, name, file, line) in named {
        t.insert(
            FuncId(id),
            FuncInfo {
                name: Some(name.to_string()),
                file: file.map(str::to_string),
                line,
                column: if line != 0 { 1 } else { 0 },
                ..FuncInfo::default()
            },
        );
    }
    t
}

/// The name a function is shown with.
pub fn name(func: u32) -> String {
    functions().name(FuncId(func))
}

/// Threads: (index, pid, tid, name). Thread 2's tid does not fit 32 bits (a Mono `pthread_t`).
pub const THREADS: [(u32, u32, u64, &str); 3] = [
    (0, 100, 100, "main"),
    (1, 100, 101, "io"),
    (2, 200, 0x7f00_1234_5678, "mono thread"),
];

/// Processes: (pid, name).
pub const PROCESSES: [(u32, &str); 2] = [(100, "demo-app"), (200, "worker-proc")];

/// The call trees of each thread.
pub fn calls() -> Vec<(u32, Vec<Call>)> {
    vec![
        (
            0,
            vec![c(
                1,
                0,
                10_000,
                vec![
                    c(
                        2,
                        100,
                        4_100,
                        vec![c(3, 200, 1_200, vec![]), c(3, 1_300, 2_300, vec![])],
                    ),
                    c(
                        4,
                        5_000,
                        9_000,
                        vec![c(
                            5,
                            5_000,
                            8_000,
                            vec![c(5, 5_100, 7_000, vec![c(5, 5_200, 6_000, vec![])])],
                        )],
                    ),
                    c(6, 9_500, 9_999, vec![]),
                ],
            )],
        ),
        (
            1,
            vec![
                c(7, 50, 150, vec![]),
                c(1, 1_000, 3_001, vec![c(2, 1_001, 1_500, vec![])]),
            ],
        ),
        (2, vec![c(4, 0, 123_456_789, vec![c(3, 1, 2, vec![])])]),
    ]
}

/// Number of calls in the trace.
pub fn call_count() -> usize {
    fn count(c: &Call) -> usize {
        1 + c.children.iter().map(count).sum::<usize>()
    }
    calls()
        .iter()
        .flat_map(|(_, cs)| cs.iter())
        .map(count)
        .sum()
}

/// The samples: (thread, time, stack, weight).
pub fn samples() -> Vec<(u32, u64, Vec<u32>, u64)> {
    vec![
        (2, 100, vec![4, 3], 1),
        (2, 200, vec![4], 2),
        (2, 300, vec![4, 3], 1),
    ]
}

/// Expected folded stacks of the calls (exclusive ns, inclusive ns, counts) and of the
/// samples, computed from the call trees independently of the writer.
pub fn expected_folded() -> [BTreeMap<String, u64>; 3] {
    let mut out = [BTreeMap::new(), BTreeMap::new(), BTreeMap::new()];
    fn walk(c: &Call, prefix: &str, out: &mut [BTreeMap<String, u64>; 3]) {
        let n = name(c.func).replace(';', ":").replace('\n', "\\n");
        let path = if prefix.is_empty() {
            n
        } else {
            format!("{prefix};{n}")
        };
        let dur = c.end - c.start;
        let kids: u64 = c.children.iter().map(|k| k.end - k.start).sum();
        *out[0].entry(path.clone()).or_default() += dur - kids;
        *out[1].entry(path.clone()).or_default() += dur;
        *out[2].entry(path.clone()).or_default() += 1;
        for k in &c.children {
            walk(k, &path, out);
        }
    }
    for (_, cs) in calls() {
        for c in &cs {
            walk(c, "", &mut out);
        }
    }
    for (_, _, stack, w) in samples() {
        let path: Vec<String> = stack.iter().map(|&f| name(f)).collect();
        // Time adds the sample's weight; counts add one sample.
        for (i, m) in out.iter_mut().enumerate() {
            *m.entry(path.join(";")).or_default() += if i == 2 { 1 } else { w };
        }
    }
    for m in out.iter_mut() {
        m.retain(|_, v| *v > 0);
    }
    out
}

enum Ev {
    Enter(u32, u32),
    Exit(Span),
    Instant(usize),
    Sample(usize),
    Code(usize),
}

fn flatten(thread: u32, c: &Call, depth: u32, out: &mut Vec<(u64, Ev)>) {
    out.push((c.start, Ev::Enter(c.func, depth)));
    for k in &c.children {
        flatten(thread, k, depth + 1, out);
    }
    let kids: u64 = c.children.iter().map(|k| k.end - k.start).sum();
    out.push((
        c.end,
        Ev::Exit(Span {
            func: FuncId(c.func),
            thread,
            start: c.start,
            end: c.end,
            depth,
            self_time: c.end - c.start - kids,
        }),
    ));
}

const PAYLOAD_BIN: [u8; 3] = [0, 0xff, 1];

fn instants() -> Vec<Instant<'static>> {
    const A: &[Arg<'static>] = &[
        ("payload", ArgValue::Bytes(b"hello \"xray\"")),
        ("n", ArgValue::U64(5)),
    ];
    const B: &[Arg<'static>] = &[
        ("type", ArgValue::U64(3)),
        ("payload", ArgValue::Bytes(&PAYLOAD_BIN)),
        ("neg", ArgValue::I64(-4)),
        ("f", ArgValue::F64(1.5)),
        ("s", ArgValue::Str("a\"b")),
    ];
    vec![
        Instant {
            thread: 0,
            time: 300,
            name: "custom event",
            category: "xray.custom",
            args: A,
        },
        Instant {
            thread: 1,
            time: 400,
            name: "typed event",
            category: "xray.typed",
            args: B,
        },
    ]
}

fn codes() -> Vec<CodeRegion<'static>> {
    vec![
        CodeRegion {
            thread: Some(0),
            pid: 100,
            time: 50,
            address: 0x1000,
            size: 0x40,
            name: "JIT fn A",
            event: CodeEvent::Load,
            code_index: Some(1),
            tier: None,
        },
        CodeRegion {
            thread: None,
            pid: 200,
            time: 60,
            address: 0x2000,
            size: 0x40,
            name: "JIT fn A",
            event: CodeEvent::Move {
                old_address: 0x1000,
            },
            code_index: None,
            tier: None,
        },
    ]
}

/// Counters: (pid, name, time, value).
pub const COUNTERS: [(u32, &str, u64, f64); 4] = [
    (100, "heap", 0, 1.0),
    (100, "heap", 5_000, 2.5),
    (100, "heap", 9_000, 0.0),
    (200, "jit_bytes", 10, 4096.0),
];

/// Feeds the synthetic trace to `sink`, in the order the [`EventSink`] contract promises.
pub fn feed(sink: &mut dyn EventSink) -> io::Result<()> {
    let table = functions();
    sink.begin(&TraceInfo {
        format: "synthetic",
        functions: &table,
        clock: Clock::default(),
        origin_ns: 1_000_000,
        name: "synthetic trace",
        samples: None,
        origin_unix_ns: None,
    })?;
    for (pid, name) in PROCESSES {
        sink.process(&ProcessInfo { pid, name })?;
    }
    for (index, pid, tid, name) in THREADS {
        sink.thread(&ThreadInfo {
            index,
            pid,
            tid,
            name,
        })?;
    }
    let instants = instants();
    let codes = codes();
    let samples = samples();
    for (thread, trees) in calls() {
        let mut evs = Vec::new();
        for t in &trees {
            flatten(thread, t, 0, &mut evs);
        }
        evs.extend(
            instants
                .iter()
                .enumerate()
                .filter(|(_, i)| i.thread == thread)
                .map(|(n, i)| (i.time, Ev::Instant(n))),
        );
        evs.extend(
            samples
                .iter()
                .enumerate()
                .filter(|(_, s)| s.0 == thread)
                .map(|(n, s)| (s.1, Ev::Sample(n))),
        );
        evs.extend(
            codes
                .iter()
                .enumerate()
                .filter(|(_, c)| c.thread == Some(thread))
                .map(|(n, c)| (c.time, Ev::Code(n))),
        );
        // Stable: calls keep their enter/exit order at equal times.
        evs.sort_by_key(|e| e.0);
        for (time, e) in evs {
            match e {
                Ev::Enter(func, depth) => {
                    sink.enter(&Enter::new(thread, FuncId(func), time, depth))?
                }
                Ev::Exit(span) => sink.exit(&span)?,
                Ev::Instant(n) => sink.instant(&instants[n])?,
                Ev::Sample(n) => {
                    let (t, time, stack, weight) = &samples[n];
                    let stack: Vec<FuncId> = stack.iter().map(|&f| FuncId(f)).collect();
                    sink.sample(&Sample {
                        thread: *t,
                        time: *time,
                        stack: &stack,
                        lines: &[],
                        weight: *weight,
                        shared: 0,
                    })?
                }
                Ev::Code(n) => sink.code(&codes[n])?,
            }
        }
    }
    for code in codes.iter().filter(|c| c.thread.is_none()) {
        sink.code(code)?;
    }
    for (pid, name, time, value) in COUNTERS {
        sink.counter(&Counter {
            pid,
            name,
            time,
            value,
        })?;
    }
    sink.finish()
}

/// Feeds the synthetic trace to a fresh sink and returns it.
pub fn run<S: EventSink>(mut sink: S) -> S {
    feed(&mut sink).unwrap();
    sink
}

// ---------------------------------------------------------------------------------------------
// Golden files and scratch space.

/// Compares `actual` with `tests/golden/<name>`; `PROFKIT_BLESS=1` rewrites the file instead.
pub fn golden(name: &str, actual: &[u8]) {
    profkit_testkit::golden(format!("crates/export/tests/golden/{name}"), actual);
}

/// A path for a scratch file of this test binary.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("profkit-export");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

// ---------------------------------------------------------------------------------------------
// External tools: installed by scripts/ci/install-export-deps.sh.

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub use profkit_testkit::deps_dir;

/// `Some(path)` when it exists (and `usable` says so); otherwise a failure under
/// `PROFKIT_REQUIRE_EXTERNAL=1` (CI), else `None` after a "skipped" note on stderr.
pub fn external_if(
    test: &str,
    what: &str,
    path: PathBuf,
    usable: impl FnOnce(&Path) -> bool,
) -> Option<PathBuf> {
    profkit_testkit::external(
        test,
        &format!("{what} (scripts/ci/install-export-deps.sh installs it)"),
        path,
        usable,
    )
}

/// [`external_if`] for a tool that is there when its path exists.
pub fn external(test: &str, what: &str, path: PathBuf) -> Option<PathBuf> {
    external_if(test, what, path, |_| true)
}

/// The venv's Python, with `perfetto`, `protobuf` and `jsonschema`.
pub fn python(test: &str) -> Option<PathBuf> {
    external_if(
        test,
        "the Python packages perfetto, protobuf and jsonschema",
        deps_dir().join("venv/bin/python"),
        |python| {
            Command::new(python)
                .args([
                    "-c",
                    "import jsonschema\nfrom perfetto.protos.perfetto.trace import perfetto_trace_pb2",
                ])
                .output()
                .is_ok_and(|o| o.status.success())
        },
    )
}

/// The npm `node_modules` with `speedscope` and `puppeteer-core`.
pub fn node_modules(test: &str) -> Option<PathBuf> {
    external(
        test,
        "npm packages speedscope and puppeteer-core",
        deps_dir().join("npm/node_modules/puppeteer-core"),
    )
    .map(|p| p.parent().unwrap().to_path_buf())
}

/// Chromium (`PROFKIT_CHROMIUM`, default `/usr/bin/chromium`).
pub fn chromium(test: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PROFKIT_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    external(test, "Chromium (Debian package chromium)", path)
}

/// Runs `cmd`; its stdout, or a panic with its output when it fails.
pub fn check_output(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        panic!(
            "{cmd:?} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    stdout
}

/// A script of scripts/export/.
pub fn script(name: &str) -> PathBuf {
    workspace().join("scripts/export").join(name)
}

/// Every call as (thread, name, start, end), sorted.
pub fn expected_spans() -> Vec<(u32, String, u64, u64)> {
    fn walk(t: u32, c: &Call, out: &mut Vec<(u32, String, u64, u64)>) {
        out.push((t, name(c.func), c.start, c.end));
        for k in &c.children {
            walk(t, k, out);
        }
    }
    let mut out = Vec::new();
    for (t, cs) in calls() {
        for c in &cs {
            walk(t, c, &mut out);
        }
    }
    out.sort();
    out
}

/// Loads `file` into the speedscope app in headless Chromium (scripts/export/
/// speedscope_render.mjs) and asserts it rendered with no problem; `false` when the tools are
/// missing (and allowed to be).
pub fn speedscope_renders(test: &str, file: &Path) -> bool {
    let (Some(modules), Some(chromium)) = (node_modules(test), chromium(test)) else {
        return false;
    };
    let shot = file.with_extension("png");
    let summary = check_output(
        Command::new("node")
            .arg(script("speedscope_render.mjs"))
            .arg(modules)
            .arg(chromium)
            .arg(file)
            .arg(&shot),
    );
    let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(
        v["problems"],
        serde_json::json!([]),
        "{}: {summary}",
        file.display()
    );
    true
}
