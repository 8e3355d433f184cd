//! Benchmarks of profkit-export's writers (not tests: they measure; `cargo bench -p
//! profkit-export --bench writers -- [writers|parquet|xray]`, all three by default).
//!
//! * `writers`: ns per call of the streaming writers (Chrome JSON, Perfetto, folded) on a
//!   synthetic stream of 5 M calls on 2 threads, written into `io::sink()`.
//! * `parquet`: 8 M calls on 4 threads into the Parquet tables; prints rows/s and the peak RSS,
//!   which must stay that of a few row groups, not of the trace.
//! * `xray`: a real XRay trace (`PROFKIT_BENCH_XRAY`, its binary `PROFKIT_BENCH_BIN`) through the
//!   model's feed alone, then into the Chrome JSON, Perfetto and folded writers (files in a
//!   temporary directory); prints times and rates. Skipped without the variables.
//!
//! The reference-tool comparisons (llvm-xray's `convert -f trace_event`) are in
//! scripts/bench/export.sh; results go to docs/BENCHMARKS.md.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io;
use std::time::Instant as Clock;

use profkit_export::chrome::ChromeWriter;
use profkit_export::folded::FoldedWriter;
use profkit_export::parquet::ParquetSink;
use profkit_export::perfetto::PerfettoWriter;
use profkit_export::{Format, Options, Output};
use profkit_model::events::{Enter, EventSink, ThreadInfo, TraceInfo};
use profkit_model::feed;
use profkit_model::{Clock as TraceClock, FuncId, FuncInfo, FunctionTable, Span};

fn functions(n: u32) -> FunctionTable {
    let mut t = FunctionTable::new();
    for i in 0..n {
        t.insert(
            FuncId(i),
            FuncInfo {
                name: Some(format!("namespace::function_{i}")),
                ..FuncInfo::default()
            },
        );
    }
    t
}

fn begin(sink: &mut dyn EventSink, table: &FunctionTable, threads: u32) {
    sink.begin(&TraceInfo {
        format: "bench",
        functions: table,
        clock: TraceClock::default(),
        origin_ns: 0,
        name: "bench",
        samples: None,
        origin_unix_ns: None,
    })
    .unwrap();
    for th in 0..threads {
        sink.thread(&ThreadInfo {
            index: th,
            pid: 1,
            tid: u64::from(th) + 100,
            name: "worker",
        })
        .unwrap();
    }
}

/// 5 M calls (an outer call with one callee), 2 threads interleaved; ns per call.
fn drive(sink: &mut dyn EventSink) -> f64 {
    const N: u64 = 5_000_000;
    let table = functions(8);
    begin(sink, &table, 2);
    let t = Clock::now();
    let mut time = 1_000_000_000u64;
    for i in 0..N / 2 {
        let thread = (i & 1) as u32;
        let (outer, inner) = (FuncId(1 + (i % 3) as u32), FuncId(4));
        sink.enter(&Enter::new(thread, outer, time, 0)).unwrap();
        sink.enter(&Enter {
            args: &[7],
            ..Enter::new(thread, inner, time + 10, 1)
        })
        .unwrap();
        let s = Span {
            func: inner,
            thread,
            start: time + 10,
            end: time + 47,
            depth: 1,
            self_time: 37,
        };
        sink.exit(&s).unwrap();
        sink.exit(&Span {
            func: outer,
            start: time,
            end: time + 123,
            depth: 0,
            self_time: 86,
            ..s
        })
        .unwrap();
        time += 1_234;
    }
    sink.finish().unwrap();
    t.elapsed().as_secs_f64() * 1e9 / N as f64
}

fn writers() {
    let mut chrome = ChromeWriter::new(io::sink());
    println!("chrome: {:.1} ns/call", drive(&mut chrome));
    let mut perfetto = PerfettoWriter::new(io::sink());
    println!("perfetto: {:.1} ns/call", drive(&mut perfetto));
    let mut folded = FoldedWriter::new(io::sink(), &Options::default());
    println!("folded: {:.1} ns/call", drive(&mut folded));
}

fn vm_hwm_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn parquet() {
    const N: u64 = 2_000_000;
    let dir = tempfile::tempdir().unwrap();
    let t = functions(1000);
    let before = vm_hwm_kib();
    let started = Clock::now();
    let mut s = ParquetSink::create(&dir.path().join("large.parquet")).unwrap();
    begin(&mut s, &t, 4);
    for th in 0..4u32 {
        for i in 0..N {
            let (start, f) = (i * 10, FuncId((i % 1000) as u32));
            s.enter(&Enter::new(th, f, start, 0)).unwrap();
            s.exit(&Span {
                func: f,
                thread: th,
                start,
                end: start + 7,
                depth: 0,
                self_time: 7,
            })
            .unwrap();
        }
    }
    s.finish().unwrap();
    let secs = started.elapsed().as_secs_f64();
    let peak = vm_hwm_kib();
    let size = std::fs::metadata(dir.path().join("large.parquet"))
        .unwrap()
        .len();
    println!(
        "parquet: {} rows in {secs:.2} s ({:.1} M rows/s), peak RSS {} MiB (was {} MiB), file {} MiB",
        4 * N,
        4.0 * N as f64 / secs / 1e6,
        peak / 1024,
        before / 1024,
        size >> 20
    );
    assert!(peak - before < 1024 * 1024, "peak grew by more than 1 GiB");
}

struct Null;

impl EventSink for Null {
    fn begin(&mut self, _: &TraceInfo<'_>) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn xray() {
    let (Some(trace), Some(bin)) = (
        std::env::var_os("PROFKIT_BENCH_XRAY"),
        std::env::var_os("PROFKIT_BENCH_BIN"),
    ) else {
        println!("xray: skipped (set PROFKIT_BENCH_XRAY and PROFKIT_BENCH_BIN)");
        return;
    };
    let data = std::fs::read(&trace).unwrap();
    let bin = std::fs::read(bin).unwrap();
    let map = profkit_xray::InstrMap::from_object(&bin).unwrap();
    let names = feed::xray::function_table(&map, None);
    let parsed = profkit_xray::Trace::parse(&data).unwrap();
    let time = |label: &str, sink: &mut dyn EventSink, out: Option<&std::path::Path>| {
        let t = Clock::now();
        let s = feed::xray::feed(&parsed, &names, "bench", &Default::default(), sink).unwrap();
        let secs = t.elapsed().as_secs_f64();
        let size = out.map_or(0, |p| std::fs::metadata(p).unwrap().len());
        println!(
            "xray {label}: {secs:.2} s, {} spans, {:.0} MB/s of input, output {} MB",
            s.calls.spans,
            data.len() as f64 / secs / 1e6,
            size / 1_000_000
        );
    };
    time("feed only", &mut Null, None);
    let dir = tempfile::tempdir().unwrap();
    for (label, format, file) in [
        ("chrome", Format::Chrome, "bench.json"),
        ("perfetto", Format::Perfetto, "bench.pftrace"),
        ("folded", Format::Folded, "bench.folded"),
    ] {
        let path = dir.path().join(file);
        let mut sink =
            profkit_export::open(format, &Output::path(path.clone()), &Options::default()).unwrap();
        time(label, &mut *sink, Some(&path));
    }
}

fn main() {
    let picked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |name: &str| picked.is_empty() || picked.iter().any(|p| p == name);
    if run("writers") {
        writers();
    }
    if run("parquet") {
        parquet();
    }
    if run("xray") {
        xray();
    }
}
