//! The decoded, per-thread event stream (basic and FDR).
//!
//! A thread's FDR blocks are taken in time order (the TSC of their first event; see
//! [`Trace::thread_buffers`]): file order until a flight recorder reuses its buffers. llvm-xray
//! sorts them with an invalid comparator and misorders threads with more than 16 blocks.

use rayon::prelude::*;

use crate::error::{Error, ErrorExt, Result, Truncation};
use crate::raw::{
    bytes_at, field, BasicRecordType, Endian, FunctionKind, TraceType, BASIC_RECORD_SIZE,
    FDR_METADATA_RECORD_SIZE, HEADER_SIZE,
};
use crate::read::basic::{basic_truncation, parse_basic_record, BasicRecord, BasicRecords};
use crate::read::fdr::{
    parse_fdr_record, CustomEventTime, FdrLayout, FdrRecord, FdrRecords, Segment, Skip,
};
use crate::read::header::FileHeader;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// Function entry.
    Enter,
    /// Function exit.
    Exit,
    /// Exit by tail call (the id is the function that leaves).
    TailExit,
    /// Function entry with logged arguments.
    EnterArg,
    /// `__xray_customevent` payload.
    CustomEvent,
    /// `__xray_typedevent` payload.
    TypedEvent,
}

impl EventKind {
    /// The kind of a function record (FDR or basic) at `offset`; kinds 4-7 are invalid.
    pub(crate) fn of_function(kind: FunctionKind, offset: usize) -> Result<EventKind> {
        match kind {
            FunctionKind::ENTER => Ok(EventKind::Enter),
            FunctionKind::EXIT => Ok(EventKind::Exit),
            FunctionKind::TAIL_EXIT => Ok(EventKind::TailExit),
            FunctionKind::ENTER_ARGS => Ok(EventKind::EnterArg),
            k => Err(crate::error::invalid(
                offset,
                "a function record kind 0-3",
                format!("kind {}", k.0),
            )),
        }
    }

    /// llvm-xray's YAML name (`function-enter`, …, `typed-event`).
    pub fn llvm_name(self) -> &'static str {
        match self {
            EventKind::Enter => "function-enter",
            EventKind::Exit => "function-exit",
            EventKind::TailExit => "function-tail-exit",
            EventKind::EnterArg => "function-enter-arg",
            EventKind::CustomEvent => "custom-event",
            EventKind::TypedEvent => "typed-event",
        }
    }
}

/// Function arguments: a zero-copy view over consecutive CallArgument (FDR) or arg-payload
/// (basic) records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Args<'a> {
    bytes: &'a [u8],
    stride: usize,
    at: usize,
    endian: Endian,
}

impl<'a> Args<'a> {
    /// The arguments of the basic-mode arg-payload records in `bytes` (whole records).
    /// The bytes of the records the arguments came from.
    pub(crate) fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn basic(bytes: &'a [u8], endian: Endian) -> Self {
        Args {
            bytes,
            stride: BASIC_RECORD_SIZE,
            at: 16,
            endian,
        }
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.bytes.len().checked_div(self.stride).unwrap_or(0)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Argument `i`.
    pub fn get(&self, i: usize) -> Option<u64> {
        let off = i.checked_mul(self.stride)?.checked_add(self.at)?;
        if i >= self.len() {
            return None;
        }
        bytes_at::<8>(self.bytes, off).map(|b| self.endian.u64(b))
    }

    /// The arguments in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        let me = *self;
        (0..me.len()).filter_map(move |i| me.get(i))
    }

    /// The arguments as a vector.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }
}

/// One decoded event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// Absolute byte offset of the record that produced the event.
    pub offset: u64,
    /// Thread id.
    pub tid: u32,
    /// Process id (0 = unknown: FDR before version 3, basic before version 3).
    pub pid: u32,
    /// CPU.
    pub cpu: u16,
    /// Absolute TSC in ticks (convert with [`FileHeader::ticks_to_ns`]).
    pub tsc: u64,
    /// What happened.
    pub kind: EventKind,
    /// Function id (0 for custom and typed events; llvm-xray repeats the previous function's id).
    pub func_id: u32,
    /// Logged arguments (EnterArg).
    pub args: Args<'a>,
    /// Typed event type (0 otherwise).
    pub event_type: u16,
    /// Custom or typed event payload.
    pub data: &'a [u8],
}

