//! Buffer-parallel replay of calls: how every format whose calls come in buffers that decode
//! on their own (XRay FDR buffers, Mono buffers, chunks of an XRay basic log) is analysed on
//! every core, through one mechanism.
//!
//! A thread's calls form one sequence, but a format stores it in buffers that each restart
//! their delta state, so the buffers can be *decoded* in any order. Only the call stack
//! crosses buffer boundaries. The replay exploits this in three steps:
//!
//! 1. [`pipeline::run`] hands jobs (buffers) to worker threads and gives their results back
//!    to the calling thread **in job order**, with a bounded number in flight (memory does
//!    not grow with the input).
//! 2. On a worker, a [`PieceBuilder`] replays the buffer's calls against an **unknown
//!    inherited stack** ([`Mode::Local`]): calls entered and left inside the buffer complete
//!    at once into the analysis' [`Fold::Part`]; an exit that finds the buffer's own stack
//!    empty belongs to a frame the buffer inherited and ends a [`Phase`]; frames still open at
//!    the end are handed on. A call the piece cannot resolve (an exit matching none of its own
//!    frames while it has some) makes the rest of the piece *ordered*. With
//!    [`Mode::Ordered`] every call is simply kept in order (for analyses that need the real
//!    stack at each event: timelines, llvm-xray's `stack`).
//! 3. On the calling thread, a [`ThreadReplay`] per thread applies the pieces in order to the
//!    real stack (a [`SpanBuilder`](crate::span::SpanBuilder)): each phase's part is [resolved](Fold::resolve) on top of
//!    the frames open at that point, the phase's exit closes inherited frames, open frames are
//!    pushed, ordered calls are replayed.
//!
//! Analyses implement [`Fold`]: a [`SpanSink`] for the calls completed on the real stack plus
//! a `Part` (itself a [`SpanSink`]) that collects the calls a worker completes on its own, and
//! [`Fold::resolve`], which adds a part once the frames under it are known. Accounting, stack
//! trees and Mono's method statistics are folds; an [`EventSink`](crate::events::EventSink)
//! stream is a fold in [`Mode::Ordered`].

pub mod local;
pub mod pipeline;
pub mod stitch;

pub use local::{Call, Counts, Item, Mode, Phase, Piece, PieceBuilder};
pub use stitch::ThreadReplay;

use crate::span::SpanSink;

/// An analysis of calls that a worker can run on one buffer without knowing the frames the
/// buffer inherits, and that the stitcher completes once it knows them.
///
/// The fold itself sees the real stack: [`SpanSink::enter`] for every frame pushed on it (also
/// frames a piece left open), [`SpanSink::span`] for every call completed on it. Its parts see
/// the calls a piece completed on its own, with depths relative to the piece's first frame.
pub trait Fold: SpanSink {
    /// What a worker collects for one phase of one piece.
    type Part: SpanSink + Default + Send;

    /// Adds a part: its calls happened on top of the frames open now (the fold has seen them
    /// entered).
    fn resolve(&mut self, part: Self::Part);

    /// A frame a piece entered and left open is pushed on the real stack (its enter was
    /// already seen by the worker). By default, the same as an enter.
    fn push_open(&mut self, func: crate::func::FuncId, start: u64, depth: u32) {
        self.enter(func, start, depth);
    }

    /// Adds the totals of one call path, from a format that keeps no single calls (XRay
    /// profiling mode; raw time units, `path.thread` unused). Returns whether the fold can use
    /// them: by default it cannot (it needs single calls with times) and keeps nothing.
    fn call_path(&mut self, _path: &crate::events::CallPath<'_>) -> bool {
        false
    }
}

/// The fold that keeps nothing (the replay's counters are all it gives).
impl Fold for () {
    type Part = ();
    fn resolve(&mut self, _part: ()) {}
}
