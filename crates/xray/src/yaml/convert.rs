//! llvm-xray's YAML of a whole trace (`llvm-xray convert -f yaml`, sorted or not, with ids or
//! names): [`write_yaml`].
//!
//! # How it is fast
//! FDR traces take a streaming path. (1) A first parallel pass decodes every buffer once
//! (function records through [`BufferEvents::visit_calls`]) to check it and to note a
//! [`Checkpoint`] (position, decoder state, TSC, the id llvm prints on a custom event there)
//! every [`CHECKPOINT_EVERY`] events. (2) The output is cut into pieces of ~[`PIECE_EVENTS`]
//! events: TSC windows over all threads when sorting (threads merged by TSC, ties in thread
//! order: what llvm's stable sort of all events gives, since each thread's events are already in
//! TSC order), or runs of one thread in file order. Each piece is decoded from the nearest
//! checkpoints and formatted by a rayon worker into a reused buffer (fresh multi-MB buffers cost
//! a page fault per 4 KiB). (3) The calling thread writes the pieces in order. Lines go through
//! [`CachedFormatter`]: a typical line is one copy, one `itoa` and a constant tail.
//!
//! Traces the streaming path cannot prove it handles exactly — decoding problems, bytes skipped
//! between buffers, a buffer that depends on the one before it, or (sorted) a thread whose TSCs
//! go backwards — take the general path: decode everything, sort, write. Basic-mode logs stream
//! through [`super::basic`] (and fall back to the general path in the same cases).
//! Both paths write the same bytes (the tests and the fuzz harness compare them).

use std::collections::HashMap;
use std::io::{self, Write};

use rayon::prelude::*;

use super::trace::{write_event, write_footer, write_header, CachedFormatter, RecordFormatter};
use crate::error::{Error, Truncation};
use crate::read::events::{
    BufferEvents, BufferItem, Event, EventKind, ThreadKey, ThreadState, Trace,
};
use crate::read::fdr::Segment;

/// How [`write_yaml`] writes a trace.
#[derive(Clone, Copy)]
pub struct YamlOptions<'n> {
    /// Every event sorted by TSC, ties in file order (llvm-xray's default). Else each thread's
    /// events in file order, threads in order of first appearance (llvm's `--sort=false`,
    /// whose thread order is its hash map's).
    pub sort: bool,
    /// `--symbolize`: the name of a function id (for `function:`); `None` writes the id.
    /// Called once per function id and piece, from several threads.
    pub names: Option<&'n (dyn Fn(u32) -> String + Sync)>,
    /// Told the byte ranges of the input the writer is done with for now (a mapped input drops
    /// their pages; they are read again if needed). Basic-mode logs only.
    pub release: Option<&'n (dyn Fn(u64, u64) + Sync)>,
}

impl Default for YamlOptions<'_> {
    /// Sorted, with ids: `llvm-xray convert -f yaml`.
    fn default() -> Self {
        YamlOptions {
            sort: true,
            names: None,
            release: None,
        }
    }
}

impl core::fmt::Debug for YamlOptions<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("YamlOptions")
            .field("sort", &self.sort)
            .field("names", &self.names.map(|_| "fn"))
            .field("release", &self.release.map(|_| "fn"))
            .finish()
    }
}

/// What [`write_yaml`] wrote and skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct YamlOutcome {
    /// Record lines written.
    pub events: u64,
    /// Records that could not be decoded (skipped), in file order.
    pub problems: Vec<Error>,
    /// Where the file is cut, if it is (everything before the cut was written).
    pub truncation: Option<Truncation>,
}

/// Writes `trace` as llvm-xray's YAML (`llvm-xray convert -f yaml`): byte for byte what
/// llvm-xray 14 writes where llvm is right (see [`super`] for where it is not), with the
/// `function:` of each record from `opts.names` and custom and typed events carrying the
/// thread's previous function id as llvm does. Undecodable records are skipped and listed in
/// the outcome; a cut file is written up to the cut. The output is flushed.
pub fn write_yaml(
    trace: &Trace<'_>,
    opts: &YamlOptions<'_>,
    out: &mut dyn Write,
) -> io::Result<YamlOutcome> {
    if trace.header.is_fdr() {
        if let Some(plan) = plan_pieces(trace, opts.sort) {
            return write_streaming(trace, &plan, opts, out);
        }
    } else if let Some(written) = super::basic::write_basic(trace, opts, out, BASIC_PIECE_RECORDS) {
        return written;
    }
    write_general(trace, opts, out)
}