/// Identity of a thread's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadKey {
    /// Process id (0 if unknown).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
}

/// All events of one thread, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadEvents<'a> {
    /// Which thread.
    pub key: ThreadKey,
    /// Its events.
    pub events: Vec<Event<'a>>,
}

/// The result of decoding a whole trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// Threads in order of first appearance in the file.
    pub threads: Vec<ThreadEvents<'a>>,
    /// Problems that did not stop decoding (unknown kinds, grammar-level surprises, bad arg payloads,
    /// over-reads …), in file order.
    pub problems: Vec<Error>,
    /// Set when the file ends inside a record or inside an announced buffer: everything before
    /// it is in `threads`. Its `record` is the index the incomplete record would have had
    /// (the number of records read).
    pub truncation: Option<Truncation>,
    /// Bytes skipped between FDR buffers.
    pub skips: Vec<Skip>,
    /// Number of records read (BufferExtents and arg payloads included).
    pub records: u64,
}

impl<'a> Decoded<'a> {
    /// Total number of events.
    pub fn event_count(&self) -> usize {
        self.threads.iter().map(|t| t.events.len()).sum()
    }

    /// Appends `ev` to its thread's events (a new thread goes last; `index_of` maps threads to
    /// their place in `threads`).
    fn push_event(
        &mut self,
        index_of: &mut std::collections::HashMap<ThreadKey, usize>,
        ev: Event<'a>,
    ) {
        let key = ThreadKey {
            pid: ev.pid,
            tid: ev.tid,
        };
        let slot = *index_of.entry(key).or_insert_with(|| {
            self.threads.push(ThreadEvents {
                key,
                events: Vec::new(),
            });
            self.threads.len() - 1
        });
        if let Some(t) = self.threads.get_mut(slot) {
            t.events.push(ev);
        }
    }

    /// Every event, thread after thread.
    pub fn events(&self) -> impl Iterator<Item = &Event<'a>> {
        self.threads.iter().flat_map(|t| t.events.iter())
    }

    /// Every event, stably sorted by TSC (what `llvm-xray convert` does by default).
    pub fn sorted_by_tsc(&self) -> Vec<&Event<'a>> {
        let mut v: Vec<&Event<'a>> = self.events().collect();
        v.sort_by_key(|e| e.tsc);
        v
    }

    /// Whether decoding met neither problems nor a truncation.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty() && self.truncation.is_none()
    }
}

/// Running decoder state of one thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadState {
    /// Thread id from the last NewBuffer.
    pub tid: u32,
    /// Process id from the last Pid record.
    pub pid: u32,
    /// CPU from the last NewCPUId.
    pub cpu: u16,
    /// Running TSC.
    pub tsc: u64,
    /// Whether a NewCPUId or TSCWrap has set the TSC.
    pub tsc_known: bool,
}

/// A parsed trace: the header plus, for FDR, the buffer layout. Nothing is decoded yet.
#[derive(Clone, Debug)]
pub struct Trace<'a> {
    /// The file header.
    pub header: FileHeader,
    data: &'a [u8],
    layout: FdrLayout,
    /// Basic mode: where the file is cut (FDR: in the layout).
    basic_cut: Option<Truncation>,
}

/// One buffer decoded on its own, with what the stitching rules need (see
/// [`Trace::run_buffers`]).
pub(crate) struct BufRun<R> {
    /// What the caller's decoder produced.
    pub(crate) out: R,
    /// Records consumed (buffer-local count).
    pub(crate) records: u64,
    /// The thread state at the end of the buffer.
    pub(crate) end_state: ThreadState,
    /// Thread of the first event (or of the buffer's NewBuffer when it has no events).
    pub(crate) first_tid: Option<u32>,
    /// Whether an event was decoded before the buffer set the TSC.
    pub(crate) used_unknown_tsc: bool,
}

impl<R> BufRun<R> {
    /// The bookkeeping of a finished decoder `it` that started from `start`.
    pub(crate) fn finish(
        out: R,
        it: &BufferEvents<'_>,
        start: ThreadState,
        first_tid: Option<u32>,
    ) -> Self {
        let first_tid = match first_tid {
            None if it.state.tid != start.tid => Some(it.state.tid),
            t => t,
        };
        BufRun {
            out,
            records: it.records,
            end_state: it.state,
            first_tid,
            used_unknown_tsc: it.used_unknown_tsc,
        }
    }
}

