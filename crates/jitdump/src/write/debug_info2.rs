//! [`DebugInfo2Builder`]: a SAMPLY_JIT_CODE_DEBUG_INFO2 body from what a JIT knows about a
//! function — its inline tree and its line table — without index bookkeeping.
//!
//! The builder interns file names and function names into the record's two string lists and
//! `(name, file)` pairs into function records (the outer function is record 0). It lays an
//! inline tree out the way the record wants it: inline calls depth-first, siblings in address
//! order, each call's ranges right after the previous call's. A call's ranges are clipped to
//! its parent's span; a call left with no range, one overlapping an earlier sibling, or one
//! deeper than [`MAX_INLINE_DEPTH`] is left out together with its subtree, so the record
//! always validates. Line records map code offsets to the deepest frame's location: given
//! directly ([`DebugInfo2Builder::line`]), or painted from each inline call's own rows
//! ([`InlineCall::lines`]) over its caller's.

use std::collections::{BTreeMap, HashMap};

use super::DebugInfo2Data;
use crate::read::{FunctionRecord, InlineCallRecord, LineRecord, Range};

/// Inline calls deeper than this (depth 0 is a call in the outer function) are left out.
pub const MAX_INLINE_DEPTH: u32 = 64;

/// One inlined call, as a JIT reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InlineCall {
    /// Name of the inlined function.
    pub name: String,
    /// Its source file.
    pub file: String,
    /// The line its definition starts on (0 if unknown).
    pub start_line: u32,
    /// The column its definition starts on (0 if unknown).
    pub start_column: u32,
    /// Line of the call in the caller (0 if unknown).
    pub call_line: u32,
    /// Column of the call in the caller (0 if unknown).
    pub call_column: u32,
    /// Code ranges `[start, end)` the inlined code covers, as offsets from the outer
    /// function's code address.
    pub ranges: Vec<(u64, u64)>,
    /// Line rows `(offset from the outer function's code address, line)` in [`Self::file`]:
    /// where this call's code is, its rows replace the caller's, and the caller's location
    /// resumes after the call's range. Empty if the line table is given by
    /// [`DebugInfo2Builder::line`] instead.
    pub lines: Vec<(u64, u32)>,
    /// Calls inlined into this one.
    pub children: Vec<InlineCall>,
}

/// Builds a [`DebugInfo2Data`] from what a JIT knows about a function.
///
/// It interns file names and function names into the record's two string lists and
/// `(name, file)` pairs into function records (the outer function is record 0). It lays an
/// inline tree out depth-first, siblings in address order, each call's ranges right after the
/// previous call's. A call's ranges are clipped to its parent's span; a call left with no
/// range, one overlapping an earlier sibling, or one deeper than [`MAX_INLINE_DEPTH`] is left
/// out together with its subtree, so the record always validates. Line records map code
/// offsets to the deepest frame's location: given directly ([`DebugInfo2Builder::line`]), or
/// painted from each inline call's own rows ([`InlineCall::lines`]) over its caller's.
#[derive(Debug, Clone)]
pub struct DebugInfo2Builder {
    data: DebugInfo2Data,
    code_size: u32,
    files: HashMap<String, u32>,
    names: HashMap<String, u32>,
    functions: HashMap<(u32, u32), u32>,
    /// Code offset → (file index, line, column) of the deepest frame.
    lines: BTreeMap<u32, (u32, u32, u32)>,
}

impl DebugInfo2Builder {
    /// A builder for the function `name` defined in `file` at `start_line:start_column`,
    /// whose code is `code_size` bytes long (offsets are clipped to it, and to `u32`).
    pub fn new(
        name: &str,
        file: &str,
        start_line: u32,
        start_column: u32,
        code_size: u64,
    ) -> DebugInfo2Builder {
        let mut b = DebugInfo2Builder {
            data: DebugInfo2Data::default(),
            code_size: u32::try_from(code_size).unwrap_or(u32::MAX),
            files: HashMap::new(),
            names: HashMap::new(),
            functions: HashMap::new(),
            lines: BTreeMap::new(),
        };
        b.function(name, file, start_line, start_column);
        b
    }

    /// The index of `path` in the file list (added on first use).
    pub fn file(&mut self, path: &str) -> u32 {
        intern(&mut self.files, &mut self.data.files, path)
    }

