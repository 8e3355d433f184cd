//! XRay traces → calls per thread: the one XRay driver.
//!
//! FDR buffers are grouped per thread (threads in order of first appearance, each thread's
//! buffers in time order, [`profkit_xray::Trace::thread_buffers`]) and replayed through the [`replay`](crate::replay): the jobs are the
//! buffers, thread after thread, decoded on every core. A buffer that uses the TSC before
//! setting it depends on the previous buffer's state; the stitcher decodes it again with that
//! state. Basic logs are cut into chunks of whole records ([`BasicLayout`]); a job is one thread's
//! records in one chunk, thread after thread, so nothing is materialised and memory stays
//! bounded by the chunks in flight.
//!
//! Enter and EnterArg are [`CallKind::Enter`]; custom and typed events become instants of the
//! stream. The stream's origin is the earliest first event of any thread.

use std::cell::RefCell;
use std::io;
use std::ops::ControlFlow;

use profkit_xray::{
    Args, BasicLayout, BufferItem, ChunkItem, Error, Event, EventKind, FileHeader, InstrMap,
    Symbolizer, ThreadKey, ThreadState, Trace, TraceType, CHUNK_RECORDS,
};

use super::{fold_replays, FeedSummary, FoldOptions, Folded, Timeline, ToNs};
use crate::clock::Clock;
use crate::events::{Arg, ArgValue, EventSink, Instant, ProcessInfo, TraceInfo};
use crate::func::{FuncId, FuncInfo, FunctionTable};
use crate::replay::pipeline::{self, Workers};
use crate::replay::{Fold, Mode, Piece, PieceBuilder};
use crate::span::{CallKind, MismatchPolicy};

/// A batch of jobs handed to a decoding thread is closed at this many bytes of records …
const BATCH_BYTES: usize = 256 << 10;
/// … or this many jobs.
const BATCH_JOBS: usize = 256;

/// When the pages of a basic log's chunks are released. A chunk is read by every thread with
/// records in it (jobs run thread after thread), so it is released when its last reader is done,
/// or, while more than [`HELD_CHUNKS`] chunks are held, the oldest first (a later reader faults
/// it in again from the page cache). Releasing each chunk after every reader cost a 100k-thread
/// log (6.4 MB, 3 chunks) 200k `madvise` calls of 2 MB and their refaults: 1.8 s of kernel time
/// for 0.5 s of work (#23 B4).
struct HeldChunks {
    /// Per chunk, the readers not yet done with it.
    readers: Vec<usize>,
    /// Chunks read and not released, oldest first.
    held: std::collections::VecDeque<usize>,
}

/// The most chunks (of [`CHUNK_RECORDS`] records: 2 MiB) a basic log keeps mapped.
const HELD_CHUNKS: usize = 32;

impl HeldChunks {
    fn new(layout: &BasicLayout) -> HeldChunks {
        HeldChunks {
            readers: layout.chunks.iter().map(|c| c.threads.len()).collect(),
            held: std::collections::VecDeque::new(),
        }
    }

    /// A reader of chunk `c` is done with it.
    fn done(&mut self, layout: &BasicLayout, c: usize, release: &(dyn Fn(u64, u64) + Sync)) {
        let drop_chunk = |c: usize| {
            if let Some(chunk) = layout.chunks.get(c) {
                release(chunk.start as u64, chunk.end as u64);
            }
        };
        let left = match self.readers.get_mut(c) {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n
            }
            None => return,
        };
        if left == 0 {
            self.held.retain(|&h| h != c);
            drop_chunk(c);
        } else if !self.held.contains(&c) {
            self.held.push_back(c);
            if self.held.len() > HELD_CHUNKS {
                if let Some(oldest) = self.held.pop_front() {
                    drop_chunk(oldest);
                }
            }
        }
    }
}

/// Calls and items of an ordered piece before it is handed on (bounds a piece's memory
/// whatever the buffer size).
const CHUNK: u64 = 1 << 15;

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
    add_object(&mut t, 0, map, symbolizer);
    t
}

