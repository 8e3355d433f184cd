//! The report's pass over the buffers: a pipeline that decodes buffers on worker threads and
//! stitches their results in file order on the calling thread.
//!
//! * The **source** (a thread) yields buffers in file order: slices of a mapped file, or
//!   buffers read one by one from a stream (gzip inflates there, overlapping the decoding).
//!   A fixed set of tokens bounds the buffers in flight, so memory does not grow with the file.
//! * **Workers** decode a buffer into a [`Piece`]. Order-free numbers (allocations, JIT,
//!   metadata names, event stats) go into the worker's own [`Agg`]. Calls are replayed inside
//!   the buffer against an *unknown inherited stack*: frames entered and left inside the buffer
//!   are accounted at once; what depends on the frames the buffer inherits (leaves of those
//!   frames, the callee time they receive, whether a method is already active further down)
//!   is summarised in [`Phase`]s. A leave that matches no frame of the buffer while the
//!   buffer still has frames of its own cannot be resolved locally: the rest of the buffer's
//!   calls go to the ordered items and are replayed by the stitcher.
//! * The **stitcher** applies the pieces in file order: per thread it keeps the real stack and
//!   resolves the phases against it; everything whose result depends on order across buffers
//!   (GC pauses, monitor waits, heap shots, handles, counters, names, tracking) is an ordered
//!   item of the piece. With `--traces` the workers send every call as an item, because the
//!   backtraces need the whole stack at each event.

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Mutex;

use crate::error::Error;
use crate::header::Header;
use crate::raw::*;
use crate::read::{Buffer, ClassRef, CounterValue, EventKind, MetaAction};
use crate::stream::OwnedBuffer;
use rustc_hash::FxHashMap as FxMap;

use super::{MethodStats, Options};

/// A range in a piece's `arena`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    start: u32,
    len: u32,
}

/// Where a backtrace comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bt {
    /// None recorded.
    None,
    /// The thread's emulated call stack at the event.
    Stack,
    /// The event's own frames.
    Frames(Span),
}

/// What a backtrace is counted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    Alloc(ClassRef),
    Throw,
    Monitor(u64),
    HandleCreated(u8),
    HandleDestroyed(u8),
}

/// An owned counter value (a delta, applied in file order).
#[derive(Clone, Debug)]
pub(crate) enum Value {
    Signed(i64),
    Unsigned(u64),
    Double(f64),
    String(Option<Box<str>>),
}

/// A tracked-object event (`--track`, `--find`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum TrackRec {
    Alloc {
        obj: u64,
        class: ClassRef,
        size: u64,
        time: u64,
        bt: Bt,
    },
    Handle {
        obj: u64,
        handle: u64,
        time: u64,
        bt: Bt,
    },
    Move {
        from: u64,
        to: u64,
    },
    Ref {
        obj: u64,
        parent: u64,
        class: ClassRef,
    },
}

/// An event whose effect depends on order (applied by the stitcher in file order).
#[derive(Clone, Debug)]
pub(crate) enum Item {
    Enter(u64, u64),
    Leave(u64, u64),
    Gc(u64, usize, u64),
    Monitor(u8, u64, u64, Bt),
    Trace(Target, u64, Bt),
    HeapStart(u64),
    HeapEnd,
    HeapObjects(Vec<(ClassRef, u64, u64)>),
    HeapObject {
        obj: u64,
        class: ClassRef,
        size: u64,
        refs: Span,
    },
    Roots(u64, Span),
    Handle(u8, bool),
    CounterDescs(Vec<(u64, u64, Box<str>, u64)>),
    Counters(Vec<(u64, Value)>),
    Thread(u64, Box<str>),
    Domain(u64, Box<str>),
    Context(u64, u64),
    Class(u64, Box<[u8]>),
    Vtable(u64, u64),
    Track(TrackRec),
}

/// What the frames a buffer inherits see between two of their leaves.
#[derive(Clone, Debug, Default)]
pub(crate) struct Phase {
    /// Time of completed top-level frames: callee time of the inherited top frame.
    callee: u64,
    /// (method, inclusive ns) of completed frames with no activation of the same method
    /// below them in the buffer: outermost activations unless the inherited stack has one.
    cands: Vec<(u64, u64)>,
    /// The leave that ends the phase (it pops inherited frames).
    end: Option<(u64, u64)>,
}

/// A frame left open at the end of a buffer's local replay.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Open {
    method: u64,
    start: u64,
    callee: u64,
}

/// One buffer's ordered results.
#[derive(Debug, Default)]
pub(crate) struct Piece {
    thread: u64,
    phases: Vec<Phase>,
    open: Vec<Open>,
    items: Vec<Item>,
    arena: Vec<u64>,
    last_call: Option<u64>,
    problem: Option<Error>,
}

/// Order-free aggregates (one per worker, merged at the end).
#[derive(Debug)]
pub(crate) struct Agg {
    pub methods: FxMap<u64, MethodStats>,
    pub method_names: FxMap<u64, Box<[u8]>>,
    pub jit_code: Vec<(u64, u64, u64)>,
    pub helpers: u64,
    pub helpers_size: u64,
    pub classes: FxMap<u64, Box<[u8]>>,
    pub vtables: FxMap<u64, u64>,
    pub allocs: FxMap<ClassRef, (u64, u64)>,
    pub resizes: u64,
    pub max_heap: u64,
    pub moves: u64,
    pub throws: u64,
    pub clauses: [u64; 5],
    pub images: u64,
    pub assemblies: u64,
    pub samples: FxMap<u64, u64>,
    pub usyms: Vec<(u64, u64, Box<[u8]>)>,
    pub stats: [(u64, u32, u32, u64); 256],
    pub problems: Vec<Error>,
    pub skipped_bytes: u64,
    pub buffers: u64,
    pub events: u64,
}