    /// The index of the function record for `name` in `file` (added on first use, with
    /// `start_line` and `start_column`; later uses keep the first record's).
    pub fn function(&mut self, name: &str, file: &str, start_line: u32, start_column: u32) -> u32 {
        let file_index = self.file(file);
        let name_index = intern(&mut self.names, &mut self.data.function_names, name);
        let next = index(self.data.functions.len());
        let functions = &mut self.data.functions;
        *self
            .functions
            .entry((name_index, file_index))
            .or_insert_with(|| {
                functions.push(FunctionRecord {
                    function_name_index: name_index,
                    file_index,
                    start_line,
                    start_column,
                    flags: 0,
                });
                next
            })
    }

    /// The deepest frame's location from `code_offset` on (replacing an earlier one at the
    /// same offset). Offsets at or past the code size are ignored.
    pub fn line(&mut self, code_offset: u32, file: &str, line: u32, column: u32) {
        if code_offset >= self.code_size {
            return;
        }
        let f = self.file(file);
        self.lines.insert(code_offset, (f, line, column));
    }

    /// Lays out `calls`, the calls inlined directly into the outer function, and their
    /// subtrees (see [`DebugInfo2Builder`] for what is left out).
    pub fn inline_calls(&mut self, calls: &[InlineCall]) {
        self.layout(calls, 0, 0, u64::from(self.code_size));
    }

    fn layout(&mut self, calls: &[InlineCall], depth: u32, lo: u64, hi: u64) {
        if depth >= MAX_INLINE_DEPTH {
            return;
        }
        let mut order: Vec<&InlineCall> = calls.iter().collect();
        order.sort_by_key(|c| c.ranges.iter().map(|r| r.0).min().unwrap_or(u64::MAX));
        // Ranges taken by earlier siblings: start → end, never overlapping.
        let mut taken: BTreeMap<u64, u64> = BTreeMap::new();
        for call in order {
            let mut ranges: Vec<(u64, u64)> = call
                .ranges
                .iter()
                .map(|&(b, e)| (b.max(lo), e.min(hi)))
                .filter(|&(b, e)| b < e)
                .collect();
            ranges.sort_unstable();
            let overlaps = ranges.windows(2).any(|w| matches!(w, [a, b] if b.0 < a.1))
                || ranges.iter().any(|&(b, e)| {
                    taken
                        .range(..e)
                        .next_back()
                        .is_some_and(|(_, &end)| end > b)
                });
            if ranges.is_empty() || overlaps {
                continue;
            }
            for &(b, e) in &ranges {
                taken.insert(b, e);
            }
            let function =
                self.function(&call.name, &call.file, call.start_line, call.start_column);
            self.data.inline_calls.push(InlineCallRecord {
                depth,
                range_count: index(ranges.len()),
                function_index: function,
                call_line_number: call.call_line,
                call_column_number: call.call_column,
            });
            // Offsets fit in u32: they are clipped to the code size.
            for &(b, e) in &ranges {
                self.data.ranges.push(Range {
                    start_offset: b as u32,
                    size: (e - b) as u32,
                });
            }
            if !call.lines.is_empty() {
                let file = self.file(&call.file);
                for &(b, e) in &ranges {
                    self.paint(&call.lines, file, b as u32, e as u32);
                }
            }
            let span_lo = ranges.first().map_or(lo, |r| r.0);
            let span_hi = ranges.iter().map(|r| r.1).max().unwrap_or(hi);
            self.layout(&call.children, depth + 1, span_lo, span_hi);
        }
    }

    /// Replaces the locations in `[first row in range, end)` by `rows` (in `file`), and
    /// resumes the location that was in effect at `end` after it.
    fn paint(&mut self, rows: &[(u64, u32)], file: u32, start: u32, end: u32) {
        let inside: Vec<(u32, u32)> = rows
            .iter()
            .filter(|r| r.0 >= u64::from(start) && r.0 < u64::from(end))
            .map(|&(off, line)| (off as u32, line))
            .collect();
        let Some(from) = inside.iter().map(|r| r.0).min() else {
            return;
        };
        let resume = self.lines.range(..=end).next_back().map(|(_, v)| *v);
        let replaced: Vec<u32> = self.lines.range(from..end).map(|(k, _)| *k).collect();
        for k in replaced {
            self.lines.remove(&k);
        }
        for (off, line) in inside {
            self.lines.insert(off, (file, line, 0));
        }
        if let Some(v) = resume {
            if end < self.code_size {
                self.lines.entry(end).or_insert(v);
            }
        }
    }

