//! perf.data → [`EventSink`]: every sample becomes a [`Sample`] whose stack is named through
//! the recording's JIT metadata, binaries and kernel symbols.
//!
//! The walk is one pass over the events in time order (profkit-perf sorts them, as perf does
//! with FINISHED_ROUND, on a second thread that reads the records ahead of the walk). MMAP,
//! COMM and FORK update each `Process`; a SAMPLE is turned into addresses and the addresses
//! into frames:
//!
//! * **addresses**: a frame-pointer callchain (`-g`) as perf recorded it (return addresses are
//!   looked up at `addr - 1`), up to the first user return address that no mapping, jitdump
//!   region or perf map entry holds: a frame-pointer walk through code built without frame
//!   pointers reads data as return addresses (`0x643134373334782f` is ASCII text, 0 a stack's
//!   end), and perf records what it read; the chain ends there and [`PerfReport::fp_cut`]
//!   counts what was cut (a process without JIT metadata keeps unheld addresses that user
//!   code can have: its JIT code may lie in memory perf saw no executable mmap for); a
//!   `--call-graph dwarf` sample's kernel callchain, then its user pc, then the return
//!   addresses [`Unwinder`] finds in its copy of the user stack, using the binaries' CFI and the
//!   jitdump's JIT_CODE_UNWINDING_INFO for JIT code; a sample with neither is just its pc;
//! * **frames**: `Symbols` (symbols.rs) (kernel symbols, native binaries with inline frames and lines,
//!   JIT code through the process's [`CodeMap`](crate::codemap::CodeMap) at the sample's time,
//!   perf maps).
//!
//! A process's JIT metadata ([`jit`]) is looked up at its first sample, and again if a
//! jitdump marker appears later; a dump whose marker the framing check already saw starts
//! loading on another thread when the walk starts. The jitdump's times match the samples only
//! when the recording used CLOCK_MONOTONIC (`perf record -k 1`) and the dump says it does too;
//! otherwise JIT code is named by what is live at the end of the dump and the [`PerfReport`]
//! warns.
//!
//! With a sink that runs on another thread ([`crate::events::Threaded`]) and three CPUs or
//! more, the naming is split by process: the helper, a second walk on the writer's thread,
//! names the samples of the processes it is given; the output is the one walk's (`split.rs`).
//!
//! Samples weigh their period (perf report's default: ns for cpu-clock, events for cycles).
//! Only the first sampled event's samples are used (a recording of several events mixes
//! units); the report counts the others. Times are ns since the first sample.

/// Finding and loading a process's jitdump and perf map: profkit-jit's.
pub use profkit_jit::discovery as jit;
mod chain;
mod process;
mod report;
mod split;
mod symbols;

use std::collections::BinaryHeap;

use rustc_hash::FxHashMap as HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use profkit_native::{Binaries, BuildId, Kallsyms, Unwinder};
use profkit_perf::{EventData, Meta, Mmap, PerfData, Sample as PerfSample};

use super::FeedSummary;
use crate::events::{EventSink, MappingInfo, ProcessInfo, Sample, ThreadInfo, TraceInfo};
use crate::func::{FuncId, FunctionTable};
pub use jit::JitSearch;
use process::{Map, MapKind, Process};
pub use report::{ClockCheck, FpCut, PerfReport, ProcessReport};
use symbols::{KernelNames, Origin, Resolved, Symbols};

/// How to read a recording.
#[derive(Clone, Debug, Default)]
pub struct PerfOptions {
    /// Where JIT metadata is looked for.
    pub jit: JitSearch,
    /// Extra directories searched for binaries by file name (`--symfs`-like).
    pub binary_dirs: Vec<PathBuf>,
    /// Kernel symbols to use instead of the build-id cache's or `/proc/kallsyms`.
    pub kallsyms: Option<PathBuf>,
    /// The event whose samples are used (`perf record -e` name, with or without its `:ppp`
    /// modifiers); `None`: the first event that samples.
    pub event: Option<String>,
    /// Whether the naming of some processes' samples may move to the writer's thread, when
    /// the sink has one (`split.rs`); `None`: when the machine has three CPUs or more (with
    /// two, the reader and the writer already keep the second busy: the split measured no
    /// faster and costs CPU).
    pub helper: Option<bool>,
}

impl PerfOptions {
    /// Options for the recording at `path` (`None`: a pipe) with `--jit-dir` directories.
    pub fn new(path: Option<&Path>, jit_dirs: Vec<PathBuf>) -> PerfOptions {
        PerfOptions {
            jit: JitSearch::new(path, jit_dirs),
            ..PerfOptions::default()
        }
    }

    /// Options that look for no JIT metadata and no kernel symbols on this machine (fuzzing
    /// and tests: only the input's bytes matter; binaries the recording names are still read).
    pub fn isolated() -> PerfOptions {
        let nowhere = PathBuf::from("/nonexistent/profkit");
        PerfOptions {
            jit: JitSearch {
                beside: None,
                dirs: vec![nowhere.clone()],
                tmp: nowhere.clone(),
                ..JitSearch::default()
            },
            kallsyms: Some(nowhere),
            ..PerfOptions::default()
        }
    }
}

/// Whether JIT function code starts exactly at `ra` (a return address): then the return
/// address names that function, as perf names it, not the one before it whose last
/// instruction was the call (Erlang's bottom frames return to a function's entry).
fn starts_jit_function(
    dump: Option<&jit::LoadedDump>,
    map: Option<&jit::LoadedMap>,
    ra: u64,
    time: Option<u64>,
) -> bool {
    // Most return addresses start no region: the binary search says so without `region_at`.
    dump.filter(|d| d.map.starts_region(ra))
        .and_then(|d| d.map.region_at(ra, time).and_then(|i| d.map.region(i)))
        .is_some_and(|r| r.start == ra)
        || map
            .and_then(|m| m.map.covering(ra))
            .is_some_and(|(start, _)| start == ra)
}

/// One past the highest user-space address of x86-64 with 4-level paging (with 5-level
/// paging, Linux maps above it only when a program asks for such an address).
const USER_SPACE_END: u64 = 1 << 47;

/// How far above a sample's sp an unmapped address is taken for the thread's stack when it
/// comes out of the unwinder as a return address.
const STACK_GUESS: u64 = 1 << 20;

/// A JIT region the unwinder holds, ordered by when it stops being live (min-heap).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Expiry(std::cmp::Reverse<u64>, usize);

