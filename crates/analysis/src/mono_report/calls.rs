//! The call section: per-method call statistics ([`MethodStats`]) from ENTER / LEAVE /
//! EXC_LEAVE, through the model's buffer-parallel [`replay`](profkit_model::replay) — the same
//! mechanism that accounts XRay and Mono calls for `account` and `stack`.
//!
//! * Method pointers become [`FuncId`]s through one [`MethodIds`] table shared by the workers.
//!   Each worker keeps its methods in a [`MethodTable`] of its own, keyed by the pointer: one
//!   slot per method holds its id and its numbers, so an ENTER finds both in one probe, and
//!   only a method the worker has never met takes the shared lock.
//! * Worker side, [`LocalCalls`]: each buffer's calls are replayed as the generic
//!   [`PieceBuilder`](profkit_model::replay::PieceBuilder) replays them in
//!   [`Mode::Local`](profkit_model::replay::Mode::Local) (or all passed on in order with `--traces`,
//!   whose backtraces need the real stack at every event), in a loop of the report's own (the
//!   hot loop of a `calls` file: [`LocalCalls::run_all`] decodes and replays a run of calls
//!   and ALLOCs with its state in registers, and leaves anything rarer — a method new to the
//!   worker, a full frame allocation, a leave that is not of the top frame, an event near the
//!   end of the buffer — to the general replay, one call at a time, without leaving the
//!   run). What does not depend on the frames the buffer inherits —
//!   calls, self time, inclusive time of every activation — is summed in the worker's
//!   per-method slots; what does — whether a completed frame is its method's outermost
//!   activation — is kept per phase as candidates ([`MethodPart`]). The report's other
//!   ordered items ride in the same piece, so they stay in order with the calls passed on in
//!   order.
//! * Stitcher side, [`CallStitcher`]: a [`ThreadReplay`] per thread with a [`MethodFold`]: the
//!   real stack, the statistics of the calls completed on it, the candidates resolved against
//!   it (a candidate counts when no activation of its method is open below it), the call
//!   traces with `--traces`. At the end the frames still open close at the time of their
//!   thread's last event (any event of its last buffer, which the worker notes as the
//!   piece's last time), as mprof-report does.

use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap as FxMap;

use super::MethodStats;
use profkit_mlpd::raw::event::{METHOD_ENTER, METHOD_LEAVE};
use profkit_mlpd::read::{ClassRef, Events};
use profkit_model::func::FuncId;
use profkit_model::replay::{Call, Fold, Item, Phase, Piece, ThreadReplay};
use profkit_model::span::{BuilderStats, CallKind, Frame, MismatchPolicy, Span, SpanSink};

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
        grow(v, i + 1);
    }
    v.get_mut(i)
}

#[cold]
fn grow<T: Default + Clone>(v: &mut Vec<T>, len: usize) {
    v.resize(len, T::default());
}

/// The order-dependent part of a phase: completed frames with no activation of their method
/// below them in the buffer, as (method, inclusive ns) summed per method — outermost
/// activations unless a frame the buffer inherited is one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MethodPart {
    pub(crate) cands: Vec<(FuncId, u64)>,
}

impl SpanSink for MethodPart {
    // A part is filled by the worker's `LocalCalls`, never as a sink.
    fn span(&mut self, _span: &Span) {}
}

/// A method in a worker's [`MethodTable`]: its pointer and id, its order-free statistics, and
/// (per buffer) its activations open and its candidate time in the current phase. One slot per
/// method keeps a call's lookup and updates on one cache line.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// The key; a slot is free while `func` is 0 (ids start at 1).
    method: u64,
    func: FuncId,
    /// Activations on the buffer's own stack.
    active: u32,
    /// Listed in `touched`.
    listed: bool,
    stats: MethodStats,
    /// Inclusive time of the frames completed with no other activation below (this phase).
    acc: u64,
}

