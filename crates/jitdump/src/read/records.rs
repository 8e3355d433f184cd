//! The record iterator ([`Records`]), borrowed raw records ([`RawRecord`]) and the typed
//! records they parse into ([`Record`]).

use super::bytes::{split_cstr, u32_at, u64_at};
use super::debug_info2::DebugInfo2;
use crate::error::{Error, Result, Truncation};
use crate::raw::{Endian, RecordType, RECORD_HEADER_SIZE};
use profkit_common::bytes::ReadAhead;

/// Iterator over the records of a jitdump, in file order.
///
/// Yields `Ok(RawRecord)` for each complete record. A record whose `total_size` is below the
/// 16-byte record header is corrupt: it is yielded as `Err` and iteration stops (the next
/// record's position is unknown). When the file ends inside a record, iteration stops and
/// [`Records::truncation`] says where.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    data: &'a [u8],
    pos: usize,
    index: usize,
    endian: Endian,
    done: bool,
    truncation: Option<Truncation>,
    /// The lines ahead of the next record, prefetched.
    ahead: ReadAhead,
}

impl<'a> Records<'a> {
    /// Records of `data` starting at byte `start` (the end of the file header).
    pub fn new(data: &'a [u8], start: usize, endian: Endian) -> Records<'a> {
        Records {
            data,
            pos: start,
            index: 0,
            endian,
            done: false,
            truncation: None,
            ahead: ReadAhead::new(start),
        }
    }

    /// Set once iteration has stopped at an incomplete record.
    pub fn truncation(&self) -> Option<&Truncation> {
        self.truncation.as_ref()
    }

    /// Offset of the next record to read (after a stop: of the record where it stopped).
    pub fn offset(&self) -> u64 {
        self.pos as u64
    }

    /// Index the next record will get.
    pub fn next_index(&self) -> usize {
        self.index
    }

    /// Reads only the record header at the current position and skips the body without
    /// looking at it: the fastest way to walk a file.
    #[inline]
    pub fn next_header(&mut self) -> Option<Result<RecordHeader>> {
        let raw = self.next()?;
        Some(raw.map(|r| r.header()))
    }

    #[cold]
    fn stop_truncated(&mut self, reason: String) {
        self.done = true;
        self.truncation = Some(Truncation::new(
            self.pos as u64,
            Some(self.index as u64),
            reason,
        ));
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RawRecord<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        if rest.is_empty() {
            self.done = true;
            return None;
        }
        let Some(head) = rest.get(..RECORD_HEADER_SIZE) else {
            self.stop_truncated(format!(
                "record header needs {RECORD_HEADER_SIZE} bytes, {} remain",
                rest.len()
            ));
            return None;
        };
        let id = u32_at(head, 0, self.endian).unwrap_or(0);
        let total_size = u32_at(head, 4, self.endian).unwrap_or(0);
        let timestamp = u64_at(head, 8, self.endian).unwrap_or(0);
        let record_type = RecordType(id);
        let size = total_size as usize;
        if size < RECORD_HEADER_SIZE {
            self.done = true;
            return Some(Err(Error::record(
                self.index as u64,
                self.pos as u64,
                format!(
                    "{record_type} total_size {total_size} is below the {RECORD_HEADER_SIZE}-byte record header"
                ),
            )));
        }
        let Some(bytes) = rest.get(..size) else {
            self.stop_truncated(format!(
                "{record_type} declares total_size {total_size} but only {} bytes remain",
                rest.len()
            ));
            return None;
        };
        let raw = RawRecord {
            index: self.index,
            offset: self.pos as u64,
            record_type,
            timestamp,
            endian: self.endian,
            body: bytes.get(RECORD_HEADER_SIZE..).unwrap_or(&[]),
        };
        self.pos += size;
        self.index += 1;
        self.ahead.reached(self.data, self.pos);
        Some(Ok(raw))
    }
}

impl core::iter::FusedIterator for Records<'_> {}

/// The 16-byte record header with its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// Record index, 0 for the first record after the file header.
    pub index: usize,
    /// Absolute offset of the record in the file.
    pub offset: u64,
    /// The record id.
    pub record_type: RecordType,
    /// Total size including the 16-byte header.
    pub total_size: u32,
    /// The record's timestamp.
    pub timestamp: u64,
}

