//! SAMPLY_JIT_CODE_DEBUG_INFO2: a line table plus an inline tree (seed 001).
//!
//! Layout: eight `u32` counts and sizes, then six lists — files, function names (both
//! NUL-terminated strings padded to a multiple of 4), functions (5 × u32 each), inline calls
//! (5 × u32, depth-first), ranges (2 × u32, consumed in inline-call order) and line records
//! (4 × u32). The fixed-size entries are plain `Copy` structs shared with the writer.

use super::bytes::{split_cstr, u32_at};
use super::records::RawRecord;
use crate::error::Result;
use crate::raw::Endian;

/// A function of the function list: the outer function first, then inlined ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FunctionRecord {
    /// Index into the function-name list.
    pub function_name_index: u32,
    /// Index into the file list.
    pub file_index: u32,
    /// Line where the function starts.
    pub start_line: u32,
    /// Column where the function starts.
    pub start_column: u32,
    /// Flags (bit 0: show in a JS-only view).
    pub flags: u32,
}

/// One inlined call, in depth-first order; `depth` 0 = called from the outer function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct InlineCallRecord {
    /// Nesting depth; at most the previous record's depth + 1.
    pub depth: u32,
    /// Number of ranges this call consumes from the range list (≥ 1).
    pub range_count: u32,
    /// Index of the called function in the function list.
    pub function_index: u32,
    /// Line of the call in the caller's file.
    pub call_line_number: u32,
    /// Column of the call.
    pub call_column_number: u32,
}

/// A code range relative to the function start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Range {
    /// Offset from the function's start.
    pub start_offset: u32,
    /// Bytes covered.
    pub size: u32,
}

/// A line-table row: from `code_offset` to the next row, the location inside the deepest inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LineRecord {
    /// Offset from the function's start.
    pub code_offset: u32,
    /// Index into the file list.
    pub file_index: u32,
    /// Line, 1-based.
    pub line_number: u32,
    /// Column, 0-based.
    pub column_number: u32,
}

/// The eight counts and sizes of the fixed part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DebugInfo2Counts {
    /// Strings in the file list.
    pub file_count: u32,
    /// Bytes of the file list (a multiple of 4).
    pub file_list_size: u32,
    /// Strings in the function-name list.
    pub function_names_count: u32,
    /// Bytes of the function-name list (a multiple of 4).
    pub function_names_list_size: u32,
    /// Entries in the function list.
    pub function_count: u32,
    /// Entries in the inline-call list.
    pub inline_call_record_count: u32,
    /// Entries in the range list.
    pub range_count: u32,
    /// Entries in the line-record list.
    pub line_record_count: u32,
}

/// A borrowed SAMPLY_JIT_CODE_DEBUG_INFO2 record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebugInfo2<'a> {
    /// The fixed part.
    pub counts: DebugInfo2Counts,
    /// The padded file list.
    pub file_list: &'a [u8],
    /// The padded function-name list.
    pub function_names_list: &'a [u8],
    functions: &'a [u8],
    inline_calls: &'a [u8],
    ranges: &'a [u8],
    lines: &'a [u8],
    /// Bytes after the last list.
    pub trailing: &'a [u8],
    endian: Endian,
}

impl<'a> DebugInfo2<'a> {
    /// Size of the fixed part.
    pub const FIXED_SIZE: usize = 32;

