//! Folded stacks (`main;parse;lex 1234` lines, the input of flamegraph.pl and inferno) and,
//! with cargo feature `svg`, SVG flame graphs drawn by inferno (CDDL-1.0).
//!
//! Stacks are aggregated in memory in a call tree shared by every thread (memory grows with
//! the number of distinct stacks, not with the trace): each thread's open calls are a path in
//! the tree; an [`EventSink::exit`] adds to the node of the call that returned (its self time
//! is its duration less its callees' durations, computed here from the calls seen), a
//! [`EventSink::sample`] adds its weight to the node of its leaf frame. The value of a line is:
//!
//! * by default, the **exclusive** (self) time in nanoseconds of the calls with that stack —
//!   so a frame's width in a flame graph, the sum of its line and of every line below it, is
//!   its inclusive time;
//! * with [`Options::counts`], the number of calls with that stack;
//! * with [`Options::inclusive`], the inclusive time (llvm-xray's flame output: not a correct
//!   flame graph input, since parents would count their children twice);
//! * for samples, their weight, whatever the options.
//!
//! Call-path totals (XRay profiling mode) add their calls, inclusive and exclusive time to the
//! node of their stack, so the options mean the same for them as for traced calls.
//!
//! Stacks are aggregated by the model's [`StackSink`] and written by the one folded writer,
//! [`StackTree::folded_lines`](profkit_model::stack::StackTree::folded_lines): lines sorted,
//! stacks whose value is 0 left out, frame names with `;` replaced by `:` and line breaks by
//! spaces, so every name stays one frame.

use std::io::{self, Write};

use profkit_model::events::{
    CallPath, CodeRegion, Counter, Enter, EventSink, Instant, Sample, ThreadInfo, TraceInfo,
};
use profkit_model::func::{FuncId, FuncInfo};
use profkit_model::span::Span;
use profkit_model::stack::{StackSink, Value};

use crate::chrome::shared::OutStream;
use crate::{Options, Output};

/// A writer into `output`: folded text, or an SVG flame graph when `svg`.
pub fn sink(
    output: &Output,
    options: &Options,
    svg: bool,
) -> io::Result<Box<dyn EventSink + Send>> {
    if svg && !cfg!(feature = "svg") {
        return Err(crate::unsupported(
            "this profkit was built without the `svg` feature (inferno)",
        ));
    }
    let out = OutStream::open(output, !svg)?;
    let mut w = FoldedWriter::new(out, options);
    w.svg = svg;
    Ok(Box::new(w))
}

/// Frames (distinct call paths) an SVG flame graph may have: inferno holds every frame of the
/// graph in memory (~120 bytes each, after the ~40 bytes each of the call tree), so an input
/// with millions of distinct call paths (an XRay profiling-mode file of 50 MB can hold one path
/// 12.5M functions deep) would need GBs for a drawing no viewer shows (issue #23, B5). Folded
/// output has no such limit.
pub const MAX_SVG_FRAMES: usize = 4_000_000;

/// What a line's value measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Self time in ns (the default).
    Exclusive,
    /// Inclusive time in ns.
    Inclusive,
    /// Number of calls.
    Counts,
}

impl Weight {
    /// The weight the options ask for (`counts` wins over `inclusive`).
    pub fn from_options(options: &Options) -> Weight {
        if options.counts {
            Weight::Counts
        } else if options.inclusive {
            Weight::Inclusive
        } else {
            Weight::Exclusive
        }
    }
}

/// Aggregates stacks and writes them, folded or as an SVG, at [`EventSink::finish`]. See the
/// [module docs](self).
pub struct FoldedWriter<W: Write> {
    out: W,
    weight: Weight,
    svg: bool,
    title: Option<String>,
    stacks: StackSink,
    /// Whether the trace's clock converts to nanoseconds (else times are raw ticks).
    clock_known: bool,
    finished: bool,
}

impl<W: Write> FoldedWriter<W> {
    /// A writer of folded text into `out`, weighing stacks as `options` asks.
    pub fn new(out: W, options: &Options) -> Self {
        FoldedWriter {
            out,
            weight: Weight::from_options(options),
            svg: false,
            title: options.title.clone(),
            stacks: StackSink::new(),
            clock_known: true,
            finished: false,
        }
    }