impl<'a> Trace<'a> {
    /// Reads the header and (FDR) splits the file into buffers.
    pub fn parse(data: &'a [u8]) -> Result<Trace<'a>> {
        let header = FileHeader::parse(data)?;
        let (layout, basic_cut) = if header.trace_type == TraceType::FDR {
            (FdrLayout::scan(data, &header), None)
        } else {
            (FdrLayout::default(), basic_truncation(data.len()))
        };
        Ok(Trace {
            header,
            data,
            layout,
            basic_cut,
        })
    }

    /// Where the file is cut, if it ends inside a record (or, FDR, inside the bytes a
    /// BufferExtents announced): known from the layout, before decoding. Every complete record
    /// before the cut decodes normally. The `record` index is known for basic traces only
    /// ([`Decoded::truncation`] has it for both).
    pub fn truncation(&self) -> Option<&Truncation> {
        if self.header.trace_type == TraceType::FDR {
            self.layout.truncation.as_ref()
        } else {
            self.basic_cut.as_ref()
        }
    }

    /// The whole file.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// FDR buffer layout (empty for basic traces).
    pub fn layout(&self) -> &FdrLayout {
        &self.layout
    }

    /// Sequential walk over FDR records (nothing for basic traces).
    pub fn fdr_records(&self) -> FdrRecords<'a, '_> {
        FdrRecords::new(self.data, self.header, &self.layout)
    }

    /// Calls `event` with every event of a basic trace in file order, keeping none (nothing
    /// for FDR traces): the events [`Trace::decode`] would group per thread, with its problems
    /// (into `problems`, in file order), record count and cut.
    pub fn visit_basic(
        &self,
        problems: &mut Vec<Error>,
        event: &mut dyn FnMut(Event<'a>),
    ) -> (u64, Option<Truncation>) {
        if self.header.trace_type != TraceType::BASIC {
            return (0, None);
        }
        visit_basic(self.data, &self.header, problems, event)
    }

    /// Records of a basic trace (nothing for FDR traces).
    pub fn basic_records(&self) -> BasicRecords<'a> {
        if self.header.trace_type == TraceType::BASIC {
            BasicRecords::new(self.data, self.header)
        } else {
            BasicRecords::new(&[], self.header)
        }
    }

    /// Lazily decodes FDR buffer `index` starting from `state` (use the previous buffer's end state
    /// of the same thread, or the default).
    pub fn buffer_events(&self, index: usize, state: ThreadState) -> BufferEvents<'a> {
        let (start, end, stop) = match self.layout.buffers.get(index) {
            Some(b) => (b.start as usize, b.end as usize, b.stop.clone()),
            None => (0, 0, None),
        };
        BufferEvents {
            data: self.data,
            header: self.header,
            pos: start,
            end,
            state,
            records: 0,
            stop,
            done: false,
            used_unknown_tsc: false,
            keep_args: false,
        }
    }

