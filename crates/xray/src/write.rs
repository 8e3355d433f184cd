//! Writers: raw records for FDR v1–v5 and basic v1–v3, and whole traces from per-thread events.

use crate::error::{Error, Result};
use crate::raw::{BasicRecordType, Endian, FunctionKind, MetadataKind, TraceType, MAX_FDR_FUNC_ID};
use crate::read::basic::BasicRecord;
use crate::read::events::{Event, EventKind};
use crate::read::fdr::{metadata_introducer, CustomEventTime, FdrRecord};
use crate::read::header::FileHeader;

/// Appends the encoding of `rec` (payload included) in `header`'s byte order and version layout.
///
/// Custom and typed event markers get their size field from the payload length. A
/// `CustomEventTime` that does not match the version is converted (absolute ↔ delta is not
/// possible, so the stored numbers are written in the version's slot: a `Delta(d)` at v1–4 writes
/// `d` as the absolute TSC, an `Absolute` at v5 writes a zero delta).
pub fn encode_fdr_record(out: &mut Vec<u8>, rec: &FdrRecord<'_>, header: &FileHeader) {
    let e = header.endian;
    if let FdrRecord::Function {
        kind,
        func_id,
        tsc_delta,
    } = rec
    {
        let k = u32::from(kind.0 & 7);
        let id = func_id & MAX_FDR_FUNC_ID;
        let w = match e {
            Endian::Little => (id << 4) | (k << 1),
            Endian::Big => (k << 28) | id,
        };
        out.extend_from_slice(&e.u32_bytes(w));
        out.extend_from_slice(&e.u32_bytes(*tsc_delta));
        return;
    }
    let kind = rec.metadata_kind().unwrap_or(MetadataKind(127));
    let mut p = [0u8; 15];
    let mut put = |at: usize, bytes: &[u8]| {
        for (o, b) in p.iter_mut().skip(at).zip(bytes) {
            *o = *b;
        }
    };
    let mut payload: &[u8] = &[];
    match rec {
        FdrRecord::Function { .. } | FdrRecord::EndOfBuffer => {}
        FdrRecord::NewBuffer { tid } => put(0, &e.u32_bytes(*tid as u32)),
        FdrRecord::NewCpuId { cpu, tsc } => {
            put(0, &e.u16_bytes(*cpu));
            put(2, &e.u64_bytes(*tsc));
        }
        FdrRecord::TscWrap { tsc } => put(0, &e.u64_bytes(*tsc)),
        FdrRecord::WalltimeMarker { seconds, micros } => {
            put(0, &e.u64_bytes(*seconds as u64));
            put(8, &e.u32_bytes(*micros as u32));
        }
        FdrRecord::CustomEvent { time, data, .. } => {
            put(0, &e.u32_bytes(data.len() as u32));
            match (header.version, time) {
                (5.., CustomEventTime::Delta(d)) => put(4, &e.u32_bytes(*d as u32)),
                (5.., CustomEventTime::Absolute { .. }) => {}
                (_, CustomEventTime::Absolute { tsc, cpu }) => {
                    put(4, &e.u64_bytes(*tsc));
                    if header.version == 4 {
                        put(12, &e.u16_bytes(cpu.unwrap_or(0)));
                    }
                }
                (_, CustomEventTime::Delta(d)) => put(4, &e.u64_bytes(*d as u64)),
            }
            payload = data;
        }
        FdrRecord::CallArgument { arg } => put(0, &e.u64_bytes(*arg)),
        FdrRecord::BufferExtents { size } => put(0, &e.u64_bytes(*size)),
        FdrRecord::TypedEvent {
            tsc_delta,
            event_type,
            data,
            ..
        } => {
            put(0, &e.u32_bytes(data.len() as u32));
            put(4, &e.u32_bytes(*tsc_delta as u32));
            put(8, &e.u16_bytes(*event_type));
            payload = data;
        }
        FdrRecord::Pid { pid } => put(0, &e.u32_bytes(*pid as u32)),
        FdrRecord::UnknownMetadata { payload: raw, .. } => p = *raw,
    }
    out.push(metadata_introducer(kind, e));
    out.extend_from_slice(&p);
    out.extend_from_slice(payload);
}

