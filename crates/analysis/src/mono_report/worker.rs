//! The worker: decodes one buffer into a [`Piece`].
//!
//! Order-free numbers (allocations, JIT, metadata names, event stats) go into the worker's own
//! [`Agg`], merged at the end. Calls go to the call replay ([`super::calls`]), which replays
//! them inside the buffer or has them passed on in order. Everything whose effect depends on
//! the order across buffers (GC pauses, monitor waits, heap shots, GC handles, counters, thread
//! and domain names, tracking, backtraces) is an ordered [`Item`] of the piece, for the
//! stitcher. Heap objects without backtraces are summed per class between two other items.

use rustc_hash::{FxHashMap as FxMap, FxHashSet};

use std::sync::Arc;

use super::calls::{LocalCalls, MethodIds, MethodPart};
use super::{MethodStats, Options};
use profkit_mlpd::raw::*;
use profkit_mlpd::read::{Buffer, ClassRef, CounterValue, EventKind, MetaAction};
use profkit_mlpd::Error;

/// A range in a piece's `arena`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) len: u32,
}

impl Span {
    /// The values of the span in `arena`.
    pub(crate) fn of(self, arena: &[u64]) -> &[u64] {
        arena
            .get(self.start as usize..(self.start as usize + self.len as usize))
            .unwrap_or(&[])
    }
}

/// Where a backtrace comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Signed(i64),
    Unsigned(u64),
    Double(f64),
    String(Option<Box<str>>),
}

/// A tracked-object event (`--track`, `--find`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// An event whose effect depends on order (applied by the stitcher in file order, in order
/// with the calls passed on in order).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    /// A GC event: (event, generation (at most 2), time).
    Gc(u64, usize, u64),
    /// A monitor event: (event, object, time, backtrace).
    Monitor(u8, u64, u64, Bt),
    /// A backtrace counted `value` times for `target`.
    Trace(Target, u64, Bt),
    HeapStart(u64),
    HeapEnd,
    /// Heap objects summed per class: (class, bytes, count).
    HeapObjects(Vec<(ClassRef, u64, u64)>),
    /// A heap object with its references (with traces).
    HeapObject {
        obj: u64,
        class: ClassRef,
        size: u64,
        refs: Span,
    },
    /// Roots: (count, (object, root type) pairs with traces).
    Roots(u64, Span),
    /// A GC handle of a type created (`true`) or destroyed.
    Handle(u8, bool),
    /// Counter descriptions: (index, section, name, unit).
    CounterDescs(Vec<(u64, u64, Box<str>, u64)>),
    /// Counter values: (index, delta).
    Counters(Vec<(u64, Value)>),
    Thread(u64, Box<str>),
    Domain(u64, Box<str>),
    Context(u64, u64),
    Class(u64, Box<[u8]>),
    Vtable(u64, u64),
    Track(TrackRec),
}

/// One buffer's results that depend on order.
#[derive(Debug, Default)]
pub(crate) struct Piece {
    /// The buffer's thread.
    pub(crate) thread: u64,
    /// The buffer's calls (replayed in it, or passed on in order) and its ordered items.
    pub(crate) calls: profkit_model::replay::Piece<MethodPart, Item>,
    /// Values the items' spans point into.
    pub(crate) arena: Vec<u64>,
    /// A problem of the buffer scan, passed on in order (a piece with nothing else).
    pub(crate) problem: Option<Error>,
}