    /// A writer of an SVG flame graph into `out` (feature `svg`).
    #[cfg(feature = "svg")]
    pub fn new_svg(out: W, options: &Options) -> Self {
        let mut w = Self::new(out, options);
        w.svg = true;
        w
    }

    /// The output.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The output, giving up the writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn value(&self) -> Value {
        match self.weight {
            Weight::Exclusive => Value::Exclusive,
            Weight::Inclusive => Value::Inclusive,
            Weight::Counts => Value::Count,
        }
    }

    /// The folded lines, sorted.
    pub fn lines(&self) -> Vec<String> {
        self.stacks
            .tree()
            .folded_lines(&self.stacks.functions, self.value(), None, &|v| v)
    }

    #[cfg(feature = "svg")]
    fn write_svg(&mut self, lines: &[String]) -> io::Result<()> {
        let mut opts = inferno::flamegraph::Options::default();
        opts.title = self
            .title
            .clone()
            .unwrap_or_else(|| "Flame Graph".to_string());
        opts.count_name = match self.weight {
            Weight::Counts if self.stacks.samples == 0 => "calls",
            _ if self.stacks.samples > 0 && !self.stacks.calls => "samples",
            _ if !self.clock_known => "ticks",
            _ => "ns",
        }
        .to_string();
        opts.deterministic = true;
        inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut self.out)
    }

    #[cfg(not(feature = "svg"))]
    fn write_svg(&mut self, _lines: &[String]) -> io::Result<()> {
        Err(crate::unsupported(
            "this profkit was built without the `svg` feature (inferno)",
        ))
    }
}

impl<W: Write + Send> EventSink for FoldedWriter<W> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        if self.title.is_none() && !trace.name.is_empty() {
            self.title = Some(trace.name.to_string());
        }
        self.clock_known = trace.clock.ticks_per_second != 0;
        self.stacks.begin(trace)
    }
    fn thread(&mut self, t: &ThreadInfo<'_>) -> io::Result<()> {
        self.stacks.thread(t)
    }
    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.stacks.function(id, info)
    }
    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        self.stacks.enter(call)
    }
    fn exit(&mut self, span: &Span) -> io::Result<()> {
        self.stacks.exit(span)
    }
    fn instant(&mut self, i: &Instant<'_>) -> io::Result<()> {
        self.stacks.instant(i)
    }
    fn counter(&mut self, c: &Counter<'_>) -> io::Result<()> {
        self.stacks.counter(c)
    }
    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        self.stacks.sample(s)
    }
    fn code(&mut self, c: &CodeRegion<'_>) -> io::Result<()> {
        self.stacks.code(c)
    }
    fn call_path(&mut self, p: &CallPath<'_>) -> io::Result<()> {
        self.stacks.call_path(p)
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if self.svg {
            let frames = self.stacks.tree().len();
            check_svg_frames(frames)?;
            let lines = self.lines();
            // The tree is in the lines now: let it go before inferno lays them out.
            let mut rest = StackSink::new();
            rest.samples = self.stacks.samples;
            rest.calls = self.stacks.calls;
            drop(std::mem::replace(&mut self.stacks, rest));
            if lines.is_empty() {
                // The input's fault, not the output's: `InvalidInput` names the input.
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "no calls or sampled stacks to draw (Mono: profile with --profile=log:calls or sample)",
                ));
            }
            self.write_svg(&lines)?;
        } else {
            let value = self.value();
            self.stacks.tree().write_folded(
                &mut self.out,
                &self.stacks.functions,
                value,
                None,
                &|v| v,
            )?;
        }
        self.out.flush()
    }
}

