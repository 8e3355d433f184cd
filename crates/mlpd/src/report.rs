//! mprof-report's sections, computed in one parallel pass (threads decode on their own rayon
//! tasks; every buffer restarts its delta state) and printed as text close to mprof-report 6.8
//! or as JSON (schema `profkit.mlpd-report/1`).
//!
//! Differences from mprof-report (docs/mono.md): forward references (vtables, classes, methods
//! defined later in the file) bind at the end, so no allocation stays "unresolved"; a method's
//! Total counts only its outermost activation (recursion is not counted several times); a leave
//! that matches a deeper frame closes the frames above it instead of being dropped; `--thread`
//! filters every event; monitor waits count each contention once.

use std::collections::HashMap;

use crate::fxhash::FxMap;
use std::io::{self, Write};

use rayon::prelude::*;
use serde_json::{json, Value};

use crate::error::Error;
use crate::header::Header;
use crate::raw::*;
use crate::read::{Buffer, ClassRef, CounterValue, EventKind, File, MetaAction};

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

/// What to compute.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only this thread's buffers.
    pub thread: Option<u64>,
    /// Only events in this window (ns since the first buffer's time base).
    pub time: Option<(u64, u64)>,
    /// Decode threads in parallel.
    pub parallel: bool,
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

#[derive(Clone, Copy, Debug, Default)]
struct GcGen {
    count: u64,
    max: u64,
    total: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Handles {
    created: u64,
    destroyed: u64,
    live: i64,
    max: i64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Lock {
    contentions: u64,
    wait: u64,
    max: u64,
}

#[derive(Clone, Copy, Debug)]
enum Serial<'a> {
    HeapStart,
    HeapEnd,
    HeapObject { class: ClassRef, size: u64 },
    Roots(u64),
    CountersDesc(crate::read::CounterDescs<'a>),
    Handle(u64, bool),
    Counters(crate::read::CounterValues<'a>),
}

/// Everything one thread's buffers contribute.
#[derive(Debug, Default)]
struct Agg<'a> {
    methods: FxMap<u64, MethodStats>,
    method_names: FxMap<u64, (&'a [u8], u64)>,
    jit_events: u64,
    helpers: u64,
    helpers_size: u64,
    classes: FxMap<u64, &'a [u8]>,
    vtables: FxMap<u64, u64>,
    allocs: FxMap<ClassRef, (u64, u64)>,
    resizes: u64,
    max_heap: u64,
    moves: u64,
    gens: [GcGen; 3],
    gc_start: [Option<u64>; 3],
    handles: [Handles; 4],
    throws: u64,
    clauses: [u64; 5],
    locks: FxMap<u64, Lock>,
    monitor_counts: [u64; 4],
    pending_contention: FxMap<u64, u64>,
    images: u64,
    assemblies: u64,
    threads: Vec<(u64, &'a [u8])>,
    domains: Vec<(u64, &'a [u8])>,
    contexts: Vec<(u64, u64)>,
    samples: Vec<(u64, u64)>,
    usyms: Vec<(u64, u64, &'a [u8])>,
    jit_code: Vec<(u64, u64, u64)>,
    stats: HashMap<u8, (u64, u32, u32, u64)>,
    serial: Vec<(u64, u64, Serial<'a>)>,
    problems: Vec<Error>,
    skipped_bytes: u64,
    buffers: u64,
    events: u64,
    unmatched_leaves: u64,
    unfinished: u64,
}

struct Frame {
    method: u64,
    slot: u32,
    start: u64,
    callee: u64,
}

/// Per-thread call state: the emulated stack, and per-method statistics in a dense table
/// (frames carry their slot, so a leave needs no lookup).
struct Calls {
    stack: Vec<Frame>,
    slots: Vec<(u64, MethodStats, u32)>,
    slot_of: FxMap<u64, u32>,
    /// Direct-mapped cache in front of `slot_of` (method pointers repeat a lot).
    cache: [(u64, u32); 512],
    last: u64,
}

impl Calls {
    #[inline]
    fn slot(&mut self, method: u64) -> u32 {
        let ci = ((method >> 3) ^ (method >> 12)) as usize & 511;
        if let Some(&(m, s)) = self.cache.get(ci) {
            if m == method && s != u32::MAX {
                return s;
            }
        }
        let s = match self.slot_of.get(&method) {
            Some(&s) => s,
            None => {
                let s = self.slots.len() as u32;
                self.slots.push((method, MethodStats::default(), 0));
                self.slot_of.insert(method, s);
                s
            }
        };
        if let Some(c) = self.cache.get_mut(ci) {
            *c = (method, s);
        }
        s
    }

    #[inline]
    fn enter(&mut self, method: u64, t: u64) {
        let slot = self.slot(method);
        if let Some(e) = self.slots.get_mut(slot as usize) {
            e.1.calls += 1;
            e.2 += 1;
        }
        self.stack.push(Frame {
            method,
            slot,
            start: t,
            callee: 0,
        });
    }

    #[inline]
    fn pop(&mut self, time: u64) {
        let Some(f) = self.stack.pop() else { return };
        let dur = time.saturating_sub(f.start);
        if let Some((_, m, active)) = self.slots.get_mut(f.slot as usize) {
            m.self_ns += dur.saturating_sub(f.callee);
            m.total_all_ns += dur;
            *active = active.saturating_sub(1);
            if *active == 0 {
                m.total_ns += dur;
            }
        }
        if let Some(p) = self.stack.last_mut() {
            p.callee += dur;
        }
    }
}

/// What the sequential part of a thread's pass needs, in order: calls, GC phases and monitor
/// events (they pair across buffers). Everything else is aggregated while decoding.
#[derive(Clone, Copy, Debug)]
enum Rec {
    Enter(u64, u64),
    Leave(u64, u64),
    Gc(u64, usize, u64),
    Monitor(u8, u64, u64),
}

/// Decodes `bufs` (consecutive buffers of one thread): the order-free aggregates and the
/// ordered records.
fn decode_chunk<'a>(bufs: &[Buffer<'a>], window: Option<(u64, u64)>) -> (Agg<'a>, Vec<Rec>) {
    let mut agg = Agg::default();
    let mut recs: Vec<Rec> = Vec::with_capacity(bufs.iter().map(|b| b.data.len() / 4).sum());
    let mut stats = [(0u64, u32::MAX, 0u32, 0u64); 256];
    let in_window = |t: u64| window.is_none_or(|(a, b)| t >= a && t <= b);
    for buf in bufs {
        agg.buffers += 1;
        let tid = buf.header.thread_id;
        let mut evs = buf.events();
        for ev in evs.by_ref() {
            let ev = match ev {
                Ok(e) => e,
                Err(e) => {
                    agg.problems.push(e);
                    continue;
                }
            };
            agg.events += 1;
            if let Some(s) = stats.get_mut(ev.byte as usize) {
                s.0 += 1;
                s.1 = s.1.min(ev.size);
                s.2 = s.2.max(ev.size);
                s.3 += u64::from(ev.size);
            }
            let t = ev.time;
            match ev.kind {
                EventKind::Enter { method } if in_window(t) => recs.push(Rec::Enter(method, t)),
                EventKind::Leave { method } | EventKind::ExcLeave { method } if in_window(t) => {
                    recs.push(Rec::Leave(method, t))
                }
                EventKind::Jit {
                    method,
                    code,
                    size,
                    name,
                } => {
                    agg.jit_events += 1;
                    agg.method_names.insert(method, (name, size));
                    agg.jit_code.push((code, size, method));
                }
                EventKind::JitHelper { size, .. } => {
                    agg.helpers += 1;
                    agg.helpers_size += size;
                }
                EventKind::Metadata(m) => match (m.mtype, m.action) {
                    (MTYPE_CLASS, MetaAction::Load) => {
                        agg.classes.insert(m.ptr, m.name);
                    }
                    (MTYPE_VTABLE, MetaAction::Load) => {
                        agg.vtables.insert(m.ptr, m.class);
                    }
                    (MTYPE_IMAGE, MetaAction::Load) => agg.images += 1,
                    (MTYPE_ASSEMBLY, MetaAction::Load) => agg.assemblies += 1,
                    (MTYPE_THREAD, MetaAction::Name) => agg.threads.push((m.ptr, m.name)),
                    (MTYPE_DOMAIN, MetaAction::Name) => agg.domains.push((m.ptr, m.name)),
                    (MTYPE_CONTEXT, MetaAction::Load) => agg.contexts.push((m.ptr, m.domain)),
                    _ => {}
                },
                EventKind::Alloc { class, size, .. } if in_window(t) => {
                    let a = agg.allocs.entry(class).or_insert((0, 0));
                    a.0 += size;
                    a.1 += 1;
                }
                EventKind::GcResize { heap_size } => {
                    agg.resizes += 1;
                    agg.max_heap = agg.max_heap.max(heap_size);
                }
                EventKind::GcMove { objects } => agg.moves += objects.len() as u64 / 2,
                EventKind::GcEvent { event, generation } => {
                    recs.push(Rec::Gc(event, (generation as usize).min(2), t));
                }
                EventKind::GcHandleCreated { htype, .. } => {
                    agg.serial.push((ev.offset, t, Serial::Handle(htype, true)));
                }
                EventKind::GcHandleDestroyed { htype, .. } => {
                    agg.serial
                        .push((ev.offset, t, Serial::Handle(htype, false)));
                }
                EventKind::Throw { .. } if in_window(t) => agg.throws += 1,
                EventKind::Clause { clause_type, .. } => {
                    if let Some(c) = agg.clauses.get_mut(clause_type as usize) {
                        *c += 1;
                    }
                }
                EventKind::Monitor { event, obj, .. } => {
                    if let Some(c) = agg.monitor_counts.get_mut(event as usize) {
                        *c += 1;
                    }
                    if event == MONITOR_CONTENTION {
                        agg.locks.entry(obj).or_default().contentions += 1;
                    }
                    recs.push(Rec::Monitor(event, obj, t));
                }
                EventKind::SampleHit { ips, .. } => {
                    for ip in ips.take(1) {
                        agg.samples.push((ip, tid));
                    }
                }
                EventKind::Usym { addr, size, name } => agg.usyms.push((addr, size, name)),
                EventKind::HeapStart => agg.serial.push((ev.offset, t, Serial::HeapStart)),
                EventKind::HeapEnd => agg.serial.push((ev.offset, t, Serial::HeapEnd)),
                EventKind::HeapObject { class, size, .. } if size > 0 => {
                    agg.serial
                        .push((ev.offset, t, Serial::HeapObject { class, size }));
                }
                EventKind::HeapRoots { roots, .. } => {
                    agg.serial
                        .push((ev.offset, t, Serial::Roots(roots.len() as u64)))
                }
                EventKind::CountersDesc { descs } => {
                    agg.serial.push((ev.offset, t, Serial::CountersDesc(descs)))
                }
                EventKind::Counters { values, .. } => {
                    agg.serial.push((ev.offset, t, Serial::Counters(values)))
                }
                _ => {}
            }
        }
        agg.skipped_bytes += evs.remaining() as u64;
    }
    for (b, s) in stats.iter().enumerate() {
        if s.0 > 0 {
            agg.stats.insert(b as u8, *s);
        }
    }
    (agg, recs)
}

/// Replays a chunk's ordered records: the emulated call stack, GC pauses, monitor waits.
fn fold(calls: &mut Calls, agg: &mut Agg<'_>, recs: &[Rec]) {
    for &r in recs {
        match r {
            Rec::Enter(method, t) => {
                calls.last = t;
                calls.enter(method, t);
            }
            Rec::Leave(method, t) => {
                calls.last = t;
                if calls.stack.last().is_some_and(|f| f.method == method) {
                    calls.pop(t);
                } else {
                    match calls.stack.iter().rposition(|f| f.method == method) {
                        Some(pos) => {
                            while calls.stack.len() > pos {
                                calls.pop(t);
                            }
                        }
                        None => agg.unmatched_leaves += 1,
                    }
                }
            }
            Rec::Gc(event, g, t) => {
                if event == 0 {
                    if let Some(s) = agg.gc_start.get_mut(g) {
                        *s = Some(t);
                    }
                } else if event == 5 {
                    if let (Some(Some(start)), Some(gen)) =
                        (agg.gc_start.get(g).copied(), agg.gens.get_mut(g))
                    {
                        let d = t.saturating_sub(start);
                        gen.count += 1;
                        gen.total += d;
                        gen.max = gen.max.max(d);
                    }
                    if let Some(s) = agg.gc_start.get_mut(g) {
                        *s = None;
                    }
                }
            }
            Rec::Monitor(event, obj, t) => match event {
                MONITOR_CONTENTION => {
                    agg.pending_contention.insert(obj, t);
                }
                MONITOR_DONE | MONITOR_FAIL => {
                    if let Some(start) = agg.pending_contention.remove(&obj) {
                        let d = t.saturating_sub(start);
                        let l = agg.locks.entry(obj).or_default();
                        l.wait += d;
                        l.max = l.max.max(d);
                    }
                }
                _ => {}
            },
        }
    }
}

/// Buffers per decode chunk: decoding chunk k+1 overlaps replaying chunk k.
const CHUNK: usize = 4;

/// One thread's pass: chunks of buffers are decoded on one rayon task while the previous
/// chunk's records are replayed on another (a two-stage pipeline, so one busy thread still
/// uses two cores).
fn run_thread<'a>(bufs: &[Buffer<'a>], window: Option<(u64, u64)>, parallel: bool) -> Agg<'a> {
    let mut agg = Agg::default();
    let mut calls = Calls {
        stack: Vec::with_capacity(256),
        slots: Vec::new(),
        slot_of: FxMap::default(),
        cache: [(0, u32::MAX); 512],
        last: 0,
    };
    let mut pending: Option<(Agg<'a>, Vec<Rec>)> = None;
    for chunk in bufs.chunks(CHUNK) {
        let prev = pending.take();
        let step = |calls: &mut Calls, agg: &mut Agg<'a>| {
            if let Some((a, recs)) = prev {
                fold(calls, agg, &recs);
                merge(agg, a);
            }
        };
        let decoded = if parallel {
            rayon::join(
                || decode_chunk(chunk, window),
                || step(&mut calls, &mut agg),
            )
            .0
        } else {
            step(&mut calls, &mut agg);
            decode_chunk(chunk, window)
        };
        pending = Some(decoded);
    }
    if let Some((a, recs)) = pending {
        fold(&mut calls, &mut agg, &recs);
        merge(&mut agg, a);
    }
    // mprof-report closes unfinished frames at the thread's last time
    agg.unfinished += calls.stack.len() as u64;
    let last = calls.last;
    while !calls.stack.is_empty() {
        calls.pop(last);
    }
    for (m, st, _) in calls.slots {
        agg.methods.insert(m, st);
    }
    agg
}

fn merge<'a>(into: &mut Agg<'a>, o: Agg<'a>) {
    for (k, v) in o.methods {
        let m = into.methods.entry(k).or_default();
        m.calls += v.calls;
        m.self_ns += v.self_ns;
        m.total_ns += v.total_ns;
        m.total_all_ns += v.total_all_ns;
    }
    into.method_names.extend(o.method_names);
    into.jit_events += o.jit_events;
    into.helpers += o.helpers;
    into.helpers_size += o.helpers_size;
    into.classes.extend(o.classes);
    into.vtables.extend(o.vtables);
    for (k, v) in o.allocs {
        let a = into.allocs.entry(k).or_insert((0, 0));
        a.0 += v.0;
        a.1 += v.1;
    }
    into.resizes += o.resizes;
    into.max_heap = into.max_heap.max(o.max_heap);
    into.moves += o.moves;
    for (a, b) in into.gens.iter_mut().zip(o.gens) {
        a.count += b.count;
        a.total += b.total;
        a.max = a.max.max(b.max);
    }
    for (a, b) in into.handles.iter_mut().zip(o.handles) {
        a.created += b.created;
        a.destroyed += b.destroyed;
        a.max = a.max.max(b.max);
    }
    into.throws += o.throws;
    for (a, b) in into.clauses.iter_mut().zip(o.clauses) {
        *a += b;
    }
    for (k, v) in o.locks {
        let l = into.locks.entry(k).or_default();
        l.contentions += v.contentions;
        l.wait += v.wait;
        l.max = l.max.max(v.max);
    }
    for (a, b) in into.monitor_counts.iter_mut().zip(o.monitor_counts) {
        *a += b;
    }
    into.images += o.images;
    into.assemblies += o.assemblies;
    into.threads.extend(o.threads);
    into.domains.extend(o.domains);
    into.contexts.extend(o.contexts);
    into.samples.extend(o.samples);
    into.usyms.extend(o.usyms);
    into.jit_code.extend(o.jit_code);
    for (k, v) in o.stats {
        let s = into.stats.entry(k).or_insert((0, u32::MAX, 0, 0));
        s.0 += v.0;
        s.1 = s.1.min(v.1);
        s.2 = s.2.max(v.2);
        s.3 += v.3;
    }
    into.serial.extend(o.serial);
    into.problems.extend(o.problems);
    into.skipped_bytes += o.skipped_bytes;
    into.buffers += o.buffers;
    into.events += o.events;
    into.unmatched_leaves += o.unmatched_leaves;
    into.unfinished += o.unfinished;
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
    /// Per class: (name, bytes, count), by bytes.
    pub classes: Vec<(String, u64, u64)>,
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
    /// (class, bytes, count), by bytes.
    pub alloc: Vec<(String, u64, u64)>,
    /// (method, stats), by total.
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
}

fn name(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Decodes `file` and computes every section.
pub fn compute(file: &File<'_>, opts: &Options) -> Report {
    let mut groups: Vec<(u64, Vec<Buffer<'_>>)> = Vec::new();
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut problems = Vec::new();
    let mut start_time = None;
    for b in file.buffers() {
        match b {
            Ok(b) => {
                start_time.get_or_insert(b.header.time_base);
                if opts.thread.is_some_and(|t| t != b.header.thread_id) {
                    continue;
                }
                let slot = *index.entry(b.header.thread_id).or_insert_with(|| {
                    groups.push((b.header.thread_id, Vec::new()));
                    groups.len() - 1
                });
                if let Some(g) = groups.get_mut(slot) {
                    g.1.push(b);
                }
            }
            Err(e) => problems.push(e),
        }
    }
    let start_time = start_time.unwrap_or(0);
    let window = opts
        .time
        .map(|(a, b)| (start_time.saturating_add(a), start_time.saturating_add(b)));
    let aggs: Vec<Agg<'_>> = if opts.parallel {
        groups
            .par_iter()
            .map(|(_, bufs)| run_thread(bufs, window, true))
            .collect()
    } else {
        groups
            .iter()
            .map(|(_, bufs)| run_thread(bufs, window, false))
            .collect()
    };
    let mut agg = Agg::default();
    for a in aggs {
        merge(&mut agg, a);
    }
    agg.problems.extend(problems);
    finish(file, agg, start_time)
}

fn finish(file: &File<'_>, mut agg: Agg<'_>, start_time: u64) -> Report {
    let class_name = |c: ClassRef, agg: &Agg<'_>| -> String {
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
    let method_name = |m: u64, agg: &Agg<'_>| -> String {
        match agg.method_names.get(&m) {
            Some((n, _)) => name(n),
            None => format!("unknown method {m:#x}"),
        }
    };
    // allocations, merged by class name (several vtables may map to one class)
    let mut alloc_map: HashMap<String, (u64, u64)> = HashMap::new();
    for (&c, &(bytes, count)) in &agg.allocs {
        let a = alloc_map.entry(class_name(c, &agg)).or_insert((0, 0));
        a.0 += bytes;
        a.1 += count;
    }
    let mut alloc: Vec<(String, u64, u64)> =
        alloc_map.into_iter().map(|(n, (b, c))| (n, b, c)).collect();
    alloc.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
    let mut calls: Vec<(String, MethodStats)> = agg
        .methods
        .iter()
        .map(|(&m, &s)| (method_name(m, &agg), s))
        .collect();
    calls.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(&b.0)));
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
    for &(ip, _) in &agg.samples {
        let jit = agg.jit_code.partition_point(|&(c, _, _)| c <= ip);
        let found = jit
            .checked_sub(1)
            .and_then(|i| agg.jit_code.get(i))
            .filter(|&&(c, s, _)| ip < c.saturating_add(s));
        if let Some(&(_, _, m)) = found {
            managed += 1;
            *hits.entry(method_name(m, &agg)).or_default() += 1;
            continue;
        }
        unmanaged += 1;
        let u = agg.usyms.partition_point(|&(a, _, _)| a <= ip);
        match u.checked_sub(1).and_then(|i| agg.usyms.get(i)) {
            Some(&(a, _, n)) if ip - a < 4096 => *hits.entry(name(n)).or_default() += 1,
            _ => unresolved += 1,
        }
    }
    let mut sample_rows: Vec<(String, u64)> = hits.into_iter().collect();
    sample_rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    // heap shots and counters need file order
    agg.serial.sort_by_key(|s| s.0);
    let mut heapshots = Vec::new();
    type Shot = (HeapShot, HashMap<ClassRef, (u64, u64)>);
    let mut cur: Option<Shot> = None;
    let mut descs: HashMap<u64, (u64, String, u64)> = HashMap::new();
    let mut values: HashMap<u64, String> = HashMap::new();
    let mut raw_values: HashMap<u64, CounterAcc> = HashMap::new();
    for (_, t, s) in &agg.serial {
        match *s {
            Serial::HeapStart => {
                cur = Some((
                    HeapShot {
                        time_ns: t.saturating_sub(start_time),
                        ..HeapShot::default()
                    },
                    HashMap::new(),
                ))
            }
            Serial::HeapObject { class, size } => {
                if let Some((h, m)) = cur.as_mut() {
                    h.size += size;
                    h.objects += 1;
                    let e = m.entry(class).or_insert((0, 0));
                    e.0 += size;
                    e.1 += 1;
                }
            }
            Serial::Roots(n) => {
                if let Some((h, _)) = cur.as_mut() {
                    h.roots += n;
                }
            }
            Serial::HeapEnd => {
                if let Some((mut h, m)) = cur.take() {
                    let mut by: HashMap<String, (u64, u64)> = HashMap::new();
                    for (c, (b, n)) in m {
                        let e = by.entry(class_name(c, &agg)).or_insert((0, 0));
                        e.0 += b;
                        e.1 += n;
                    }
                    h.classes = by.into_iter().map(|(n, (b, c))| (n, b, c)).collect();
                    h.classes
                        .sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
                    heapshots.push(h);
                }
            }
            Serial::Handle(ty, created) => {
                if let Some(h) = agg.handles.get_mut(ty as usize) {
                    if created {
                        h.created += 1;
                        h.live += 1;
                        h.max = h.max.max(h.live);
                    } else {
                        h.destroyed += 1;
                        h.live -= 1;
                    }
                }
            }
            Serial::CountersDesc(d) => {
                for d in d {
                    descs.insert(d.index, (d.section, name(d.name), d.unit));
                }
            }
            Serial::Counters(vals) => {
                for (index, _ty, v) in vals {
                    let acc = raw_values.entry(index).or_default();
                    let text = acc.apply(v);
                    values.insert(index, text);
                }
            }
        }
    }
    let mut counters: Vec<Counter> = descs
        .iter()
        .filter_map(|(i, (section, n, unit))| {
            values.get(i).map(|v| Counter {
                section: *section,
                name: n.clone(),
                value: if *unit == 2 << 24 {
                    // TIME unit: 100 ns ticks, shown in ms
                    v.parse::<i64>()
                        .map(|x| format!("{:.3}ms", x as f64 / 10_000.0))
                        .unwrap_or_else(|_| v.clone())
                } else {
                    v.clone()
                },
            })
        })
        .collect();
    counters.sort_by(|a, b| a.section.cmp(&b.section).then(a.name.cmp(&b.name)));
    let mut monitors: Vec<(u64, u64, u64, u64)> = agg
        .locks
        .iter()
        .filter(|(_, l)| l.contentions > 0)
        .map(|(&o, l)| (o, l.contentions, l.wait, l.max))
        .collect();
    monitors.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let mut stats: Vec<(u8, u64, u32, u32, u64)> = agg
        .stats
        .iter()
        .map(|(&b, &(c, mn, mx, by))| (b, c, mn, mx, by))
        .collect();
    stats.sort_by_key(|s| ((s.0 & 0xf), s.0 >> 4));
    let mut gc_gens = [(0, 0, 0); 3];
    for (o, g) in gc_gens.iter_mut().zip(agg.gens) {
        *o = (g.count, g.max, g.total);
    }
    let mut gc_handles = [(0, 0, 0); 4];
    for (o, h) in gc_handles.iter_mut().zip(agg.handles) {
        *o = (h.created, h.destroyed, h.max.max(0) as u64);
    }
    Report {
        header: file.header.clone(),
        start_time,
        jit: (
            with_code.len() as u64,
            code_size,
            agg.helpers,
            agg.helpers_size,
        ),
        gc: (agg.resizes, agg.max_heap, agg.moves),
        gc_gens,
        gc_handles,
        alloc,
        calls,
        metadata: (agg.images, agg.assemblies),
        exceptions: (agg.throws, agg.clauses),
        monitors,
        monitor_totals: {
            let [_, c, d, f] = agg.monitor_counts;
            (c, d, f)
        },
        threads: dedupe(&agg.threads),
        domains: agg.domains.iter().map(|&(t, n)| (t, name(n))).collect(),
        contexts: agg.contexts.clone(),
        samples: (sample_rows, unmanaged, managed, unresolved),
        heapshots,
        counters,
        stats,
        buffers: agg.buffers,
        events: agg.events,
        problems: agg.problems,
        skipped_bytes: agg.skipped_bytes,
        unmatched_leaves: agg.unmatched_leaves,
        unfinished: agg.unfinished,
    }
}