/// A complete record, borrowed from the file; [`RawRecord::parse`] decodes its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// Record index, 0 for the first record after the file header.
    pub index: usize,
    /// Absolute offset of the record (its header) in the file.
    pub offset: u64,
    /// The record id.
    pub record_type: RecordType,
    /// The record's timestamp.
    pub timestamp: u64,
    /// Byte order of the file.
    pub endian: Endian,
    /// The bytes after the 16-byte record header (`total_size - 16` of them).
    pub body: &'a [u8],
}

impl<'a> RawRecord<'a> {
    /// The record header.
    pub fn header(&self) -> RecordHeader {
        RecordHeader {
            index: self.index,
            offset: self.offset,
            record_type: self.record_type,
            total_size: (self.body.len() + RECORD_HEADER_SIZE) as u32,
            timestamp: self.timestamp,
        }
    }

    /// `total_size` as written in the record header.
    pub fn total_size(&self) -> usize {
        self.body.len() + RECORD_HEADER_SIZE
    }

    /// Absolute file offset of body byte `at`.
    pub fn body_offset(&self, at: usize) -> u64 {
        self.offset + (RECORD_HEADER_SIZE + at) as u64
    }

    /// An error about this record, at body byte `at`.
    #[cold]
    pub fn error_at(&self, at: usize, message: impl Into<String>) -> Error {
        Error::record(self.index as u64, self.body_offset(at), message)
    }

    /// An error about this record as a whole (offset = the record's start).
    #[cold]
    pub fn error(&self, message: impl Into<String>) -> Error {
        Error::record(self.index as u64, self.offset, message)
    }

    fn check_fixed(&self) -> Result<()> {
        if let Some(fixed) = self.record_type.fixed_body_size() {
            if self.body.len() < fixed {
                return Err(self.error(format!(
                    "{} total_size {} is below its {}-byte fixed part",
                    self.record_type,
                    self.total_size(),
                    fixed + RECORD_HEADER_SIZE
                )));
            }
        }
        Ok(())
    }

    #[inline]
    fn u32(&self, off: usize) -> u32 {
        u32_at(self.body, off, self.endian).unwrap_or(0)
    }

    #[inline]
    fn u64(&self, off: usize) -> u64 {
        u64_at(self.body, off, self.endian).unwrap_or(0)
    }

