//! profkit's shared model: one vocabulary for every trace format, so each analysis is written once.
//!
//! # Layout
//! * [`clock`]: [`Clock`], the conversion from a format's raw time unit (XRay TSC ticks) to
//!   nanoseconds. Analyses keep raw ticks; outputs convert (and llvm-compatible outputs use ticks).
//! * [`codemap`]: [`codemap::CodeMap`], the timeline of JIT code regions (loads, moves, address
//!   reuse) answering address@time → function, inline frames and file:line.
//! * [`func`]: [`FuncId`] and the [`FunctionTable`] (name, file/line/column, module).
//! * [`span`]: call events ([`CallKind`] Enter / Exit / TailExit) and the streaming per-thread
//!   [`SpanBuilder`] that turns them into [`Span`]s with self time, coping with exits that have no
//!   enter (threshold elision, a trace started mid-call), enters that never exit (trace ended),
//!   tail exits, recursion and missing exits ([`MismatchPolicy`], llvm-xray's `-d` rule).
//! * [`account`]: exact per-function accounting (count, min, median, p90, p99, max, sum) with
//!   llvm-xray's percentile definitions, and its text / CSV / JSON writers.
//! * [`stack`]: aggregated call stacks (inclusive and exclusive time, counts, per thread) and
//!   folded output; [`stack::LlvmStackTrie`] reproduces `llvm-xray stack`.
//! * [`llvm`]: helpers that reproduce llvm-xray's formatting and hash-map iteration order.
//! * [`ingest`]: one module per format feeding the model (`ingest::xray`).
//! * [`events`]: the event vocabulary exporters consume ([`events::EventSink`]: calls, instants,
//!   counters, samples, code regions, in ns since the trace's origin) and [`feed`], the drivers
//!   that read each input format into it.
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
pub mod events;
pub mod feed;
pub mod func;
pub mod ingest;
pub mod llvm;
pub mod replay;
pub mod span;
pub mod stack;

pub use clock::Clock;
pub use func::{FuncId, FuncInfo, FunctionTable};
pub use span::{BuilderStats, CallKind, MismatchPolicy, Span, SpanBuilder, SpanSink};
