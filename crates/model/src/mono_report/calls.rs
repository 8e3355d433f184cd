//! The call section: per-method call statistics ([`MethodStats`]) from ENTER / LEAVE /
//! EXC_LEAVE, through the model's buffer-parallel [`replay`](crate::replay) — the same
//! mechanism that accounts XRay and Mono calls for `account` and `stack`.
//!
//! * Method pointers become [`FuncId`]s through one [`MethodIds`] table shared by the workers
//!   (each keeps a direct-mapped cache and a map of its own in front of it, so only a method
//!   the worker has never met takes the lock).
//! * Worker side, [`LocalCalls`]: each buffer's calls go through a [`PieceBuilder`] in
//!   [`Mode::Local`] (or [`Mode::Ordered`] with `--traces`, whose backtraces need the real stack
//!   at every event). What does not depend on the frames the buffer inherits — calls, self
//!   time, inclusive time of every activation — is summed in the worker ([`WorkerStats`], a
//!   [`Local`]); what does — whether a completed frame is its method's outermost activation —
//!   is kept per phase as candidates ([`MethodPart`]). The report's other ordered items ride
//!   in the same piece, so they stay in order with the calls passed on in order.
//! * Stitcher side, [`CallStitcher`]: a [`ThreadReplay`] per thread with a [`MethodFold`]: the
//!   real stack, the statistics of the calls completed on it, the candidates resolved against
//!   it (a candidate counts when no activation of its method is open below it), the call
//!   traces with `--traces`. At the end the frames still open close at the time of their
//!   thread's last event (any event of its last buffer, which the worker notes as the
//!   piece's last time), as mprof-report does.

use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap as FxMap;

use super::MethodStats;
use crate::func::FuncId;
use crate::replay::{Fold, Local, Mode, Piece, PieceBuilder, ThreadReplay};
use crate::span::{BuilderStats, CallKind, Frame, MismatchPolicy, Span, SpanSink};
use profkit_mlpd::raw::event::METHOD_ENTER;
use profkit_mlpd::read::Events;

/// Method pointers ↔ dense [`FuncId`]s, shared by every worker (ids from 1, in the order the
/// workers first meet the methods; nothing depends on that order).
#[derive(Debug, Default)]
pub(crate) struct MethodIds {
    ids: RwLock<FxMap<u64, u32>>,
    methods: RwLock<Vec<u64>>,
}

impl MethodIds {
    /// The id of `method`, assigned now if it has none.
    pub(crate) fn id(&self, method: u64) -> FuncId {
        if let Some(&id) = self.ids.read().ok().as_ref().and_then(|m| m.get(&method)) {
            return FuncId(id);
        }
        let (Ok(mut ids), Ok(mut methods)) = (self.ids.write(), self.methods.write()) else {
            return FuncId(0);
        };
        let next = methods.len() as u32 + 1;
        let id = *ids.entry(method).or_insert(next);
        if id == next {
            methods.push(method);
        }
        FuncId(id)
    }

    /// Every method, indexed by id - 1.
    fn snapshot(&self) -> Vec<u64> {
        self.methods.read().map(|m| m.clone()).unwrap_or_default()
    }
}

/// A method's index in dense per-method tables.
#[inline(always)]
fn slot(f: FuncId) -> usize {
    f.0 as usize
}

/// Grows `v` so that `i` is an index of it.
#[inline(always)]
fn at<T: Default + Clone>(v: &mut Vec<T>, i: usize) -> Option<&mut T> {
    if i >= v.len() {
        v.resize(i + 1, T::default());
    }
    v.get_mut(i)
}

/// The order-dependent part of a phase: completed frames with no activation of their method
/// below them in the buffer, as (method, inclusive ns) summed per method — outermost
/// activations unless a frame the buffer inherited is one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MethodPart {
    pub(crate) cands: Vec<(FuncId, u64)>,
}

impl SpanSink for MethodPart {
    // A part is fed through `WorkerStats` (a `Local`), never as a sink.
    fn span(&mut self, _span: &Span) {}
}

