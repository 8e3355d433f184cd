//! The stitcher: applies the workers' pieces in file order on the calling thread.
//!
//! Per buffer it first lets the call replay ([`super::calls`]) resolve the buffer's local
//! replay against the real stacks, then applies the buffer's ordered items: GC events (START
//! and END of a generation paired process-wide at the end, in time order: a collection may
//! start on one thread and end on another), monitor waits (CONTENTION paired with DONE or
//! FAIL per thread and object), heap shots, GC handle counts, counters (deltas), thread,
//! domain and context names, backtraces (the real stack for the events without their own)
//! and tracked objects.

use rustc_hash::FxHashMap as FxMap;

use super::calls::CallStitcher;
use super::worker::{Bt, Item, Piece, Span, Target, TrackRec, Value};
use super::Options;
use profkit_mlpd::raw::*;
use profkit_mlpd::read::ClassRef;
use profkit_mlpd::Error;

/// One thread's state in the stitcher (besides its call stack).
#[derive(Debug, Default)]
struct ThreadState {
    /// Per lock object: the time of the contention waiting for its DONE or FAIL.
    contention: FxMap<u64, u64>,
}

/// A backtrace table: frames (method ids, in the order they print) → count.
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
    /// GC STARTs (`true`) and ENDs per generation: (time, start?), in file order; paired at
    /// the end.
    gc_events: [Vec<(u64, bool)>; 3],
    /// The call replay's side: real stacks, the statistics of the calls completed here.
    pub calls: CallStitcher,
    /// Per generation: (collections, max pause ns, total pause ns), set by [`Stitcher::finish`].
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
    pub target_traces: FxMap<Target, Traces>,
    // tracking
    tracked: Vec<u64>,
    find: Option<(u64, Option<String>)>,
    classes: FxMap<u64, Box<[u8]>>,
    vtables: FxMap<u64, u64>,
    pub tracking: Vec<Tracked>,
}

impl Stitcher {
    pub(crate) fn new(opts: &Options, ids: std::sync::Arc<super::calls::MethodIds>) -> Stitcher {
        Stitcher {
            calls: CallStitcher::new(ids, opts.traces.then_some(opts.maxframes)),
            maxframes: opts.maxframes,
            traces: opts.traces,
            tracked: opts.track.clone(),
            find: opts.find.clone().map(|f| (f.min_size, f.name)),
            ..Stitcher::default()
        }
    }

    /// The innermost `maxframes` frames of a thread's real `stack`, outermost first.
    fn stack_key(&self, stack: &[u64]) -> Box<[u64]> {
        let skip = stack.len().saturating_sub(self.maxframes);
        stack.get(skip..).unwrap_or_default().into()
    }

