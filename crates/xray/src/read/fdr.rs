//! Flight Data Recorder mode: records, buffers and the sequential record iterator.
//!
//! Function records are 8 bytes: bit 0 = 0, bits 1–3 = [`FunctionKind`], bits 4–31 = function id
//! (28 bits), then a `u32` TSC delta. Metadata records are 16 bytes: byte 0 = `(kind << 1) | 1`,
//! then 15 payload bytes. Custom and typed event markers are followed by their payload, after
//! which records are no longer aligned.
//!
//! Function ids: since LLVM 20 (`-fxray-shared`) the runtime packs DSO ids as
//! `(object_id << 24) | function_id`; FDR keeps only the low 28 bits, so object ids 0–15 survive
//! in bits 24–27 and larger ones are truncated. [`FdrRecord::Function`] keeps the 28-bit value as
//! written; split it with [`split_packed_id`] when the producer used DSO support.

use crate::error::{Error, ErrorExt, Result, Truncation};
use crate::raw::{
    bytes_at, field, Endian, FunctionKind, MetadataKind, FDR_FUNCTION_RECORD_SIZE,
    FDR_METADATA_RECORD_SIZE, HEADER_SIZE,
};
use crate::read::header::FileHeader;

/// Splits an LLVM 20 packed function id into `(object_id, function_id)` (8 + 24 bits; in FDR only
/// 4 bits of the object id survive).
pub fn split_packed_id(id: u32) -> (u32, u32) {
    (id >> 24, id & 0x00FF_FFFF)
}

/// Timing of a custom event: absolute (versions 1–4; version 4 adds the CPU) or a delta (version 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CustomEventTime {
    /// Versions 1–4: absolute TSC, and the CPU at version 4.
    Absolute {
        /// Absolute TSC.
        tsc: u64,
        /// CPU (version 4 only).
        cpu: Option<u16>,
    },
    /// Version 5: a delta added to the running TSC.
    Delta(i32),
}

/// One typed FDR record. Payloads borrow from the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdrRecord<'a> {
    /// 8-byte function record.
    Function {
        /// Record kind (values 4–7 are invalid and passed through).
        kind: FunctionKind,
        /// 28-bit function id.
        func_id: u32,
        /// Ticks since the previous TSC reference, added unsigned.
        tsc_delta: u32,
    },
    /// Kind 0: starts a block.
    NewBuffer {
        /// Thread id (4 bytes on disk; the spec document says 2).
        tid: i32,
    },
    /// Kind 1: end of a fixed-size buffer (version 1 only).
    EndOfBuffer,
    /// Kind 2: CPU id and absolute TSC.
    NewCpuId {
        /// CPU id.
        cpu: u16,
        /// Absolute TSC; the new base.
        tsc: u64,
    },
    /// Kind 3: a new base TSC.
    TscWrap {
        /// Absolute TSC.
        tsc: u64,
    },
    /// Kind 4: wall-clock time (the runtime uses CLOCK_MONOTONIC).
    WalltimeMarker {
        /// Seconds.
        seconds: i64,
        /// Microseconds (LLVM calls the field "nanos").
        micros: i32,
    },
    /// Kind 5: custom event marker and its payload.
    CustomEvent {
        /// Payload size as written.
        size: i32,
        /// Per-version timing.
        time: CustomEventTime,
        /// The payload.
        data: &'a [u8],
    },
    /// Kind 6: one argument of the preceding function record.
    CallArgument {
        /// The argument.
        arg: u64,
    },
    /// Kind 7: number of buffer bytes that follow (version 2+).
    BufferExtents {
        /// Bytes of buffer content after this record.
        size: u64,
    },
    /// Kind 8: typed event marker and its payload (version 5).
    TypedEvent {
        /// Payload size as written.
        size: i32,
        /// TSC delta.
        tsc_delta: i32,
        /// User-defined event type.
        event_type: u16,
        /// The payload.
        data: &'a [u8],
    },
    /// Kind 9: process id (version 3+).
    Pid {
        /// Process id.
        pid: i32,
    },
    /// Kinds 10–127: not defined; the 16 bytes are skipped.
    UnknownMetadata {
        /// The kind.
        kind: MetadataKind,
        /// The 15 payload bytes.
        payload: [u8; 15],
    },
}

