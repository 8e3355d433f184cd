//! profkit's shared model: one vocabulary for every trace format, so each analysis is written once.
//!
//! # Layout
//! * [`clock`]: [`Clock`], the conversion from a format's raw time unit (XRay TSC ticks) to
//!   nanoseconds. Analyses keep raw ticks; outputs convert (and llvm-compatible outputs use ticks).
//! * [`codemap`] (profkit-jit's, re-exported): [`codemap::CodeMap`], the timeline of JIT code regions (loads, moves, address
//!   reuse) answering address@time → function, inline frames and file:line.
//! * [`func`]: [`FuncId`] and the [`FunctionTable`] (name, file/line/column, module, kind, JIT
//!   tier).
//! * [`span`]: call events ([`CallKind`] Enter / Exit / TailExit) and the streaming per-thread
//!   [`SpanBuilder`] that turns them into [`Span`]s with self time, coping with exits that have no
//!   enter (threshold elision, a trace started mid-call), enters that never exit (trace ended),
//!   tail exits, recursion and missing exits ([`MismatchPolicy`], llvm-xray's `-d` rule).
//! * [`stack`]: aggregated call stacks (inclusive and exclusive time, counts, per thread) and
//!   the one folded-stacks writer (the folded, SVG and diff outputs are built on it).
//! * [`events`]: the event vocabulary exporters consume ([`events::EventSink`]: calls, instants,
//!   counters, samples, code regions, in ns since the trace's origin).
//! * [`replay`]: the buffer-parallel replay of calls every format with buffers goes through.
//! * [`feed`]: the drivers, one per input format: a file → a stream for an
//!   [`events::EventSink`], or a [`replay::Fold`] run on every core.
//! * [`source`]: [`source::Source`], an opened input of any format, the one dispatch to the
//!   drivers.
//!
//! The analyses over this pipeline (accounting, llvm-xray's stack, call graphs, diffs, Mono's
//! report) are profkit-analysis; the writers (profkit-export) need only this crate.
//!
//! ```
//! use profkit_model::{CallKind, FuncId, SpanBuilder, MismatchPolicy, Span};
//! let mut spans = Vec::new();
//! let mut b = SpanBuilder::new(0, MismatchPolicy::Unwind);
//! let mut sink = |s: &Span| spans.push(*s);
//! b.event(CallKind::Enter, FuncId(1), 10, &mut sink);
//! b.event(CallKind::Enter, FuncId(2), 12, &mut sink);
//! b.event(CallKind::Exit, FuncId(2), 15, &mut sink);
//! b.event(CallKind::Exit, FuncId(1), 20, &mut sink);
//! assert_eq!((spans[1].func, spans[1].duration(), spans[1].self_time), (FuncId(1), 10, 7));
//! ```

pub mod clock;
/// The JIT code map, profkit-jit's (one code map for the model, inject and a recorder).
pub use profkit_jit::codemap;
pub mod detect;
pub mod events;
pub mod feed;
pub mod func;
pub mod replay;
pub mod source;
pub mod span;
pub mod stack;
mod trie;

pub use clock::Clock;
pub use events::ThreadId;
pub use func::{FuncId, FuncInfo, FuncKind, FuncTier, FunctionTable};
pub use source::Source;
pub use span::{BuilderStats, CallKind, MismatchPolicy, Span, SpanBuilder, SpanSink};