impl Default for Agg {
    fn default() -> Self {
        Agg {
            methods: FxMap::default(),
            method_names: FxMap::default(),
            jit_code: Vec::new(),
            helpers: 0,
            helpers_size: 0,
            classes: FxMap::default(),
            vtables: FxMap::default(),
            allocs: FxMap::default(),
            resizes: 0,
            max_heap: 0,
            moves: 0,
            throws: 0,
            clauses: [0; 5],
            images: 0,
            assemblies: 0,
            samples: FxMap::default(),
            usyms: Vec::new(),
            stats: [(0, u32::MAX, 0, 0); 256],
            problems: Vec::new(),
            skipped_bytes: 0,
            buffers: 0,
            events: 0,
        }
    }
}

impl Agg {
    fn merge(&mut self, o: Agg) {
        for (k, v) in o.methods {
            self.methods.entry(k).or_default().add(&v);
        }
        self.method_names.extend(o.method_names);
        self.jit_code.extend(o.jit_code);
        self.helpers += o.helpers;
        self.helpers_size += o.helpers_size;
        self.classes.extend(o.classes);
        self.vtables.extend(o.vtables);
        for (k, v) in o.allocs {
            let a = self.allocs.entry(k).or_insert((0, 0));
            a.0 += v.0;
            a.1 += v.1;
        }
        self.resizes += o.resizes;
        self.max_heap = self.max_heap.max(o.max_heap);
        self.moves += o.moves;
        self.throws += o.throws;
        for (a, b) in self.clauses.iter_mut().zip(o.clauses) {
            *a += b;
        }
        self.images += o.images;
        self.assemblies += o.assemblies;
        for (k, v) in o.samples {
            *self.samples.entry(k).or_default() += v;
        }
        self.usyms.extend(o.usyms);
        for (a, b) in self.stats.iter_mut().zip(o.stats) {
            a.0 += b.0;
            a.1 = a.1.min(b.1);
            a.2 = a.2.max(b.2);
            a.3 += b.3;
        }
        self.problems.extend(o.problems);
        self.skipped_bytes += o.skipped_bytes;
        self.buffers += o.buffers;
        self.events += o.events;
    }
}

impl MethodStats {
    pub(crate) fn add(&mut self, o: &MethodStats) {
        self.calls += o.calls;
        self.self_ns += o.self_ns;
        self.total_ns += o.total_ns;
        self.total_all_ns += o.total_all_ns;
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    method: u64,
    stats: MethodStats,
    active: u32,
    acc: u64,
    touched: bool,
}

#[derive(Clone, Copy, Debug)]
struct LocalFrame {
    slot: u32,
    start: u64,
    callee: u64,
}

/// A worker: decodes buffers into pieces; keeps its order-free aggregates.
pub(crate) struct Worker {
    pub agg: Agg,
    slots: Vec<Slot>,
    slot_of: FxMap<u64, u32>,
    /// Direct-mapped cache in front of `slot_of` (method pointers repeat a lot).
    cache: Box<[(u64, u32); 512]>,
    stack: Vec<LocalFrame>,
    touched: Vec<u32>,
    alloc_cache: [(Option<ClassRef>, u64, u64); 64],
    /// Every call goes to the items (backtraces need the whole stack).
    full: bool,
    /// Forward what tracking needs.
    track: bool,
    traces: bool,
}

impl Worker {
    pub(crate) fn new(opts: &Options) -> Worker {
        let track = !opts.track.is_empty() || opts.find.is_some();
        Worker {
            agg: Agg::default(),
            slots: Vec::new(),
            slot_of: FxMap::default(),
            cache: Box::new([(0, u32::MAX); 512]),
            stack: Vec::with_capacity(256),
            touched: Vec::new(),
            alloc_cache: [(None, 0, 0); 64],
            full: opts.traces,
            track,
            traces: opts.traces,
        }
    }

    /// Moves the per-method statistics of the local replays into `agg`.
    pub(crate) fn finish(mut self) -> Agg {
        for (class, bytes, n) in self.alloc_cache {
            if let Some(c) = class {
                let a = self.agg.allocs.entry(c).or_insert((0, 0));
                a.0 += bytes;
                a.1 += n;
            }
        }
        for s in self.slots.drain(..) {
            self.agg.methods.entry(s.method).or_default().add(&s.stats);
        }
        self.agg
    }

    #[inline(always)]
    fn slot(&mut self, method: u64) -> u32 {
        let ci = ((method >> 3) ^ (method >> 12)) as usize & 511;
        if let Some(&(m, s)) = self.cache.get(ci) {
            if m == method && s != u32::MAX {
                return s;
            }
        }
        self.slot_miss(method, ci)
    }

    #[inline(never)]
    fn slot_miss(&mut self, method: u64, ci: usize) -> u32 {
        let s = match self.slot_of.get(&method) {
            Some(&s) => s,
            None => {
                let s = self.slots.len() as u32;
                self.slots.push(Slot {
                    method,
                    ..Slot::default()
                });
                self.slot_of.insert(method, s);
                s
            }
        };
        if let Some(c) = self.cache.get_mut(ci) {
            *c = (method, s);
        }
        s
    }

    #[inline(always)]
    fn method_of(&self, slot: u32) -> u64 {
        self.slots.get(slot as usize).map_or(0, |s| s.method)
    }

    #[inline(always)]
    fn pop_local(&mut self, t: u64, phase: &mut Phase) {
        let Some(f) = self.stack.pop() else { return };
        let dur = t.saturating_sub(f.start);
        if let Some(s) = self.slots.get_mut(f.slot as usize) {
            s.stats.self_ns += dur.saturating_sub(f.callee);
            s.stats.total_all_ns += dur;
            s.active = s.active.saturating_sub(1);
            if s.active == 0 {
                if !s.touched {
                    s.touched = true;
                    self.touched.push(f.slot);
                }
                s.acc += dur;
            }
        }
        match self.stack.last_mut() {
            Some(p) => p.callee += dur,
            None => phase.callee += dur,
        }
    }

    fn flush_phase(&mut self, phase: &mut Phase) {
        for &i in &self.touched {
            if let Some(s) = self.slots.get_mut(i as usize) {
                phase.cands.push((s.method, s.acc));
                s.acc = 0;
                s.touched = false;
            }
        }
        self.touched.clear();
    }