    /// Resumes decoding FDR buffer `index` at byte offset `pos` with the `state` and the
    /// buffer-local record count a [`BufferEvents`] had there ([`BufferEvents::position`],
    /// [`BufferEvents::state`], [`BufferEvents::records`]): the events are the ones the
    /// original walk gave from that point. A `pos` outside the buffer gives no events.
    pub(crate) fn buffer_events_at(
        &self,
        index: usize,
        pos: u64,
        state: ThreadState,
        records: u64,
    ) -> BufferEvents<'a> {
        let mut it = self.buffer_events(index, state);
        match usize::try_from(pos) {
            Ok(p) if p >= it.pos && p <= it.end => it.pos = p,
            _ => it.pos = it.end,
        }
        it.records = records;
        it
    }

    /// Decodes the whole trace, FDR buffers in parallel (rayon); output is deterministic and equal
    /// to [`Trace::decode_sequential`].
    pub fn decode(&self) -> Decoded<'a> {
        self.decode_impl(true)
    }

    /// Decodes the whole trace on the calling thread.
    pub fn decode_sequential(&self) -> Decoded<'a> {
        self.decode_impl(false)
    }

    /// FDR buffers grouped per thread (`(pid, tid)` of their events), threads in order of first
    /// appearance, each thread's buffers in **time order**: by the TSC of their first event
    /// (stable, so file order among equal times; a buffer without events keeps its place after
    /// the buffer before it). File order is the order the runtime handed its buffers out, which
    /// stops being time order once a flight recorder reuses them (`buffer_max` reached): the
    /// newest data then overwrote the oldest buffers, earlier in the file. A buffer with no
    /// events belongs to the thread its NewBuffer names, or, without one, to the thread of the
    /// buffer before it; buffers with neither are left out. Decode a thread's buffers in this
    /// order, each from the previous one's end state ([`BufferEvents::state`]), to follow the
    /// thread's stream.
    pub fn thread_buffers(&self) -> Vec<(ThreadKey, Vec<usize>)> {
        let mut out: Vec<(ThreadKey, Vec<(usize, u64)>)> = Vec::new();
        let mut index = std::collections::HashMap::<ThreadKey, usize>::new();
        let mut last_key: Option<ThreadKey> = None;
        for i in 0..self.layout.buffers.len() {
            let mut it = self.buffer_events(i, ThreadState::default());
            let first = it.by_ref().find_map(|r| r.ok());
            let (key, tsc) = match first {
                Some(ev) => (
                    ThreadKey {
                        pid: ev.pid,
                        tid: ev.tid,
                    },
                    Some(ev.tsc),
                ),
                None => {
                    let st = it.state();
                    let key = match (st.tid, last_key) {
                        (0, Some(k)) => k,
                        (0, None) => continue,
                        (tid, _) => ThreadKey { pid: st.pid, tid },
                    };
                    (key, None)
                }
            };
            last_key = Some(key);
            let slot = *index.entry(key).or_insert_with(|| {
                out.push((key, Vec::new()));
                out.len() - 1
            });
            if let Some((_, v)) = out.get_mut(slot) {
                // A buffer without a time sorts right after the one before it.
                let t = tsc.or(v.last().map(|&(_, t)| t)).unwrap_or(0);
                v.push((i, t));
            }
        }
        out.into_iter()
            .map(|(key, mut v)| {
                v.sort_by_key(|&(_, t)| t);
                (key, v.into_iter().map(|(i, _)| i).collect())
            })
            .collect()
    }

    /// Runs `run(buffer, start_state)` on every FDR buffer (in parallel when `parallel`), each
    /// from the default state; then, in file order, redoes each buffer that used the TSC before
    /// setting it from the end state of the previous buffer of the same thread. Results are in
    /// buffer order.
    pub(crate) fn run_buffers<R: Send>(
        &self,
        parallel: bool,
        run: &(dyn Fn(usize, ThreadState) -> BufRun<R> + Sync),
    ) -> Vec<BufRun<R>> {
        let n = self.layout.buffers.len();
        let mut results: Vec<BufRun<R>> = if parallel && n > 1 {
            (0..n)
                .into_par_iter()
                .map(|i| run(i, ThreadState::default()))
                .collect()
        } else {
            (0..n).map(|i| run(i, ThreadState::default())).collect()
        };
        // Buffers whose events came before any TSC reference continue the previous buffer of
        // the same thread: redo them, in order, with that state.
        let mut last = std::collections::HashMap::<u32, ThreadState>::new();
        for (i, r) in results.iter_mut().enumerate() {
            let tid = r.first_tid.unwrap_or(r.end_state.tid);
            if r.used_unknown_tsc {
                if let Some(st) = last.get(&tid) {
                    *r = run(i, *st);
                }
            }
            last.insert(r.end_state.tid, r.end_state);
        }
        results
    }

    fn decode_impl(&self, parallel: bool) -> Decoded<'a> {
        if self.header.trace_type == TraceType::BASIC {
            return decode_basic(self.data, &self.header);
        }
        let results = self.run_buffers(parallel, &|i, st| self.run_buffer(i, st));
        let mut out = Decoded::default();
        let mut base = 0u64;
        let mut index_of = std::collections::HashMap::<ThreadKey, usize>::new();
        let mut results = results.into_iter();
        for seg in &self.layout.segments {
            match seg {
                Segment::Buffer(bi) => {
                    let Some(r) = results.next() else { break };
                    if self
                        .layout
                        .buffers
                        .get(*bi)
                        .is_some_and(|b| b.extents_offset.is_some())
                    {
                        base += 1;
                    }
                    let (events, problems) = r.out;
                    out.problems.extend(problems.into_iter().map(|mut p| {
                        p.record = p.record.map(|i| base + i);
                        p
                    }));
                    base += r.records;
                    for ev in events {
                        out.push_event(&mut index_of, ev);
                    }
                }
                Segment::Skip(s) => out.skips.push(*s),
            }
        }
        out.records = base;
        out.truncation = self.layout.truncation.clone().map(|mut t| {
            t.record = Some(base);
            t
        });
        out
    }

    /// Decodes buffer `i` from `state` into its events and problems.
    fn run_buffer(&self, i: usize, state: ThreadState) -> BufRun<(Vec<Event<'a>>, Vec<Error>)> {
        let mut it = self.buffer_events(i, state);
        let mut events = Vec::new();
        let mut problems = Vec::new();
        let mut first_tid = None;
        for item in it.by_ref() {
            match item {
                Ok(ev) => {
                    first_tid.get_or_insert(ev.tid);
                    events.push(ev);
                }
                Err(e) => problems.push(e),
            }
        }
        BufRun::finish((events, problems), &it, state, first_tid)
    }
}

