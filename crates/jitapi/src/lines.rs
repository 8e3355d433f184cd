//! Line tables: from `LineNumberInfo` (Intel's end-offset convention, or the start-offset
//! convention some producers use) to rows that start at an offset, as jitdump wants.
//!
//! * **end** (the spec; LLVM, HHVM): entry *i* covers `[Offset(i-1), Offset(i))` with
//!   `Offset(-1) = 0`. Each non-empty range becomes a row `(Offset(i-1), line_i)`.
//! * **start** (V8, Mono, Intel OpenCL): entry *i* starts at `Offset(i)`.
//!
//! Entries are stably sorted by offset first. [`Convention::Auto`] (the default) treats the
//! table as end-based when its last offset is ≥ the code size or when it starts with `(0, x)`
//! followed by line `x` again (the shape LLVM and HHVM emit), and as start-based otherwise.
//! `PROFKIT_JIT_LINE_CONVENTION=end|start` forces one. Rows at or past the code size are
//! dropped; of several rows at one offset the first wins ("VTune picks the first").

use crate::abi::LineNumberInfo;

/// How to read `LineNumberInfo::offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Convention {
    /// Decide per table (see the module docs).
    Auto,
    /// Offsets are range ends (Intel's documented convention).
    End,
    /// Offsets are range starts.
    Start,
}

impl Convention {
    /// Parses `end`, `start` or `auto` (case-insensitive); anything else is `Auto`.
    pub fn from_env_value(v: Option<&str>) -> Convention {
        match v.map(str::trim).map(str::to_ascii_lowercase).as_deref() {
            Some("end") => Convention::End,
            Some("start") => Convention::Start,
            _ => Convention::Auto,
        }
    }
}

/// A line that starts at `offset` and runs to the next row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Offset from the start of the code.
    pub offset: u32,
    /// Source line.
    pub line: u32,
}

/// The convention `Auto` picks for a table (sorted by offset).
pub fn detect(sorted: &[LineNumberInfo], size: u32) -> Convention {
    let Some(last) = sorted.last() else {
        return Convention::End;
    };
    let first_repeats = match sorted {
        [a, b, ..] => a.offset == 0 && a.line_number == b.line_number,
        _ => false,
    };
    if last.offset >= size || first_repeats {
        Convention::End
    } else {
        Convention::Start
    }
}

/// Converts `table` into start rows inside `[0, size)`, appending to `out` (cleared first).
/// `sort_buf` is scratch space reused between calls.
pub fn to_rows(
    table: &[LineNumberInfo],
    size: u32,
    convention: Convention,
    sort_buf: &mut Vec<LineNumberInfo>,
    out: &mut Vec<Row>,
) {
    out.clear();
    sort_buf.clear();
    sort_buf.extend_from_slice(table);
    if !sort_buf.windows(2).all(|w| match w {
        [a, b] => a.offset <= b.offset,
        _ => true,
    }) {
        sort_buf.sort_by_key(|e| e.offset);
    }
    let convention = match convention {
        Convention::Auto => detect(sort_buf, size),
        c => c,
    };
    match convention {
        Convention::End | Convention::Auto => {
            let mut prev = 0u32;
            for e in sort_buf.iter() {
                if e.offset > prev && prev < size {
                    out.push(Row {
                        offset: prev,
                        line: e.line_number,
                    });
                }
                prev = prev.max(e.offset);
            }
        }
        Convention::Start => {
            for e in sort_buf.iter() {
                if e.offset >= size {
                    break;
                }
                if out.last().is_some_and(|r| r.offset == e.offset) {
                    continue;
                }
                out.push(Row {
                    offset: e.offset,
                    line: e.line_number,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[(u32, u32)]) -> Vec<LineNumberInfo> {
        v.iter()
            .map(|&(offset, line_number)| LineNumberInfo {
                offset,
                line_number,
            })
            .collect()
    }

    fn rows(v: &[(u32, u32)], size: u32, c: Convention) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        to_rows(&t(v), size, c, &mut Vec::new(), &mut out);
        out.iter().map(|r| (r.offset, r.line)).collect()
    }

    #[test]
    fn intel_example_is_end_based() {
        let v = [(1, 2), (12, 4), (15, 2), (18, 1), (21, 30)];
        assert_eq!(
            rows(&v, 21, Convention::Auto),
            [(0, 2), (1, 4), (12, 2), (15, 1), (18, 30)]
        );
    }

    #[test]
    fn llvm_table_is_end_based() {
        let v = [(0, 10), (1, 10), (5, 11), (17, 12), (21, 13), (23, 13)];
        assert_eq!(detect(&t(&v), 23), Convention::End);
        assert_eq!(
            rows(&v, 23, Convention::Auto),
            [(0, 10), (1, 11), (5, 12), (17, 13), (21, 13)]
        );
    }

    #[test]
    fn v8_table_is_start_based_and_sorted() {
        let v = [(10, 3), (0, 1), (4, 2), (4, 9), (19, 5)];
        assert_eq!(
            rows(&v, 20, Convention::Auto),
            [(0, 1), (4, 2), (10, 3), (19, 5)]
        );
        assert_eq!(rows(&v, 20, Convention::End), [(0, 2), (4, 3), (10, 5)]);
    }

    #[test]
    fn env_values() {
        assert_eq!(Convention::from_env_value(Some("END")), Convention::End);
        assert_eq!(Convention::from_env_value(Some("start")), Convention::Start);
        assert_eq!(Convention::from_env_value(None), Convention::Auto);
    }
}