fn dedupe(v: &[(u64, &[u8])]) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = Vec::new();
    for &(t, n) in v {
        match out.iter_mut().find(|(o, _)| *o == t) {
            Some(e) => e.1 = name(n),
            None => out.push((t, name(n))),
        }
    }
    out
}

#[derive(Default)]
struct CounterAcc {
    i: i64,
    u: u64,
}

impl CounterAcc {
    fn apply(&mut self, v: CounterValue<'_>) -> String {
        match v {
            CounterValue::Signed(d) => {
                self.i = self.i.wrapping_add(d);
                self.i.to_string()
            }
            CounterValue::Unsigned(d) => {
                self.u = self.u.wrapping_add(d);
                self.u.to_string()
            }
            CounterValue::Double(x) => format!("{x:.6}"),
            CounterValue::String(s) => s.map(name).unwrap_or_else(|| "(null)".into()),
        }
    }
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

/// Writes the selected sections as text, laid out like mprof-report.
pub fn write_text(
    out: &mut dyn Write,
    r: &Report,
    sections: &[&str],
    verbose: bool,
) -> io::Result<()> {
    let want = |s: &str| sections.contains(&s);
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
        for (n, s) in &r.calls {
            total_calls += s.calls;
            let ms = s.total_ns / 1_000_000;
            if ms == 0 && !verbose {
                continue;
            }
            writeln!(out, "{ms:8} {:8} {:10} {n}", s.self_ns / 1_000_000, s.calls)?;
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
                EventType(b & 0xf).name(),
                b & 0xf0
            )?;
        }
    }
    Ok(())
}

