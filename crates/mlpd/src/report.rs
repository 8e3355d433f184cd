//! mprof-report's sections, computed in one parallel pass and printed as text close to
//! mprof-report 6.8 or as JSON (schema `profkit.mlpd-report/1`).
//!
//! The pass ([`engine`]) decodes buffers on worker threads and stitches them in file order:
//! calls are replayed inside each buffer against an unknown inherited stack, so one busy Mono
//! thread still keeps every core busy; a stream (gzip, a pipe) is read one buffer at a time,
//! so memory does not grow with the file.
//!
//! Differences from mprof-report (docs/mono.md): forward references (vtables, classes, methods
//! defined later in the file) bind at the end, so no allocation stays "unresolved"; a method's
//! Total counts only its outermost activation (recursion is not counted several times); a leave
//! that matches a deeper frame closes the frames above it instead of being dropped; `--thread`
//! filters every event; monitor waits and traces count each contention once.

mod engine;

use std::collections::HashMap;
use std::io::{self, Read, Write};

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::header::Header;
use crate::raw::*;
use crate::read::{ClassRef, File};
use crate::stream::StreamReader;

use engine::{Job, Target, Traces, Tracked};

/// The report sections, in mprof-report's order.
pub const SECTIONS: [&str; 15] = [
    "header",
    "jit",
    "gc",
    "sample",
    "alloc",
    "call",
    "metadata",
    "exception",
    "monitor",
    "thread",
    "domain",
    "context",
    "heapshot",
    "counters",
    "stats",
];

/// How the call section is sorted (`--method-sort`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MethodSort {
    /// By inclusive time (mprof-report's default).
    #[default]
    Total,
    /// By self time.
    SelfTime,
    /// By number of calls.
    Calls,
}

/// How allocations and heap-shot classes are sorted (`--alloc-sort`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AllocSort {
    /// By bytes (mprof-report's default).
    #[default]
    Bytes,
    /// By object count.
    Count,
}

/// `--find`: track the objects allocated with at least `min_size` bytes and/or whose class
/// name contains `name` (mprof-report's `S:size` and `T:name`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Find {
    /// Minimum size (0: any).
    pub min_size: u64,
    /// Part of the class name.
    pub name: Option<String>,
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct Options {
    /// Only this thread's buffers.
    pub thread: Option<u64>,
    /// Only events in this window (ns since the first buffer's time base).
    pub time: Option<(u64, u64)>,
    /// Decode on several threads.
    pub parallel: bool,
    /// Collect backtraces (`--traces`): callers of each method, allocation, throw, lock
    /// contention and GC handle sites, and heap-shot references.
    pub traces: bool,
    /// Frames kept per backtrace (`--maxframes`, 6 by default as in mprof-report).
    pub maxframes: usize,
    /// Call section order.
    pub method_sort: MethodSort,
    /// Allocation and heap-shot order.
    pub alloc_sort: AllocSort,
    /// Object addresses to track (`--track`).
    pub track: Vec<u64>,
    /// Objects to find and track (`--find`).
    pub find: Option<Find>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            thread: None,
            time: None,
            parallel: false,
            traces: false,
            maxframes: 6,
            method_sort: MethodSort::Total,
            alloc_sort: AllocSort::Bytes,
            track: Vec::new(),
            find: None,
        }
    }
}

/// Per-method call statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MethodStats {
    /// Enters.
    pub calls: u64,
    /// Time not in callees (ns).
    pub self_ns: u64,
    /// Inclusive time of outermost activations (recursion counted once).
    pub total_ns: u64,
    /// Inclusive time summed over every activation (mprof-report's Total).
    pub total_all_ns: u64,
}

/// A backtrace and how often it was seen (calls, bytes, throws, contentions, handles).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Calls, bytes, throws, contentions or handles from this backtrace.
    pub count: u64,
    /// Method names, in the order mprof-report prints them.
    pub frames: Vec<String>,
}

/// One heap shot.
#[derive(Clone, Debug, Default)]
pub struct HeapShot {
    /// Time since the first buffer (ns).
    pub time_ns: u64,
    /// Total bytes.
    pub size: u64,
    /// Objects.
    pub objects: u64,
    /// Roots.
    pub roots: u64,
    /// Per class: (name, bytes, count), in the report's order.
    pub classes: Vec<(String, u64, u64)>,
    /// With traces: per class, (root references, pinning root references).
    pub root_refs: HashMap<String, (u64, u64)>,
    /// With traces: per class, the classes whose objects reference it, by references.
    pub refs: HashMap<String, Vec<(String, u64)>>,
}

/// A counter's last value.
#[derive(Clone, Debug, PartialEq)]
pub struct Counter {
    /// Section mask.
    pub section: u64,
    /// Name.
    pub name: String,
    /// Last value as text.
    pub value: String,
}

/// What happened to a tracked object (`--track`, `--find`), in file order.
#[derive(Clone, Debug, PartialEq)]
pub enum TrackEvent {
    /// It was allocated.
    Created {
        /// Object address.
        obj: u64,
        /// Its class.
        class: String,
        /// Its size.
        size: u64,
        /// Seconds since the first buffer.
        secs: f64,
        /// Backtrace (with traces).
        frames: Vec<String>,
    },
    /// A GC handle was created for it.
    Handle {
        /// Object address.
        obj: u64,
        /// The handle.
        handle: u64,
        /// Seconds since the first buffer.
        secs: f64,
        /// Backtrace (with traces).
        frames: Vec<String>,
    },
    /// It moved to `to`.
    MovedTo {
        /// Object address.
        obj: u64,
        /// New address.
        to: u64,
    },
    /// It moved here from `from`.
    MovedFrom {
        /// Object address.
        obj: u64,
        /// Old address.
        from: u64,
    },
    /// A heap shot saw a reference to it.
    Referenced {
        /// Object address.
        obj: u64,
        /// The referencing object.
        parent: u64,
        /// The referencing object's class.
        class: String,
    },
}