/// A thread's last stack: its addresses with their answers, outermost first, and the frames
/// they expand to.
#[derive(Default)]
struct PreviousStack {
    /// The thread index it is of (threads share [`chain::MEMO_SLOTS`] of them).
    thread: u32,
    generation: u64,
    answered: Vec<Answered>,
    /// The frame-pointer walk (`ChainMemo`'s stamp) the addresses are the output of, if they
    /// are one.
    chain_call: Option<u64>,
    stack: Vec<FuncId>,
    lines: Vec<u32>,
}

/// One address of a [`PreviousStack`] (one entry, not four parallel vectors: a sample pushes
/// a few of them).
#[derive(Clone, Copy)]
struct Answered {
    /// Lookup address, is kernel.
    addr: (u64, bool),
    resolved: Resolved,
    /// The earliest `until` of this answer and of those outer to it (they all hold before it).
    min_until: u64,
    /// The frames of this address and of those outer to it.
    end: usize,
}

impl PreviousStack {
    /// Keeps the outermost `n` answers and their frames.
    fn truncate(&mut self, n: usize) {
        self.answered.truncate(n);
        let frames = self.answered.last().map_or(0, |a| a.end);
        self.stack.truncate(frames);
        self.lines.truncate(frames);
    }
}

/// The walk's state.
struct Walk {
    /// Whether the local kallsyms, taken on release and hostname alone, must still show
    /// `_text` where the recording's kernel mapping has it.
    kernel_text_check: bool,
    opts: Arc<PerfOptions>,
    symbols: Symbols,
    processes: HashMap<u32, Process>,
    /// Threads by (pid, tid) → dense index, and whether the helper names their samples.
    threads: HashMap<(u32, u32), (u32, bool)>,
    thread_names: HashMap<u32, String>,
    /// Build ids from the feature section, by path.
    build_ids: HashMap<Vec<u8>, Vec<u8>>,
    clock_ok: bool,
    origin: Option<u64>,
    attr: Option<usize>,
    report: PerfReport,
    summary: FeedSummary,
    /// Per thread index (modulo [`chain::MEMO_SLOTS`]): its last stack.
    previous: Vec<PreviousStack>,
    /// Per process: JIT regions in the unwinder, by expiry.
    expiries: HashMap<u32, BinaryHeap<Expiry>>,
    /// Executable mappings not yet told to the sink (it is begun at the first sample).
    pending_maps: Vec<(u32, u64, Map)>,
    /// Per thread index (modulo [`chain::MEMO_SLOTS`]): its last frame-pointer chain, checked.
    chains: Vec<chain::ChainMemo>,
    /// What the sample's frame-pointer walk reused of its memo's last (`None`: its addresses
    /// are not a frame-pointer walk's alone).
    chain_reuse: Option<chain::Reuse>,
    /// The memo whose output holds the sample's addresses (`None`: `addrs` holds them).
    from_memo: Option<usize>,
    // Scratch buffers, reused by every sample.
    addrs: Vec<(u64, bool)>,
    unwound: Vec<u64>,
    /// The helper's side, when the sink takes one (see `split.rs`).
    split: Option<split::Split>,
}

/// Feeds the recording in `data` to `sink`. `name` names the trace. Records that do not decode
/// are reported and skipped; a cut-off file yields everything before the cut. `release` is
/// told byte ranges of `data` read and left behind (a mapped input drops their pages, so
/// memory does not grow with the file).
pub fn feed(
    data: &[u8],
    name: &str,
    opts: &PerfOptions,
    release: Option<&(dyn Fn(u64, u64) + Sync)>,
    sink: &mut dyn EventSink,
) -> io::Result<(FeedSummary, PerfReport)> {
    // Binaries and kernel symbols start loading; the records' framing is checked as they are
    // read (or, for the files the one-pass reader does not read, meanwhile, before the walk).
    let (perf, walk) = PerfData::parse_one_pass(data, release, |meta| {
        let attr = sampled_event(&meta.attrs, opts.event.as_deref())?;
        Ok::<_, io::Error>((Walk::new(meta, opts, attr), attr))
    })
    .map_err(invalid)?;
    let (mut walk, attr) = walk?;
    walk.load_marked_jitdumps(&perf);
    // Samples with user stacks stay on one walk (see `split.rs`).
    let splittable = attr
        .and_then(|i| perf.attrs().get(i))
        .is_some_and(|a| !a.has_user_stack());
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    if splittable && opts.helper.unwrap_or(cpus >= 3) {
        walk.split = split::Split::start(sink, walk.second());
    }
    walk_events(&mut walk, &perf, data, name, attr, release, sink)?;
    if let Some(mut split) = walk.split.take() {
        // The helper's walk comes back once the writer took every sample.
        split.hand_over_changes(sink)?;
        sink.finish()?;
        if let Some(helper) = split.finished() {
            walk.absorb(helper);
        }
        walk.report.helped = split.named[1];
        return Ok(walk.finish());
    }
    let (summary, report) = walk.finish();
    sink.finish()?;
    Ok((summary, report))
}