/// The report as JSON (schema `profkit.mlpd-report/1`).
pub fn to_json(r: &Report) -> Value {
    let h = &r.header;
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
            json!({"type": HANDLE_NAMES.get(i).copied().unwrap_or("?"), "created": c, "destroyed": d, "max": m})
        })
        .collect();
    let (throws, cl) = r.exceptions;
    json!({
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
        "alloc": r.alloc.iter().map(|(n, b, c)| json!({"class": n, "bytes": b, "count": c})).collect::<Vec<_>>(),
        "calls": r.calls.iter().filter(|(_, s)| s.calls > 0).map(|(n, s)| json!({
            "method": n, "calls": s.calls, "total_ns": s.total_ns, "self_ns": s.self_ns,
            "total_all_activations_ns": s.total_all_ns,
        })).collect::<Vec<_>>(),
        "metadata": {"images": r.metadata.0, "assemblies": r.metadata.1},
        "exceptions": {"throws": throws, "catch": cl.first(), "filter": cl.get(1), "finally": cl.get(2), "fault": cl.get(4)},
        "monitors": r.monitors.iter().map(|&(o, n, w, m)| json!({"object": o, "contentions": n, "wait_ns": w, "max_wait_ns": m})).collect::<Vec<_>>(),
        "monitor_totals": {"contentions": r.monitor_totals.0, "acquired": r.monitor_totals.1, "failures": r.monitor_totals.2},
        "threads": r.threads.iter().map(|(t, n)| json!({"id": t, "name": n})).collect::<Vec<_>>(),
        "domains": r.domains.iter().map(|(d, n)| json!({"id": d, "name": n})).collect::<Vec<_>>(),
        "contexts": r.contexts.iter().map(|(c, d)| json!({"id": c, "domain": d})).collect::<Vec<_>>(),
        "heapshots": r.heapshots.iter().map(|h| json!({
            "time_ns": h.time_ns, "size": h.size, "objects": h.objects, "roots": h.roots,
            "classes": h.classes.iter().map(|(n, b, c)| json!({"class": n, "bytes": b, "count": c})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "counters": r.counters.iter().map(|c| json!({"section": section_name(c.section), "name": c.name, "value": c.value})).collect::<Vec<_>>(),
        "stats": {"buffers": r.buffers, "events": r.events, "problems": r.problems.len(), "skipped_bytes": r.skipped_bytes,
                  "unmatched_leaves": r.unmatched_leaves, "unfinished_frames": r.unfinished},
    })
}