    /// Decodes one buffer.
    pub(crate) fn piece(&mut self, buf: &Buffer<'_>, window: Option<(u64, u64)>) -> Piece {
        let in_window = |t: u64| window.is_none_or(|(a, b)| t >= a && t <= b);
        let mut p = Piece {
            thread: buf.header.thread_id,
            ..Piece::default()
        };
        let mut heap: FxMap<ClassRef, (u64, u64)> = FxMap::default();
        let mut phase = Phase::default();
        let mut bailed = self.full;
        self.stack.clear();
        let agg = &mut self.agg;
        agg.buffers += 1;
        let mut evs = buf.events();
        // pushes an ordered item, first flushing the heap objects aggregated so far
        fn push(p: &mut Piece, heap: &mut FxMap<ClassRef, (u64, u64)>, it: Item) {
            if !heap.is_empty() {
                let v = heap.drain().map(|(c, (b, n))| (c, b, n)).collect();
                p.items.push(Item::HeapObjects(v));
            }
            p.items.push(it);
        }
        fn span(arena: &mut Vec<u64>, it: impl Iterator<Item = u64>) -> Span {
            let start = arena.len();
            arena.extend(it);
            Span {
                start: start as u32,
                len: (arena.len() - start) as u32,
            }
        }
        let traces = self.traces;
        let track = self.track;
        let mut calls_stats = [(0u64, u32::MAX, 0u32, 0u64); 4];
        loop {
            // the hot path: calls, without building an Event
            if let Some((byte, size, t, method)) = evs.next_call() {
                // per-buffer counters for the three call events (merged below)
                if let Some(s) = calls_stats.get_mut((byte >> 4) as usize) {
                    s.0 += 1;
                    s.1 = s.1.min(size);
                    s.2 = s.2.max(size);
                    s.3 += u64::from(size);
                }
                if in_window(t) {
                    self.call(
                        byte == event::METHOD_ENTER,
                        t,
                        method,
                        &mut p,
                        &mut phase,
                        &mut bailed,
                    );
                }
                continue;
            }
            if !track {
                if let Some((size, t, class, _, bytes)) = evs.next_alloc() {
                    let agg = &mut self.agg;
                    agg.events += 1;
                    if let Some(s) = agg.stats.get_mut(0) {
                        s.0 += 1;
                        s.1 = s.1.min(size);
                        s.2 = s.2.max(size);
                        s.3 += u64::from(size);
                    }
                    if in_window(t) {
                        self.alloc(class, bytes);
                        if traces {
                            let it = Item::Trace(Target::Alloc(class), bytes, Bt::Stack);
                            push(&mut p, &mut heap, it);
                        }
                    }
                    continue;
                }
            }
            let Some(ev) = evs.next() else { break };
            let ev = match ev {
                Ok(e) => e,
                Err(e) => {
                    self.agg.problems.push(e);
                    continue;
                }
            };
            let agg = &mut self.agg;
            agg.events += 1;
            if let Some(s) = agg.stats.get_mut(ev.byte as usize) {
                s.0 += 1;
                s.1 = s.1.min(ev.size);
                s.2 = s.2.max(ev.size);
                s.3 += u64::from(ev.size);
            }
            let t = ev.time;
            match ev.kind {
                EventKind::Enter { method } if in_window(t) => {
                    self.call(true, t, method, &mut p, &mut phase, &mut bailed)
                }
                EventKind::Leave { method } | EventKind::ExcLeave { method } if in_window(t) => {
                    self.call(false, t, method, &mut p, &mut phase, &mut bailed)
                }
                EventKind::Enter { .. } | EventKind::Leave { .. } | EventKind::ExcLeave { .. } => {}
                EventKind::Jit {
                    method,
                    code,
                    size,
                    name,
                } => {
                    agg.method_names.insert(method, name.into());
                    agg.jit_code.push((code, size, method));
                }
                EventKind::JitHelper { size, .. } => {
                    agg.helpers += 1;
                    agg.helpers_size += size;
                }
                EventKind::Metadata(m) => match (m.mtype, m.action) {
                    (MTYPE_CLASS, MetaAction::Load) => {
                        agg.classes.insert(m.ptr, m.name.into());
                        if track {
                            push(&mut p, &mut heap, Item::Class(m.ptr, m.name.into()));
                        }
                    }
                    (MTYPE_VTABLE, MetaAction::Load) => {
                        agg.vtables.insert(m.ptr, m.class);
                        if track {
                            push(&mut p, &mut heap, Item::Vtable(m.ptr, m.class));
                        }
                    }
                    (MTYPE_IMAGE, MetaAction::Load) => agg.images += 1,
                    (MTYPE_ASSEMBLY, MetaAction::Load) => agg.assemblies += 1,
                    (MTYPE_THREAD, MetaAction::Name) => {
                        push(&mut p, &mut heap, Item::Thread(m.ptr, name(m.name)))
                    }
                    (MTYPE_DOMAIN, MetaAction::Name) => {
                        push(&mut p, &mut heap, Item::Domain(m.ptr, name(m.name)))
                    }
                    (MTYPE_CONTEXT, MetaAction::Load) => {
                        push(&mut p, &mut heap, Item::Context(m.ptr, m.domain))
                    }
                    _ => {}
                },
                EventKind::Alloc {
                    class,
                    size,
                    obj,
                    backtrace,
                } => {
                    if !in_window(t) {
                        continue;
                    }
                    self.alloc(class, size);
                    let bt = if !traces {
                        Bt::None
                    } else if ev.byte & TYPE_ALLOC_BT != 0 {
                        Bt::Frames(span(&mut p.arena, backtrace))
                    } else {
                        Bt::Stack
                    };
                    if traces {
                        push(
                            &mut p,
                            &mut heap,
                            Item::Trace(Target::Alloc(class), size, bt),
                        );
                    }
                    if track {
                        let r = TrackRec::Alloc {
                            obj,
                            class,
                            size,
                            time: t,
                            bt,
                        };
                        push(&mut p, &mut heap, Item::Track(r));
                    }
                }
                EventKind::GcResize { heap_size } => {
                    agg.resizes += 1;
                    agg.max_heap = agg.max_heap.max(heap_size);
                }
                EventKind::GcMove { objects } => {
                    agg.moves += objects.len() as u64 / 2;
                    if track {
                        let mut it = objects;
                        while let (Some(from), Some(to)) = (it.next(), it.next()) {
                            push(&mut p, &mut heap, Item::Track(TrackRec::Move { from, to }));
                        }
                    }
                }
                EventKind::GcEvent { event, generation } => push(
                    &mut p,
                    &mut heap,
                    Item::Gc(event, (generation as usize).min(2), t),
                ),
                EventKind::GcHandleCreated {
                    htype,
                    handle,
                    obj,
                    backtrace,
                } => {
                    let ht = htype.min(255) as u8;
                    push(&mut p, &mut heap, Item::Handle(ht, true));
                    let bt = if !traces {
                        Bt::None
                    } else if ev.byte == event::GC_HANDLE_CREATED_BT {
                        Bt::Frames(span(&mut p.arena, backtrace))
                    } else {
                        Bt::Stack
                    };
                    if traces {
                        push(
                            &mut p,
                            &mut heap,
                            Item::Trace(Target::HandleCreated(ht), 1, bt),
                        );
                    }
                    if track {
                        let r = TrackRec::Handle {
                            obj,
                            handle,
                            time: t,
                            bt,
                        };
                        push(&mut p, &mut heap, Item::Track(r));
                    }
                }
                EventKind::GcHandleDestroyed {
                    htype, backtrace, ..
                } => {
                    let ht = htype.min(255) as u8;
                    push(&mut p, &mut heap, Item::Handle(ht, false));
                    if traces {
                        let bt = if ev.byte == event::GC_HANDLE_DESTROYED_BT {
                            Bt::Frames(span(&mut p.arena, backtrace))
                        } else {
                            Bt::Stack
                        };
                        push(
                            &mut p,
                            &mut heap,
                            Item::Trace(Target::HandleDestroyed(ht), 1, bt),
                        );
                    }
                }
                EventKind::Throw { backtrace, .. } if in_window(t) => {
                    agg.throws += 1;
                    if traces {
                        let bt = if ev.byte & TYPE_THROW_BT != 0 {
                            Bt::Frames(span(&mut p.arena, backtrace))
                        } else {
                            Bt::Stack
                        };
                        push(&mut p, &mut heap, Item::Trace(Target::Throw, 1, bt));
                    }
                }
                EventKind::Clause { clause_type, .. } => {
                    if let Some(c) = agg.clauses.get_mut(clause_type as usize) {
                        *c += 1;
                    }
                }
                EventKind::Monitor {
                    event,
                    obj,
                    backtrace,
                } => {
                    let bt = if !traces || event != MONITOR_CONTENTION {
                        Bt::None
                    } else if ev.byte & TYPE_MONITOR_BT != 0 {
                        Bt::Frames(span(&mut p.arena, backtrace))
                    } else {
                        Bt::Stack
                    };
                    push(&mut p, &mut heap, Item::Monitor(event, obj, t, bt));
                }
                EventKind::SampleHit { mut ips, .. } => {
                    if let Some(ip) = ips.next() {
                        *agg.samples.entry(ip).or_default() += 1;
                    }
                }
                EventKind::Usym { addr, size, name } => agg.usyms.push((addr, size, name.into())),
                EventKind::HeapStart => push(&mut p, &mut heap, Item::HeapStart(t)),
                EventKind::HeapEnd => push(&mut p, &mut heap, Item::HeapEnd),
                EventKind::HeapObject {
                    obj,
                    class,
                    size,
                    refs,
                    ..
                } => {
                    if track {
                        for r in refs {
                            let r = TrackRec::Ref {
                                obj: r.obj,
                                parent: obj,
                                class,
                            };
                            push(&mut p, &mut heap, Item::Track(r));
                        }
                    }
                    if traces {
                        let refs = span(&mut p.arena, refs.map(|r| r.obj));
                        push(
                            &mut p,
                            &mut heap,
                            Item::HeapObject {
                                obj,
                                class,
                                size,
                                refs,
                            },
                        );
                    } else if size > 0 {
                        let e = heap.entry(class).or_insert((0, 0));
                        e.0 += size;
                        e.1 += 1;
                    }
                }
                EventKind::HeapRoots { roots, .. } => {
                    let n = roots.len() as u64;
                    let objs = if traces {
                        span(&mut p.arena, roots.flat_map(|r| [r.obj, r.root_type]))
                    } else {
                        Span::default()
                    };
                    push(&mut p, &mut heap, Item::Roots(n, objs));
                }
                EventKind::CountersDesc { descs } => {
                    let v = descs
                        .map(|d| (d.index, d.section, name(d.name), d.unit))
                        .collect();
                    push(&mut p, &mut heap, Item::CounterDescs(v));
                }
                EventKind::Counters { values, .. } => {
                    let v = values
                        .map(|(i, _, v)| {
                            let v = match v {
                                CounterValue::Signed(x) => Value::Signed(x),
                                CounterValue::Unsigned(x) => Value::Unsigned(x),
                                CounterValue::Double(x) => Value::Double(x),
                                CounterValue::String(s) => Value::String(s.map(name)),
                            };
                            (i, v)
                        })
                        .collect();
                    push(&mut p, &mut heap, Item::Counters(v));
                }
                _ => {}
            }
        }
        for (i, c) in calls_stats.iter().enumerate() {
            if let Some(s) = self
                .agg
                .stats
                .get_mut((i << 4) | usize::from(TYPE_METHOD))
                .filter(|_| c.0 > 0)
            {
                self.agg.events += c.0;
                s.0 += c.0;
                s.1 = s.1.min(c.1);
                s.2 = s.2.max(c.2);
                s.3 += c.3;
            }
        }
        self.agg.skipped_bytes += evs.remaining() as u64;
        if !heap.is_empty() {
            let v = heap.drain().map(|(c, (b, n))| (c, b, n)).collect();
            p.items.push(Item::HeapObjects(v));
        }
        if !bailed {
            self.close_local(&mut p, &mut phase);
        }
        p
    }

