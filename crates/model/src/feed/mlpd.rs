//! Mono log profiler files → calls and events: the one Mono driver.
//!
//! Threads are the buffers' thread ids; ENTER is [`CallKind::Enter`], LEAVE and EXC_LEAVE are
//! [`CallKind::Exit`] (an exception leaving several frames writes one EXC_LEAVE per frame; a
//! leave that matches a deeper frame unwinds the frames above it). Times are nanoseconds.
//! Method pointers become [`FuncId`]s in a first parallel pass over the buffers ([`methods`]),
//! which also names them from the JIT events wherever they are in the file (late binding).
//!
//! Calls are replayed through the [`replay`](crate::replay), the buffers of each thread in
//! file order, threads one after another. The stream ([`feed`]) then adds, in a second pass in
//! file order, what is not per-thread call data: exceptions thrown, GC phases and monitor
//! events become instants on the thread they happened on (first pass); GC resizes the counter
//! `GC heap size`; performance counters counters named after their COUNTERS_DESC (values
//! summed from the deltas the file stores); JIT events code regions; sample hits with managed
//! frames samples on the sampled thread.
//!
//! The origin is the header's start time on the event clock (major 3) or the earliest buffer
//! time; process and thread names come from the header and the thread-name metadata.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;

use profkit_common::Truncation;
use profkit_mlpd::raw::{MONITOR_CONTENTION, MONITOR_DONE, MONITOR_FAIL, MTYPE_THREAD};
use profkit_mlpd::read::{CounterValue, MetaAction};
use profkit_mlpd::{Buffer, EventKind, File};
use rayon::prelude::*;

use super::{fold_replays, FeedSummary, FoldOptions, Folded, Timeline, ToNs};
use crate::clock::Clock;
use crate::events::{
    Arg, ArgValue, CodeEvent, CodeRegion, Counter, EventSink, Instant, ProcessInfo, Sample,
    TraceInfo,
};
use crate::func::{FuncId, FuncInfo, FunctionTable};
use crate::replay::pipeline::{self, Workers};
use crate::replay::{Fold, Mode, Piece, PieceBuilder};
use crate::span::{CallKind, MismatchPolicy, SpanSink};

/// The clock of an mlpd file: nanoseconds.
pub fn clock() -> Clock {
    Clock::NANOSECONDS
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

/// The file's buffers in order, the problems of the scan, and where the file is cut.
fn buffers<'a>(file: &File<'a>) -> (Vec<Buffer<'a>>, Vec<String>, Option<Truncation>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let mut it = file.buffers();
    for b in it.by_ref() {
        match b {
            Ok(b) => out.push(b),
            Err(e) => problems.push(e.to_string()),
        }
    }
    (out, problems, it.truncation())
}

