//! jitdump read benchmark: profkit-jitdump against linux-perf-data's `JitDumpReader`, in the
//! same process, on the same bytes, with runs alternating between the contenders.
//!
//! * A V8-like dump of ~200 MB (`PROFKIT_BENCH_MB`) is generated with `JitDumpWriter` into
//!   `<target>/bench-data/` (or `$PROFKIT_BENCH_DIR`) unless it is already there, then mmapped.
//! * full parse: every record parsed, names, code and unwinding data measured, every
//!   DEBUG_INFO entry decoded (file name included), by both readers; their counts must match.
//! * header-only scan (profkit `Records::next_header`) against simply reading every byte of
//!   the mmap (a sum of `u64` words).
//! * the full-parse comparison again on `tests/fixtures/jitdump/node-perf-prof.dump.gz`
//!   (decompressed into memory first).
//!
//! `cargo bench -p profkit-jitdump --bench read` runs it (see docs/BENCHMARKS.md); without
//! `--bench` (e.g. `cargo test --benches`) it runs a quick smoke version on a 4 MB file.
//! `PROFKIT_BENCH_ROUNDS` sets the number of alternating rounds (default 20);
//! `PROFKIT_BENCH_ONLY=profkit|lpd|lpd1m|scan|read` times only that contender on the generated dump,
//! for as many rounds, without the comparison (for `perf record`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::fs::{self, File};
use std::hint::black_box;
use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use linux_perf_data::jitdump::{JitDumpReader, JitDumpRecord};
use profkit_jitdump::read::DebugEntry;
use profkit_jitdump::write::Unwinding;
use profkit_jitdump::{CodeLoadData, Endian, HeaderOptions, JitDump, JitDumpWriter, Record};

/// Bumped whenever the generator changes, so an old file is not reused.
const GENERATOR_VERSION: u32 = 2;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let mb: u64 = env_num("PROFKIT_BENCH_MB", if full { 200 } else { 4 });
    let rounds: usize = env_num("PROFKIT_BENCH_ROUNDS", if full { 20 } else { 2 }) as usize;

    let dir = bench_dir();
    let path = dir.join(format!("jitdump-v8like-{mb}MB-g{GENERATOR_VERSION}.dump"));
    if !path.exists() {
        let t = Instant::now();
        generate(&path, mb << 20);
        eprintln!(
            "generated {} in {:.1} s",
            path.display(),
            t.elapsed().as_secs_f64()
        );
    }
    let file = File::open(&path).expect("open bench file");
    // SAFETY: the file is ours and nobody writes it while it is mapped.
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("mmap bench file");
    let data: &[u8] = &map;

    if let Ok(only) = std::env::var("PROFKIT_BENCH_ONLY") {
        profile_one(&only, data, rounds);
        return;
    }

    println!(
        "profkit-jitdump read benchmark: {rounds} alternating rounds, best and median per contender"
    );
    println!();
    let gen = bench_file(
        &format!("generated V8-like dump ({})", file_name(&path)),
        data,
        rounds,
        true,
    );

    let node = read_node_fixture();
    println!();
    let node_rows = bench_file(
        "node fixture (node-perf-prof.dump.gz, decompressed)",
        &node,
        rounds,
        false,
    );

    println!();
    println!("targets (best-of-{rounds} ratio, median ratio in brackets):");
    let full = gen.speedup_vs_lpd();
    let node = node_rows.speedup_vs_lpd();
    let scan = gen.scan_vs_read();
    println!(
        "  full parse, generated dump: profkit at {:.2}x linux-perf-data's throughput [{:.2}x] (target >= 2x): {}",
        full.0,
        full.1,
        verdict(full.0 >= 2.0)
    );
    println!(
        "  full parse, node fixture:   profkit at {:.2}x linux-perf-data's throughput [{:.2}x] (target >= 2x): {}",
        node.0,
        node.1,
        verdict(node.0 >= 2.0)
    );
    println!(
        "  header-only scan at {:.1}% of the speed of reading every byte [{:.1}%] (target >= 50%): {}",
        scan.0 * 100.0,
        scan.1 * 100.0,
        verdict(scan.0 >= 0.5)
    );
    println!("  (linux-perf-data: the faster of its two buffer sizes)");
}