/// The walk over every event of `perf` (see [`feed`]); `Ok` once the sink began.
fn walk_events(
    walk: &mut Walk,
    perf: &PerfData<'_>,
    data: &[u8],
    name: &str,
    attr: Option<usize>,
    release: Option<&(dyn Fn(u64, u64) + Sync)>,
    sink: &mut dyn EventSink,
) -> io::Result<()> {
    let functions = FunctionTable::new();
    let mut begun = false;
    let outcome = perf
        .with_events_read_ahead(release, |events| -> io::Result<_> {
            // A check of the records' framing before the walk dropped the pages behind
            // itself; drop what it read last, and the header's and feature sections' pages,
            // too (the reading thread reads the records again, in order, and drops them
            // behind itself).
            if let (Some(release), false) = (release, perf.one_pass()) {
                release(0, data.len() as u64);
            }
            loop {
                for (pid, path) in events.jitdump_markers_ahead() {
                    let path = PathBuf::from(String::from_utf8_lossy(&path).into_owned());
                    walk.jit_marker(pid, path);
                }
                let Some(ev) = events.next_event() else {
                    break;
                };
                // Borrowed where it lies: an event is 300 bytes, and a move is a copy.
                let ev = match &ev {
                    Ok(ev) => ev,
                    Err(e) => {
                        walk.summary.problems.push(e.to_string());
                        break;
                    }
                };
                match &ev.data {
                    EventData::Sample(s) => {
                        if !begun {
                            walk.origin = s.time;
                            sink.begin(&trace_info(&functions, walk.origin, name, perf, attr))?;
                            begun = true;
                        }
                        walk.flush_maps(sink)?;
                        walk.sample(s, sink)?;
                    }
                    EventData::Mmap(m) => {
                        walk.mmap(m);
                        if begun {
                            walk.flush_maps(sink)?;
                        }
                    }
                    EventData::Comm(c) => {
                        let (Ok(pid), Ok(tid)) = (u32::try_from(c.pid), u32::try_from(c.tid))
                        else {
                            continue;
                        };
                        let comm = String::from_utf8_lossy(c.name).into_owned();
                        let p = walk.processes.entry(pid).or_default();
                        if pid == tid || c.exec || p.comm.is_none() {
                            p.comm = Some(comm.clone());
                        }
                        walk.thread_names.insert(tid, comm);
                    }
                    EventData::Fork(t) => {
                        if let (Ok(pid), Ok(ppid)) = (u32::try_from(t.pid), u32::try_from(t.ppid)) {
                            walk.fork(ppid, pid);
                        }
                    }
                    EventData::Lost(l) => walk.report.lost += l.count,
                    EventData::BuildId(b) => {
                        walk.build_ids
                            .insert(b.path.clone().into_bytes(), b.build_id.clone());
                    }
                    EventData::Malformed(why) => walk
                        .summary
                        .problems
                        .push(format!("record {}: {why}", ev.index)),
                    _ => {}
                }
            }
            // What is left (the reader's last steps, the header and feature sections).
            if let Some(release) = release {
                release(0, data.len() as u64);
            }
            Ok(events.outcome())
        })
        .map_err(invalid)??;
    walk.summary.truncation = outcome.truncation.clone();
    if !begun {
        sink.begin(&trace_info(&functions, None, name, perf, attr))?;
    }
    Ok(())
}

/// The lowest address Linux maps by default (`vm.mmap_min_addr`, 64 KiB).
const MMAP_MIN_ADDR: u64 = 0x1_0000;

/// Whether `addr` can be user code: from [`MMAP_MIN_ADDR`] up to [`USER_SPACE_END`]. A
/// frame-pointer walk past the end of its chain reads 0, or data such as ASCII text
/// (`0x643134373334782f`): neither is.
fn plausible_user_address(addr: u64) -> bool {
    (MMAP_MIN_ADDR..USER_SPACE_END).contains(&addr)
}

/// The attr whose samples are used: the one named `event` (exactly, or before its `:`
/// modifiers), else the first that samples (perf record's first `-e`).
fn sampled_event(attrs: &[profkit_perf::Attr], event: Option<&str>) -> io::Result<Option<usize>> {
    let Some(want) = event else {
        return Ok(attrs.iter().position(|a| a.sample_period_or_freq != 0));
    };
    let matches = |name: &str| name == want || name.split(':').next() == Some(want);
    match attrs
        .iter()
        .position(|a| a.name.as_deref().is_some_and(matches))
    {
        Some(i) => Ok(Some(i)),
        None => {
            let names: Vec<&str> = attrs.iter().filter_map(|a| a.name.as_deref()).collect();
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the recording has no event {want:?} (its events: {})",
                    names.join(", ")
                ),
            ))
        }
    }
}

/// Finds and loads the jitdump of `pid` (`marker`: the path perf recorded; empty: none).
fn search_jitdump(search: &JitSearch, pid: u32, marker: &Path) -> process::DumpSearch {
    let marker = (!marker.as_os_str().is_empty()).then_some(marker);
    let path = search.jitdump(pid, marker).map_err(Err)?;
    jit::load_jitdump(&path).map_err(Ok)
}

/// Where one recorded process's JIT metadata is (what `profkit info` lists).
#[derive(Clone, Debug)]
pub struct JitSource {
    /// Process id.
    pub pid: u32,
    /// Its name, if recorded.
    pub comm: Option<String>,
    /// The jitdump found, or the paths tried.
    pub jitdump: Result<PathBuf, Vec<PathBuf>>,
    /// The perf map found, or the paths tried.
    pub perf_map: Result<PathBuf, Vec<PathBuf>>,
}

/// The JIT metadata of every process of `perf` with a jitdump marker or anonymous executable
/// memory, searched as [`feed`] searches it (without loading it).
pub fn jit_sources(perf: &PerfData<'_>, search: &JitSearch) -> Vec<JitSource> {
    let Ok((processes, _)) = profkit_perf::jit_processes(perf) else {
        return Vec::new();
    };
    processes
        .into_iter()
        .filter_map(|p| {
            let pid = u32::try_from(p.pid).ok()?;
            let marker = p.jitdumps.first().map(|m| PathBuf::from(&m.path));
            Some(JitSource {
                pid,
                comm: p.comm.clone(),
                jitdump: search.jitdump(pid, marker.as_deref()),
                perf_map: search.perf_map(pid),
            })
        })
        .collect()
}

fn trace_info<'a>(
    functions: &'a FunctionTable,
    origin: Option<u64>,
    name: &'a str,
    perf: &'a PerfData<'_>,
    attr: Option<usize>,
) -> TraceInfo<'a> {
    let attr = attr.and_then(|i| perf.attrs().get(i));
    TraceInfo {
        format: "perf",
        functions,
        clock: crate::Clock::NANOSECONDS,
        origin_ns: origin.unwrap_or(0),
        name,
        samples: attr.map(sample_weight),
        origin_unix_ns: origin.zip(attr).and_then(|(o, a)| unix_time(perf, a, o)),
    }
}

/// What the samples of `attr`'s event weigh: time on a CPU in ns (cpu-clock, task-clock: the
/// period is ns, a frequency's mean period is 1 s / frequency), else the event's count.
fn sample_weight(attr: &profkit_perf::Attr) -> crate::events::SampleWeight<'_> {
    let time = attr.period_is_time();
    let period = match (attr.freq, time) {
        (false, _) => attr.sample_period_or_freq,
        (true, true) => 1_000_000_000_u64
            .checked_div(attr.sample_period_or_freq)
            .unwrap_or(0),
        (true, false) => 0,
    };
    crate::events::SampleWeight {
        kind: if time {
            "cpu"
        } else {
            attr.name.as_deref().unwrap_or("events")
        },
        unit: if time { "nanoseconds" } else { "count" },
        period,
    }
}

