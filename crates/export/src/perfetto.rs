//! Perfetto protobuf traces (`.pftrace`), encoded by hand with [`crate::protobuf`] and
//! streamed: every event becomes one `TracePacket`, written as field 1 of the `Trace` message
//! as soon as it is made, so a file is a valid `Trace` at every packet boundary.
//!
//! # What is written
//! * a `TrackDescriptor` per process (`ProcessDescriptor` pid and name) and per thread
//!   (`ThreadDescriptor` pid, tid, name), each with its own uuid ([`uuid`]);
//! * calls: a `TrackEvent` `TYPE_SLICE_BEGIN` at [`EventSink::enter`] and `TYPE_SLICE_END` at
//!   [`EventSink::exit`], on the thread's track;
//! * instants (XRay custom and typed events, exceptions, GC phases): `TYPE_INSTANT` with their
//!   arguments as `debug_annotations` (bytes as UTF-8 text when valid, else hex);
//! * counters: one counter track (`TrackDescriptor` with a `CounterDescriptor`, child of the
//!   process track) per process and name, and `TYPE_COUNTER` events with `double_counter_value`;
//! * code regions: `TYPE_INSTANT` of category `jit` (on the loading thread, else the process)
//!   with `address`, `size`, `event` (and `old_address`, `code_index`) annotations;
//! * samples: a `PerfSample` packet (pid, tid, cpu mode, callstack iid) per sample, its frames
//!   and callstack interned ([`callstacks`]) — the UI's flame graph of a selection. Perfetto
//!   counts samples: a sample's weight (perf's period) is not shown.
//!
//! Event names are interned: the first packet that uses a name carries it in
//! `InternedData.event_names` and every event refers to it by `name_iid`. All packets belong to
//! one sequence ([`SEQUENCE_ID`]); its first packet has `SEQ_INCREMENTAL_STATE_CLEARED`, and
//! packets that use interned names have `SEQ_NEEDS_INCREMENTAL_STATE`. Timestamps are the
//! trace's nanoseconds since its origin, on Perfetto's default clock.
//!
//! Field numbers are those of Perfetto's `perfetto_trace.proto` (the tests decode every output
//! with the `perfetto` PyPI package's generated module).

use std::collections::HashMap;
use std::io::{self, Write};

use profkit_model::events::{
    ArgValue, CodeEvent, CodeRegion, Counter, Enter, EventSink, Instant, ProcessInfo, Sample,
    ThreadInfo, TraceInfo,
};
use profkit_model::func::{FuncId, FuncInfo};
use profkit_model::span::Span;

use crate::chrome::shared::{
    bytes_text, display_tid, flush_all, flush_if_full, IdMap, Names, OutStream, FLUSH_AT,
};
use crate::protobuf::{put_varint, Message};

mod callstacks;
use crate::{Options, Output};
use callstacks::Callstacks;

/// The `trusted_packet_sequence_id` of every packet.
pub const SEQUENCE_ID: u64 = 1;

/// Field numbers and enum values of Perfetto's protos used here.
mod field {
    // Trace
    pub const TRACE_PACKET: u32 = 1;
    // TracePacket
    pub const TIMESTAMP: u32 = 8;
    pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    pub const TRACK_EVENT: u32 = 11;
    pub const INTERNED_DATA: u32 = 12;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    pub const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
    // TrackDescriptor
    pub const TD_UUID: u32 = 1;
    pub const TD_NAME: u32 = 2;
    pub const TD_PROCESS: u32 = 3;
    pub const TD_THREAD: u32 = 4;
    pub const TD_PARENT_UUID: u32 = 5;
    pub const TD_COUNTER: u32 = 8;
    // ProcessDescriptor
    pub const PD_PID: u32 = 1;
    pub const PD_PROCESS_NAME: u32 = 6;
    // ThreadDescriptor
    pub const THD_PID: u32 = 1;
    pub const THD_TID: u32 = 2;
    pub const THD_THREAD_NAME: u32 = 5;
    // TrackEvent
    pub const TE_DEBUG_ANNOTATIONS: u32 = 4;
    pub const TE_TYPE: u32 = 9;
    pub const TE_NAME_IID: u32 = 10;
    pub const TE_TRACK_UUID: u32 = 11;
    pub const TE_CATEGORIES: u32 = 22;
    pub const TE_NAME: u32 = 23;
    pub const TE_DOUBLE_COUNTER_VALUE: u32 = 44;
    pub const TYPE_SLICE_BEGIN: u64 = 1;
    pub const TYPE_SLICE_END: u64 = 2;
    pub const TYPE_INSTANT: u64 = 3;
    pub const TYPE_COUNTER: u64 = 4;
    // InternedData / EventName
    pub const ID_EVENT_NAMES: u32 = 2;
    pub const EN_IID: u32 = 1;
    pub const EN_NAME: u32 = 2;
    // DebugAnnotation
    pub const DA_UINT_VALUE: u32 = 3;
    pub const DA_INT_VALUE: u32 = 4;
    pub const DA_DOUBLE_VALUE: u32 = 5;
    pub const DA_STRING_VALUE: u32 = 6;
    pub const DA_POINTER_VALUE: u32 = 7;
    pub const DA_NAME: u32 = 10;
}

