//! llvm-xray's YAML of a basic-mode log, streamed: [`write_basic`].
//!
//! A basic log holds each thread's records in order, but the threads' buffers interleave in
//! the order the runtime flushed them. The general path decodes the whole log into per-thread
//! lists (threads in order of first appearance) and, sorting, orders every event by TSC with
//! a stable sort. This path writes the same bytes with memory bounded by a chunk per thread:
//!
//! 1. one pass over the chunks of [`BasicLayout::chunk_bounds`] notes, per thread, the chunks
//!    it has records in and whether its TSCs never go backwards;
//! 2. unsorted, each thread's chunks are read again in turn and its records written;
//!    sorted, the threads are merged by TSC (ties: the thread that appeared first, then file
//!    order — what the stable sort of the per-thread lists gives when every thread's TSCs
//!    ascend), each thread reading its next chunk when it runs out.
//!
//! Logs with undecodable records, or (sorted) a thread whose TSCs go backwards, return `None`
//! and take the general path.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::{self, Write};

use super::convert::{write_in_order, YamlOptions, YamlOutcome};
use super::trace::{write_footer, write_header, CachedFormatter, RecordFormatter};
#[cfg(doc)]
use crate::read::basic_layout::CHUNK_RECORDS;
use crate::read::basic_layout::{BasicLayout, ChunkItem};
use crate::read::events::{Event, ThreadKey, Trace};

/// Output bytes gathered before a `write`.
const FLUSH_AT: usize = 1 << 20;

/// One thread of the log: its runs of records (byte ranges, none across a chunk's end), so
/// that reading every thread reads each record once however many threads a chunk holds.
struct Thread {
    key: ThreadKey,
    chunks: Vec<(usize, usize)>,
    monotonic: bool,
    last_tsc: u64,
}

/// Writes the basic log `trace` as [`write_yaml`](super::write_yaml) does, streaming, in
/// chunks of `chunk_records` records ([`CHUNK_RECORDS`] but in tests); `None` when the log
/// needs the general path (see the [module docs](self)).
pub(crate) fn write_basic(
    trace: &Trace<'_>,
    opts: &YamlOptions<'_>,
    out: &mut dyn Write,
    chunk_records: usize,
) -> Option<io::Result<YamlOutcome>> {
    let (data, header) = (trace.data(), &trace.header);
    if header.is_fdr() {
        return None;
    }
    let mut threads: Vec<Thread> = Vec::new();
    let mut index_of: HashMap<ThreadKey, usize> = HashMap::new();
    let mut events = 0u64;
    let mut clean = true;
    // The last record's thread, to skip the map while a run of one thread lasts.
    let mut last: Option<(ThreadKey, usize)> = None;
    for (start, end) in BasicLayout::chunk_bounds(data, header, chunk_records) {
        BasicLayout::visit_chunk(data, header, start, end, |item| match item {
            ChunkItem::Call {
                key,
                tsc,
                offset,
                ref args,
                ..
            } => {
                events += 1;
                let at = offset as usize;
                let item_end = at + crate::raw::BASIC_RECORD_SIZE + args.byte_len();
                let same = matches!(last, Some((k, _)) if k == key);
                let i = match last {
                    Some((k, i)) if k == key => i,
                    _ => *index_of.entry(key).or_insert_with(|| {
                        threads.push(Thread {
                            key,
                            chunks: Vec::new(),
                            monotonic: true,
                            last_tsc: tsc,
                        });
                        threads.len() - 1
                    }),
                };
                last = Some((key, i));
                if let Some(t) = threads.get_mut(i) {
                    if tsc < t.last_tsc {
                        t.monotonic = false;
                    }
                    t.last_tsc = tsc;
                    match t.chunks.last_mut() {
                        Some(run) if same && run.0 >= start => run.1 = item_end,
                        _ => t.chunks.push((at, item_end)),
                    }
                }
            }
            ChunkItem::Problem(_) => clean = false,
        });
        if !clean {
            return None;
        }
        if let Some(release) = opts.release {
            release(start as u64, end as u64);
        }
    }
    if opts.sort && threads.iter().any(|t| !t.monotonic) {
        return None;
    }
    let fmt = RecordFormatter::new();
    let mut w = Writer {
        trace,
        opts,
        cache: CachedFormatter::new(&fmt),
        segments: Segments::default(),
        buf: Vec::with_capacity(FLUSH_AT + 4096),
    };
    let written = (|| {
        write_header(out, &trace.header)?;
        if opts.sort && threads.len() > 1 {
            w.merged(&threads, out)?;
        } else {
            // Each thread's records in file order, thread after thread: every (thread, chunk)
            // is a piece of its own, formatted in parallel.
            let pieces: Vec<(ThreadKey, (usize, usize))> = threads
                .iter()
                .flat_map(|t| t.chunks.iter().map(|&c| (t.key, c)))
                .collect();
            write_in_order(
                &pieces,
                |&(key, chunk), buf| format_piece(trace, opts, &fmt, key, chunk, buf),
                out,
            )?;
        }
        out.write_all(&w.buf)?;
        write_footer(out)?;
        out.flush()
    })();
    Some(written.map(|()| YamlOutcome {
        events,
        problems: Vec::new(),
        truncation: trace.truncation().cloned(),
    }))
}