/// `t` on the samples' clock as UNIX time: by perf's CLOCK_DATA (the wall clock and the
/// recording clock read at one instant) when it is of the samples' clock, or as it is when the
/// samples were taken on CLOCK_REALTIME.
fn unix_time(perf: &PerfData<'_>, attr: &profkit_perf::Attr, t: u64) -> Option<u64> {
    const CLOCK_REALTIME: u32 = 0;
    let clockid = attr.use_clockid.then_some(attr.clockid).flatten()?;
    if clockid == CLOCK_REALTIME {
        return Some(t);
    }
    let c = perf
        .features()
        .clock_data
        .filter(|c| c.clockid == clockid)?;
    let unix = i128::from(c.wall_clock_ns) + i128::from(t) - i128::from(c.clockid_time_ns);
    u64::try_from(unix).ok()
}

fn invalid(e: profkit_perf::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// The kernel's symbols for a recording: `--kallsyms`, the build-id cache's copy, or
/// `/proc/kallsyms` of the same kernel; and whether the walk must still check, at the
/// recording's kernel mapping, that `_text` is where the local kallsyms put it.
///
/// `/proc/kallsyms` names the *running* kernel: it is used for a recording only when the
/// recording proves it was made on it — by the kernel's build id, or, when perf recorded none,
/// by the same release and hostname and then the same `_text` address (the same boot).
/// Otherwise kernel frames stay `[kernel]`, with a note saying why and how to pass the
/// recording machine's kallsyms.
fn kernel_names(meta: &Meta, opts: &PerfOptions, binaries: &Binaries) -> (KernelNames, bool) {
    let kernel_id = meta
        .features
        .build_ids
        .iter()
        .find(|b| b.is_kernel())
        .map(|b| BuildId::new(&b.build_id));
    let path = match &opts.kallsyms {
        Some(p) => p.clone(),
        None => match binaries.kallsyms_path(kernel_id.as_ref()) {
            Ok(p) => p,
            Err(why) => return (KernelNames::Unavailable(why), false),
        },
    };
    let unproven =
        kernel_id.is_none() && opts.kallsyms.is_none() && path == Path::new("/proc/kallsyms");
    if unproven {
        if let Some(why) = foreign_kernel(&meta.features) {
            return (
                KernelNames::Unavailable(format!(
                    "kernel frames are [kernel]: the recording names no kernel build id and {why}, so this machine's /proc/kallsyms would name them wrongly; pass that machine's kallsyms with --kallsyms FILE"
                )),
                false,
            );
        }
    }
    let names = KernelNames::load_in_background(move || match Kallsyms::from_file(&path) {
        Ok(k) if k.is_restricted() => KernelNames::Unavailable(format!(
            "{}: addresses hidden (kptr_restrict); kernel frames are [kernel]",
            path.display()
        )),
        Ok(k) => KernelNames::Kallsyms(k, path.display().to_string()),
        Err(e) => KernelNames::Unavailable(e.to_string()),
    });
    (names, unproven)
}

/// Why a recording without a kernel build id was not made on this machine's running kernel
/// (its release or hostname differ, or it records neither), or `None`.
fn foreign_kernel(f: &profkit_perf::Features) -> Option<String> {
    let here = |what: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{what}"))
            .ok()
            .map(|s| s.trim().to_string())
    };
    match (&f.os_release, &f.hostname) {
        (None, None) => Some("records neither its kernel release nor its host".into()),
        (Some(r), _) if Some(r.as_str()) != here("osrelease").as_deref() => Some(format!(
            "was made on kernel {r} (this one is {})",
            here("osrelease").unwrap_or_else(|| "unknown".into())
        )),
        (_, Some(h)) if Some(h.as_str()) != here("hostname").as_deref() => Some(format!(
            "was made on host {h} (this is {})",
            here("hostname").unwrap_or_else(|| "unknown".into())
        )),
        _ => None,
    }
}

impl Walk {
    fn new(meta: &Meta, opts: &PerfOptions, attr: Option<usize>) -> Walk {
        let mut binaries = Binaries::new();
        for d in &opts.binary_dirs {
            binaries.add_search_dir(d.clone());
        }
        let (kernel, kernel_text_check) = kernel_names(meta, opts, &binaries);
        // perf lists the build id of every file its samples hit: open those binaries (and
        // their DWARF) on other threads now, while the walk reads the start of the recording
        // and the jitdump loads, rather than at their MMAP records (libc's come after the
        // first sample, which waits for the jitdump).
        for b in &meta.features.build_ids {
            let path = Path::new(&b.path);
            if !b.is_kernel()
                && !profkit_native::paths::is_pseudo(&b.path)
                && !profkit_native::paths::is_anonymous(path)
            {
                binaries.prefetch(path, Some(&BuildId::new(&b.build_id)));
            }
        }
        let attrs = &meta.attrs;
        let clock_ok = attrs
            .get(attr.unwrap_or(0))
            .is_some_and(|a| a.use_clockid && a.clockid == Some(1));
        let build_ids = meta
            .features
            .build_ids
            .iter()
            .map(|b| (b.path.clone().into_bytes(), b.build_id.clone()))
            .collect();
        let report = PerfReport {
            event: attr.and_then(|i| attrs.get(i)).and_then(|a| a.name.clone()),
            clock: if clock_ok {
                ClockCheck::Monotonic
            } else {
                ClockCheck::PerfClock
            },
            ..PerfReport::default()
        };
        Walk {
            build_ids,
            report,
            kernel_text_check,
            ..Walk::empty(
                Arc::new(opts.clone()),
                Symbols::new(binaries, kernel),
                clock_ok,
                attr,
            )
        }
    }

    /// The helper's walk (see `split.rs`): the same options and event, the same binaries and
    /// kernel names, no processes until it is given some.
    fn second(&self) -> Walk {
        Walk {
            origin: self.origin,
            ..Walk::empty(
                self.opts.clone(),
                self.symbols.sibling(),
                self.clock_ok,
                self.attr,
            )
        }
    }

