//! LLVM XRay traces → call events → spans.
//!
//! Everything XRay-specific lives here: which events are calls (Enter and EnterArg are
//! [`CallKind::Enter`]), how a thread is identified (`(pid, tid)`), the raw clock (TSC ticks at
//! the header's cycle frequency), and function names from the instrumentation map.
//!
//! FDR traces are streamed: buffers are grouped per thread (in file order — never by wall time,
//! unlike llvm-xray), each thread's buffers are decoded lazily in order, and threads are
//! processed in parallel. Nothing is materialised beyond what the sinks keep.

use std::ops::ControlFlow;

use profkit_xray::{
    BufferItem, CallRecord, Error, Event, EventKind, FileHeader, InstrMap, Symbolizer, ThreadKey,
    ThreadState, Trace, TraceType, Truncation,
};
use rayon::prelude::*;

use crate::account::{Accounting, Durations};
use crate::clock::Clock;
use crate::func::{FuncId, FuncInfo, FunctionTable};
use crate::span::{BuilderStats, CallKind, MismatchPolicy, Span, SpanBuilder, SpanSink};

/// The clock of an XRay trace: TSC ticks at the header's cycle frequency.
pub fn clock(header: &FileHeader) -> Clock {
    Clock::new(header.cycle_frequency)
}

/// The call kind of an XRay event (`None` for custom and typed events).
#[inline]
pub fn call_kind(kind: EventKind) -> Option<CallKind> {
    match kind {
        EventKind::Enter | EventKind::EnterArg => Some(CallKind::Enter),
        EventKind::Exit => Some(CallKind::Exit),
        EventKind::TailExit => Some(CallKind::TailExit),
        _ => None,
    }
}

/// The function table of an instrumentation map: names and llvm-xray's `file:line:col`
/// debug column, from `symbolizer` when given (DWARF, then the symbol table).
pub fn function_table(map: &InstrMap, symbolizer: Option<&Symbolizer>) -> FunctionTable {
    let mut t = FunctionTable::new();
    for (i, &addr) in map.functions.iter().enumerate() {
        let id = FuncId(i as u32 + 1);
        let mut info = FuncInfo {
            address: Some(addr),
            ..FuncInfo::default()
        };
        match symbolizer {
            Some(s) => {
                let si = s.symbolize(addr);
                info.name = Some(si.display_name(addr));
                info.debug = Some(si.debug_string());
                info.file = si.file.clone();
                info.line = si.line;
                info.column = si.column;
            }
            None => {
                info.name = Some(format!("@({addr:X})"));
                info.debug = Some("(unknown)".to_string());
            }
        }
        t.insert(id, info);
    }
    t
}

/// The result of feeding every thread of a trace to its own sink.
#[derive(Debug)]
pub struct Ingested<S> {
    /// Per thread, in order of first appearance in the file: its key, its sink, and the
    /// builder's counters.
    pub threads: Vec<(ThreadKey, S, BuilderStats)>,
    /// Decoding problems (the affected records were skipped).
    pub problems: Vec<Error>,
    /// Set when the file ends inside a record or buffer (everything before it was used).
    pub truncation: Option<Truncation>,
    /// Function-call events fed.
    pub calls: u64,
    /// Custom and typed events seen (not calls).
    pub other_events: u64,
}

impl<S> Ingested<S> {
    /// Counters of all threads together.
    pub fn stats(&self) -> BuilderStats {
        let mut s = BuilderStats::default();
        for (_, _, t) in &self.threads {
            s.merge(t);
        }
        s
    }
}

