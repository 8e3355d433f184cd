//! An input's event stream written for a viewer (profkit-export's writers): the one conversion
//! path `convert` (to a file) and `view` (to a temporary profile it serves) share.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};

use crate::instr_maps::instr_maps;
use profkit_export::{Dest, Format as Out, Options, Output};
use profkit_model::events::{CannotShow, EventSink, Threaded};
use profkit_model::feed::{FeedSummary, Filter, Selection};
use profkit_model::Source;

use crate::cli::ConvertArgs;
use crate::output;
use crate::progress::Progress;
use crate::source::Opened;
use profkit_model::detect::Format;

/// Why `target` cannot show anything of a `format` input (`None` = it can); docs/convert.md
/// has the whole table.
fn unsupported_pair(format: Format, target: Out) -> Option<&'static str> {
    match (format, target) {
        (Format::Jitdump, Out::Speedscope | Out::Folded | Out::Svg | Out::Pprof) => Some(
            "a jitdump records code loads, not calls or samples; convert it to perfetto, chrome, firefox, parquet or a perf map, or symbolize addresses with `profkit symbolize`",
        ),
        (Format::Perf, Out::PerfMap) => Some(
            "a perf map lists JIT code, which a perf.data recording does not hold; convert the runtime's jitdump (jit-<pid>.dump) to a perf map instead",
        ),
        (Format::XrayProfile, Out::Chrome | Out::Perfetto | Out::Parquet) => Some(
            "an XRay profiling-mode file holds call-path totals, no single calls or times, so it has no timeline; convert it to folded, svg, speedscope, pprof or firefox",
        ),
        _ => None,
    }
}

/// Any input with calls, samples or code → a viewer's format, through the event stream; what
/// the driver found (warnings and notes are printed here).
pub fn write(args: &ConvertArgs, o: &Opened, target: Out, output: &Output) -> Result<FeedSummary> {
    if let Some(why) = unsupported_pair(o.format, target) {
        bail!("{}: cannot convert to {target}: {why}", o.name());
    }
    let src = o.source(
        &args.instr_map,
        args.clock.tsc_hz,
        args.event.as_deref(),
        "convert",
    )?;
    if src.has_only_call_paths() && args.time.is_some() {
        bail!(
            "{}: --time selects a time window, and an XRay profiling-mode file has no times (only call-path totals)",
            o.name()
        );
    }
    if target == Out::PerfMap
        && matches!(src, Source::Xray { .. } | Source::XrayProfile { .. })
        && args.instr_map.is_empty()
    {
        bail!(
            "{}: a perf map of an XRay trace lists the instrumented functions: pass the binary with -m BIN",
            o.name()
        );
    }
    if output.dest() == &Dest::Stdout && target == Out::Parquet {
        bail!("Parquet output needs a file name (-o spans.parquet): it writes several tables");
    }
    let options = Options {
        counts: args.counts,
        inclusive: args.inclusive,
        title: args.title.clone(),
    };
    let out_name = args.output.display().to_string();
    let writer = profkit_export::open(target, output, &options)
        .with_context(|| format!("{out_name}: cannot write {target} output"))?;
    let selection = Selection {
        time: args.time,
        threads: args.thread.clone(),
        pids: args.pid.clone(),
    };
    let show = !args.quiet && std::io::stderr().is_terminal() && o.bytes().len() > (64 << 20);
    let progress = Progress::new(writer, show);
    // The filter costs a little per event: leave it out when it would keep everything.
    let sink: Box<dyn EventSink + Send> = if selection.is_all() {
        Box::new(progress)
    } else {
        Box::new(Filter::new(progress, selection))
    };
    // perf.data is named on one thread: the writer gets the other core.
    // With no thread to spare (an address-space or thread limit), it writes here.
    let mut sink: Box<dyn EventSink> = if o.format == Format::Perf {
        match Threaded::try_new(sink) {
            Ok(t) => Box::new(t),
            Err((Some(sink), _)) => sink,
            Err((None, e)) => bail!("{out_name}: cannot start the writer: {e}"),
        }
    } else {
        sink
    };
    let name = display_name(o.name());
    // An XRay trace's process is the instrumented program.
    let program = instr_maps(&args.instr_map)?
        .into_iter()
        .find(|(object, _)| *object == 0);
    let pname = match (&src, program) {
        (Source::Xray { .. } | Source::XrayProfile { .. }, Some((_, p))) => {
            display_name(&p.to_string_lossy())
        }
        _ => name.clone(),
    };
    let release = |s, e| o.release(s, e);
    // a recording of an XRay program: its traces join the samples on a timeline
    let xray = match (o.format, target) {
        (Format::Perf, Out::Perfetto | Out::Chrome | Out::Firefox) => {
            o.path().and_then(profkit_record::xray_logs)
        }
        _ => None,
    };
    let fed = match &xray {
        Some(logs) => crate::xray_join::feed(&src, logs, &pname, &release, &mut *sink),
        None => src.feed(&pname, None, Some(&release), &mut *sink),
    };
    let summary = fed.map_err(|e| match e.kind() {
        _ if CannotShow::of(&e).is_some() => anyhow!("{out_name}: {e}"),
        // What the input cannot give (perf.data: an --event it did not record; nothing to
        // draw), or what it holds that cannot be read.
        std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData => {
            anyhow!("{name}: {e}")
        }
        _ => anyhow!("{out_name}: cannot write: {e}"),
    })?;
    output::print_feed_problems(&name, &summary);
    // a recording directory (`profkit record`): say what named its samples
    if profkit_record::recording_file(&args.file) != args.file {
        if let Some(r) = &summary.perf {
            output::print_note(&format!("{name}: {}", r.naming_summary()));
        }
    }
    if src.has_only_call_paths() && src.clock().ticks_per_second == 0 && target != Out::PerfMap {
        output::print_ticks_note(&name);
    }
    if summary.calls.unmatched_exits > 0 || summary.calls.unfinished > 0 {
        output::print_note(&format!(
            "{name}: {} exit(s) without an enter were left out; {} call(s) still open at the end were closed at their thread's last event",
            summary.calls.unmatched_exits, summary.calls.unfinished
        ));
    }
    Ok(summary)
}

fn display_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}