/// Lazy decoder of one FDR buffer: yields events, and problems as `Err` items (decoding goes on
/// after an `Err` unless the record could not be sized).
#[derive(Clone, Debug)]
pub struct BufferEvents<'a> {
    data: &'a [u8],
    header: FileHeader,
    pos: usize,
    end: usize,
    state: ThreadState,
    records: u64,
    stop: Option<Error>,
    done: bool,
    used_unknown_tsc: bool,
    keep_args: bool,
}

impl BufferEvents<'_> {
    /// Makes [`BufferEvents::visit_calls`] return a function record that has arguments as a
    /// [`BufferItem::Event`] (with its [`Event::args`]) instead of handing it to its closure:
    /// for outputs that show arguments. Records without arguments still take the fast path.
    pub fn keep_args(mut self) -> Self {
        self.keep_args = true;
        self
    }

    /// The thread state after the events yielded so far.
    pub fn state(&self) -> ThreadState {
        self.state
    }

    /// Records consumed so far (buffer-local count).
    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    /// Absolute byte offset of the next record to decode.
    pub(crate) fn position(&self) -> u64 {
        self.pos as u64
    }
}

/// A function record as [`BufferEvents::visit`] hands it out: no [`Event`] is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// Enter, Exit, TailExit or EnterArg (a function record followed by CallArgument records is
    /// an EnterArg whatever its own kind, as in llvm-xray).
    pub kind: EventKind,
    /// Function id.
    pub func_id: u32,
    /// Absolute TSC.
    pub tsc: u64,
    /// Absolute byte offset of the record.
    pub offset: u64,
    /// Thread id (from the last NewBuffer).
    pub tid: u32,
    /// Process id (0 = unknown).
    pub pid: u32,
}

/// One item of [`BufferEvents::visit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BufferItem<'a> {
    /// A function record (the bulk of a trace).
    Call(CallRecord),
    /// Any other event (custom or typed) — and, after [`BufferEvents::keep_args`], a function
    /// record with arguments ([`EventKind::EnterArg`]).
    Event(Event<'a>),
    /// A problem (decoding goes on unless the record could not be sized).
    Problem(Error),
}

impl<'a> From<Event<'a>> for BufferItem<'a> {
    /// A decoded event as [`BufferEvents::visit`] hands it out: a function record as a
    /// [`CallRecord`] (its arguments dropped), a custom or typed event as itself.
    #[inline]
    fn from(ev: Event<'a>) -> Self {
        match ev.kind {
            EventKind::CustomEvent | EventKind::TypedEvent => BufferItem::Event(ev),
            kind => BufferItem::Call(CallRecord {
                kind,
                func_id: ev.func_id,
                tsc: ev.tsc,
                offset: ev.offset,
                tid: ev.tid,
                pid: ev.pid,
            }),
        }
    }
}

const CALL_ARGUMENT_INTRO_LE: u8 = (6u8 << 1) | 1;