/// The `function:` value of `id`.
fn function_name(opts: &YamlOptions<'_>, id: u32) -> String {
    match opts.names {
        Some(names) => names(id),
        None => id.to_string(),
    }
}

/// The general path: decode the whole trace, sort, write.
pub(crate) fn write_general(
    trace: &Trace<'_>,
    opts: &YamlOptions<'_>,
    out: &mut dyn Write,
) -> io::Result<YamlOutcome> {
    let decoded = trace.decode();
    // llvm prints the previous function's id on custom and typed events.
    let mut prev: HashMap<(u32, u32), u32> = HashMap::new();
    let mut ids: Vec<u32> = Vec::with_capacity(decoded.event_count());
    for ev in decoded.events() {
        let key = (ev.pid, ev.tid);
        if matches!(ev.kind, EventKind::CustomEvent | EventKind::TypedEvent) {
            ids.push(prev.get(&key).copied().unwrap_or(0));
        } else {
            prev.insert(key, ev.func_id);
            ids.push(ev.func_id);
        }
    }
    let all: Vec<&Event<'_>> = decoded.events().collect();
    let mut order: Vec<usize> = (0..all.len()).collect();
    if opts.sort {
        order.sort_by_key(|&i| all.get(i).map_or(0, |e| e.tsc));
    }
    let mut name_cache: HashMap<u32, String> = HashMap::new();
    write_header(out, &trace.header)?;
    for i in order {
        let (Some(ev), Some(&id)) = (all.get(i), ids.get(i)) else {
            continue;
        };
        let name = name_cache
            .entry(id)
            .or_insert_with(|| function_name(opts, id));
        write_event(out, ev, id, name)?;
    }
    write_footer(out)?;
    out.flush()?;
    Ok(YamlOutcome {
        events: all.len() as u64,
        problems: decoded.problems,
        truncation: decoded.truncation,
    })
}

/// Records per piece of a streamed basic log: ~2.3 MB of YAML each, so that the pieces in
/// flight stay a few tens of MB.
const BASIC_PIECE_RECORDS: usize = 16 * 1024;

/// Events between two checkpoints of the streaming YAML writer.
const CHECKPOINT_EVERY: u64 = 256;
/// Events per output piece (one piece is formatted by one worker into one buffer); a TSC window
/// also holds at least 4 checkpoint intervals per thread, so that finding each thread's start
/// (decoding up to one interval per thread) stays a small part of the work.
const PIECE_EVENTS: u64 = 64 * 1024;

/// Where decoding can resume inside a buffer: the walk's position and state just before an
/// event, that event's TSC, and the function id llvm would print for a custom event there.
#[derive(Clone, Copy, Debug)]
struct Checkpoint {
    /// Index into the thread's buffer list.
    buf: usize,
    pos: u64,
    state: ThreadState,
    records: u64,
    tsc: u64,
    /// Number of the event in the thread's stream.
    ordinal: u64,
    /// Last function id before this event in the buffer (`None`: none yet).
    prev_local: Option<u32>,
    /// The same across the thread's buffers (0 when there is none), set after the scan.
    prev: u32,
}

/// What one FDR buffer looks like to the streaming YAML writer.
#[derive(Clone, Debug, Default)]
struct BufInfo {
    /// Decodes cleanly on its own: no problem, no event before the TSC is set, one thread.
    ok: bool,
    /// Thread of its events (`None`: no events).
    key: Option<ThreadKey>,
    first_tsc: u64,
    last_tsc: u64,
    monotonic: bool,
    events: u64,
    last_func: Option<u32>,
    checkpoints: Vec<Checkpoint>,
    /// Records of the buffer (its BufferExtents included).
    records: u64,
}

