//! Call events and the streaming per-thread span builder.

use crate::func::FuncId;

/// A call event of one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// The function was entered.
    Enter,
    /// The function returned.
    Exit,
    /// The function left by a tail call (XRay writes it before the callee's Enter).
    TailExit,
}

/// A completed call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The function.
    pub func: FuncId,
    /// Index of the thread (the order in which the ingester met the threads).
    pub thread: u32,
    /// Enter time (raw clock units).
    pub start: u64,
    /// Exit time (raw clock units).
    pub end: u64,
    /// Depth on the thread's stack (0 = outermost known frame).
    pub depth: u32,
    /// Time not spent in callees (raw clock units).
    pub self_time: u64,
}

impl Span {
    /// `|end - start|` (llvm-xray takes the absolute difference, so a backwards clock does not wrap).
    #[inline]
    pub fn duration(&self) -> u64 {
        self.end.abs_diff(self.start)
    }
}

/// What to do with an exit whose function is not on top of the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MismatchPolicy {
    /// If the function is deeper in the stack, close every frame above it and the frame itself
    /// at the exit's time (llvm-xray's `-d`, "deduce sibling calls": the exits of the frames
    /// above were lost, e.g. a runtime without tail-exit sleds). Otherwise the exit is unmatched.
    #[default]
    Unwind,
    /// Count the exit as unmatched and leave the stack as it is (llvm-xray `-k` without `-d`).
    Ignore,
    /// As [`MismatchPolicy::Unwind`], but an exit whose function is on no frame closes every
    /// frame at its time (and still counts as unmatched): `llvm-xray stack`'s rule.
    UnwindAll,
}

/// Receives what a [`SpanBuilder`] reconstructs. Spans come innermost first (in exit order).
///
/// `()` is the sink that keeps nothing.
pub trait SpanSink {
    /// A frame was pushed at `depth`.
    #[inline]
    fn enter(&mut self, _func: FuncId, _time: u64, _depth: u32) {}
    /// A call completed; it was the top frame.
    fn span(&mut self, span: &Span);
}

impl SpanSink for () {
    #[inline]
    fn span(&mut self, _span: &Span) {}
}

impl<F: FnMut(&Span)> SpanSink for F {
    fn span(&mut self, span: &Span) {
        self(span)
    }
}

/// Counters of a builder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuilderStats {
    /// Spans emitted.
    pub spans: u64,
    /// Spans closed by [`MismatchPolicy::Unwind`] at a deeper function's exit.
    pub deduced: u64,
    /// Exits that matched no frame (threshold elision, trace started mid-call, lost enters).
    pub unmatched_exits: u64,
    /// Frames still open when the thread's events ended.
    pub unfinished: u64,
    /// Deepest stack seen.
    pub max_depth: u32,
}

impl BuilderStats {
    /// Adds another builder's counters.
    pub fn merge(&mut self, o: &BuilderStats) {
        self.spans += o.spans;
        self.deduced += o.deduced;
        self.unmatched_exits += o.unmatched_exits;
        self.unfinished += o.unfinished;
        self.max_depth = self.max_depth.max(o.max_depth);
    }
}

/// An open call on a thread's stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The function.
    pub func: FuncId,
    /// Enter time (raw clock units).
    pub start: u64,
    /// Time spent in callees that already returned (raw clock units).
    pub child: u64,
}

/// Closes the top frame of `stack` at `time`: the completed call (its depth is what stays on
/// the stack, its self time its duration less its callees'), whose duration is added to the
/// callee time of the frame below it. `None` when the stack is empty.
#[inline(always)]
pub(crate) fn close_top(stack: &mut Vec<Frame>, thread: u32, time: u64) -> Option<Span> {
    let f = stack.pop()?;
    let dur = time.abs_diff(f.start);
    if let Some(parent) = stack.last_mut() {
        parent.child = parent.child.saturating_add(dur);
    }
    Some(Span {
        func: f.func,
        thread,
        start: f.start,
        end: time,
        depth: stack.len() as u32,
        self_time: dur.saturating_sub(f.child),
    })
}

/// Streaming reconstruction of one thread's calls. State is O(stack depth).
#[derive(Clone, Debug)]
pub struct SpanBuilder {
    thread: u32,
    policy: MismatchPolicy,
    stack: Vec<Frame>,
    stats: BuilderStats,
    last_time: u64,
}