    /// Counts an allocation (a direct-mapped cache in front of the map: few classes
    /// allocate most objects).
    #[inline(always)]
    fn alloc(&mut self, class: ClassRef, size: u64) {
        let k = match class {
            ClassRef::Class(p) | ClassRef::Vtable(p) => p,
        };
        let ci = ((k >> 3) ^ (k >> 11)) as usize & 63;
        if let Some(c) = self.alloc_cache.get_mut(ci) {
            if c.0 == Some(class) {
                c.1 += size;
                c.2 += 1;
                return;
            }
            if let Some(old) = c.0 {
                let a = self.agg.allocs.entry(old).or_insert((0, 0));
                a.0 += c.1;
                a.1 += c.2;
            }
            *c = (Some(class), size, 1);
        }
    }

    /// An enter (`enter`) or a leave: replayed inside the buffer, or passed on in order once
    /// the buffer has bailed out (or always, in full mode).
    #[inline(always)]
    fn call(
        &mut self,
        enter: bool,
        t: u64,
        method: u64,
        p: &mut Piece,
        phase: &mut Phase,
        bailed: &mut bool,
    ) {
        p.last_call = Some(t);
        if *bailed {
            p.items.push(if enter {
                Item::Enter(method, t)
            } else {
                Item::Leave(method, t)
            });
            return;
        }
        if enter {
            let slot = self.slot(method);
            if let Some(s) = self.slots.get_mut(slot as usize) {
                s.stats.calls += 1;
                s.active += 1;
            }
            self.stack.push(LocalFrame {
                slot,
                start: t,
                callee: 0,
            });
            return;
        }
        match self.stack.last() {
            Some(f) if self.method_of(f.slot) == method => self.pop_local(t, phase),
            None => {
                // pops a frame the buffer inherited: a phase ends
                self.flush_phase(phase);
                phase.end = Some((method, t));
                p.phases.push(std::mem::take(phase));
            }
            Some(_) => {
                let pos = self
                    .stack
                    .iter()
                    .rposition(|f| self.method_of(f.slot) == method);
                match pos {
                    Some(pos) => {
                        while self.stack.len() > pos {
                            self.pop_local(t, phase);
                        }
                    }
                    None => {
                        // it may match an inherited frame, or nothing: the stitcher decides;
                        // the rest of the buffer's calls go there
                        *bailed = true;
                        p.items.push(Item::Leave(method, t));
                        self.close_local(p, phase);
                    }
                }
            }
        }
    }

