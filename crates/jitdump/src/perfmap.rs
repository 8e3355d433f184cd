//! perf map files (`/tmp/perf-<pid>.map`): one `START SIZE name` line per symbol.
//!
//! START and SIZE are hexadecimal with or without `0x` (V8 and CPython write bare hex, the
//! JDK and .NET `0x`-prefixed, wasmtime `0x` on the address only); exactly one separator
//! follows each number; the name is the rest of the line and may contain spaces.
//! Malformed lines are reported with their line numbers and skipped.
//!
//! **What a perf map profkit writes means.** A perf map has no timestamps: perf and samply
//! read it once and treat every line as live for the whole process, so a consumer cannot
//! tell which of two entries covering an address was live when a sample hit it. The one
//! useful meaning is therefore the code live at the end: [`MapBuilder`] applies loads and
//! moves in order, and the *last writer wins per address range* (a load removes every entry
//! it overlaps: the JIT reused that memory; a move removes the entry at the old address).
//! The lines come out sorted by address and never overlap. Every perf map profkit writes
//! (from a jitdump, from a perf map, from Mono's JIT events or XRay's instrumentation map)
//! is built this way.

use std::collections::BTreeMap;
use std::io::{self, Write};

use profkit_common::{Findings, Summary, Validation, Value};

/// One symbol of a perf map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerfMapEntry<'a> {
    /// Start address.
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// The symbol name (the rest of the line; not guaranteed UTF-8).
    pub name: &'a [u8],
    /// 1-based line number.
    pub line: usize,
}

/// A line that is not `START SIZE name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfMapLineError {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

impl core::fmt::Display for PerfMapLineError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "line {} (offset {:#x}): {}",
            self.line, self.offset, self.message
        )
    }
}

impl std::error::Error for PerfMapLineError {}

/// Iterates the lines of a perf map; empty lines are skipped.
pub fn entries(text: &[u8]) -> PerfMapEntries<'_> {
    PerfMapEntries {
        rest: text,
        offset: 0,
        line: 0,
    }
}

/// Iterator returned by [`entries`].
#[derive(Debug, Clone)]
pub struct PerfMapEntries<'a> {
    rest: &'a [u8],
    offset: u64,
    line: usize,
}

impl<'a> Iterator for PerfMapEntries<'a> {
    type Item = Result<PerfMapEntry<'a>, PerfMapLineError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let (line, rest) = match memchr::memchr(b'\n', self.rest) {
                Some(nl) => (
                    self.rest.get(..nl).unwrap_or(&[]),
                    self.rest.get(nl + 1..).unwrap_or(&[]),
                ),
                None => (self.rest, &[][..]),
            };
            let offset = self.offset;
            self.offset += (self.rest.len() - rest.len()) as u64;
            self.rest = rest;
            self.line += 1;
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            return Some(parse_line(line).map_or_else(
                |message| {
                    Err(PerfMapLineError {
                        line: self.line,
                        offset,
                        message,
                    })
                },
                |(start, size, name)| {
                    Ok(PerfMapEntry {
                        start,
                        size,
                        name,
                        line: self.line,
                    })
                },
            ));
        }
    }
}

/// Longest line [`read_entries`] keeps: longer lines (no perf map writes a 64 KiB name) are
/// skipped unread and reported.
pub const MAX_LINE: usize = 64 << 10;

/// Reads a perf map from a stream, one line in memory at a time (at most [`MAX_LINE`]
/// bytes), calling `each` for every non-empty line as [`entries`] would yield it: a map of any
/// size, or a file without a newline, costs one line's memory.
pub fn read_entries<R: io::BufRead>(
    mut r: R,
    mut each: impl FnMut(Result<PerfMapEntry<'_>, PerfMapLineError>),
) -> io::Result<()> {
    let mut line: Vec<u8> = Vec::new();
    let (mut number, mut pos, mut line_start, mut too_long) = (0usize, 0u64, 0u64, false);
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let at_end = chunk.is_empty();
        let (piece, used, newline) = match memchr::memchr(b'\n', chunk) {
            Some(nl) => (chunk.get(..nl).unwrap_or(&[]), nl + 1, true),
            None => (chunk, chunk.len(), false),
        };
        if !too_long {
            if line.len() + piece.len() > MAX_LINE {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(piece);
            }
        }
        r.consume(used);
        pos += used as u64;
        // A line ends at a newline, or at the end of a file whose last line has none.
        if newline || (at_end && (too_long || !line.is_empty())) {
            number += 1;
            if too_long {
                each(Err(PerfMapLineError {
                    line: number,
                    offset: line_start,
                    message: format!("line longer than {MAX_LINE} bytes (skipped)"),
                }));
            } else if let Some(e) = entries(&line).next() {
                each(
                    e.map(|e| PerfMapEntry { line: number, ..e })
                        .map_err(|e| PerfMapLineError {
                            line: number,
                            offset: line_start,
                            ..e
                        }),
                );
            }
            line.clear();
            too_long = false;
            line_start = pos;
        }
        if at_end {
            return Ok(());
        }
    }
}