/// Track uuids: a process's, a thread's and a counter's live in separate ranges (the low two
/// bits), and stay small so the varint in every event is short.
pub mod uuid {
    /// The track of process `pid`.
    pub fn process(pid: u32) -> u64 {
        (u64::from(pid) << 2) | 2
    }
    /// The track of thread index `index`.
    pub fn thread(index: u32) -> u64 {
        (u64::from(index) << 2) | 1
    }
    /// The `n`-th counter track (0-based, in order of first value).
    pub fn counter(n: u64) -> u64 {
        (n << 2) | 3
    }
}

/// A writer into `output`.
pub fn sink(output: &Output, _options: &Options) -> io::Result<Box<dyn EventSink + Send>> {
    Ok(Box::new(PerfettoWriter::new(OutStream::open(
        output, false,
    )?)))
}

/// Writes a Perfetto trace into `W` as events arrive. See the [module docs](self).
pub struct PerfettoWriter<W: Write> {
    out: W,
    /// Encoded packets not yet handed to `out`.
    buf: Vec<u8>,
    /// The packet being built.
    pkt: Message,
    /// A nested message being built (track event, descriptor).
    inner: Message,
    /// Whether no packet was written yet.
    first: bool,
    finished: bool,
    names: Names,
    /// Interned name id of each function used so far.
    func_iid: IdMap<u64>,
    /// Interned name id of each instant name used so far.
    str_iid: HashMap<Box<str>, u64>,
    next_iid: u64,
    /// Processes whose track is written.
    processes: HashMap<u32, ()>,
    /// Threads whose track is written.
    threads: IdMap<()>,
    /// Pid and tid of each declared thread (for samples).
    ids: IdMap<(u32, i64)>,
    /// Interned frames and callstacks of samples.
    callstacks: Callstacks,
    /// Counter tracks by (pid, name).
    counters: HashMap<(u32, Box<str>), u64>,
}

impl<W: Write> PerfettoWriter<W> {
    /// A writer into `out`.
    pub fn new(out: W) -> Self {
        PerfettoWriter {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            pkt: Message::with_capacity(256),
            inner: Message::with_capacity(256),
            first: true,
            finished: false,
            names: Names::default(),
            func_iid: IdMap::default(),
            str_iid: HashMap::new(),
            next_iid: 1,
            processes: HashMap::new(),
            threads: IdMap::default(),
            ids: IdMap::default(),
            callstacks: Callstacks::default(),
            counters: HashMap::new(),
        }
    }

    /// The output.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The output, giving up the writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Starts a packet: sequence id and flags.
    fn start_packet(&mut self, needs_state: bool) {
        self.pkt.clear();
        self.pkt
            .uint64(field::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE_ID);
        let mut flags = 0;
        if self.first {
            self.first = false;
            flags |= field::SEQ_INCREMENTAL_STATE_CLEARED;
        }
        if needs_state {
            flags |= field::SEQ_NEEDS_INCREMENTAL_STATE;
        }
        if flags != 0 {
            self.pkt.uint64(field::SEQUENCE_FLAGS, flags);
        }
    }

    /// Appends the built packet to the trace and hands full buffers to the output.
    fn end_packet(&mut self) -> io::Result<()> {
        put_varint(&mut self.buf, (u64::from(field::TRACE_PACKET) << 3) | 2);
        put_varint(&mut self.buf, self.pkt.len() as u64);
        self.buf.extend_from_slice(self.pkt.as_bytes());
        flush_if_full(&mut self.out, &mut self.buf)
    }