/// Appends the 32-byte encoding of a basic record (pid written only at version 3+).
pub fn encode_basic_record(out: &mut Vec<u8>, rec: &BasicRecord, header: &FileHeader) {
    let e = header.endian;
    let mut r = [0u8; 32];
    let mut put = |at: usize, bytes: &[u8]| {
        for (o, b) in r.iter_mut().skip(at).zip(bytes) {
            *o = *b;
        }
    };
    let pid_of = |p: u32| if header.version >= 3 { p } else { 0 };
    match rec {
        BasicRecord::Function {
            cpu,
            kind,
            func_id,
            tsc,
            tid,
            pid,
        } => {
            put(0, &e.u16_bytes(BasicRecordType::FUNCTION.0));
            put(2, &[*cpu, kind.0]);
            put(4, &e.u32_bytes(*func_id as u32));
            put(8, &e.u64_bytes(*tsc));
            put(16, &e.u32_bytes(*tid));
            put(20, &e.u32_bytes(pid_of(*pid)));
        }
        BasicRecord::ArgPayload {
            func_id,
            tid,
            pid,
            arg,
        } => {
            put(0, &e.u16_bytes(BasicRecordType::ARG_PAYLOAD.0));
            put(4, &e.u32_bytes(*func_id as u32));
            put(8, &e.u32_bytes(*tid));
            put(12, &e.u32_bytes(pid_of(*pid)));
            put(16, &e.u64_bytes(*arg));
        }
        BasicRecord::Unknown { record_type } => put(0, &e.u16_bytes(record_type.0)),
    }
    out.extend_from_slice(&r);
}

/// An owned event, the writers' input (and what round-trip tests compare).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedEvent {
    /// What happened.
    pub kind: Option<EventKind>,
    /// Function id (ignored for custom and typed events).
    pub func_id: u32,
    /// Absolute TSC.
    pub tsc: u64,
    /// CPU.
    pub cpu: u16,
    /// Arguments (EnterArg).
    pub args: Vec<u64>,
    /// Typed event type.
    pub event_type: u16,
    /// Custom / typed payload (must not be empty).
    pub data: Vec<u8>,
}

impl OwnedEvent {
    /// A function event.
    pub fn function(kind: EventKind, func_id: u32, tsc: u64) -> Self {
        OwnedEvent {
            kind: Some(kind),
            func_id,
            tsc,
            ..Default::default()
        }
    }

    /// A copy of a decoded event.
    pub fn from_event(ev: &Event<'_>) -> Self {
        OwnedEvent {
            kind: Some(ev.kind),
            func_id: if matches!(ev.kind, EventKind::CustomEvent | EventKind::TypedEvent) {
                0
            } else {
                ev.func_id
            },
            tsc: ev.tsc,
            cpu: ev.cpu,
            args: ev.args.to_vec(),
            event_type: ev.event_type,
            data: ev.data.to_vec(),
        }
    }

    fn kind(&self) -> EventKind {
        self.kind.unwrap_or(EventKind::Enter)
    }
}

fn invalid(what: &'static str, found: String) -> Error {
    crate::error::invalid(0, what, found)
}

/// Writes an FDR trace (versions 1–5) thread by thread.
///
/// Each call to [`FdrTraceWriter::thread`] writes that thread's events as one or more buffers
/// (split so that no buffer exceeds the header's `buffer_size` when it is non-zero), the way the
/// runtime does: `[BufferExtents] NewBuffer WalltimeMarker [Pid] NewCPUId …`, a NewCPUId on every
/// CPU change and a TSCWrap when a delta does not fit in 31 bits or the TSC goes backwards.
/// Version 1 buffers end with EndOfBuffer and are zero-padded to `buffer_size`.
#[derive(Clone, Debug)]
pub struct FdrTraceWriter {
    header: FileHeader,
    out: Vec<u8>,
    walltime: (i64, i32),
}

struct BufState {
    start: usize,
    cpu: u16,
    tsc: u64,
}