/// A thread's records, read a chunk at a time.
struct Cursor<'t, 'a> {
    thread: &'t Thread,
    next_chunk: usize,
    pending: VecDeque<Event<'a>>,
}

impl<'t, 'a> Cursor<'t, 'a> {
    fn new(thread: &'t Thread) -> Self {
        Cursor {
            thread,
            next_chunk: 0,
            pending: VecDeque::new(),
        }
    }

    fn next(
        &mut self,
        trace: &Trace<'a>,
        release: Option<&(dyn Fn(u64, u64) + Sync)>,
    ) -> Option<Event<'a>> {
        while self.pending.is_empty() {
            let &(start, end) = self.thread.chunks.get(self.next_chunk)?;
            self.next_chunk += 1;
            let want = self.thread.key;
            let pending = &mut self.pending;
            BasicLayout::visit_chunk(trace.data(), &trace.header, start, end, |item| {
                if let Some(ev) = event_of(item, want) {
                    pending.push_back(ev);
                }
            });
            // Its events are copied out (arguments stay views: their pages come back if read).
            if let Some(release) = release {
                release(start as u64, end as u64);
            }
        }
        self.pending.pop_front()
    }
}

/// Formats record lines into a buffer written out every [`FLUSH_AT`] bytes.
struct Writer<'w, 'a, 'n> {
    trace: &'w Trace<'a>,
    opts: &'w YamlOptions<'n>,
    cache: CachedFormatter<'w>,
    segments: Segments,
    buf: Vec<u8>,
}

impl Writer<'_, '_, '_> {
    fn event(&mut self, ev: &Event<'_>, out: &mut dyn Write) -> io::Result<()> {
        let segment = self.segments.get(ev.func_id, self.opts);
        self.cache.format(&mut self.buf, ev, ev.func_id, segment);
        if self.buf.len() >= FLUSH_AT {
            out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Every thread's records merged by TSC; ties go to the thread that appeared first.
    fn merged(&mut self, threads: &[Thread], out: &mut dyn Write) -> io::Result<()> {
        let (trace, release) = (self.trace, self.opts.release);
        let mut cursors: Vec<Cursor<'_, '_>> = threads.iter().map(Cursor::new).collect();
        let mut heads: Vec<Option<Event<'_>>> =
            cursors.iter_mut().map(|c| c.next(trace, release)).collect();
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.as_ref().map(|e| Reverse((e.tsc, i))))
            .collect();
        while let Some(Reverse((_, i))) = heap.pop() {
            let (Some(head), Some(cursor)) = (heads.get_mut(i), cursors.get_mut(i)) else {
                continue;
            };
            let Some(ev) = head.take() else { continue };
            self.event(&ev, out)?;
            *head = cursor.next(trace, release);
            if let Some(e) = head {
                heap.push(Reverse((e.tsc, i)));
            }
        }
        Ok(())
    }
}

/// Formats the records of thread `key` in the chunk `start..end` into `buf`.
fn format_piece(
    trace: &Trace<'_>,
    opts: &YamlOptions<'_>,
    fmt: &RecordFormatter,
    key: ThreadKey,
    (start, end): (usize, usize),
    buf: &mut Vec<u8>,
) {
    let mut cache = CachedFormatter::new(fmt);
    let mut segments = Segments::default();
    BasicLayout::visit_chunk(trace.data(), &trace.header, start, end, |item| {
        if let Some(ev) = event_of(item, key) {
            let segment = segments.get(ev.func_id, opts);
            cache.format(buf, &ev, ev.func_id, segment);
        }
    });
    if let Some(release) = opts.release {
        release(start as u64, end as u64);
    }
}

/// The `func-id: …, function: …, ` part of each function id met, made once: ids below
/// [`Segments::DIRECT`] by index, the rest in a map.
#[derive(Default)]
struct Segments {
    direct: Vec<Option<Vec<u8>>>,
    other: HashMap<u32, Vec<u8>>,
}

impl Segments {
    const DIRECT: u32 = 1 << 16;

    fn get(&mut self, id: u32, opts: &YamlOptions<'_>) -> &[u8] {
        let make = || {
            let name = match opts.names {
                Some(names) => names(id),
                None => id.to_string(),
            };
            RecordFormatter::func_segment(id, &name)
        };
        if id < Self::DIRECT {
            let i = id as usize;
            if self.direct.len() <= i {
                self.direct.resize(i + 1, None);
            }
            match self.direct.get_mut(i) {
                Some(slot) => slot.get_or_insert_with(make),
                None => self.other.entry(id).or_insert_with(make),
            }
        } else {
            self.other.entry(id).or_insert_with(make)
        }
    }
}

/// The event of a call of thread `want` (`None` for other threads and for problems).
fn event_of(item: ChunkItem<'_>, want: ThreadKey) -> Option<Event<'_>> {
    let ChunkItem::Call {
        key,
        kind,
        func_id,
        tsc,
        cpu,
        offset,
        args,
    } = item
    else {
        return None;
    };
    (key == want).then_some(Event {
        offset,
        tid: key.tid,
        pid: key.pid,
        cpu,
        tsc,
        kind,
        func_id,
        args,
        event_type: 0,
        data: &[],
    })
}
