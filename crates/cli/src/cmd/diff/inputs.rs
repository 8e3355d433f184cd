//! `diff`'s inputs: each one's stacks (calls, call paths or samples, with the unit of their
//! values), or for a profiling-mode file's table only its per-function totals.

use profkit_analysis::diff::{self, DiffUnit};
use profkit_common::Truncation;
use profkit_model::events::EventSink;
use profkit_model::func::FunctionTable;
use profkit_model::stack::StackSink;

use crate::output;
use crate::source::Opened;
use anyhow::Result;

/// What an input's stacks are made of; two inputs are compared only if it is the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Single calls (XRay traces, Mono `calls` files).
    Calls,
    /// Per call path, the number of calls and their total time (XRay profiling mode).
    CallPaths,
    /// Sampled stacks (perf.data, Mono sample hits).
    Samples,
}

impl Kind {
    pub(super) fn describe(self) -> &'static str {
        match self {
            Kind::Calls => "function calls",
            Kind::CallPaths => "call-path totals (an XRay profiling-mode file)",
            Kind::Samples => "samples",
        }
    }
}

/// One input's stacks (every thread), what they are made of, the unit of their values, and
/// where the input is cut if it is.
pub(super) struct Stacks {
    pub sink: StackSink,
    pub kind: Kind,
    pub unit: DiffUnit,
    pub truncation: Option<Truncation>,
}

/// What feeding an input to a sink told about it: whether it holds call paths only (an XRay
/// profiling-mode file), whether its clock is unknown (times in ticks), and where it is cut.
struct Fed {
    only_call_paths: bool,
    ticks: bool,
    truncation: Option<Truncation>,
}

fn feed_into(
    opened: &Opened,
    instr_maps: &[String],
    tsc_hz: Option<u64>,
    sink: &mut dyn EventSink,
) -> Result<Fed> {
    let src = opened.source(instr_maps, tsc_hz, None, "diff")?;
    let release = |s, e| opened.release(s, e);
    let summary = src.feed(opened.name(), None, Some(&release), sink)?;
    output::print_feed_problems(opened.name(), &summary);
    Ok(Fed {
        only_call_paths: src.has_only_call_paths(),
        ticks: src.clock().ticks_per_second == 0,
        truncation: summary.truncation,
    })
}

fn nothing_to_compare(opened: &Opened) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: no function calls and no sampled stacks to compare",
        opened.name()
    )
}

/// The unit of an input's values: sample weights, else ns (ticks when the clock is unknown).
fn unit_of(kind: Kind, fed: &Fed) -> DiffUnit {
    match kind {
        Kind::Samples => DiffUnit::Weight,
        _ if fed.ticks => DiffUnit::Ticks,
        _ => DiffUnit::Nanoseconds,
    }
}

/// The stacks of `opened`: calls or call paths with their times (in ns, or in ticks when the
/// clock is unknown: a profiling-mode file without `tsc_hz`), else samples with their weights.
pub(super) fn stacks(
    opened: &Opened,
    instr_maps: &[String],
    tsc_hz: Option<u64>,
) -> Result<Stacks> {
    let mut sink = StackSink::new();
    let fed = feed_into(opened, instr_maps, tsc_hz, &mut sink)?;
    if sink.tree().is_empty() {
        return Err(nothing_to_compare(opened));
    }
    let kind = if fed.only_call_paths {
        Kind::CallPaths
    } else if sink.calls {
        Kind::Calls
    } else {
        Kind::Samples
    };
    Ok(Stacks {
        sink,
        kind,
        unit: unit_of(kind, &fed),
        truncation: fed.truncation,
    })
}

/// The per-function totals of a profiling-mode file (see [`diff::TotalsSink`]), with an
/// empty [`Stacks`] that says what it is made of.
pub(super) fn profile_totals(
    opened: &Opened,
    instr_maps: &[String],
    tsc_hz: Option<u64>,
) -> Result<(Stacks, FunctionTable, diff::RawTotals)> {
    let mut sink = diff::TotalsSink::new();
    let fed = feed_into(opened, instr_maps, tsc_hz, &mut sink)?;
    let (functions, raw) = sink.into_totals();
    if !raw.has_calls() {
        return Err(nothing_to_compare(opened));
    }
    // A profiling-mode file holds call paths only (the caller asks for this by its format).
    let kind = if fed.only_call_paths {
        Kind::CallPaths
    } else {
        Kind::Calls
    };
    let stacks = Stacks {
        sink: StackSink::new(),
        kind,
        unit: unit_of(kind, &fed),
        truncation: fed.truncation,
    };
    Ok((stacks, functions, raw))
}
