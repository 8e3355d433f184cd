//! Cost per METHOD_LOAD_FINISHED through the exported `iJIT_NotifyEvent`, against writing the
//! same LOAD records directly with profkit-jitdump's writer (a mutex around one
//! `JitDumpFile`, as a JIT with its own jitdump writer would do), in the same run.
//!
//! `cargo bench -p profkit-jitapi --bench load` (or scripts/bench/jitapi.sh). Prints a
//! Markdown table; `BENCH_SCALE=0.1` shortens it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::sync::Mutex;
use std::time::Instant;

use profkit_jitapi::abi::{MethodLoad, EVENT_LOAD_FINISHED};
use profkit_jitapi::ffi::{iJIT_GetNewMethodID, iJIT_NotifyEvent};
use profkit_jitdump::write::monotonic_ns;
use profkit_jitdump::{CodeLoadData, HeaderOptions, JitDumpFile};

const NAME: &std::ffi::CStr = c"wasm[0]::function[123]";

fn tid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

fn api_run(threads: usize, per_thread: usize, code_size: usize) -> f64 {
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let code = vec![0xc3u8; code_size];
                let mut m = MethodLoad {
                    method_id: 0,
                    method_name: NAME.as_ptr(),
                    method_load_address: code.as_ptr().cast(),
                    method_size: code_size as u32,
                    line_number_size: 0,
                    line_number_table: std::ptr::null(),
                    class_id: 0,
                    class_file_name: std::ptr::null(),
                    source_file_name: std::ptr::null(),
                };
                for _ in 0..per_thread {
                    m.method_id = iJIT_GetNewMethodID();
                    // SAFETY: a valid iJIT_Method_Load whose pointers outlive the call.
                    let r = unsafe {
                        iJIT_NotifyEvent(EVENT_LOAD_FINISHED, (&mut m as *mut MethodLoad).cast())
                    };
                    assert_eq!(r, 1);
                }
            });
        }
    });
    profkit_jitapi::collector::flush_all(false);
    t0.elapsed().as_secs_f64()
}

fn direct_run(dir: &std::path::Path, threads: usize, per_thread: usize, code_size: usize) -> f64 {
    let file = Mutex::new(JitDumpFile::create(dir, &HeaderOptions::default()).unwrap());
    let next = std::sync::atomic::AtomicU64::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let code = vec![0xc3u8; code_size];
                let tid = tid();
                let pid = std::process::id();
                for _ in 0..per_thread {
                    let ts = monotonic_ns();
                    let mut f = file.lock().unwrap();
                    let idx = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let load = CodeLoadData {
                        timestamp: ts,
                        pid,
                        tid,
                        vma: code.as_ptr() as u64,
                        code_addr: code.as_ptr() as u64,
                        code_size: code_size as u64,
                        code: Some(&code),
                        code_index: idx,
                        name: NAME.to_bytes(),
                        debug_info: None,
                        debug_info2: None,
                        tier: None,
                        unwinding: None,
                    };
                    f.writer().write_code_load(&load).unwrap();
                }
            });
        }
    });
    file.lock().unwrap().flush().unwrap();
    t0.elapsed().as_secs_f64()
}

/// One measurement in a fresh process (a fresh collector and a fresh, empty output directory,
/// so neither side pays for the other's dirty pages).
fn child(args: &[String]) {
    let kind = args[0].as_str();
    let threads: usize = args[1].parse().unwrap();
    let code_size: usize = args[2].parse().unwrap();
    let per_thread: usize = args[3].parse().unwrap();
    let dir = std::env::var("PROFKIT_JITDUMP_DIR").unwrap();
    let secs = match kind {
        "api" => api_run(threads, per_thread, code_size),
        _ => direct_run(std::path::Path::new(&dir), threads, per_thread, code_size),
    };
    println!("{secs}");
}

fn measure(kind: &str, threads: usize, code_size: usize, per_thread: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--child", kind])
        .arg(threads.to_string())
        .arg(code_size.to_string())
        .arg(per_thread.to_string())
        .env("PROFKIT_JITDUMP_DIR", dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(pos) = args.iter().position(|a| a == "--child") {
        child(&args[pos + 1..]);
        return;
    }
    let scale: f64 = std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    println!("| threads | code bytes | loads | direct writer ns/load | iJIT_NotifyEvent ns/load | overhead | iJIT loads/s |");
    println!("|---|---|---|---|---|---|---|");
    for &(threads, code_size, per_thread) in &[
        (1usize, 100usize, 400_000usize),
        (2, 100, 200_000),
        (1, 4096, 40_000),
        (2, 4096, 20_000),
    ] {
        let per_thread = ((per_thread as f64 * scale) as usize).max(1000);
        let n = (threads * per_thread) as f64;
        let mut best_api = f64::MAX;
        let mut best_direct = f64::MAX;
        for _ in 0..5 {
            best_direct = best_direct.min(measure("direct", threads, code_size, per_thread));
            best_api = best_api.min(measure("api", threads, code_size, per_thread));
        }
        let (d, a) = (best_direct / n * 1e9, best_api / n * 1e9);
        println!(
            "| {threads} | {code_size} | {} | {d:.0} | {a:.0} | {:.2}x | {:.2} M |",
            threads * per_thread,
            a / d,
            n / best_api / 1e6
        );
    }
}
