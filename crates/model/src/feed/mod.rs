//! The drivers: one per input format, the only code that turns a file into calls and events.
//!
//! * [`xray`]: XRay traces (FDR buffers and basic logs).
//! * [`xray_profile`]: XRay profiling-mode files (call-path totals, no single calls).
//! * [`mlpd`]: Mono log profiler files.
//! * [`jitdump`]: jitdump code loads and moves.
//!
//! [`joined::Joined`] puts several inputs on one timeline (a recording's samples and the XRay
//! traces its program wrote).
//!
//! A driver offers its trace two ways, both through the [`replay`](crate::replay): as an
//! ordered **stream** for an [`EventSink`] (`feed`: every exporter), where each thread's events
//! come in time order with balanced calls; and as a **fold** (`fold`: accounting, stack
//! trees, Mono's report), where the buffers are replayed on every core and each thread's
//! `Fold` is completed in order. [`Filter`] cuts a stream to a time
//! window and some threads (`convert --time`, `--thread`).
//!
//! Every stream converts raw times to nanoseconds since the trace's origin and clamps each
//! thread's times so they never go backwards (XRay TSCs can, across CPUs), as the
//! [`EventSink`] contract promises; folds see raw times, as the reference tools' numbers need.

use std::cell::RefCell;
use std::io;

use crate::clock::Clock;
use crate::events::{Enter, EventSink, ThreadInfo};
use crate::func::FuncId;
use crate::replay::{Fold, ThreadReplay};
use crate::span::{BuilderStats, MismatchPolicy, Span, SpanSink};

mod filter;
pub mod jitdump;
pub mod joined;
pub mod mlpd;
pub mod perf;
pub mod xray;
pub mod xray_profile;

pub use filter::{Filter, Selection};

/// What a driver reports after feeding a trace.
#[derive(Clone, Debug, Default)]
pub struct FeedSummary {
    /// Counters of the call reconstruction, all threads together.
    pub calls: BuilderStats,
    /// Threads declared.
    pub threads: u32,
    /// Call events read.
    pub call_events: u64,
    /// Events that were not calls (instants, counters, samples, code).
    pub other_events: u64,
    /// Decoding problems (each skipped what it affected), formatted with their offsets.
    pub problems: Vec<String>,
    /// Set when the file was cut off (everything before the cut was used).
    pub truncation: Option<profkit_common::Truncation>,
    /// What the perf.data driver found (JIT metadata, clocks, binaries, warnings); `None` for
    /// the other formats.
    pub perf: Option<Box<perf::PerfReport>>,
}

/// The result of a driver's `fold`: one fold per thread.
#[derive(Debug)]
pub struct Folded<K, F> {
    /// Per thread, in order of first appearance: its key, its fold and its counters.
    pub threads: Vec<(K, F, BuilderStats)>,
    /// Problems, call counts, truncation (`threads` and `calls` summed over the threads).
    pub summary: FeedSummary,
}

impl<K, F> Folded<K, F> {
    /// Merges the threads' folds in thread order with `merge`.
    pub fn merged(self, mut merge: impl FnMut(&mut F, F)) -> Option<F> {
        let mut it = self.threads.into_iter();
        let (_, mut first, _) = it.next()?;
        for (_, f, _) in it {
            merge(&mut first, f);
        }
        Some(first)
    }
}

impl<K, F> Folded<K, F> {
    /// The same threads under other keys (`key` of each driver's own).
    pub fn map_keys<K2>(self, mut key: impl FnMut(K) -> K2) -> Folded<K2, F> {
        Folded {
            threads: self
                .threads
                .into_iter()
                .map(|(k, f, s)| (key(k), f, s))
                .collect(),
            summary: self.summary,
        }
    }
}

impl<K, F: Fold> Folded<K, F> {
    /// Ends a driver's fold: finishes the replays of [`fold_replays`] (`keys` in the same
    /// order), adding each thread's counters to `summary`.
    pub(crate) fn finish(
        keys: impl Iterator<Item = K>,
        replays: Vec<ThreadReplay<F>>,
        close_unfinished: bool,
        mut summary: FeedSummary,
    ) -> Self {
        let mut threads = Vec::with_capacity(replays.len());
        for (key, r) in keys.zip(replays) {
            let (f, stats) = r.finish(close_unfinished);
            summary.calls.merge(&stats);
            summary.threads += 1;
            threads.push((key, f, stats));
        }
        Folded { threads, summary }
    }
}