    pub(crate) fn parse(raw: &RawRecord<'a>) -> Result<DebugInfo2<'a>> {
        let b = raw.body;
        let e = raw.endian;
        let f = |i: usize| u32_at(b, i * 4, e).unwrap_or(0);
        let counts = DebugInfo2Counts {
            file_count: f(0),
            file_list_size: f(1),
            function_names_count: f(2),
            function_names_list_size: f(3),
            function_count: f(4),
            inline_call_record_count: f(5),
            range_count: f(6),
            line_record_count: f(7),
        };
        let parts: [(&str, u64, usize); 6] = [
            (
                "file list (file_list_size)",
                u64::from(counts.file_list_size),
                4,
            ),
            (
                "function-name list (function_names_list_size)",
                u64::from(counts.function_names_list_size),
                12,
            ),
            (
                "function list (function_count × 20)",
                u64::from(counts.function_count) * 20,
                16,
            ),
            (
                "inline-call list (inline_call_record_count × 20)",
                u64::from(counts.inline_call_record_count) * 20,
                20,
            ),
            (
                "range list (range_count × 8)",
                u64::from(counts.range_count) * 8,
                24,
            ),
            (
                "line-record list (line_record_count × 16)",
                u64::from(counts.line_record_count) * 16,
                28,
            ),
        ];
        let mut pos = Self::FIXED_SIZE;
        let mut slices: [&[u8]; 6] = [&[]; 6];
        for (slot, (what, size, field)) in slices.iter_mut().zip(parts) {
            let rest = b.get(pos..).unwrap_or(&[]);
            let n = usize::try_from(size)
                .ok()
                .filter(|&n| n <= rest.len())
                .ok_or_else(|| {
                    raw.error_at(
                        field,
                        format!(
                            "SAMPLY_JIT_CODE_DEBUG_INFO2 {what} needs {size} bytes at body offset {pos}, {} remain",
                            rest.len()
                        ),
                    )
                })?;
            *slot = rest.get(..n).unwrap_or(&[]);
            pos += n;
        }
        let [file_list, function_names_list, functions, inline_calls, ranges, lines] = slices;
        Ok(DebugInfo2 {
            counts,
            file_list,
            function_names_list,
            functions,
            inline_calls,
            ranges,
            lines,
            trailing: b.get(pos..).unwrap_or(&[]),
            endian: e,
        })
    }

    /// The file names, walked NUL by NUL through the padded list (at most `file_count`).
    pub fn files(&self) -> StringList<'a> {
        StringList::new(self.file_list, self.counts.file_count)
    }

    /// The function names (at most `function_names_count`).
    pub fn function_names(&self) -> StringList<'a> {
        StringList::new(self.function_names_list, self.counts.function_names_count)
    }

    /// The function list.
    pub fn functions(&self) -> impl ExactSizeIterator<Item = FunctionRecord> + 'a {
        let e = self.endian;
        self.functions.chunks_exact(20).map(move |c| {
            let f = |i: usize| u32_at(c, i * 4, e).unwrap_or(0);
            FunctionRecord {
                function_name_index: f(0),
                file_index: f(1),
                start_line: f(2),
                start_column: f(3),
                flags: f(4),
            }
        })
    }

    /// The inline-call list, depth-first.
    pub fn inline_calls(&self) -> impl ExactSizeIterator<Item = InlineCallRecord> + 'a {
        let e = self.endian;
        self.inline_calls.chunks_exact(20).map(move |c| {
            let f = |i: usize| u32_at(c, i * 4, e).unwrap_or(0);
            InlineCallRecord {
                depth: f(0),
                range_count: f(1),
                function_index: f(2),
                call_line_number: f(3),
                call_column_number: f(4),
            }
        })
    }

    /// The range list.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = Range> + 'a {
        let e = self.endian;
        self.ranges.chunks_exact(8).map(move |c| Range {
            start_offset: u32_at(c, 0, e).unwrap_or(0),
            size: u32_at(c, 4, e).unwrap_or(0),
        })
    }

    /// The line-record list.
    pub fn lines(&self) -> impl ExactSizeIterator<Item = LineRecord> + 'a {
        let e = self.endian;
        self.lines.chunks_exact(16).map(move |c| {
            let f = |i: usize| u32_at(c, i * 4, e).unwrap_or(0);
            LineRecord {
                code_offset: f(0),
                file_index: f(1),
                line_number: f(2),
                column_number: f(3),
            }
        })
    }
}

/// NUL-terminated strings inside a padded list, up to a declared count.
#[derive(Debug, Clone)]
pub struct StringList<'a> {
    rest: &'a [u8],
    remaining: u32,
}

impl<'a> StringList<'a> {
    fn new(data: &'a [u8], count: u32) -> StringList<'a> {
        StringList {
            rest: data,
            remaining: count,
        }
    }

    /// Bytes after the last string read so far (after a full walk: the padding).
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Strings declared but not (yet) found.
    pub fn remaining(&self) -> u32 {
        self.remaining
    }
}

impl<'a> Iterator for StringList<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.remaining == 0 {
            return None;
        }
        let (s, rest) = split_cstr(self.rest)?;
        self.rest = rest;
        self.remaining -= 1;
        Some(s)
    }
}