/// A worker's methods: an open-addressing table of [`Slot`]s keyed by the method pointer
/// (linear probing, at most half full), in front of the shared [`MethodIds`], which only a
/// method the worker has never met asks (under its lock). An ENTER finds its slot in one probe
/// as a rule; frames keep their slot's index, so a LEAVE looks nothing up. Growing moves the
/// slots: [`MethodTable::insert`] says how, for the indices held elsewhere.
struct MethodTable {
    ids: Arc<MethodIds>,
    /// A power of two of slots.
    slots: Vec<Slot>,
    /// Slots in use.
    used: usize,
}

/// Slots of a worker's table at first (a power of two; it doubles when half full).
const TABLE: usize = 1024;

impl MethodTable {
    fn new(ids: Arc<MethodIds>) -> Self {
        MethodTable {
            ids,
            slots: vec![Slot::default(); TABLE],
            used: 0,
        }
    }

    /// The home index of `method` in a table of `len` slots (a power of two): a multiplicative
    /// hash, method pointers being 8-byte aligned and clustered.
    #[inline(always)]
    fn home(method: u64, len: usize) -> usize {
        (method.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & len.wrapping_sub(1)
    }

    /// The index of `method`'s slot, or `None` when it has none.
    #[inline(always)]
    fn find(&self, method: u64) -> Option<usize> {
        find(&self.slots, method)
    }

    /// The index of `method`'s slot, made now if it has none, and when the table had to grow
    /// for it, where each slot moved (by old index): indices held elsewhere must follow.
    #[cold]
    #[inline(never)]
    fn insert(&mut self, method: u64) -> (usize, Option<Vec<usize>>) {
        if let Some(i) = self.find(method) {
            return (i, None);
        }
        let mut moved = None;
        if (self.used + 1) * 2 > self.slots.len() {
            let grown = vec![Slot::default(); self.slots.len() * 2];
            let old = std::mem::replace(&mut self.slots, grown);
            let mut to = vec![0usize; old.len()];
            for (j, s) in old.iter().enumerate().filter(|(_, s)| s.func.0 != 0) {
                let i = self.free(s.method);
                if let (Some(d), Some(t)) = (self.slots.get_mut(i), to.get_mut(j)) {
                    *d = *s;
                    *t = i;
                }
            }
            moved = Some(to);
        }
        let i = self.free(method);
        let func = self.ids.id(method);
        if let Some(s) = self.slots.get_mut(i) {
            *s = Slot {
                method,
                func,
                ..Slot::default()
            };
            self.used += 1;
        }
        (i, moved)
    }

    /// The first free slot on `method`'s probe path (the table is at most half full).
    fn free(&self, method: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = Self::home(method, self.slots.len());
        while self.slots.get(i).is_some_and(|s| s.func.0 != 0) {
            i = (i + 1) & mask;
        }
        i
    }
}

/// The index of `method`'s slot in a [`MethodTable`]'s `slots`, or `None` when it has none.
#[inline(always)]
fn find(slots: &[Slot], method: u64) -> Option<usize> {
    let mask = slots.len().wrapping_sub(1);
    let mut i = MethodTable::home(method, slots.len());
    loop {
        let s = slots.get(i)?;
        if s.method == method && s.func.0 != 0 {
            return Some(i);
        }
        if s.func.0 == 0 {
            return None;
        }
        i = (i + 1) & mask;
    }
}

/// A frame of the buffer's own stack. It keeps the method pointer, so that a LEAVE is matched
/// against the top frame without a lookup, and its method's slot.
#[derive(Clone, Copy, Debug, Default)]
struct Open {
    method: u64,
    /// The method's slot in the worker's [`MethodTable`].
    slot: usize,
    start: u64,
    /// Time in callees that already returned.
    child: u64,
}

/// The buffer's own stack: frames `0..depth` of an allocation that only grows (the entries
/// above are stale), so that the hot loop pushes into a slice (and stops when it is full: the
/// caller grows it).
#[derive(Debug, Default)]
struct Frames {
    v: Vec<Open>,
    depth: usize,
}

impl Frames {
    /// The open frames, outermost first.
    fn open(&mut self) -> &mut [Open] {
        self.v.get_mut(..self.depth).unwrap_or_default()
    }

    fn last(&self) -> Option<&Open> {
        self.v.get(self.depth.checked_sub(1)?)
    }