/// FDR buffers grouped per thread, in order of first appearance; buffers with no events are
/// left out.
pub fn thread_buffers(trace: &Trace<'_>) -> Vec<(ThreadKey, Vec<usize>)> {
    let mut out: Vec<(ThreadKey, Vec<usize>)> = Vec::new();
    let mut index = std::collections::HashMap::<ThreadKey, usize>::new();
    let mut last_key: Option<ThreadKey> = None;
    for i in 0..trace.layout().buffers.len() {
        let mut it = trace.buffer_events(i, ThreadState::default());
        let first = it.by_ref().find_map(|r| r.ok());
        let key = match first {
            Some(ev) => ThreadKey {
                pid: ev.pid,
                tid: ev.tid,
            },
            None => {
                let st = it.state();
                if st.tid == 0 {
                    match last_key {
                        Some(k) => k,
                        None => continue,
                    }
                } else {
                    ThreadKey {
                        pid: st.pid,
                        tid: st.tid,
                    }
                }
            }
        };
        last_key = Some(key);
        let slot = *index.entry(key).or_insert_with(|| {
            out.push((key, Vec::new()));
            out.len() - 1
        });
        if let Some((_, v)) = out.get_mut(slot) {
            v.push(i);
        }
    }
    out
}

struct ThreadRun<S> {
    sink: S,
    stats: BuilderStats,
    problems: Vec<Error>,
    calls: u64,
    other: u64,
}

fn feed_event<S: SpanSink>(
    ev: &Event<'_>,
    b: &mut SpanBuilder,
    sink: &mut S,
    calls: &mut u64,
    other: &mut u64,
) {
    match call_kind(ev.kind) {
        Some(k) => {
            *calls += 1;
            b.event(k, FuncId(ev.func_id), ev.tsc, sink);
        }
        None => *other += 1,
    }
}

fn run_fdr_thread<S: SpanSink>(
    trace: &Trace<'_>,
    index: u32,
    buffers: &[usize],
    policy: MismatchPolicy,
    mut sink: S,
) -> ThreadRun<S> {
    let mut b = SpanBuilder::new(index, policy);
    let mut state = ThreadState::default();
    let mut problems = Vec::new();
    let (mut calls, mut other) = (0u64, 0u64);
    for &i in buffers {
        let mut it = trace.buffer_events(i, state);
        for item in it.by_ref() {
            match item {
                Ok(ev) => feed_event(&ev, &mut b, &mut sink, &mut calls, &mut other),
                Err(e) => problems.push(e),
            }
        }
        state = it.state();
    }
    let (stats, _) = b.finish();
    ThreadRun {
        sink,
        stats,
        problems,
        calls,
        other,
    }
}

/// Reconstructs the calls of every thread of `trace`, each thread into its own sink made by
/// `make` (threads in parallel when `parallel`; the result is the same either way).
pub fn build<S, F>(
    trace: &Trace<'_>,
    policy: MismatchPolicy,
    parallel: bool,
    make: F,
) -> Ingested<S>
where
    S: SpanSink + Send,
    F: Fn(ThreadKey) -> S + Sync,
{
    let mut out = Ingested {
        threads: Vec::new(),
        problems: Vec::new(),
        truncation: None,
        calls: 0,
        other_events: 0,
    };
    if trace.header.trace_type == TraceType::BASIC {
        let decoded = trace.decode();
        for (ti, t) in decoded.threads.iter().enumerate() {
            let mut sink = make(t.key);
            let mut b = SpanBuilder::new(ti as u32, policy);
            for ev in &t.events {
                feed_event(ev, &mut b, &mut sink, &mut out.calls, &mut out.other_events);
            }
            let (stats, _) = b.finish();
            out.threads.push((t.key, sink, stats));
        }
        out.problems = decoded.problems;
        out.truncation = decoded.truncation;
        return out;
    }
    out.truncation = trace.truncation().cloned();
    let groups = thread_buffers(trace);
    let run = |(ti, (key, bufs)): (usize, &(ThreadKey, Vec<usize>))| {
        (
            *key,
            run_fdr_thread(trace, ti as u32, bufs, policy, make(*key)),
        )
    };
    let runs: Vec<(ThreadKey, ThreadRun<S>)> = if parallel && groups.len() > 1 {
        groups.par_iter().enumerate().map(run).collect()
    } else {
        groups.iter().enumerate().map(run).collect()
    };
    for (key, r) in runs {
        out.problems.extend(r.problems);
        out.calls += r.calls;
        out.other_events += r.other;
        out.threads.push((key, r.sink, r.stats));
    }
    out
}