    /// Decodes the body into a typed record. Unknown ids give [`Record::Unknown`].
    pub fn parse(&self) -> Result<Record<'a>> {
        self.check_fixed()?;
        Ok(match self.record_type {
            RecordType::CODE_LOAD => Record::CodeLoad(self.parse_code_load()?),
            RecordType::CODE_MOVE => Record::CodeMove(CodeMove {
                pid: self.u32(0),
                tid: self.u32(4),
                vma: self.u64(8),
                old_code_addr: self.u64(16),
                new_code_addr: self.u64(24),
                code_size: self.u64(32),
                code_index: self.u64(40),
            }),
            RecordType::CODE_DEBUG_INFO => Record::DebugInfo(self.parse_debug_info()?),
            RecordType::CODE_CLOSE => Record::CodeClose,
            RecordType::CODE_UNWINDING_INFO => Record::UnwindingInfo(self.parse_unwinding()?),
            RecordType::SAMPLY_DEBUG_INFO2 => Record::DebugInfo2(DebugInfo2::parse(self)?),
            RecordType::SAMPLY_JIT_TIER => Record::JitTier(self.parse_tier()?),
            RecordType::SAMPLY_EMBEDDED_SOURCE_FILE => {
                Record::EmbeddedSourceFile(self.parse_embedded_source()?)
            }
            _ => Record::Unknown(*self),
        })
    }

    fn parse_code_load(&self) -> Result<CodeLoad<'a>> {
        const NAME_AT: usize = 40;
        let code_size = self.u64(24);
        let after_fixed = self.body.get(NAME_AT..).unwrap_or(&[]);
        let (name, rest) = split_cstr(after_fixed).ok_or_else(|| {
            self.error_at(
                NAME_AT,
                "JIT_CODE_LOAD name is not NUL-terminated within the record",
            )
        })?;
        let code_at = NAME_AT + name.len() + 1;
        let (code, trailing) = if rest.is_empty() && code_size > 0 {
            (None, rest)
        } else {
            match usize::try_from(code_size).ok().filter(|&n| n <= rest.len()) {
                Some(n) => (rest.get(..n), rest.get(n..).unwrap_or(&[])),
                None => {
                    return Err(self.error_at(
                        code_at,
                        format!(
                            "JIT_CODE_LOAD code_size {code_size} but {} bytes follow the name",
                            rest.len()
                        ),
                    ))
                }
            }
        };
        Ok(CodeLoad {
            pid: self.u32(0),
            tid: self.u32(4),
            vma: self.u64(8),
            code_addr: self.u64(16),
            code_size,
            code_index: self.u64(32),
            name,
            code,
            trailing,
        })
    }

    fn parse_debug_info(&self) -> Result<DebugInfo<'a>> {
        let nr_entry = self.u64(8);
        let entries = self.body.get(16..).unwrap_or(&[]);
        // Each entry is at least 17 bytes (16 fixed + the file name's NUL).
        if nr_entry > (entries.len() / DebugEntry::MIN_SIZE) as u64 {
            return Err(self.error_at(
                8,
                format!(
                    "JIT_CODE_DEBUG_INFO nr_entry {nr_entry} cannot fit in {} bytes (at least {} bytes per entry)",
                    entries.len(),
                    DebugEntry::MIN_SIZE
                ),
            ));
        }
        Ok(DebugInfo {
            code_addr: self.u64(0),
            nr_entry,
            entries_data: entries,
            entries_offset: self.body_offset(16),
            endian: self.endian,
        })
    }

    fn parse_unwinding(&self) -> Result<UnwindingInfo<'a>> {
        let unwind_data_size = self.u64(0);
        let eh_frame_hdr_size = self.u64(8);
        let mapped_size = self.u64(16);
        let rest = self.body.get(24..).unwrap_or(&[]);
        let n = usize::try_from(unwind_data_size)
            .ok()
            .filter(|&n| n <= rest.len())
            .ok_or_else(|| {
                self.error_at(
                    0,
                    format!(
                        "JIT_CODE_UNWINDING_INFO unwind_data_size {unwind_data_size} exceeds the {} bytes after its fixed part",
                        rest.len()
                    ),
                )
            })?;
        if eh_frame_hdr_size > unwind_data_size {
            return Err(self.error_at(
                8,
                format!(
                    "JIT_CODE_UNWINDING_INFO eh_frame_hdr_size {eh_frame_hdr_size} exceeds unwind_data_size {unwind_data_size}"
                ),
            ));
        }
        Ok(UnwindingInfo {
            unwind_data_size,
            eh_frame_hdr_size,
            mapped_size,
            unwind_data: rest.get(..n).unwrap_or(&[]),
            padding: rest.get(n..).unwrap_or(&[]),
        })
    }

    fn parse_tier(&self) -> Result<JitTier<'a>> {
        let (name, padding) = split_cstr(self.body.get(16..).unwrap_or(&[])).ok_or_else(|| {
            self.error_at(
                16,
                "SAMPLY_JIT_TIER tier name is not NUL-terminated within the record (some drafts used id 827346260 for DEBUG_INFO2)",
            )
        })?;
        Ok(JitTier {
            code_addr: self.u64(0),
            color: self.u32(8),
            flags: self.u32(12),
            name,
            padding,
        })
    }

    fn parse_embedded_source(&self) -> Result<EmbeddedSourceFile<'a>> {
        let path_size = self.u32(0);
        let content_size = self.u64(8);
        let rest = self.body.get(16..).unwrap_or(&[]);
        let path_field = rest.get(..path_size as usize).ok_or_else(|| {
            self.error_at(
                0,
                format!(
                    "SAMPLY_EMBEDDED_SOURCE_FILE path_size {path_size} exceeds the {} bytes after its fixed part",
                    rest.len()
                ),
            )
        })?;
        let (path, path_padding) = split_cstr(path_field).ok_or_else(|| {
            self.error_at(
                16,
                "SAMPLY_EMBEDDED_SOURCE_FILE path is not NUL-terminated within path_size",
            )
        })?;
        let after_path = rest.get(path_size as usize..).unwrap_or(&[]);
        let n = usize::try_from(content_size)
            .ok()
            .filter(|&n| n <= after_path.len())
            .ok_or_else(|| {
                self.error_at(
                    8,
                    format!(
                        "SAMPLY_EMBEDDED_SOURCE_FILE content_size {content_size} exceeds the {} bytes after the path",
                        after_path.len()
                    ),
                )
            })?;
        Ok(EmbeddedSourceFile {
            path_size,
            flags: self.u32(4),
            path,
            path_padding,
            content: after_path.get(..n).unwrap_or(&[]),
            padding: after_path.get(n..).unwrap_or(&[]),
        })
    }
}