impl<'a> BufferEvents<'a> {
    /// Decodes the rest of the buffer into `f`, the same items as the iterator gives but
    /// without building an [`Event`] per function record (see [`BufferEvents::visit_calls`]).
    /// `f` returns [`ControlFlow::Break`](std::ops::ControlFlow::Break) to stop early.
    pub fn visit(&mut self, mut f: impl FnMut(BufferItem<'a>) -> std::ops::ControlFlow<()>) {
        let mut stopped = false;
        loop {
            let next = self.visit_calls(&mut |c| {
                let flow = f(BufferItem::Call(c));
                stopped = flow.is_break();
                flow
            });
            match next {
                Some(item) if !stopped => {
                    if f(item).is_break() {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    /// Hands every function record to `f` (plain little-endian ones through a tight path
    /// that only updates the running TSC) and returns the next item that is not a function
    /// record: another event or a problem. Returns `None` at the end of the buffer, or as
    /// soon as `f` breaks. Call it again after handling the item it returned.
    #[inline]
    pub fn visit_calls(
        &mut self,
        f: &mut impl FnMut(CallRecord) -> std::ops::ControlFlow<()>,
    ) -> Option<BufferItem<'a>> {
        loop {
            let c = match self.plain_call() {
                Some(c) => c,
                None => match self.next()? {
                    Err(e) => return Some(BufferItem::Problem(e)),
                    Ok(ev) if self.keep_args && !ev.args.is_empty() => {
                        return Some(BufferItem::Event(ev))
                    }
                    Ok(ev) => match BufferItem::from(ev) {
                        BufferItem::Call(c) => c,
                        item => return Some(item),
                    },
                },
            };
            if f(c).is_break() {
                return None;
            }
        }
    }

    /// Decodes the record at the cursor if it is a little-endian function record of kind 0–3
    /// not followed by arguments (the bulk of a trace); anything else is left to the general
    /// decoder.
    #[inline(always)]
    fn plain_call(&mut self) -> Option<CallRecord> {
        const KINDS: [EventKind; 4] = [
            EventKind::Enter,
            EventKind::Exit,
            EventKind::TailExit,
            EventKind::EnterArg,
        ];
        if self.header.endian != Endian::Little || self.done {
            return None;
        }
        let offset = self.pos;
        let next = offset.checked_add(8)?;
        if next > self.end {
            return None;
        }
        let w = u64::from_le_bytes(self.data.get(offset..next)?.try_into().ok()?);
        let lo = w as u32;
        // Metadata records, invalid kinds and records followed by arguments take the general
        // path.
        if lo & 1 != 0 || lo & 0b1000 != 0 || self.data.get(next) == Some(&CALL_ARGUMENT_INTRO_LE) {
            return None;
        }
        let tsc = self.advance_tsc(w >> 32);
        self.pos = next;
        self.records += 1;
        Some(CallRecord {
            kind: KINDS
                .get(((lo >> 1) & 3) as usize)
                .copied()
                .unwrap_or(EventKind::Enter),
            func_id: lo >> 4,
            tsc,
            offset: offset as u64,
            tid: self.state.tid,
            pid: self.state.pid,
        })
    }
}

impl<'a> BufferEvents<'a> {
    /// Whether an event was decoded before any NewCPUId/TSCWrap set the TSC (its TSC then
    /// depends on the state the buffer started from).
    pub fn used_unknown_tsc(&self) -> bool {
        self.used_unknown_tsc
    }

    /// Adds a record's TSC delta to the running TSC (noting a use before any record set it);
    /// returns the new TSC.
    #[inline(always)]
    fn advance_tsc(&mut self, delta: u64) -> u64 {
        if !self.state.tsc_known {
            self.used_unknown_tsc = true;
        }
        self.state.tsc = self.state.tsc.wrapping_add(delta);
        self.state.tsc
    }

    /// The event of the function record at `offset` (the cursor is past it), with the
    /// CallArgument records that follow it.
    #[inline(always)]
    fn function_event(
        &mut self,
        offset: usize,
        kind: EventKind,
        delta: u32,
        func_id: u32,
    ) -> Event<'a> {
        let tsc = self.advance_tsc(u64::from(delta));
        let mut ev = mk(offset, &self.state, kind, tsc, self.state.cpu, func_id);
        self.take_args(&mut ev);
        ev
    }

    /// Attaches the CallArgument records that follow a function record to its event.
    #[inline]
    fn take_args(&mut self, ev: &mut Event<'a>) {
        let args_start = self.pos;
        let mut p = args_start;
        if self.header.endian == Endian::Little {
            let intro = (6u8 << 1) | 1;
            let end = self.end.min(self.data.len());
            while p.saturating_add(FDR_METADATA_RECORD_SIZE) <= end
                && self.data.get(p) == Some(&intro)
            {
                p += FDR_METADATA_RECORD_SIZE;
                self.records += 1;
            }
        } else {
            while let Ok((FdrRecord::CallArgument { .. }, m)) =
                parse_fdr_record(self.data, p, self.end, &self.header)
            {
                p += m;
                self.records += 1;
            }
        }
        if p > args_start {
            ev.kind = EventKind::EnterArg;
            ev.args = Args {
                bytes: self.data.get(args_start..p).unwrap_or_default(),
                stride: FDR_METADATA_RECORD_SIZE,
                at: 1,
                endian: self.header.endian,
            };
            self.pos = p;
        }
    }
}

impl<'a> Iterator for BufferEvents<'a> {
    type Item = Result<Event<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if self.pos >= self.end {
                self.done = true;
                return self.stop.take().map(|e| Err(e.with_record(self.records)));
            }
            let offset = self.pos;
            // Fast path: a little-endian function record of a known kind (the bulk of a trace).
            if self.header.endian == Endian::Little && offset.saturating_add(8) <= self.end {
                if let Some(rec) = bytes_at::<8>(self.data, offset) {
                    let w = u32::from_le_bytes(field(&rec, 0));
                    let kind = match (w & 1, (w >> 1) & 7) {
                        (0, 0) => Some(EventKind::Enter),
                        (0, 1) => Some(EventKind::Exit),
                        (0, 2) => Some(EventKind::TailExit),
                        (0, 3) => Some(EventKind::EnterArg),
                        _ => None,
                    };
                    if let Some(kind) = kind {
                        self.records += 1;
                        self.pos = offset + 8;
                        let delta = u32::from_le_bytes(field(&rec, 4));
                        return Some(Ok(self.function_event(offset, kind, delta, w >> 4)));
                    }
                }
            }
            let (rec, n) = match parse_fdr_record(self.data, offset, self.end, &self.header) {
                Ok(x) => x,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e.in_buffer().with_record(self.records)));
                }
            };
            let index = self.records;
            self.records += 1;
            self.pos = offset + n;
            match rec {
                FdrRecord::Function {
                    kind,
                    func_id,
                    tsc_delta,
                } => {
                    let kind = match EventKind::of_function(kind, offset) {
                        Ok(k) => k,
                        Err(e) => return Some(Err(e.with_record(index))),
                    };
                    return Some(Ok(self.function_event(offset, kind, tsc_delta, func_id)));
                }
                FdrRecord::NewBuffer { tid } => {
                    self.state.tid = tid as u32;
                    self.state.pid = 0;
                }
                FdrRecord::EndOfBuffer => {
                    if self.header.version >= 2 {
                        return Some(Err(crate::error::invalid(
                            offset,
                            "no EndOfBuffer record at version >= 2",
                            "EndOfBuffer",
                        )
                        .with_record(index)));
                    }
                    self.done = true;
                }
                FdrRecord::NewCpuId { cpu, tsc } => {
                    self.state.cpu = cpu;
                    self.state.tsc = tsc;
                    self.state.tsc_known = true;
                }
                FdrRecord::TscWrap { tsc } => {
                    self.state.tsc = tsc;
                    self.state.tsc_known = true;
                }
                FdrRecord::WalltimeMarker { .. } | FdrRecord::BufferExtents { .. } => {}
                FdrRecord::Pid { pid } => self.state.pid = pid as u32,
                FdrRecord::CustomEvent { time, data, .. } => {
                    let (tsc, cpu) = match time {
                        CustomEventTime::Absolute { tsc, cpu } => {
                            (tsc, cpu.unwrap_or(self.state.cpu))
                        }
                        CustomEventTime::Delta(d) => {
                            (self.advance_tsc(i64::from(d) as u64), self.state.cpu)
                        }
                    };
                    let mut ev = mk(offset, &self.state, EventKind::CustomEvent, tsc, cpu, 0);
                    ev.data = data;
                    return Some(Ok(ev));
                }
                FdrRecord::TypedEvent {
                    tsc_delta,
                    event_type,
                    data,
                    ..
                } => {
                    let tsc = self.advance_tsc(i64::from(tsc_delta) as u64);
                    let mut ev = mk(
                        offset,
                        &self.state,
                        EventKind::TypedEvent,
                        tsc,
                        self.state.cpu,
                        0,
                    );
                    ev.event_type = event_type;
                    ev.data = data;
                    return Some(Ok(ev));
                }
                FdrRecord::CallArgument { .. } => {
                    return Some(Err(crate::error::invalid(
                        offset,
                        "CallArgument right after a function record",
                        "a CallArgument with no function record before it",
                    )
                    .with_record(index)));
                }
                FdrRecord::UnknownMetadata { kind, .. } => {
                    return Some(Err(crate::error::invalid(
                        offset,
                        "a metadata record kind 0-9",
                        format!("kind {}", kind.0),
                    )
                    .with_record(index)));
                }
            }
        }
    }
}