    /// Ends the local replay: the last phase, and the frames still open.
    fn close_local(&mut self, p: &mut Piece, phase: &mut Phase) {
        self.flush_phase(phase);
        p.phases.push(std::mem::take(phase));
        for f in self.stack.drain(..) {
            if let Some(s) = self.slots.get_mut(f.slot as usize) {
                s.active = s.active.saturating_sub(1);
                p.open.push(Open {
                    method: s.method,
                    start: f.start,
                    callee: f.callee,
                });
            }
        }
    }
}

fn name(b: &[u8]) -> Box<str> {
    String::from_utf8_lossy(b).into()
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    method: u64,
    start: u64,
    callee: u64,
}

/// One thread's state in the stitcher.
#[derive(Debug, Default)]
struct ThreadState {
    stack: Vec<Frame>,
    active: FxMap<u64, u32>,
    last: u64,
    gc_start: [Option<u64>; 3],
    contention: FxMap<u64, u64>,
}

/// A backtrace table: frames (method ids) → count.
pub(crate) type Traces = FxMap<Box<[u64]>, u64>;

/// A heap shot as the stitcher builds it (classes still unresolved).
#[derive(Debug, Default)]
pub(crate) struct RawShot {
    pub time: u64,
    pub size: u64,
    pub objects: u64,
    pub roots: u64,
    pub classes: FxMap<ClassRef, (u64, u64)>,
    /// With traces: (to, from) → references; per class (root references, pinning).
    pub refs: FxMap<(ClassRef, ClassRef), u64>,
    pub root_refs: FxMap<ClassRef, (u64, u64)>,
    objs: FxMap<u64, (ClassRef, Vec<u64>)>,
    root_objs: Vec<(u64, u64)>,
}

/// A tracked-object event, ready for output (frames and class still as ids).
#[derive(Clone, Debug)]
pub(crate) enum Tracked {
    Created {
        obj: u64,
        class: ClassRef,
        size: u64,
        time: u64,
        frames: Vec<u64>,
    },
    Handle {
        obj: u64,
        handle: u64,
        time: u64,
        frames: Vec<u64>,
    },
    MovedTo(u64, u64),
    MovedFrom(u64, u64),
    Referenced {
        obj: u64,
        parent: u64,
        class: ClassRef,
    },
}

/// Applies pieces in file order.
#[derive(Debug, Default)]
pub(crate) struct Stitcher {
    threads: FxMap<u64, ThreadState>,
    pub methods: FxMap<u64, MethodStats>,
    pub unmatched_leaves: u64,
    pub unfinished: u64,
    pub gens: [(u64, u64, u64); 3],
    pub handles: [(u64, u64, i64, i64); 4],
    pub locks: FxMap<u64, (u64, u64, u64)>,
    pub monitor_counts: [u64; 4],
    pub thread_names: Vec<(u64, Box<str>)>,
    pub domains: Vec<(u64, Box<str>)>,
    pub contexts: Vec<(u64, u64)>,
    pub shots: Vec<RawShot>,
    cur_shot: Option<RawShot>,
    pub counter_descs: FxMap<u64, (u64, Box<str>, u64)>,
    pub counters: FxMap<u64, (i64, u64, Option<String>)>,
    pub problems: Vec<Error>,
    // traces
    maxframes: usize,
    traces: bool,
    pub call_traces: FxMap<u64, Traces>,
    pub target_traces: FxMap<Target, Traces>,
    // tracking
    tracked: Vec<u64>,
    find: Option<(u64, Option<String>)>,
    classes: FxMap<u64, Box<[u8]>>,
    vtables: FxMap<u64, u64>,
    pub tracking: Vec<Tracked>,
}

impl Stitcher {
    pub(crate) fn new(opts: &Options) -> Stitcher {
        Stitcher {
            maxframes: opts.maxframes,
            traces: opts.traces,
            tracked: opts.track.clone(),
            find: opts.find.clone().map(|f| (f.min_size, f.name)),
            ..Stitcher::default()
        }
    }