    /// A walk that has seen nothing yet.
    fn empty(
        opts: Arc<PerfOptions>,
        symbols: Symbols,
        clock_ok: bool,
        attr: Option<usize>,
    ) -> Walk {
        Walk {
            kernel_text_check: false,
            opts,
            symbols,
            processes: HashMap::default(),
            threads: HashMap::default(),
            thread_names: HashMap::default(),
            build_ids: HashMap::default(),
            clock_ok,
            origin: None,
            attr,
            report: PerfReport::default(),
            summary: FeedSummary::default(),
            expiries: HashMap::default(),
            previous: Vec::new(),
            pending_maps: Vec::new(),
            chains: Vec::new(),
            chain_reuse: None,
            from_memo: None,
            addrs: Vec::new(),
            unwound: Vec::new(),
            split: None,
        }
    }

    /// Takes the helper's processes and counts back (before the report).
    fn absorb(&mut self, second: Walk) {
        for (pid, mut process) in second.processes {
            if let Some(mine) = self.processes.get_mut(&pid) {
                // This walk kept its name up to date.
                process.comm = mine.comm.take();
                process.declared = mine.declared;
            }
            self.processes.insert(pid, process);
        }
        let (mine, theirs) = (&mut self.report, second.report);
        mine.fp_cut.samples += theirs.fp_cut.samples;
        mine.fp_cut.frames += theirs.fp_cut.frames;
        mine.warnings.extend(theirs.warnings);
        self.summary.other_events += second.summary.other_events;
        self.summary.problems.extend(second.summary.problems);
        self.symbols.count_functions_of(&second.symbols);
        profkit_common::release::release_in_background((second.symbols, second.previous));
    }

    /// Process `parent` forked `child` (a new process: its mappings are its parent's).
    fn fork(&mut self, parent: u32, child: u32) {
        if child == parent || self.processes.contains_key(&child) {
            return;
        }
        let copy = self.processes.get(&parent).map(Process::fork);
        let mut process = copy.unwrap_or_default();
        if let Some(split) = self.split.as_mut() {
            if self.processes.get(&parent).is_some_and(|p| p.remote) {
                // The helper holds the parent's mappings: it forks it there.
                split.change(split::Change::Fork { parent, child });
                process.remote = true;
            }
        }
        self.processes.insert(child, process);
    }

    /// The dumps the framing check saw mapped: their loading starts now, not at the marker's
    /// record (a runtime's first samples often come before it maps its dump).
    fn load_marked_jitdumps(&mut self, perf: &PerfData<'_>) {
        for (pid, path) in perf.jitdump_markers() {
            let path = PathBuf::from(String::from_utf8_lossy(path).into_owned());
            self.jit_marker(*pid, path);
        }
    }

    fn mmap(&mut self, m: &Mmap<'_>) {
        if self.kernel_text_check && m.path.starts_with(b"[kernel.kallsyms]") {
            // perf records the kernel image's mapping with pgoff = the address of `_text`.
            self.kernel_text_check = false;
            symbols::lock(&self.symbols.kernel).check_text(m.pgoff);
        }
        let Ok(pid) = u32::try_from(m.pid) else {
            return; // the kernel's own mappings (pid -1): kallsyms names kernel code
        };
        if m.is_kernel() || m.len == 0 {
            return;
        }
        let path = String::from_utf8_lossy(m.path);
        let kind = if m.jitdump_pid().is_some() {
            MapKind::JitMarker
        } else if m.is_anonymous() {
            MapKind::Anon
        } else if profkit_native::paths::is_pseudo(&path) {
            MapKind::Special
        } else {
            MapKind::File
        };
        if kind == MapKind::JitMarker {
            self.jit_marker(pid, PathBuf::from(&*path));
            return;
        }
        let process = self.processes.entry(pid).or_default();
        let build_id = m
            .build_id
            .as_ref()
            .map(|b| b.as_bytes().to_vec())
            .or_else(|| self.build_ids.get(m.path).cloned());
        // Opened (symbols, DWARF) on another thread before the first sample needs it. When
        // perf listed the files its samples hit, the others are opened only if a frame needs
        // them: node's libm, libdl and libpthread were ~5 ms of the start's CPU, for no frame.
        let listed = self.build_ids.is_empty() || self.build_ids.contains_key(m.path);
        if kind == MapKind::File && m.executable && listed {
            let id = build_id.as_deref().map(BuildId::new);
            symbols::lock(&self.symbols.binaries).prefetch(Path::new(&*path), id.as_ref());
        }
        let told = m.executable && matches!(kind, MapKind::File | MapKind::Special);
        let map = Map {
            end: m.end(),
            pgoff: m.pgoff,
            path: Arc::from(&*path),
            build_id,
            kind,
            executable: m.executable,
            binary: None,
        };
        if told {
            self.pending_maps.push((pid, m.start, map.clone()));
        }
        match self.split.as_mut() {
            Some(split) if process.remote => split.change(split::Change::Map(pid, m.start, map)),
            _ => process.map(m.start, map),
        }
    }

    /// Tells the sink the executable mappings seen since the last call.
    fn flush_maps(&mut self, sink: &mut dyn EventSink) -> io::Result<()> {
        // Called before every sample: most find nothing to tell.
        if self.pending_maps.is_empty() {
            return Ok(());
        }
        for (pid, start, map) in self.pending_maps.drain(..) {
            sink.mapping(&MappingInfo {
                pid,
                start,
                end: map.end,
                file_offset: map.pgoff,
                path: &map.path,
                build_id: map.build_id.as_deref(),
            })?;
        }
        Ok(())
    }

    /// Process `pid` mapped its jitdump `marker`: the dump is loaded on another thread while
    /// the events before its first sample are read (or, for a marker the framing check saw,
    /// from the start of the walk).
    fn jit_marker(&mut self, pid: u32, marker: PathBuf) {
        let process = self.processes.entry(pid).or_default();
        if let (true, Some(split)) = (process.remote, self.split.as_mut()) {
            split.change(split::Change::JitMarker(pid, marker));
            return;
        }
        if process.jit.marker.as_ref() == Some(&marker) || process.jit.dump.is_some() {
            return;
        }
        let search = self.opts.jit.clone();
        let m = marker.clone();
        process.jit.loading = std::thread::Builder::new()
            .name("jitdump".into())
            .spawn(move || search_jitdump(&search, pid, &m))
            .ok();
        process.jit.marker = Some(marker);
        process.jit.searched = false;
    }