fn hex_field<'a>(s: &'a [u8], what: &str) -> Result<(u64, &'a [u8]), String> {
    let digits_at = if s.starts_with(b"0x") || s.starts_with(b"0X") {
        2
    } else {
        0
    };
    let body = s.get(digits_at..).unwrap_or(&[]);
    let n = body.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if n == 0 {
        return Err(format!("expected a hexadecimal {what}"));
    }
    if n > 16 {
        return Err(format!("{what} has more than 16 hex digits"));
    }
    let digits = body.get(..n).unwrap_or(&[]);
    let mut v = 0u64;
    for &d in digits {
        let x = (d as char).to_digit(16).unwrap_or(0);
        v = (v << 4) | u64::from(x);
    }
    Ok((v, body.get(n..).unwrap_or(&[])))
}

/// Parses one line (without its newline) into `(start, size, name)`.
pub fn parse_line(line: &[u8]) -> Result<(u64, u64, &[u8]), String> {
    let (start, rest) = hex_field(line, "start address")?;
    let rest = match rest.split_first() {
        Some((b' ' | b'\t', r)) => r,
        Some((c, _)) => {
            return Err(format!(
                "unexpected {:?} after the start address",
                *c as char
            ))
        }
        None => return Err("missing size and name".into()),
    };
    let (size, rest) = hex_field(rest, "size")?;
    let name = match rest.split_first() {
        Some((b' ' | b'\t', r)) => r,
        Some((c, _)) => return Err(format!("unexpected {:?} after the size", *c as char)),
        None => return Err("missing symbol name".into()),
    };
    Ok((start, size, name))
}

/// Writes one perf map line: `START SIZE name` in bare lowercase hex, the layout V8 and perf's
/// documentation use.
pub fn write_entry<W: Write>(w: &mut W, start: u64, size: u64, name: &[u8]) -> io::Result<()> {
    if name.contains(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "perf map names cannot contain a newline",
        ));
    }
    write!(w, "{start:x} {size:x} ")?;
    w.write_all(name)?;
    w.write_all(b"\n")
}

/// One entry of a [`MapBuilder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEntry {
    /// Size in bytes.
    pub size: u64,
    /// The symbol name (newlines, carriage returns and NULs replaced by spaces).
    pub name: Vec<u8>,
}

/// The entries of a perf map as a consumer sees them: loads and moves applied in order, the
/// last writer winning per address range (see the [module docs](self)).
///
/// Entries never overlap; an entry of size 0 occupies its start address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapBuilder {
    entries: BTreeMap<u64, MapEntry>,
}

/// The end of the range an entry occupies (size 0 occupies one byte).
fn end_of(start: u64, size: u64) -> u64 {
    start.saturating_add(size.max(1))
}

/// `name` with the bytes a perf map line cannot hold replaced by spaces.
fn clean_name(name: &[u8]) -> Vec<u8> {
    name.iter()
        .map(|&b| {
            if matches!(b, b'\n' | b'\r' | 0) {
                b' '
            } else {
                b
            }
        })
        .collect()
}

impl MapBuilder {
    /// An empty map.
    pub fn new() -> MapBuilder {
        MapBuilder::default()
    }

    /// Code of `size` bytes named `name` was loaded at `start`: every entry it overlaps is
    /// removed (the memory was reused), then it is added.
    pub fn load(&mut self, start: u64, size: u64, name: &[u8]) {
        self.remove_overlapping(start, end_of(start, size));
        self.entries.insert(
            start,
            MapEntry {
                size,
                name: clean_name(name),
            },
        );
    }