    fn push(&mut self, f: Open) {
        match self.v.get_mut(self.depth) {
            Some(s) => *s = f,
            None => self.v.push(f),
        }
        self.depth += 1;
    }
}

/// Closes the top frame of `frames` (`0..depth` open) at `t`: its time goes to its method's
/// slot and to its caller's callee time (to `child`, the phase's, when the buffer has no frame
/// below it). Returns the slot when it has just become a candidate of the phase (to list in
/// `touched`).
#[inline(always)]
fn close_top(
    slots: &mut [Slot],
    frames: &mut [Open],
    depth: &mut usize,
    child: &mut u64,
    t: u64,
) -> Option<usize> {
    let top = depth.checked_sub(1)?;
    let f = *frames.get(top)?;
    *depth = top;
    let dur = t.abs_diff(f.start);
    match top.checked_sub(1).and_then(|p| frames.get_mut(p)) {
        Some(parent) => parent.child = parent.child.saturating_add(dur),
        None => *child = child.saturating_add(dur),
    }
    let s = slots.get_mut(f.slot)?;
    s.stats.self_ns += dur.saturating_sub(f.child);
    s.stats.total_all_ns += dur;
    s.active = s.active.saturating_sub(1);
    if s.active == 0 {
        // no activation of the method below it in the buffer: a candidate outermost one
        s.acc += dur;
        if !s.listed {
            s.listed = true;
            return Some(f.slot);
        }
    }
    None
}

/// Why [`LocalCalls::hot`] stopped: at an event it does not decode (another type, one its
/// decoder's fast paths do not read, the end), or at a call it leaves to the general replay
/// (the enter of a method the worker's table does not have yet, or with the frames'
/// allocation full; a leave that is not of the top frame), the event consumed, or to list a
/// slot in `touched`.
enum Stop {
    Other,
    Enter(u64, u64),
    Leave(u64, u64),
    Listed(usize),
}

/// The index of a call event (`byte`, `size` bytes) in a buffer's histogram of call event
/// sizes by (exinfo, size): a call event has at most 21 bytes (the byte and two LEB128s).
#[inline(always)]
pub(crate) fn size_slot(byte: u8, size: u32) -> usize {
    usize::from(byte & 0x30) << 1 | (size as usize & 31)
}

/// A worker's call replay: one buffer at a time, into a [`Piece`] for the stitcher.
///
/// This is [`PieceBuilder`](profkit_model::replay::PieceBuilder)'s replay
/// ([`Mode::Local`](profkit_model::replay::Mode::Local), [`MismatchPolicy::Unwind`]) written for the
/// report's hot loop (a 256 MB `calls` file has 46 M calls): frames carry the method pointer
/// (a LEAVE of the top frame needs no id lookup) and the per-method numbers go straight to
/// the worker's slots instead of through a completed [`Span`]. The pieces are the builder's
/// (a test compares them) but for the replay's counters, which the report's stitcher does not
/// read and which stay zero (`Phase::peak`, `Piece::counts`): a LEAVE that finds the buffer's
/// own stack empty ends a phase (it closes an inherited frame), one that matches a deeper
/// frame closes the frames above it, one that matches none while the buffer has frames makes
/// the rest of the buffer ordered (as every call is with `--traces`).
pub(crate) struct LocalCalls<I> {
    methods: MethodTable,
    /// Slots with an `acc` in this phase.
    touched: Vec<usize>,
    /// Every call passed on in order (`--traces`).
    all_ordered: bool,
    /// The buffer's own stack.
    stack: Frames,
    /// The current phase's part, and its callee time: what completed on top of the frames the
    /// buffer inherited.
    part: MethodPart,
    child: u64,
    /// Calls fed, and the last one's time.
    calls: u64,
    last: u64,
    piece: Piece<MethodPart, I>,
    /// The rest of the buffer's calls are passed on in order.
    ordered: bool,
}

impl<I> LocalCalls<I> {
    /// A replay on `ids`; with `ordered` every call is passed on in order.
    pub(crate) fn new(ids: Arc<MethodIds>, ordered: bool) -> Self {
        LocalCalls {
            methods: MethodTable::new(ids),
            touched: Vec::new(),
            all_ordered: ordered,
            stack: Frames::default(),
            part: MethodPart::default(),
            child: 0,
            calls: 0,
            last: 0,
            piece: Piece::default(),
            ordered,
        }
    }

