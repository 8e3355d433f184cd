//! A basic-mode log cut into chunks, for analyses that stream it on every core.
//!
//! A basic log is one run of 32-byte records whose threads are interleaved (the runtime writes
//! each thread's buffer when it fills). [`BasicLayout::scan`] walks the records once, reading
//! only their type and thread, and cuts them into chunks of about `chunk_records` records
//! (never between a function record and its arg payloads). It keeps per chunk the threads
//! that have records in it, per thread its first TSC, and the records that are not valid
//! function records or arg payloads (the problems [`Trace::decode`](crate::Trace::decode)
//! reports). [`BasicLayout::visit_calls`] then decodes one thread's function records of one
//! chunk without materialising anything: memory stays bounded by the chunk, whatever the file.

use crate::error::{Error, ErrorExt, Truncation};
use crate::raw::{bytes_at, field, BasicRecordType, FunctionKind, BASIC_RECORD_SIZE, HEADER_SIZE};
use crate::read::basic::basic_truncation;
use crate::read::events::{Args, EventKind, ThreadKey};
use crate::read::header::FileHeader;

/// Records at which a chunk is cut by default (2 MiB).
pub const CHUNK_RECORDS: usize = 1 << 16;

/// A run of whole records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BasicChunk {
    /// Byte offset of its first record.
    pub start: usize,
    /// Byte offset after its last record.
    pub end: usize,
    /// Indices into [`BasicLayout::threads`] of the threads with function records in it, in
    /// order of first appearance in the chunk.
    pub threads: Vec<u32>,
    /// Where each thread's records are: `(thread, first record, end record)` (record indices
    /// from `start`), a run per stretch of one thread's calls, sorted by thread. A thread's
    /// calls are decoded from its runs only, so decoding every thread of a chunk reads each
    /// record once however many threads it holds (real basic logs have a run per flushed
    /// per-thread buffer; a file that alternates threads at every record has a run each).
    pub runs: Vec<(u32, u32, u32)>,
}

/// The chunks and threads of a basic log. See the [module docs](self).
#[derive(Clone, Debug, Default)]
pub struct BasicLayout {
    /// Threads in order of first appearance, with the TSC of their first function record.
    pub threads: Vec<(ThreadKey, u64)>,
    /// Chunks in file order.
    pub chunks: Vec<BasicChunk>,
    /// Records that are neither function records of a valid kind nor arg payloads following
    /// their function record, with their record index.
    pub problems: Vec<Error>,
    /// Complete records.
    pub records: u64,
    /// Where the file is cut, if it ends inside a record.
    pub truncation: Option<Truncation>,
}

/// The chunks of [`BasicLayout::chunk_bounds`], in file order.
#[derive(Clone, Debug)]
pub struct ChunkBounds<'a> {
    data: &'a [u8],
    endian: crate::raw::Endian,
    next: usize,
    end: usize,
    step: usize,
}

impl Iterator for ChunkBounds<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let start = self.next;
        if start >= self.end {
            return None;
        }
        let (data, e) = (self.data, self.endian);
        let is_payload = |pos: usize| {
            bytes_at::<2>(data, pos)
                .is_some_and(|t| BasicRecordType(e.u16(t)) == BasicRecordType::ARG_PAYLOAD)
        };
        let mut cut = start.saturating_add(self.step).min(self.end);
        while cut < self.end && is_payload(cut) {
            cut += BASIC_RECORD_SIZE;
        }
        self.next = cut;
        Some((start, cut))
    }
}

/// One record of a chunk, as [`BasicLayout::visit_chunk`] hands it on.
#[derive(Clone, Debug)]
pub enum ChunkItem<'a> {
    /// A function record of a valid kind (with arg payloads of its own: [`EventKind::EnterArg`]).
    Call {
        /// Its thread.
        key: ThreadKey,
        /// Enter, exit, tail exit, enter with args.
        kind: EventKind,
        /// Function id.
        func_id: u32,
        /// Absolute TSC.
        tsc: u64,
        /// CPU.
        cpu: u16,
        /// Absolute byte offset of the function record.
        offset: u64,
        /// The arguments of the arg payloads that follow it.
        args: Args<'a>,
    },
    /// A record that is not a valid function record or a payload of the one before it.
    Problem(Error),
}