/// A driver's fold starts: one replay per thread, in the order of `keys` (a thread's index is
/// its position), each on the fold `make` builds for its key.
pub(crate) fn fold_replays<K, F: Fold>(
    keys: impl Iterator<Item = K>,
    policy: MismatchPolicy,
    make: impl Fn(K) -> F,
) -> Vec<ThreadReplay<F>> {
    keys.enumerate()
        .map(|(i, k)| ThreadReplay::new(i as u32, policy, make(k), false))
        .collect()
}

/// How a fold runs.
#[derive(Clone, Copy)]
pub struct FoldOptions<'a> {
    /// How exits that do not match the top frame are treated.
    pub policy: MismatchPolicy,
    /// Replay buffers on their own ([`Mode::Local`](crate::replay::Mode::Local), for order-free
    /// folds) or every call in order ([`Mode::Ordered`](crate::replay::Mode::Ordered)).
    pub mode: crate::replay::Mode,
    /// Close the frames still open at a thread's end at its last time (else only count them).
    pub close_unfinished: bool,
    /// Decoding threads.
    pub workers: crate::replay::pipeline::Workers,
    /// Told the byte range of each buffer once it has been used (a mapped input can drop its
    /// pages).
    pub release: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

impl Default for FoldOptions<'_> {
    fn default() -> Self {
        FoldOptions {
            policy: MismatchPolicy::Unwind,
            mode: crate::replay::Mode::Local,
            close_unfinished: false,
            workers: crate::replay::pipeline::Workers::per_core(),
            release: None,
        }
    }
}

/// Raw times to nanoseconds since the origin.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ToNs {
    pub(crate) clock: Clock,
    pub(crate) origin_raw: u64,
}

impl ToNs {
    #[inline]
    pub(crate) fn ns(&self, t: u64) -> u64 {
        self.clock.to_ns(t.saturating_sub(self.origin_raw))
    }
}

/// The fold that forwards a thread's calls to an [`EventSink`] (in ns since the origin),
/// keeping the first I/O error (the span builder's callbacks cannot fail). Every thread's
/// forwarder shares the one sink.
pub(crate) struct Forward<'c, 's> {
    pub(crate) sink: &'c RefCell<&'s mut dyn EventSink>,
    pub(crate) thread: u32,
    pub(crate) to_ns: ToNs,
    pub(crate) error: Option<io::Error>,
    /// The arguments of the call the next enter opens ([`Forward::args_of_next`]).
    pub(crate) next_args: Vec<u64>,
}

impl Forward<'_, '_> {
    /// Runs `f` on the sink, keeping its error if it is the first.
    pub(crate) fn with(&mut self, f: impl FnOnce(&mut dyn EventSink) -> io::Result<()>) {
        if self.error.is_some() {
            return;
        }
        let r = match self.sink.try_borrow_mut() {
            Ok(mut s) => f(&mut **s),
            Err(_) => Err(io::Error::other("the event sink is busy")),
        };
        if let Err(e) = r {
            self.error = Some(e);
        }
    }

    /// Sets the arguments of the call the next enter opens (a driver calls it just before it
    /// replays that call).
    pub(crate) fn args_of_next(&mut self, args: impl Iterator<Item = u64>) {
        self.next_args.clear();
        self.next_args.extend(args);
    }