    /// Starts a buffer.
    pub(crate) fn begin(&mut self) {
        self.stack.depth = 0;
        (self.child, self.calls, self.last) = (0, 0, 0);
        self.piece = Piece::default();
        self.ordered = self.all_ordered;
    }

    /// An enter (`enter`) or a leave (LEAVE or EXC_LEAVE) of `method` at `t`.
    pub(crate) fn call(&mut self, enter: bool, t: u64, method: u64) {
        self.calls += 1;
        self.last = t;
        if self.ordered {
            self.pass_on(enter, t, method);
        } else {
            self.replay(enter, t, method);
        }
    }

    /// Replays the run of ENTER / LEAVE / EXC_LEAVE events at `evs`'s position (none when
    /// `on` is false; only those inside `window`), counting each in `sizes` by (exinfo,
    /// encoded size); returns the time of the run's last event. For a report with a time
    /// window or `--traces` ([`LocalCalls::run_all`] is the plain report's).
    #[inline(always)]
    pub(crate) fn run(
        &mut self,
        evs: &mut Events<'_>,
        sizes: &mut [u32; 128],
        on: bool,
        window: Option<(u64, u64)>,
    ) -> Option<u64> {
        let mut last = None;
        if on && window.is_none() && !self.ordered {
            // every call replayed here (counted, and the last time taken, at the end), until
            // one makes the rest ordered
            let first = evs.index();
            while let Some((byte, size, t, method)) = evs.next_call() {
                if let Some(n) = sizes.get_mut(size_slot(byte, size)) {
                    *n += 1;
                }
                if !self.replay(byte == METHOD_ENTER, t, method) {
                    break;
                }
            }
            if evs.index() > first {
                self.calls += evs.index() - first;
                self.last = evs.current_time();
                last = Some(self.last);
            }
        }
        // the rest: one call at a time
        while let Some((byte, size, t, method)) = evs.next_call() {
            last = Some(t);
            if let Some(n) = sizes.get_mut(size_slot(byte, size)) {
                *n += 1;
            }
            if on && window.is_none_or(|(a, b)| t >= a && t <= b) {
                self.call(byte == METHOD_ENTER, t, method);
            }
        }
        last
    }

    /// Replays the run of ENTER / LEAVE / EXC_LEAVE events and backtrace-less ALLOCs at `evs`'s
    /// position, counting each call in `sizes` by (exinfo, encoded size) and handing each
    /// ALLOC to `alloc` as (encoded size, class, object size); returns the time of the run's
    /// last event. For the plain report (every call replayed, no window, no tracking, no
    /// traces): the run goes on to the next event of another type, nearly every call in
    /// [`LocalCalls::hot`].
    pub(crate) fn run_all(
        &mut self,
        evs: &mut Events<'_>,
        sizes: &mut [u32; 128],
        alloc: &mut impl FnMut(u32, ClassRef, u64),
    ) -> Option<u64> {
        let first = evs.index();
        loop {
            if !self.ordered {
                match self.hot(evs, sizes, alloc) {
                    Stop::Enter(t, method) => self.enter(t, method),
                    Stop::Leave(t, method) => self.leave_other(t, method),
                    Stop::Listed(i) => self.touched.push(i),
                    Stop::Other => {}
                }
            }
            // what the hot loop leaves: a call near the end of the buffer (or any once the
            // rest is ordered), an ALLOC
            if let Some((byte, size, t, method)) = evs.next_call() {
                if let Some(n) = sizes.get_mut(size_slot(byte, size)) {
                    *n += 1;
                }
                self.call(byte == METHOD_ENTER, t, method);
            } else if let Some((size, _, class, _, bytes)) = evs.next_alloc() {
                alloc(size, class, bytes);
            } else {
                break;
            }
        }
        (evs.index() > first).then(|| evs.current_time())
    }