    fn method(&mut self, m: u64) -> &mut MethodStats {
        self.methods.entry(m).or_default()
    }

    fn pop(&mut self, tid: u64, t: u64) {
        let Some(ts) = self.threads.get_mut(&tid) else {
            return;
        };
        let Some(f) = ts.stack.pop() else { return };
        let dur = t.saturating_sub(f.start);
        let active = ts.active.entry(f.method).or_default();
        *active = active.saturating_sub(1);
        let outermost = *active == 0;
        if let Some(p) = ts.stack.last_mut() {
            p.callee += dur;
        }
        let m = self.method(f.method);
        m.self_ns += dur.saturating_sub(f.callee);
        m.total_all_ns += dur;
        if outermost {
            m.total_ns += dur;
        }
    }

    fn leave(&mut self, tid: u64, method: u64, t: u64) {
        let ts = self.threads.entry(tid).or_default();
        ts.last = t;
        match ts.stack.iter().rposition(|f| f.method == method) {
            Some(pos) => {
                while self
                    .threads
                    .get(&tid)
                    .is_some_and(|ts| ts.stack.len() > pos)
                {
                    self.pop(tid, t);
                }
            }
            None => self.unmatched_leaves += 1,
        }
    }

    fn stack_key(&self, tid: u64) -> Box<[u64]> {
        let Some(ts) = self.threads.get(&tid) else {
            return Box::new([]);
        };
        let n = ts.stack.len().min(self.maxframes);
        ts.stack
            .get(ts.stack.len() - n..)
            .unwrap_or(&[])
            .iter()
            .map(|f| f.method)
            .collect()
    }

    fn bt_key(&self, tid: u64, bt: Bt, arena: &[u64]) -> Box<[u64]> {
        match bt {
            Bt::None => Box::new([]),
            Bt::Stack => self.stack_key(tid),
            Bt::Frames(s) => {
                let all = arena
                    .get(s.start as usize..(s.start as usize + s.len as usize))
                    .unwrap_or(&[]);
                all.get(..all.len().min(self.maxframes))
                    .unwrap_or(&[])
                    .into()
            }
        }
    }

    fn class_name(&self, c: ClassRef) -> Option<&[u8]> {
        let k = match c {
            ClassRef::Class(p) => p,
            ClassRef::Vtable(v) => *self.vtables.get(&v)?,
        };
        self.classes.get(&k).map(|n| &n[..])
    }

    /// Applies the next piece (file order).
    pub(crate) fn apply(&mut self, mut p: Piece) {
        if let Some(e) = p.problem.take() {
            self.problems.push(e);
        }
        let tid = p.thread;
        self.threads.entry(tid).or_default();
        for ph in &p.phases {
            if let Some(ts) = self.threads.get_mut(&tid) {
                if let Some(top) = ts.stack.last_mut() {
                    top.callee += ph.callee;
                }
                for &(m, dur) in &ph.cands {
                    if ts.active.get(&m).is_none_or(|&a| a == 0) {
                        self.methods.entry(m).or_default().total_ns += dur;
                    }
                }
            }
            if let Some((m, t)) = ph.end {
                self.leave(tid, m, t);
            }
        }
        if let Some(ts) = self.threads.get_mut(&tid) {
            for f in &p.open {
                *ts.active.entry(f.method).or_default() += 1;
                ts.stack.push(Frame {
                    method: f.method,
                    start: f.start,
                    callee: f.callee,
                });
            }
        }
        let arena = std::mem::take(&mut p.arena);
        for it in p.items {
            self.item(tid, it, &arena);
        }
        if let (Some(t), Some(ts)) = (p.last_call, self.threads.get_mut(&tid)) {
            ts.last = t;
        }
    }