    fn bt_key(&self, stack: &[u64], bt: Bt, arena: &[u64]) -> Box<[u64]> {
        match bt {
            Bt::None => Box::new([]),
            Bt::Stack => self.stack_key(stack),
            Bt::Frames(s) => {
                let all = s.of(arena);
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
        let arena = std::mem::take(&mut p.arena);
        let mut calls = std::mem::take(&mut self.calls);
        calls.apply(tid, p.calls, |it, stack| self.item(tid, it, &arena, stack));
        self.calls = calls;
    }

    fn item(&mut self, tid: u64, it: Item, arena: &[u64], stack: &[u64]) {
        let span = |s: Span| s.of(arena);
        match it {
            Item::Gc(event, g, t) => {
                if event == GC_EVENT_START || event == GC_EVENT_END {
                    if let Some(v) = self.gc_events.get_mut(g) {
                        v.push((t, event == GC_EVENT_START));
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
                            let key = self.bt_key(stack, bt, arena);
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
                let key = self.bt_key(stack, bt, arena);
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
            Item::Track(r) => self.track(r, arena, stack),
        }
    }

    fn is_tracked(&self, obj: u64) -> bool {
        self.tracked.contains(&obj)
    }

    fn track(&mut self, r: TrackRec, arena: &[u64], stack: &[u64]) {
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
                    let frames = self.bt_key(stack, bt, arena).into_vec();
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
                    let frames = self.bt_key(stack, bt, arena).into_vec();
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

    /// Ends the pass: closes every thread's open frames at the time of its last event (as
    /// mprof-report does), a heap shot without its end, and pairs the GC events.
    pub(crate) fn finish(&mut self) {
        self.calls.finish();
        for (gen, events) in self.gens.iter_mut().zip(&mut self.gc_events) {
            *gen = gc_pauses(std::mem::take(events));
        }
        if let Some(mut s) = self.cur_shot.take() {
            // a heap shot without its end (file cut off): counted with what it has
            s.resolve_refs();
            self.shots.push(s);
        }
    }
}

/// One generation's collections from its GC STARTs (`true`) and ENDs, (time, start?) in file
/// order: (collections, max pause, total pause). A collection is process-wide and Mono may end
/// it on another thread than the one that started it (sgen's concurrent major collections
/// start on the allocating thread and end on the finalizer thread), and buffers of different
/// threads come in any order, so the events are put in time order (file order among equal
/// times) and each END closes the START before it. Every START counts, as in mprof-report; a
/// START without its END (a file cut during a collection) has no pause, an END without a
/// START is ignored.
fn gc_pauses(mut events: Vec<(u64, bool)>) -> (u64, u64, u64) {
    events.sort_by_key(|&(t, _)| t); // stable: file order among equal times
    let (mut n, mut max, mut total) = (0, 0, 0);
    let mut open: Option<u64> = None;
    for (t, start) in events {
        if start {
            n += 1;
            open = Some(t);
        } else if let Some(s) = open.take() {
            let d = t - s;
            max = max.max(d);
            total += d;
        }
    }
    (n, max, total)
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
                if ty & GC_ROOT_PINNING != 0 {
                    e.1 += 1;
                }
            }
        }
        self.root_objs = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mono_report::worker::{Agg, Worker};
    use crate::mono_report::MethodStats;
    use profkit_mlpd::write::{BufferWriter, Writer};
    use profkit_mlpd::{File, Header};

    const MAIN: u64 = 0x5000;
    const FIB: u64 = 0x5008;
    const A: u64 = 0x5010;
    const B: u64 = 0x5018;

    type Build<'f> = Box<dyn FnOnce(&mut BufferWriter<'_>) + 'f>;

    /// A v17 file of the buffers (thread, time base, events).
    fn file(buffers: Vec<(u64, u64, Build<'_>)>) -> Vec<u8> {
        let mut w = Writer::new(Header {
            major: 3,
            data_version: 17,
            ptrsize: 8,
            ..Header::default()
        });
        for (thread, base, f) in buffers {
            let mut b = w.buffer(thread, base);
            f(&mut b);
            b.finish();
        }
        w.into_bytes()
    }

    /// Every buffer decoded on its own (each by a fresh worker, as on different threads) and
    /// stitched in file order.
    fn stitch(bytes: &[u8], opts: &Options) -> (Stitcher, Agg) {
        let f = File::parse(bytes).unwrap();
        let ids = std::sync::Arc::new(super::super::calls::MethodIds::default());
        let mut st = Stitcher::new(opts, ids.clone());
        let mut agg = Agg::default();
        for b in f.buffers() {
            let mut w = Worker::new(opts, ids.clone());
            st.apply(w.piece(&b.unwrap(), None));
            agg.merge(w.finish());
        }
        st.finish();
        (st, agg)
    }

    /// The workers' and the stitcher's statistics of `m`.
    fn stats(st: &Stitcher, agg: &Agg, m: u64) -> MethodStats {
        let mut s = agg.methods.get(&m).copied().unwrap_or_default();
        if let Some(t) = st.calls.methods_stats.get(&m) {
            s.add(t);
        }
        s
    }

    #[test]
    fn phases_resolve_against_the_frames_a_buffer_inherits() {
        let bytes = file(vec![
            (
                1,
                0,
                Box::new(|b| {
                    b.enter(0, MAIN);
                    b.enter(10, FIB);
                    b.enter(20, FIB);
                }),
            ),
            (2, 0, Box::new(|b| b.enter(15, A))),
            (
                1,
                25,
                Box::new(|b| {
                    b.leave(30, FIB);
                    b.leave(40, FIB);
                    b.enter(50, FIB);
                    b.leave(60, FIB);
                    b.leave(100, MAIN);
                }),
            ),
        ]);
        for traces in [false, true] {
            let opts = Options {
                traces,
                ..Options::default()
            };
            let (st, agg) = stitch(&bytes, &opts);
            let main = stats(&st, &agg, MAIN);
            assert_eq!(
                (main.calls, main.self_ns, main.total_ns, main.total_all_ns),
                (1, 60, 100, 100)
            );
            // recursion: the inner activation is not in the outermost total
            let fib = stats(&st, &agg, FIB);
            assert_eq!(
                (fib.calls, fib.self_ns, fib.total_ns, fib.total_all_ns),
                (3, 40, 40, 50),
                "traces {traces}"
            );
            assert_eq!(st.calls.unmatched_leaves, 0);
            // thread 2's A is still open: closed at its thread's last event (its enter)
            assert_eq!(st.calls.unfinished, 1);
            assert_eq!(stats(&st, &agg, A).total_ns, 0);
        }
    }

    #[test]
    fn unfinished_frames_close_at_their_threads_last_event() {
        let bytes = file(vec![
            (
                1,
                0,
                Box::new(|b| {
                    b.enter(10, A);
                    b.enter(20, B);
                    b.leave(25, B);
                }),
            ),
            (
                2,
                0,
                Box::new(|b| {
                    b.enter(10, B);
                    b.leave(900, B);
                }),
            ),
            (
                1,
                30,
                Box::new(|b| {
                    b.enter(40, B);
                    // not a call: still the thread's last event (mprof-report's last_time)
                    b.gc_resize(70, 4096);
                }),
            ),
            // a buffer without calls ends the thread later still
            (1, 80, Box::new(|b| b.sync_point(100, 0))),
        ]);
        for traces in [false, true] {
            let opts = Options {
                traces,
                ..Options::default()
            };
            let (st, agg) = stitch(&bytes, &opts);
            assert_eq!(st.calls.unfinished, 2);
            // thread 1's last event is at 100: A 10..100 (B 20..25 and 40..100 inside)
            let a = stats(&st, &agg, A);
            assert_eq!((a.calls, a.total_ns, a.self_ns), (1, 90, 90 - 5 - 60));
            let b = stats(&st, &agg, B);
            assert_eq!((b.calls, b.total_all_ns), (3, 5 + 890 + 60));
        }
    }

    #[test]
    fn a_leave_matching_a_deeper_inherited_frame_unwinds_and_a_stray_one_is_counted() {
        let bytes = file(vec![
            (
                1,
                0,
                Box::new(|b| {
                    b.enter(0, MAIN);
                    b.enter(10, A);
                    b.enter(20, B);
                }),
            ),
            (
                1,
                30,
                Box::new(|b| {
                    b.enter(30, FIB);
                    b.exc_leave(40, A); // unwinds FIB and B
                    b.leave(50, 0x6666); // nothing
                    b.leave(60, MAIN);
                }),
            ),
        ]);
        let (st, agg) = stitch(&bytes, &Options::default());
        assert_eq!(st.calls.unmatched_leaves, 1);
        assert_eq!(st.calls.unfinished, 0);
        assert_eq!(stats(&st, &agg, FIB).total_ns, 10);
        assert_eq!(stats(&st, &agg, B).total_ns, 20);
        let a = stats(&st, &agg, A);
        assert_eq!((a.total_ns, a.self_ns), (30, 10));
        assert_eq!(stats(&st, &agg, MAIN).total_ns, 60);
    }

    #[test]
    fn gc_pauses_pair_start_and_end_per_generation_across_threads() {
        let bytes = file(vec![
            (
                1,
                0,
                Box::new(|b| {
                    b.gc_event(100, GC_EVENT_START, 0);
                    b.gc_event(110, GC_EVENT_START, 1);
                    b.gc_event(150, GC_EVENT_END, 1);
                }),
            ),
            // a stray END later than the pair (as in the file's order here) closes nothing
            (2, 0, Box::new(|b| b.gc_event(500, GC_EVENT_END, 0))),
            (1, 200, Box::new(|b| b.gc_event(300, GC_EVENT_END, 0))),
            (1, 400, Box::new(|b| b.gc_event(450, GC_EVENT_END, 0))),
            // a collection started by thread 3 and ended by thread 4, whose buffer comes
            // first in the file: paired in time order
            (4, 1100, Box::new(|b| b.gc_event(1200, GC_EVENT_END, 1))),
            (3, 900, Box::new(|b| b.gc_event(1000, GC_EVENT_START, 1))),
            // a START without its END counts, without a pause
            (3, 2000, Box::new(|b| b.gc_event(2000, GC_EVENT_START, 2))),
        ]);
        let (st, _) = stitch(&bytes, &Options::default());
        assert_eq!(st.gens[0], (1, 200, 200));
        assert_eq!(st.gens[1], (2, 200, 240));
        assert_eq!(st.gens[2], (1, 0, 0));
    }

    #[test]
    fn monitor_waits_pair_contention_with_done_or_fail() {
        const LOCK: u64 = 0x2000;
        let bytes = file(vec![
            (
                1,
                0,
                Box::new(|b| b.monitor(100, MONITOR_CONTENTION, LOCK, None)),
            ),
            (
                2,
                0,
                Box::new(|b| {
                    b.monitor(200, MONITOR_CONTENTION, LOCK, None);
                    b.monitor(260, MONITOR_FAIL, LOCK, None);
                }),
            ),
            (
                1,
                300,
                Box::new(|b| b.monitor(350, MONITOR_DONE, LOCK, None)),
            ),
            // a DONE without contention waits for nothing
            (3, 0, Box::new(|b| b.monitor(400, MONITOR_DONE, LOCK, None))),
        ]);
        let (st, _) = stitch(&bytes, &Options::default());
        assert_eq!(st.locks[&LOCK], (2, 250 + 60, 250));
        assert_eq!(st.monitor_counts, [0, 2, 2, 1]);
    }

    #[test]
    fn problems_pass_in_order() {
        let mut st = Stitcher::new(&Options::default(), Default::default());
        for off in [10, 5] {
            st.apply(Piece {
                problem: Some(profkit_mlpd::error::bad_buffer_magic(off, 0)),
                ..Piece::default()
            });
        }
        let offsets: Vec<u64> = st.problems.iter().map(|e| e.offset).collect();
        assert_eq!(offsets, [10, 5]);
    }
}