    /// The loop of [`LocalCalls::run_all`]: the calls and ALLOCs the decoder's fast paths read,
    /// the calls replayed on the buffer's frames and the worker's slots (a leaf call, an ENTER
    /// whose LEAVE comes next, without a frame). Everything else stops it ([`Stop`]). Its state
    /// is local (slices, not the vectors), and it calls nothing but `alloc`, so that the
    /// compiler keeps that state in registers.
    #[inline(never)]
    fn hot(
        &mut self,
        evs: &mut Events<'_>,
        sizes: &mut [u32; 128],
        alloc: &mut impl FnMut(u32, ClassRef, u64),
    ) -> Stop {
        let mut e = evs.clone();
        let (mut calls, mut last, mut child) = (0, self.last, self.child);
        let slots = &mut self.methods.slots[..];
        let frames = &mut self.stack.v[..];
        let mut depth = self.stack.depth;
        let stop = loop {
            let Some((byte, size, t, method)) = e.next_call_fast() else {
                match e.next_alloc_fast() {
                    Some((size, _, class, _, bytes)) => {
                        alloc(size, class, bytes);
                        continue;
                    }
                    None => break Stop::Other,
                }
            };
            if let Some(n) = sizes.get_mut(size_slot(byte, size)) {
                *n += 1;
            }
            calls += 1;
            last = t;
            if byte == METHOD_ENTER {
                let Some(i) = find(slots, method) else {
                    break Stop::Enter(t, method);
                };
                // a leaf call (its LEAVE next: most calls, 58-81% in the benchmark's files)
                // needs no frame: its push and pop in one (no callees: its self time is its
                // time; its method's activations are as before it)
                if let Some((n, t2)) = e.next_leave_here() {
                    if let Some(c) = sizes.get_mut(size_slot(METHOD_LEAVE, n)) {
                        *c += 1;
                    }
                    calls += 1;
                    last = t2;
                    let dur = t2.abs_diff(t);
                    match depth.checked_sub(1).and_then(|top| frames.get_mut(top)) {
                        Some(parent) => parent.child = parent.child.saturating_add(dur),
                        None => child = child.saturating_add(dur),
                    }
                    let Some(s) = slots.get_mut(i) else { continue };
                    s.stats.calls += 1;
                    s.stats.self_ns += dur;
                    s.stats.total_all_ns += dur;
                    if s.active == 0 {
                        s.acc += dur;
                        if !s.listed {
                            s.listed = true;
                            break Stop::Listed(i);
                        }
                    }
                    continue;
                }
                let Some(f) = frames.get_mut(depth) else {
                    break Stop::Enter(t, method);
                };
                *f = Open {
                    method,
                    slot: i,
                    start: t,
                    child: 0,
                };
                depth += 1;
                if let Some(s) = slots.get_mut(i) {
                    s.stats.calls += 1;
                    s.active += 1;
                }
            } else if depth
                .checked_sub(1)
                .and_then(|top| frames.get(top))
                .is_some_and(|f| f.method == method)
            {
                if let Some(i) = close_top(slots, frames, &mut depth, &mut child, t) {
                    break Stop::Listed(i);
                }
            } else {
                break Stop::Leave(t, method);
            }
        };
        *evs = e;
        self.calls += calls;
        (self.last, self.child, self.stack.depth) = (last, child, depth);
        stop
    }

    /// Replays a call on the buffer's own stack; false when it made the rest ordered.
    #[inline(always)]
    fn replay(&mut self, enter: bool, t: u64, method: u64) -> bool {
        if enter {
            self.enter(t, method);
        } else if self.stack.last().is_some_and(|f| f.method == method) {
            self.pop(t);
        } else {
            self.leave_other(t, method);
            return !self.ordered;
        }
        true
    }

    #[inline(always)]
    fn enter(&mut self, t: u64, method: u64) {
        let slot = self.slot(method);
        if let Some(s) = self.methods.slots.get_mut(slot) {
            s.stats.calls += 1;
            s.active += 1;
        }
        self.stack.push(Open {
            method,
            slot,
            start: t,
            child: 0,
        });
    }

    /// The index of `method`'s slot in the worker's table.
    #[inline(always)]
    fn slot(&mut self, method: u64) -> usize {
        match self.methods.find(method) {
            Some(i) => i,
            None => self.new_slot(method),
        }
    }