/// A method in a worker: its order-free statistics, and (per buffer) its activations open and
/// its candidate time in the current phase. One slot per method keeps a call's updates on one
/// cache line.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    stats: MethodStats,
    /// Activations on the buffer's own stack.
    active: u32,
    /// Listed in `touched`.
    listed: bool,
    /// Inclusive time of the frames completed with no other activation below (this phase).
    acc: u64,
}

/// What a worker sums over every buffer it replays, by method id.
#[derive(Debug, Default)]
pub(crate) struct WorkerStats {
    slots: Vec<Slot>,
    /// Methods with an `acc` in this phase.
    touched: Vec<FuncId>,
}

impl Local<MethodPart> for WorkerStats {
    #[inline(always)]
    fn enter(&mut self, _part: &mut MethodPart, func: FuncId, _time: u64, _depth: u32) {
        if let Some(s) = at(&mut self.slots, slot(func)) {
            s.stats.calls += 1;
            s.active += 1;
        }
    }

    #[inline(always)]
    fn span(&mut self, _part: &mut MethodPart, span: &Span) {
        let dur = span.duration();
        let Some(s) = at(&mut self.slots, slot(span.func)) else {
            return;
        };
        s.stats.self_ns += span.self_time;
        s.stats.total_all_ns += dur;
        s.active = s.active.saturating_sub(1);
        if s.active == 0 {
            s.acc += dur;
            if !s.listed {
                s.listed = true;
                self.touched.push(span.func);
            }
        }
    }

    fn end_phase(&mut self, part: &mut MethodPart) {
        for f in self.touched.drain(..) {
            if let Some(s) = self.slots.get_mut(slot(f)) {
                part.cands.push((f, std::mem::take(&mut s.acc)));
                s.listed = false;
            }
        }
    }

    fn end_piece(&mut self, open: &[Frame]) {
        for f in open {
            if let Some(s) = self.slots.get_mut(slot(f.func)) {
                s.active = s.active.saturating_sub(1);
            }
        }
    }
}

/// Slots of a worker's method id cache (a power of two).
const ID_CACHE: usize = 1024;

/// A direct-mapped cache of method ids in front of the worker's own map, itself in front of
/// the shared [`MethodIds`] (so a cache miss never takes the shared lock, which the other
/// workers' misses would contend for: only a method the worker has never met does).
struct IdCache {
    ids: Arc<MethodIds>,
    cache: Box<[(u64, u32); ID_CACHE]>,
    known: FxMap<u64, u32>,
}

impl IdCache {
    #[inline(always)]
    fn id(&mut self, method: u64) -> FuncId {
        // multiplicative hash: method pointers are 8-byte aligned and clustered
        let ci = (method.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize & (ID_CACHE - 1);
        if let Some(&(m, id)) = self.cache.get(ci) {
            if m == method && id != 0 {
                return FuncId(id);
            }
        }
        self.miss(ci, method)
    }

    #[inline(never)]
    fn miss(&mut self, ci: usize, method: u64) -> FuncId {
        let id = match self.known.get(&method) {
            Some(&id) => FuncId(id),
            None => {
                let id = self.ids.id(method);
                self.known.insert(method, id.0);
                id
            }
        };
        if let Some(c) = self.cache.get_mut(ci) {
            *c = (method, id.0);
        }
        id
    }
}

/// A worker's call replay: one buffer at a time.
pub(crate) struct LocalCalls<I> {
    ids: IdCache,
    stats: WorkerStats,
    mode: Mode,
    piece: Option<PieceBuilder<MethodPart, I>>,
}

impl<I> LocalCalls<I> {
    /// A replay on `ids`; with `ordered` every call is passed on in order.
    pub(crate) fn new(ids: Arc<MethodIds>, ordered: bool) -> Self {
        LocalCalls {
            ids: IdCache {
                ids,
                cache: Box::new([(0, 0); ID_CACHE]),
                known: FxMap::default(),
            },
            stats: WorkerStats::default(),
            mode: if ordered { Mode::Ordered } else { Mode::Local },
            piece: None,
        }
    }

