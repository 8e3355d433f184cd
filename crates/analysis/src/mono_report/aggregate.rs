//! The report's data ([`Report`] and its parts) and how the pass's raw results become it:
//! classes, vtables and methods bind by name at the end (so nothing defined later in the file
//! stays "unresolved"), entries that print under one name merge, and every section is sorted
//! (ties by name, so the output does not depend on hashing or on the decoding order).

use std::collections::HashMap;

use profkit_common::Truncation;

use super::stitcher::{Stitcher, Traces, Tracked};
use super::worker::{Agg, Target};
use super::{AllocSort, MethodSort, Options};
use profkit_mlpd::raw::*;
use profkit_mlpd::read::ClassRef;
use profkit_mlpd::Error;
use profkit_mlpd::Header;

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
    /// (thread id, name): every thread a buffer, a thread event or a thread name names, with
    /// its last name ("" when it has none), sorted by name, then id (id 0 left out, as
    /// mprof-report does).
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
    /// Frames still open at the end (closed at the time of the thread's last event).
    pub unfinished: u64,
    /// Backtraces, when [`Options::traces`] asked for them.
    pub traces: Option<ReportTraces>,
    /// Tracked objects' events, when [`Options::track`] or [`Options::find`] named some
    /// (mprof-report then prints only these).
    pub tracking: Option<Vec<TrackEvent>>,
    /// Where the file is cut, if it ends inside a buffer (also between two of its events,
    /// which no problem reports).
    pub truncation: Option<Truncation>,
}

fn name(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
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

/// Binds names (classes, vtables and methods, known once every buffer is read), merges what
/// prints under one name, and sorts every section.
pub(super) fn finish(
    header: Header,
    mut agg: Agg,
    mut st: Stitcher,
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
    for (m, s) in std::mem::take(&mut st.calls.methods_stats) {
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
                value: if *unit == COUNTER_UNIT_TIME {
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
                    st.calls
                        .call_traces
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
        threads: threads(&agg.threads, &st.thread_names),
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
        unmatched_leaves: st.calls.unmatched_leaves,
        unfinished: st.calls.unfinished,
        traces,
        tracking,
        truncation: None,
    }
}

/// The thread list: the threads `known` and those `names` name (in file order: the last name
/// wins), but id 0, sorted by name then id.
fn threads(known: &rustc_hash::FxHashSet<u64>, names: &[(u64, Box<str>)]) -> Vec<(u64, String)> {
    let mut by_id: HashMap<u64, &str> = known.iter().map(|&t| (t, "")).collect();
    for (t, n) in names {
        by_id.insert(*t, n);
    }
    let mut out: Vec<(u64, String)> = by_id
        .into_iter()
        .filter(|&(t, _)| t != 0)
        .map(|(t, n)| (t, n.to_string()))
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    out
}

/// GC handle types, by their number.
pub(super) const HANDLE_NAMES: [&str; 4] = ["weak", "weaktrack", "normal", "pinned"];

/// mprof-report's name of a counter section.
pub(super) fn section_name(section: u64) -> &'static str {
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