impl FdrRecord<'_> {
    /// Metadata kind, `None` for function records.
    pub fn metadata_kind(&self) -> Option<MetadataKind> {
        Some(match self {
            FdrRecord::Function { .. } => return None,
            FdrRecord::NewBuffer { .. } => MetadataKind::NEW_BUFFER,
            FdrRecord::EndOfBuffer => MetadataKind::END_OF_BUFFER,
            FdrRecord::NewCpuId { .. } => MetadataKind::NEW_CPU_ID,
            FdrRecord::TscWrap { .. } => MetadataKind::TSC_WRAP,
            FdrRecord::WalltimeMarker { .. } => MetadataKind::WALLTIME_MARKER,
            FdrRecord::CustomEvent { .. } => MetadataKind::CUSTOM_EVENT_MARKER,
            FdrRecord::CallArgument { .. } => MetadataKind::CALL_ARGUMENT,
            FdrRecord::BufferExtents { .. } => MetadataKind::BUFFER_EXTENTS,
            FdrRecord::TypedEvent { .. } => MetadataKind::TYPED_EVENT_MARKER,
            FdrRecord::Pid { .. } => MetadataKind::PID,
            FdrRecord::UnknownMetadata { kind, .. } => *kind,
        })
    }

    /// Short name for messages (`"Function"`, `"NewBuffer"`, …).
    pub fn name(&self) -> &'static str {
        match self.metadata_kind() {
            None => "Function",
            Some(k) => k.name().unwrap_or("UnknownMetadata"),
        }
    }

    /// Bytes this record occupies, payload included.
    pub fn encoded_len(&self) -> usize {
        match self {
            FdrRecord::Function { .. } => FDR_FUNCTION_RECORD_SIZE,
            FdrRecord::CustomEvent { data, .. } | FdrRecord::TypedEvent { data, .. } => {
                FDR_METADATA_RECORD_SIZE.saturating_add(data.len())
            }
            _ => FDR_METADATA_RECORD_SIZE,
        }
    }
}

/// A record with its absolute offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdrItem<'a> {
    /// Absolute byte offset of the record.
    pub offset: u64,
    /// Index of the record in the file (0 = first record after the header).
    pub index: u64,
    /// The record.
    pub record: FdrRecord<'a>,
}

/// The introducer byte of metadata record `kind`.
pub(crate) fn metadata_introducer(kind: MetadataKind, endian: Endian) -> u8 {
    match endian {
        Endian::Little => (kind.0 << 1) | 1,
        Endian::Big => 0x80 | (kind.0 & 0x7f),
    }
}

fn is_metadata(b: u8, endian: Endian) -> bool {
    match endian {
        Endian::Little => b & 1 == 1,
        Endian::Big => b & 0x80 != 0,
    }
}

fn need(data: &[u8], offset: usize, len: usize, end: usize, what: &'static str) -> Result<usize> {
    let rec_end = offset.checked_add(len).ok_or_else(|| {
        crate::error::invalid(
            offset,
            "a record size that fits in memory",
            format!("{len} bytes"),
        )
    })?;
    if rec_end <= end {
        return Ok(rec_end);
    }
    if end >= data.len() {
        Err(crate::error::cut(
            offset,
            what,
            len,
            data.len().saturating_sub(offset),
        ))
    } else {
        Err(crate::error::invalid(
            offset,
            "a record inside its buffer's extents",
            format!(
                "{what} over-reads the buffer end {end:#x} by {} bytes",
                rec_end - end
            ),
        ))
    }
}