/// Backtraces per report entry (with [`Options::traces`]).
#[derive(Clone, Debug, Default)]
pub struct ReportTraces {
    /// Callers of each method, in the order of [`Report::calls`].
    pub calls: Vec<Vec<Trace>>,
    /// Allocation sites per class name (counts are bytes).
    pub alloc: HashMap<String, Vec<Trace>>,
    /// Throw sites.
    pub throws: Vec<Trace>,
    /// Contention sites per lock object.
    pub monitors: HashMap<u64, Vec<Trace>>,
    /// Per handle type: (creation sites, destruction sites).
    pub handles: [(Vec<Trace>, Vec<Trace>); 4],
}

/// The computed report.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The header.
    pub header: Header,
    /// First buffer's time base (mprof-report's time origin).
    pub start_time: u64,
    /// Distinct methods compiled, their code size; JIT helper count and size.
    pub jit: (u64, u64, u64, u64),
    /// Resizes, max heap size, object moves.
    pub gc: (u64, u64, u64),
    /// Per generation: (count, max ns, total ns).
    pub gc_gens: [(u64, u64, u64); 3],
    /// Per handle type: (created, destroyed, max live).
    pub gc_handles: [(u64, u64, u64); 4],
    /// (class, bytes, count), by bytes (or count with [`AllocSort::Count`]).
    pub alloc: Vec<(String, u64, u64)>,
    /// (method, stats), by total (or as [`Options::method_sort`] says).
    pub calls: Vec<(String, MethodStats)>,
    /// Loaded images and assemblies.
    pub metadata: (u64, u64),
    /// Throws, and clause counts by type (0 catch, 1 filter, 2 finally, 4 fault).
    pub exceptions: (u64, [u64; 5]),
    /// (lock object, contentions, total wait ns, max wait ns), by wait.
    pub monitors: Vec<(u64, u64, u64, u64)>,
    /// Monitor events: contentions, acquired, failures.
    pub monitor_totals: (u64, u64, u64),
    /// (thread id, name).
    pub threads: Vec<(u64, String)>,
    /// (domain, name).
    pub domains: Vec<(u64, String)>,
    /// (context, domain).
    pub contexts: Vec<(u64, u64)>,
    /// Sample hits: (name, hits) by hits; unmanaged, managed, unresolved totals.
    pub samples: (Vec<(String, u64)>, u64, u64, u64),
    /// Heap shots.
    pub heapshots: Vec<HeapShot>,
    /// Counters.
    pub counters: Vec<Counter>,
    /// (event byte, count, min size, max size, bytes).
    pub stats: Vec<(u8, u64, u32, u32, u64)>,
    /// Buffers, events.
    pub buffers: u64,
    /// Events decoded.
    pub events: u64,
    /// Decoding problems (each one skipped the rest of its buffer).
    pub problems: Vec<Error>,
    /// Bytes skipped after problems.
    pub skipped_bytes: u64,
    /// Leaves that matched no frame; frames still open at the end.
    pub unmatched_leaves: u64,
    /// Frames still open at the end (closed at the thread's last time).
    pub unfinished: u64,
    /// Backtraces, when [`Options::traces`] asked for them.
    pub traces: Option<ReportTraces>,
    /// Tracked objects' events, when [`Options::track`] or [`Options::find`] named some
    /// (mprof-report then prints only these).
    pub tracking: Option<Vec<TrackEvent>>,
}

fn name(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Decodes a whole file in memory (or mapped) and computes every section.
pub fn compute(file: &File<'_>, opts: &Options) -> Report {
    compute_with(file, opts, &|_| {})
}

/// [`compute`], telling `consumed` the file offset below which the data is no longer needed
/// (every buffer before it has been decoded): a caller with a mapped file can drop those pages
/// to keep the resident memory flat.
pub fn compute_with(file: &File<'_>, opts: &Options, consumed: &(dyn Fn(u64) + Sync)) -> Report {
    let mut bufs = file.buffers();
    let (agg, st, start) = engine::run(
        &file.header,
        opts,
        move |_| {
            bufs.next().map(|b| match b {
                Ok(b) => Job::Slice(b),
                Err(e) => Job::Problem(e),
            })
        },
        consumed,
    );
    finish(file.header.clone(), agg, st, start, opts)
}

/// Reads a file from a stream (a gzip decoder, a pipe), one buffer at a time, and computes
/// every section. Memory holds a bounded number of buffers, not the file. Fails only when the
/// header cannot be read; later problems are in [`Report::problems`].
pub fn compute_stream<R: Read + Send>(r: R, opts: &Options) -> Result<Report> {
    let mut reader = StreamReader::new(r)?;
    let header = reader.header().clone();
    let (agg, st, start) = engine::run(
        &header,
        opts,
        move |v| {
            reader.next_buffer(v).map(|b| match b {
                Ok(b) => Job::Owned(b),
                Err(e) => Job::Problem(e),
            })
        },
        &|_| {},
    );
    Ok(finish(header, agg, st, start, opts))
}

fn sort_traces(t: &Traces, names: &dyn Fn(u64) -> String) -> Vec<Trace> {
    let mut v: Vec<Trace> = t
        .iter()
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, &c)| Trace {
            count: c,
            frames: k.iter().map(|&m| names(m)).collect(),
        })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.frames.cmp(&b.frames)));
    v
}