    /// Writes the track of process `pid` if it is not written yet.
    fn ensure_process(&mut self, pid: u32, name: Option<&str>) -> io::Result<()> {
        if self.processes.contains_key(&pid) {
            return Ok(());
        }
        self.processes.insert(pid, ());
        self.start_packet(false);
        self.inner.clear();
        self.inner.uint64(field::TD_UUID, uuid::process(pid));
        self.inner.message(field::TD_PROCESS, |p| {
            p.uint64(field::PD_PID, u64::from(pid));
            if let Some(n) = name {
                p.string(field::PD_PROCESS_NAME, n);
            }
        });
        self.pkt.embed(field::TRACK_DESCRIPTOR, &self.inner);
        self.end_packet()
    }

    /// Writes a placeholder track for thread `index` unless it has one.
    #[inline]
    fn ensure_thread(&mut self, index: u32, info: Option<&ThreadInfo<'_>>) -> io::Result<()> {
        if info.is_none() && self.threads.get(index).is_some() {
            return Ok(());
        }
        self.write_thread(index, info)
    }

    /// Writes the track of thread `index` (`info` when declared; a placeholder otherwise).
    #[cold]
    fn write_thread(&mut self, index: u32, info: Option<&ThreadInfo<'_>>) -> io::Result<()> {
        self.threads.insert(index, ());
        let (pid, tid, name) = match info {
            Some(t) => (t.pid, display_tid(t.tid, t.index), t.name.to_string()),
            None => (0, display_tid(u64::MAX, index), format!("thread #{index}")),
        };
        self.ids.insert(index, (pid, tid));
        self.start_packet(false);
        self.inner.clear();
        self.inner.uint64(field::TD_UUID, uuid::thread(index));
        self.inner.message(field::TD_THREAD, |t| {
            t.uint64(field::THD_PID, u64::from(pid));
            t.int64(field::THD_TID, tid);
            t.string(field::THD_THREAD_NAME, &name);
        });
        self.pkt.embed(field::TRACK_DESCRIPTOR, &self.inner);
        self.end_packet()
    }

    /// The name iid of `func`, adding its name to the packet's interned data when new.
    /// Call after [`Self::start_packet`].
    fn func_name_iid(&mut self, func: FuncId) -> u64 {
        if let Some(&iid) = self.func_iid.get(func.0) {
            return iid;
        }
        let iid = self.next_iid;
        self.next_iid += 1;
        self.func_iid.insert(func.0, iid);
        let name = self.names.get(func);
        intern(&mut self.pkt, iid, &name);
        iid
    }

    /// The name iid of `name`, interning it in the packet when new.
    fn str_name_iid(&mut self, name: &str) -> u64 {
        if let Some(&iid) = self.str_iid.get(name) {
            return iid;
        }
        let iid = self.next_iid;
        self.next_iid += 1;
        self.str_iid.insert(name.into(), iid);
        intern(&mut self.pkt, iid, name);
        iid
    }

    /// Appends a slice begin (`name_iid` > 0, already interned) or end (`name_iid` 0) packet
    /// straight to the trace — the same bytes [`Message`] would give, without building nested
    /// messages (every length here is below 128, one byte). Not for the sequence's first packet.
    #[inline]
    fn slice_packet(&mut self, ty: u64, track: u64, time: u64, name_iid: u64) -> io::Result<()> {
        use crate::protobuf::varint_len;
        let te_len = 2
            + 1
            + varint_len(track)
            + if name_iid != 0 {
                1 + varint_len(name_iid)
            } else {
                0
            };
        // seq id (2) + flags (2) + timestamp key and value + track event key, length, body
        let pkt_len = 2 + 2 + 1 + varint_len(time) + 2 + te_len;
        let b = &mut self.buf;
        b.extend_from_slice(&[
            (field::TRACE_PACKET << 3 | 2) as u8,
            pkt_len as u8,
            (field::TRUSTED_PACKET_SEQUENCE_ID << 3) as u8,
            SEQUENCE_ID as u8,
            (field::SEQUENCE_FLAGS << 3) as u8,
            field::SEQ_NEEDS_INCREMENTAL_STATE as u8,
            (field::TIMESTAMP << 3) as u8,
        ]);
        put_varint(b, time);
        b.extend_from_slice(&[
            (field::TRACK_EVENT << 3 | 2) as u8,
            te_len as u8,
            (field::TE_TYPE << 3) as u8,
            ty as u8,
            (field::TE_TRACK_UUID << 3) as u8,
        ]);
        put_varint(b, track);
        if name_iid != 0 {
            b.push((field::TE_NAME_IID << 3) as u8);
            put_varint(b, name_iid);
        }
        flush_if_full(&mut self.out, &mut self.buf)
    }