    /// Starts a buffer.
    pub(crate) fn begin(&mut self) {
        self.piece = Some(PieceBuilder::new(self.mode, MismatchPolicy::Unwind, 0));
    }

    /// An enter (`enter`) or a leave (LEAVE or EXC_LEAVE) of `method` at `t`.
    #[inline(always)]
    pub(crate) fn call(&mut self, enter: bool, t: u64, method: u64) {
        let func = self.ids.id(method);
        let kind = if enter {
            CallKind::Enter
        } else {
            CallKind::Exit
        };
        if let Some(pb) = &mut self.piece {
            pb.call_with(kind, func, t, &mut self.stats);
        }
    }

    /// Replays the run of ENTER / LEAVE / EXC_LEAVE events at `evs`'s position (none when
    /// `on` is false; only those inside `window`), counting each in `sizes` by (exinfo,
    /// encoded size); returns the time of the run's last event. The report's hot loop: the
    /// id cache, the statistics and the piece are borrowed once for the whole run.
    #[inline(always)]
    pub(crate) fn run(
        &mut self,
        evs: &mut Events<'_>,
        sizes: &mut [u32; 128],
        on: bool,
        window: Option<(u64, u64)>,
    ) -> Option<u64> {
        let ids = &mut self.ids;
        let stats = &mut self.stats;
        let mut piece = self.piece.as_mut().filter(|_| on);
        let mut last = None;
        while let Some((byte, size, t, method)) = evs.next_call() {
            last = Some(t);
            let k = (usize::from(byte >> 4) & 3) << 5 | (size as usize & 31);
            if let Some(n) = sizes.get_mut(k) {
                *n += 1;
            }
            if let Some(pb) = piece.as_deref_mut() {
                if window.is_none_or(|(a, b)| t >= a && t <= b) {
                    let kind = if byte == METHOD_ENTER {
                        CallKind::Enter
                    } else {
                        CallKind::Exit
                    };
                    pb.call_with(kind, ids.id(method), t, stats);
                }
            }
        }
        last
    }

    /// One of the report's ordered items, in order with the calls.
    pub(crate) fn item(&mut self, item: I) {
        if let Some(pb) = &mut self.piece {
            pb.other(item);
        }
    }

    /// Ends the buffer.
    pub(crate) fn end(&mut self) -> Piece<MethodPart, I> {
        match self.piece.take() {
            Some(pb) => pb.finish_with(&mut self.stats),
            None => Piece::default(),
        }
    }

    /// The order-free statistics of every buffer replayed, by method, added to `into`.
    pub(crate) fn finish(self, into: &mut FxMap<u64, MethodStats>) {
        let methods = self.ids.ids.snapshot();
        let stats = self.stats.slots.into_iter().map(|s| s.stats).collect();
        add_by_method(&methods, stats, into);
    }
}

/// Adds statistics indexed by method id to `into`, keyed by method pointer.
fn add_by_method(methods: &[u64], stats: Vec<MethodStats>, into: &mut FxMap<u64, MethodStats>) {
    for (i, s) in stats.into_iter().enumerate() {
        if s == MethodStats::default() {
            continue;
        }
        if let Some(&m) = i.checked_sub(1).and_then(|j| methods.get(j)) {
            into.entry(m).or_default().add(&s);
        }
    }
}

/// One thread's calls on its real stack (the stitcher's [`Fold`]).
#[derive(Debug, Default)]
pub(crate) struct MethodFold {
    stats: Vec<MethodStats>,
    /// Activations per method on the real stack.
    active: Vec<u32>,
    /// With `--traces`: the real stack (method ids), and per method the stacks it was entered
    /// from (the innermost `maxframes` frames).
    traces: Option<usize>,
    stack: Vec<FuncId>,
    call_traces: FxMap<FuncId, FxMap<Box<[FuncId]>, u64>>,
}

impl MethodFold {
    fn new(traces: Option<usize>) -> Self {
        MethodFold {
            traces,
            ..MethodFold::default()
        }
    }