    /// A slot for a method the table does not have; the frames and the phase's methods follow
    /// the slots when the table grows.
    #[cold]
    #[inline(never)]
    fn new_slot(&mut self, method: u64) -> usize {
        let (i, moved) = self.methods.insert(method);
        if let Some(to) = moved {
            let to = |j: usize| to.get(j).copied().unwrap_or(0);
            for f in self.stack.open() {
                f.slot = to(f.slot);
            }
            for j in &mut self.touched {
                *j = to(*j);
            }
        }
        i
    }

    /// The id of `method` (for what goes to the stitcher).
    fn func(&mut self, method: u64) -> FuncId {
        let i = self.slot(method);
        self.methods.slots.get(i).map_or(FuncId(0), |s| s.func)
    }

    /// Closes the top frame at `t`.
    #[inline(always)]
    fn pop(&mut self, t: u64) {
        let (slots, stack) = (&mut self.methods.slots, &mut self.stack);
        if let Some(i) = close_top(slots, &mut stack.v, &mut stack.depth, &mut self.child, t) {
            self.touched.push(i);
        }
    }

    /// A leave that is not of the top frame.
    #[cold]
    #[inline(never)]
    fn leave_other(&mut self, t: u64, method: u64) {
        if self.stack.depth == 0 {
            // the exit of an inherited frame: the phase ends
            let end = Call {
                kind: CallKind::Exit,
                func: self.func(method),
                time: t,
            };
            self.end_phase(Some(end));
        } else if let Some(pos) = self.stack.open().iter().rposition(|f| f.method == method) {
            // an exception left the frames above it
            while self.stack.depth > pos {
                self.pop(t);
            }
        } else {
            // it may close inherited frames too, or nothing: only the real stack can tell
            self.close_local();
            self.ordered = true;
            self.pass_on(false, t, method);
        }
    }

    /// Passes a call on in order.
    fn pass_on(&mut self, enter: bool, t: u64, method: u64) {
        let kind = if enter {
            CallKind::Enter
        } else {
            CallKind::Exit
        };
        let func = self.func(method);
        self.piece.ordered.push(Item::Call(Call {
            kind,
            func,
            time: t,
        }));
    }

    /// The phase ends (with `end`, the exit of an inherited frame, or with the buffer's local
    /// replay): its candidates go to its part.
    fn end_phase(&mut self, end: Option<Call>) {
        let mut part = std::mem::take(&mut self.part);
        for i in self.touched.drain(..) {
            if let Some(s) = self.methods.slots.get_mut(i) {
                part.cands.push((s.func, std::mem::take(&mut s.acc)));
                s.listed = false;
            }
        }
        self.piece.phases.push(Phase {
            part,
            child: std::mem::take(&mut self.child),
            peak: 0,
            end,
        });
    }

    /// The local replay ends: the last phase, and the frames still open.
    fn close_local(&mut self) {
        self.end_phase(None);
        let depth = std::mem::take(&mut self.stack.depth);
        for f in self.stack.v.iter().take(depth) {
            let mut func = FuncId(0);
            if let Some(s) = self.methods.slots.get_mut(f.slot) {
                s.active = s.active.saturating_sub(1);
                func = s.func;
            }
            self.piece.open.push(Frame {
                func,
                start: f.start,
                child: f.child,
            });
        }
    }

    /// One of the report's ordered items, in order with the calls.
    pub(crate) fn item(&mut self, item: I) {
        self.piece.ordered.push(Item::Other);
        self.piece.others.push(item);
    }

    /// Ends the buffer.
    pub(crate) fn end(&mut self) -> Piece<MethodPart, I> {
        if !self.ordered {
            self.close_local();
        }
        let mut piece = std::mem::take(&mut self.piece);
        piece.calls = self.calls;
        piece.last_time = (self.calls > 0).then_some(self.last);
        piece
    }