    /// Finishes a packet holding the track event in `self.inner`.
    fn track_event_packet(&mut self, time: u64) -> io::Result<()> {
        self.pkt.uint64(field::TIMESTAMP, time);
        self.pkt.embed(field::TRACK_EVENT, &self.inner);
        self.end_packet()
    }
}

/// Adds `EventName { iid, name }` to the packet's `interned_data`.
fn intern(pkt: &mut Message, iid: u64, name: &str) {
    pkt.message(field::INTERNED_DATA, |d| {
        d.message(field::ID_EVENT_NAMES, |e| {
            e.uint64(field::EN_IID, iid);
            e.string(field::EN_NAME, name);
        })
    });
}

/// Adds a named debug annotation written by `value`.
fn annotation(te: &mut Message, name: &str, value: impl FnOnce(&mut Message)) {
    te.message(field::TE_DEBUG_ANNOTATIONS, |a| {
        a.string(field::DA_NAME, name);
        value(a);
    });
}

fn arg_value(a: &mut Message, v: &ArgValue<'_>) {
    match *v {
        ArgValue::Str(s) => a.string(field::DA_STRING_VALUE, s),
        ArgValue::U64(x) => a.uint64(field::DA_UINT_VALUE, x),
        ArgValue::I64(x) => a.int64(field::DA_INT_VALUE, x),
        ArgValue::F64(x) => a.double(field::DA_DOUBLE_VALUE, x),
        ArgValue::Bytes(b) => a.string(field::DA_STRING_VALUE, &bytes_text(b)),
    }
}