/// Runs one contender `rounds` times (for profiling) and prints its best time.
fn profile_one(only: &str, data: &[u8], rounds: usize) {
    let mut best = Duration::MAX;
    for _ in 0..rounds {
        let t = Instant::now();
        match only {
            "profkit" => {
                black_box(profkit_full(data));
            }
            "lpd" => {
                black_box(lpd_full(data, None));
            }
            "lpd1m" => {
                black_box(lpd_full(data, Some(LPD_BIG_BUFFER)));
            }
            "scan" => {
                black_box(profkit_scan(data));
            }
            "read" => {
                black_box(read_every_byte(data));
            }
            other => {
                panic!("PROFKIT_BENCH_ONLY={other}: expected profkit, lpd, lpd1m, scan or read")
            }
        }
        best = best.min(t.elapsed());
    }
    println!(
        "{only}: best of {rounds}: {:.2} ms",
        best.as_secs_f64() * 1e3
    );
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT MET"
    }
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `$PROFKIT_BENCH_DIR`, else `<target dir>/bench-data` (the bench binary lives in
/// `<target>/<profile>/deps/`).
fn bench_dir() -> PathBuf {
    let dir = match std::env::var_os("PROFKIT_BENCH_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            let exe = std::env::current_exe().expect("current_exe");
            exe.ancestors()
                .nth(3)
                .map(|t| t.join("bench-data"))
                .unwrap_or_else(|| std::env::temp_dir().join("profkit-bench-data"))
        }
    };
    fs::create_dir_all(&dir).expect("create bench data dir");
    dir
}

fn read_node_fixture() -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/jitdump/node-perf-prof.dump.gz");
    let gz = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut out)
        .expect("gunzip node fixture");
    out
}

// ---------------------------------------------------------------------------------------------
// Generator

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    fn pct(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
}

/// A dump shaped like a long `node --perf-prof` run: per function DEBUG_INFO (60% of them,
/// 5–60 entries, file names 16–60 bytes) → UNWINDING_INFO (every function; 85% V8's 20-byte
/// `.eh_frame_hdr` only, the rest with an `.eh_frame` of 40–200 bytes) → CODE_LOAD (names of
/// 20–80 bytes, code of 100–2000 bytes, many record sizes not a multiple of 8, so most
/// records are unaligned as in V8's files); a CODE_CLOSE at the end.
fn generate(path: &Path, target_bytes: u64) {
    let mut rng = Rng(0x5EED_F00D_9E7D_0D0F);
    let mut pool = vec![0u8; 8192];
    for b in pool.iter_mut() {
        *b = rng.next() as u8;
    }
    let files: Vec<String> = (0..64)
        .map(|i| {
            let stems = [
                "node:internal/modules/cjs/loader",
                "node:internal/util",
                "/srv/app/node_modules/lodash/lodash.js",
                "/srv/app/dist/server/routes/api/v2/handlers",
                "/srv/app/node_modules/@babel/runtime/helpers",
                "webpack://app/src/components/Table",
            ];
            let stem = stems[i % stems.len()];
            let mut s = format!("{stem}_{i}.js");
            // 16–60 bytes.
            s.truncate(16 + (rng.next() % 45) as usize);
            s
        })
        .collect();
    let prefixes = [
        "JS:*",
        "JS:~",
        "JS:^",
        "Builtin:",
        "BytecodeHandler:",
        "RegExp:",
    ];
    const IDENT: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$";

    let header = HeaderOptions {
        endian: Endian::Little,
        version: 1,
        elf_mach: 62,
        pad1: 0,
        pid: 4242,
        timestamp: 1_000_000_000,
        flags: 0,
        extra: Vec::new(),
    };
    let mut w = JitDumpWriter::new(
        Vec::with_capacity(target_bytes as usize + (1 << 20)),
        &header,
    )
    .expect("header");
    let mut ts = 1_000_000_000u64;
    let mut addr = 0x7f00_0000_0000u64;
    let mut index = 0u64;
    let mut name = String::new();
    let mut entries: Vec<DebugEntry<'_>> = Vec::new();
    let eh_frame_hdr = [
        1u8, 0x1b, 0x03, 0x3b, 0xec, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    while (w.get_ref().len() as u64) < target_bytes {
        ts += rng.range(200, 20_000);
        let code_size = rng.range(100, 2000) as usize;
        let code_off = rng.range(0, (pool.len() - code_size) as u64) as usize;
        let code = &pool[code_off..code_off + code_size];

        name.clear();
        name.push_str(prefixes[(rng.next() % prefixes.len() as u64) as usize]);
        let len = rng.range(20, 80) as usize;
        while name.len() < len {
            name.push(IDENT[(rng.next() % IDENT.len() as u64) as usize] as char);
        }

        entries.clear();
        if rng.pct(60) {
            let n = rng.range(5, 60);
            let file = files[(rng.next() % files.len() as u64) as usize].as_bytes();
            let mut off = 0x40u64;
            let mut line = rng.range(1, 5000) as u32;
            for _ in 0..n {
                entries.push(DebugEntry {
                    addr: addr + off,
                    line,
                    discrim: rng.range(1, 120) as u32,
                    file,
                });
                off += rng.range(1, 24);
                line += rng.range(0, 3) as u32;
            }
        }
        let eh_len = if rng.pct(85) {
            0
        } else {
            rng.range(40, 200) as usize
        };
        let unwinding = Unwinding {
            eh_frame: &pool[..eh_len],
            eh_frame_hdr: &eh_frame_hdr,
            mapped_size: if eh_len == 0 {
                0
            } else {
                (eh_len + eh_frame_hdr.len()) as u64
            },
        };
        let load = CodeLoadData {
            timestamp: ts,
            pid: 4242,
            tid: 4242,
            vma: addr,
            code_addr: addr,
            code_size: code_size as u64,
            code: Some(code),
            code_index: index,
            name: name.as_bytes(),
            debug_info: (!entries.is_empty()).then_some(&entries[..]),
            debug_info2: None,
            tier: None,
            unwinding: Some(unwinding),
        };
        w.write_code_load(&load).expect("write load");
        index += 1;
        addr += (code_size as u64 + 0x40 + 31) & !31;
    }
    w.write_code_close_record(ts + 1).expect("close");
    let bytes = w.into_inner();
    let tmp = path.with_extension("tmp");
    File::create(&tmp)
        .and_then(|mut f| f.write_all(&bytes))
        .expect("write bench file");
    fs::rename(&tmp, path).expect("rename bench file");
}

// ---------------------------------------------------------------------------------------------
// The contenders

/// What a full parse saw; both readers must agree on every field.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    records: u64,
    loads: u64,
    name_bytes: u64,
    code_bytes: u64,
    addr_sum: u64,
    debug_records: u64,
    debug_entries: u64,
    debug_file_bytes: u64,
    debug_line_sum: u64,
    unwinding: u64,
    eh_frame_bytes: u64,
    other: u64,
    parse_errors: u64,
}

