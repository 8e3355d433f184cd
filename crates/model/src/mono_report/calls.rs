//! The call replay: per-method call statistics ([`MethodStats`]) from ENTER / LEAVE /
//! EXC_LEAVE, computed buffer by buffer on the workers and completed in file order by the
//! stitcher.
//!
//! This module is all the report knows about call stacks; the worker and the stitcher talk to
//! it through a narrow interface, so that another replay (profkit-model's generic one) can
//! take its place:
//!
//! * worker side, [`LocalCalls`]: [`begin`](LocalCalls::begin) a buffer, feed each
//!   [`call`](LocalCalls::call) (it answers `false` when the call must instead be passed on in
//!   order, as an ordered item of the piece), [`end`](LocalCalls::end) the buffer into a
//!   [`CallPiece`], and at the end [`finish`](LocalCalls::finish) into the per-method totals;
//! * stitcher side, [`CallStitcher`]: per buffer (in file order) [`apply`](CallStitcher::apply)
//!   its [`CallPiece`] before its ordered items, [`enter`](CallStitcher::enter) /
//!   [`leave`](CallStitcher::leave) the calls passed on in order, [`after`](CallStitcher::after)
//!   the items; [`stack`](CallStitcher::stack) is a thread's real stack (for backtraces);
//!   [`finish`](CallStitcher::finish) closes the frames still open.
//!
//! How a buffer is replayed on its own: its calls run against an *unknown inherited stack*.
//! Frames entered and left in the buffer are accounted at once (self time, inclusive time,
//! calls). What depends on the frames the buffer inherits is summarised in [`Phase`]s, one per
//! leave of an inherited frame: the time of the completed top-level frames (the callee time of
//! the inherited top frame), and the completed frames with no activation of the same method
//! below them in the buffer (outermost activations, unless an inherited frame is one). Frames
//! still open at the end are handed on. A leave that matches none of the buffer's own frames
//! while it has some cannot be resolved here: that call and the rest of the buffer's calls are
//! passed on in order. With `ordered` (backtraces need the real stack) every call is.

use rustc_hash::FxHashMap as FxMap;

use super::MethodStats;

/// What the frames a buffer inherits see between two of their leaves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Phase {
    /// Time of completed top-level frames: callee time of the inherited top frame.
    pub(crate) callee: u64,
    /// (method, inclusive ns) of completed frames with no activation of the same method
    /// below them in the buffer: outermost activations unless the inherited stack has one.
    pub(crate) cands: Vec<(u64, u64)>,
    /// The leave (method, time) that ends the phase (it pops inherited frames).
    pub(crate) end: Option<(u64, u64)>,
}

/// A frame left open at the end of a buffer's local replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Open {
    pub(crate) method: u64,
    pub(crate) start: u64,
    pub(crate) callee: u64,
}

/// What a buffer's local replay hands to the stitcher.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CallPiece {
    /// The stretches between leaves of inherited frames (the last one has no `end`).
    pub(crate) phases: Vec<Phase>,
    /// Frames the buffer opened and did not close, outermost first.
    pub(crate) open: Vec<Open>,
    /// Time of the buffer's last call (local or passed on).
    pub(crate) last_call: Option<u64>,
}

/// A method's statistics in a worker, and its state in the buffer being replayed.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    method: u64,
    stats: MethodStats,
    /// Activations on the buffer's own stack.
    active: u32,
    /// Inclusive time of the frames completed with no other activation below (this phase).
    acc: u64,
    /// Listed in `touched`.
    touched: bool,
}

#[derive(Clone, Copy, Debug)]
struct LocalFrame {
    slot: u32,
    start: u64,
    callee: u64,
}

/// A worker's call replay: one buffer at a time against an unknown inherited stack.
#[derive(Debug)]
pub(crate) struct LocalCalls {
    slots: Vec<Slot>,
    slot_of: FxMap<u64, u32>,
    /// Direct-mapped cache in front of `slot_of` (method pointers repeat a lot).
    cache: Box<[(u64, u32); 512]>,
    stack: Vec<LocalFrame>,
    /// Slots with a candidate in the current phase.
    touched: Vec<u32>,
    /// Every call is passed on in order.
    ordered: bool,
    // the buffer being replayed
    phase: Phase,
    piece: CallPiece,
    /// The rest of the buffer's calls are passed on in order.
    bailed: bool,
}