/// Merges traces of several entries that print under one name (sums equal backtraces).
fn merge_traces(into: &mut Vec<Trace>, more: Vec<Trace>) {
    if into.is_empty() {
        *into = more;
        return;
    }
    for t in more {
        match into.iter_mut().find(|x| x.frames == t.frames) {
            Some(x) => x.count += t.count,
            None => into.push(t),
        }
    }
    into.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.frames.cmp(&b.frames)));
}

fn finish(
    header: Header,
    mut agg: engine::Agg,
    mut st: engine::Stitcher,
    start_time: u64,
    opts: &Options,
) -> Report {
    let class_name = |c: ClassRef| -> String {
        let class = match c {
            ClassRef::Class(p) => Some(p),
            ClassRef::Vtable(v) => agg.vtables.get(&v).copied(),
        };
        match class.and_then(|p| agg.classes.get(&p)) {
            Some(n) => name(n),
            None => match c {
                ClassRef::Class(p) => format!("unresolved class {p:#x}"),
                ClassRef::Vtable(v) => format!("unresolved vtable {v:#x}"),
            },
        }
    };
    let method_name = |m: u64| -> String {
        match agg.method_names.get(&m) {
            Some(n) => name(n),
            None => format!("unknown method {m:#x}"),
        }
    };
    let by_alloc = |a: &(String, u64, u64), b: &(String, u64, u64)| {
        match opts.alloc_sort {
            AllocSort::Bytes => b.1.cmp(&a.1).then(b.2.cmp(&a.2)),
            AllocSort::Count => b.2.cmp(&a.2).then(b.1.cmp(&a.1)),
        }
        .then_with(|| a.0.cmp(&b.0))
    };
    // allocations, merged by class name (several vtables may map to one class)
    let mut alloc_map: HashMap<String, (u64, u64)> = HashMap::new();
    for (&c, &(bytes, count)) in &agg.allocs {
        let a = alloc_map.entry(class_name(c)).or_insert((0, 0));
        a.0 += bytes;
        a.1 += count;
    }
    let mut alloc: Vec<(String, u64, u64)> =
        alloc_map.into_iter().map(|(n, (b, c))| (n, b, c)).collect();
    alloc.sort_by(by_alloc);
    // calls: the workers' local replays plus the stitcher's
    let mut methods = std::mem::take(&mut agg.methods);
    for (m, s) in std::mem::take(&mut st.methods) {
        methods.entry(m).or_default().add(&s);
    }
    let mut calls: Vec<(u64, String, MethodStats)> = methods
        .iter()
        .map(|(&m, &s)| (m, method_name(m), s))
        .collect();
    calls.sort_by(|a, b| {
        let key = |s: &MethodStats| match opts.method_sort {
            MethodSort::Total => s.total_ns,
            MethodSort::SelfTime => s.self_ns,
            MethodSort::Calls => s.calls,
        };
        key(&b.2)
            .cmp(&key(&a.2))
            .then_with(|| a.1.cmp(&b.1))
            .then(a.0.cmp(&b.0))
    });
    // mprof-report counts methods whose JIT event has code (v11+ may write 0/0)
    let mut with_code: HashMap<u64, u64> = HashMap::new();
    for &(code, size, m) in &agg.jit_code {
        if code != 0 {
            with_code.insert(m, size);
        }
    }
    let code_size: u64 = with_code.values().sum();
    // samples: managed by JIT code range, then unmanaged symbols
    agg.jit_code.sort_unstable();
    agg.usyms.sort_unstable();
    let mut hits: HashMap<String, u64> = HashMap::new();
    let (mut managed, mut unmanaged, mut unresolved) = (0u64, 0u64, 0u64);
    for (&ip, &n) in &agg.samples {
        let jit = agg.jit_code.partition_point(|&(c, _, _)| c <= ip);
        let found = jit
            .checked_sub(1)
            .and_then(|i| agg.jit_code.get(i))
            .filter(|&&(c, s, _)| ip < c.saturating_add(s));
        if let Some(&(_, _, m)) = found {
            managed += n;
            *hits.entry(method_name(m)).or_default() += n;
            continue;
        }
        unmanaged += n;
        let u = agg.usyms.partition_point(|(a, _, _)| *a <= ip);
        match u.checked_sub(1).and_then(|i| agg.usyms.get(i)) {
            Some((a, _, nm)) if ip - a < 4096 => *hits.entry(name(nm)).or_default() += n,
            _ => unresolved += n,
        }
    }
    let mut sample_rows: Vec<(String, u64)> = hits.into_iter().collect();
    sample_rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    // heap shots, classes bound now
    let heapshots = st
        .shots
        .iter()
        .map(|s| {
            let mut by: HashMap<String, (u64, u64)> = HashMap::new();
            for (&c, &(b, n)) in &s.classes {
                let e = by.entry(class_name(c)).or_insert((0, 0));
                e.0 += b;
                e.1 += n;
            }
            let mut classes: Vec<(String, u64, u64)> =
                by.into_iter().map(|(n, (b, c))| (n, b, c)).collect();
            classes.sort_by(by_alloc);
            let mut root_refs: HashMap<String, (u64, u64)> = HashMap::new();
            for (&c, &(r, p)) in &s.root_refs {
                let e = root_refs.entry(class_name(c)).or_default();
                e.0 += r;
                e.1 += p;
            }
            let mut refs: HashMap<String, HashMap<String, u64>> = HashMap::new();
            for (&(to, from), &n) in &s.refs {
                *refs
                    .entry(class_name(to))
                    .or_default()
                    .entry(class_name(from))
                    .or_default() += n;
            }
            let refs = refs
                .into_iter()
                .map(|(to, m)| {
                    let mut v: Vec<(String, u64)> = m.into_iter().collect();
                    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                    (to, v)
                })
                .collect();
            HeapShot {
                time_ns: s.time.saturating_sub(start_time),
                size: s.size,
                objects: s.objects,
                roots: s.roots,
                classes,
                root_refs,
                refs,
            }
        })
        .collect();
    let mut counters: Vec<Counter> = st
        .counter_descs
        .iter()
        .filter_map(|(i, (section, n, unit))| {
            let v = st.counters.get(i).and_then(|c| c.2.clone())?;
            Some(Counter {
                section: *section,
                name: n.to_string(),
                value: if *unit == 2 << 24 {
                    // TIME unit: 100 ns ticks, shown in ms
                    v.parse::<i64>()
                        .map(|x| format!("{:.3}ms", x as f64 / 10_000.0))
                        .unwrap_or(v)
                } else {
                    v
                },
            })
        })
        .collect();
    counters.sort_by(|a, b| a.section.cmp(&b.section).then(a.name.cmp(&b.name)));
    let mut monitors: Vec<(u64, u64, u64, u64)> = st
        .locks
        .iter()
        .filter(|(_, l)| l.0 > 0)
        .map(|(&o, l)| (o, l.0, l.1, l.2))
        .collect();
    monitors.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let mut stats: Vec<(u8, u64, u32, u32, u64)> = agg
        .stats
        .iter()
        .enumerate()
        .filter(|(_, s)| s.0 > 0)
        .map(|(b, &(c, mn, mx, by))| (b as u8, c, mn, mx, by))
        .collect();
    stats.sort_by_key(|s| (s.0 & TYPE_MASK, s.0 >> 4));
    let mut gc_handles = [(0, 0, 0); 4];
    for (o, h) in gc_handles.iter_mut().zip(st.handles) {
        *o = (h.0, h.1, h.3.max(0) as u64);
    }
    let traces = opts.traces.then(|| {
        let mut t = ReportTraces {
            calls: calls
                .iter()
                .map(|(m, _, _)| {
                    st.call_traces
                        .get(m)
                        .map(|tr| sort_traces(tr, &method_name))
                        .unwrap_or_default()
                })
                .collect(),
            ..ReportTraces::default()
        };
        for (target, tr) in &st.target_traces {
            let v = sort_traces(tr, &method_name);
            match *target {
                Target::Alloc(c) => merge_traces(t.alloc.entry(class_name(c)).or_default(), v),
                Target::Throw => merge_traces(&mut t.throws, v),
                Target::Monitor(o) => merge_traces(t.monitors.entry(o).or_default(), v),
                Target::HandleCreated(h) => {
                    if let Some(x) = t.handles.get_mut(h as usize) {
                        merge_traces(&mut x.0, v);
                    }
                }
                Target::HandleDestroyed(h) => {
                    if let Some(x) = t.handles.get_mut(h as usize) {
                        merge_traces(&mut x.1, v);
                    }
                }
            }
        }
        t
    });
    let secs = |t: u64| t.wrapping_sub(start_time) as i64 as f64 / 1e9;
    let tracking = (!opts.track.is_empty() || !st.tracking.is_empty()).then(|| {
        st.tracking
            .iter()
            .map(|e| match e {
                Tracked::Created {
                    obj,
                    class,
                    size,
                    time,
                    frames,
                } => TrackEvent::Created {
                    obj: *obj,
                    class: class_name(*class),
                    size: *size,
                    secs: secs(*time),
                    frames: frames.iter().map(|&m| method_name(m)).collect(),
                },
                Tracked::Handle {
                    obj,
                    handle,
                    time,
                    frames,
                } => TrackEvent::Handle {
                    obj: *obj,
                    handle: *handle,
                    secs: secs(*time),
                    frames: frames.iter().map(|&m| method_name(m)).collect(),
                },
                Tracked::MovedTo(o, t) => TrackEvent::MovedTo { obj: *o, to: *t },
                Tracked::MovedFrom(o, f) => TrackEvent::MovedFrom { obj: *o, from: *f },
                Tracked::Referenced { obj, parent, class } => TrackEvent::Referenced {
                    obj: *obj,
                    parent: *parent,
                    class: class_name(*class),
                },
            })
            .collect()
    });
    let mut problems = agg.problems;
    problems.extend(st.problems);
    problems.sort_by_key(|e| e.offset);
    Report {
        header,
        start_time,
        jit: (
            with_code.len() as u64,
            code_size,
            agg.helpers,
            agg.helpers_size,
        ),
        gc: (agg.resizes, agg.max_heap, agg.moves),
        gc_gens: st.gens,
        gc_handles,
        alloc,
        calls: calls.into_iter().map(|(_, n, s)| (n, s)).collect(),
        metadata: (agg.images, agg.assemblies),
        exceptions: (agg.throws, agg.clauses),
        monitors,
        monitor_totals: {
            let [_, c, d, f] = st.monitor_counts;
            (c, d, f)
        },
        threads: dedupe(&st.thread_names),
        domains: st
            .domains
            .iter()
            .map(|(t, n)| (*t, n.to_string()))
            .collect(),
        contexts: st.contexts.clone(),
        samples: (sample_rows, unmanaged, managed, unresolved),
        heapshots,
        counters,
        stats,
        buffers: agg.buffers,
        events: agg.events,
        problems,
        skipped_bytes: agg.skipped_bytes,
        unmatched_leaves: st.unmatched_leaves,
        unfinished: st.unfinished,
        traces,
        tracking,
    }
}