impl BufInfo {
    /// Notes the next event of the buffer; `Err` when it is on another thread than the first.
    #[inline]
    fn note(
        &mut self,
        key: ThreadKey,
        tsc: u64,
        func: Option<u32>,
        pending: &mut Option<Checkpoint>,
    ) -> std::result::Result<(), ()> {
        match self.key {
            None => {
                self.key = Some(key);
                self.first_tsc = tsc;
            }
            Some(k0) if k0 != key => return Err(()),
            Some(_) => {
                if tsc < self.last_tsc {
                    self.monotonic = false;
                }
            }
        }
        if let Some(mut c) = pending.take() {
            c.tsc = tsc;
            self.checkpoints.push(c);
        }
        if func.is_some() {
            self.last_func = func;
        }
        self.last_tsc = tsc;
        self.events += 1;
        Ok(())
    }
}

/// Decodes buffer `bi` once (function records through the fast path) to check it and to note
/// a checkpoint every [`CHECKPOINT_EVERY`] events.
fn scan_buffer(trace: &Trace<'_>, bi: usize) -> BufInfo {
    let mut info = BufInfo {
        ok: true,
        monotonic: true,
        ..BufInfo::default()
    };
    let mut it = trace.buffer_events(bi, ThreadState::default());
    loop {
        // Where the next event's walk starts: its TSC is filled in when it is decoded.
        let mut pending = Some(Checkpoint {
            buf: 0,
            pos: it.position(),
            state: it.state(),
            records: it.records(),
            tsc: 0,
            ordinal: info.events,
            prev_local: info.last_func,
            prev: 0,
        });
        let mut bad = false;
        let mut due = false;
        let item = it.visit_calls(&mut |c| {
            let key = ThreadKey {
                pid: c.pid,
                tid: c.tid,
            };
            if info
                .note(key, c.tsc, Some(c.func_id), &mut pending)
                .is_err()
            {
                bad = true;
                return std::ops::ControlFlow::Break(());
            }
            if info.events.is_multiple_of(CHECKPOINT_EVERY) {
                due = true;
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        });
        if bad {
            info.ok = false;
            break;
        }
        let (pid, tid, tsc, func) = match item {
            None if due => continue,
            None => break,
            Some(BufferItem::Problem(_)) => {
                info.ok = false;
                break;
            }
            Some(BufferItem::Event(ev)) => (ev.pid, ev.tid, ev.tsc, None),
            // (visit_calls hands every call to the closure above)
            Some(BufferItem::Call(c)) => (c.pid, c.tid, c.tsc, Some(c.func_id)),
        };
        if info
            .note(ThreadKey { pid, tid }, tsc, func, &mut pending)
            .is_err()
        {
            info.ok = false;
            break;
        }
    }
    if it.used_unknown_tsc() {
        info.ok = false;
    }
    info.records = it.records()
        + u64::from(
            trace
                .layout()
                .buffers
                .get(bi)
                .is_some_and(|b| b.extents_offset.is_some()),
        );
    info
}

/// One thread of the streaming writer: its buffers in file order and the checkpoints of all
/// of them, with ordinals and custom-event ids across buffers.
struct ThreadPlan {
    bufs: Vec<usize>,
    checkpoints: Vec<Checkpoint>,
    events: u64,
}

/// Decodes one thread's events from a checkpoint on, with the id llvm prints (custom and typed
/// events repeat the previous function's id).
struct Cursor<'t, 'a> {
    trace: &'t Trace<'a>,
    plan: &'t ThreadPlan,
    buf: usize,
    it: BufferEvents<'a>,
    prev_id: u32,
}

impl<'t, 'a> Cursor<'t, 'a> {
    fn at(trace: &'t Trace<'a>, plan: &'t ThreadPlan, cp: &Checkpoint) -> Self {
        let bi = plan.bufs.get(cp.buf).copied().unwrap_or(usize::MAX);
        Cursor {
            trace,
            plan,
            buf: cp.buf,
            it: trace.buffer_events_at(bi, cp.pos, cp.state, cp.records),
            prev_id: cp.prev,
        }
    }

    fn next_event(&mut self) -> Option<(Event<'a>, u32)> {
        loop {
            match self.it.next() {
                Some(Ok(ev)) => {
                    let id = if matches!(ev.kind, EventKind::CustomEvent | EventKind::TypedEvent) {
                        self.prev_id
                    } else {
                        self.prev_id = ev.func_id;
                        ev.func_id
                    };
                    return Some((ev, id));
                }
                Some(Err(_)) => continue,
                None => {
                    self.buf += 1;
                    let bi = *self.plan.bufs.get(self.buf)?;
                    self.it = self.trace.buffer_events(bi, ThreadState::default());
                }
            }
        }
    }
}

/// One piece of output: per thread, where to start and which events to emit.
#[derive(Clone, Debug)]
enum Piece {
    /// Sorted output: every thread's events with `lo <= tsc < hi` (`hi = None`: no bound),
    /// merged by TSC, ties in thread order.
    Window { lo: u64, hi: Option<u64> },
    /// File order: `count` events of thread `thread` from checkpoint `cp`.
    Run {
        thread: usize,
        cp: usize,
        count: u64,
    },
}

/// The `func-id: …, function: …, ` segments, by id.
#[derive(Default)]
struct Segments {
    dense: Vec<Option<Vec<u8>>>,
    sparse: HashMap<u32, Vec<u8>>,
}

impl Segments {
    fn get(&mut self, id: u32, make: impl FnOnce() -> Vec<u8>) -> &[u8] {
        let v = if id < (1 << 20) {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            self.dense
                .get_mut(i)
                .map(|slot| slot.get_or_insert_with(make))
        } else {
            Some(self.sparse.entry(id).or_insert_with(make))
        };
        v.map(|v| v.as_slice()).unwrap_or_default()
    }
}

/// Formats piece `piece` into `buf`.
fn format_piece(
    trace: &Trace<'_>,
    plans: &[ThreadPlan],
    piece: &Piece,
    opts: &YamlOptions<'_>,
    fmt: &RecordFormatter,
    buf: &mut Vec<u8>,
) {
    let mut segs = Segments::default();
    let mut lines = CachedFormatter::new(fmt);
    let mut emit = |buf: &mut Vec<u8>, ev: &Event<'_>, id: u32| {
        let seg = segs.get(id, || {
            RecordFormatter::func_segment(id, &function_name(opts, id))
        });
        lines.format(buf, ev, id, seg);
    };
    match *piece {
        Piece::Run { thread, cp, count } => {
            let Some(plan) = plans.get(thread) else {
                return;
            };
            let Some(c) = plan.checkpoints.get(cp) else {
                return;
            };
            let mut cur = Cursor::at(trace, plan, c);
            for _ in 0..count {
                let Some((ev, id)) = cur.next_event() else {
                    break;
                };
                emit(buf, &ev, id);
            }
        }
        Piece::Window { lo, hi } => {
            let below_hi = |t: u64| hi.is_none_or(|h| t < h);
            let mut heads: Vec<(Option<(Event<'_>, u32)>, Cursor<'_, '_>)> = Vec::new();
            for plan in plans {
                // The last checkpoint before `lo`: every event at `lo` or later comes after it.
                let n = plan.checkpoints.partition_point(|c| c.tsc < lo);
                let Some(c) = plan.checkpoints.get(n.saturating_sub(1)) else {
                    continue;
                };
                let mut cur = Cursor::at(trace, plan, c);
                let mut head = cur.next_event();
                while head.as_ref().is_some_and(|(ev, _)| ev.tsc < lo) {
                    head = cur.next_event();
                }
                if head.as_ref().is_some_and(|(ev, _)| below_hi(ev.tsc)) {
                    heads.push((head, cur));
                }
            }
            loop {
                let mut best: Option<(usize, u64)> = None;
                for (i, (h, _)) in heads.iter().enumerate() {
                    if let Some((ev, _)) = h {
                        if best.is_none_or(|(_, t)| ev.tsc < t) {
                            best = Some((i, ev.tsc));
                        }
                    }
                }
                let Some((i, _)) = best else { break };
                let Some((h, cur)) = heads.get_mut(i) else {
                    break;
                };
                let mut next = cur.next_event();
                if next.as_ref().is_some_and(|(ev, _)| !below_hi(ev.tsc)) {
                    next = None;
                }
                if let Some((ev, id)) = std::mem::replace(h, next) {
                    emit(buf, &ev, id);
                }
            }
        }
    }
}

/// Plans the pieces: per thread, its buffers and checkpoints; then TSC windows (sorted) or
/// runs of each thread in turn (unsorted). `None` when the trace needs the general path.
fn plan_pieces(trace: &Trace<'_>, sort: bool) -> Option<Plan> {
    if trace
        .layout()
        .segments
        .iter()
        .any(|s| !matches!(s, Segment::Buffer(_)))
    {
        return None;
    }
    let n = trace.layout().buffers.len();
    let mut infos: Vec<BufInfo> = (0..n)
        .into_par_iter()
        .map(|bi| scan_buffer(trace, bi))
        .collect();
    if infos.iter().any(|i| !i.ok) {
        return None;
    }
    let records = infos.iter().map(|i| i.records).sum();
    // Threads in order of their first event in the file.
    let mut threads: Vec<(usize, ThreadPlan)> = Vec::new();
    for (key, mut bufs) in trace.thread_buffers() {
        // File order, as llvm-xray reads a thread's blocks (and as the general path decodes
        // them): unsorted output lists them so, and the id llvm prints on a custom event is the
        // function before it in that order. `thread_buffers` gives time order instead (for a
        // wrapped flight recorder); such a thread is not monotonic in file order, so a sorted
        // conversion of it takes the general path.
        bufs.sort_unstable();
        let mut first: Option<usize> = None;
        let mut last_tsc: Option<u64> = None;
        let mut plan = ThreadPlan {
            bufs: Vec::new(),
            checkpoints: Vec::new(),
            events: 0,
        };
        let mut carry = 0u32;
        for &bi in &bufs {
            let info = infos.get_mut(bi)?;
            let Some(k) = info.key else { continue };
            if k != key {
                return None;
            }
            first = Some(first.map_or(bi, |f| f.min(bi)));
            if sort {
                if !info.monotonic || last_tsc.is_some_and(|t| t > info.first_tsc) {
                    return None;
                }
                last_tsc = Some(info.last_tsc);
            }
            let index = plan.bufs.len();
            plan.bufs.push(bi);
            for mut c in info.checkpoints.drain(..) {
                c.buf = index;
                c.ordinal += plan.events;
                c.prev = c.prev_local.unwrap_or(carry);
                plan.checkpoints.push(c);
            }
            carry = info.last_func.unwrap_or(carry);
            plan.events += info.events;
        }
        if let Some(f) = first {
            threads.push((f, plan));
        }
    }
    threads.sort_by_key(|(f, _)| *f);
    let plans: Vec<ThreadPlan> = threads.into_iter().map(|(_, p)| p).collect();
    let mut pieces = Vec::new();
    let per_piece = (PIECE_EVENTS / CHECKPOINT_EVERY).max(1) as usize;
    if sort {
        let per_piece = per_piece.max(plans.len().saturating_mul(4));
        let mut cuts: Vec<u64> = plans
            .iter()
            .flat_map(|p| p.checkpoints.iter().map(|c| c.tsc))
            .collect();
        cuts.sort_unstable();
        let mut bounds: Vec<u64> = cuts.iter().step_by(per_piece).skip(1).copied().collect();
        bounds.dedup();
        let mut lo = 0u64;
        for b in bounds {
            if b > lo {
                pieces.push(Piece::Window { lo, hi: Some(b) });
                lo = b;
            }
        }
        pieces.push(Piece::Window { lo, hi: None });
    } else {
        for (t, plan) in plans.iter().enumerate() {
            let mut i = 0;
            while let Some(c) = plan.checkpoints.get(i) {
                let j = i + per_piece;
                let end = plan.checkpoints.get(j).map_or(plan.events, |e| e.ordinal);
                pieces.push(Piece::Run {
                    thread: t,
                    cp: i,
                    count: end.saturating_sub(c.ordinal),
                });
                i = j;
            }
        }
    }
    Some(Plan {
        plans,
        pieces,
        records,
    })
}

/// What the streaming path writes: per thread its buffers and checkpoints, and the pieces.
struct Plan {
    plans: Vec<ThreadPlan>,
    pieces: Vec<Piece>,
    /// Records in the file (BufferExtents included).
    records: u64,
}

/// The streaming path (see the module docs): pieces formatted in parallel, written in order by
/// the calling thread.
fn write_streaming(
    trace: &Trace<'_>,
    plan: &Plan,
    opts: &YamlOptions<'_>,
    out: &mut dyn Write,
) -> io::Result<YamlOutcome> {
    write_header(out, &trace.header)?;
    let fmt = RecordFormatter::new();
    let plans = &plan.plans;
    write_in_order(
        &plan.pieces,
        |piece, buf| format_piece(trace, plans, piece, opts, &fmt, buf),
        out,
    )?;
    write_footer(out)?;
    out.flush()?;
    Ok(YamlOutcome {
        events: plan.plans.iter().map(|p| p.events).sum(),
        problems: Vec::new(),
        truncation: trace.truncation().cloned().map(|mut t| {
            t.record = Some(plan.records);
            t
        }),
    })
}

/// Formats `pieces` on rayon's workers, a group at a time, into buffers the calling thread
/// writes to `out` in order while the next group is formatted. Written buffers come back to
/// be reused: fresh multi-MB allocations would cost a page fault per 4 KiB of output.
pub(crate) fn write_in_order<P: Sync>(
    pieces: &[P],
    format: impl Fn(&P, &mut Vec<u8>) + Sync,
    out: &mut dyn Write,
) -> io::Result<()> {
    let group = rayon::current_num_threads().max(1) * 2;
    // One worker (a pool that could not start threads, B5): format and write here, in order.
    // A second thread would also hand its parallel loop to a pool whose only worker may be
    // this thread, blocked below.
    let sequential = |out: &mut dyn Write| -> io::Result<()> {
        let mut buf = Vec::new();
        for piece in pieces {
            buf.clear();
            format(piece, &mut buf);
            out.write_all(&buf)?;
        }
        Ok(())
    };
    if group <= 2 {
        return sequential(out);
    }
    let mut write_err: Option<io::Error> = None;
    let mut spawned = true;
    std::thread::scope(|sc| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(group * 2);
        let (pool_tx, pool_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let format = &format;
        let started = std::thread::Builder::new().spawn_scoped(sc, move || {
            for chunk in pieces.chunks(group) {
                let mut texts: Vec<Vec<u8>> = chunk
                    .iter()
                    .map(|_| pool_rx.try_recv().unwrap_or_default())
                    .collect();
                chunk
                    .par_iter()
                    .zip(texts.par_iter_mut())
                    .for_each(|(piece, buf)| {
                        buf.clear();
                        format(piece, buf);
                    });
                for t in texts {
                    if tx.send(t).is_err() {
                        return;
                    }
                }
            }
        });
        if started.is_err() {
            spawned = false;
            return;
        }
        for buf in rx {
            if let Err(e) = out.write_all(&buf) {
                write_err = Some(e);
                break;
            }
            let _ = pool_tx.send(buf);
        }
    });
    if !spawned {
        return sequential(out);
    }
    match write_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::header::FileHeader;
    use crate::write::{FdrTraceWriter, OwnedEvent};

    #[test]
    fn clean_and_cut_multi_buffer_traces_stream() {
        let mut h = FileHeader::fdr(5);
        h.buffer_size = 256;
        let mut w = FdrTraceWriter::new(h);
        for t in 0..3u64 {
            let evs: Vec<OwnedEvent> = (0..200u64)
                .map(|i| {
                    let kind = if i % 2 == 0 {
                        EventKind::Enter
                    } else {
                        EventKind::Exit
                    };
                    OwnedEvent::function(kind, 1, 10 * i + t)
                })
                .collect();
            w.thread(1, 10 + t as u32, &evs).unwrap();
        }
        let data = w.finish();
        let trace = Trace::parse(&data).unwrap();
        assert!(trace.layout().buffers.len() > 6);
        for sort in [true, false] {
            let plan = plan_pieces(&trace, sort).unwrap();
            assert_eq!(plan.plans.len(), 3);
            assert_eq!(plan.records, trace.decode().records);
        }
        // A cut inside the last buffer: still streamed, up to the cut.
        let cut = Trace::parse(&data[..data.len() - 3]).unwrap();
        assert!(cut.truncation().is_some());
        assert!(plan_pieces(&cut, true).is_some());
    }
}