    /// Code moved from `old` to `new`: the entry at `old` is removed, and the code is loaded
    /// at `new` under `name`, or under the removed entry's name when `name` is `None`.
    /// Returns `false` (and adds nothing) when neither names it.
    pub fn move_code(&mut self, old: u64, new: u64, size: u64, name: Option<&[u8]>) -> bool {
        let removed = self.entries.remove(&old);
        match (name, removed) {
            (Some(name), _) => self.load(new, size, name),
            (None, Some(e)) => {
                self.remove_overlapping(new, end_of(new, size));
                self.entries.insert(new, MapEntry { size, name: e.name });
            }
            (None, None) => return false,
        }
        true
    }

    /// Adds an entry for an address known from elsewhere (a function table) unless an entry
    /// already covers `start`; its size is cut where the next entry starts. Returns whether
    /// it was added.
    pub fn add_if_free(&mut self, start: u64, size: u64, name: &[u8]) -> bool {
        if self.covering(start).is_some() {
            return false;
        }
        let size = match self.entries.range(start..).next() {
            Some((&next, _)) => size.min(next - start),
            None => size,
        };
        self.entries.insert(
            start,
            MapEntry {
                size,
                name: clean_name(name),
            },
        );
        true
    }

    /// The entry covering `addr`, with its start.
    pub fn covering(&self, addr: u64) -> Option<(u64, &MapEntry)> {
        self.entries
            .range(..=addr)
            .next_back()
            .filter(|(&start, e)| addr < end_of(start, e.size))
            .map(|(&start, e)| (start, e))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, sorted by start address.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &MapEntry)> + '_ {
        self.entries.iter().map(|(&start, e)| (start, e))
    }

    /// Writes the entries as perf map lines ([`write_entry`]), sorted by address; returns how
    /// many.
    pub fn write<W: Write + ?Sized>(&self, w: &mut W) -> io::Result<u64> {
        let mut line = Vec::with_capacity(128);
        for (start, e) in &self.entries {
            line.clear();
            write_entry(&mut line, *start, e.size, &e.name)?;
            w.write_all(&line)?;
        }
        Ok(self.entries.len() as u64)
    }

    /// Removes every entry overlapping `[start, end)`.
    fn remove_overlapping(&mut self, start: u64, end: u64) {
        // Entries do not overlap, so their ends grow with their starts: walk back from the
        // last entry starting before `end` until one ends at or before `start`.
        let hit: Vec<u64> = self
            .entries
            .range(..end)
            .rev()
            .take_while(|(&s, e)| end_of(s, e.size) > start)
            .map(|(&s, _)| s)
            .collect();
        for s in hit {
            self.entries.remove(&s);
        }
    }
}

/// The map a perf map's lines give, applied in line order (the last line wins per address
/// range), and the malformed lines that were skipped.
pub fn map_of(text: &[u8]) -> (MapBuilder, Vec<PerfMapLineError>) {
    let mut map = MapBuilder::new();
    let mut bad = Vec::new();
    for e in entries(text) {
        match e {
            Ok(e) => map.load(e.start, e.size, e.name),
            Err(e) => bad.push(e),
        }
    }
    (map, bad)
}

/// Whether `data` looks like a perf map: its first non-empty line parses and the text has no
/// NUL bytes in its first 4 KiB.
pub fn looks_like_perf_map(data: &[u8]) -> bool {
    let head = data.get(..4096).unwrap_or(data);
    if head.contains(&0) {
        return false;
    }
    matches!(entries(head).next(), Some(Ok(_)))
}