fn dedupe(v: &[(u64, Box<str>)]) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = Vec::new();
    for (t, n) in v {
        match out.iter_mut().find(|(o, _)| o == t) {
            Some(e) => e.1 = n.to_string(),
            None => out.push((*t, n.to_string())),
        }
    }
    out
}

fn ptr(p: u64) -> String {
    if p == 0 {
        "(nil)".to_string()
    } else {
        format!("{p:#x}")
    }
}
const DEFAULT_COUNTERS: [(u64, &str); 13] = [
    (1 << 14, "User Time"),
    (1 << 14, "System Time"),
    (1 << 14, "Total Time"),
    (1 << 14, "Working Set"),
    (1 << 14, "Private Bytes"),
    (1 << 14, "Virtual Bytes"),
    (1 << 14, "Page Faults"),
    (1 << 14, "CPU Load Average - 1min"),
    (1 << 14, "CPU Load Average - 5min"),
    (1 << 14, "CPU Load Average - 15min"),
    (1 << 8, "Methods from AOT"),
    (1 << 8, "Methods JITted using mono JIT"),
    (1 << 8, "Methods JITted using LLVM"),
];

const HANDLE_NAMES: [&str; 4] = ["weak", "weaktrack", "normal", "pinned"];

fn section_name(section: u64) -> &'static str {
    match section {
        s if s == 1 << 8 => "Mono JIT",
        s if s == 1 << 9 => "Mono GC",
        s if s == 1 << 10 => "Mono Metadata",
        s if s == 1 << 11 => "Mono Generics",
        s if s == 1 << 12 => "Mono Security",
        s if s == 1 << 13 => "Mono Runtime",
        s if s == 1 << 14 => "Mono System",
        s if s == 1 << 16 => "Mono Profiler",
        s if s == 1 << 17 => "Mono Interp",
        _ => "Other",
    }
}