/// profkit: every record parsed; names, code and `.eh_frame` measured; every DEBUG_INFO entry
/// decoded including its file name.
fn profkit_full(data: &[u8]) -> Counts {
    let dump = JitDump::parse(data).expect("profkit header");
    let mut c = Counts::default();
    for raw in dump.records() {
        let raw = raw.expect("profkit record");
        c.records += 1;
        match raw.parse() {
            Ok(Record::CodeLoad(l)) => {
                c.loads += 1;
                c.name_bytes += l.name.len() as u64;
                c.code_bytes += l.code.map_or(0, |b| b.len()) as u64;
                c.addr_sum = c.addr_sum.wrapping_add(l.code_addr);
            }
            Ok(Record::DebugInfo(d)) => {
                c.debug_records += 1;
                for e in d.entries() {
                    c.debug_entries += 1;
                    c.debug_file_bytes += e.file.len() as u64;
                    c.debug_line_sum += u64::from(e.line);
                }
            }
            Ok(Record::UnwindingInfo(u)) => {
                c.unwinding += 1;
                c.eh_frame_bytes += u.eh_frame().len() as u64;
            }
            Ok(_) => c.other += 1,
            Err(_) => c.parse_errors += 1,
        }
    }
    c
}

/// linux-perf-data: `JitDumpReader` over a `Cursor` of the same bytes, with its default 4 KiB
/// buffer (`JitDumpReader::new`) or the given one; `next_record` + `parse`, touching the same
/// fields.
fn lpd_full(data: &[u8], buffer: Option<usize>) -> Counts {
    let mut reader = match buffer {
        None => JitDumpReader::new(Cursor::new(data)),
        Some(n) => JitDumpReader::new_with_buffer_size(Cursor::new(data), n),
    }
    .expect("linux-perf-data header");
    let mut c = Counts::default();
    while let Some(raw) = reader.next_record().expect("linux-perf-data record") {
        c.records += 1;
        match raw.parse() {
            Ok(JitDumpRecord::CodeLoad(l)) => {
                c.loads += 1;
                c.name_bytes += l.function_name.len() as u64;
                c.code_bytes += l.code_bytes.len() as u64;
                c.addr_sum = c.addr_sum.wrapping_add(l.code_addr);
            }
            Ok(JitDumpRecord::CodeDebugInfo(d)) => {
                c.debug_records += 1;
                for e in &d.entries {
                    c.debug_entries += 1;
                    c.debug_file_bytes += e.file_path.len() as u64;
                    c.debug_line_sum += u64::from(e.line);
                }
            }
            Ok(JitDumpRecord::CodeUnwindingInfo(u)) => {
                c.unwinding += 1;
                c.eh_frame_bytes += u.eh_frame.len() as u64;
            }
            Ok(_) => c.other += 1,
            Err(_) => c.parse_errors += 1,
        }
    }
    c
}