    /// The order-free statistics of every buffer replayed, by method, added to `into`.
    pub(crate) fn finish(self, into: &mut FxMap<u64, MethodStats>) {
        for s in self.methods.slots {
            if s.func.0 != 0 && s.stats != MethodStats::default() {
                into.entry(s.method).or_default().add(&s.stats);
            }
        }
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

    /// The report's replay makes the generic builder's pieces (but for the counters it leaves
    /// at zero), and cut anywhere gives the sequential numbers, on many random sequences of
    /// calls to a few methods (recursion, unwinding leaves, leaves of inherited frames, stray
    /// leaves).
    #[test]
    fn pieces_are_the_builders_on_random_calls() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..3000 {
            let len = next(16) as usize;
            let mut t = 0;
            let calls: Vec<(bool, u64, u64)> = (0..len)
                .map(|_| {
                    t += 1 + next(50);
                    (next(100) < 55, t, 0x1000 + 8 * next(4))
                })
                .collect();
            let cut = [next(len as u64 + 1) as usize, next(len as u64 + 1) as usize];
            same_as_the_builder(&calls, [cut[0].min(cut[1]), cut[0].max(cut[1])]);
        }
    }

    /// A buffer with more methods than a worker's table holds at first, entered while frames
    /// of the others are open (the table grows under them): the builder's pieces and numbers.
    #[test]
    fn the_method_table_grows_under_open_frames() {
        let n = 3 * TABLE as u64;
        let mut calls = Vec::new();
        for i in 0..n {
            calls.push((true, 10 * i, 0x7f00_0000_0000 + 8 * i));
            if i % 3 == 2 {
                calls.push((false, 10 * i + 5, 0x7f00_0000_0000 + 8 * i));
            }
        }
        for i in (0..n).rev().filter(|i| i % 3 != 2) {
            calls.push((false, 100 * n - i, 0x7f00_0000_0000 + 8 * i));
        }
        // and the leave of an inherited frame, and one that matches nothing
        calls.push((false, 100 * n, 0x10));
        calls.push((true, 100 * n + 1, 0x7f00_0000_0000));
        calls.push((false, 100 * n + 2, 0x20));
        let len = calls.len();
        same_as_the_builder(&calls, [len / 3, len / 2]);
    }

    /// `calls` (enter?, time, method) replayed by a worker make the generic builder's piece,
    /// and cut at `cut` give the sequential numbers.
    fn same_as_the_builder(calls: &[(bool, u64, u64)], cut: [usize; 2]) {
        use profkit_model::replay::{Mode, PieceBuilder};
        let ids = Arc::new(MethodIds::default());
        let mut local: LocalCalls<()> = LocalCalls::new(ids.clone(), false);
        let mut pb: PieceBuilder<MethodPart, ()> =
            PieceBuilder::new(Mode::Local, MismatchPolicy::Unwind, 0);
        local.begin();
        for &(enter, t, m) in calls {
            local.call(enter, t, m);
            let kind = if enter {
                CallKind::Enter
            } else {
                CallKind::Exit
            };
            pb.call(kind, ids.id(m), t);
        }
        let (a, b) = (local.end(), pb.finish());
        let ends = |p: &Piece<MethodPart, ()>| -> Vec<(Option<Call>, u64)> {
            p.phases.iter().map(|ph| (ph.end, ph.child)).collect()
        };
        assert_eq!(ends(&a), ends(&b), "{calls:?}");
        assert_eq!((&a.open, &a.ordered), (&b.open, &b.ordered), "{calls:?}");
        assert_eq!((a.calls, a.last_time), (b.calls, b.last_time), "{calls:?}");
        let (seq, unmatched, unfinished) = replay(calls, &[], true);
        let (numbers, u, f) = replay(calls, &cut, false);
        assert_eq!(sorted(&numbers), sorted(&seq), "{calls:?} cut at {cut:?}");
        assert_eq!((u, f), (unmatched, unfinished), "{calls:?} cut at {cut:?}");
    }