/// Validates a perf map: malformed lines are errors; zero sizes, non-UTF-8 names and reused
/// addresses are warnings. A finding's `record` is the 1-based line number; `records` counts
/// the non-empty lines.
pub fn validate(text: &[u8]) -> Validation {
    let mut v = Findings::new(crate::validate::codes::ALL);
    let mut seen = std::collections::HashMap::<u64, usize>::new();
    let mut reused = 0usize;
    let mut first_reuse = None;
    let mut lines = 0u64;
    for e in entries(text) {
        lines += 1;
        match e {
            Err(e) => v.push(
                "perf-map-malformed-line",
                e.offset,
                Some(e.line as u64),
                format!("line {}: {}", e.line, e.message),
            ),
            Ok(e) => {
                if e.size == 0 {
                    v.push(
                        "perf-map-zero-size",
                        0,
                        Some(e.line as u64),
                        format!("line {}: {:#x} has size 0", e.line, e.start),
                    );
                }
                if std::str::from_utf8(e.name).is_err() {
                    v.push(
                        "name-not-utf8",
                        0,
                        Some(e.line as u64),
                        format!("line {}: name is not UTF-8", e.line),
                    );
                }
                if let Some(prev) = seen.insert(e.start, e.line) {
                    reused += 1;
                    first_reuse.get_or_insert((e.line, prev, e.start));
                }
            }
        }
    }
    if let Some((line, prev, addr)) = first_reuse {
        v.push(
            "perf-map-address-reused",
            0,
            Some(line as u64),
            format!("{reused} entries reuse an address listed earlier (first: line {line} reuses {addr:#x} from line {prev}); a perf map has no timestamps, so consumers cannot tell which was live"),
        );
    }
    v.finish(lines, None)
}

/// What `profkit info` shows of a perf map, in profkit-common's shape.
///
/// `records` counts the well-formed lines; details: `code_bytes` (sum of sizes),
/// `address_range` (`[lowest start, highest end]`, or null), `reused_addresses` (start
/// addresses listed more than once) and `malformed_lines`. Malformed lines are the problems;
/// `first_problem` names the first one. A perf map has no header, threads or times.
pub fn summary(text: &[u8]) -> Summary {
    let mut lines = 0u64;
    let mut bad = 0u64;
    let mut first_bad = None;
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    let mut bytes = 0u64;
    let mut seen = std::collections::HashMap::<u64, u32>::new();
    let mut reused = 0u64;
    for e in entries(text) {
        match e {
            Ok(e) => {
                lines += 1;
                lo = lo.min(e.start);
                hi = hi.max(e.start.saturating_add(e.size));
                bytes = bytes.saturating_add(e.size);
                let n = seen.entry(e.start).or_insert(0);
                *n = n.saturating_add(1);
                if *n == 2 {
                    reused += 1;
                }
            }
            Err(e) => {
                bad += 1;
                first_bad.get_or_insert_with(|| e.to_string());
            }
        }
    }
    let range = if lines > 0 {
        Value::List(vec![Value::Hex(lo), Value::Hex(hi)])
    } else {
        Value::Null
    };
    Summary {
        format: "perf-map",
        kind: "perf map".to_string(),
        records: lines,
        details: vec![
            ("code_bytes", bytes.into()),
            ("address_range", range),
            ("reused_addresses", reused.into()),
            ("malformed_lines", bad.into()),
        ],
        problems: bad,
        first_problem: first_bad,
        ..Summary::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry as (start, size, name, line), or an error as (line, offset).
    type Got = Result<(u64, u64, Vec<u8>, usize), (usize, u64)>;

    fn streamed(text: &[u8], capacity: usize) -> Vec<Got> {
        let mut out = Vec::new();
        let r = std::io::BufReader::with_capacity(capacity, text);
        read_entries(r, |e| {
            out.push(
                e.map(|e| (e.start, e.size, e.name.to_vec(), e.line))
                    .map_err(|e| (e.line, e.offset)),
            )
        })
        .unwrap();
        out
    }

    #[test]
    fn streaming_reads_what_the_slice_reader_reads() {
        let text = b"1000 10 a b\n\n0x2000 0x20 Lfoo\r\nbad line\n3000 1 last";
        let whole: Vec<_> = entries(text)
            .map(|e| {
                e.map(|e| (e.start, e.size, e.name.to_vec(), e.line))
                    .map_err(|e| (e.line, e.offset))
            })
            .collect();
        for capacity in [1, 3, 7, 64] {
            assert_eq!(streamed(text, capacity), whole, "capacity {capacity}");
        }
    }

    #[test]
    fn an_endless_line_costs_one_line() {
        let mut text = vec![b'7'; MAX_LINE * 3];
        text.extend_from_slice(b"\n1000 10 ok\n");
        let got = streamed(&text, 4096);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], Err((1, 0)));
        assert_eq!(got[1], Ok((0x1000, 0x10, b"ok".to_vec(), 2)));
    }
}