/// Visits every call event in thread order (each thread's events in file order, threads in
/// order of first appearance), on the calling thread. For analyses whose state spans threads
/// (llvm-xray's `stack` emulation).
pub fn for_each_call(
    trace: &Trace<'_>,
    mut f: impl FnMut(ThreadKey, CallKind, FuncId, u64),
) -> Vec<Error> {
    let mut problems = Vec::new();
    let mut visit = |ev: &Event<'_>| {
        if let Some(k) = call_kind(ev.kind) {
            f(
                ThreadKey {
                    pid: ev.pid,
                    tid: ev.tid,
                },
                k,
                FuncId(ev.func_id),
                ev.tsc,
            );
        }
    };
    if trace.header.trace_type == TraceType::BASIC {
        let decoded = trace.decode();
        for t in &decoded.threads {
            t.events.iter().for_each(&mut visit);
        }
        return decoded.problems;
    }
    for (_, bufs) in thread_buffers(trace) {
        let mut state = ThreadState::default();
        for i in bufs {
            let mut it = trace.buffer_events(i, state);
            for item in it.by_ref() {
                match item {
                    Ok(ev) => visit(&ev),
                    Err(e) => problems.push(e),
                }
            }
            state = it.state();
        }
    }
    problems
}

/// The result of [`account`]: every thread's completed calls, merged.
#[derive(Debug)]
pub struct AccountIngest {
    /// Durations per function, in order of first completion (threads in order of first
    /// appearance), as if every thread had been fed to an [`Accounting`] and merged in order.
    pub accounting: Accounting,
    /// Counters of all threads together.
    pub stats: BuilderStats,
    /// Decoding problems (the affected records were skipped).
    pub problems: Vec<Error>,
    /// Set when the file ends inside a record or buffer.
    pub truncation: Option<Truncation>,
    /// Function-call events fed.
    pub calls: u64,
    /// Custom and typed events seen (not calls).
    pub other_events: u64,
}

/// An exit met while the buffer's own stack was empty (it applies to the frames the thread had
/// open before the buffer), or the deepest the buffer's own stack grew before the next such exit.
#[derive(Clone, Copy, Debug)]
enum Op {
    Exit {
        kind: CallKind,
        func: FuncId,
        tsc: u64,
        offset: u64,
    },
    Peak(u32),
}

/// One FDR buffer processed on its own: completed calls of frames it opened itself, exits that
/// belong to earlier frames, and the frames still open at its end.
#[derive(Debug, Default)]
struct Partial {
    ops: Vec<Op>,
    open: Vec<(FuncId, u64)>,
    acc: Accounting,
    spans: u64,
    deduced: u64,
    unmatched: u64,
    /// An exit needed the frames opened before the buffer while the buffer's own stack was
    /// not empty (deduced sibling calls): redo the buffer sequentially.
    fallback: bool,
    end_state: ThreadState,
    used_unknown_tsc: bool,
    problems: Vec<Error>,
    calls: u64,
    other: u64,
}

#[inline]
fn order_key(offset: u64, sub: u64) -> u64 {
    (offset << 16) | sub.min(0xFFFF)
}