/// Differential folded lines (`stack A B`, sorted by stack) from the folded lines of two
/// profiles (`stack value`): the input of a differential flame graph (inferno and
/// flamegraph.pl's `difffolded` layout). With `normalize`, A's values are scaled so that both
/// totals are equal (compare shapes rather than amounts). Lines without a value are skipped.
pub fn differential(a: &[String], b: &[String], normalize: bool) -> Vec<String> {
    use std::collections::BTreeMap;
    let mut stacks: BTreeMap<&str, [u64; 2]> = BTreeMap::new();
    let mut totals = [0u128; 2];
    for (side, lines) in [a, b].iter().enumerate() {
        for line in lines.iter() {
            let Some((stack, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(v) = value.parse::<u64>() else {
                continue;
            };
            if let Some(slot) = stacks.entry(stack).or_default().get_mut(side) {
                *slot = slot.saturating_add(v);
            }
            if let Some(t) = totals.get_mut(side) {
                *t += u128::from(v);
            }
        }
    }
    let scale = |v: u64| -> u64 {
        let [ta, tb] = totals;
        if !normalize || ta == 0 || ta == tb {
            return v;
        }
        u64::try_from(u128::from(v) * tb / ta).unwrap_or(u64::MAX)
    };
    stacks
        .into_iter()
        .map(|(stack, [va, vb])| format!("{stack} {} {vb}", scale(va)))
        .collect()
}

/// A differential flame graph (SVG, feature `svg`) of [`differential`] lines: frames sized by
/// B, red where B grew, blue where it shrank.
/// Refuses a flame graph of more than [`MAX_SVG_FRAMES`] frames.
fn check_svg_frames(frames: usize) -> io::Result<()> {
    if frames > MAX_SVG_FRAMES {
        return Err(io::Error::other(format!(
            "svg output: {frames} frames (distinct call paths) to draw, more than {MAX_SVG_FRAMES}: inferno lays out every frame in memory (~120 bytes each) and the graph would be as many rows of 16 px deep; write folded stacks (-o NAME.folded) and draw a part of them"
        )));
    }
    Ok(())
}

/// The frames a flame graph of `stacks` draws (the nodes of their prefix tree), for stacks in
/// sorted order: a stack adds the frames below the part it shares with the one before it.
fn frames_of_sorted<'a>(stacks: impl Iterator<Item = &'a str>) -> usize {
    let mut previous = "";
    let mut frames = 0usize;
    for stack in stacks {
        let shared = previous
            .split(';')
            .zip(stack.split(';'))
            .take_while(|(a, b)| a == b)
            .count();
        frames = frames.saturating_add(stack.split(';').count().saturating_sub(shared));
        previous = stack;
    }
    frames
}

/// Writes the differential flame graph of `lines` (from [`differential`]: sorted by stack);
/// refuses one of more than [`MAX_SVG_FRAMES`] frames, as a profile's flame graph is.
pub fn write_differential_svg(
    out: &mut dyn Write,
    lines: &[String],
    title: &str,
    count_name: &str,
) -> io::Result<()> {
    let stacks = lines.iter().map(|l| l.rsplitn(3, ' ').nth(2).unwrap_or(l));
    check_svg_frames(frames_of_sorted(stacks))?;
    #[cfg(feature = "svg")]
    {
        let mut opts = inferno::flamegraph::Options::default();
        opts.title = title.to_string();
        opts.count_name = count_name.to_string();
        opts.deterministic = true;
        inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)
    }
    #[cfg(not(feature = "svg"))]
    {
        let _ = (out, lines, title, count_name);
        Err(crate::unsupported(
            "this profkit was built without the `svg` feature (inferno)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_of_sorted_stacks_are_their_prefix_tree_nodes() {
        let stacks = ["a;b", "a;b;c", "a;bc", "d"];
        // a, b, c (under b), bc, d.
        assert_eq!(frames_of_sorted(stacks.into_iter()), 5);
        assert_eq!(frames_of_sorted(std::iter::empty()), 0);
    }

    #[test]
    fn differential_lines_merge_and_normalize() {
        let a = vec!["main;f 10".to_string(), "main;g 30".to_string()];
        let b = vec!["main;g 10".to_string(), "main;h 10".to_string()];
        assert_eq!(
            differential(&a, &b, false),
            ["main;f 10 0", "main;g 30 10", "main;h 0 10"]
        );
        assert_eq!(
            differential(&a, &b, true),
            ["main;f 5 0", "main;g 15 10", "main;h 0 10"]
        );
    }
}