impl FdrTraceWriter {
    /// Starts a trace with `header` (its type is forced to FDR).
    pub fn new(mut header: FileHeader) -> Self {
        header.trace_type = TraceType::FDR;
        if header.version == 1 && header.buffer_size == 0 {
            header.buffer_size = 4096;
        }
        FdrTraceWriter {
            header,
            out: header.to_bytes().to_vec(),
            walltime: (0, 0),
        }
    }

    /// Wall time written in the WalltimeMarker of the following buffers.
    pub fn set_walltime(&mut self, seconds: i64, micros: i32) {
        self.walltime = (seconds, micros);
    }

    /// Appends one raw record (for hand-made and malformed files).
    pub fn record(&mut self, rec: &FdrRecord<'_>) {
        encode_fdr_record(&mut self.out, rec, &self.header);
    }

    /// Appends raw bytes.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// The header in use.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    fn begin(&mut self, pid: u32, tid: u32, cpu: u16, tsc: u64) -> BufState {
        let h = self.header;
        let start = self.out.len();
        if h.version >= 2 {
            self.record(&FdrRecord::BufferExtents { size: 0 });
        }
        self.record(&FdrRecord::NewBuffer { tid: tid as i32 });
        let (seconds, micros) = self.walltime;
        self.record(&FdrRecord::WalltimeMarker { seconds, micros });
        if h.version >= 3 {
            self.record(&FdrRecord::Pid { pid: pid as i32 });
        }
        self.record(&FdrRecord::NewCpuId { cpu, tsc });
        BufState { start, cpu, tsc }
    }

    fn end(&mut self, b: &BufState) {
        let h = self.header;
        if h.version >= 2 {
            let content = (self.out.len() - b.start).saturating_sub(16) as u64;
            let bytes = h.endian.u64_bytes(content);
            if let Some(slot) = self.out.get_mut(b.start + 1..b.start + 9) {
                slot.copy_from_slice(&bytes);
            }
        } else {
            self.record(&FdrRecord::EndOfBuffer);
            let used = self.out.len() - b.start;
            let size = usize::try_from(h.buffer_size).unwrap_or(0);
            if used < size {
                self.out.resize(b.start + size, 0);
            }
        }
    }

    fn content_len(&self, b: &BufState) -> usize {
        self.out.len() - b.start - if self.header.version >= 2 { 16 } else { 0 }
    }

    /// Writes the events of one thread (pid is written at version 3+).
    ///
    /// Fails on empty custom/typed payloads (size 0 is invalid on disk) and on function ids
    /// wider than 28 bits.
    pub fn thread(&mut self, pid: u32, tid: u32, events: &[OwnedEvent]) -> Result<()> {
        for ev in events {
            if matches!(ev.kind(), EventKind::CustomEvent | EventKind::TypedEvent) {
                if ev.data.is_empty() || ev.data.len() > i32::MAX as usize {
                    return Err(invalid(
                        "a custom/typed payload of 1..2^31 bytes",
                        ev.data.len().to_string(),
                    ));
                }
            } else if ev.func_id > MAX_FDR_FUNC_ID {
                return Err(invalid("a function id below 2^28", ev.func_id.to_string()));
            }
        }
        let Some(first) = events.first() else {
            return Ok(());
        };
        let h = self.header;
        let limit = usize::try_from(h.buffer_size).unwrap_or(usize::MAX);
        let mut b = self.begin(pid, tid, first.cpu, first.tsc);
        for ev in events {
            let kind = ev.kind();
            let need = 16 * 2
                + match kind {
                    EventKind::CustomEvent | EventKind::TypedEvent => 16 + ev.data.len(),
                    _ => 8 + 16 * ev.args.len(),
                }
                + if h.version == 1 { 16 } else { 0 };
            if limit > 0 && self.content_len(&b) + need > limit && self.content_len(&b) > 64 {
                self.end(&b);
                b = self.begin(pid, tid, ev.cpu, ev.tsc);
            }
            if ev.cpu != b.cpu {
                self.record(&FdrRecord::NewCpuId {
                    cpu: ev.cpu,
                    tsc: ev.tsc,
                });
                b.cpu = ev.cpu;
                b.tsc = ev.tsc;
            }
            let absolute_custom = kind == EventKind::CustomEvent && h.version < 5;
            if !absolute_custom && (ev.tsc < b.tsc || ev.tsc - b.tsc > i32::MAX as u64) {
                self.record(&FdrRecord::TscWrap { tsc: ev.tsc });
                b.tsc = ev.tsc;
            }
            let delta = if absolute_custom { 0 } else { ev.tsc - b.tsc };
            match kind {
                EventKind::CustomEvent => {
                    let time = if h.version >= 5 {
                        b.tsc = ev.tsc;
                        CustomEventTime::Delta(delta as i32)
                    } else {
                        CustomEventTime::Absolute {
                            tsc: ev.tsc,
                            cpu: Some(ev.cpu),
                        }
                    };
                    self.record(&FdrRecord::CustomEvent {
                        size: ev.data.len() as i32,
                        time,
                        data: &ev.data,
                    });
                }
                EventKind::TypedEvent => {
                    b.tsc = ev.tsc;
                    self.record(&FdrRecord::TypedEvent {
                        size: ev.data.len() as i32,
                        tsc_delta: delta as i32,
                        event_type: ev.event_type,
                        data: &ev.data,
                    });
                }
                _ => {
                    let fk = match kind {
                        EventKind::Exit => FunctionKind::EXIT,
                        EventKind::TailExit => FunctionKind::TAIL_EXIT,
                        EventKind::EnterArg => FunctionKind::ENTER_ARGS,
                        _ if !ev.args.is_empty() => FunctionKind::ENTER_ARGS,
                        _ => FunctionKind::ENTER,
                    };
                    b.tsc = ev.tsc;
                    self.record(&FdrRecord::Function {
                        kind: fk,
                        func_id: ev.func_id,
                        tsc_delta: delta as u32,
                    });
                    for &arg in &ev.args {
                        self.record(&FdrRecord::CallArgument { arg });
                    }
                }
            }
        }
        self.end(&b);
        Ok(())
    }

    /// The finished file.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// Writes a basic-mode trace (versions 1–3).