/// Parses the record at `offset`, which must end at or before `end` (a buffer end or the file end).
/// Returns the record and its length. A record that runs past `end` is a truncation (a
/// [`cut`](crate::error::cut): see the `error` module) when `end` is the end of the file, else
/// malformed.
pub(crate) fn parse_fdr_record<'a>(
    data: &'a [u8],
    offset: usize,
    end: usize,
    header: &FileHeader,
) -> Result<(FdrRecord<'a>, usize)> {
    let e = header.endian;
    let end = end.min(data.len());
    let Some(&b0) = data.get(offset) else {
        return Err(crate::error::cut(offset, "FDR record", 1, 0));
    };
    if !is_metadata(b0, e) {
        need(
            data,
            offset,
            FDR_FUNCTION_RECORD_SIZE,
            end,
            "function record",
        )?;
        let rec = bytes_at::<8>(data, offset).unwrap_or_default();
        let w = e.u32(field(&rec, 0));
        let (kind, func_id) = match e {
            Endian::Little => ((w >> 1) & 7, w >> 4),
            Endian::Big => ((w >> 28) & 7, w & 0x0FFF_FFFF),
        };
        let rec = FdrRecord::Function {
            kind: FunctionKind(kind as u8),
            func_id,
            tsc_delta: e.u32(field(&rec, 4)),
        };
        return Ok((rec, FDR_FUNCTION_RECORD_SIZE));
    }
    let kind = MetadataKind(match e {
        Endian::Little => b0 >> 1,
        Endian::Big => b0 & 0x7f,
    });
    let what = kind.name().unwrap_or("metadata record");
    let body_end = need(data, offset, FDR_METADATA_RECORD_SIZE, end, what)?;
    let rec = bytes_at::<16>(data, offset).unwrap_or_default();
    let p: [u8; 15] = field(&rec, 1);
    let i32_at = |at: usize| e.u32(field(&p, at)) as i32;
    let u64_at = |at: usize| e.u64(field(&p, at));
    let payload = |size: i32| -> Result<&'a [u8]> {
        if size <= 0 {
            return Err(crate::error::invalid(
                offset,
                "an event payload size > 0",
                size.to_string(),
            ));
        }
        let stop = need(data, body_end, size as usize, end, "event payload").map_err(|err| {
            if !err.is_truncation() {
                return err;
            }
            // the cut is the whole record's, from its start
            crate::error::cut(
                offset,
                "event payload",
                FDR_METADATA_RECORD_SIZE.saturating_add(size as usize),
                data.len()
                    .saturating_sub(body_end)
                    .saturating_add(FDR_METADATA_RECORD_SIZE),
            )
        })?;
        Ok(data.get(body_end..stop).unwrap_or_default())
    };
    let record = match kind {
        MetadataKind::NEW_BUFFER => FdrRecord::NewBuffer { tid: i32_at(0) },
        MetadataKind::END_OF_BUFFER => FdrRecord::EndOfBuffer,
        MetadataKind::NEW_CPU_ID => FdrRecord::NewCpuId {
            cpu: e.u16(field(&p, 0)),
            tsc: u64_at(2),
        },
        MetadataKind::TSC_WRAP => FdrRecord::TscWrap { tsc: u64_at(0) },
        MetadataKind::WALLTIME_MARKER => FdrRecord::WalltimeMarker {
            seconds: u64_at(0) as i64,
            micros: i32_at(8),
        },
        MetadataKind::CUSTOM_EVENT_MARKER => {
            let size = i32_at(0);
            let time = match header.version {
                5.. => CustomEventTime::Delta(i32_at(4)),
                4 => CustomEventTime::Absolute {
                    tsc: u64_at(4),
                    cpu: Some(e.u16(field(&p, 12))),
                },
                _ => CustomEventTime::Absolute {
                    tsc: u64_at(4),
                    cpu: None,
                },
            };
            let data = payload(size)?;
            return Ok((
                FdrRecord::CustomEvent { size, time, data },
                FDR_METADATA_RECORD_SIZE + data.len(),
            ));
        }
        MetadataKind::CALL_ARGUMENT => FdrRecord::CallArgument { arg: u64_at(0) },
        MetadataKind::BUFFER_EXTENTS => FdrRecord::BufferExtents { size: u64_at(0) },
        MetadataKind::TYPED_EVENT_MARKER => {
            let size = i32_at(0);
            let tsc_delta = i32_at(4);
            let event_type = e.u16(field(&p, 8));
            let data = payload(size)?;
            let rec = FdrRecord::TypedEvent {
                size,
                tsc_delta,
                event_type,
                data,
            };
            return Ok((rec, FDR_METADATA_RECORD_SIZE + data.len()));
        }
        MetadataKind::PID => FdrRecord::Pid { pid: i32_at(0) },
        kind => FdrRecord::UnknownMetadata { kind, payload: p },
    };
    Ok((record, FDR_METADATA_RECORD_SIZE))
}