fn partial(trace: &Trace<'_>, index: usize, state: ThreadState, policy: MismatchPolicy) -> Partial {
    let mut p = Partial::default();
    let mut stack: Vec<(FuncId, u64)> = Vec::with_capacity(64);
    let mut peak = 0u32;
    let mut problems = Vec::new();
    let mut other = 0u64;
    let mut fallback = false;
    let mut it = trace.buffer_events(index, state);
    let push_peak = |ops: &mut Vec<Op>, peak: u32| match ops.last_mut() {
        Some(Op::Peak(p)) => *p = (*p).max(peak),
        _ => ops.push(Op::Peak(peak)),
    };
    let mut call = |c: CallRecord| {
        p.calls += 1;
        let func = FuncId(c.func_id);
        let tsc = c.tsc;
        let kind = call_kind(c.kind).unwrap_or(CallKind::Enter);
        if kind == CallKind::Enter {
            stack.push((func, tsc));
            peak = peak.max(stack.len() as u32);
            return ControlFlow::Continue(());
        }
        match stack.last() {
            None => p.ops.push(Op::Exit {
                kind,
                func,
                tsc,
                offset: c.offset,
            }),
            Some(&(top, start)) if top == func => {
                stack.pop();
                p.spans += 1;
                p.acc
                    .record_keyed(func, tsc.abs_diff(start), order_key(c.offset, 0));
            }
            Some(_) => {
                if policy == MismatchPolicy::Unwind {
                    match stack.iter().rposition(|f| f.0 == func) {
                        Some(pos) => {
                            let mut sub = 0u64;
                            while stack.len() > pos {
                                let Some((f, start)) = stack.pop() else { break };
                                if stack.len() > pos {
                                    p.deduced += 1;
                                }
                                p.spans += 1;
                                p.acc.record_keyed(
                                    f,
                                    tsc.abs_diff(start),
                                    order_key(c.offset, sub),
                                );
                                sub += 1;
                            }
                        }
                        None => {
                            fallback = true;
                            return ControlFlow::Break(());
                        }
                    }
                } else {
                    p.unmatched += 1;
                }
            }
        }
        if stack.is_empty() && peak > 0 {
            push_peak(&mut p.ops, peak);
            peak = 0;
        }
        ControlFlow::Continue(())
    };
    while let Some(item) = it.visit_calls(&mut call) {
        match item {
            BufferItem::Event(_) | BufferItem::Call(_) => other += 1,
            BufferItem::Problem(e) => problems.push(e),
        }
    }
    if peak > 0 {
        push_peak(&mut p.ops, peak);
    }
    p.fallback = fallback;
    p.problems = problems;
    p.other = other;
    p.open = stack;
    p.end_state = it.state();
    p.used_unknown_tsc = it.used_unknown_tsc();
    p
}

/// A sink that records spans with an ordering key (the offset of the exit that completed them).
struct KeyedSink<'a> {
    acc: &'a mut Accounting,
    offset: u64,
    sub: u64,
}

impl KeyedSink<'_> {
    fn at(&mut self, offset: u64) {
        self.offset = offset;
        self.sub = 0;
    }
}

impl SpanSink for KeyedSink<'_> {
    #[inline]
    fn span(&mut self, span: &Span) {
        self.acc
            .record_keyed(span.func, span.duration(), order_key(self.offset, self.sub));
        self.sub += 1;
    }
}