    fn item(&mut self, tid: u64, it: Item, arena: &[u64]) {
        let span = |s: Span| {
            arena
                .get(s.start as usize..(s.start as usize + s.len as usize))
                .unwrap_or(&[])
        };
        match it {
            Item::Enter(m, t) => {
                if self.traces {
                    let key = self.stack_key(tid);
                    *self
                        .call_traces
                        .entry(m)
                        .or_default()
                        .entry(key)
                        .or_default() += 1;
                }
                self.method(m).calls += 1;
                let ts = self.threads.entry(tid).or_default();
                ts.last = t;
                *ts.active.entry(m).or_default() += 1;
                ts.stack.push(Frame {
                    method: m,
                    start: t,
                    callee: 0,
                });
            }
            Item::Leave(m, t) => self.leave(tid, m, t),
            Item::Gc(event, g, t) => {
                let ts = self.threads.entry(tid).or_default();
                if event == GC_EVENT_START {
                    if let Some(s) = ts.gc_start.get_mut(g) {
                        *s = Some(t);
                    }
                } else if event == GC_EVENT_END {
                    if let (Some(Some(start)), Some(gen)) =
                        (ts.gc_start.get(g).copied(), self.gens.get_mut(g))
                    {
                        let d = t.saturating_sub(start);
                        gen.0 += 1;
                        gen.2 += d;
                        gen.1 = gen.1.max(d);
                    }
                    if let Some(s) = ts.gc_start.get_mut(g) {
                        *s = None;
                    }
                }
            }
            Item::Monitor(event, obj, t, bt) => {
                if let Some(c) = self.monitor_counts.get_mut(event as usize) {
                    *c += 1;
                }
                match event {
                    MONITOR_CONTENTION => {
                        self.locks.entry(obj).or_default().0 += 1;
                        if self.traces {
                            let key = self.bt_key(tid, bt, arena);
                            *self
                                .target_traces
                                .entry(Target::Monitor(obj))
                                .or_default()
                                .entry(key)
                                .or_default() += 1;
                        }
                        self.threads
                            .entry(tid)
                            .or_default()
                            .contention
                            .insert(obj, t);
                    }
                    MONITOR_DONE | MONITOR_FAIL => {
                        let ts = self.threads.entry(tid).or_default();
                        if let Some(start) = ts.contention.remove(&obj) {
                            let d = t.saturating_sub(start);
                            let l = self.locks.entry(obj).or_default();
                            l.1 += d;
                            l.2 = l.2.max(d);
                        }
                    }
                    _ => {}
                }
            }
            Item::Trace(target, value, bt) => {
                let key = self.bt_key(tid, bt, arena);
                *self
                    .target_traces
                    .entry(target)
                    .or_default()
                    .entry(key)
                    .or_default() += value;
            }
            Item::HeapStart(t) => {
                self.cur_shot = Some(RawShot {
                    time: t,
                    ..RawShot::default()
                })
            }
            Item::HeapEnd => {
                if let Some(mut s) = self.cur_shot.take() {
                    s.resolve_refs();
                    self.shots.push(s);
                }
            }
            Item::HeapObjects(v) => {
                if let Some(s) = self.cur_shot.as_mut() {
                    for (c, b, n) in v {
                        s.size += b;
                        s.objects += n;
                        let e = s.classes.entry(c).or_insert((0, 0));
                        e.0 += b;
                        e.1 += n;
                    }
                }
            }
            Item::HeapObject {
                obj,
                class,
                size,
                refs,
            } => {
                if let Some(s) = self.cur_shot.as_mut() {
                    let refs = span(refs);
                    if size > 0 {
                        s.size += size;
                        s.objects += 1;
                        let e = s.classes.entry(class).or_insert((0, 0));
                        e.0 += size;
                        e.1 += 1;
                        s.objs.insert(obj, (class, refs.to_vec()));
                    } else if let Some(o) = s.objs.get_mut(&obj) {
                        o.1.extend_from_slice(refs);
                    }
                }
            }
            Item::Roots(n, objs) => {
                if let Some(s) = self.cur_shot.as_mut() {
                    s.roots += n;
                    for pair in span(objs).chunks_exact(2) {
                        if let [o, ty] = *pair {
                            s.root_objs.push((o, ty));
                        }
                    }
                }
            }
            Item::Handle(ty, created) => {
                if let Some(h) = self.handles.get_mut(ty as usize) {
                    if created {
                        h.0 += 1;
                        h.2 += 1;
                        h.3 = h.3.max(h.2);
                    } else {
                        h.1 += 1;
                        h.2 -= 1;
                    }
                }
            }
            Item::CounterDescs(v) => {
                for (index, section, n, unit) in v {
                    self.counter_descs.insert(index, (section, n, unit));
                }
            }
            Item::Counters(v) => {
                for (index, val) in v {
                    let c = self.counters.entry(index).or_default();
                    match val {
                        Value::Signed(d) => {
                            c.0 = c.0.wrapping_add(d);
                            c.2 = Some(c.0.to_string());
                        }
                        Value::Unsigned(d) => {
                            c.1 = c.1.wrapping_add(d);
                            c.2 = Some(c.1.to_string());
                        }
                        Value::Double(x) => c.2 = Some(format!("{x:.6}")),
                        Value::String(s) => {
                            c.2 = Some(s.map_or_else(|| "(null)".into(), String::from))
                        }
                    }
                }
            }
            Item::Thread(t, n) => self.thread_names.push((t, n)),
            Item::Domain(d, n) => self.domains.push((d, n)),
            Item::Context(c, d) => self.contexts.push((c, d)),
            Item::Class(p, n) => {
                self.classes.insert(p, n);
            }
            Item::Vtable(v, c) => {
                self.vtables.insert(v, c);
            }
            Item::Track(r) => self.track(tid, r, arena),
        }
    }

    fn is_tracked(&self, obj: u64) -> bool {
        self.tracked.contains(&obj)
    }

    fn track(&mut self, tid: u64, r: TrackRec, arena: &[u64]) {
        match r {
            TrackRec::Alloc {
                obj,
                class,
                size,
                time,
                bt,
            } => {
                if let Some((min, ref n)) = self.find {
                    let name_ok = |s: &Self| {
                        n.as_ref().is_none_or(|n| {
                            s.class_name(class)
                                .is_some_and(|c| String::from_utf8_lossy(c).contains(n.as_str()))
                        })
                    };
                    let hit = if min > 0 {
                        size >= min && name_ok(self)
                    } else {
                        n.is_some() && name_ok(self)
                    };
                    if hit && !self.is_tracked(obj) {
                        self.tracked.push(obj);
                    }
                }
                if self.is_tracked(obj) {
                    let frames = self.bt_key(tid, bt, arena).into_vec();
                    self.tracking.push(Tracked::Created {
                        obj,
                        class,
                        size,
                        time,
                        frames,
                    });
                }
            }
            TrackRec::Handle {
                obj,
                handle,
                time,
                bt,
            } => {
                if self.is_tracked(obj) {
                    let frames = self.bt_key(tid, bt, arena).into_vec();
                    self.tracking.push(Tracked::Handle {
                        obj,
                        handle,
                        time,
                        frames,
                    });
                }
            }
            TrackRec::Move { from, to } => {
                if self.is_tracked(from) {
                    self.tracking.push(Tracked::MovedTo(from, to));
                } else if self.is_tracked(to) {
                    self.tracking.push(Tracked::MovedFrom(to, from));
                }
            }
            TrackRec::Ref { obj, parent, class } => {
                if self.is_tracked(obj) {
                    self.tracking
                        .push(Tracked::Referenced { obj, parent, class });
                }
            }
        }
    }

