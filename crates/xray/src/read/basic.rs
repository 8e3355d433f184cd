//! Basic ("naive") mode: 32-byte records after the header.

use crate::error::Truncation;
use crate::raw::{bytes_at, field, BasicRecordType, FunctionKind, BASIC_RECORD_SIZE, HEADER_SIZE};
use crate::read::header::FileHeader;

/// One typed basic-mode record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BasicRecord {
    /// `record_type == 0`: a function event with an absolute TSC.
    Function {
        /// CPU (one byte on disk).
        cpu: u8,
        /// Enter / exit / tail exit / enter-with-args.
        kind: FunctionKind,
        /// Function id from the instrumentation map.
        func_id: i32,
        /// Absolute TSC.
        tsc: u64,
        /// Thread id.
        tid: u32,
        /// Process id (version 3+, else 0).
        pid: u32,
    },
    /// `record_type == 1`: one argument of the previous function record.
    ArgPayload {
        /// Must equal the previous record's function id.
        func_id: i32,
        /// Must equal the previous record's thread id.
        tid: u32,
        /// Must equal the previous record's pid (version 3+).
        pid: u32,
        /// The argument value.
        arg: u64,
    },
    /// Any other record type (reported, never fatal to the iteration).
    Unknown {
        /// The record type.
        record_type: BasicRecordType,
    },
}

/// A basic record with its position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BasicItem {
    /// Absolute byte offset of the record.
    pub offset: u64,
    /// Index of the record (0 = first record after the header).
    pub index: u64,
    /// The record.
    pub record: BasicRecord,
}

/// Parses the 32-byte basic record `rec`.
pub(crate) fn parse_basic_record(
    rec: &[u8; BASIC_RECORD_SIZE],
    header: &FileHeader,
) -> BasicRecord {
    let e = header.endian;
    let record_type = BasicRecordType(e.u16(field(rec, 0)));
    let pid_of = |v: u32| if header.version >= 3 { v } else { 0 };
    match record_type {
        BasicRecordType::FUNCTION => BasicRecord::Function {
            cpu: rec[2],
            kind: FunctionKind(rec[3]),
            func_id: e.u32(field(rec, 4)) as i32,
            tsc: e.u64(field(rec, 8)),
            tid: e.u32(field(rec, 16)),
            pid: pid_of(e.u32(field(rec, 20))),
        },
        BasicRecordType::ARG_PAYLOAD => BasicRecord::ArgPayload {
            func_id: e.u32(field(rec, 4)) as i32,
            tid: e.u32(field(rec, 8)),
            pid: pid_of(e.u32(field(rec, 12))),
            arg: e.u64(field(rec, 16)),
        },
        record_type => BasicRecord::Unknown { record_type },
    }
}

/// Iterator over the records of a basic-mode trace.
///
/// Yields every complete record; if the file ends inside a record it stops there and
/// [`BasicRecords::truncation`] says where.
#[derive(Clone, Debug)]
pub struct BasicRecords<'a> {
    data: &'a [u8],
    header: FileHeader,
    pos: usize,
    index: u64,
    done: bool,
    truncation: Option<Truncation>,
}

impl<'a> BasicRecords<'a> {
    /// Records of `data` (the whole file, header included).
    pub fn new(data: &'a [u8], header: FileHeader) -> Self {
        BasicRecords {
            data,
            header,
            pos: HEADER_SIZE,
            index: 0,
            done: false,
            truncation: None,
        }
    }

    /// Number of complete records in the file.
    pub fn count_complete(data: &[u8]) -> u64 {
        (data.len().saturating_sub(HEADER_SIZE) / BASIC_RECORD_SIZE) as u64
    }

    /// Set once iteration has stopped at an incomplete record.
    pub fn truncation(&self) -> Option<&Truncation> {
        self.truncation.as_ref()
    }
}

/// Where a basic-mode file of `len` bytes is cut, if it ends inside a record.
pub(crate) fn basic_truncation(len: usize) -> Option<Truncation> {
    let body = len.checked_sub(HEADER_SIZE)?;
    let partial = body % BASIC_RECORD_SIZE;
    (partial != 0).then(|| {
        Truncation::new(
            (len - partial) as u64,
            Some((body / BASIC_RECORD_SIZE) as u64),
            format!("basic record needs {BASIC_RECORD_SIZE} bytes, {partial} remain"),
        )
    })
}

impl Iterator for BasicRecords<'_> {
    type Item = BasicItem;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.data.len() {
            return None;
        }
        let offset = self.pos;
        match bytes_at::<BASIC_RECORD_SIZE>(self.data, offset) {
            Some(rec) => {
                let item = BasicItem {
                    offset: offset as u64,
                    index: self.index,
                    record: parse_basic_record(&rec, &self.header),
                };
                self.pos = offset.saturating_add(BASIC_RECORD_SIZE);
                self.index += 1;
                Some(item)
            }
            None => {
                self.done = true;
                self.truncation = basic_truncation(self.data.len());
                None
            }
        }
    }
}
