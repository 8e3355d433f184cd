//! The worker side: replaying one piece of a thread's calls on its own.

use std::mem;

use crate::func::FuncId;
use crate::span::{close_top, CallKind, Frame, MismatchPolicy, SpanSink};

/// A call event as a buffer's decoder yields it (raw clock units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// Enter, exit or tail exit.
    pub kind: CallKind,
    /// The function.
    pub func: FuncId,
    /// When (raw clock units).
    pub time: u64,
}

/// Something a piece passes on in order: a call, or the place of a format's own event (an
/// XRay custom event, a Mono exception …) that must stay in order with the calls; the events
/// themselves are in [`Piece::others`], in order (a call item stays 24 bytes whatever the
/// format's events weigh).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// A call, replayed on the real stack by the stitcher.
    Call(Call),
    /// The next of the piece's own events.
    Other,
}

/// How a [`PieceBuilder`] treats calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Replay calls inside the piece against an unknown inherited stack, into the fold's
    /// parts (order-free analyses: accounting, stack trees, method statistics). Other items
    /// are kept in order among themselves and applied after the piece's local calls.
    Local,
    /// Keep every call and item in order for the stitcher (analyses that need the real stack
    /// at every event: timelines, llvm-xray's `stack`).
    Ordered,
}

/// Counters of the calls a piece completed on its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Calls completed.
    pub spans: u64,
    /// Of those, calls closed by a deeper function's exit ([`MismatchPolicy::Unwind`]).
    pub deduced: u64,
    /// Exits that matched no frame.
    pub unmatched: u64,
}

/// A stretch of a piece between two exits of inherited frames.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Phase<P> {
    /// The calls the piece completed on its own in this stretch.
    pub part: P,
    /// Their total duration: callee time of the inherited frame they ran on.
    pub child: u64,
    /// How deep the piece's own stack grew in this stretch.
    pub peak: u32,
    /// The exit that ends the stretch (it applies to an inherited frame); `None` for the last.
    pub end: Option<Call>,
}

/// What a worker made of a piece of one thread's calls.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece<P, I> {
    /// [`Mode::Local`]: the stretches between exits of inherited frames.
    pub phases: Vec<Phase<P>>,
    /// Frames the piece opened and did not close, outermost first.
    pub open: Vec<Frame>,
    /// What the stitcher replays in order after the phases and the open frames: every call in
    /// [`Mode::Ordered`], the calls after an unresolvable exit in [`Mode::Local`], and the
    /// places of the format's own items.
    pub ordered: Vec<Item>,
    /// The format's own items, in order.
    pub others: Vec<I>,
    /// Counters of the calls completed in the phases.
    pub counts: Counts,
    /// Calls fed (all modes).
    pub calls: u64,
    /// Time of the last call fed, if any.
    pub last_time: Option<u64>,
}

impl<P, I> Default for Piece<P, I> {
    fn default() -> Self {
        Piece {
            phases: Vec::new(),
            open: Vec::new(),
            ordered: Vec::new(),
            others: Vec::new(),
            counts: Counts::default(),
            calls: 0,
            last_time: None,
        }
    }
}

/// Replays a piece of one thread's calls (a buffer, or part of one) on its own.
#[derive(Debug)]
pub struct PieceBuilder<P, I> {
    mode: Mode,
    policy: MismatchPolicy,
    thread: u32,
    stack: Vec<Frame>,
    phase: Phase<P>,
    piece: Piece<P, I>,
    /// The rest of the piece goes to `ordered` (Ordered mode, or an unresolvable exit).
    ordered: bool,
}

impl<P: SpanSink + Default, I> PieceBuilder<P, I> {
    /// A builder for calls of thread index `thread` (given to the parts' spans; 0 when not
    /// known yet), matching exits by `policy`.
    pub fn new(mode: Mode, policy: MismatchPolicy, thread: u32) -> Self {
        PieceBuilder {
            mode,
            policy,
            thread,
            stack: Vec::with_capacity(64),
            phase: Phase::default(),
            piece: Piece::default(),
            ordered: mode == Mode::Ordered,
        }
    }

    /// Whether no call or item was fed.
    pub fn is_empty(&self) -> bool {
        self.piece.calls == 0 && self.piece.others.is_empty()
    }

    /// Number of calls and items fed so far.
    pub fn len(&self) -> u64 {
        self.piece.calls + self.piece.others.len() as u64
    }

    /// Feeds a call.
    #[inline(always)]
    pub fn call(&mut self, kind: CallKind, func: FuncId, time: u64) {
        self.piece.calls += 1;
        self.piece.last_time = Some(time);
        let call = Call { kind, func, time };
        if self.ordered {
            self.piece.ordered.push(Item::Call(call));
            return;
        }
        if kind == CallKind::Enter {
            let depth = self.stack.len() as u32;
            self.phase.part.enter(func, time, depth);
            self.stack.push(Frame {
                func,
                start: time,
                child: 0,
            });
            self.phase.peak = self.phase.peak.max(depth + 1);
            return;
        }
        match self.stack.last() {
            None => {
                // The exit of an inherited frame: the stretch ends.
                let next = Phase {
                    end: None,
                    ..Phase::default()
                };
                let mut done = mem::replace(&mut self.phase, next);
                done.end = Some(call);
                self.piece.phases.push(done);
            }
            Some(top) if top.func == func => self.pop(time),
            Some(_) => match self.policy {
                MismatchPolicy::Ignore => self.piece.counts.unmatched += 1,
                MismatchPolicy::Unwind | MismatchPolicy::UnwindAll => {
                    match self.stack.iter().rposition(|f| f.func == func) {
                        Some(pos) => {
                            while self.stack.len() > pos + 1 {
                                self.piece.counts.deduced += 1;
                                self.pop(time);
                            }
                            self.pop(time);
                        }
                        None => {
                            // It may close inherited frames too, or nothing: only the real
                            // stack can tell. The rest of the piece is replayed in order.
                            self.close_local();
                            self.ordered = true;
                            self.piece.ordered.push(Item::Call(call));
                        }
                    }
                }
            },
        }
    }

    /// Feeds a format's own item (kept in order; see [`Mode`]).
    pub fn other(&mut self, item: I) {
        self.piece.ordered.push(Item::Other);
        self.piece.others.push(item);
    }

    #[inline(always)]
    fn pop(&mut self, time: u64) {
        let Some(span) = close_top(&mut self.stack, self.thread, time) else {
            return;
        };
        if self.stack.is_empty() {
            // The phase's own callee time: what completed on top of the inherited frames.
            self.phase.child = self.phase.child.saturating_add(span.duration());
        }
        self.piece.counts.spans += 1;
        self.phase.part.span(&span);
    }

    fn close_local(&mut self) {
        let last = mem::take(&mut self.phase);
        self.piece.phases.push(last);
        self.piece.open.append(&mut self.stack);
    }

    /// Ends the piece.
    pub fn finish(mut self) -> Piece<P, I> {
        if !self.ordered {
            self.close_local();
        }
        self.piece
    }

    /// Ends the piece and starts the next one of the same thread, reusing allocations: the
    /// frames still open become the next piece's inherited frames.
    pub fn take(&mut self) -> Piece<P, I> {
        let next = PieceBuilder {
            mode: self.mode,
            policy: self.policy,
            thread: self.thread,
            stack: Vec::with_capacity(self.stack.capacity()),
            phase: Phase::default(),
            piece: Piece::default(),
            ordered: self.mode == Mode::Ordered,
        };
        mem::replace(self, next).finish()
    }
}