/// A byte range of the file holding one buffer's records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// Offset of the BufferExtents record that announced this buffer, if any.
    pub extents_offset: Option<u64>,
    /// Offset of the first record (normally a NewBuffer).
    pub start: u64,
    /// End of the records (exclusive). In a buffer cut off by the end of the file: the end of
    /// its last complete record.
    pub end: u64,
    /// The end the BufferExtents record announced, when the file is shorter.
    pub declared_end: Option<u64>,
    /// Error that ended this buffer early (records after it could not be sized). Never a
    /// truncation: that is [`FdrLayout::truncation`].
    pub stop: Option<Error>,
}

/// Why bytes between buffers were skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipKind {
    /// Zero padding after a version-1 EndOfBuffer (expected).
    Padding,
    /// Bytes that are not a buffer: skipped by scanning for the next buffer start.
    Junk,
}

/// Bytes skipped between buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skip {
    /// Absolute offset of the first skipped byte.
    pub offset: u64,
    /// Number of bytes skipped.
    pub len: u64,
    /// Padding or junk.
    pub kind: SkipKind,
}

/// A piece of the data section, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Index into [`FdrLayout::buffers`].
    Buffer(usize),
    /// Skipped bytes.
    Skip(Skip),
}

/// How an FDR file splits into buffers: computed once, cheaply (it jumps from one BufferExtents
/// to the next), so that buffers can be decoded independently and in parallel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FdrLayout {
    /// The buffers, in file order.
    pub buffers: Vec<Buffer>,
    /// Buffers and skips, in file order.
    pub segments: Vec<Segment>,
    /// Where the file is cut, if it ends inside a record or inside the bytes a BufferExtents
    /// announced. The buffer it cuts ends at its last complete record, so every buffer decodes
    /// without meeting the cut. `record` is `None` here (counting records needs a decode;
    /// [`crate::Decoded::truncation`] has it).
    pub truncation: Option<Truncation>,
}