impl BasicLayout {
    /// Byte ranges of chunks of about `chunk_records` records covering every complete record
    /// of `data`, none starting with an arg payload (a payload's function record is in its
    /// chunk, so each chunk decodes on its own). Reads one record per chunk, when the chunk is
    /// asked for: a mapped file's pages are touched as the reader gets there, not all at the
    /// start (the kernel may map a large folio of the file around each record read).
    pub fn chunk_bounds<'a>(
        data: &'a [u8],
        header: &FileHeader,
        chunk_records: usize,
    ) -> ChunkBounds<'a> {
        let body = data.len().saturating_sub(HEADER_SIZE);
        ChunkBounds {
            data,
            endian: header.endian,
            next: HEADER_SIZE,
            end: HEADER_SIZE + body - body % BASIC_RECORD_SIZE,
            step: chunk_records.max(1).saturating_mul(BASIC_RECORD_SIZE),
        }
    }

    /// Walks the records of `data` once; `scanned(start, end)` is told each chunk's byte
    /// range once it has been read (a mapped input can drop those pages).
    pub fn scan(
        data: &[u8],
        header: &FileHeader,
        chunk_records: usize,
        scanned: &mut dyn FnMut(u64, u64),
    ) -> BasicLayout {
        let mut out = BasicLayout {
            truncation: basic_truncation(data.len()),
            ..BasicLayout::default()
        };
        let mut index_of = std::collections::HashMap::<ThreadKey, u32>::new();
        // By thread: the last chunk (+1) it was seen in, so a chunk lists it once.
        let mut seen_in: Vec<usize> = Vec::new();
        for (n, (start, end)) in Self::chunk_bounds(data, header, chunk_records).enumerate() {
            let mut chunk = BasicChunk {
                start,
                end,
                threads: Vec::new(),
                runs: Vec::new(),
            };
            // The last record's thread, to skip the map while a run of one thread lasts.
            let mut last: Option<(ThreadKey, u32)> = None;
            let rec = |off: u64| ((off as usize).saturating_sub(start) / BASIC_RECORD_SIZE) as u32;
            Self::visit_chunk(data, header, start, end, |item| match item {
                ChunkItem::Call {
                    key,
                    tsc,
                    offset,
                    ref args,
                    ..
                } => {
                    let item_end = rec(offset) + 1 + (args.byte_len() / BASIC_RECORD_SIZE) as u32;
                    if let Some((_, t)) = last.filter(|(k, _)| *k == key) {
                        if let Some(run) = chunk.runs.last_mut().filter(|r| r.0 == t) {
                            run.2 = item_end;
                        }
                        return;
                    }
                    let next = out.threads.len() as u32;
                    let t = *index_of.entry(key).or_insert(next);
                    if t == next {
                        out.threads.push((key, tsc));
                        seen_in.push(0);
                    }
                    if let Some(s) = seen_in.get_mut(t as usize).filter(|s| **s != n + 1) {
                        *s = n + 1;
                        chunk.threads.push(t);
                    }
                    chunk.runs.push((t, rec(offset), item_end));
                    last = Some((key, t));
                }
                ChunkItem::Problem(e) => out.problems.push(e),
            });
            chunk.runs.sort_by_key(|r| r.0);
            scanned(start as u64, end as u64);
            out.chunks.push(chunk);
        }
        out.records = out
            .chunks
            .last()
            .map_or(0, |c| ((c.end - HEADER_SIZE) / BASIC_RECORD_SIZE) as u64);
        out
    }

    /// Hands `f` every record of the chunk `start..end` of `data` (a range from
    /// [`BasicLayout::chunk_bounds`]) in file order: valid function records as calls, the
    /// rest as problems with their offset and record index. Arg payloads of the function
    /// record before them are not handed on.
    pub fn visit_chunk<'a>(
        data: &'a [u8],
        header: &FileHeader,
        start: usize,
        end: usize,
        mut f: impl FnMut(ChunkItem<'a>),
    ) {
        let e = header.endian;
        let v3 = header.version >= 3;
        let Some(bytes) = data.get(start..end) else {
            return;
        };
        let pid_of = |v: u32| if v3 { v } else { 0 };
        let (records, _) = bytes.as_chunks::<BASIC_RECORD_SIZE>();
        let is_payload = |rec: &[u8; BASIC_RECORD_SIZE]| {
            BasicRecordType(e.u16(field(rec, 0))) == BasicRecordType::ARG_PAYLOAD
        };
        let mut i = 0;
        while let Some(rec) = records.get(i) {
            let pos = start + i * BASIC_RECORD_SIZE;
            let index = ((pos - HEADER_SIZE) / BASIC_RECORD_SIZE) as u64;
            i += 1;
            let record_type = BasicRecordType(e.u16(field(rec, 0)));
            if record_type == BasicRecordType::ARG_PAYLOAD {
                // Payloads right after their function record were taken with it.
                f(ChunkItem::Problem(
                    crate::error::invalid(
                        pos,
                        "an arg payload right after a function record with the same function id, tid (and pid)",
                        "a non-matching arg payload",
                    )
                    .with_record(index),
                ));
                continue;
            }
            if record_type != BasicRecordType::FUNCTION {
                f(ChunkItem::Problem(
                    crate::error::invalid(
                        pos,
                        "basic record type 0 or 1",
                        format!("type {}", record_type.0),
                    )
                    .with_record(index),
                ));
                continue;
            }
            let mut kind = match rec[3] {
                0 => EventKind::Enter,
                1 => EventKind::Exit,
                2 => EventKind::TailExit,
                3 => EventKind::EnterArg,
                k => {
                    if let Err(err) = EventKind::of_function(FunctionKind(k), pos) {
                        f(ChunkItem::Problem(err.with_record(index)));
                    }
                    continue;
                }
            };
            let key = ThreadKey {
                pid: pid_of(e.u32(field(rec, 20))),
                tid: e.u32(field(rec, 16)),
            };
            let func_id = e.u32(field(rec, 4));
            // The arg payloads that follow, for the same function and thread.
            let mut args = Args::default();
            if records.get(i).is_some_and(is_payload) {
                let first = i;
                while let Some(p) = records.get(i).filter(|p| is_payload(p)) {
                    let owner = ThreadKey {
                        pid: pid_of(e.u32(field(p, 12))),
                        tid: e.u32(field(p, 8)),
                    };
                    if e.u32(field(p, 4)) != func_id || owner != key {
                        break;
                    }
                    i += 1;
                }
                if i > first {
                    kind = EventKind::EnterArg;
                    let (a, b) = (
                        start + first * BASIC_RECORD_SIZE,
                        start + i * BASIC_RECORD_SIZE,
                    );
                    args = Args::basic(data.get(a..b).unwrap_or_default(), e);
                }
            }
            f(ChunkItem::Call {
                key,
                kind,
                func_id,
                tsc: e.u64(field(rec, 8)),
                cpu: u16::from(rec[2]),
                offset: pos as u64,
                args,
            });
        }
    }

    /// Hands `f` the kind, function id, TSC and arguments of every valid function record of
    /// thread `key` (index `thread` of [`BasicLayout::threads`]) in `chunk`, in file order.
    /// Only the thread's runs are read.
    pub fn visit_calls<'a>(
        data: &'a [u8],
        header: &FileHeader,
        chunk: &BasicChunk,
        thread: u32,
        key: ThreadKey,
        mut f: impl FnMut(EventKind, u32, u64, Args<'a>),
    ) {
        let from = chunk.runs.partition_point(|r| r.0 < thread);
        for &(t, a, b) in chunk.runs.get(from..).unwrap_or_default() {
            if t != thread {
                break;
            }
            let at = |r: u32| {
                chunk
                    .start
                    .saturating_add(r as usize * BASIC_RECORD_SIZE)
                    .min(chunk.end)
            };
            Self::visit_chunk(data, header, at(a), at(b), |item| {
                if let ChunkItem::Call {
                    key: k,
                    kind,
                    func_id,
                    tsc,
                    args,
                    ..
                } = item
                {
                    if k == key {
                        f(kind, func_id, tsc, args);
                    }
                }
            });
        }
    }
}