    /// The hot loop ([`LocalCalls::run_all`]) replays a buffer as one call at a time does: the
    /// same piece, numbers, call sizes and allocations, on random buffers of calls (stacks that
    /// outgrow the frames' allocation, more methods than the table holds at first, unwinding
    /// leaves, leaves of inherited frames, stray leaves), ALLOCs and other events, with short
    /// and long deltas, up to the buffer's end.
    #[test]
    fn the_hot_loop_replays_as_one_call_at_a_time() {
        use profkit_mlpd::read::{EventKind, File};
        use profkit_mlpd::write::Writer;
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..400u64 {
            let mut w = Writer::new(profkit_mlpd::Header {
                major: 3,
                data_version: 17,
                ptrsize: 8,
                ..profkit_mlpd::Header::default()
            });
            let mut b = w.buffer(0x7000, 1000);
            let mut t = 1000u64;
            let methods = if round % 4 == 0 { 3000 } else { 6 };
            let mut open = Vec::new();
            for _ in 0..next(2000) {
                t += match next(50) {
                    0 => 1 << 40,
                    1..=9 => 1 + next(100),
                    _ => 200 + next(20000),
                };
                let m = if next(8) == 0 {
                    0x7f00_0000_0000 + 8 * next(methods)
                } else {
                    0x5500_0000 + 64 * next(methods)
                };
                match next(40) {
                    0 => b.alloc(
                        t,
                        0x7700 + 8 * next(100),
                        0x1000 + next(1 << 20),
                        next(300),
                        None,
                    ),
                    1 => b.gc_event(t, next(3), next(2)),
                    2 => b.exc_leave(t, open.pop().unwrap_or(m)),
                    3 => b.leave(t, m),
                    4..=20 if round % 3 != 1 => {
                        open.push(m);
                        b.enter(t, m);
                    }
                    4..=20 => b.leave(t, open.pop().unwrap_or(m)),
                    _ if next(2) == 0 => {
                        open.push(m);
                        b.enter(t, m);
                    }
                    _ => b.leave(t, open.pop().unwrap_or(m)),
                }
            }
            if round % 2 == 0 {
                // the last calls away from the buffer's end
                b.jit(
                    t,
                    0x5500_0000,
                    0x1000,
                    64,
                    b"Some.Class:SomeMethod (int,string)",
                );
            }
            b.finish();
            let bytes = w.into_bytes();
            let file = File::parse(&bytes).unwrap();
            let buf = file.buffers().next().unwrap().unwrap();
            // one call at a time, through the general decoder
            let mut one: LocalCalls<()> = LocalCalls::new(Arc::new(MethodIds::default()), false);
            let (mut sizes, mut allocs) = ([0u32; 128], Vec::new());
            one.begin();
            for ev in buf.events() {
                let ev = ev.unwrap();
                match ev.kind {
                    EventKind::Enter { method } => one.call(true, ev.time, method),
                    EventKind::Leave { method } | EventKind::ExcLeave { method } => {
                        one.call(false, ev.time, method)
                    }
                    EventKind::Alloc { class, size, .. } => allocs.push((ev.size, class, size)),
                    _ => {}
                }
                if matches!(
                    ev.kind,
                    EventKind::Enter { .. } | EventKind::Leave { .. } | EventKind::ExcLeave { .. }
                ) {
                    sizes[size_slot(ev.byte, ev.size)] += 1;
                }
            }
            // the hot loop, the general decoder for the rest
            let mut hot: LocalCalls<()> = LocalCalls::new(Arc::new(MethodIds::default()), false);
            let (mut hot_sizes, mut hot_allocs) = ([0u32; 128], Vec::new());
            hot.begin();
            let mut evs = buf.events();
            loop {
                hot.run_all(&mut evs, &mut hot_sizes, &mut |size, class, bytes| {
                    hot_allocs.push((size, class, bytes))
                });
                match evs.next() {
                    Some(Ok(ev)) => assert!(
                        matches!(ev.kind, EventKind::GcEvent { .. } | EventKind::Jit { .. }),
                        "{:?}",
                        ev.kind
                    ),
                    None => break,
                    Some(Err(e)) => panic!("{e}"),
                }
            }
            assert_eq!(hot.end(), one.end(), "round {round}");
            assert_eq!((hot_sizes, hot_allocs), (sizes, allocs), "round {round}");
            let (mut a, mut b) = (FxMap::default(), FxMap::default());
            hot.finish(&mut a);
            one.finish(&mut b);
            assert_eq!(sorted(&a), sorted(&b), "round {round}");
        }
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