/// Per-function accounting of every completed call of `trace`, as [`build`] with
/// [`Accounting`] sinks merged in thread order would give, but faster: FDR buffers are
/// processed in parallel, each on its own (frames open across buffer boundaries are stitched
/// afterwards in file order), and durations are stored compactly. `release(start, end)` is
/// called once a buffer's bytes have been read (a memory-mapped input can drop those pages).
pub fn account(
    trace: &Trace<'_>,
    policy: MismatchPolicy,
    release: &(dyn Fn(u64, u64) + Sync),
) -> AccountIngest {
    if trace.header.trace_type == TraceType::BASIC {
        let ing = build(trace, policy, true, |_| Accounting::new());
        let stats = ing.stats();
        let mut acc = Accounting::new();
        for (_, a, _) in ing.threads {
            acc.merge(a);
        }
        return AccountIngest {
            accounting: acc,
            stats,
            problems: ing.problems,
            truncation: ing.truncation,
            calls: ing.calls,
            other_events: ing.other_events,
        };
    }
    let mut out = AccountIngest {
        accounting: Accounting::new(),
        stats: BuilderStats::default(),
        problems: Vec::new(),
        truncation: None,
        calls: 0,
        other_events: 0,
    };
    out.truncation = trace.truncation().cloned();
    let groups = thread_buffers(trace);
    let jobs: Vec<usize> = groups.iter().flat_map(|(_, b)| b.iter().copied()).collect();
    let release_buffer = |bi: usize| {
        if let Some(b) = trace.layout().buffers.get(bi) {
            release(b.start, b.end);
        }
    };
    let mut partials: Vec<Option<Partial>> = jobs
        .par_iter()
        .map(|&bi| {
            let p = partial(trace, bi, ThreadState::default(), policy);
            release_buffer(bi);
            Some(p)
        })
        .collect();
    // Stitch each thread's buffers in file order (threads in parallel).
    type ThreadJobs<'b> = (usize, &'b [usize], Vec<Option<Partial>>);
    let mut per_thread: Vec<ThreadJobs<'_>> = Vec::new();
    let mut rest = partials.as_mut_slice();
    for (ti, (_, bufs)) in groups.iter().enumerate() {
        let (mine, tail) = rest.split_at_mut(bufs.len().min(rest.len()));
        per_thread.push((
            ti,
            bufs.as_slice(),
            mine.iter_mut().map(Option::take).collect(),
        ));
        rest = tail;
    }
    let results: Vec<(usize, Accounting, BuilderStats, Vec<Error>, u64, u64)> = per_thread
        .into_par_iter()
        .map(|(ti, bufs, parts)| {
            let mut acc = Accounting::new();
            let mut b = SpanBuilder::new(ti as u32, policy);
            let mut state: Option<ThreadState> = None;
            let mut problems = Vec::new();
            let (mut calls, mut other) = (0u64, 0u64);
            for (&bi, p) in bufs.iter().zip(parts) {
                let mut p = p.unwrap_or_default();
                if let Some(st) = state {
                    if p.used_unknown_tsc || !p.end_state.tsc_known {
                        p = partial(trace, bi, st, policy);
                    }
                }
                if p.fallback {
                    // Sequential redo of this buffer on the thread's real stack.
                    let mut it = trace.buffer_events(bi, state.unwrap_or_default());
                    let mut sink = KeyedSink {
                        acc: &mut acc,
                        offset: 0,
                        sub: 0,
                    };
                    for item in it.by_ref() {
                        match item {
                            Ok(ev) => match call_kind(ev.kind) {
                                Some(k) => {
                                    calls += 1;
                                    sink.at(ev.offset);
                                    b.event(k, FuncId(ev.func_id), ev.tsc, &mut sink);
                                }
                                None => other += 1,
                            },
                            Err(e) => problems.push(e),
                        }
                    }
                    state = Some(it.state());
                    continue;
                }
                {
                    let mut sink = KeyedSink {
                        acc: &mut acc,
                        offset: 0,
                        sub: 0,
                    };
                    for op in &p.ops {
                        match *op {
                            Op::Exit {
                                kind,
                                func,
                                tsc,
                                offset,
                            } => {
                                sink.at(offset);
                                b.event(kind, func, tsc, &mut sink);
                            }
                            Op::Peak(d) => b.note_depth(d),
                        }
                    }
                }
                for &(f, start) in &p.open {
                    b.push_frame(f, start);
                }
                b.add_counts(p.spans, p.deduced, p.unmatched);
                acc.merge(std::mem::take(&mut p.acc));
                problems.append(&mut p.problems);
                calls += p.calls;
                other += p.other;
                state = Some(p.end_state);
            }
            let (stats, _) = b.finish();
            (ti, acc, stats, problems, calls, other)
        })
        .collect();
    let mut keyed: Vec<(usize, u64, FuncId, Durations)> = Vec::new();
    for (ti, acc, stats, problems, calls, other) in results {
        out.stats.merge(&stats);
        out.problems.extend(problems);
        out.calls += calls;
        out.other_events += other;
        keyed.extend(acc.into_keyed().into_iter().map(|(k, f, d)| (ti, k, f, d)));
    }
    keyed.sort_by_key(|&(ti, k, f, _)| (ti, k, f.0));
    out.accounting = Accounting::from_ordered(keyed.into_iter().map(|(_, _, f, d)| (f, d)));
    out
}