impl LocalCalls {
    /// A replay; with `ordered` every call is passed on in order.
    pub(crate) fn new(ordered: bool) -> LocalCalls {
        LocalCalls {
            slots: Vec::new(),
            slot_of: FxMap::default(),
            cache: Box::new([(0, u32::MAX); 512]),
            stack: Vec::with_capacity(256),
            touched: Vec::new(),
            ordered,
            phase: Phase::default(),
            piece: CallPiece::default(),
            bailed: ordered,
        }
    }

    /// Starts a buffer.
    pub(crate) fn begin(&mut self) {
        self.stack.clear();
        self.phase = Phase::default();
        self.piece = CallPiece::default();
        self.bailed = self.ordered;
    }

    /// An enter (`enter`) or a leave (LEAVE or EXC_LEAVE) of `method` at `t`: replayed inside
    /// the buffer (`true`), or to be passed on in order (`false`; also every later call of the
    /// buffer).
    #[inline(always)]
    pub(crate) fn call(&mut self, enter: bool, t: u64, method: u64) -> bool {
        self.piece.last_call = Some(t);
        if self.bailed {
            return false;
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
            return true;
        }
        match self.stack.last() {
            Some(f) if self.method_of(f.slot) == method => self.pop_local(t),
            None => {
                // pops a frame the buffer inherited: a phase ends
                self.flush_phase();
                self.phase.end = Some((method, t));
                self.piece.phases.push(std::mem::take(&mut self.phase));
            }
            Some(_) => {
                let pos = self
                    .stack
                    .iter()
                    .rposition(|f| self.method_of(f.slot) == method);
                match pos {
                    Some(pos) => {
                        while self.stack.len() > pos {
                            self.pop_local(t);
                        }
                    }
                    None => {
                        // it may match an inherited frame, or nothing: the stitcher decides;
                        // the rest of the buffer's calls go there
                        self.bailed = true;
                        self.close_local();
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Ends the buffer: what the stitcher needs of its local replay.
    pub(crate) fn end(&mut self) -> CallPiece {
        if !self.bailed {
            self.close_local();
        }
        std::mem::take(&mut self.piece)
    }

    /// The per-method statistics of every buffer replayed, added to `into`.
    pub(crate) fn finish(self, into: &mut FxMap<u64, MethodStats>) {
        for s in self.slots {
            into.entry(s.method).or_default().add(&s.stats);
        }
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
    fn pop_local(&mut self, t: u64) {
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
            None => self.phase.callee += dur,
        }
    }

    fn flush_phase(&mut self) {
        for &i in &self.touched {
            if let Some(s) = self.slots.get_mut(i as usize) {
                self.phase.cands.push((s.method, s.acc));
                s.acc = 0;
                s.touched = false;
            }
        }
        self.touched.clear();
    }

    /// Ends the local replay: the last phase, and the frames still open.
    fn close_local(&mut self) {
        self.flush_phase();
        self.piece.phases.push(std::mem::take(&mut self.phase));
        for f in self.stack.drain(..) {
            if let Some(s) = self.slots.get_mut(f.slot as usize) {
                s.active = s.active.saturating_sub(1);
                self.piece.open.push(Open {
                    method: s.method,
                    start: f.start,
                    callee: f.callee,
                });
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    method: u64,
    start: u64,
    callee: u64,
}

/// One thread's real stack in the stitcher.
#[derive(Debug, Default)]
struct ThreadCalls {
    stack: Vec<Frame>,
    /// Activations per method on the stack.
    active: FxMap<u64, u32>,
    /// Time of the thread's last call (open frames close there at the end).
    last: u64,
}

/// The stitcher's call replay: the real stack of every thread, in file order.
#[derive(Debug, Default)]
pub(crate) struct CallStitcher {
    threads: FxMap<u64, ThreadCalls>,
    /// Statistics of the calls completed here.
    pub(crate) methods: FxMap<u64, MethodStats>,
    /// Leaves that matched no frame.
    pub(crate) unmatched_leaves: u64,
    /// Frames still open at the end (closed at their thread's last call).
    pub(crate) unfinished: u64,
}

impl CallStitcher {
    /// Applies the local replay of thread `tid`'s next buffer (before its ordered items): each
    /// phase on top of the real stack, then the frames it left open.
    pub(crate) fn apply(&mut self, tid: u64, p: &CallPiece) {
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
    }

    /// After the buffer's ordered items: its last call time.
    pub(crate) fn after(&mut self, tid: u64, p: &CallPiece) {
        if let (Some(t), Some(ts)) = (p.last_call, self.threads.get_mut(&tid)) {
            ts.last = t;
        }
    }

    /// An enter passed on in order.
    pub(crate) fn enter(&mut self, tid: u64, m: u64, t: u64) {
        self.methods.entry(m).or_default().calls += 1;
        let ts = self.threads.entry(tid).or_default();
        ts.last = t;
        *ts.active.entry(m).or_default() += 1;
        ts.stack.push(Frame {
            method: m,
            start: t,
            callee: 0,
        });
    }

    /// A leave (LEAVE or EXC_LEAVE) passed on in order: closes the innermost frame of `m` and
    /// the frames above it (an exception that unwound them without EXC_LEAVE); counted as
    /// unmatched when no frame is `m`.
    pub(crate) fn leave(&mut self, tid: u64, m: u64, t: u64) {
        let ts = self.threads.entry(tid).or_default();
        ts.last = t;
        match ts.stack.iter().rposition(|f| f.method == m) {
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

    /// Thread `tid`'s real stack, outermost first.
    pub(crate) fn stack(
        &self,
        tid: u64,
    ) -> impl DoubleEndedIterator<Item = u64> + ExactSizeIterator + '_ {
        self.threads
            .get(&tid)
            .map_or(&[][..], |ts| &ts.stack[..])
            .iter()
            .map(|f| f.method)
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
        let m = self.methods.entry(f.method).or_default();
        m.self_ns += dur.saturating_sub(f.callee);
        m.total_all_ns += dur;
        if outermost {
            m.total_ns += dur;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays `calls` (enter?, time, method) of one thread cut into pieces at `cuts`, each
    /// piece by its own worker replay, stitched in order; `ordered` passes every call on.
    fn replay(calls: &[(bool, u64, u64)], cuts: &[usize], ordered: bool) -> CallStitcher {
        let mut st = CallStitcher::default();
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(calls.len());
        let mut totals: FxMap<u64, MethodStats> = FxMap::default();
        for w in bounds.windows(2) {
            let mut local = LocalCalls::new(ordered);
            local.begin();
            let mut passed = Vec::new();
            for &(enter, t, m) in &calls[w[0]..w[1]] {
                if !local.call(enter, t, m) {
                    passed.push((enter, t, m));
                }
            }
            let piece = local.end();
            st.apply(1, &piece);
            for (enter, t, m) in passed {
                if enter {
                    st.enter(1, m, t);
                } else {
                    st.leave(1, m, t);
                }
            }
            st.after(1, &piece);
            local.finish(&mut totals);
        }
        st.finish();
        for (m, s) in totals {
            st.methods.entry(m).or_default().add(&s);
        }
        st
    }

    fn sorted(st: &CallStitcher) -> Vec<(u64, MethodStats)> {
        let mut v: Vec<_> = st.methods.iter().map(|(&m, &s)| (m, s)).collect();
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
        let seq = replay(&calls, &[], true);
        assert_eq!((seq.unmatched_leaves, seq.unfinished), (1, 1));
        let m = |id| seq.methods[&id];
        assert_eq!((m(1).total_ns, m(1).self_ns), (100, 100 - 30 - 10 - 10));
        assert_eq!((m(2).calls, m(2).total_ns, m(2).total_all_ns), (3, 40, 50));
        assert_eq!(m(5).total_ns, 20);
        for a in 0..=calls.len() {
            for b in a..=calls.len() {
                let cut = replay(&calls, &[a, b], false);
                assert_eq!(sorted(&cut), sorted(&seq), "cut at {a}, {b}");
                assert_eq!(
                    (cut.unmatched_leaves, cut.unfinished),
                    (seq.unmatched_leaves, seq.unfinished)
                );
            }
        }
    }
}
