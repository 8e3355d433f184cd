//! A recording of an XRay-instrumented program on one timeline: `convert DIR -o x.pftrace`
//! (or Chrome JSON, or a Firefox profile) writes the samples of DIR's perf.data and the calls of the FDR traces the
//! program wrote into DIR (`profkit record` sets `XRAY_OPTIONS` for them), through
//! [`profkit_model::feed::joined::Joined`].
//!
//! The traces' times are put on the samples' clock (CLOCK_MONOTONIC) by the readings the
//! recorder took when it started (the manifest's `clock_reference`: TSC, CLOCK_MONOTONIC and
//! CLOCK_REALTIME at one instant) and the trace's own TSC frequency, or by the wall clock for
//! a runtime that timed calls by CLOCK_REALTIME (it cannot tell the TSC's frequency on many
//! VMs); their function ids are named from the recorded program's
//! instrumentation map. A trace that cannot be read is left out with a warning; the samples
//! are written whatever happens to the traces.

use std::io;

use profkit_model::events::EventSink;
use profkit_model::feed::joined::Joined;
use profkit_model::feed::FeedSummary;
use profkit_model::{FunctionTable, Source};
use profkit_record::XrayLogs;

use crate::cli::{InputOpts, PerfDataOpts};
use crate::instr_maps::names;
use crate::output;
use crate::source::Opened;
use profkit_model::detect::Format;

/// A day in nanoseconds.
const DAY_NS: i128 = 86_400 * 1_000_000_000;

/// Feeds `samples` (the recording's perf.data source, named `name`) and then each of `logs`'
/// traces to `sink` as one trace; what the samples' driver found.
pub fn feed(
    samples: &Source<'_>,
    logs: &XrayLogs,
    name: &str,
    release: &(dyn Fn(u64, u64) + Sync),
    sink: &mut dyn EventSink,
) -> io::Result<FeedSummary> {
    let mut joined = Joined::new(sink);
    let summary = samples.feed(name, None, Some(release), &mut joined)?;
    let Some(clock) = logs.clock else {
        output::print_note(&format!(
            "{name}: the XRay traces of this recording are left out: it holds no TSC reading to put them on the samples' clock (recorded off x86-64, or by an older profkit)"
        ));
        joined.finish()?;
        return Ok(summary);
    };
    let functions = match &logs.program {
        Some(p) => names(&[p.to_string_lossy().into_owned()]).unwrap_or_else(|e| {
            output::print_warning(&format!(
                "{name}: the XRay function ids are not named: {e:#}"
            ));
            FunctionTable::new()
        }),
        None => FunctionTable::new(),
    };
    let program = logs
        .program
        .as_ref()
        .and_then(|p| p.file_name())
        .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned());
    let opts = InputOpts {
        input_format: Some(Format::Xray),
        jit: PerfDataOpts::default(),
    };
    for log in &logs.logs {
        let opened = match Opened::open(log, &opts) {
            Ok(o) => o,
            Err(e) => {
                output::print_warning(&format!("{e:#}: left out of the timeline"));
                continue;
            }
        };
        let trace = match opened.trace() {
            Ok(t) => t,
            Err(e) => {
                output::print_warning(&format!("{e:#}: left out of the timeline"));
                continue;
            }
        };
        let source = Source::xray(trace, functions.clone());
        let tsc_ns = i128::from(source.clock().to_ns(clock.tsc));
        let (mono, real) = (
            i128::from(clock.monotonic_ns),
            i128::from(clock.realtime_ns),
        );
        // An XRay runtime that cannot tell the TSC's frequency times calls by CLOCK_REALTIME
        // (and says 1 GHz): a log whose origin is within a day of the wall clock at the start
        // is on that clock, any other on the TSC.
        let wall = source.clock().ticks_per_second == 1_000_000_000;
        joined.next_part(move |origin| {
            if wall && (i128::from(origin) - real).abs() < DAY_NS {
                mono - real
            } else {
                mono - tsc_ns
            }
        });
        let release = |s, e| opened.release(s, e);
        let found = source.feed(&program, None, Some(&release), &mut joined)?;
        output::print_feed_problems(opened.name(), &found);
        output::print_note(&format!(
            "{}: XRay calls joined to the samples' timeline",
            opened.name()
        ));
    }
    joined.finish()?;
    Ok(summary)
}