    /// The record's body.
    pub fn finish(mut self) -> DebugInfo2Data {
        self.data.lines = self
            .lines
            .into_iter()
            .map(
                |(code_offset, (file_index, line_number, column_number))| LineRecord {
                    code_offset,
                    file_index,
                    line_number,
                    column_number,
                },
            )
            .collect();
        self.data
    }
}

/// A list index as the record's `u32` (lists past 4 G entries cannot be written anyway).
fn index(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn intern(map: &mut HashMap<String, u32>, list: &mut Vec<String>, s: &str) -> u32 {
    if let Some(&i) = map.get(s) {
        return i;
    }
    let i = index(list.len());
    list.push(s.to_string());
    map.insert(s.to_string(), i);
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(
        name: &str,
        file: &str,
        ranges: &[(u64, u64)],
        children: Vec<InlineCall>,
    ) -> InlineCall {
        InlineCall {
            name: name.into(),
            file: file.into(),
            call_line: 7,
            ranges: ranges.to_vec(),
            children,
            ..InlineCall::default()
        }
    }

    #[test]
    fn interning_layout_and_clipping() {
        let mut b = DebugInfo2Builder::new("outer", "a.c", 1, 0, 64);
        b.inline_calls(&[
            // Reported out of order; `late` comes first by address.
            call(
                "mid",
                "b.c",
                &[(32, 48)],
                vec![call("leaf", "a.c", &[(36, 40), (44, 60)], vec![])],
            ),
            call("late", "b.c", &[(8, 16)], vec![]),
            // Overlaps `mid`: left out with its subtree.
            call(
                "dup",
                "c.c",
                &[(40, 50)],
                vec![call("x", "x.c", &[(41, 42)], vec![])],
            ),
            // Outside the code: left out.
            call("gone", "c.c", &[(64, 80)], vec![]),
            // Recursion into the outer function reuses record 0.
            call("outer", "a.c", &[(0, 4)], vec![]),
        ]);
        b.line(0, "a.c", 1, 0);
        b.line(100, "a.c", 9, 0);
        let d = b.finish();
        assert_eq!(d.files, ["a.c", "b.c"]);
        assert_eq!(d.function_names, ["outer", "late", "mid", "leaf"]);
        let calls: Vec<(u32, u32, u32)> = d
            .inline_calls
            .iter()
            .map(|c| (c.depth, c.function_index, c.range_count))
            .collect();
        assert_eq!(calls, [(0, 0, 1), (0, 1, 1), (0, 2, 1), (1, 3, 2)]);
        let ranges: Vec<(u32, u32)> = d.ranges.iter().map(|r| (r.start_offset, r.size)).collect();
        // leaf's second range is clipped to mid's end.
        assert_eq!(ranges, [(0, 4), (8, 8), (32, 16), (36, 4), (44, 4)]);
        assert_eq!(d.lines.len(), 1, "offset 100 is past the code");
    }

    #[test]
    fn painting_rows_of_the_deepest_frame() {
        let mut b = DebugInfo2Builder::new("p", "p.c", 100, 0, 56);
        for (off, line) in [(0, 100), (16, 101), (40, 102)] {
            b.line(off, "p.c", line, 0);
        }
        let mut inl1 = call("inl1", "inl1.c", &[(8, 40)], vec![]);
        inl1.lines = vec![(8, 200), (24, 201)];
        let mut inl2 = call("inl2", "inl2.c", &[(16, 24)], vec![]);
        inl2.lines = vec![(16, 300)];
        inl1.children.push(inl2);
        b.inline_calls(&[inl1]);
        let d = b.finish();
        let lines: Vec<(u32, u32, u32)> = d
            .lines
            .iter()
            .map(|l| (l.code_offset, l.file_index, l.line_number))
            .collect();
        assert_eq!(
            lines,
            [
                (0, 0, 100),
                (8, 1, 200),
                (16, 2, 300),
                (24, 1, 201),
                (40, 0, 102)
            ]
        );
    }

    #[test]
    fn depth_is_bounded() {
        let mut deep = call("f", "f.c", &[(0, 8)], vec![]);
        for _ in 0..200 {
            deep = call("f", "f.c", &[(0, 8)], vec![deep]);
        }
        let mut b = DebugInfo2Builder::new("outer", "a.c", 1, 0, 8);
        b.inline_calls(&[deep]);
        let d = b.finish();
        assert_eq!(d.inline_calls.len(), MAX_INLINE_DEPTH as usize);
        assert_eq!(
            d.inline_calls.last().map(|c| c.depth),
            Some(MAX_INLINE_DEPTH - 1)
        );
    }
}