fn write_traces(out: &mut dyn Write, traces: Option<&Vec<Trace>>, what: &str) -> io::Result<()> {
    for t in traces.into_iter().flatten() {
        writeln!(out, "\t{} {what} from:", t.count)?;
        for f in &t.frames {
            writeln!(out, "\t\t{f}")?;
        }
    }
    Ok(())
}

/// Writes what happened to the tracked objects, as mprof-report prints it.
pub fn write_tracking(out: &mut dyn Write, events: &[TrackEvent]) -> io::Result<()> {
    let frames = |out: &mut dyn Write, f: &[String]| -> io::Result<()> {
        for m in f {
            writeln!(out, "\t{m}")?;
        }
        Ok(())
    };
    for e in events {
        match e {
            TrackEvent::Created {
                obj,
                class,
                size,
                secs,
                frames: f,
            } => {
                writeln!(
                    out,
                    "Object {} created ({class}, {size} bytes) at {secs:.3} secs.",
                    ptr(*obj)
                )?;
                frames(out, f)?;
            }
            TrackEvent::Handle {
                obj,
                handle,
                secs,
                frames: f,
            } => {
                writeln!(
                    out,
                    "Object {} referenced from handle {handle} at {secs:.3} secs.",
                    ptr(*obj)
                )?;
                frames(out, f)?;
            }
            TrackEvent::MovedTo { obj, to } => {
                writeln!(out, "Object {} moved to {}", ptr(*obj), ptr(*to))?
            }
            TrackEvent::MovedFrom { obj, from } => {
                writeln!(out, "Object {} moved from {}", ptr(*obj), ptr(*from))?
            }
            TrackEvent::Referenced { obj, parent, class } => writeln!(
                out,
                "Object {} referenced from {} ({class}).",
                ptr(*obj),
                ptr(*parent)
            )?,
        }
    }
    Ok(())
}