    fn sample(&mut self, s: &PerfSample<'_>, sink: &mut dyn EventSink) -> io::Result<()> {
        self.report.samples += 1;
        if self.attr.is_some_and(|a| a != s.attr_index) {
            self.report.other_event_samples += 1;
            return Ok(());
        }
        let pid = s.pid.and_then(|p| u32::try_from(p).ok()).unwrap_or(0);
        let tid = s.tid.and_then(|t| u32::try_from(t).ok()).unwrap_or(pid);
        let (thread, remote) = self.declare(pid, tid, sink)?;
        if let Some(split) = self.split.as_mut() {
            if remote {
                return split.sample(thread, s, sink);
            }
            split.named[0] += 1;
        }
        self.name(thread, s, sink)
    }

    /// Names sample `s` of thread index `thread` and hands it to `sink`.
    fn name(
        &mut self,
        thread: u32,
        s: &PerfSample<'_>,
        sink: &mut dyn EventSink,
    ) -> io::Result<()> {
        let pid = s.pid.and_then(|p| u32::try_from(p).ok()).unwrap_or(0);
        let time = s.time.unwrap_or(0);
        let jit_time = self.jit_time(pid, time);
        self.addresses(pid, thread, s, jit_time);

        let Some(process) = self.processes.get_mut(&pid) else {
            return Ok(());
        };
        // The thread's previous stack: its outer frames are usually this one's too, and
        // their answers still hold if the mappings did not change and the JIT code named is
        // still live. Only the frames below the common part are looked up.
        let slot = thread as usize % chain::MEMO_SLOTS;
        if self.previous.len() <= slot {
            self.previous.resize_with(slot + 1, PreviousStack::default);
        }
        let Some(prev) = self.previous.get_mut(slot) else {
            return Ok(());
        };
        if (prev.thread, prev.generation) != (thread, process.generation) {
            prev.truncate(0);
            (prev.thread, prev.generation) = (thread, process.generation);
        }
        let now = jit_time.unwrap_or(0);
        let addrs = match self.from_memo.and_then(|t| self.chains.get(t)) {
            Some(memo) => memo.out(),
            None => &self.addrs,
        };
        let n = addrs.len();
        // The outermost addresses the frame-pointer walk took from its last output are the
        // previous stack's, when that stack is that output: only their answers' times are asked
        // (by bisection: `min_until` does not grow); the comparison goes on after them.
        let known = match self.chain_reuse {
            Some(r) if prev.chain_call == Some(r.previous) => {
                r.reused.min(prev.answered.len()).min(n)
            }
            _ => 0,
        };
        let live = prev
            .answered
            .get(..known)
            .unwrap_or_default()
            .partition_point(|a| now < a.min_until);
        let common = if live < known {
            live
        } else {
            // Past the `known` (sliced off, not stepped over).
            let new = addrs.get(known..).unwrap_or_default();
            known
                + prev
                    .answered
                    .get(known..)
                    .unwrap_or_default()
                    .iter()
                    .zip(new)
                    .take_while(|(p, a)| p.addr == **a && now < p.resolved.until)
                    .count()
        };
        // Their frames are kept too: only the frames below them are expanded again.
        prev.truncate(common);
        let shared = prev.stack.len();
        if process.answers_generation != process.generation {
            process.clear_answers();
            process.answers_generation = process.generation;
        }
        for &(addr, kernel) in addrs.iter().skip(common) {
            let r = match process.answers(kernel).get(&addr) {
                Some(r) if now < r.until => *r,
                _ => {
                    let r = if kernel {
                        Resolved {
                            frames: self.symbols.kernel(addr, sink)?,
                            origin: Origin::Kernel,
                            until: u64::MAX,
                        }
                    } else {
                        self.symbols.user(pid, process, addr, jit_time, sink)?
                    };
                    if now < r.until {
                        process.answers(kernel).insert(addr, r);
                    }
                    r
                }
            };
            let min_until = prev
                .answered
                .last()
                .map_or(r.until, |a| a.min_until.min(r.until));
            // Outermost first; an address's inline frames come innermost first.
            for &(id, line) in self.symbols.frames(r.frames).iter().rev() {
                prev.stack.push(id);
                prev.lines.push(line);
            }
            prev.answered.push(Answered {
                addr: (addr, kernel),
                resolved: r,
                min_until,
                end: prev.stack.len(),
            });
        }
        let leaf = prev.answered.last().map(|a| a.resolved.origin);
        process.samples += 1;
        match leaf {
            Some(Origin::Jit) => process.jit_samples += 1,
            Some(Origin::UnnamedJit) => {
                process.jit_samples += 1;
                process.unnamed_jit_samples += 1;
            }
            _ => {}
        }
        prev.chain_call = self.chain_reuse.map(|r| r.this);
        self.summary.other_events += 1;
        sink.sample(&Sample {
            thread,
            time: time.saturating_sub(self.origin.unwrap_or(0)),
            stack: &prev.stack,
            lines: &prev.lines,
            weight: s.period.unwrap_or(1).max(1),
            shared,
        })
    }

