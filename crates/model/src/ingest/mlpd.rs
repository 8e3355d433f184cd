//! Mono log profiler files → call events → spans, and sample hits → sampled stacks.
//!
//! Threads are the buffers' thread ids; ENTER is [`CallKind::Enter`], LEAVE and EXC_LEAVE are
//! [`CallKind::Exit`] (an exception leaving several frames writes one EXC_LEAVE per frame; a
//! leave that matches a deeper frame unwinds the frames above it, [`MismatchPolicy::Unwind`]).
//! Times are already nanoseconds. Function ids are assigned in a first parallel pass over the
//! buffers (JIT events name them, wherever they are in the file: late binding).

use std::collections::HashMap;

use profkit_mlpd::{Buffer, Error, EventKind, File};
use rayon::prelude::*;

use crate::clock::Clock;
use crate::func::{FuncId, FuncInfo, FunctionTable};
use crate::span::{BuilderStats, CallKind, MismatchPolicy, Span, SpanBuilder, SpanSink};

/// The clock of an mlpd file: nanoseconds.
pub fn clock() -> Clock {
    Clock::new(1_000_000_000)
}

/// Method pointers → function ids, and the function table (names from JIT events).
#[derive(Debug, Default)]
pub struct Methods {
    /// MonoMethod* → id.
    pub ids: HashMap<u64, FuncId>,
    /// Names.
    pub table: FunctionTable,
}

impl Methods {
    /// The id of `method` (ids are assigned for every method the file mentions).
    #[inline]
    pub fn id(&self, method: u64) -> FuncId {
        self.ids.get(&method).copied().unwrap_or(FuncId(0))
    }
}

fn buffers<'a>(file: &File<'a>) -> (Vec<Buffer<'a>>, Vec<Error>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for b in file.buffers() {
        match b {
            Ok(b) => out.push(b),
            Err(e) => problems.push(e),
        }
    }
    (out, problems)
}

/// Collects every method the file mentions (JIT events, calls, sample frames) and names them.
pub fn methods(file: &File<'_>) -> Methods {
    let (bufs, _) = buffers(file);
    // per buffer: (method, name, code, size) of JIT events, and the other methods mentioned
    type Named = Vec<(u64, String, u64, u64)>;
    let per: Vec<(Named, Vec<u64>)> = bufs
        .par_iter()
        .map(|b| {
            let mut named = Vec::new();
            let mut seen = Vec::new();
            for ev in b.events().flatten() {
                match ev.kind {
                    EventKind::Jit {
                        method,
                        code,
                        size,
                        name,
                    } => named.push((
                        method,
                        String::from_utf8_lossy(name).into_owned(),
                        code,
                        size,
                    )),
                    EventKind::Enter { method } => seen.push(method),
                    EventKind::SampleHit { frames, .. } => seen.extend(frames),
                    _ => {}
                }
            }
            seen.sort_unstable();
            seen.dedup();
            (named, seen)
        })
        .collect();
    let mut m = Methods::default();
    let mut next = 1u32;
    let mut get = |ids: &mut HashMap<u64, FuncId>, p: u64| {
        *ids.entry(p).or_insert_with(|| {
            let id = FuncId(next);
            next += 1;
            id
        })
    };
    for (named, _) in &per {
        for (p, name, code, _size) in named {
            let id = get(&mut m.ids, *p);
            m.table.insert(
                id,
                FuncInfo {
                    name: Some(name.clone()),
                    address: Some(*code),
                    ..FuncInfo::default()
                },
            );
        }
    }
    for (_, seen) in &per {
        for &p in seen {
            if !m.ids.contains_key(&p) {
                let id = get(&mut m.ids, p);
                m.table.insert(
                    id,
                    FuncInfo {
                        name: Some(format!("unknown method {p:#x}")),
                        ..FuncInfo::default()
                    },
                );
            }
        }
    }
    m
}

