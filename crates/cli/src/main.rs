//! `profkit`: the command-line front end. Thin: it parses arguments, opens inputs, picks the
//! library pieces and prints. Exit codes: 0 ok, 1 findings (`validate`), 2 usage, I/O or
//! parse failure. A closed output pipe (`profkit dump x | head`) ends quietly with 0.

mod cli;
mod cmd;
mod formats;
mod graphs;
mod inflate;
mod input;
mod instr_maps;
mod output;
mod progress;
mod source;
mod spool;
mod to_viewer;
mod view;
mod xray_join;

use std::process::ExitCode;

/// mimalloc (v3) instead of glibc's malloc: a conversion first-touches tens of MB of fresh
/// heap on every thread (a folded writer's stack tree, DWARF sections, code maps), and page
/// faults were a tenth of `convert perf.data`'s time; mimalloc's segments take them in far
/// fewer faults. `convert` of the tsc recording: 0.163 -> 0.149 s, peak RSS 115 -> 130 MB;
/// XRay and Mono runs as fast as before (docs/BENCHMARKS.md).
///
/// An allocation that fails (the address space is exhausted: `ulimit -v`) ends the command
/// with an error and exit code 2 (its staged temporary files removed) rather than Rust's abort (SIGABRT, exit 134 through a shell):
/// a 580 MB jitdump of 10M CODE_LOADs under `ulimit -v 2000000` (B5).
///
/// Blocks of [`HUGE`] bytes or more go to the system's allocator, which maps each on its own,
/// grows it in place (`mremap`) and unmaps it when it is freed: mimalloc keeps the address space
/// of a freed huge block in its arenas, and a growing buffer's old and new blocks both stay
/// reserved (`diff -f folded` of two 50 MB XRay profiles whose one call path is 12.5M functions
/// deep: lines of 222 MB and their 256 MB buffer, VmPeak past 2 GB with mimalloc, 1.1 GB RSS
/// with glibc's).
#[global_allocator]
static ALLOCATOR: OrExit = OrExit;

/// The allocator that exits on failure and puts huge blocks apart (see [`ALLOCATOR`]).
struct OrExit;

/// The size from which a block is the system allocator's; glibc's `M_MMAP_THRESHOLD` is set to it
/// (see `bound_address_space`), so each such block is a mapping of its own.
const HUGE: usize = 1 << 20;

/// Which allocator holds blocks of `size` bytes.
fn owner(size: usize) -> &'static dyn std::alloc::GlobalAlloc {
    if size >= HUGE {
        &std::alloc::System
    } else {
        &mimalloc::MiMalloc
    }
}