impl FdrLayout {
    /// Splits the data section of `data` (the whole file) into buffers.
    ///
    /// Version ≥ 2 buffers are bounded by their BufferExtents. Between buffers, bytes that do not
    /// start a buffer are skipped by scanning for the next BufferExtents followed by a NewBuffer
    /// (or a NewBuffer followed by a WalltimeMarker); each skip is reported. Buffers without
    /// extents (version 1, or a producer that omits them) are walked record by record and end
    /// at the next NewBuffer/BufferExtents, or after an EndOfBuffer, whose padding up to the
    /// header's buffer size is skipped.
    pub fn scan(data: &[u8], header: &FileHeader) -> FdrLayout {
        let mut out = FdrLayout::default();
        let e = header.endian;
        let bx = metadata_introducer(MetadataKind::BUFFER_EXTENTS, e);
        let nb = metadata_introducer(MetadataKind::NEW_BUFFER, e);
        let wt = metadata_introducer(MetadataKind::WALLTIME_MARKER, e);
        let looks_like_start = |p: usize| -> bool {
            let b = data.get(p).copied();
            let b16 = p.checked_add(16).and_then(|q| data.get(q)).copied();
            (header.version >= 2 && b == Some(bx) && b16 == Some(nb))
                || (b == Some(nb) && b16 == Some(wt))
        };
        let len = data.len();
        let mut pos = HEADER_SIZE;
        while pos < len {
            let b = data.get(pos).copied().unwrap_or(0);
            if b == bx && header.version >= 2 {
                let Some(rec) = bytes_at::<16>(data, pos) else {
                    out.truncation = Some(Truncation::new(
                        pos as u64,
                        None,
                        format!("BufferExtents needs 16 bytes, {} remain", len - pos),
                    ));
                    break;
                };
                let n = e.u64(field(&rec, 1));
                let start = pos + 16;
                let avail = len - start;
                if n == 0 {
                    pos = start;
                    continue;
                }
                if n > avail as u64 {
                    let (end, cut) = complete_records(data, header, start);
                    let announced = || {
                        format!(
                            "the buffer announced by the BufferExtents at {pos:#x} needs {n} bytes, {avail} remain"
                        )
                    };
                    out.truncation = Some(match cut {
                        Cut::InRecord(t) => t,
                        Cut::AtRecordEnd => Truncation::new(len as u64, None, announced()),
                        Cut::Unreachable => Truncation::new(pos as u64, None, announced()),
                    });
                    out.push_buffer(Buffer {
                        extents_offset: Some(pos as u64),
                        start: start as u64,
                        end: end as u64,
                        declared_end: Some((start as u64).saturating_add(n)),
                        stop: None,
                    });
                    break;
                }
                let end = start + n as usize;
                out.push_buffer(Buffer {
                    extents_offset: Some(pos as u64),
                    start: start as u64,
                    end: end as u64,
                    declared_end: None,
                    stop: None,
                });
                pos = end;
            } else if b == nb {
                pos = out.walk_unbounded(data, header, pos);
            } else {
                let mut p = pos + 1;
                while p < len && !looks_like_start(p) {
                    p += 1;
                }
                let all_zero = data.get(pos..p).is_some_and(|s| s.iter().all(|&b| b == 0));
                out.segments.push(Segment::Skip(Skip {
                    offset: pos as u64,
                    len: (p - pos) as u64,
                    kind: if all_zero && header.version == 1 {
                        SkipKind::Padding
                    } else {
                        SkipKind::Junk
                    },
                }));
                pos = p;
            }
        }
        out
    }

    fn push_buffer(&mut self, b: Buffer) {
        self.segments.push(Segment::Buffer(self.buffers.len()));
        self.buffers.push(b);
    }

    /// Walks records from a NewBuffer without extents; returns where scanning resumes.
    fn walk_unbounded(&mut self, data: &[u8], header: &FileHeader, start: usize) -> usize {
        let len = data.len();
        let mut pos = start;
        let mut stop = None;
        let mut after_eob = false;
        while pos < len {
            match parse_fdr_record(data, pos, len, header) {
                Ok((rec, n)) => {
                    let kind = rec.metadata_kind();
                    if pos != start
                        && matches!(kind, Some(MetadataKind::NEW_BUFFER))
                            | (header.version >= 2
                                && matches!(kind, Some(MetadataKind::BUFFER_EXTENTS)))
                    {
                        break;
                    }
                    pos += n;
                    if kind == Some(MetadataKind::END_OF_BUFFER) {
                        after_eob = true;
                        break;
                    }
                }
                Err(err) => {
                    if let Some(t) = err.to_truncation() {
                        self.truncation = Some(t);
                    } else {
                        stop = Some(err);
                    }
                    break;
                }
            }
        }
        let resume = if self.truncation.is_some() {
            Some(len)
        } else if stop.is_some() {
            // Records after one that cannot be sized are unreachable: the junk scan takes over.
            Some(if pos == start { start + 1 } else { pos })
        } else {
            None
        };
        self.push_buffer(Buffer {
            extents_offset: None,
            start: start as u64,
            end: pos as u64,
            declared_end: None,
            stop,
        });
        if let Some(resume) = resume {
            return resume;
        }
        if after_eob && header.buffer_size > 0 {
            let target = (start as u64).saturating_add(header.buffer_size);
            if target > pos as u64 && target <= len as u64 {
                let t = target as usize;
                self.segments.push(Segment::Skip(Skip {
                    offset: pos as u64,
                    len: (t - pos) as u64,
                    kind: SkipKind::Padding,
                }));
                return t;
            }
        }
        pos
    }
}