/// A decoded record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record<'a> {
    /// JIT_CODE_LOAD.
    CodeLoad(CodeLoad<'a>),
    /// JIT_CODE_MOVE.
    CodeMove(CodeMove),
    /// JIT_CODE_DEBUG_INFO.
    DebugInfo(DebugInfo<'a>),
    /// JIT_CODE_CLOSE.
    CodeClose,
    /// JIT_CODE_UNWINDING_INFO.
    UnwindingInfo(UnwindingInfo<'a>),
    /// SAMPLY_JIT_CODE_DEBUG_INFO2.
    DebugInfo2(DebugInfo2<'a>),
    /// SAMPLY_JIT_TIER.
    JitTier(JitTier<'a>),
    /// SAMPLY_EMBEDDED_SOURCE_FILE.
    EmbeddedSourceFile(EmbeddedSourceFile<'a>),
    /// A record id this crate does not know, passed through.
    Unknown(RawRecord<'a>),
}

/// JIT_CODE_LOAD: a function's code was emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLoad<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Virtual address of the code (LLVM writes 0; consumers use `code_addr`).
    pub vma: u64,
    /// Address of the code.
    pub code_addr: u64,
    /// Size of the code in bytes.
    pub code_size: u64,
    /// Unique id of this code, referenced by MOVE.
    pub code_index: u64,
    /// Function name without its NUL (not guaranteed UTF-8).
    pub name: &'a [u8],
    /// The code bytes, or `None` when the record stops after the name (perf's JVMTI agent,
    /// .NET stubs).
    pub code: Option<&'a [u8]>,
    /// Bytes after the code (padding); usually empty.
    pub trailing: &'a [u8],
}

impl CodeLoad<'_> {
    /// The name as text, with invalid UTF-8 replaced.
    pub fn name_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.name)
    }
}

/// JIT_CODE_MOVE: code moved from `old_code_addr` to `new_code_addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeMove {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// New virtual address.
    pub vma: u64,
    /// Previous code address.
    pub old_code_addr: u64,
    /// New code address.
    pub new_code_addr: u64,
    /// Code size (must not change).
    pub code_size: u64,
    /// The code_index of the LOAD that emitted this code.
    pub code_index: u64,
}

/// JIT_CODE_DEBUG_INFO: a flat line table for the next LOAD. Entries are decoded lazily.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebugInfo<'a> {
    /// Address of the function described.
    pub code_addr: u64,
    /// Declared number of entries.
    pub nr_entry: u64,
    /// The bytes of the entries (and any padding after them).
    pub entries_data: &'a [u8],
    /// Absolute file offset of `entries_data`.
    pub entries_offset: u64,
    /// Byte order of the file.
    pub endian: Endian,
}

/// One line-table entry of a DEBUG_INFO record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebugEntry<'a> {
    /// Code address (V8 and LLVM add +0x40 to the real address).
    pub addr: u64,
    /// Source line, 1-based.
    pub line: u32,
    /// Discriminator; V8 writes the 1-based column here, LLVM the DWARF discriminator.
    pub discrim: u32,
    /// File name without its NUL (not guaranteed UTF-8).
    pub file: &'a [u8],
}

impl DebugEntry<'_> {
    /// Smallest encoded entry: addr, line, discrim and an empty file name's NUL.
    pub const MIN_SIZE: usize = 17;
}