    /// The thread index of (pid, tid), declaring the process and thread on first sight, and
    /// whether the helper names the thread's samples.
    fn declare(&mut self, pid: u32, tid: u32, sink: &mut dyn EventSink) -> io::Result<(u32, bool)> {
        if let Some(&known) = self.threads.get(&(pid, tid)) {
            return Ok(known);
        }
        let process = self.processes.entry(pid).or_default();
        let pname = process.comm.clone().unwrap_or_else(|| format!("pid {pid}"));
        if !process.declared {
            process.declared = true;
            sink.process(&ProcessInfo { pid, name: &pname })?;
            self.give_away(pid);
        }
        let remote = self.processes.get(&pid).is_some_and(|p| p.remote);
        let index = self.threads.len() as u32;
        self.threads.insert((pid, tid), (index, remote));
        self.summary.threads += 1;
        let tname = self
            .thread_names
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| format!("thread {tid}"));
        sink.thread(&ThreadInfo {
            index,
            pid,
            tid: u64::from(tid),
            name: &tname,
        })?;
        Ok((index, remote))
    }

    /// At a process's first sample: gives it to the helper if that one named fewer samples so
    /// far (see `split.rs`).
    fn give_away(&mut self, pid: u32) {
        let Some(split) = self.split.as_mut() else {
            return;
        };
        let Some(process) = self.processes.get_mut(&pid) else {
            return;
        };
        if process.remote || split.named[1] >= split.named[0] {
            return;
        }
        let mut given = std::mem::take(process);
        process.comm = given.comm.clone();
        process.declared = true;
        process.remote = true;
        given.declared = true;
        split.change(split::Change::Adopt(pid, Box::new(given), self.origin));
    }

    /// Looks up the process's jitdump and perf map, once (again after a new marker).
    fn load_jit(&mut self, pid: u32) {
        let Some(process) = self.processes.get_mut(&pid) else {
            return;
        };
        if process.jit.searched {
            return;
        }
        process.jit.searched = true;
        let search = &self.opts.jit;
        if process.jit.dump.is_none() {
            let found = match process.jit.loading.take().map(|h| h.join()) {
                Some(Ok(found)) => found,
                // A load that panicked (it cannot: the reader does not) is searched again.
                _ => search_jitdump(
                    search,
                    pid,
                    process.jit.marker.as_deref().unwrap_or(Path::new("")),
                ),
            };
            match found {
                Ok(dump) => {
                    process.jit.dump = Some(dump);
                    process.layout += 1;
                    // Native answers cached without the dump may be JIT code now.
                    process.generation += 1;
                    process.jit.dump_tried.clear();
                    process.jit.dump_error = None;
                    process.jit_cursor = 0;
                }
                Err(Ok(e)) => process.jit.dump_error = Some(e),
                Err(Err(tried)) => process.jit.dump_tried = tried,
            }
        }
        if process.jit.map.is_none() {
            match search.perf_map(pid) {
                Ok(path) => match jit::load_perf_map(&path, search.any_map_owner) {
                    Ok(map) => {
                        process.jit.map = Some(map);
                        process.layout += 1;
                        process.jit.map_tried.clear();
                    }
                    Err(e) => self.report.warnings.push(e),
                },
                Err(tried) => process.jit.map_tried = tried,
            }
        }
    }

    /// The time to look JIT code up at: the sample's, when the clocks match. The process's JIT
    /// metadata is looked up first if it was not yet (one probe of the processes when it was).
    fn jit_time(&mut self, pid: u32, time: u64) -> Option<u64> {
        let clock_ok = self.clock_ok;
        let at =
            |dump: Option<&jit::LoadedDump>| dump.filter(|d| clock_ok && d.monotonic).map(|_| time);
        match self.processes.get(&pid) {
            None => return None,
            Some(p) if p.jit.searched => return at(p.jit.dump.as_ref()),
            Some(_) => {}
        }
        self.load_jit(pid);
        at(self.processes.get(&pid)?.jit.dump.as_ref())
    }

    /// Finds the sample's addresses, outermost first: (lookup address, is kernel), in the
    /// memo's output (`from_memo`) or in `addrs`.
    fn addresses(&mut self, pid: u32, thread: u32, s: &PerfSample<'_>, jit_time: Option<u64>) {
        self.addrs.clear();
        self.chain_reuse = None;
        self.from_memo = None;
        let dwarf = s.user_regs.as_ref().zip(s.user_stack.as_ref());
        match (&s.callchain, dwarf) {
            (Some(chain), None) => {
                let process = self.processes.get(&pid);
                let layout = chain::Layout {
                    pid,
                    process,
                    dump: process.and_then(|p| p.jit.dump.as_ref()),
                    map: process.and_then(|p| p.jit.map.as_ref()),
                    jit_time,
                };
                let t = thread as usize % chain::MEMO_SLOTS;
                if self.chains.len() <= t {
                    self.chains.resize_with(t + 1, Default::default);
                }
                let Some(memo) = self.chains.get_mut(t) else {
                    return;
                };
                if let Some(n) = memo.addresses(chain, &layout) {
                    self.report.fp_cut.samples += 1;
                    self.report.fp_cut.frames += n;
                }
                // The memo's output is read in place (it keeps the outer part of its last).
                if !memo.out().is_empty() {
                    self.chain_reuse = Some(memo.reuse());
                    self.from_memo = Some(t);
                    return;
                }
            }
            (chain, Some((regs, stack))) => {
                if let Some(chain) = chain {
                    chain::ChainMemo::kernel_addresses(chain, &mut self.addrs);
                }
                self.unwound_addresses(pid, regs, stack, jit_time);
                self.addrs.reverse();
                return;
            }
            (None, None) => {}
        }
        if self.addrs.is_empty() {
            if let Some(ip) = s.ip {
                self.addrs.push((ip, s.in_kernel()));
            }
        }
        self.addrs.reverse();
    }

    /// Pushes a `--call-graph dwarf` sample's user pc and the return addresses unwound from its
    /// copy of the stack onto `self.addrs`, innermost first.
    fn unwound_addresses(
        &mut self,
        pid: u32,
        regs: &profkit_perf::UserRegs<'_>,
        stack: &profkit_perf::UserStack<'_>,
        jit_time: Option<u64>,
    ) {
        let values: Vec<u64> = regs.iter().map(|(_, v)| v).collect();
        let Some(regs) = profkit_native::UserRegs::from_perf_x86_64(regs.mask, &values) else {
            return;
        };
        self.addrs.push((regs.ip, false));
        self.sync_unwinder(pid, jit_time);
        let Some(unwinder) = self
            .processes
            .get_mut(&pid)
            .and_then(|p| p.unwinder.as_mut())
        else {
            return;
        };
        self.unwound.clear();
        unwinder.unwind(regs, stack.valid(), &mut self.unwound);
        // A "return address" in the thread's stack ends the stack: where CFI is missing
        // (crti's `_init`), the unwinder's frame-pointer fallback can read a stack address
        // as one, and perf's unwinding stops there. The stack is taken as the MiB above the
        // sample's sp, less what a mapping or JIT code covers (the vdso may sit just above
        // it); other unmapped addresses stay (V8 code space is not always mmapped executable).
        if let Some(process) = self.processes.get(&pid) {
            let dump = process.jit.dump.as_ref();
            let in_stack = |a: u64| {
                a.checked_sub(regs.sp).is_some_and(|d| d < STACK_GUESS)
                    && process.find(a).is_none()
                    && dump.is_none_or(|d| d.map.region_at(a, None).is_none())
            };
            // Nor can a user return address be above user space (x86-64: below 1 << 47):
            // such a value is a fill pattern read from the stack (glibc's and sanitizers'
            // 0xaaaa…, 0xdead…), not a frame.
            let impossible = |a: u64| a >= USER_SPACE_END;
            let keep = self
                .unwound
                .iter()
                .take_while(|&&a| !in_stack(a) && !impossible(a))
                .count();
            self.unwound.truncate(keep);
        }
        self.report.unwind.samples += 1;
        self.report.unwind.frames += self.unwound.len() as u64;
        let process = self.processes.get(&pid);
        let dump = process.and_then(|p| p.jit.dump.as_ref());
        let map = process.and_then(|p| p.jit.map.as_ref());
        self.addrs.extend(self.unwound.iter().map(|&ra| {
            if starts_jit_function(dump, map, ra, jit_time) {
                (ra, false)
            } else {
                (ra.saturating_sub(1), false)
            }
        }));
    }

    /// Brings the process's unwinder up to date: the binaries mapped now, the JIT functions
    /// live at the sample's time.
    fn sync_unwinder(&mut self, pid: u32, jit_time: Option<u64>) {
        let Some(process) = self.processes.get_mut(&pid) else {
            return;
        };
        if process.unwinder.is_none() || process.unwinder_generation != process.generation {
            // Mappings changed: start again from the binaries (rare: start-up and dlopen).
            let mut unwinder = Unwinder::new();
            let starts: Vec<u64> = process
                .maps
                .iter()
                .filter(|(_, m)| m.kind == MapKind::File && m.executable)
                .map(|(s, _)| s)
                .collect();
            for start in starts {
                if let Some((bin, mapping)) = self.symbols.binary_of(process, start) {
                    unwinder.add_binary(&bin, &mapping);
                }
            }
            process.unwinder = Some(unwinder);
            process.unwinder_generation = process.generation;
            process.jit_cursor = 0;
            process.jit_modules.clear();
            self.expiries.remove(&pid);
        }
        let Some(dump) = &process.jit.dump else {
            return;
        };
        let Some(unwinder) = process.unwinder.as_mut() else {
            return;
        };
        // Without matching clocks, every region with unwinding info that is live at the end.
        let now = jit_time.unwrap_or(u64::MAX);
        let heap = self.expiries.entry(pid).or_default();
        while let Some(Expiry(std::cmp::Reverse(end), idx)) = heap.peek() {
            if *end > now {
                break;
            }
            if let Some(start) = process.jit_modules.remove(idx) {
                unwinder.remove(start);
            }
            heap.pop();
        }
        let regions = dump.map.regions();
        while let Some(r) = regions.get(process.jit_cursor) {
            if jit_time.is_some() && r.load_time > now {
                break;
            }
            let idx = process.jit_cursor;
            process.jit_cursor += 1;
            let end_time = r.end_time.unwrap_or(u64::MAX);
            if end_time <= now {
                continue;
            }
            let Some(u) = &r.unwind else {
                continue;
            };
            unwinder.remove_overlapping(r.start, r.end());
            process
                .jit_modules
                .retain(|_, s| *s < r.start || *s >= r.end());
            let info = profkit_native::unwind::JitUnwindInfo {
                code_addr: r.start,
                code_size: r.size,
                eh_frame: &u.eh_frame,
                eh_frame_hdr: &u.eh_frame_hdr,
            };
            match unwinder.add_jit(&r.name, &info) {
                Ok(_) => {
                    process.jit_modules.insert(idx, r.start);
                    if end_time != u64::MAX {
                        heap.push(Expiry(std::cmp::Reverse(end_time), idx));
                    }
                    self.report.unwind.jit_modules += 1;
                }
                Err(_) => self.report.unwind.jit_unusable += 1,
            }
        }
    }

    fn finish(mut self) -> (FeedSummary, PerfReport) {
        let mut pids: Vec<u32> = self.processes.keys().copied().collect();
        pids.sort_unstable();
        for pid in pids {
            let Some(p) = self.processes.get(&pid) else {
                continue;
            };
            if p.samples == 0 {
                continue;
            }
            self.report.processes.push(ProcessReport::of(pid, p));
        }
        self.report.missing_binaries = symbols::lock(&self.symbols.binaries)
            .problems()
            .iter()
            .map(|p| p.to_string())
            .collect();
        self.report.functions = self.symbols.functions();
        self.report.kernel = symbols::lock(&self.symbols.kernel).describe();
        self.report.problems = self.summary.problems.clone();
        // Freeing the code maps, binaries (unmapping what was read) and caches takes as long
        // as a tenth of the walk; the caller's writer finishes meanwhile.
        let processes = std::mem::take(&mut self.processes);
        let symbols = std::mem::replace(
            &mut self.symbols,
            Symbols::new(Binaries::empty(), KernelNames::Unavailable(String::new())),
        );
        let previous = std::mem::take(&mut self.previous);
        profkit_common::release::release_in_background((processes, symbols, previous));
        (self.summary, self.report)
    }
}