/// Order-free aggregates (one per worker, merged at the end).
#[derive(Debug)]
pub(crate) struct Agg {
    pub(crate) methods: FxMap<u64, MethodStats>,
    pub(crate) method_names: FxMap<u64, Box<[u8]>>,
    /// (code, size, method) of JIT events.
    pub(crate) jit_code: Vec<(u64, u64, u64)>,
    pub(crate) helpers: u64,
    pub(crate) helpers_size: u64,
    pub(crate) classes: FxMap<u64, Box<[u8]>>,
    pub(crate) vtables: FxMap<u64, u64>,
    /// Per class: (bytes, count).
    pub(crate) allocs: FxMap<ClassRef, (u64, u64)>,
    pub(crate) resizes: u64,
    pub(crate) max_heap: u64,
    pub(crate) moves: u64,
    pub(crate) throws: u64,
    pub(crate) clauses: [u64; 5],
    pub(crate) images: u64,
    pub(crate) assemblies: u64,
    /// Threads known without a name: every buffer's, and those of thread load / unload
    /// events (mprof-report lists each, named or not).
    pub(crate) threads: FxHashSet<u64>,
    /// Sample hits per IP.
    pub(crate) samples: FxMap<u64, u64>,
    /// (address, size, name) of unmanaged symbols.
    pub(crate) usyms: Vec<(u64, u64, Box<[u8]>)>,
    /// Per event byte: (count, min size, max size, bytes).
    pub(crate) stats: [(u64, u32, u32, u64); 256],
    pub(crate) problems: Vec<Error>,
    pub(crate) skipped_bytes: u64,
    pub(crate) buffers: u64,
    pub(crate) events: u64,
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
            threads: FxHashSet::default(),
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
    /// Adds another worker's aggregates.
    pub(crate) fn merge(&mut self, o: Agg) {
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
        self.threads.extend(o.threads);
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

/// A worker: decodes buffers into pieces; keeps its order-free aggregates.
pub(crate) struct Worker {
    pub(crate) agg: Agg,
    calls: LocalCalls<Item>,
    alloc_cache: AllocCache,
    /// Forward what tracking needs.
    track: bool,
    traces: bool,
    /// Replay calls (the call section, or backtraces, need them).
    calls_on: bool,
    /// Count allocations per class (the alloc section needs them).
    allocs_on: bool,
}

impl Worker {
    pub(crate) fn new(opts: &Options, ids: Arc<MethodIds>) -> Worker {
        let track = !opts.track.is_empty() || opts.find.is_some();
        Worker {
            agg: Agg::default(),
            // every call goes to the items with traces (backtraces need the whole stack)
            calls: LocalCalls::new(ids, opts.traces),
            alloc_cache: [(None, 0, 0); 64],
            track,
            traces: opts.traces,
            calls_on: !opts.skip_calls || opts.traces,
            allocs_on: !opts.skip_allocs,
        }
    }

    /// The aggregates, with the allocation cache and the call replay's statistics.
    pub(crate) fn finish(mut self) -> Agg {
        for (class, bytes, n) in self.alloc_cache {
            if let Some(c) = class {
                let a = self.agg.allocs.entry(c).or_insert((0, 0));
                a.0 += bytes;
                a.1 += n;
            }
        }
        self.calls.finish(&mut self.agg.methods);
        self.agg
    }

    /// Decodes one buffer.
    pub(crate) fn piece(&mut self, buf: &Buffer<'_>, window: Option<(u64, u64)>) -> Piece {
        let in_window = |t: u64| window.is_none_or(|(a, b)| t >= a && t <= b);
        let mut p = Piece {
            thread: buf.header.thread_id,
            ..Piece::default()
        };
        let mut heap: FxMap<ClassRef, (u64, u64)> = FxMap::default();
        self.calls.begin();
        let agg = &mut self.agg;
        agg.buffers += 1;
        agg.threads.insert(buf.header.thread_id);
        let mut evs = buf.events();
        // pushes an ordered item, first flushing the heap objects aggregated so far
        fn push(calls: &mut LocalCalls<Item>, heap: &mut FxMap<ClassRef, (u64, u64)>, it: Item) {
            if !heap.is_empty() {
                let v = heap.drain().map(|(c, (b, n))| (c, b, n)).collect();
                calls.item(Item::HeapObjects(v));
            }
            calls.item(it);
        }
        fn span(arena: &mut Vec<u64>, it: impl Iterator<Item = u64>) -> Span {
            let start = arena.len();
            arena.extend(it);
            Span {
                start: start as u32,
                len: (arena.len() - start) as u32,
            }
        }
        /// An event's backtrace: none without `traces`, its own `frames` when it `carries`
        /// them, else the thread's stack at the event.
        fn event_bt(
            traces: bool,
            carries: bool,
            arena: &mut Vec<u64>,
            frames: impl Iterator<Item = u64>,
        ) -> Bt {
            if !traces {
                Bt::None
            } else if carries {
                Bt::Frames(span(arena, frames))
            } else {
                Bt::Stack
            }
        }
        let traces = self.traces;
        let track = self.track;
        let (calls_on, allocs_on) = (self.calls_on, self.allocs_on);
        // the call events' sizes, per (exinfo, size): one increment per event on the hot path,
        // folded into (count, min, max, bytes) at the end of the buffer (a call event is at
        // most 21 bytes: the byte and two LEB128s of at most 10)
        let mut call_sizes = [0u32; 4 * 32];
        // and the backtrace-less ALLOCs' sizes (at most 41 bytes: the byte and four LEB128s)
        let mut alloc_sizes = [0u32; 64];
        // the plain report's runs of calls go on through the ALLOCs
        let all = calls_on && window.is_none() && !traces && !track;
        // the time of the buffer's last event (any type): where the thread's frames still
        // open at the end of the file are closed if this is its last buffer (mprof-report's
        // `last_time`)
        let mut last_event: Option<u64> = None;
        loop {
            // the hot path: runs of calls, without building an Event
            let run = if all {
                let (cache, agg) = (&mut self.alloc_cache, &mut self.agg);
                self.calls
                    .run_all(&mut evs, &mut call_sizes, &mut |size, class, bytes| {
                        alloc_size(&mut alloc_sizes, agg, size);
                        if allocs_on {
                            count_alloc(cache, &mut agg.allocs, class, bytes);
                        }
                    })
            } else {
                self.calls.run(&mut evs, &mut call_sizes, calls_on, window)
            };
            if let Some(t) = run {
                last_event = Some(t);
            }
            if !track {
                if let Some((size, t, class, _, bytes)) = evs.next_alloc() {
                    last_event = Some(t);
                    alloc_size(&mut alloc_sizes, &mut self.agg, size);
                    if in_window(t) {
                        if allocs_on {
                            count_alloc(&mut self.alloc_cache, &mut self.agg.allocs, class, bytes);
                        }
                        if traces {
                            let it = Item::Trace(Target::Alloc(class), bytes, Bt::Stack);
                            push(&mut self.calls, &mut heap, it);
                        }
                    }
                    continue;
                }
            }
            // the general decoder runs on a copy, so that `evs` never has its address taken
            // and the hot loops keep its state in registers
            let mut general = evs.clone();
            let ev = general.next();
            evs = general;
            let Some(ev) = ev else { break };
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
                count_event(s, ev.size);
            }
            let t = ev.time;
            last_event = Some(t);
            match ev.kind {
                EventKind::Enter { method } if calls_on && in_window(t) => {
                    self.calls.call(true, t, method)
                }
                EventKind::Leave { method } | EventKind::ExcLeave { method }
                    if calls_on && in_window(t) =>
                {
                    self.calls.call(false, t, method)
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
                            push(
                                &mut self.calls,
                                &mut heap,
                                Item::Class(m.ptr, m.name.into()),
                            );
                        }
                    }
                    (MTYPE_VTABLE, MetaAction::Load) => {
                        agg.vtables.insert(m.ptr, m.class);
                        if track {
                            push(&mut self.calls, &mut heap, Item::Vtable(m.ptr, m.class));
                        }
                    }
                    (MTYPE_IMAGE, MetaAction::Load) => agg.images += 1,
                    (MTYPE_ASSEMBLY, MetaAction::Load) => agg.assemblies += 1,
                    (MTYPE_THREAD, MetaAction::Name) => push(
                        &mut self.calls,
                        &mut heap,
                        Item::Thread(m.ptr, name(m.name)),
                    ),
                    (MTYPE_THREAD, MetaAction::Load | MetaAction::Unload) => {
                        agg.threads.insert(m.ptr);
                    }
                    (MTYPE_DOMAIN, MetaAction::Name) => push(
                        &mut self.calls,
                        &mut heap,
                        Item::Domain(m.ptr, name(m.name)),
                    ),
                    (MTYPE_CONTEXT, MetaAction::Load) => {
                        push(&mut self.calls, &mut heap, Item::Context(m.ptr, m.domain))
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
                    if allocs_on {
                        count_alloc(&mut self.alloc_cache, &mut self.agg.allocs, class, size);
                    }
                    let carries = ev.byte & TYPE_ALLOC_BT != 0;
                    let bt = event_bt(traces, carries, &mut p.arena, backtrace);
                    if traces {
                        push(
                            &mut self.calls,
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
                        push(&mut self.calls, &mut heap, Item::Track(r));
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
                            push(
                                &mut self.calls,
                                &mut heap,
                                Item::Track(TrackRec::Move { from, to }),
                            );
                        }
                    }
                }
                EventKind::GcEvent { event, generation } => push(
                    &mut self.calls,
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
                    push(&mut self.calls, &mut heap, Item::Handle(ht, true));
                    let carries = ev.byte == event::GC_HANDLE_CREATED_BT;
                    let bt = event_bt(traces, carries, &mut p.arena, backtrace);
                    if traces {
                        push(
                            &mut self.calls,
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
                        push(&mut self.calls, &mut heap, Item::Track(r));
                    }
                }
                EventKind::GcHandleDestroyed {
                    htype, backtrace, ..
                } => {
                    let ht = htype.min(255) as u8;
                    push(&mut self.calls, &mut heap, Item::Handle(ht, false));
                    if traces {
                        let carries = ev.byte == event::GC_HANDLE_DESTROYED_BT;
                        let bt = event_bt(traces, carries, &mut p.arena, backtrace);
                        push(
                            &mut self.calls,
                            &mut heap,
                            Item::Trace(Target::HandleDestroyed(ht), 1, bt),
                        );
                    }
                }
                EventKind::Throw { backtrace, .. } if in_window(t) => {
                    agg.throws += 1;
                    if traces {
                        let carries = ev.byte & TYPE_THROW_BT != 0;
                        let bt = event_bt(traces, carries, &mut p.arena, backtrace);
                        push(
                            &mut self.calls,
                            &mut heap,
                            Item::Trace(Target::Throw, 1, bt),
                        );
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
                    let wanted = traces && event == MONITOR_CONTENTION;
                    let carries = ev.byte & TYPE_MONITOR_BT != 0;
                    let bt = event_bt(wanted, carries, &mut p.arena, backtrace);
                    push(&mut self.calls, &mut heap, Item::Monitor(event, obj, t, bt));
                }
                EventKind::SampleHit { mut ips, .. } => {
                    if let Some(ip) = ips.next() {
                        *agg.samples.entry(ip).or_default() += 1;
                    }
                }
                EventKind::Usym { addr, size, name } => agg.usyms.push((addr, size, name.into())),
                EventKind::HeapStart => push(&mut self.calls, &mut heap, Item::HeapStart(t)),
                EventKind::HeapEnd => push(&mut self.calls, &mut heap, Item::HeapEnd),
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
                            push(&mut self.calls, &mut heap, Item::Track(r));
                        }
                    }
                    if traces {
                        let refs = span(&mut p.arena, refs.map(|r| r.obj));
                        push(
                            &mut self.calls,
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
                    push(&mut self.calls, &mut heap, Item::Roots(n, objs));
                }
                EventKind::CountersDesc { descs } => {
                    let v = descs
                        .map(|d| (d.index, d.section, name(d.name), d.unit))
                        .collect();
                    push(&mut self.calls, &mut heap, Item::CounterDescs(v));
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
                    push(&mut self.calls, &mut heap, Item::Counters(v));
                }
                _ => {}
            }
        }
        for (k, &n) in call_sizes.iter().enumerate().filter(|(_, &n)| n > 0) {
            let (exinfo, size) = (k >> 5, (k & 31) as u32);
            if let Some(s) = self
                .agg
                .stats
                .get_mut((exinfo << 4) | usize::from(TYPE_METHOD))
            {
                let n = u64::from(n);
                self.agg.events += n;
                s.0 += n;
                s.1 = s.1.min(size);
                s.2 = s.2.max(size);
                s.3 += n * u64::from(size);
            }
        }
        if let Some(s) = self.agg.stats.get_mut(usize::from(event::ALLOC)) {
            for (size, &n) in alloc_sizes.iter().enumerate().filter(|(_, &n)| n > 0) {
                let n = u64::from(n);
                self.agg.events += n;
                s.0 += n;
                s.1 = s.1.min(size as u32);
                s.2 = s.2.max(size as u32);
                s.3 += n * size as u64;
            }
        }
        self.agg.skipped_bytes += evs.remaining() as u64;
        if !heap.is_empty() {
            let v = heap.drain().map(|(c, (b, n))| (c, b, n)).collect();
            self.calls.item(Item::HeapObjects(v));
        }
        p.calls = self.calls.end();
        if let Some(t) = last_event {
            // within the time window, and never before the buffer's last call (an event
            // written with an earlier stored time must not end a frame before it began)
            let t = window.map_or(t, |(_, to)| t.min(to));
            p.calls.last_time = Some(p.calls.last_time.map_or(t, |c| c.max(t)));
        }
        p
    }
}

/// The direct-mapped cache in front of [`Agg::allocs`]: (class, bytes, count).
type AllocCache = [(Option<ClassRef>, u64, u64); 64];

/// Counts an allocation of `size` bytes of `class` (a direct-mapped cache in front of the map:
/// few classes allocate most objects).
#[inline(always)]
fn count_alloc(
    cache: &mut AllocCache,
    allocs: &mut FxMap<ClassRef, (u64, u64)>,
    class: ClassRef,
    size: u64,
) {
    let k = match class {
        ClassRef::Class(p) | ClassRef::Vtable(p) => p,
    };
    let ci = ((k >> 3) ^ (k >> 11)) as usize & 63;
    if let Some(c) = cache.get_mut(ci) {
        if c.0 == Some(class) {
            c.1 += size;
            c.2 += 1;
            return;
        }
        if let Some(old) = c.0 {
            let a = allocs.entry(old).or_insert((0, 0));
            a.0 += c.1;
            a.1 += c.2;
        }
        *c = (Some(class), size, 1);
    }
}

/// Counts a backtrace-less ALLOC event of `size` bytes in the buffer's histogram `sizes`
/// (folded into the event statistics at the end of the buffer), or straight into them.
#[inline(always)]
fn alloc_size(sizes: &mut [u32; 64], agg: &mut Agg, size: u32) {
    match sizes.get_mut(size as usize) {
        Some(n) => *n += 1,
        None => {
            agg.events += 1;
            if let Some(s) = agg.stats.get_mut(usize::from(event::ALLOC)) {
                count_event(s, size);
            }
        }
    }
}

/// Counts one event of `size` bytes in its (count, min, max, total bytes) slot.
#[inline(always)]
fn count_event(s: &mut (u64, u32, u32, u64), size: u32) {
    s.0 += 1;
    s.1 = s.1.min(size);
    s.2 = s.2.max(size);
    s.3 += u64::from(size);
}

fn name(b: &[u8]) -> Box<str> {
    String::from_utf8_lossy(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use profkit_mlpd::read::{File, Metadata};
    use profkit_mlpd::write::{BufferWriter, Writer};
    use profkit_mlpd::Header;
    use profkit_model::func::FuncId;
    use profkit_model::replay::{Call, Item as RItem, Phase};
    use profkit_model::span::{CallKind, Frame};

    const A: u64 = 0x5000;
    const B: u64 = 0x5008;
    const C: u64 = 0x5010;
    const X: u64 = 0x5018;

    /// A v17 file with one buffer of thread 7 (time base 0) written by `f`.
    fn one_buffer(f: impl FnOnce(&mut BufferWriter<'_>)) -> Vec<u8> {
        let mut w = Writer::new(Header {
            major: 3,
            data_version: 17,
            ptrsize: 8,
            ..Header::default()
        });
        let mut b = w.buffer(7, 0);
        f(&mut b);
        b.finish();
        w.into_bytes()
    }

    /// The piece of the file's only buffer, the worker's aggregates, and the method ids.
    fn decode(
        bytes: &[u8],
        opts: &Options,
        window: Option<(u64, u64)>,
    ) -> (Piece, Agg, Arc<MethodIds>) {
        let file = File::parse(bytes).unwrap();
        let buf = file.buffers().next().unwrap().unwrap();
        let ids = Arc::new(MethodIds::default());
        let mut w = Worker::new(opts, ids.clone());
        let p = w.piece(&buf, window);
        (p, w.finish(), ids)
    }

    fn call(kind: CallKind, func: FuncId, time: u64) -> RItem {
        RItem::Call(Call { kind, func, time })
    }

    #[test]
    fn calls_are_replayed_inside_the_buffer() {
        let bytes = one_buffer(|b| {
            b.enter(10, A);
            b.enter(20, B);
            b.leave(30, B);
            b.leave(50, A);
            b.leave(60, X); // a frame the buffer inherited
            b.enter(70, C); // still open at the end
        });
        let (p, agg, ids) = decode(&bytes, &Options::default(), None);
        let id = |m| ids.id(m);
        assert_eq!(p.thread, 7);
        assert!(p.calls.others.is_empty());
        let phases = &p.calls.phases;
        assert_eq!(phases.len(), 2);
        // A (40 ns) ran on the inherited X; B and A are outermost in the buffer
        assert_eq!(phases[0].child, 40);
        assert_eq!(phases[0].part.cands, [(id(B), 10), (id(A), 40)]);
        assert_eq!(
            phases[0].end,
            Some(Call {
                kind: CallKind::Exit,
                func: id(X),
                time: 60
            })
        );
        // C is still open (the report leaves the replay's counters, `peak`, at zero)
        assert_eq!(phases[1], Phase::default());
        assert_eq!(
            p.calls.open,
            [Frame {
                func: id(C),
                start: 70,
                child: 0
            }]
        );
        assert_eq!(p.calls.last_time, Some(70));
        // self and all-activation totals are final; outermost totals wait for the stitcher
        let a = agg.methods[&A];
        assert_eq!(
            (a.calls, a.self_ns, a.total_all_ns, a.total_ns),
            (1, 30, 40, 0)
        );
        let b = agg.methods[&B];
        assert_eq!((b.calls, b.self_ns, b.total_all_ns), (1, 10, 10));
        assert_eq!(agg.methods[&C].calls, 1);
        assert_eq!(agg.events, 6);
        let leave = agg.stats[usize::from(event::METHOD_LEAVE)];
        assert_eq!((leave.0, leave.3), (3, 9)); // three 3-byte leaves
    }

    #[test]
    fn a_leave_of_no_local_frame_passes_the_rest_on_in_order() {
        let bytes = one_buffer(|b| {
            b.enter(10, A);
            b.leave(20, X); // inherited or unmatched: the stitcher decides
            b.enter(30, B);
            b.leave(40, B);
        });
        let (p, agg, ids) = decode(&bytes, &Options::default(), None);
        let id = |m| ids.id(m);
        assert_eq!(
            p.calls.ordered,
            [
                call(CallKind::Exit, id(X), 20),
                call(CallKind::Enter, id(B), 30),
                call(CallKind::Exit, id(B), 40)
            ]
        );
        assert_eq!(p.calls.phases.len(), 1);
        assert_eq!(p.calls.open.len(), 1);
        assert_eq!(p.calls.last_time, Some(40));
        assert_eq!(agg.methods[&A].calls, 1);
        assert!(!agg.methods.contains_key(&B));
    }

    #[test]
    fn ordered_items_and_order_free_aggregates() {
        let bytes = one_buffer(|b| {
            b.jit(5, A, 0x9000, 64, b"Busy:Main ()");
            b.metadata(
                6,
                &Metadata {
                    action: MetaAction::Name,
                    mtype: MTYPE_THREAD,
                    ptr: 7,
                    image: 0,
                    domain: 0,
                    class: 0,
                    name: b"MainWorker",
                    mvid: b"",
                },
            );
            b.gc_event(10, GC_EVENT_START, 1);
            b.alloc(11, 0x7700, 0x1000, 32, None);
            b.alloc(12, 0x7700, 0x1020, 16, None);
            b.gc_event(20, GC_EVENT_END, 1);
            b.monitor(30, MONITOR_CONTENTION, 0x2000, None);
            b.monitor(35, MONITOR_DONE, 0x2000, None);
            b.heap_mark(40, false);
            b.heap_object(41, 0x3000, 0x7700, 24, 0, &[]);
            b.heap_object(42, 0x3040, 0x7700, 8, 0, &[]);
            b.heap_mark(43, true);
        });
        let (p, agg, _) = decode(&bytes, &Options::default(), None);
        let vt = ClassRef::Vtable(0x7700);
        assert_eq!(
            p.calls.others,
            [
                Item::Thread(7, "MainWorker".into()),
                Item::Gc(GC_EVENT_START, 1, 10),
                Item::Gc(GC_EVENT_END, 1, 20),
                Item::Monitor(MONITOR_CONTENTION, 0x2000, 30, Bt::None),
                Item::Monitor(MONITOR_DONE, 0x2000, 35, Bt::None),
                Item::HeapStart(40),
                Item::HeapObjects(vec![(vt, 32, 2)]),
                Item::HeapEnd,
            ]
        );
        assert_eq!(&*agg.method_names[&A], b"Busy:Main ()");
        assert_eq!(agg.jit_code, [(0x9000, 64, A)]);
        assert_eq!(agg.allocs[&vt], (48, 2));
        assert_eq!((agg.buffers, agg.events), (1, 12));
    }

    #[test]
    fn traces_pass_every_call_and_backtrace_on() {
        let bytes = one_buffer(|b| {
            b.enter(10, A);
            b.alloc(11, 0x7700, 0x1000, 32, None);
            b.throw(12, 0x1000, Some(&[B, A]));
            b.leave(20, A);
        });
        let opts = Options {
            traces: true,
            ..Options::default()
        };
        let (p, agg, ids) = decode(&bytes, &opts, None);
        let frames = Span { start: 0, len: 2 };
        assert_eq!(
            p.calls.ordered,
            [
                call(CallKind::Enter, ids.id(A), 10),
                RItem::Other,
                RItem::Other,
                call(CallKind::Exit, ids.id(A), 20),
            ]
        );
        assert_eq!(
            p.calls.others,
            [
                Item::Trace(Target::Alloc(ClassRef::Vtable(0x7700)), 32, Bt::Stack),
                Item::Trace(Target::Throw, 1, Bt::Frames(frames)),
            ]
        );
        assert_eq!(frames.of(&p.arena), [B, A]);
        assert_eq!(p.calls.phases.len(), 0);
        assert!(agg.methods.is_empty());
        assert_eq!(agg.throws, 1);
    }

    #[test]
    fn the_time_window_keeps_calls_and_allocations_inside_it() {
        let bytes = one_buffer(|b| {
            b.enter(10, A);
            b.alloc(11, 0x7700, 0x1000, 32, None);
            b.leave(20, A);
            b.enter(30, B);
            b.alloc(31, 0x7700, 0x1000, 16, None);
            b.leave(40, B);
        });
        let (p, agg, _) = decode(&bytes, &Options::default(), Some((25, 45)));
        assert_eq!(p.calls.last_time, Some(40));
        assert!(!agg.methods.contains_key(&A));
        assert_eq!(agg.methods[&B].self_ns, 10);
        assert_eq!(agg.allocs[&ClassRef::Vtable(0x7700)], (16, 1));
        // every event is still counted
        assert_eq!(agg.events, 6);
    }

    #[test]
    fn a_decoding_error_ends_the_buffer() {
        let bytes = one_buffer(|b| {
            b.enter(10, A);
            b.raw(&[0x6e, 1, 2, 3]);
        });
        let (p, agg, _) = decode(&bytes, &Options::default(), None);
        assert_eq!(p.calls.open.len(), 1);
        assert_eq!(agg.problems.len(), 1);
        let e = &agg.problems[0];
        assert_eq!(e.context.as_deref(), Some("buffer #0, event #1"));
        assert_eq!(agg.skipped_bytes, 3);
    }
}