    fn push(&mut self, func: FuncId) {
        if let Some(a) = at(&mut self.active, slot(func)) {
            *a += 1;
        }
        if self.traces.is_some() {
            self.stack.push(func);
        }
    }
}

impl SpanSink for MethodFold {
    fn enter(&mut self, func: FuncId, _time: u64, _depth: u32) {
        if let Some(s) = at(&mut self.stats, slot(func)) {
            s.calls += 1;
        }
        if let Some(max) = self.traces {
            let skip = self.stack.len().saturating_sub(max);
            let key: Box<[FuncId]> = self.stack.get(skip..).unwrap_or_default().into();
            *self
                .call_traces
                .entry(func)
                .or_default()
                .entry(key)
                .or_default() += 1;
        }
        self.push(func);
    }

    fn span(&mut self, span: &Span) {
        let i = slot(span.func);
        let dur = span.duration();
        let outermost = match self.active.get_mut(i) {
            Some(a) => {
                *a = a.saturating_sub(1);
                *a == 0
            }
            None => true,
        };
        if self.traces.is_some() {
            self.stack.pop();
        }
        if let Some(s) = at(&mut self.stats, i) {
            s.self_ns += span.self_time;
            s.total_all_ns += dur;
            if outermost {
                s.total_ns += dur;
            }
        }
    }
}

impl Fold for MethodFold {
    type Part = MethodPart;

    fn resolve(&mut self, part: MethodPart) {
        for (f, dur) in part.cands {
            let i = slot(f);
            if self.active.get(i).is_none_or(|&a| a == 0) {
                if let Some(s) = at(&mut self.stats, i) {
                    s.total_ns += dur;
                }
            }
        }
    }

    fn push_open(&mut self, func: FuncId, _start: u64, _depth: u32) {
        self.push(func);
    }
}

/// The stitcher's side: every thread's real stack, in file order.
#[derive(Debug, Default)]
pub(crate) struct CallStitcher {
    ids: Arc<MethodIds>,
    threads: FxMap<u64, ThreadReplay<MethodFold>>,
    traces: Option<usize>,
    /// The methods by id - 1 (a snapshot, refreshed when a stack names a newer id).
    methods: Vec<u64>,
    /// Statistics of the calls completed here, by method.
    pub(crate) methods_stats: FxMap<u64, MethodStats>,
    /// With `--traces`: per method, the stacks it was entered from.
    pub(crate) call_traces: FxMap<u64, FxMap<Box<[u64]>, u64>>,
    /// Leaves that matched no frame.
    pub(crate) unmatched_leaves: u64,
    /// Frames still open at the end (closed at their thread's last event).
    pub(crate) unfinished: u64,
}

impl CallStitcher {
    /// A stitcher for the ids `ids`; with `traces`, call traces of at most that many frames.
    pub(crate) fn new(ids: Arc<MethodIds>, traces: Option<usize>) -> Self {
        CallStitcher {
            ids,
            traces,
            ..CallStitcher::default()
        }
    }

    /// Applies thread `tid`'s next piece: its phases on top of the real stack, its open
    /// frames, then its ordered calls and items (`item` gets each item with the thread's real
    /// stack of method pointers, outermost first).
    pub(crate) fn apply<I>(
        &mut self,
        tid: u64,
        piece: Piece<MethodPart, I>,
        mut item: impl FnMut(I, &[u64]),
    ) {
        let traces = self.traces;
        let replay = self.threads.entry(tid).or_insert_with(|| {
            ThreadReplay::new(0, MismatchPolicy::Unwind, MethodFold::new(traces), false)
        });
        let ids = &self.ids;
        let methods = &mut self.methods;
        let mut stack = Vec::new();
        replay.apply(piece, |r, it| {
            stack.clear();
            for f in r.frames() {
                let j = (f.func.0 as usize).wrapping_sub(1);
                if j >= methods.len() {
                    *methods = ids.snapshot();
                }
                stack.push(methods.get(j).copied().unwrap_or(0));
            }
            item(it, &stack);
        });
    }