impl<W: Write + Send> EventSink for PerfettoWriter<W> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        self.names = Names::new(trace.functions);
        self.callstacks.begin(trace.functions);
        Ok(())
    }

    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.names.insert(id, info);
        self.callstacks.declare(id, info);
        Ok(())
    }

    fn process(&mut self, p: &ProcessInfo<'_>) -> io::Result<()> {
        self.ensure_process(p.pid, Some(p.name))
    }

    fn thread(&mut self, t: &ThreadInfo<'_>) -> io::Result<()> {
        self.ensure_thread(t.index, Some(t))
    }

    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        self.ensure_thread(call.thread, None)?;
        match self.func_iid.get(call.func.0) {
            Some(&iid) if !self.first && call.args.is_empty() => self.slice_packet(
                field::TYPE_SLICE_BEGIN,
                uuid::thread(call.thread),
                call.time,
                iid,
            ),
            _ => {
                self.start_packet(true);
                let iid = self.func_name_iid(call.func);
                self.inner.clear();
                self.inner.uint64(field::TE_TYPE, field::TYPE_SLICE_BEGIN);
                self.inner
                    .uint64(field::TE_TRACK_UUID, uuid::thread(call.thread));
                self.inner.uint64(field::TE_NAME_IID, iid);
                let mut name = String::from("arg");
                for (i, &a) in call.args.iter().enumerate() {
                    name.truncate(3);
                    name.push_str(itoa::Buffer::new().format(i));
                    annotation(&mut self.inner, &name, |v| {
                        v.uint64(field::DA_UINT_VALUE, a)
                    });
                }
                self.track_event_packet(call.time)
            }
        }
    }

    fn exit(&mut self, span: &Span) -> io::Result<()> {
        self.ensure_thread(span.thread, None)?;
        if self.first {
            self.start_packet(true);
            self.inner.clear();
            self.inner.uint64(field::TE_TYPE, field::TYPE_SLICE_END);
            self.inner
                .uint64(field::TE_TRACK_UUID, uuid::thread(span.thread));
            return self.track_event_packet(span.end);
        }
        self.slice_packet(
            field::TYPE_SLICE_END,
            uuid::thread(span.thread),
            span.end,
            0,
        )
    }

    fn instant(&mut self, i: &Instant<'_>) -> io::Result<()> {
        self.ensure_thread(i.thread, None)?;
        self.start_packet(true);
        let iid = self.str_name_iid(i.name);
        self.inner.clear();
        let te = &mut self.inner;
        te.uint64(field::TE_TYPE, field::TYPE_INSTANT);
        te.uint64(field::TE_TRACK_UUID, uuid::thread(i.thread));
        te.uint64(field::TE_NAME_IID, iid);
        te.string(field::TE_CATEGORIES, i.category);
        for (name, value) in i.args {
            annotation(te, name, |a| arg_value(a, value));
        }
        self.track_event_packet(i.time)
    }

    fn counter(&mut self, c: &Counter<'_>) -> io::Result<()> {
        let key = (c.pid, Box::<str>::from(c.name));
        let track = match self.counters.get(&key) {
            Some(&t) => t,
            None => {
                self.ensure_process(c.pid, None)?;
                let t = uuid::counter(self.counters.len() as u64);
                self.counters.insert(key, t);
                self.start_packet(false);
                self.inner.clear();
                self.inner.uint64(field::TD_UUID, t);
                self.inner
                    .uint64(field::TD_PARENT_UUID, uuid::process(c.pid));
                self.inner.string(field::TD_NAME, c.name);
                self.inner.message(field::TD_COUNTER, |_| {});
                self.pkt.embed(field::TRACK_DESCRIPTOR, &self.inner);
                self.end_packet()?;
                t
            }
        };
        self.start_packet(true);
        self.inner.clear();
        self.inner.uint64(field::TE_TYPE, field::TYPE_COUNTER);
        self.inner.uint64(field::TE_TRACK_UUID, track);
        self.inner.double(field::TE_DOUBLE_COUNTER_VALUE, c.value);
        self.track_event_packet(c.time)
    }

    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        self.ensure_thread(s.thread, None)?;
        let (pid, tid) = self.ids.get(s.thread).copied().unwrap_or((0, 0));
        self.start_packet(true);
        let callstack = self.callstacks.intern(&mut self.pkt, s);
        let mode = self.callstacks.cpu_mode(s);
        self.inner.clear();
        self.inner.uint64(callstacks::field::PS_PID, u64::from(pid));
        self.inner
            .uint64(callstacks::field::PS_TID, tid.max(0) as u64);
        self.inner
            .uint64(callstacks::field::PS_CALLSTACK_IID, callstack);
        self.inner.uint64(callstacks::field::PS_CPU_MODE, mode);
        self.pkt.uint64(field::TIMESTAMP, s.time);
        self.pkt.embed(callstacks::field::PERF_SAMPLE, &self.inner);
        self.end_packet()
    }

    fn code(&mut self, c: &CodeRegion<'_>) -> io::Result<()> {
        let track = match c.thread {
            Some(t) => {
                self.ensure_thread(t, None)?;
                uuid::thread(t)
            }
            None => {
                self.ensure_process(c.pid, None)?;
                uuid::process(c.pid)
            }
        };
        self.start_packet(true);
        self.inner.clear();
        let te = &mut self.inner;
        te.uint64(field::TE_TYPE, field::TYPE_INSTANT);
        te.uint64(field::TE_TRACK_UUID, track);
        te.string(field::TE_NAME, c.name);
        te.string(field::TE_CATEGORIES, "jit");
        match c.event {
            CodeEvent::Load => {
                annotation(te, "event", |a| a.string(field::DA_STRING_VALUE, "load"))
            }
            CodeEvent::Move { old_address } => {
                annotation(te, "event", |a| a.string(field::DA_STRING_VALUE, "move"));
                annotation(te, "old_address", |a| {
                    a.uint64(field::DA_POINTER_VALUE, old_address)
                });
            }
        }
        annotation(te, "address", |a| {
            a.uint64(field::DA_POINTER_VALUE, c.address)
        });
        annotation(te, "size", |a| a.uint64(field::DA_UINT_VALUE, c.size));
        if let Some(ix) = c.code_index {
            annotation(te, "code_index", |a| a.uint64(field::DA_UINT_VALUE, ix));
        }
        self.track_event_packet(c.time)
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        flush_all(&mut self.out, &mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-assembled slice packets are the bytes the [`Message`] encoder gives.
    #[test]
    fn slice_fast_path_matches_the_encoder() {
        for (time, track, iid) in [
            (0u64, 1u64, 1u64),
            (127, 5, 0),
            (128, 1 << 20, 300),
            (u64::MAX, u64::MAX, u64::MAX),
        ] {
            let mut w = PerfettoWriter::new(Vec::new());
            w.first = false;
            let ty = if iid != 0 {
                field::TYPE_SLICE_BEGIN
            } else {
                field::TYPE_SLICE_END
            };
            w.slice_packet(ty, track, time, iid).unwrap();
            let fast = std::mem::take(&mut w.buf);
            w.start_packet(true);
            w.inner.clear();
            w.inner.uint64(field::TE_TYPE, ty);
            w.inner.uint64(field::TE_TRACK_UUID, track);
            if iid != 0 {
                w.inner.uint64(field::TE_NAME_IID, iid);
            }
            w.track_event_packet(time).unwrap();
            assert_eq!(fast, w.buf, "{time} {track} {iid}");
        }
    }
}