/// How a walk to the end of the file ended.
enum Cut {
    /// Inside a record: the truncation names it.
    InRecord(Truncation),
    /// Exactly after a complete record.
    AtRecordEnd,
    /// At a record that cannot be sized, before the cut: the rest is unreachable.
    Unreachable,
}

/// Walks the records from `start` to the end of the file: the end of the last complete record
/// (the end of the file when a record cannot be sized: the buffer's decoder reports it there)
/// and where the walk stopped.
fn complete_records(data: &[u8], header: &FileHeader, start: usize) -> (usize, Cut) {
    let len = data.len();
    let mut pos = start;
    while pos < len {
        match parse_fdr_record(data, pos, len, header) {
            Ok((_, n)) => pos += n,
            Err(err) => {
                return match err.to_truncation() {
                    Some(t) => (pos, Cut::InRecord(t)),
                    None => (len, Cut::Unreachable),
                }
            }
        }
    }
    (pos, Cut::AtRecordEnd)
}

/// One entry of the sequential walk over an FDR file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FdrEntry<'a> {
    /// A record.
    Record(FdrItem<'a>),
    /// Skipped bytes between buffers.
    Skip(Skip),
    /// A record that cannot be decoded; the walk continues with the next buffer. (The end of
    /// the file inside a record is not a problem: see [`FdrRecords::truncation`].)
    Problem(Error),
}

/// Sequential iterator over every record of an FDR file (BufferExtents records included), with
/// skips and problems in file order. Every complete record before a cut is yielded;
/// [`FdrRecords::truncation`] says where the cut is.
#[derive(Clone, Debug)]
pub struct FdrRecords<'a, 'l> {
    data: &'a [u8],
    header: FileHeader,
    layout: &'l FdrLayout,
    seg: usize,
    in_buffer: Option<(usize, usize, bool)>,
    index: u64,
    truncation: Option<Truncation>,
}

impl<'a, 'l> FdrRecords<'a, 'l> {
    /// Walks `data` (the whole file) along `layout`.
    pub fn new(data: &'a [u8], header: FileHeader, layout: &'l FdrLayout) -> Self {
        FdrRecords {
            data,
            header,
            layout,
            seg: 0,
            in_buffer: None,
            index: 0,
            truncation: None,
        }
    }

    /// Set once the walk has ended at a cut: [`FdrLayout::truncation`] with the index the
    /// incomplete record would have had.
    pub fn truncation(&self) -> Option<&Truncation> {
        self.truncation.as_ref()
    }
}