impl SpanBuilder {
    /// A builder for thread index `thread`.
    pub fn new(thread: u32, policy: MismatchPolicy) -> Self {
        SpanBuilder {
            thread,
            policy,
            stack: Vec::with_capacity(64),
            stats: BuilderStats::default(),
            last_time: 0,
        }
    }

    /// Current stack depth.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// Counters so far.
    pub fn stats(&self) -> BuilderStats {
        self.stats
    }

    /// Feeds one event.
    #[inline]
    pub fn event(&mut self, kind: CallKind, func: FuncId, time: u64, sink: &mut impl SpanSink) {
        self.last_time = time;
        match kind {
            CallKind::Enter => {
                let depth = self.stack.len() as u32;
                sink.enter(func, time, depth);
                self.stack.push(Frame {
                    func,
                    start: time,
                    child: 0,
                });
                if depth + 1 > self.stats.max_depth {
                    self.stats.max_depth = depth + 1;
                }
            }
            CallKind::Exit | CallKind::TailExit => match self.stack.last() {
                None => {
                    self.stats.unmatched_exits += 1;
                }
                Some(top) if top.func == func => self.pop(time, sink),
                Some(_) => {
                    if self.policy != MismatchPolicy::Ignore {
                        if let Some(pos) = self.stack.iter().rposition(|f| f.func == func) {
                            while self.stack.len() > pos + 1 {
                                self.stats.deduced += 1;
                                self.pop(time, sink);
                            }
                            self.pop(time, sink);
                            return;
                        }
                    }
                    self.stats.unmatched_exits += 1;
                    if self.policy == MismatchPolicy::UnwindAll {
                        while !self.stack.is_empty() {
                            self.pop(time, sink);
                        }
                    }
                }
            },
        }
    }

    #[inline]
    fn pop(&mut self, time: u64, sink: &mut impl SpanSink) {
        let Some(span) = close_top(&mut self.stack, self.thread, time) else {
            return;
        };
        self.stats.spans += 1;
        sink.span(&span);
    }

    /// Ends the thread: open frames are counted as unfinished (not emitted, as llvm-xray does)
    /// and returned outermost first as `(func, start)`.
    pub fn finish(mut self) -> (BuilderStats, Vec<(FuncId, u64)>) {
        self.stats.unfinished += self.stack.len() as u64;
        let open = self.stack.iter().map(|f| (f.func, f.start)).collect();
        (self.stats, open)
    }

    /// Ends the thread closing every open frame at `end` (innermost first), e.g. to draw a
    /// timeline; they are still counted as unfinished.
    pub fn finish_closing(mut self, end: u64, sink: &mut impl SpanSink) -> BuilderStats {
        let n = self.stack.len() as u64;
        while !self.stack.is_empty() {
            self.pop(end, sink);
        }
        self.stats.unfinished += n;
        self.stats
    }

    /// Pushes a frame that was opened elsewhere (e.g. while a buffer was replayed on its own)
    /// without notifying a sink.
    pub fn push_frame(&mut self, frame: Frame) {
        self.stack.push(frame);
        let d = self.stack.len() as u32;
        if d > self.stats.max_depth {
            self.stats.max_depth = d;
        }
    }

    /// Adds `time` to the callee time of the top frame (calls that completed elsewhere on top
    /// of it); nothing when the stack is empty.
    pub fn add_child_time(&mut self, time: u64) {
        if let Some(top) = self.stack.last_mut() {
            top.child = top.child.saturating_add(time);
        }
    }

    /// The open frames, outermost first.
    pub fn frames(&self) -> &[Frame] {
        &self.stack
    }

    /// The thread index given to [`SpanBuilder::new`].
    pub fn thread(&self) -> u32 {
        self.thread
    }

    /// Notes that `extra` frames were stacked on top of the current stack at some point.
    pub fn note_depth(&mut self, extra: u32) {
        let d = (self.stack.len() as u32).saturating_add(extra);
        if d > self.stats.max_depth {
            self.stats.max_depth = d;
        }
    }

    /// Adds counters computed elsewhere (their `max_depth` and `unfinished` are ignored).
    pub fn add_counts(&mut self, spans: u64, deduced: u64, unmatched_exits: u64) {
        self.stats.spans += spans;
        self.stats.deduced += deduced;
        self.stats.unmatched_exits += unmatched_exits;
    }

    /// Notes that the thread had an event at `time` (fed elsewhere).
    pub fn note_time(&mut self, time: u64) {
        self.last_time = time;
    }

    /// Time of the last event fed.
    pub fn last_time(&self) -> u64 {
        self.last_time
    }
}