    /// Closes every thread's open frames at its last call time (as mprof-report does).
    pub(crate) fn finish(&mut self) {
        let tids: Vec<u64> = self.threads.keys().copied().collect();
        for tid in tids {
            let (n, last) = self
                .threads
                .get(&tid)
                .map_or((0, 0), |ts| (ts.stack.len(), ts.last));
            self.unfinished += n as u64;
            for _ in 0..n {
                self.pop(tid, last);
            }
        }
        if let Some(mut s) = self.cur_shot.take() {
            // a heap shot without its end (file cut off): counted with what it has
            s.resolve_refs();
            self.shots.push(s);
        }
    }
}

impl RawShot {
    /// With traces: reverse references and root references per class, then the object graph
    /// is dropped.
    fn resolve_refs(&mut self) {
        let objs = std::mem::take(&mut self.objs);
        for (class, refs) in objs.values() {
            for r in refs {
                if let Some((to, _)) = objs.get(r) {
                    *self.refs.entry((*to, *class)).or_default() += 1;
                }
            }
        }
        for &(o, ty) in &self.root_objs {
            if let Some((c, _)) = objs.get(&o) {
                let e = self.root_refs.entry(*c).or_default();
                e.0 += 1;
                if ty & 0x100 != 0 {
                    e.1 += 1;
                }
            }
        }
        self.root_objs = Vec::new();
    }
}

/// A unit of work: a buffer to decode (borrowed from a mapped file or owned from a stream),
/// or a problem of the buffer scan to pass on in order.
pub(crate) enum Job<'a> {
    Slice(Buffer<'a>),
    Owned(OwnedBuffer),
    Problem(Error),
}

/// Buffers in flight (bounds memory; at least workers + 1).
const TOKENS: usize = 16;

/// Runs the pass: `next` yields the jobs in file order (it receives a recycled allocation for
/// owned buffers); `consumed` is told the file offset below which nothing is needed anymore.
pub(crate) fn run<'a, F>(
    header: &Header,
    opts: &Options,
    mut next: F,
    consumed: &(dyn Fn(u64) + Sync),
) -> (Agg, Stitcher, u64)
where
    F: FnMut(Vec<u8>) -> Option<Job<'a>> + Send,
{
    let mut stitcher = Stitcher::new(opts);
    // first buffer's time base: mprof-report's time origin (before the thread filter)
    let mut start: Option<u64> = None;
    let mut window = None;
    let admit = |job: &Job<'_>, start: &mut Option<u64>, window: &mut Option<(u64, u64)>| {
        let h = match job {
            Job::Slice(b) => b.header,
            Job::Owned(b) => b.header,
            Job::Problem(_) => return true,
        };
        if start.is_none() {
            *start = Some(h.time_base);
            *window = opts
                .time
                .map(|(a, b)| (h.time_base.saturating_add(a), h.time_base.saturating_add(b)));
        }
        opts.thread.is_none_or(|t| t == h.thread_id)
    };
    let decode = |w: &mut Worker, job: Job<'_>, window: Option<(u64, u64)>| -> Piece {
        match job {
            Job::Slice(b) => w.piece(&b, window),
            Job::Owned(b) => w.piece(&b.buffer(header), window),
            Job::Problem(e) => Piece {
                thread: 0,
                problem: Some(e),
                ..Piece::default()
            },
        }
    };
    let workers = if opts.parallel {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8)
    } else {
        0
    };
    if workers == 0 {
        let mut w = Worker::new(opts);
        while let Some(job) = next(Vec::new()) {
            if admit(&job, &mut start, &mut window) {
                let piece = decode(&mut w, job, window);
                stitcher.apply(piece);
            }
        }
        stitcher.finish();
        return (w.finish(), stitcher, start.unwrap_or(0));
    }
    type Work<'b> = (u64, Job<'b>, Option<(u64, u64)>);
    let (token_tx, token_rx): (SyncSender<Vec<u8>>, Receiver<Vec<u8>>) = mpsc::sync_channel(TOKENS);
    for _ in 0..TOKENS {
        let _ = token_tx.send(Vec::new());
    }
    let token_back = token_tx.clone();
    let (work_tx, work_rx) = mpsc::sync_channel::<Work<'a>>(TOKENS);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<(u64, Piece, Vec<u8>, u64)>();
    let mut aggs = Vec::new();
    std::thread::scope(|s| {
        let producer = s.spawn(move || {
            let mut seq = 0u64;
            let mut start = None;
            let mut window = None;
            while let Ok(v) = token_rx.recv() {
                let Some(job) = next(v) else { break };
                if !admit(&job, &mut start, &mut window) {
                    let v = match job {
                        Job::Owned(b) => b.data,
                        _ => Vec::new(),
                    };
                    // nothing in flight for it: hand the token back through the queue
                    if token_tx.send(v).is_err() {
                        break;
                    }
                    continue;
                }
                if work_tx.send((seq, job, window)).is_err() {
                    break;
                }
                seq += 1;
            }
            start
        });
        let mut handles = Vec::new();
        for _ in 0..workers {
            let done_tx = done_tx.clone();
            let work_rx = &work_rx;
            let decode = &decode;
            handles.push(s.spawn(move || {
                let mut w = Worker::new(opts);
                loop {
                    let job = match work_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok((seq, job, window)) = job else { break };
                    let end = match &job {
                        Job::Slice(b) => b.offset + (BUF_HEADER_SIZE + b.data.len()) as u64,
                        Job::Owned(b) => b.offset + (BUF_HEADER_SIZE + b.data.len()) as u64,
                        Job::Problem(_) => 0,
                    };
                    let (piece, v) = match job {
                        Job::Owned(b) => {
                            let p = w.piece(&b.buffer(header), window);
                            (p, b.data)
                        }
                        other => (decode(&mut w, other, window), Vec::new()),
                    };
                    if done_tx.send((seq, piece, v, end)).is_err() {
                        break;
                    }
                }
                w.finish()
            }));
        }
        drop(done_tx);
        // the stitcher: pieces in file order
        let mut pending: std::collections::BTreeMap<u64, (Piece, Vec<u8>, u64)> =
            std::collections::BTreeMap::new();
        let mut want = 0u64;
        let mut released = 0u64;
        for (seq, piece, v, end) in done_rx.iter() {
            pending.insert(seq, (piece, v, end));
            while let Some((piece, v, end)) = pending.remove(&want) {
                stitcher.apply(piece);
                want += 1;
                if end > released + (8 << 20) {
                    consumed(end);
                    released = end;
                }
                // the producer may be gone (end of input): nothing to hand back to then
                let _ = token_back.send(v);
            }
        }
        for h in handles {
            if let Ok(a) = h.join() {
                aggs.push(a);
            }
        }
        if let Ok(st) = producer.join() {
            start = st;
        }
    });
    stitcher.finish();
    let mut agg = Agg::default();
    for a in aggs {
        agg.merge(a);
    }
    (agg, stitcher, start.unwrap_or(0))
}