/// Writes the selected sections as text, laid out like mprof-report (with
/// [`Report::tracking`], only the tracked objects' events, as mprof-report does).
pub fn write_text(
    out: &mut dyn Write,
    r: &Report,
    sections: &[&str],
    verbose: bool,
) -> io::Result<()> {
    if let Some(t) = &r.tracking {
        return write_tracking(out, t);
    }
    let want = |s: &str| sections.contains(&s);
    let tr = r.traces.as_ref();
    let h = &r.header;
    if want("header") {
        writeln!(out, "\nMono log profiler data")?;
        writeln!(out, "\tProfiler version: {}.{}", h.major, h.minor)?;
        writeln!(out, "\tData version: {}", h.data_version)?;
        if h.major >= 1 {
            writeln!(out, "\tArguments: {}", h.args)?;
            writeln!(out, "\tArchitecture: {}", h.arch)?;
            writeln!(out, "\tOperating system: {}", h.os)?;
        }
        writeln!(
            out,
            "\tMean timer overhead: {} nanoseconds",
            h.timer_overhead
        )?;
        writeln!(
            out,
            "\tProgram startup: {} ms since the Unix epoch",
            h.startup_ms
        )?;
        writeln!(out, "\tProgram ID: {}", h.pid)?;
        if h.port != 0 {
            writeln!(out, "\tServer listening on: {}", h.port)?;
        }
    }
    if want("jit") {
        writeln!(out, "\nJIT summary")?;
        writeln!(out, "\tCompiled methods: {}", r.jit.0)?;
        writeln!(out, "\tGenerated code size: {}", r.jit.1)?;
        writeln!(out, "\tJIT helpers: {}", r.jit.2)?;
        writeln!(out, "\tJIT helpers code size: {}", r.jit.3)?;
    }
    if want("gc") {
        writeln!(out, "\nGC summary")?;
        writeln!(out, "\tGC resizes: {}", r.gc.0)?;
        writeln!(out, "\tMax heap size: {}", r.gc.1)?;
        writeln!(out, "\tObject moves: {}", r.gc.2)?;
        for (g, &(count, max, total)) in r.gc_gens.iter().enumerate() {
            if let Some(avg) = total.checked_div(count) {
                writeln!(
                    out,
                    "\tGen{g} collections: {count}, max time: {}us, total time: {}us, average: {}us",
                    max / 1000,
                    total / 1000,
                    avg / 1000
                )?;
            }
        }
        for (i, &(c, d, m)) in r.gc_handles.iter().enumerate() {
            if c > 0 || d > 0 {
                writeln!(
                    out,
                    "\tGC handles {}: created: {c}, destroyed: {d}, max: {m}",
                    HANDLE_NAMES.get(i).copied().unwrap_or("?")
                )?;
                let h = tr.and_then(|t| t.handles.get(i));
                write_traces(out, h.map(|h| &h.0), "created")?;
                write_traces(out, h.map(|h| &h.1), "destroyed")?;
            }
        }
    }
    if want("sample") && !r.samples.0.is_empty() {
        let (rows, un, man, unres) = &r.samples;
        let total = (un + man).max(1);
        let pct = |n: u64| n as f64 * 100.0 / total as f64;
        writeln!(out, "\nStatistical samples summary")?;
        writeln!(out, "\tSample type: cycles")?;
        writeln!(out, "\tUnmanaged hits:  {un:6} ({:4.1}%)", pct(*un))?;
        writeln!(out, "\tManaged hits:    {man:6} ({:4.1}%)", pct(*man))?;
        writeln!(out, "\tUnresolved hits: {unres:6} ({:4.1}%)", pct(*unres))?;
        writeln!(out, "\t{:>6} {:>6} Method name", "Hits", "%")?;
        for (n, c) in rows {
            if pct(*c) >= 0.1 || verbose {
                writeln!(out, "\t{c:6} {:6.2} {n}", pct(*c))?;
            }
        }
    }
    if want("alloc") && !r.alloc.is_empty() {
        writeln!(out, "\nAllocation summary")?;
        writeln!(
            out,
            "{:>10} {:>10} {:>8} Type name",
            "Bytes", "Count", "Average"
        )?;
        let (mut tb, mut tc) = (0u64, 0u64);
        for (n, b, c) in &r.alloc {
            tb += b;
            tc += c;
            writeln!(out, "{b:10} {c:10} {:8} {n}", b / (*c).max(1))?;
            write_traces(out, tr.and_then(|t| t.alloc.get(n)), "bytes")?;
        }
        writeln!(out, "Total memory allocated: {tb} bytes in {tc} objects")?;
    }
    if want("call") && !r.calls.is_empty() {
        writeln!(out, "\nMethod call summary")?;
        writeln!(
            out,
            "{:>8} {:>8} {:>10} Method name",
            "Total(ms)", "Self(ms)", "Calls"
        )?;
        let mut total_calls = 0u64;
        for (i, (n, s)) in r.calls.iter().enumerate() {
            total_calls += s.calls;
            let ms = s.total_ns / 1_000_000;
            if ms == 0 && !verbose {
                continue;
            }
            writeln!(out, "{ms:8} {:8} {:10} {n}", s.self_ns / 1_000_000, s.calls)?;
            write_traces(out, tr.and_then(|t| t.calls.get(i)), "calls")?;
        }
        writeln!(out, "Total calls: {total_calls}")?;
    }
    if want("metadata") {
        writeln!(out, "\nMetadata summary")?;
        writeln!(out, "\tLoaded images: {}", r.metadata.0)?;
        writeln!(out, "\tLoaded assemblies: {}", r.metadata.1)?;
    }
    if want("exception") {
        let (throws, cl) = r.exceptions;
        writeln!(out, "\nException summary")?;
        writeln!(out, "\tThrows: {throws}")?;
        write_traces(out, tr.map(|t| &t.throws), "throws")?;
        for (i, kind) in [
            (0usize, "catch"),
            (1, "filter"),
            (2, "finally"),
            (4, "fault"),
        ] {
            let n = cl.get(i).copied().unwrap_or(0);
            if n > 0 {
                writeln!(out, "\tExecuted {kind} clauses: {n}")?;
            }
        }
    }
    if want("monitor") && (r.monitor_totals.0 + r.monitor_totals.1 + r.monitor_totals.2) > 0 {
        writeln!(out, "\nMonitor lock summary")?;
        for &(o, n, wait, max) in &r.monitors {
            writeln!(out, "\tLock object {}: {n} contentions", ptr(o))?;
            writeln!(
                out,
                "\t\t{:.6} secs total wait time, {:.6} max, {:.6} average",
                wait as f64 / 1e9,
                max as f64 / 1e9,
                wait as f64 / 1e9 / n as f64
            )?;
            write_traces(out, tr.and_then(|t| t.monitors.get(&o)), "contentions")?;
        }
        writeln!(out, "\tLock contentions: {}", r.monitor_totals.0)?;
        writeln!(out, "\tLock acquired: {}", r.monitor_totals.1)?;
        writeln!(out, "\tLock failures: {}", r.monitor_totals.2)?;
    }
    if want("thread") {
        writeln!(out, "\nThread summary")?;
        for (t, n) in &r.threads {
            writeln!(out, "\tThread: {}, name: \"{n}\"", ptr(*t))?;
        }
    }
    if want("domain") {
        writeln!(out, "\nDomain summary")?;
        for (d, n) in &r.domains {
            writeln!(out, "\tDomain: {}, friendly name: \"{n}\"", ptr(*d))?;
        }
    }
    if want("context") {
        writeln!(out, "\nContext summary")?;
        for (c, d) in &r.contexts {
            writeln!(out, "\tContext: {}, domain: {}", ptr(*c), ptr(*d))?;
        }
    }
    if want("heapshot") && !r.heapshots.is_empty() {
        writeln!(out, "\nHeap shot summary")?;
        let mut prev: Option<HashMap<&str, (u64, u64)>> = None;
        for (i, h) in r.heapshots.iter().enumerate() {
            writeln!(
                out,
                "\n\tHeap shot {i} at {:.3} secs: size: {}, object count: {}, class count: {}, roots: {}",
                h.time_ns as f64 / 1e9,
                h.size,
                h.objects,
                h.classes.len(),
                h.roots
            )?;
            writeln!(
                out,
                "\t{:>10} {:>10} {:>8} Class name",
                "Bytes", "Count", "Average"
            )?;
            let limit = if verbose { usize::MAX } else { 30 };
            for (n, b, c) in h.classes.iter().take(limit) {
                write!(out, "\t{b:10} {c:10} {:8} {n}", b / (*c).max(1))?;
                if let Some((pb, pc)) = prev.as_ref().and_then(|p| p.get(n.as_str())) {
                    write!(
                        out,
                        " (bytes: {:+}, count: {:+})",
                        *b as i64 - *pb as i64,
                        *c as i64 - *pc as i64
                    )?;
                }
                writeln!(out)?;
                if tr.is_some() {
                    if let Some((roots, pinning)) = h.root_refs.get(n) {
                        writeln!(out, "\t\t{roots} root references ({pinning} pinning)")?;
                    }
                    for (from, k) in h.refs.get(n).into_iter().flatten() {
                        writeln!(out, "\t\t{k} references from: {from}")?;
                    }
                }
            }
            prev = Some(
                h.classes
                    .iter()
                    .map(|(n, b, c)| (n.as_str(), (*b, *c)))
                    .collect(),
            );
        }
    }
    if want("counters") && !r.counters.is_empty() {
        writeln!(out, "\nCounters:")?;
        let mut last = None;
        let mut shown: Vec<&Counter> = r.counters.iter().collect();
        if !verbose {
            // mprof-report's fixed list, in its order
            shown = DEFAULT_COUNTERS
                .iter()
                .filter_map(|(sec, n)| {
                    r.counters
                        .iter()
                        .find(|c| c.section == *sec && c.name == *n)
                })
                .collect();
        }
        for c in shown {
            if last != Some(c.section) {
                writeln!(out, "\t{}:", section_name(c.section))?;
                last = Some(c.section);
            }
            writeln!(out, "\t\t{:<30} : {}", c.name, c.value)?;
        }
    }
    if want("stats") {
        writeln!(out, "\nMlpd statistics")?;
        writeln!(
            out,
            "\tBuffer count {}\toverhead {} (48 bytes per header)",
            r.buffers,
            r.buffers * 48
        )?;
        writeln!(out, "\nEvent details:")?;
        for &(b, c, mn, mx, by) in &r.stats {
            writeln!(
                out,
                "\t{:>16}\t{:#04x}\tcount {c:6}\tmin {mn:3}\tmax {mx:6}\tbytes {by}",
                EventType::of(b).name(),
                b & EXINFO_MASK
            )?;
        }
    }
    Ok(())
}