/// The result of feeding every thread to its own sink.
#[derive(Debug)]
pub struct Ingested<S> {
    /// Per thread (in order of first appearance): thread id, sink, builder counters.
    pub threads: Vec<(u64, S, BuilderStats)>,
    /// Decoding problems (each skipped the rest of its buffer).
    pub problems: Vec<Error>,
    /// Call events fed.
    pub calls: u64,
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

fn group<'a>(bufs: Vec<Buffer<'a>>) -> Vec<(u64, Vec<Buffer<'a>>)> {
    let mut groups: Vec<(u64, Vec<Buffer<'a>>)> = Vec::new();
    let mut index: HashMap<u64, usize> = HashMap::new();
    for b in bufs {
        let slot = *index.entry(b.header.thread_id).or_insert_with(|| {
            groups.push((b.header.thread_id, Vec::new()));
            groups.len() - 1
        });
        if let Some(g) = groups.get_mut(slot) {
            g.1.push(b);
        }
    }
    groups
}

/// Reconstructs the calls of every thread into its own sink (threads in parallel when
/// `parallel`).
pub fn build<S, F>(
    file: &File<'_>,
    methods: &Methods,
    policy: MismatchPolicy,
    parallel: bool,
    make: F,
) -> Ingested<S>
where
    S: SpanSink + Send,
    F: Fn(u64) -> S + Sync,
{
    let (bufs, mut problems) = buffers(file);
    let groups = group(bufs);
    let run = |(ti, (tid, bufs)): (usize, &(u64, Vec<Buffer<'_>>))| {
        let mut sink = make(*tid);
        let mut b = SpanBuilder::new(ti as u32, policy);
        let mut probs = Vec::new();
        let mut calls = 0u64;
        for buf in bufs {
            for ev in buf.events() {
                match ev {
                    Ok(e) => {
                        let (kind, m) = match e.kind {
                            EventKind::Enter { method } => (CallKind::Enter, method),
                            EventKind::Leave { method } | EventKind::ExcLeave { method } => {
                                (CallKind::Exit, method)
                            }
                            _ => continue,
                        };
                        calls += 1;
                        b.event(kind, methods.id(m), e.time, &mut sink);
                    }
                    Err(e) => probs.push(e),
                }
            }
        }
        let (stats, _) = b.finish();
        (*tid, sink, stats, probs, calls)
    };
    let runs: Vec<_> = if parallel {
        groups.par_iter().enumerate().map(run).collect()
    } else {
        groups.iter().enumerate().map(run).collect()
    };
    let mut out = Ingested {
        threads: Vec::new(),
        problems: Vec::new(),
        calls: 0,
    };
    for (tid, sink, stats, probs, calls) in runs {
        problems.extend(probs);
        out.calls += calls;
        out.threads.push((tid, sink, stats));
    }
    out.problems = problems;
    out
}

/// Feeds every sample hit's managed backtrace (outermost frame first) into `sink` as a stack
/// with weight 1 at its leaf: with a [`crate::stack::StackTree`], exclusive values are sample
/// counts (a flame graph from samples). Returns (samples with frames, samples without).
pub fn samples(
    file: &File<'_>,
    methods: &Methods,
    sink: &mut impl SpanSink,
) -> (u64, u64, Vec<Error>) {
    let (bufs, problems) = buffers(file);
    let (mut with, mut without) = (0u64, 0u64);
    let mut frames: Vec<u64> = Vec::new();
    for b in &bufs {
        for ev in b.events().flatten() {
            if let EventKind::SampleHit { frames: f, .. } = ev.kind {
                frames.clear();
                frames.extend(f);
                if frames.is_empty() {
                    without += 1;
                    continue;
                }
                with += 1;
                let n = frames.len() as u32;
                for (d, &m) in frames.iter().rev().enumerate() {
                    sink.enter(methods.id(m), 0, d as u32);
                }
                for (i, &m) in frames.iter().enumerate() {
                    sink.span(&Span {
                        func: methods.id(m),
                        thread: 0,
                        start: 0,
                        end: 1,
                        depth: n - 1 - i as u32,
                        self_time: u64::from(i == 0),
                    });
                }
            }
        }
    }
    (with, without, problems)
}
