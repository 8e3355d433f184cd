//! `profkit convert` to the viewers' formats: reads any input through its
//! [`profkit_model::feed`] driver into a [`profkit_export`] writer.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant as Clock};

use anyhow::{anyhow, bail, Context, Result};
use profkit_export::{Dest, Format as Out, Options, Output};
use profkit_model::events::{
    CodeRegion, Counter, EventSink, Instant, ProcessInfo, Sample, ThreadInfo, TraceInfo,
};
use profkit_model::feed::{FeedSummary, Filter, Selection};
use profkit_model::{FuncId, Source, Span};

use crate::cli::ConvertArgs;
use crate::detect::Format;
use crate::input::Input;
use crate::output;
use crate::source::Opened;

/// Parses `--time FROM-TO` (seconds, fractions allowed; either side may be empty) into ns.
pub fn parse_window(s: &str) -> Result<(u64, u64)> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| anyhow!("--time {s:?}: expected FROM-TO in seconds, e.g. 0.5-2"))?;
    let secs = |x: &str, dflt: u64| -> Result<u64> {
        let x = x.trim();
        if x.is_empty() {
            return Ok(dflt);
        }
        let v: f64 = x
            .parse()
            .map_err(|_| anyhow!("--time {s:?}: {x:?} is not a number of seconds"))?;
        if !(v >= 0.0 && v.is_finite()) {
            bail!("--time {s:?}: times must be non-negative");
        }
        Ok((v * 1e9).round() as u64)
    };
    let (from, to) = (secs(a, 0)?, secs(b, u64::MAX)?);
    if from > to {
        bail!("--time {s:?}: FROM is after TO");
    }
    Ok((from, to))
}

/// Why `target` cannot show anything of a `format` input (`None` = it can); docs/convert.md
/// has the whole table.
fn unsupported_pair(format: Format, target: Out) -> Option<&'static str> {
    match (format, target) {
        (Format::Jitdump, Out::Speedscope | Out::Folded | Out::Svg | Out::Pprof) => Some(
            "a jitdump records code loads, not calls or samples; convert it to perfetto, chrome, firefox, parquet or a perf map, or symbolize addresses with `profkit symbolize`",
        ),
        _ => None,
    }
}

/// Converts `input` (of `format`) to `target`, writing `args.output`.
pub fn run(args: &ConvertArgs, input: Input, format: Format, target: Out) -> Result<()> {
    if let Some(why) = unsupported_pair(format, target) {
        bail!("{}: cannot convert to {target}: {why}", input.name);
    }
    if target == Out::PerfMap
        && matches!(format, Format::Xray | Format::XrayYaml)
        && args.instr_map.is_none()
    {
        bail!(
            "{}: a perf map of an XRay trace lists the instrumented functions: pass the binary with -m BIN",
            input.name
        );
    }
    let output = Output::parse(&args.output.to_string_lossy());
    if output.dest() == &Dest::Stdout && target == Out::Parquet {
        bail!("Parquet output needs a file name (-o spans.parquet): it writes several tables");
    }
    let options = Options {
        counts: args.counts,
        inclusive: args.inclusive,
        title: args.title.clone(),
    };
    let out_name = args.output.display().to_string();
    let writer = profkit_export::open(target, &output, &options)
        .with_context(|| format!("{out_name}: cannot write {target} output"))?;
    let selection = Selection {
        time: args.time.as_deref().map(parse_window).transpose()?,
        threads: args.thread.clone(),
    };
    let show = !args.quiet && std::io::stderr().is_terminal() && input.data.len() > (64 << 20);
    let progress = Progress::new(writer, show);
    // The filter costs a little per event: leave it out when it would keep everything.
    let mut sink: Box<dyn EventSink> = if selection.is_all() {
        Box::new(progress)
    } else {
        Box::new(Filter::new(progress, selection))
    };
    let name = display_name(&input.name);
    let opened = match format {
        Format::Xray | Format::XrayYaml | Format::Mlpd | Format::Jitdump => {
            Opened::from_input(input, format, "convert")?
        }
        other => {
            bail!(
                "{}: {} cannot be converted to {target} (inputs: XRay traces, Mono .mlpd files, jitdump); see docs/convert.md",
                input.name,
                other.description()
            )
        }
    };
    let src = opened.source(args.instr_map.as_deref())?;
    // An XRay trace's process is the instrumented program.
    let pname = match (&src, args.instr_map.as_deref()) {
        (Source::Xray { .. }, Some(p)) => display_name(&p.to_string_lossy()),
        _ => name.clone(),
    };
    let release = |s, e| opened.release(s, e);
    let summary = src.feed(&pname, None, Some(&release), &mut *sink);
    let summary = summary.map_err(|e| {
        if e.kind() == std::io::ErrorKind::Unsupported {
            anyhow!("{out_name}: {e}")
        } else {
            anyhow!("{out_name}: cannot write: {e}")
        }
    })?;
    drop(sink);
    output
        .commit()
        .with_context(|| format!("{out_name}: cannot write"))?;
    report(&name, &summary);
    Ok(())
}