#[cfg(test)]
mod tests {
    use super::{jit, plausible_user_address, starts_jit_function};
    use crate::codemap::CodeMap;

    #[test]
    fn a_return_address_at_a_jit_functions_entry_names_that_function() {
        // Erlang: `f-CodeInfoPrologue` at 0x1000..0x1030, `f` from 0x1030; a bottom frame
        // returns to 0x1030, f's first byte.
        let map = CodeMap::from_entries(
            7,
            [
                (0x1000, 0x30, "f-CodeInfoPrologue".to_string(), 0),
                (0x1030, 0x70, "f".to_string(), 0),
            ],
        );
        let dump = jit::LoadedDump::without_code("jit-7.dump".into(), 7, 0, map);
        assert!(starts_jit_function(Some(&dump), None, 0x1030, Some(5)));
        assert!(!starts_jit_function(Some(&dump), None, 0x1031, Some(5)));
        assert!(!starts_jit_function(Some(&dump), None, 0x2000, Some(5)));
        assert!(!starts_jit_function(None, None, 0x1030, None));
    }

    #[test]
    fn what_a_frame_pointer_walk_reads_past_its_chain_is_no_user_address() {
        // The node -g fixture's broken chains: ASCII text, 0, and a stack word.
        for bad in [
            0x6431_3437_3334_782f,
            0,
            0x001f_0f90_ffff_fdcc,
            0xfff,
            u64::MAX,
        ] {
            assert!(!plausible_user_address(bad), "{bad:#x}");
        }
        for good in [
            0x5555_5555_4000,
            0x7f9f_a800_6c89,
            0x0260_0000,
            0x7fff_ffff_ffff,
        ] {
            assert!(plausible_user_address(good), "{good:#x}");
        }
    }
}