fn mk<'a>(
    offset: usize,
    st: &ThreadState,
    kind: EventKind,
    tsc: u64,
    cpu: u16,
    func_id: u32,
) -> Event<'a> {
    Event {
        offset: offset as u64,
        tid: st.tid,
        pid: st.pid,
        cpu,
        tsc,
        kind,
        func_id,
        args: Args::default(),
        event_type: 0,
        data: &[],
    }
}

/// Decodes a basic-mode trace. Records are grouped per (pid, tid) in file order (the runtime
/// flushes per-thread buffers, so the file is in flush order, not time order).
fn decode_basic<'a>(data: &'a [u8], header: &FileHeader) -> Decoded<'a> {
    let mut out = Decoded::default();
    let mut index_of = std::collections::HashMap::<ThreadKey, usize>::new();
    let mut problems = Vec::new();
    let (records, truncation) = visit_basic(data, header, &mut problems, &mut |ev| {
        out.push_event(&mut index_of, ev)
    });
    out.problems = problems;
    out.records = records;
    out.truncation = truncation;
    out
}

/// Calls `event` with every event of a basic-mode trace in file order (a function record
/// with the arg payloads that follow it is one event), without keeping any: what
/// [`Trace::decode`] groups per thread. Problems go to `problems` in file order. Returns the
/// number of records and the cut.
pub(crate) fn visit_basic<'a>(
    data: &'a [u8],
    header: &FileHeader,
    problems: &mut Vec<Error>,
    event: &mut dyn FnMut(Event<'a>),
) -> (u64, Option<Truncation>) {
    let mut truncation = None;
    let e = header.endian;
    let mut pos = HEADER_SIZE;
    let mut index = 0u64;
    while pos < data.len() {
        let Some(rec) = bytes_at::<BASIC_RECORD_SIZE>(data, pos) else {
            truncation = basic_truncation(data.len());
            break;
        };
        let offset = pos;
        pos += BASIC_RECORD_SIZE;
        index += 1;
        match parse_basic_record(&rec, header) {
            BasicRecord::Function {
                cpu,
                kind,
                func_id,
                tsc,
                tid,
                pid,
            } => {
                let kind = match EventKind::of_function(kind, offset) {
                    Ok(k) => k,
                    Err(e) => {
                        problems.push(e.with_record(index - 1));
                        continue;
                    }
                };
                // Arg payloads that follow and match this record.
                let args_start = pos;
                while let Some(next) = bytes_at::<BASIC_RECORD_SIZE>(data, pos) {
                    if BasicRecordType(e.u16(field(&next, 0))) != BasicRecordType::ARG_PAYLOAD {
                        break;
                    }
                    match parse_basic_record(&next, header) {
                        BasicRecord::ArgPayload {
                            func_id: f,
                            tid: t,
                            pid: p,
                            ..
                        } if f == func_id && t == tid && p == pid => {
                            pos += BASIC_RECORD_SIZE;
                            index += 1;
                        }
                        _ => break,
                    }
                }
                let args = Args::basic(data.get(args_start..pos).unwrap_or_default(), e);
                let ev = Event {
                    offset: offset as u64,
                    tid,
                    pid,
                    cpu: u16::from(cpu),
                    tsc,
                    kind: if args.is_empty() { kind } else { EventKind::EnterArg },
                    func_id: func_id as u32,
                    args,
                    event_type: 0,
                    data: &[],
                };
                event(ev);
            }
            BasicRecord::ArgPayload { .. } => problems.push(
                crate::error::invalid(
                    offset,
                    "an arg payload right after a function record with the same function id, tid (and pid)",
                    "a non-matching arg payload",
                )
                .with_record(index - 1),
            ),
            BasicRecord::Unknown { record_type } => problems.push(
                crate::error::invalid(offset, "basic record type 0 or 1", format!("type {}", record_type.0))
                    .with_record(index - 1),
            ),
        }
    }
    (index, truncation)
}
