//! The stitcher side: applying a thread's pieces, in order, to its real stack.

use super::local::{Call, Item, Piece};
use super::Fold;
use crate::span::{BuilderStats, Frame, MismatchPolicy, SpanBuilder};

/// One thread's real stack and its fold, fed piece after piece in the thread's order.
#[derive(Debug)]
pub struct ThreadReplay<F> {
    builder: SpanBuilder,
    fold: F,
    /// Last time fed, when times are clamped so that they never go backwards.
    clamp: Option<u64>,
}

impl<F: Fold> ThreadReplay<F> {
    /// A replay for thread index `thread`. With `monotonic`, call times that go backwards (XRay
    /// TSCs across CPUs) are raised to the previous time, as timelines need.
    pub fn new(thread: u32, policy: MismatchPolicy, fold: F, monotonic: bool) -> Self {
        ThreadReplay {
            builder: SpanBuilder::new(thread, policy),
            fold,
            clamp: monotonic.then_some(0),
        }
    }

    /// The fold.
    pub fn fold(&mut self) -> &mut F {
        &mut self.fold
    }

    /// The open frames of the real stack, outermost first.
    pub fn frames(&self) -> &[Frame] {
        self.builder.frames()
    }

    /// Counters so far.
    pub fn stats(&self) -> BuilderStats {
        self.builder.stats()
    }

    /// `time` as this thread's clock goes: raised to the previous time when times are clamped.
    #[inline]
    pub fn time(&mut self, time: u64) -> u64 {
        match &mut self.clamp {
            Some(last) => {
                *last = (*last).max(time);
                *last
            }
            None => time,
        }
    }

    /// Replays one call on the real stack.
    #[inline]
    pub fn call(&mut self, call: Call) {
        let time = self.time(call.time);
        self.builder
            .event(call.kind, call.func, time, &mut self.fold);
    }

    /// Applies the next piece of the thread: its phases, its open frames, then its ordered
    /// items (`other` receives the format's own items, with this replay to read the stack and
    /// the clamped time from).
    pub fn apply<I>(&mut self, piece: Piece<F::Part, I>, mut other: impl FnMut(&mut Self, I)) {
        for phase in piece.phases {
            self.builder.add_child_time(phase.child);
            self.builder.note_depth(phase.peak);
            self.fold.resolve(phase.part);
            if let Some(end) = phase.end {
                self.call(end);
            }
        }
        for f in piece.open {
            let depth = self.builder.depth() as u32;
            self.fold.push_open(f.func, f.start, depth);
            self.builder.push_frame(f);
        }
        let c = piece.counts;
        self.builder.add_counts(c.spans, c.deduced, c.unmatched);
        let mut others = piece.others.into_iter();
        for item in piece.ordered {
            match item {
                Item::Call(c) => self.call(c),
                Item::Other => {
                    if let Some(i) = others.next() {
                        other(self, i);
                    }
                }
            }
        }
        if let Some(t) = piece.last_time {
            let t = self.time(t);
            self.builder.note_time(t);
        }
    }

    /// Ends the thread. With `close`, frames still open are closed at the thread's last time
    /// (timelines, Mono's report); otherwise they are only counted (llvm-xray's accounting).
    /// Both count them as unfinished.
    pub fn finish(mut self, close: bool) -> (F, BuilderStats) {
        let stats = if close {
            let end = self.builder.last_time();
            self.builder.finish_closing(end, &mut self.fold)
        } else {
            self.builder.finish().0
        };
        (self.fold, stats)
    }
}