// SAFETY: a block of a size is allocated, grown and freed by the one allocator `owner` gives
// for its size (a `Layout` passed to `dealloc`/`realloc` is the one it was allocated with or
// grown to); a block that changes owner is copied. A null answer ends the process.
unsafe impl std::alloc::GlobalAlloc for OrExit {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on.
        let p = unsafe { owner(layout.size()).alloc(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { owner(layout.size()).alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as above; the block is its size's owner's.
        unsafe { owner(layout.size()).dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let (from, to) = (owner(layout.size()), owner(new_size));
        let p = if (layout.size() >= HUGE) == (new_size >= HUGE) {
            // SAFETY: as above; one owner holds the block before and after.
            unsafe { from.realloc(ptr, layout, new_size) }
        } else {
            // SAFETY: the caller promises `new_size` with `layout`'s alignment is a valid
            // layout; the old block is `layout.size()` bytes and the new one `new_size`, so
            // the smaller is copied, and the old block is freed by its owner.
            unsafe {
                let new = std::alloc::Layout::from_size_align_unchecked(new_size, layout.align());
                let q = to.alloc(new);
                if !q.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
                    from.dealloc(ptr, layout);
                }
                q
            }
        };
        if p.is_null() {
            out_of_memory(new_size);
        }
        p
    }
}

/// Says that `size` bytes could not be allocated and ends the process (exit code 2), after
/// removing the output's staged temporary files (B13). Nothing is allocated here: the message
/// is put together on the stack, the temporary files' names are in static slots.
fn out_of_memory(size: usize) -> ! {
    profkit_common::output::emergency::remove_all();
    let mut msg = [0u8; 160];
    let mut n = 0;
    let mut put = |b: &[u8]| {
        for &c in b {
            if let Some(slot) = msg.get_mut(n) {
                *slot = c;
                n += 1;
            }
        }
    };
    put(b"error: out of memory: an allocation of ");
    let mut digits = [0u8; 20];
    let mut d = digits.len();
    let mut v = size;
    loop {
        d -= 1;
        if let Some(slot) = digits.get_mut(d) {
            *slot = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 || d == 0 {
            break;
        }
    }
    put(digits.get(d..).unwrap_or_default());
    put(b" bytes failed (is the address space limited? ulimit -v)\n");
    // SAFETY: writing a stack buffer to stderr and ending the process, without allocating.
    unsafe {
        let _ = libc::write(2, msg.as_ptr().cast(), n);
        libc::_exit(2);
    }
}

use clap::Parser;

/// Address space, not memory: `ulimit -v 2000000` must not trip on an input under 50 MB
/// (B5). mimalloc reserves 1 GiB of address space per arena and glibc's malloc (used by the C
/// libraries: zstd, …) 64 MiB per thread that calls it (VmPeak 1.9-2.3 GB for a 94 KB
/// recording). Arenas of 64 MiB (more are reserved as needed) and two glibc arenas bring it
/// to ~0.3 GB; glibc maps blocks of [`HUGE`] bytes and more on their own (the allocator sends
/// them there). mimalloc sets itself up before `main` (its constructor, or the runtime's first
/// allocation), so this runs from an `.init_array` entry of a higher priority than the default
/// constructors, before anything allocates; an explicit `MIMALLOC_ARENA_RESERVE` is kept.
extern "C" fn bound_address_space() {
    extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    /// `mi_option_arena_reserve` (mimalloc v3's `mi_option_e`), in KiB.
    const MI_OPTION_ARENA_RESERVE: std::ffi::c_int = 23;
    // SAFETY: mimalloc's option setter only writes its option table; mallopt with
    // M_ARENA_MAX or M_MMAP_THRESHOLD has no preconditions. No thread exists yet.
    unsafe {
        if libc::getenv(c"MIMALLOC_ARENA_RESERVE".as_ptr()).is_null() {
            mi_option_set(MI_OPTION_ARENA_RESERVE, 64 * 1024);
        }
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, HUGE as std::ffi::c_int);
    }
}

#[used]
#[link_section = ".init_array.00100"]
static BOUND_ADDRESS_SPACE: extern "C" fn() = bound_address_space;

/// rayon's global pool, started here so that a failure to start its threads is not a panic at
/// the first parallel loop (rayon panics when it cannot build its default pool, and builds it
/// once: a failed attempt cannot be retried). Its threads are tried first as plain threads;
/// when they cannot all start (a low `ulimit -v` or `RLIMIT_NPROC`) the calling thread is the
/// pool's only worker and parallel loops run on it, in order. B5.
fn start_thread_pool() {
    let wanted = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1);
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let wait = std::sync::Arc::new(std::sync::Mutex::new(wait));
    let mut probes = Vec::new();
    for _ in 0..wanted {
        let wait = std::sync::Arc::clone(&wait);
        match std::thread::Builder::new().spawn(move || {
            // Held until every probe has started (as rayon's workers would all be).
            let _ = wait.lock().map(|w| w.recv());
        }) {
            Ok(t) => probes.push(t),
            Err(_) => break,
        }
    }
    let all = probes.len() == wanted;
    drop(release);
    for t in probes {
        let _ = t.join();
    }
    let builder = rayon::ThreadPoolBuilder::new().num_threads(if all { wanted } else { 1 });
    let builder = if all {
        builder
    } else {
        builder.use_current_thread()
    };
    let _ = builder.build_global();
}

fn main() -> ExitCode {
    // The process ends with its command: large structures are left to the exit.
    profkit_common::release::at_exit_only();
    // Ctrl-C, a kill or a hang-up removes the staged temporary files before the process ends.
    profkit_common::output::emergency::remove_on_signals();
    start_thread_pool();
    let args = cli::Cli::parse();
    profkit_native::set_cpp_parameters(!args.short_names);
    let result = match args.command {
        cli::Command::Record(a) => cmd::record::run(&a),
        cli::Command::Info(a) => cmd::info::run(&a),
        cli::Command::Dump(a) => cmd::dump::run(&a),
        cli::Command::Validate(a) => cmd::validate::run(&a),
        cli::Command::Convert(a) => cmd::convert::run(&a),
        cli::Command::Account(a) => cmd::account::run(&a),
        cli::Command::Stack(a) => cmd::stack::run(&a),
        cli::Command::Graph(a) => cmd::graph::run(&a),
        cli::Command::Diff(a) => cmd::diff::run(&a),
        cli::Command::Extract(a) => cmd::extract::run(&a),
        cli::Command::Report(a) => cmd::report::run(&a),
        cli::Command::Symbolize(a) => cmd::symbolize::run(&a),
        cli::Command::Inject(a) => cmd::inject::run(&a),
        cli::Command::View(a) => cmd::view::run(a),
        cli::Command::Completions(a) => cmd::completions::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            output::print_error(&format!("{e:#}"));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::alloc::{alloc, dealloc, realloc, Layout};

    /// A block that grows past [`super::HUGE`] and shrinks below it changes owner (mimalloc ↔
    /// glibc) and keeps its bytes and its alignment both ways.
    #[test]
    fn blocks_crossing_the_huge_size_keep_bytes_and_alignment() {
        let mut v: Vec<u8> = Vec::new();
        for i in 0..(3 * super::HUGE) {
            v.push(i as u8);
        }
        assert!(v.iter().enumerate().all(|(i, &b)| b == i as u8));
        v.truncate(1000);
        v.shrink_to_fit();
        assert!(v.iter().enumerate().all(|(i, &b)| b == i as u8));
        drop(v);
        for align in [8, 64, 4096] {
            let small = Layout::from_size_align(1000, align).unwrap();
            // SAFETY: non-zero sizes, a valid alignment; each block is freed with the layout it
            // was last given.
            unsafe {
                let p = alloc(small);
                assert_eq!(p as usize % align, 0);
                for i in 0..1000 {
                    *p.add(i) = i as u8;
                }
                let big = 2 * super::HUGE;
                let q = realloc(p, small, big);
                assert_eq!(q as usize % align, 0);
                assert!((0..1000).all(|i| *q.add(i) == i as u8));
                *q.add(big - 1) = 7;
                let r = realloc(q, Layout::from_size_align(big, align).unwrap(), 500);
                assert_eq!(r as usize % align, 0);
                assert!((0..500).all(|i| *r.add(i) == i as u8));
                dealloc(r, Layout::from_size_align(500, align).unwrap());
            }
        }
    }
}