    pub(crate) fn result(&mut self) -> io::Result<()> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl SpanSink for Forward<'_, '_> {
    fn enter(&mut self, func: FuncId, time: u64, depth: u32) {
        let (thread, t) = (self.thread, self.to_ns.ns(time));
        let args = std::mem::take(&mut self.next_args);
        self.with(|s| {
            s.enter(&Enter {
                thread,
                func,
                time: t,
                depth,
                args: &args,
            })
        });
        self.next_args = args;
        self.next_args.clear();
    }
    fn span(&mut self, span: &Span) {
        let start = self.to_ns.ns(span.start);
        let end = self.to_ns.ns(span.end).max(start);
        // A duration converts as the distance between two instants.
        let self_end = self.to_ns.ns(span.start.saturating_add(span.self_time));
        let s = Span {
            start,
            end,
            self_time: self_end.saturating_sub(start).min(end - start),
            ..*span
        };
        self.with(|sink| sink.exit(&s));
    }
}

/// Streams are replayed in [`Mode::Ordered`](crate::replay::Mode::Ordered): there are no parts.
impl Fold for Forward<'_, '_> {
    type Part = ();
    fn resolve(&mut self, _part: ()) {}
}

/// A stream's threads: one replay per thread (indexed by thread index), all forwarding to the
/// one sink. Threads are declared to the sink when first met.
pub(crate) struct Timeline<'c, 's> {
    sink: &'c RefCell<&'s mut dyn EventSink>,
    to_ns: ToNs,
    threads: Vec<Option<ThreadReplay<Forward<'c, 's>>>>,
    /// Threads declared to the sink, by index.
    declared: Vec<bool>,
    policy: MismatchPolicy,
    pub(crate) summary: FeedSummary,
}

impl<'c, 's> Timeline<'c, 's> {
    pub(crate) fn new(
        sink: &'c RefCell<&'s mut dyn EventSink>,
        to_ns: ToNs,
        policy: MismatchPolicy,
    ) -> Self {
        Timeline {
            sink,
            to_ns,
            threads: Vec::new(),
            declared: Vec::new(),
            policy,
            summary: FeedSummary::default(),
        }
    }

    /// Runs `f` on the sink.
    pub(crate) fn sink(
        &self,
        f: impl FnOnce(&mut dyn EventSink) -> io::Result<()>,
    ) -> io::Result<()> {
        match self.sink.try_borrow_mut() {
            Ok(mut s) => f(&mut **s),
            Err(_) => Err(io::Error::other("the event sink is busy")),
        }
    }

    /// Declares thread `index` to the sink (with `info()`: pid, tid, name) unless it was.
    pub(crate) fn declare(
        &mut self,
        index: u32,
        info: impl FnOnce() -> (u32, u64, String),
    ) -> io::Result<()> {
        let i = index as usize;
        if self.declared.len() <= i {
            self.declared.resize(i + 1, false);
        }
        if self.declared.get(i).copied().unwrap_or(true) {
            return Ok(());
        }
        let (pid, tid, name) = info();
        self.sink(|s| {
            s.thread(&ThreadInfo {
                index,
                pid,
                tid,
                name: &name,
            })
        })?;
        if let Some(d) = self.declared.get_mut(i) {
            *d = true;
        }
        self.summary.threads += 1;
        Ok(())
    }

    /// The replay of thread `index`, declared (with `info()`) when first met.
    pub(crate) fn thread(
        &mut self,
        index: u32,
        info: impl FnOnce() -> (u32, u64, String),
    ) -> io::Result<&mut ThreadReplay<Forward<'c, 's>>> {
        self.declare(index, info)?;
        let i = index as usize;
        if self.threads.len() <= i {
            self.threads.resize_with(i + 1, || None);
        }
        if let Some(slot @ None) = self.threads.get_mut(i) {
            let fwd = Forward {
                sink: self.sink,
                thread: index,
                to_ns: self.to_ns,
                error: None,
                next_args: Vec::new(),
            };
            *slot = Some(ThreadReplay::new(index, self.policy, fwd, true));
        }
        match self.threads.get_mut(i) {
            Some(Some(r)) => Ok(r),
            _ => Err(io::Error::other("thread index out of range")),
        }
    }

    /// Ends thread `index` (when a driver knows no more of its events follow): its open calls
    /// are closed at its last time.
    pub(crate) fn end_thread(&mut self, index: u32) -> io::Result<()> {
        let Some(r) = self.threads.get_mut(index as usize).and_then(Option::take) else {
            return Ok(());
        };
        let (mut fwd, stats) = r.finish(true);
        self.summary.calls.merge(&stats);
        fwd.result()
    }

    /// Ends every thread still open, in index order.
    pub(crate) fn end_all(&mut self) -> io::Result<()> {
        for i in 0..self.threads.len() {
            self.end_thread(i as u32)?;
        }
        Ok(())
    }
}
