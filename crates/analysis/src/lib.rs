//! profkit's analyses: what the commands `account`, `stack --llvm`, `graph`, `diff` and
//! `report` compute over the model's replay. Each is a [`Fold`](profkit_model::replay::Fold)
//! (run on every core by a driver's `fold`) or a reader of the model's stack trees; none is
//! needed by a writer, so profkit-export depends on profkit-model alone.
//!
//! # Layout
//! * [`account`]: exact per-function accounting (count, min, median, p90, p99, max, sum) with
//!   llvm-xray's percentile definitions, and its text / CSV / JSON writers.
//! * [`graph`]: call graphs (per caller → callee edge and per function, the durations of the
//!   calls) and their DOT output, llvm-xray graph's and graph-diff's.
//! * [`diff`]: per-function differences of two profiles' stacks (self, total, calls).
//! * [`llvm_stack`]: `llvm-xray stack` reproduced.
//! * [`llvm`]: helpers that reproduce llvm-xray's formatting and hash-map iteration order.
//! * [`mono_report`]: mprof-report's sections of a Mono log profiler file.
//!
//! ```
//! use profkit_analysis::account::Accounting;
//! use profkit_model::{CallKind, FuncId, MismatchPolicy, SpanBuilder};
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
pub mod diff;
pub mod graph;
pub mod llvm;
pub mod llvm_stack;
pub mod mono_report;

#[cfg(test)]
mod replay_properties;