/// Collects every method the file mentions (JIT events, calls, sample frames) and names them.
pub fn methods(file: &File<'_>) -> Methods {
    let (bufs, _, _) = buffers(file);
    // per buffer: (method, name, code) of JIT events, and the other methods mentioned
    type Named = Vec<(u64, String, u64)>;
    let per: Vec<(Named, Vec<u64>)> = bufs
        .par_iter()
        .map(|b| {
            let mut named = Vec::new();
            let mut seen = Vec::new();
            for ev in b.events().flatten() {
                match ev.kind {
                    EventKind::Jit {
                        method, code, name, ..
                    } => named.push((method, String::from_utf8_lossy(name).into_owned(), code)),
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
        for (p, name, code) in named {
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

/// The GC event names of note §5.
fn gc_event_name(event: u64) -> &'static str {
    match event {
        0 => "GC start",
        1 => "GC mark start",
        2 => "GC mark end",
        3 => "GC reclaim start",
        4 => "GC reclaim end",
        5 => "GC end",
        6 => "GC pre stop world",
        7 => "GC post stop world",
        8 => "GC pre start world",
        9 => "GC post start world",
        10 => "GC pre stop world locked",
        11 => "GC post start world unlocked",
        _ => "GC event",
    }
}

fn monitor_event_name(event: u8) -> &'static str {
    match event {
        MONITOR_CONTENTION => "monitor contention",
        MONITOR_DONE => "monitor acquired",
        MONITOR_FAIL => "monitor failed",
        _ => "monitor event",
    }
}

/// A thread's event that is not a call, kept in order with its calls.
#[derive(Clone, Copy, Debug)]
enum Other {
    Instant {
        time: u64,
        name: &'static str,
        category: &'static str,
        arg: (&'static str, u64),
    },
}

/// Buffers grouped per thread: jobs thread after thread.
struct Plan<'f, 'a> {
    bufs: &'f [Buffer<'a>],
    /// Per thread (in order of first appearance): its id and its buffers' indexes in `bufs`.
    threads: Vec<(u64, Vec<usize>)>,
    methods: &'f Methods,
    mode: Mode,
    policy: MismatchPolicy,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    thread: u32,
    buffer: usize,
}

impl<'f, 'a> Plan<'f, 'a> {
    fn new(bufs: &'f [Buffer<'a>], methods: &'f Methods, mode: Mode) -> Self {
        let mut threads: Vec<(u64, Vec<usize>)> = Vec::new();
        let mut index: HashMap<u64, usize> = HashMap::new();
        for (i, b) in bufs.iter().enumerate() {
            let slot = *index.entry(b.header.thread_id).or_insert_with(|| {
                threads.push((b.header.thread_id, Vec::new()));
                threads.len() - 1
            });
            if let Some(t) = threads.get_mut(slot) {
                t.1.push(i);
            }
        }
        Plan {
            bufs,
            threads,
            methods,
            mode,
            policy: MismatchPolicy::Unwind,
        }
    }

    fn jobs(&self) -> Vec<Job> {
        let mut jobs = Vec::new();
        for (t, (_, bufs)) in self.threads.iter().enumerate() {
            for &buffer in bufs {
                jobs.push(Job {
                    thread: t as u32,
                    buffer,
                });
            }
        }
        jobs
    }

    /// Decodes one buffer: calls, and (ordered mode) the thread's instants.
    fn decode<P: SpanSink + Default>(&self, job: Job) -> (Piece<P, Other>, Vec<String>) {
        let mut pb: PieceBuilder<P, Other> = PieceBuilder::new(self.mode, self.policy, job.thread);
        let mut problems = Vec::new();
        let Some(b) = self.bufs.get(job.buffer) else {
            return (pb.finish(), problems);
        };
        for ev in b.events() {
            let ev = match ev {
                Ok(ev) => ev,
                Err(e) if e.is_truncation() => continue,
                Err(e) => {
                    problems.push(e.to_string());
                    continue;
                }
            };
            let t = ev.time;
            let (name, category, arg) = match ev.kind {
                EventKind::Enter { method } => {
                    pb.call(CallKind::Enter, self.methods.id(method), t);
                    continue;
                }
                EventKind::Leave { method } | EventKind::ExcLeave { method } => {
                    pb.call(CallKind::Exit, self.methods.id(method), t);
                    continue;
                }
                _ if self.mode != Mode::Ordered => continue,
                EventKind::Throw { obj, .. } => ("exception thrown", "exception", ("object", obj)),
                EventKind::GcEvent { event, generation } => {
                    (gc_event_name(event), "gc", ("generation", generation))
                }
                EventKind::Monitor { event, obj, .. } => {
                    (monitor_event_name(event), "monitor", ("object", obj))
                }
                _ => continue,
            };
            pb.other(Other::Instant {
                time: t,
                name,
                category,
                arg,
            });
        }
        (pb.finish(), problems)
    }

    /// Runs the jobs; `apply` gets (thread index, piece, problems) in order.
    fn run<P, E>(
        &self,
        workers: Workers,
        mut apply: impl FnMut(Job, Piece<P, Other>, Vec<String>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        P: SpanSink + Default + Send,
    {
        let mut jobs = self.jobs().into_iter();
        pipeline::run(
            workers,
            move || jobs.next(),
            || (),
            |(), job, emit| {
                let (piece, problems) = self.decode::<P>(job);
                emit((job, piece, problems));
            },
            |(job, piece, problems)| apply(job, piece, problems),
        )
        .map(|_| ())
    }
}

/// Runs `make`'s fold on every thread's calls (buffers on every core).
pub fn fold<F>(
    file: &File<'_>,
    methods: &Methods,
    opts: &FoldOptions<'_>,
    make: impl Fn(u64) -> F,
) -> Folded<u64, F>
where
    F: Fold,
    F::Part: Send,
{
    let (bufs, problems, truncation) = buffers(file);
    let mut plan = Plan::new(&bufs, methods, opts.mode);
    plan.policy = opts.policy;
    let mut summary = FeedSummary {
        problems,
        truncation,
        ..FeedSummary::default()
    };
    let keys = || plan.threads.iter().map(|(tid, _)| *tid);
    let mut replays = fold_replays(keys(), opts.policy, make);
    let r: Result<(), ()> = plan.run(opts.workers, |job, piece: Piece<F::Part, Other>, probs| {
        summary.call_events += piece.calls;
        summary.problems.extend(probs);
        if let Some(r) = replays.get_mut(job.thread as usize) {
            r.apply(piece, |_, _| {});
        }
        Ok(())
    });
    let _ = r;
    Folded::finish(keys(), replays, opts.close_unfinished, summary)
}

/// Thread indexes by thread id, in order of first use, with the names the file gives.
struct Threads {
    index: HashMap<u64, u32>,
    names: HashMap<u64, String>,
    pid: u32,
}

impl Threads {
    fn index(&mut self, tid: u64) -> u32 {
        let next = self.index.len() as u32;
        *self.index.entry(tid).or_insert(next)
    }

    fn info(&self, tid: u64) -> (u32, u64, String) {
        let name = self
            .names
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| format!("thread {tid:#x}"));
        (self.pid, tid, name)
    }
}

/// Feeds `file` to `sink`; `methods` names the methods ([`methods`]).
pub fn feed(
    file: &File<'_>,
    methods: &Methods,
    name: &str,
    workers: Option<Workers>,
    sink: &mut dyn EventSink,
) -> io::Result<FeedSummary> {
    let (bufs, scan_problems, truncation) = buffers(file);
    // Thread names and the earliest time.
    let mut names = HashMap::new();
    let mut earliest = u64::MAX;
    for b in &bufs {
        earliest = earliest.min(b.header.time_base);
        for ev in b.events().flatten() {
            if let EventKind::Metadata(m) = ev.kind {
                if m.mtype == MTYPE_THREAD && m.action == MetaAction::Name && !m.name.is_empty() {
                    names.insert(m.ptr, String::from_utf8_lossy(m.name).into_owned());
                }
            }
        }
    }
    let h = &file.header;
    let origin = if h.major >= 3 && h.startup_ns != 0 && h.startup_ns <= earliest {
        h.startup_ns
    } else if earliest == u64::MAX {
        0
    } else {
        earliest
    };
    let to_ns = ToNs {
        clock: clock(),
        origin_raw: origin,
    };
    sink.begin(&TraceInfo {
        format: "mlpd",
        functions: &methods.table,
        clock: clock(),
        origin_ns: origin,
        name,
        samples: None,
        origin_unix_ns: None,
    })?;
    let pname = if h.args.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({})", h.args)
    };
    sink.process(&ProcessInfo {
        pid: h.pid,
        name: &pname,
    })?;
    let mut threads = Threads {
        index: HashMap::new(),
        names,
        pid: h.pid,
    };
    let cell = RefCell::new(sink);
    let mut tl = Timeline::new(&cell, to_ns, MismatchPolicy::Unwind);
    tl.summary.problems = scan_problems;
    tl.summary.truncation = truncation;

    // Pass 1: per thread, calls and instants, threads one after another.
    let plan = Plan::new(&bufs, methods, Mode::Ordered);
    let mut current: Option<u32> = None;
    plan.run(
        workers.unwrap_or_else(Workers::per_core),
        |job, piece: Piece<(), Other>, problems| -> io::Result<()> {
            let tid = plan.threads.get(job.thread as usize).map_or(0, |t| t.0);
            let index = threads.index(tid);
            if let Some(c) = current.filter(|&c| c != index) {
                tl.end_thread(c)?;
            }
            current = Some(index);
            tl.summary.call_events += piece.calls;
            tl.summary.problems.extend(problems);
            let mut instants = 0u64;
            let replay = tl.thread(index, || threads.info(tid))?;
            replay.apply(piece, |r, other| {
                let Other::Instant {
                    time,
                    name,
                    category,
                    arg,
                } = other;
                instants += 1;
                let time = to_ns.ns(r.time(time));
                let args: [Arg<'_>; 1] = [(arg.0, ArgValue::U64(arg.1))];
                r.fold().with(|s| {
                    s.instant(&Instant {
                        thread: index,
                        time,
                        name,
                        category,
                        args: &args,
                    })
                });
            });
            replay.fold().result()?;
            tl.summary.other_events += instants;
            Ok(())
        },
    )?;
    if let Some(c) = current {
        tl.end_thread(c)?;
    }

    // Pass 2: samples, counters, heap size, code, in file order.
    let mut counter_names: HashMap<u64, String> = HashMap::new();
    let mut counter_values: HashMap<u64, f64> = HashMap::new();
    let mut frames = Vec::new();
    let mut other = 0u64;
    for b in &bufs {
        for ev in b.events().flatten() {
            let time = to_ns.ns(ev.time);
            match ev.kind {
                EventKind::SampleHit {
                    thread,
                    frames: f,
                    timestamp,
                    ..
                } => {
                    frames.clear();
                    frames.extend(f.map(|m| methods.id(m)));
                    if frames.is_empty() {
                        continue;
                    }
                    frames.reverse(); // the file lists the leaf first
                    let index = threads.index(thread);
                    tl.declare(index, || threads.info(thread))?;
                    other += 1;
                    tl.sink(|s| {
                        s.sample(&Sample {
                            thread: index,
                            time: timestamp.map_or(time, |t| to_ns.ns(t)),
                            stack: &frames,
                            lines: &[],
                            weight: 1,
                            shared: 0,
                        })
                    })?;
                }
                EventKind::GcResize { heap_size } => {
                    other += 1;
                    tl.sink(|s| {
                        s.counter(&Counter {
                            pid: h.pid,
                            name: "GC heap size",
                            time,
                            value: heap_size as f64,
                        })
                    })?;
                }
                EventKind::CountersDesc { descs } => {
                    for d in descs {
                        let n = String::from_utf8_lossy(d.name);
                        let full = if d.section_name.is_empty() {
                            n.into_owned()
                        } else {
                            format!("{}/{n}", String::from_utf8_lossy(d.section_name))
                        };
                        counter_names.insert(d.index, full);
                    }
                }
                EventKind::Counters { timestamp, values } => {
                    let time = timestamp.map_or(time, |t| to_ns.ns(t));
                    for (index, _, v) in values {
                        let cur = counter_values.entry(index).or_insert(0.0);
                        match v {
                            CounterValue::Signed(d) => *cur += d as f64,
                            CounterValue::Unsigned(d) => *cur += d as f64,
                            CounterValue::Double(x) => *cur = x,
                            CounterValue::String(_) => continue,
                        }
                        let value = *cur;
                        let name = counter_names
                            .entry(index)
                            .or_insert_with(|| format!("counter {index}"));
                        other += 1;
                        tl.sink(|s| {
                            s.counter(&Counter {
                                pid: h.pid,
                                name,
                                time,
                                value,
                            })
                        })?;
                    }
                }
                EventKind::Jit {
                    code, size, name, ..
                } => {
                    let tid = b.header.thread_id;
                    let thread = threads.index(tid);
                    tl.declare(thread, || threads.info(tid))?;
                    other += 1;
                    tl.sink(|s| {
                        s.code(&CodeRegion {
                            thread: Some(thread),
                            pid: h.pid,
                            time,
                            address: code,
                            size,
                            name: &String::from_utf8_lossy(name),
                            event: CodeEvent::Load,
                            code_index: None,
                            tier: None,
                        })
                    })?;
                }
                _ => {}
            }
        }
    }
    tl.end_all()?;
    let mut summary = std::mem::take(&mut tl.summary);
    summary.other_events += other;
    drop(tl);
    cell.into_inner().finish()?;
    Ok(summary)
}