    /// Ends the pass: closes every thread's open frames at its last event, and gathers the
    /// statistics and traces by method.
    pub(crate) fn finish(&mut self) {
        let methods = self.ids.snapshot();
        let by_id = |f: FuncId| {
            (f.0 as usize)
                .checked_sub(1)
                .and_then(|j| methods.get(j))
                .copied()
                .unwrap_or(0)
        };
        for (_, r) in std::mem::take(&mut self.threads) {
            let (fold, stats): (MethodFold, BuilderStats) = r.finish(true);
            self.unmatched_leaves += stats.unmatched_exits;
            self.unfinished += stats.unfinished;
            add_by_method(&methods, fold.stats, &mut self.methods_stats);
            for (f, t) in fold.call_traces {
                let per = self.call_traces.entry(by_id(f)).or_default();
                for (k, n) in t {
                    let key: Box<[u64]> = k.iter().map(|&f| by_id(f)).collect();
                    *per.entry(key).or_default() += n;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays `calls` (enter?, time, method) of one thread cut into pieces at `cuts`, each
    /// piece by its own worker, stitched in order; `ordered` passes every call on.
    fn replay(
        calls: &[(bool, u64, u64)],
        cuts: &[usize],
        ordered: bool,
    ) -> (FxMap<u64, MethodStats>, u64, u64) {
        let ids = Arc::new(MethodIds::default());
        let mut st = CallStitcher::new(ids.clone(), None);
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(calls.len());
        let mut totals: FxMap<u64, MethodStats> = FxMap::default();
        for w in bounds.windows(2) {
            let mut local: LocalCalls<()> = LocalCalls::new(ids.clone(), ordered);
            local.begin();
            for &(enter, t, m) in &calls[w[0]..w[1]] {
                local.call(enter, t, m);
            }
            let piece = local.end();
            st.apply(1, piece, |_, _| {});
            local.finish(&mut totals);
        }
        st.finish();
        for (m, s) in std::mem::take(&mut st.methods_stats) {
            totals.entry(m).or_default().add(&s);
        }
        (totals, st.unmatched_leaves, st.unfinished)
    }

    fn sorted(m: &FxMap<u64, MethodStats>) -> Vec<(u64, MethodStats)> {
        let mut v: Vec<_> = m.iter().map(|(&m, &s)| (m, s)).collect();
        v.sort_by_key(|&(m, _)| m);
        v
    }

    /// Every cut of a sequence with recursion, an unwinding leave, a stray leave and an
    /// unfinished frame gives the sequential replay's numbers.
    #[test]
    fn every_cut_gives_the_sequential_numbers() {
        let calls = [
            (true, 0, 1),
            (true, 10, 2),
            (true, 20, 2),
            (true, 25, 3),
            (false, 30, 2), // closes 3 and the inner 2
            (false, 40, 2),
            (false, 45, 9), // matches nothing
            (true, 50, 2),
            (false, 60, 2),
            (true, 70, 4),
            (false, 80, 4),
            (false, 100, 1),
            (true, 110, 5), // unfinished
            (true, 120, 6),
            (false, 130, 6),
        ];
        let (seq, unmatched, unfinished) = replay(&calls, &[], true);
        assert_eq!((unmatched, unfinished), (1, 1));
        let m = |id| seq[&id];
        assert_eq!((m(1).total_ns, m(1).self_ns), (100, 100 - 30 - 10 - 10));
        assert_eq!((m(2).calls, m(2).total_ns, m(2).total_all_ns), (3, 40, 50));
        assert_eq!(m(5).total_ns, 20);
        for a in 0..=calls.len() {
            for b in a..=calls.len() {
                let cut = replay(&calls, &[a, b], false);
                assert_eq!(sorted(&cut.0), sorted(&seq), "cut at {a}, {b}");
                assert_eq!((cut.1, cut.2), (unmatched, unfinished));
            }
        }
    }
}