/// The report as JSON (schema `profkit.mlpd-report/1`).
pub fn to_json(r: &Report) -> Value {
    let h = &r.header;
    let tr = r.traces.as_ref();
    // with traces, an entry carries its backtraces
    let with = |mut v: Value, key: &str, t: Option<&Vec<Trace>>| -> Value {
        if let (Some(obj), true) = (v.as_object_mut(), tr.is_some()) {
            obj.insert(key.into(), traces_json(t));
        }
        v
    };
    let gens: Vec<Value> = r
        .gc_gens
        .iter()
        .enumerate()
        .filter(|(_, g)| g.0 > 0)
        .map(|(i, &(c, m, t))| json!({"generation": i, "count": c, "max_ns": m, "total_ns": t}))
        .collect();
    let handles: Vec<Value> = r
        .gc_handles
        .iter()
        .enumerate()
        .filter(|(_, h)| h.0 > 0 || h.1 > 0)
        .map(|(i, &(c, d, m))| {
            let v = json!({"type": HANDLE_NAMES.get(i).copied().unwrap_or("?"), "created": c, "destroyed": d, "max": m});
            let th = tr.and_then(|t| t.handles.get(i));
            let v = with(v, "created_traces", th.map(|h| &h.0));
            with(v, "destroyed_traces", th.map(|h| &h.1))
        })
        .collect();
    let (throws, cl) = r.exceptions;
    let exceptions = with(
        json!({"throws": throws, "catch": cl.first(), "filter": cl.get(1), "finally": cl.get(2), "fault": cl.get(4)}),
        "traces",
        tr.map(|t| &t.throws),
    );
    let mut v = json!({
        "schema": "profkit.mlpd-report/1",
        "header": {
            "major": h.major, "minor": h.minor, "data_version": h.data_version,
            "args": h.args, "arch": h.arch, "os": h.os, "pid": h.pid, "port": h.port,
            "ptrsize": h.ptrsize, "timer_overhead_ns": h.timer_overhead, "startup_ms": h.startup_ms,
        },
        "jit": {"methods": r.jit.0, "code_size": r.jit.1, "helpers": r.jit.2, "helpers_code_size": r.jit.3},
        "gc": {"resizes": r.gc.0, "max_heap_size": r.gc.1, "object_moves": r.gc.2, "collections": gens, "handles": handles},
        "samples": {
            "unmanaged": r.samples.1, "managed": r.samples.2, "unresolved": r.samples.3,
            "methods": r.samples.0.iter().map(|(n, c)| json!({"method": n, "hits": c})).collect::<Vec<_>>(),
        },
        "alloc": r.alloc.iter().map(|(n, b, c)| with(
            json!({"class": n, "bytes": b, "count": c}), "traces", tr.and_then(|t| t.alloc.get(n)),
        )).collect::<Vec<_>>(),
        "calls": r.calls.iter().enumerate().filter(|(_, (_, s))| s.calls > 0).map(|(i, (n, s))| with(json!({
            "method": n, "calls": s.calls, "total_ns": s.total_ns, "self_ns": s.self_ns,
            "total_all_activations_ns": s.total_all_ns,
        }), "traces", tr.and_then(|t| t.calls.get(i)))).collect::<Vec<_>>(),
        "metadata": {"images": r.metadata.0, "assemblies": r.metadata.1},
        "exceptions": exceptions,
        "monitors": r.monitors.iter().map(|&(o, n, w, m)| with(
            json!({"object": o, "contentions": n, "wait_ns": w, "max_wait_ns": m}),
            "traces", tr.and_then(|t| t.monitors.get(&o)),
        )).collect::<Vec<_>>(),
        "monitor_totals": {"contentions": r.monitor_totals.0, "acquired": r.monitor_totals.1, "failures": r.monitor_totals.2},
        "threads": r.threads.iter().map(|(t, n)| json!({"id": t, "name": n})).collect::<Vec<_>>(),
        "domains": r.domains.iter().map(|(d, n)| json!({"id": d, "name": n})).collect::<Vec<_>>(),
        "contexts": r.contexts.iter().map(|(c, d)| json!({"id": c, "domain": d})).collect::<Vec<_>>(),
        "heapshots": r.heapshots.iter().map(|h| json!({
            "time_ns": h.time_ns, "size": h.size, "objects": h.objects, "roots": h.roots,
            "classes": h.classes.iter().map(|(n, b, c)| {
                let mut v = json!({"class": n, "bytes": b, "count": c});
                if let (Some(o), true) = (v.as_object_mut(), tr.is_some()) {
                    let (roots, pinning) = h.root_refs.get(n).copied().unwrap_or((0, 0));
                    o.insert("root_references".into(), roots.into());
                    o.insert("pinning_root_references".into(), pinning.into());
                    o.insert("references_from".into(), h.refs.get(n).into_iter().flatten()
                        .map(|(f, k)| json!({"class": f, "references": k})).collect::<Vec<_>>().into());
                }
                v
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "counters": r.counters.iter().map(|c| json!({"section": section_name(c.section), "name": c.name, "value": c.value})).collect::<Vec<_>>(),
        "stats": {"buffers": r.buffers, "events": r.events, "problems": r.problems.len(), "skipped_bytes": r.skipped_bytes,
                  "unmatched_leaves": r.unmatched_leaves, "unfinished_frames": r.unfinished},
    });
    if let (Some(t), Some(o)) = (&r.tracking, v.as_object_mut()) {
        o.insert(
            "tracking".into(),
            t.iter().map(track_json).collect::<Vec<_>>().into(),
        );
    }
    v
}

fn traces_json(t: Option<&Vec<Trace>>) -> Value {
    t.into_iter()
        .flatten()
        .map(|t| json!({"count": t.count, "frames": t.frames}))
        .collect::<Vec<_>>()
        .into()
}

fn track_json(e: &TrackEvent) -> Value {
    match e {
        TrackEvent::Created {
            obj,
            class,
            size,
            secs,
            frames,
        } => {
            json!({"event": "created", "object": obj, "class": class, "size": size, "secs": secs, "frames": frames})
        }
        TrackEvent::Handle {
            obj,
            handle,
            secs,
            frames,
        } => {
            json!({"event": "handle", "object": obj, "handle": handle, "secs": secs, "frames": frames})
        }
        TrackEvent::MovedTo { obj, to } => json!({"event": "moved_to", "object": obj, "to": to}),
        TrackEvent::MovedFrom { obj, from } => {
            json!({"event": "moved_from", "object": obj, "from": from})
        }
        TrackEvent::Referenced { obj, parent, class } => {
            json!({"event": "referenced", "object": obj, "from": parent, "class": class})
        }
    }
}
