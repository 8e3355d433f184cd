//! profkit's shared model: one vocabulary for every trace format, so each analysis is written once.
//!
//! # Layout
//! * [`clock`]: [`Clock`], the conversion from a format's raw time unit (XRay TSC ticks) to
//!   nanoseconds. Analyses keep raw ticks; outputs convert (and llvm-compatible outputs use ticks).
//! * [`codemap`]: [`codemap::CodeMap`], the timeline of JIT code regions (loads, moves, address
//!   reuse) answering address@time → function, inline frames and file:line.
//! * [`func`]: [`FuncId`] and the [`FunctionTable`] (name, file/line/column, module, kind, JIT
//!   tier).
//! * [`span`]: call events ([`CallKind`] Enter / Exit / TailExit) and the streaming per-thread
//!   [`SpanBuilder`] that turns them into [`Span`]s with self time, coping with exits that have no
//!   enter (threshold elision, a trace started mid-call), enters that never exit (trace ended),
//!   tail exits, recursion and missing exits ([`MismatchPolicy`], llvm-xray's `-d` rule).
//! * [`account`]: exact per-function accounting (count, min, median, p90, p99, max, sum) with
//!   llvm-xray's percentile definitions, and its text / CSV / JSON writers.
//! * [`graph`]: call graphs (per caller → callee edge and per function, the durations of the
//!   calls) and their DOT output, llvm-xray graph's and graph-diff's.
//! * [`diff`]: per-function differences of two profiles' stacks (self, total, calls).
//! * [`stack`]: aggregated call stacks (inclusive and exclusive time, counts, per thread) and
//!   the one folded-stacks writer.
//! * [`llvm`]: helpers that reproduce llvm-xray's formatting and hash-map iteration order.
//! * [`events`]: the event vocabulary exporters consume ([`events::EventSink`]: calls, instants,
//!   counters, samples, code regions, in ns since the trace's origin).
//! * [`replay`]: the buffer-parallel replay of calls every format with buffers goes through.
//! * [`feed`]: the drivers, one per input format: a file → a stream for an
//!   [`events::EventSink`], or a [`replay::Fold`] run on every core.
//! * [`source`]: [`source::Source`], an opened input of any format, the one dispatch to the
//!   drivers.
//! * [`llvm_stack`]: `llvm-xray stack` reproduced.
//! * [`mono_report`]: mprof-report's sections of a Mono log profiler file.
//!
//! ```
//! use profkit_model::{CallKind, FuncId, SpanBuilder, MismatchPolicy, account::Accounting};
//! let mut acc = Accounting::default();
//! let mut b = SpanBuilder::new(0, MismatchPolicy::Unwind);
//! b.event(CallKind::Enter, FuncId(1), 10, &mut acc);
//! b.event(CallKind::Enter, FuncId(2), 12, &mut acc);
//! b.event(CallKind::Exit, FuncId(2), 15, &mut acc);
//! b.event(CallKind::Exit, FuncId(1), 20, &mut acc);
//! let rows = acc.rows();
//! assert_eq!(rows[1].func, FuncId(1)); // rows come in order of first completion
//! assert_eq!(rows[1].sum, 10);
//! ```

pub mod account;
pub mod clock;
pub mod codemap;
pub mod detect;
pub mod diff;
pub mod events;
pub mod feed;
pub mod func;
pub mod graph;
pub mod llvm;
pub mod llvm_stack;
pub mod mono_report;
pub mod replay;
pub mod source;
pub mod span;
pub mod stack;

pub use clock::Clock;
pub use func::{FuncId, FuncInfo, FuncKind, FuncTier, FunctionTable};
pub use source::{Source, ThreadId};
pub use span::{BuilderStats, CallKind, MismatchPolicy, Span, SpanBuilder, SpanSink};