/// How walking a DEBUG_INFO's entries ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugWalkEnd {
    /// All `nr_entry` entries were read and the record ends right after them, or only zero
    /// padding (fewer than 8 bytes, as V8 and CPython pad) follows.
    Exact {
        /// Zero bytes after the last entry.
        padding: usize,
    },
    /// All entries were read but other bytes follow (`leftover` of them).
    Leftover {
        /// Bytes after the last entry that are not short zero padding.
        leftover: usize,
    },
    /// Entry `entry` runs past the end of the record.
    Overrun {
        /// Index of the entry that does not fit.
        entry: u64,
        /// Its absolute file offset.
        offset: u64,
    },
}

impl<'a> DebugInfo<'a> {
    /// Walks the entries the way the spec says (NUL-terminated names), stopping at the
    /// first entry that does not fit.
    pub fn entries(&self) -> DebugEntries<'a> {
        DebugEntries {
            data: self.entries_data,
            pos: 0,
            remaining: self.nr_entry,
            endian: self.endian,
        }
    }

    /// Walks every entry and says how the walk ended. An end other than
    /// [`DebugWalkEnd::Exact`] means the record is corrupt (V8 in Node 20 writes such
    /// records for user scripts, see `validate`).
    pub fn walk_end(&self) -> DebugWalkEnd {
        let mut it = self.entries();
        let mut n = 0u64;
        while it.remaining > 0 {
            if it.next().is_none() {
                return DebugWalkEnd::Overrun {
                    entry: n,
                    offset: self.entries_offset + it.pos as u64,
                };
            }
            n += 1;
        }
        let rest = self.entries_data.get(it.pos..).unwrap_or(&[]);
        if rest.len() < 8 && super::bytes::all_zero(rest) {
            DebugWalkEnd::Exact {
                padding: rest.len(),
            }
        } else {
            DebugWalkEnd::Leftover {
                leftover: rest.len(),
            }
        }
    }

    /// Recovers the entries of a record whose file names are corrupt but whose entries all
    /// have the same encoded size (one file name length): the layout V8 writes. Returns the
    /// entry stride when the record's size is consistent with exactly one stride and every
    /// entry's line is plausible; then [`DebugInfo::entry_at_stride`] reads each entry.
    pub fn fixed_stride(&self) -> Option<usize> {
        let n = usize::try_from(self.nr_entry).ok().filter(|&n| n > 0)?;
        let len = self.entries_data.len();
        (0..8usize).find_map(|pad| {
            let used = len.checked_sub(pad)?;
            if used % n != 0 {
                return None;
            }
            let stride = used / n;
            if stride < DebugEntry::MIN_SIZE {
                return None;
            }
            let padding_ok = super::bytes::all_zero(self.entries_data.get(used..).unwrap_or(&[]));
            let plausible = (0..n).all(|i| {
                self.entry_at_stride(stride, i)
                    .is_some_and(|e| e.line > 0 && e.line < 10_000_000 && e.discrim < 1_000_000)
            });
            // The byte before each next entry must be the previous name's NUL.
            let nuls = (1..=n).all(|i| {
                self.entries_data
                    .get(i * stride - 1)
                    .is_some_and(|&b| b == 0)
            });
            (padding_ok && plausible && nuls).then_some(stride)
        })
    }

    /// Entry `i` of a fixed-stride layout (see [`DebugInfo::fixed_stride`]). The file name is
    /// everything between the fixed fields and the stride's final NUL, trimmed at the first NUL.
    pub fn entry_at_stride(&self, stride: usize, i: usize) -> Option<DebugEntry<'a>> {
        let start = stride.checked_mul(i)?;
        let bytes = self.entries_data.get(start..start.checked_add(stride)?)?;
        let name_field = bytes.get(16..stride.checked_sub(1)?)?;
        Some(DebugEntry {
            addr: u64_at(bytes, 0, self.endian)?,
            line: u32_at(bytes, 8, self.endian)?,
            discrim: u32_at(bytes, 12, self.endian)?,
            file: name_field,
        })
    }
}

/// Iterator over DEBUG_INFO entries (see [`DebugInfo::entries`]); ends early (returns
/// `None`) at an entry that does not fit.
#[derive(Debug, Clone)]
pub struct DebugEntries<'a> {
    data: &'a [u8],
    pos: usize,
    remaining: u64,
    endian: Endian,
}