/// Adds the functions of instrumented object `object` (0: the executable; a shared object
/// built with `-fxray-shared` gets the next id as the runtime registers it) to `t`, under the
/// ids the runtime writes for them: `object << 24 | id`.
pub fn add_object(
    t: &mut FunctionTable,
    object: u8,
    map: &InstrMap,
    symbolizer: Option<&Symbolizer>,
) {
    let base = u32::from(object) << 24;
    // Ids are 24 bits within an object.
    for (i, &addr) in map.functions.iter().enumerate().take((1 << 24) - 1) {
        let id = FuncId(base | (i as u32 + 1));
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
}

/// A thread's event that is not a call, kept in order with its calls.
#[derive(Clone, Debug)]
enum Other<'a> {
    Event(Event<'a>),
    Problem(Error),
    /// The arguments of the call that follows (streams only).
    Args(Args<'a>),
}

/// A job: one FDR buffer, or one thread's records in one chunk of a basic log.
#[derive(Clone, Copy, Debug)]
struct Job {
    thread: u32,
    /// FDR buffer index, or basic chunk index.
    buffer: usize,
    /// The thread's first buffer (it cannot depend on an earlier one).
    first: bool,
}

/// What a worker made of (part of) a job.
struct XPiece<'a, P> {
    job: Job,
    piece: Piece<P, Other<'a>>,
    /// Custom and typed events seen (Local mode does not keep them).
    other_events: u64,
    /// The job's last piece: the decoder's state at the buffer's end.
    end: Option<ThreadState>,
    /// The buffer depends on the state the previous one ended in: decode it again in order.
    redo: bool,
}

/// The decoded trace, ready to be replayed.
struct Plan<'t, 'a> {
    trace: &'t Trace<'a>,
    /// Per thread its key and buffers (FDR) or chunks (basic).
    threads: Vec<(ThreadKey, Vec<usize>)>,
    /// Basic: the log's chunks.
    basic: Option<BasicLayout>,
    mode: Mode,
    policy: MismatchPolicy,
}

impl<'t, 'a> Plan<'t, 'a> {
    fn new(
        trace: &'t Trace<'a>,
        mode: Mode,
        policy: MismatchPolicy,
        release: Option<&(dyn Fn(u64, u64) + Sync)>,
    ) -> Self {
        let basic = trace.header.trace_type == TraceType::BASIC;
        let (threads, basic) = if basic {
            let mut scanned = |s, e| {
                if let Some(r) = release {
                    r(s, e);
                }
            };
            let layout =
                BasicLayout::scan(trace.data(), &trace.header, CHUNK_RECORDS, &mut scanned);
            let mut threads: Vec<(ThreadKey, Vec<usize>)> = layout
                .threads
                .iter()
                .map(|(k, _)| (*k, Vec::new()))
                .collect();
            for (c, chunk) in layout.chunks.iter().enumerate() {
                for &t in &chunk.threads {
                    if let Some((_, chunks)) = threads.get_mut(t as usize) {
                        chunks.push(c);
                    }
                }
            }
            (threads, Some(layout))
        } else {
            (trace.thread_buffers(), None)
        };
        Plan {
            trace,
            threads,
            basic,
            mode,
            policy,
        }
    }

    /// About how many bytes of records `job` decodes (a basic chunk's share per thread).
    fn job_bytes(&self, job: Job) -> usize {
        match &self.basic {
            Some(layout) => layout.chunks.get(job.buffer).map_or(0, |c| {
                c.end.saturating_sub(c.start) / c.threads.len().max(1)
            }),
            None => self.trace.layout().buffers.get(job.buffer).map_or(0, |b| {
                usize::try_from(b.end.saturating_sub(b.start)).unwrap_or(usize::MAX)
            }),
        }
    }

    /// Jobs, thread after thread.
    fn jobs(&self) -> Vec<Job> {
        let mut jobs = Vec::new();
        for (t, (_, bufs)) in self.threads.iter().enumerate() {
            let thread = t as u32;
            for (i, &buffer) in bufs.iter().enumerate() {
                jobs.push(Job {
                    thread,
                    buffer,
                    first: i == 0,
                });
            }
        }
        jobs
    }

    /// The earliest first event of any thread (raw TSC).
    fn origin(&self) -> u64 {
        match &self.basic {
            Some(layout) => layout.threads.iter().map(|(_, tsc)| *tsc).min(),
            None => self
                .threads
                .iter()
                .filter_map(|(_, b)| {
                    let &i = b.first()?;
                    self.trace
                        .buffer_events(i, ThreadState::default())
                        .find_map(|r| r.ok())
                        .map(|e| e.tsc)
                })
                .min(),
        }
        .unwrap_or(0)
    }

    /// Decodes `job` (from `state`; the thread's carried state when the stitcher redoes it).
    fn decode<P: crate::span::SpanSink + Default>(
        &self,
        job: Job,
        state: ThreadState,
        probe: bool,
        emit: &mut dyn FnMut(XPiece<'a, P>),
    ) {
        let chunk = if self.mode == Mode::Ordered { CHUNK } else { 0 };
        let mut pb: PieceBuilder<P, Other<'a>> =
            PieceBuilder::new(self.mode, self.policy, job.thread);
        let mut other_events = 0u64;
        if let Some(layout) = &self.basic {
            // Function records only: a basic log has no custom or typed events.
            let key = self.threads.get(job.thread as usize).map(|t| t.0);
            if let (Some(c), Some(key)) = (layout.chunks.get(job.buffer), key) {
                BasicLayout::visit_calls(
                    self.trace.data(),
                    &self.trace.header,
                    c,
                    job.thread,
                    key,
                    |k, f, tsc, args| {
                        if let Some(k) = call_kind(k) {
                            if chunk > 0 && !args.is_empty() {
                                pb.other(Other::Args(args));
                            }
                            pb.call(k, FuncId(f), tsc);
                        }
                        if chunk > 0 && pb.len() >= chunk {
                            emit(XPiece {
                                job,
                                piece: pb.take(),
                                other_events: 0,
                                end: None,
                                redo: false,
                            });
                        }
                    },
                );
            }
            emit(XPiece {
                job,
                piece: pb.finish(),
                other_events,
                end: Some(ThreadState::default()),
                redo: false,
            });
            return;
        }
        let mut it = self.trace.buffer_events(job.buffer, state);
        if self.mode == Mode::Ordered {
            it = it.keep_args();
        }
        if probe && !job.first {
            // Does the buffer use the TSC before setting it? Then its times depend on the
            // previous buffer's state, which only the stitcher knows.
            let mut p = it.clone();
            loop {
                let mut hit = false;
                let item = p.visit_calls(&mut |_| {
                    hit = true;
                    ControlFlow::Break(())
                });
                if hit || item.is_none() {
                    break;
                }
            }
            if p.used_unknown_tsc() {
                emit(XPiece {
                    job,
                    piece: Piece::default(),
                    other_events: 0,
                    end: None,
                    redo: true,
                });
                return;
            }
        }
        loop {
            let mut full = false;
            let item = it.visit_calls(&mut |c| {
                if let Some(k) = call_kind(c.kind) {
                    pb.call(k, FuncId(c.func_id), c.tsc);
                }
                if chunk > 0 && pb.len() >= chunk {
                    full = true;
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            match item {
                Some(BufferItem::Event(ev)) if ev.kind == EventKind::EnterArg => {
                    // Only in streams (`keep_args`): the call, after its arguments.
                    pb.other(Other::Args(ev.args));
                    pb.call(CallKind::Enter, FuncId(ev.func_id), ev.tsc);
                }
                Some(BufferItem::Event(ev)) => {
                    other_events += 1;
                    if self.mode == Mode::Ordered {
                        pb.other(Other::Event(ev));
                    }
                }
                Some(BufferItem::Problem(e)) => pb.other(Other::Problem(e)),
                Some(BufferItem::Call(c)) => {
                    if let Some(k) = call_kind(c.kind) {
                        pb.call(k, FuncId(c.func_id), c.tsc);
                    }
                }
                None if full => emit(XPiece {
                    job,
                    piece: pb.take(),
                    other_events: std::mem::take(&mut other_events),
                    end: None,
                    redo: false,
                }),
                None => break,
            }
        }
        emit(XPiece {
            job,
            piece: pb.finish(),
            other_events,
            end: Some(it.state()),
            redo: false,
        });
    }

    /// Runs the jobs through the pipeline; `apply` gets each piece in order (a buffer that
    /// must be redone is decoded again, on this thread, with its thread's carried state).
    fn run<P, E>(
        &self,
        workers: Workers,
        release: Option<&(dyn Fn(u64, u64) + Sync)>,
        mut apply: impl FnMut(XPiece<'a, P>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        P: crate::span::SpanSink + Default + Send,
    {
        let jobs = self.jobs().into_iter();
        let mut carry: Vec<ThreadState> = vec![ThreadState::default(); self.threads.len()];
        let mut held = self.basic.as_ref().map(HeldChunks::new);
        let mut one = |p: XPiece<'a, P>, carry: &mut Vec<ThreadState>| -> Result<(), E> {
            let (job, end) = (p.job, p.end);
            apply(p)?;
            if let Some(st) = end {
                if let Some(c) = carry.get_mut(job.thread as usize) {
                    *c = st;
                }
                if let Some(r) = release {
                    match (&self.basic, held.as_mut()) {
                        (Some(layout), Some(held)) => held.done(layout, job.buffer, r),
                        _ => {
                            if let Some(b) = self.trace.layout().buffers.get(job.buffer) {
                                r(b.start, b.end);
                            }
                        }
                    }
                }
            }
            Ok(())
        };
        let mut apply_one = |p: XPiece<'a, P>| -> Result<(), E> {
            if !p.redo {
                return one(p, &mut carry);
            }
            let state = carry
                .get(p.job.thread as usize)
                .copied()
                .unwrap_or_default();
            let mut pieces = Vec::new();
            self.decode(p.job, state, false, &mut |q| pieces.push(q));
            for q in pieces {
                one(q, &mut carry)?;
            }
            Ok(())
        };
        // Small jobs go in batches, their pieces handed on together (a 100k-thread basic log
        // is 100k one-record jobs: a channel and hand-offs each, 458k futex calls and 0.4 s of
        // kernel time). A batch of several jobs holds at most BATCH_BYTES of records; a job
        // past that goes alone and its pieces one by one, as they are made.
        let mut jobs = jobs.peekable();
        let next_batch = move || {
            let (mut batch, mut bytes) = (Vec::new(), 0usize);
            while let Some(&job) = jobs.peek() {
                let b = self.job_bytes(job);
                if !batch.is_empty() && bytes.saturating_add(b) > BATCH_BYTES {
                    break;
                }
                jobs.next();
                batch.push(job);
                bytes = bytes.saturating_add(b);
                if batch.len() >= BATCH_JOBS {
                    break;
                }
            }
            (!batch.is_empty()).then_some(batch)
        };
        pipeline::run(
            workers,
            next_batch,
            || (),
            |(), batch: Vec<Job>, emit| {
                let alone = batch.len() == 1;
                let mut pieces = Vec::new();
                for job in batch {
                    self.decode(job, ThreadState::default(), true, &mut |p| {
                        if alone {
                            emit(vec![p]);
                        } else {
                            pieces.push(p);
                        }
                    });
                }
                if !pieces.is_empty() {
                    emit(pieces);
                }
            },
            |pieces: Vec<XPiece<'a, P>>| {
                for p in pieces {
                    apply_one(p)?;
                }
                Ok(())
            },
        )
        .map(|_| ())
    }

    /// Layout problems and the cut (FDR), or the basic decoder's.
    fn file_problems(&self, summary: &mut FeedSummary) {
        match &self.basic {
            Some(layout) => {
                summary
                    .problems
                    .extend(layout.problems.iter().map(|p| p.to_string()));
                summary.truncation = layout.truncation.clone();
            }
            None => summary.truncation = self.trace.truncation().cloned(),
        }
    }
}

fn note_problem(summary: &mut FeedSummary, p: &Error) {
    summary.problems.push(p.to_string());
}

/// Applies a fold's piece to its thread's replay, counting what is not a call in `summary`.
fn apply_piece<F: Fold>(
    replay: &mut crate::replay::ThreadReplay<F>,
    piece: Piece<F::Part, Other<'_>>,
    summary: &mut FeedSummary,
) {
    replay.apply(piece, |_, other| match other {
        Other::Problem(e) => note_problem(summary, &e),
        Other::Event(_) => summary.other_events += 1,
        Other::Args(_) => {}
    });
}

/// Runs `make`'s fold on every thread of `trace` (buffers on every core; see the module docs).
pub fn fold<F>(
    trace: &Trace<'_>,
    opts: &FoldOptions<'_>,
    make: impl Fn(ThreadKey) -> F,
) -> Folded<ThreadKey, F>
where
    F: Fold,
    F::Part: Send,
{
    if trace.header.trace_type == TraceType::BASIC {
        return fold_basic(trace, opts, make);
    }
    let plan = Plan::new(trace, opts.mode, opts.policy, opts.release);
    let mut summary = FeedSummary::default();
    let keys = || plan.threads.iter().map(|(k, _)| *k);
    let mut replays = fold_replays(keys(), opts.policy, make);
    let r: Result<(), ()> = plan.run(opts.workers, opts.release, |p: XPiece<'_, F::Part>| {
        summary.call_events += p.piece.calls;
        summary.other_events += p.other_events;
        if let Some(replay) = replays.get_mut(p.job.thread as usize) {
            apply_piece(replay, p.piece, &mut summary);
        }
        Ok(())
    });
    let _ = r;
    plan.file_problems(&mut summary);
    Folded::finish(keys(), replays, opts.close_unfinished, summary)
}

/// What a worker made of one chunk of a basic log: a piece per thread with records in it (in
/// order of first appearance there), and the records that are not calls.
struct ChunkPieces<P> {
    range: (usize, usize),
    pieces: Vec<(ThreadKey, Piece<P, Other<'static>>)>,
    problems: Vec<Error>,
}

/// [`fold`] of a basic log, in one pass: the jobs are chunks of the file
/// ([`BasicLayout::chunk_bounds`]); a worker splits its chunk's calls per thread, each into
/// a piece of its own; the pieces are applied in file order, so each thread's calls stay in
/// order and threads are numbered in order of first appearance. Nothing is materialised
/// beyond the chunks in flight, and each chunk's pages are released once applied.
fn fold_basic<F>(
    trace: &Trace<'_>,
    opts: &FoldOptions<'_>,
    make: impl Fn(ThreadKey) -> F,
) -> Folded<ThreadKey, F>
where
    F: Fold,
    F::Part: Send,
{
    let (data, header) = (trace.data(), &trace.header);
    let mut jobs = BasicLayout::chunk_bounds(data, header, CHUNK_RECORDS);
    let (mode, policy) = (opts.mode, opts.policy);
    let mut summary = FeedSummary {
        truncation: trace.truncation().cloned(),
        ..FeedSummary::default()
    };
    let mut keys: Vec<ThreadKey> = Vec::new();
    let mut index_of: std::collections::HashMap<ThreadKey, usize> = Default::default();
    let mut replays: Vec<crate::replay::ThreadReplay<F>> = Vec::new();
    let r: Result<_, ()> = pipeline::run(
        opts.workers,
        move || jobs.next(),
        || (),
        |(), (start, end), emit| {
            let mut builders: Vec<(ThreadKey, PieceBuilder<F::Part, Other<'static>>)> = Vec::new();
            // Where each thread's builder is: a chunk may hold thousands of threads.
            let mut at: std::collections::HashMap<ThreadKey, usize> = Default::default();
            let mut problems = Vec::new();
            let mut last = usize::MAX;
            BasicLayout::visit_chunk(data, header, start, end, |item| match item {
                ChunkItem::Call {
                    key,
                    kind,
                    func_id,
                    tsc,
                    ..
                } => {
                    if builders.get(last).is_none_or(|(k, _)| *k != key) {
                        last = *at.entry(key).or_insert_with(|| {
                            builders.push((key, PieceBuilder::new(mode, policy, 0)));
                            builders.len() - 1
                        });
                    }
                    if let (Some(k), Some((_, pb))) = (call_kind(kind), builders.get_mut(last)) {
                        pb.call(k, FuncId(func_id), tsc);
                    }
                }
                ChunkItem::Problem(e) => problems.push(e),
            });
            emit(ChunkPieces {
                range: (start, end),
                pieces: builders
                    .into_iter()
                    .map(|(k, pb)| (k, pb.finish()))
                    .collect(),
                problems,
            });
        },
        |c: ChunkPieces<F::Part>| {
            for (key, piece) in c.pieces {
                let t = *index_of.entry(key).or_insert_with(|| {
                    keys.push(key);
                    replays.push(crate::replay::ThreadReplay::new(
                        replays.len() as u32,
                        policy,
                        make(key),
                        false,
                    ));
                    replays.len() - 1
                });
                summary.call_events += piece.calls;
                if let Some(replay) = replays.get_mut(t) {
                    apply_piece(replay, piece, &mut summary);
                }
            }
            for e in &c.problems {
                note_problem(&mut summary, e);
            }
            if let Some(release) = opts.release {
                release(c.range.0 as u64, c.range.1 as u64);
            }
            Ok(())
        },
    );
    let _ = r;
    Folded::finish(keys.into_iter(), replays, opts.close_unfinished, summary)
}

/// Options of [`feed`].
#[derive(Clone, Copy, Default)]
pub struct FeedOptions<'a> {
    /// Decoding threads (default: one per core).
    pub workers: Option<Workers>,
    /// Told the byte range of each FDR buffer once it has been fed (for progress, and to
    /// release a mapped file's pages).
    pub release: Option<&'a (dyn Fn(u64, u64) + Sync)>,
}

/// Feeds `trace` to `sink`: threads one after another (each closed before the next begins),
/// custom and typed events as instants. `functions` names the function ids (see
/// [`function_table`]); `name` names the trace and its process (the program's file name is a
/// good choice).
pub fn feed(
    trace: &Trace<'_>,
    functions: &FunctionTable,
    name: &str,
    opts: &FeedOptions<'_>,
    sink: &mut dyn EventSink,
) -> io::Result<FeedSummary> {
    let clk = clock(&trace.header);
    let plan = Plan::new(trace, Mode::Ordered, MismatchPolicy::Unwind, opts.release);
    let origin_raw = plan.origin();
    sink.begin(&TraceInfo {
        format: "xray",
        functions,
        clock: clk,
        origin_ns: clk.to_ns(origin_raw),
        name,
        samples: None,
        origin_unix_ns: None,
    })?;
    let mut pids: Vec<u32> = plan.threads.iter().map(|(k, _)| k.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in &pids {
        let pname = if pids.len() == 1 {
            name.to_string()
        } else {
            format!("{name} (pid {pid})")
        };
        sink.process(&ProcessInfo {
            pid: *pid,
            name: &pname,
        })?;
    }
    let to_ns = ToNs {
        clock: clk,
        origin_raw,
    };
    let cell = RefCell::new(sink);
    let mut tl = Timeline::new(&cell, to_ns, MismatchPolicy::Unwind);
    let mut current: Option<u32> = None;
    let workers = opts.workers.unwrap_or_else(Workers::per_core);
    let threads = &plan.threads;
    plan.run(
        workers,
        opts.release,
        |p: XPiece<'_, ()>| -> io::Result<()> {
            let t = p.job.thread;
            if current.is_some_and(|c| c != t) {
                // Threads come one after another: the previous one is complete.
                if let Some(c) = current {
                    tl.end_thread(c)?;
                }
            }
            current = Some(t);
            tl.summary.call_events += p.piece.calls;
            tl.summary.other_events += p.other_events;
            let key = threads
                .get(t as usize)
                .map_or(ThreadKey { pid: 0, tid: 0 }, |k| k.0);
            let mut problems = Vec::new();
            let replay = tl.thread(t, || {
                let mut n = String::from("thread ");
                n.push_str(itoa::Buffer::new().format(key.tid));
                (key.pid, u64::from(key.tid), n)
            })?;
            replay.apply(p.piece, |r, other| match other {
                Other::Problem(e) => problems.push(e),
                Other::Args(args) => r.fold().args_of_next(args.iter()),
                Other::Event(ev) => {
                    let time = to_ns.ns(r.time(ev.tsc));
                    let thread = t;
                    r.fold().with(|s| instant(s, thread, time, &ev));
                }
            });
            replay.fold().result()?;
            for e in &problems {
                note_problem(&mut tl.summary, e);
            }
            Ok(())
        },
    )?;
    tl.end_all()?;
    let mut summary = std::mem::take(&mut tl.summary);
    plan.file_problems(&mut summary);
    drop(tl);
    cell.into_inner().finish()?;
    Ok(summary)
}

/// A custom or typed event as an instant.
fn instant(sink: &mut dyn EventSink, thread: u32, time: u64, ev: &Event<'_>) -> io::Result<()> {
    match ev.kind {
        EventKind::TypedEvent => {
            let args: [Arg<'_>; 2] = [
                ("type", ArgValue::U64(u64::from(ev.event_type))),
                ("data", ArgValue::Bytes(ev.data)),
            ];
            sink.instant(&Instant {
                thread,
                time,
                name: "typed event",
                category: "xray.typed",
                args: &args,
            })
        }
        _ => {
            let args: [Arg<'_>; 1] = [("data", ArgValue::Bytes(ev.data))];
            sink.instant(&Instant {
                thread,
                time,
                name: "custom event",
                category: "xray.custom",
                args: &args,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profkit_xray::BasicChunk;

    /// A chunk is released once, when its last reader is done; while more than
    /// [`HELD_CHUNKS`] are held, the oldest goes first.
    #[test]
    fn basic_chunks_are_released_after_their_last_reader() {
        let chunk = |i: usize, readers: u32| BasicChunk {
            start: i * 100,
            end: i * 100 + 100,
            threads: (0..readers).collect(),
            runs: Vec::new(),
        };
        let mut chunks = vec![chunk(0, 3), chunk(1, 1)];
        chunks.extend((2..HELD_CHUNKS + 3).map(|i| chunk(i, 2)));
        let layout = BasicLayout {
            chunks,
            ..BasicLayout::default()
        };
        let released = std::sync::Mutex::new(Vec::new());
        let release = |s: u64, e: u64| released.lock().unwrap().push((s, e));
        let mut held = HeldChunks::new(&layout);
        held.done(&layout, 0, &release);
        held.done(&layout, 0, &release);
        assert!(
            released.lock().unwrap().is_empty(),
            "chunk 0 has a reader left"
        );
        held.done(&layout, 1, &release);
        held.done(&layout, 0, &release);
        assert_eq!(*released.lock().unwrap(), [(100, 200), (0, 100)]);
        released.lock().unwrap().clear();
        // Chunks 2.. are read once of their two times: past HELD_CHUNKS held, the oldest goes.
        for c in 2..HELD_CHUNKS + 3 {
            held.done(&layout, c, &release);
        }
        assert_eq!(*released.lock().unwrap(), [(200, 300)]);
        // Its second reader faults it in again and, its last, releases it.
        held.done(&layout, 2, &release);
        assert_eq!(*released.lock().unwrap(), [(200, 300), (200, 300)]);
        // Chunk 3's last reader: released and no longer held.
        held.done(&layout, 3, &release);
        assert_eq!(released.lock().unwrap().len(), 3);
        assert!(!held.held.contains(&3));
    }
}