#[derive(Clone, Debug)]
pub struct BasicTraceWriter {
    header: FileHeader,
    out: Vec<u8>,
}

impl BasicTraceWriter {
    /// Starts a trace with `header` (its type is forced to basic).
    pub fn new(mut header: FileHeader) -> Self {
        header.trace_type = TraceType::BASIC;
        BasicTraceWriter {
            header,
            out: header.to_bytes().to_vec(),
        }
    }

    /// Appends one raw record.
    pub fn record(&mut self, rec: &BasicRecord) {
        encode_basic_record(&mut self.out, rec, &self.header);
    }

    /// Writes the events of one thread: a function record per event, then one arg payload per
    /// argument. Custom and typed events do not exist in basic mode and are rejected.
    pub fn thread(&mut self, pid: u32, tid: u32, events: &[OwnedEvent]) -> Result<()> {
        for ev in events {
            let kind = match ev.kind() {
                EventKind::Enter if ev.args.is_empty() => FunctionKind::ENTER,
                EventKind::Enter | EventKind::EnterArg => FunctionKind::ENTER_ARGS,
                EventKind::Exit => FunctionKind::EXIT,
                EventKind::TailExit => FunctionKind::TAIL_EXIT,
                k => {
                    return Err(invalid(
                        "a function event (basic mode has no custom/typed events)",
                        format!("{k:?}"),
                    ))
                }
            };
            self.record(&BasicRecord::Function {
                cpu: ev.cpu as u8,
                kind,
                func_id: ev.func_id as i32,
                tsc: ev.tsc,
                tid,
                pid,
            });
            for &arg in &ev.args {
                self.record(&BasicRecord::ArgPayload {
                    func_id: ev.func_id as i32,
                    tid,
                    pid,
                    arg,
                });
            }
        }
        Ok(())
    }

    /// The finished file.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}