fn display_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

fn report(name: &str, s: &FeedSummary) {
    if let Some(t) = &s.truncation {
        output::print_warning(&format!("{name}: truncated: {t}"));
    }
    if let Some(first) = s.problems.first() {
        output::print_warning(&format!(
            "{name}: skipped {} undecodable part(s); first: {first}",
            s.problems.len()
        ));
    }
    if s.calls.unmatched_exits > 0 || s.calls.unfinished > 0 {
        output::print_note(&format!(
            "{name}: {} exit(s) without an enter were left out; {} call(s) still open at the end were closed at their thread's last event",
            s.calls.unmatched_exits, s.calls.unfinished
        ));
    }
}

/// Counts events and shows a spinner with the rate on a terminal.
struct Progress<S> {
    inner: S,
    bar: Option<indicatif::ProgressBar>,
    events: u64,
    started: Clock,
}

impl<S: EventSink> Progress<S> {
    fn new(inner: S, show: bool) -> Self {
        let bar = show.then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} {elapsed} {human_pos} events ({per_sec}) {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Progress {
            inner,
            bar,
            events: 0,
            started: Clock::now(),
        }
    }

    #[inline]
    fn tick(&mut self) {
        self.events += 1;
        if self.events & 0xffff == 0 {
            if let Some(b) = &self.bar {
                b.set_position(self.events);
            }
        }
    }
}

impl<S: EventSink> EventSink for Progress<S> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> std::io::Result<()> {
        self.started = Clock::now();
        self.inner.begin(trace)
    }
    fn process(&mut self, p: &ProcessInfo<'_>) -> std::io::Result<()> {
        self.inner.process(p)
    }
    fn thread(&mut self, t: &ThreadInfo<'_>) -> std::io::Result<()> {
        if let Some(b) = &self.bar {
            b.set_message(t.name.to_string());
        }
        self.inner.thread(t)
    }
    fn enter(&mut self, thread: u32, func: FuncId, time: u64, depth: u32) -> std::io::Result<()> {
        self.tick();
        self.inner.enter(thread, func, time, depth)
    }
    fn exit(&mut self, span: &Span) -> std::io::Result<()> {
        self.tick();
        self.inner.exit(span)
    }
    fn instant(&mut self, i: &Instant<'_>) -> std::io::Result<()> {
        self.tick();
        self.inner.instant(i)
    }
    fn counter(&mut self, c: &Counter<'_>) -> std::io::Result<()> {
        self.tick();
        self.inner.counter(c)
    }
    fn sample(&mut self, s: &Sample<'_>) -> std::io::Result<()> {
        self.tick();
        self.inner.sample(s)
    }
    fn code(&mut self, c: &CodeRegion<'_>) -> std::io::Result<()> {
        self.tick();
        self.inner.code(c)
    }
    fn finish(&mut self) -> std::io::Result<()> {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
            output::print_note(&format!(
                "{} events in {:.1} s",
                self.events,
                self.started.elapsed().as_secs_f64()
            ));
        }
        self.inner.finish()
    }
}