/// profkit header-only scan: record headers only, bodies skipped.
fn profkit_scan(data: &[u8]) -> (u64, u64) {
    let dump = JitDump::parse(data).expect("profkit header");
    let mut records = dump.records();
    let (mut n, mut bytes) = (0u64, 0u64);
    while let Some(h) = records.next_header() {
        let h = h.expect("profkit record header");
        n += 1;
        bytes += u64::from(h.total_size);
    }
    (n, bytes)
}

/// Reads every byte: a wrapping sum of the file's `u64` words (plus the tail bytes).
fn read_every_byte(data: &[u8]) -> u64 {
    let data = black_box(data);
    let chunks = data.chunks_exact(8);
    let tail = chunks.remainder();
    let mut sum = chunks.fold(0u64, |s, c| {
        s.wrapping_add(u64::from_le_bytes(c.try_into().expect("8 bytes")))
    });
    for &b in tail {
        sum = sum.wrapping_add(u64::from(b));
    }
    sum
}

// ---------------------------------------------------------------------------------------------
// Timing and report

struct Samples {
    name: &'static str,
    times: Vec<Duration>,
}

impl Samples {
    fn sorted(&self) -> Vec<Duration> {
        let mut t = self.times.clone();
        t.sort();
        t
    }
    fn best(&self) -> f64 {
        self.sorted()[0].as_secs_f64()
    }
    fn median(&self) -> f64 {
        let t = self.sorted();
        let n = t.len();
        if n % 2 == 1 {
            t[n / 2].as_secs_f64()
        } else {
            (t[n / 2 - 1].as_secs_f64() + t[n / 2].as_secs_f64()) / 2.0
        }
    }
}

struct FileResult {
    samples: Vec<Samples>,
}

impl FileResult {
    fn get(&self, name: &str) -> Option<&Samples> {
        self.samples.iter().find(|s| s.name == name)
    }

    /// `(best, median)` time of `name`.
    fn times(&self, name: &str) -> (f64, f64) {
        self.get(name)
            .map_or((f64::NAN, f64::NAN), |s| (s.best(), s.median()))
    }

    /// `(best, median)` of the faster of linux-perf-data's two configurations.
    fn lpd_times(&self) -> (f64, f64) {
        let (a, b) = (self.times(LPD_FULL), self.times(LPD_FULL_BIG));
        (a.0.min(b.0), a.1.min(b.1))
    }

    /// profkit's full-parse throughput over linux-perf-data's: `(best, median)`.
    fn speedup_vs_lpd(&self) -> (f64, f64) {
        let (l, p) = (self.lpd_times(), self.times(PROFKIT_FULL));
        (l.0 / p.0, l.1 / p.1)
    }

    /// Header-scan speed over read-every-byte speed: `(best, median)`.
    fn scan_vs_read(&self) -> (f64, f64) {
        let (r, s) = (self.times(READ_BYTES), self.times(PROFKIT_SCAN));
        (r.0 / s.0, r.1 / s.1)
    }
}

const PROFKIT_FULL: &str = "profkit full parse";
const LPD_FULL: &str = "linux-perf-data full parse";
const LPD_FULL_BIG: &str = "linux-perf-data full parse, 1 MiB buffer";
/// linux-perf-data copies records through a buffer of this size in the second configuration.
const LPD_BIG_BUFFER: usize = 1 << 20;
const PROFKIT_SCAN: &str = "profkit header-only scan";
const READ_BYTES: &str = "read every byte (u64 sum)";

/// Times one pass of `f`; passes repeat until at least `min` has elapsed so that tiny inputs
/// are measured over many passes, and the result is the time of one pass.
fn time_pass<T>(min: Duration, mut f: impl FnMut() -> T) -> Duration {
    let mut passes = 0u32;
    let start = Instant::now();
    loop {
        black_box(f());
        passes += 1;
        let el = start.elapsed();
        if el >= min {
            return el / passes;
        }
    }
}