impl<'a> Iterator for FdrRecords<'a, '_> {
    type Item = FdrEntry<'a>;

    fn next(&mut self) -> Option<FdrEntry<'a>> {
        loop {
            if let Some((bi, pos, extents_done)) = self.in_buffer {
                let buf = self.layout.buffers.get(bi)?;
                if !extents_done {
                    self.in_buffer = Some((bi, pos, true));
                    if let Some(xo) = buf.extents_offset {
                        if let Ok((record, _)) =
                            parse_fdr_record(self.data, xo as usize, self.data.len(), &self.header)
                        {
                            let item = FdrItem {
                                offset: xo,
                                index: self.index,
                                record,
                            };
                            self.index += 1;
                            return Some(FdrEntry::Record(item));
                        }
                    }
                    continue;
                }
                let end = buf.end as usize;
                if pos < end {
                    match parse_fdr_record(self.data, pos, end, &self.header) {
                        Ok((record, n)) => {
                            self.in_buffer = Some((bi, pos + n, true));
                            let item = FdrItem {
                                offset: pos as u64,
                                index: self.index,
                                record,
                            };
                            self.index += 1;
                            return Some(FdrEntry::Record(item));
                        }
                        Err(err) => {
                            self.in_buffer = None;
                            return Some(FdrEntry::Problem(
                                err.in_buffer().with_record(self.index),
                            ));
                        }
                    }
                }
                self.in_buffer = None;
                if let Some(stop) = &buf.stop {
                    return Some(FdrEntry::Problem(stop.clone().with_record(self.index)));
                }
                continue;
            }
            let Some(seg) = self.layout.segments.get(self.seg) else {
                if self.truncation.is_none() {
                    self.truncation = self.layout.truncation.clone().map(|mut t| {
                        t.record = Some(self.index);
                        t
                    });
                }
                return None;
            };
            self.seg += 1;
            match seg {
                Segment::Buffer(bi) => {
                    let start = self.layout.buffers.get(*bi).map_or(0, |b| b.start as usize);
                    self.in_buffer = Some((*bi, start, false));
                }
                Segment::Skip(s) => return Some(FdrEntry::Skip(*s)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::encode_fdr_record;

    #[test]
    fn every_record_round_trips_through_the_encoder() {
        let recs = [
            FdrRecord::Function {
                kind: FunctionKind::TAIL_EXIT,
                func_id: 0x0FFF_FFFF,
                tsc_delta: u32::MAX,
            },
            FdrRecord::NewBuffer { tid: -1 },
            FdrRecord::EndOfBuffer,
            FdrRecord::NewCpuId {
                cpu: 513,
                tsc: u64::MAX,
            },
            FdrRecord::TscWrap { tsc: 1 << 40 },
            FdrRecord::WalltimeMarker {
                seconds: -3,
                micros: 999_999,
            },
            FdrRecord::CallArgument { arg: 0xdead_beef },
            FdrRecord::BufferExtents { size: 77 },
            FdrRecord::TypedEvent {
                size: 2,
                tsc_delta: -4,
                event_type: 42,
                data: b"ab",
            },
            FdrRecord::Pid { pid: 1234 },
            FdrRecord::UnknownMetadata {
                kind: MetadataKind(12),
                payload: [7; 15],
            },
        ];
        for version in 1..=5 {
            for endian in [Endian::Little, Endian::Big] {
                let h = FileHeader {
                    version,
                    endian,
                    ..FileHeader::fdr(version)
                };
                let mut custom = vec![FdrRecord::CustomEvent {
                    size: 3,
                    time: if version >= 5 {
                        CustomEventTime::Delta(9)
                    } else {
                        CustomEventTime::Absolute {
                            tsc: 5,
                            cpu: (version == 4).then_some(2),
                        }
                    },
                    data: b"xyz",
                }];
                custom.extend_from_slice(&recs);
                for r in &custom {
                    let mut out = Vec::new();
                    encode_fdr_record(&mut out, r, &h);
                    assert_eq!(out.len(), r.encoded_len());
                    let (back, n) = parse_fdr_record(&out, 0, out.len(), &h).unwrap();
                    assert_eq!((&back, n), (r, out.len()), "v{version} {endian:?}");
                }
            }
        }
    }

    #[test]
    fn over_read_vs_truncation() {
        let h = FileHeader::fdr(5);
        let mut out = Vec::new();
        encode_fdr_record(&mut out, &FdrRecord::Pid { pid: 1 }, &h);
        out.extend_from_slice(&[0; 8]);
        assert!(matches!(
            parse_fdr_record(&out, 0, 10, &h),
            Err(e) if e.kind() == crate::ErrorKind::Malformed
        ));
        assert!(parse_fdr_record(&out[..10], 0, 10, &h)
            .unwrap_err()
            .is_truncation());
    }
}