impl DebugEntries<'_> {
    /// Entries not yet read (including one that did not fit).
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Whether every entry was read and at most short zero padding follows them: the walk
    /// ended as [`DebugWalkEnd::Exact`] (what [`DebugInfo::walk_end`] says, without a second
    /// walk).
    pub fn ended_exactly(&self) -> bool {
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        self.remaining == 0 && rest.len() < 8 && super::bytes::all_zero(rest)
    }

    /// Offset within the entries data of the next entry.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for DebugEntries<'a> {
    type Item = DebugEntry<'a>;

    #[inline]
    fn next(&mut self) -> Option<DebugEntry<'a>> {
        if self.remaining == 0 {
            return None;
        }
        let rest = self.data.get(self.pos..)?;
        let addr = u64_at(rest, 0, self.endian)?;
        let line = u32_at(rest, 8, self.endian)?;
        let discrim = u32_at(rest, 12, self.endian)?;
        let (file, _) = split_cstr(rest.get(16..)?)?;
        self.pos += 16 + file.len() + 1;
        self.remaining -= 1;
        Some(DebugEntry {
            addr,
            line,
            discrim,
            file,
        })
    }
}

/// JIT_CODE_UNWINDING_INFO: unwind tables for the next LOAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnwindingInfo<'a> {
    /// Bytes of unwinding data.
    pub unwind_data_size: u64,
    /// Bytes of `.eh_frame_hdr` within the data.
    pub eh_frame_hdr_size: u64,
    /// Bytes of the data mapped in memory (0 or `unwind_data_size` by the spec).
    pub mapped_size: u64,
    /// The unwinding data (`unwind_data_size` bytes).
    pub unwind_data: &'a [u8],
    /// Bytes after the data (padding to 8).
    pub padding: &'a [u8],
}

impl<'a> UnwindingInfo<'a> {
    /// `.eh_frame`: the data's first part. Every producer and perf put `.eh_frame` first and
    /// the `.eh_frame_hdr` last, although the spec text says the opposite.
    pub fn eh_frame(&self) -> &'a [u8] {
        let split = self.unwind_data.len() - self.hdr_len();
        self.unwind_data.get(..split).unwrap_or(&[])
    }

    /// `.eh_frame_hdr`: the data's last `eh_frame_hdr_size` bytes.
    pub fn eh_frame_hdr(&self) -> &'a [u8] {
        let split = self.unwind_data.len() - self.hdr_len();
        self.unwind_data.get(split..).unwrap_or(&[])
    }

    fn hdr_len(&self) -> usize {
        usize::try_from(self.eh_frame_hdr_size)
            .unwrap_or(usize::MAX)
            .min(self.unwind_data.len())
    }
}

/// SAMPLY_JIT_TIER: the tier that produced the next LOAD with the same `code_addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitTier<'a> {
    /// code_addr of the LOAD this applies to.
    pub code_addr: u64,
    /// Index into [`crate::raw::TIER_COLORS`].
    pub color: u32,
    /// Bit 0: the tier runs JavaScript-like source.
    pub flags: u32,
    /// Tier name without its NUL ("Baseline", "Tier0", …).
    pub name: &'a [u8],
    /// Bytes after the name's NUL (zero padding).
    pub padding: &'a [u8],
}

impl JitTier<'_> {
    /// The colour name; indexes past the list map to "grey".
    pub fn color_name(&self) -> &'static str {
        crate::raw::TIER_COLORS
            .get(self.color as usize)
            .copied()
            .unwrap_or("grey")
    }
}

/// SAMPLY_EMBEDDED_SOURCE_FILE: the content of a source file named by debug info.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddedSourceFile<'a> {
    /// Size of the padded path field.
    pub path_size: u32,
    /// Flags (0).
    pub flags: u32,
    /// The path without its NUL.
    pub path: &'a [u8],
    /// Bytes after the path's NUL inside the path field.
    pub path_padding: &'a [u8],
    /// The file content.
    pub content: &'a [u8],
    /// Bytes after the content (zero padding).
    pub padding: &'a [u8],
}