fn bench_file(title: &str, data: &[u8], rounds: usize, with_scan: bool) -> FileResult {
    // Check equivalence once, and warm up (page in the whole mapping).
    let pk = profkit_full(data);
    let lpd = lpd_full(data, None);
    assert_eq!(
        lpd,
        lpd_full(data, Some(LPD_BIG_BUFFER)),
        "linux-perf-data buffer sizes differ"
    );
    let scan = profkit_scan(data);
    black_box(read_every_byte(data));
    assert_eq!(pk.records, lpd.records, "record counts differ");
    assert_eq!(scan.0, pk.records, "header scan record count differs");
    assert_eq!(
        (pk.loads, pk.name_bytes, pk.code_bytes, pk.addr_sum),
        (lpd.loads, lpd.name_bytes, lpd.code_bytes, lpd.addr_sum),
        "LOADs differ"
    );
    assert_eq!(
        (pk.unwinding, pk.eh_frame_bytes),
        (lpd.unwinding, lpd.eh_frame_bytes),
        "UNWINDING_INFO differs"
    );
    if pk.parse_errors == 0 && lpd.parse_errors == 0 {
        assert_eq!(pk, lpd, "full-parse counts differ");
    }

    let mb = data.len() as f64 / 1e6;
    println!("## {title}");
    println!(
        "{:.1} MB, {} records: {} LOAD ({:.1} MB code), {} DEBUG_INFO ({} entries decoded by profkit, {} by linux-perf-data), {} UNWINDING_INFO, {} other",
        mb,
        pk.records,
        pk.loads,
        pk.code_bytes as f64 / 1e6,
        pk.debug_records,
        pk.debug_entries,
        lpd.debug_entries,
        pk.unwinding,
        pk.other
    );
    if pk.parse_errors + lpd.parse_errors > 0 {
        println!(
            "records that failed to parse: profkit {}, linux-perf-data {} (corrupt DEBUG_INFO: profkit yields the entries before the overrun, linux-perf-data drops the record)",
            pk.parse_errors, lpd.parse_errors
        );
    }

    let min = Duration::from_millis(20);
    let mut samples = vec![
        Samples {
            name: PROFKIT_FULL,
            times: Vec::new(),
        },
        Samples {
            name: LPD_FULL,
            times: Vec::new(),
        },
        Samples {
            name: LPD_FULL_BIG,
            times: Vec::new(),
        },
    ];
    if with_scan {
        samples.push(Samples {
            name: PROFKIT_SCAN,
            times: Vec::new(),
        });
        samples.push(Samples {
            name: READ_BYTES,
            times: Vec::new(),
        });
    }
    for round in 0..rounds {
        // Alternate the order so neither contender always runs right after the other.
        let n = samples.len();
        for k in 0..n {
            let i = (k + round) % n;
            let t = match samples[i].name {
                PROFKIT_FULL => time_pass(min, || profkit_full(data)),
                LPD_FULL => time_pass(min, || lpd_full(data, None)),
                LPD_FULL_BIG => time_pass(min, || lpd_full(data, Some(LPD_BIG_BUFFER))),
                PROFKIT_SCAN => time_pass(min, || profkit_scan(data)),
                _ => time_pass(min, || read_every_byte(data)),
            };
            samples[i].times.push(t);
        }
    }

    let result = FileResult { samples };
    let vs_lpd = result.speedup_vs_lpd();
    let vs_read = result.scan_vs_read();
    println!();
    println!("| contender | best ms | median ms | MB/s (best) | MB/s (median) | speed vs linux-perf-data, best [median] | speed vs read every byte, best [median] |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for s in &result.samples {
        let vs_lpd = if s.name == PROFKIT_FULL {
            format!("{:.2}x [{:.2}x]", vs_lpd.0, vs_lpd.1)
        } else {
            String::new()
        };
        let vs_read = if s.name == PROFKIT_SCAN {
            format!("{:.1}% [{:.1}%]", 100.0 * vs_read.0, 100.0 * vs_read.1)
        } else {
            String::new()
        };
        println!(
            "| {} | {:.2} | {:.2} | {:.0} | {:.0} | {} | {} |",
            s.name,
            s.best() * 1e3,
            s.median() * 1e3,
            mb / s.best(),
            mb / s.median(),
            vs_lpd,
            vs_read
        );
    }
    result
}
