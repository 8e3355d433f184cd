//! Source lines and functions of sampled frames in the written profile: a serde_json
//! [`Formatter`] that fills in what `fxprof-processed-profile` 0.8.1 cannot.
//!
//! The sink gives every sampled (function, line) a relative address of its own in a synthetic
//! library without a symbol table, from [`SYNTHETIC_BASE`] up; [`SourceLines`] says, per such
//! address, the function (its name, file and start line) and the line. fxprof makes a frame
//! per address and, having no symbol, a func per address named after it (`0x80000012`), and
//! writes `frameTable.line`, `funcTable.fileName` and `funcTable.lineNumber` as nulls.
//! [`LinesFormatter`] follows the JSON path while fxprof writes the profile and, in each
//! element of the root's `threads`:
//!
//! * records the `frameTable.address` column as it passes;
//! * rewrites `frameTable.func` on the fly: a synthetic frame's func becomes the first func
//!   (in frame order) of its function, so the call tree has one func per function, whatever
//!   the lines; the other funcs are no frame's any more and keep what fxprof wrote (the
//!   processed format allows such orphans: its own symbolication leaves them too);
//! * writes `frameTable.line` from each frame's address: the slot's line, or null for an
//!   address below [`SYNTHETIC_BASE`] (the `JIT` libraries), no address (label frames) or
//!   line 0;
//! * holds the `funcTable` object back — `name` and `fileName` hold indices into the thread's
//!   `stringArray`, which fxprof writes after `funcTable` — and leaves out its `name` (kept
//!   aside), `fileName`, `lineNumber` and `columnNumber` columns;
//! * appends the names and files of the thread's sampled functions to the end of
//!   `stringArray`, which gives their indices;
//! * writes `"funcTable":{…,"name":[…],"fileName":[…],"lineNumber":[…],"columnNumber":[…]}`
//!   as the thread object's last key (JSON key order does not matter): a function's func
//!   gets its name, file and start line, any other func its own name and nulls.
//!
//! When some `samples` tables are profkit's ([`SampleTables`]), it holds each thread's
//! `samples` back until its end and writes in its place the table a stand-in names, or else
//! it as it was.
//!
//! It also writes the weights of traced threads in milliseconds: fxprof keeps sample weights as
//! `i32`, so the sink gives a traced thread's samples their time in nanoseconds and marks the
//! thread `"weightType":"tracing-ms"`; in such a thread's `samples.weight` column (which fxprof
//! writes after `samples.weightType`) each integer `n` is written as the float `n / 1e6`.
//!
//! Everything else passes through as serde_json's [`CompactFormatter`] writes it. What it
//! relies on, which the tests check against fxprof's own output: `frameTable.address` comes
//! before `frameTable.func` and `frameTable.line` (else both pass unchanged), `frameTable`
//! before `stringArray`, and relative addresses are written as integers (`-1` when there is
//! none). The types are those of the processed format version 55
//! (`preprocessedProfileVersion`): `line: (number|null)[]`, `name: IndexIntoStringTable[]` and
//! `fileName: (IndexIntoStringTable|null)[]` into the thread's own `stringArray`,
//! `lineNumber: (number|null)[]` (the function's start line).
//!
//! **Why this module exists.** fxprof-processed-profile 0.8.1 is the newest release (the
//! crates.io index, checked 2026-11-28: 0.6.0, 0.7.0, 0.8.0, 0.8.1). Its `FrameInfo` has no line
//! and its func table no file or start line, so a profile written through its API alone loses
//! every JIT and DWARF line profkit knows. Upstream's development branch has grown a source
//! table, but nothing released writes `frameTable.line` or `funcTable.fileName`, and a git
//! dependency on an unreleased branch would make the build depend on a moving target. When a
//! release writes lines and function files, the sink should hand them to it and this module go.

use rustc_hash::FxHashMap as HashMap;
use std::collections::hash_map::Entry as MapEntry;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

use super::sample_table::SampleTables;

/// The first relative address of the synthetic libraries' slots; the `JIT` libraries' relative
/// addresses stay below it.
pub(crate) const SYNTHETIC_BASE: u32 = 0x8000_0000;

/// "None" in the index columns below.
const NONE: u32 = u32::MAX;

/// A sampled function.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Function {
    name: String,
    /// Index into [`SourceLines::files`], or [`NONE`].
    file: u32,
    /// Its start line (0 = unknown).
    start_line: u32,
}

/// What one synthetic relative address stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    /// Index into [`SourceLines::functions`].
    function: u32,
    /// The sampled line (0 = unknown).
    line: u32,
}

/// The sampled functions and the slots of the synthetic libraries: slot `i` is relative
/// address `SYNTHETIC_BASE + i`.
#[derive(Debug)]
pub(crate) struct SourceLines {
    functions: Vec<Function>,
    files: Vec<String>,
    file_ids: HashMap<String, u32>,
    slots: Vec<Slot>,
    /// The most slots: those from [`SYNTHETIC_BASE`] to `u32::MAX` (exclusive).
    limit: usize,
}

impl Default for SourceLines {
    fn default() -> Self {
        SourceLines::with_limit((u32::MAX - SYNTHETIC_BASE) as usize)
    }
}

impl SourceLines {
    fn with_limit(limit: usize) -> Self {
        SourceLines {
            functions: Vec::new(),
            files: Vec::new(),
            file_ids: HashMap::default(),
            slots: Vec::new(),
            limit,
        }
    }

    /// Adds a function (its display name, source file and start line); its index, for
    /// [`SourceLines::push`].
    pub(crate) fn add_function(
        &mut self,
        name: String,
        file: Option<&str>,
        start_line: u32,
    ) -> u32 {
        let file = match file {
            None => NONE,
            Some(f) => match self.file_ids.get(f) {
                Some(&id) => id,
                None => {
                    let id = u32::try_from(self.files.len()).unwrap_or(NONE);
                    if id != NONE {
                        self.files.push(f.to_string());
                        self.file_ids.insert(f.to_string(), id);
                    }
                    id
                }
            },
        };
        self.functions.push(Function {
            name,
            file,
            start_line,
        });
        u32::try_from(self.functions.len() - 1).unwrap_or(NONE)
    }

    /// Adds the next slot (function `function` at `line`) and returns its relative address;
    /// `None` when the address space is full. Consecutive calls give consecutive addresses.
    pub(crate) fn push(&mut self, function: u32, line: u32) -> Option<u32> {
        if self.slots.len() >= self.limit {
            return None;
        }
        let address = SYNTHETIC_BASE.checked_add(u32::try_from(self.slots.len()).ok()?)?;
        self.slots.push(Slot { function, line });
        Some(address)
    }

    /// Whether there is no slot.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The slot index of a frame address, or [`NONE`].
    fn slot_of(&self, address: Option<u64>) -> u32 {
        match address.and_then(|a| a.checked_sub(u64::from(SYNTHETIC_BASE))) {
            Some(i) if i < self.slots.len() as u64 => i as u32,
            _ => NONE,
        }
    }

    fn slot(&self, index: u32) -> Option<&Slot> {
        self.slots.get(index as usize)
    }

    fn function(&self, index: u32) -> Option<&Function> {
        self.functions.get(index as usize)
    }

    fn file(&self, id: u32) -> Option<&str> {
        self.files.get(id as usize).map(String::as_str)
    }
}

/// Writes `value` (the fxprof profile) as compact JSON into `out`, with the sampled frames'
/// functions and lines filled in.
pub(crate) fn write<W: Write, T: Serialize>(out: W, value: &T, fill: &Fill<'_>) -> io::Result<()> {
    if fill.lines.is_empty() && !fill.traced && fill.samples.is_empty() {
        // No synthetic frame, no traced thread, no samples table of ours: nothing to fill.
        return serde_json::to_writer(out, value).map_err(io::Error::other);
    }
    let mut ser = serde_json::Serializer::with_formatter(out, LinesFormatter::new(fill));
    value.serialize(&mut ser).map_err(io::Error::other)
}

/// What the formatter fills in.
pub(crate) struct Fill<'a> {
    /// What the synthetic addresses stand for.
    pub(crate) lines: &'a SourceLines,
    /// Some thread is traced (its weights are nanoseconds, written as milliseconds).
    pub(crate) traced: bool,
    /// The samples tables written in place of fxprof's stand-ins.
    pub(crate) samples: &'a SampleTables,
}

/// Where the bytes of the current token go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dest {
    /// The output.
    Writer,
    /// The held-back `funcTable` of the current thread.
    Hold,
    /// The held-back `samples` of the current thread (when some are ours).
    Samples,
    /// Nowhere: a column that is replaced.
    Discard,
}

/// What a container on the JSON path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Root,
    Threads,
    Thread,
    FrameTable,
    FuncTable,
    Samples,
    Weights,
    /// `samples.weight` of a thread that is not traced: its first weight is kept.
    SampleWeights,
    Strings,
    Addresses,
    Funcs,
    FuncNames,
    Other,
}

/// An open object or array.
#[derive(Clone, Copy, Debug)]
struct Level {
    ctx: Ctx,
    /// Where its bytes go.
    dest: Dest,
    /// Keys written (object) or elements (array).
    items: usize,
}

/// What becomes of an object key and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    Keep,
    /// Left out, key and value.
    Drop,
    /// `funcTable`: into the hold-back buffer, its key written at the thread's end.
    Hold,
    /// `frameTable.line`: our column instead of the value.
    Lines,
}

/// What the formatter keeps of the thread being written.
#[derive(Debug, Default)]
struct ThreadCapture {
    /// Slot index per frame ([`NONE`]: not synthetic); `None` until the column was seen.
    slots: Option<Vec<u32>>,
    /// Elements of `frameTable.func` seen.
    frames_seen: usize,
    /// Per func: the function it is the func of ([`NONE`]: none; the other funcs of the
    /// function's addresses are no frame's and keep fxprof's values).
    func_functions: Vec<u32>,
    /// Per function: its func, the first of its frames'.
    canonical: HashMap<u32, u32>,
    /// `funcTable.name` as fxprof wrote it.
    names: Vec<u32>,
    /// `funcTable.length`.
    func_len: Option<u64>,
    held: bool,
    /// Keys written into `hold`.
    held_items: usize,
    /// `stringArray` index of each function name appended.
    name_strings: HashMap<u32, u32>,
    /// `stringArray` index of each file appended.
    file_strings: HashMap<u32, u32>,
    /// `samples.weightType` is `tracing-ms`: weights are nanoseconds, written as milliseconds.
    tracing_ms: bool,
    /// `samples.length` and the first of `samples.weight` (a stand-in's says its table).
    samples_len: Option<u64>,
    first_weight: Option<i64>,
}

impl ThreadCapture {
    fn reset(&mut self) {
        self.slots = None;
        self.frames_seen = 0;
        self.func_functions.clear();
        self.canonical.clear();
        self.names.clear();
        self.func_len = None;
        self.held = false;
        self.held_items = 0;
        self.name_strings.clear();
        self.file_strings.clear();
        self.tracing_ms = false;
        self.samples_len = None;
        self.first_weight = None;
    }

    /// The value to write for func `func` of the next frame (its function's func if the
    /// frame is synthetic), noting the func's function.
    fn func(&mut self, lines: &SourceLines, func: u64) -> Option<u64> {
        let frame = self.frames_seen;
        self.frames_seen += 1;
        let slots = self.slots.as_ref()?;
        let function = lines.slot(*slots.get(frame)?)?.function;
        let f = u32::try_from(func).ok()?;
        // fxprof makes a func from a frame: never more funcs than frames.
        if f as usize >= slots.len() {
            return None;
        }
        let canonical = *self.canonical.entry(function).or_insert(f);
        if canonical == f {
            if self.func_functions.len() <= f as usize {
                self.func_functions.resize(f as usize + 1, NONE);
            }
            if let Some(ff) = self.func_functions.get_mut(f as usize) {
                *ff = function;
            }
        }
        Some(u64::from(canonical))
    }

    /// The function of func `f`, if it is a sampled one.
    fn function<'l>(&self, lines: &'l SourceLines, f: usize) -> Option<&'l Function> {
        lines.function(*self.func_functions.get(f)?)
    }
}

/// Values held back from the output, to be written later or replaced.
#[derive(Debug, Default)]
struct Holds {
    /// The current thread's `funcTable` (from its `{`, without the `}`).
    func_table: Vec<u8>,
    /// The current thread's `samples` (when some tables are ours).
    samples: Vec<u8>,
}

/// The output of a token: the writer, a buffer, or nowhere.
enum Out<'a, W: ?Sized> {
    Writer(&'a mut W),
    Buf(&'a mut Vec<u8>),
    Null,
}

impl<W: ?Sized + Write> Write for Out<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Writer(w) => w.write(buf),
            Out::Buf(v) => {
                v.extend_from_slice(buf);
                Ok(buf.len())
            }
            Out::Null => Ok(buf.len()),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Out::Writer(w) => w.write_all(buf),
            Out::Buf(v) => {
                v.extend_from_slice(buf);
                Ok(())
            }
            Out::Null => Ok(()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Writer(w) => w.flush(),
            Out::Buf(_) | Out::Null => Ok(()),
        }
    }
}

/// The serde_json formatter that fills in the sampled frames' functions and lines (see the
/// module doc).
#[derive(Debug)]
pub(crate) struct LinesFormatter<'a> {
    lines: &'a SourceLines,
    samples: &'a SampleTables,
    holds: Holds,
    /// The open containers, outermost first.
    stack: Vec<Level>,
    /// Where scalars and container openings go now.
    cur: Dest,
    /// Inside an object key: its bytes go to `key`.
    in_key: bool,
    key: Vec<u8>,
    /// What the next container value is (from its key, or its array).
    next: Ctx,
    /// Whether the current value's `:` is written.
    colon: bool,
    /// The current value is `frameTable.line`.
    lines_value: bool,
    /// The current value is `funcTable.length`.
    func_len_value: bool,
    /// The current value is `samples.weightType`.
    weight_type_value: bool,
    /// The current value is `samples.length`.
    samples_len_value: bool,
    thread: ThreadCapture,
}

impl<'a> LinesFormatter<'a> {
    pub(crate) fn new(fill: &Fill<'a>) -> Self {
        LinesFormatter {
            lines: fill.lines,
            samples: fill.samples,
            holds: Holds::default(),
            stack: Vec::new(),
            cur: Dest::Writer,
            in_key: false,
            key: Vec::new(),
            next: Ctx::Root,
            colon: false,
            lines_value: false,
            func_len_value: false,
            weight_type_value: false,
            samples_len_value: false,
            thread: ThreadCapture::default(),
        }
    }

    /// Where the current token goes.
    fn out<'b, W: ?Sized>(&'b mut self, w: &'b mut W) -> Out<'b, W> {
        if self.in_key {
            return Out::Buf(&mut self.key);
        }
        Self::to(&mut self.holds, w, self.cur)
    }

    fn to<'b, W: ?Sized>(holds: &'b mut Holds, w: &'b mut W, dest: Dest) -> Out<'b, W> {
        match dest {
            Dest::Writer => Out::Writer(w),
            Dest::Hold => Out::Buf(&mut holds.func_table),
            Dest::Samples => Out::Buf(&mut holds.samples),
            Dest::Discard => Out::Null,
        }
    }

    fn top_dest(&self) -> Dest {
        self.stack.last().map_or(Dest::Writer, |l| l.dest)
    }

    /// Records a scalar (an integer, or `None` for anything else) of a captured column; for
    /// `frameTable.func`, the value to write instead, if any.
    fn scalar(&mut self, value: Option<u64>) -> Option<u64> {
        if self.in_key {
            return None;
        }
        if self.func_len_value {
            self.thread.func_len = value;
            return None;
        }
        if self.samples_len_value {
            self.thread.samples_len = value;
            return None;
        }
        match self.stack.last().map(|l| l.ctx) {
            Some(Ctx::Addresses) => {
                let slot = self.lines.slot_of(value);
                if let Some(s) = &mut self.thread.slots {
                    s.push(slot);
                }
                None
            }
            Some(Ctx::Funcs) => match value {
                Some(v) => self.thread.func(self.lines, v),
                None => {
                    self.thread.frames_seen += 1;
                    None
                }
            },
            Some(Ctx::FuncNames) => {
                let name = value.and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
                self.thread.names.push(name);
                None
            }
            _ => None,
        }
    }

    /// What becomes of key `self.key` (with its quotes) of an object `ctx`, and what its
    /// value is.
    fn entry(&self, ctx: Ctx) -> (Entry, Ctx) {
        let key = self.key.as_slice();
        match (ctx, key) {
            (Ctx::Root, b"\"threads\"") => (Entry::Keep, Ctx::Threads),
            (Ctx::Thread, b"\"frameTable\"") => (Entry::Keep, Ctx::FrameTable),
            (Ctx::Thread, b"\"funcTable\"") => (Entry::Hold, Ctx::FuncTable),
            (Ctx::Thread, b"\"stringArray\"") => (Entry::Keep, Ctx::Strings),
            (Ctx::Thread, b"\"samples\"") => (Entry::Keep, Ctx::Samples),
            (Ctx::Samples, b"\"weight\"") if self.thread.tracing_ms => (Entry::Keep, Ctx::Weights),
            (Ctx::Samples, b"\"weight\"") => (Entry::Keep, Ctx::SampleWeights),
            (Ctx::FrameTable, b"\"address\"") => (Entry::Keep, Ctx::Addresses),
            (Ctx::FrameTable, b"\"func\"") => (Entry::Keep, Ctx::Funcs),
            (Ctx::FrameTable, b"\"line\"") if self.thread.slots.is_some() => {
                (Entry::Lines, Ctx::Other)
            }
            (Ctx::FuncTable, b"\"name\"") => (Entry::Drop, Ctx::FuncNames),
            (Ctx::FuncTable, b"\"fileName\"" | b"\"lineNumber\"" | b"\"columnNumber\"") => {
                (Entry::Drop, Ctx::Other)
            }
            _ => (Entry::Keep, Ctx::Other),
        }
    }

    /// Writes the `frameTable.line` column.
    fn write_lines<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let lines = self.lines;
        let slots = self.thread.slots.take().unwrap_or_default();
        let mut out = Self::to(&mut self.holds, w, self.cur);
        out.write_all(b"[")?;
        for (i, &slot) in slots.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            match lines.slot(slot) {
                Some(s) if s.line != 0 => CompactFormatter.write_u32(&mut out, s.line)?,
                _ => out.write_all(b"null")?,
            }
        }
        out.write_all(b"]")?;
        self.thread.slots = Some(slots);
        Ok(())
    }

    /// Ends the held-back `samples` of the current thread: writes the table it stands in for, or
    /// else itself, where its thread goes.
    fn write_samples<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let tables = self.samples;
        let table = tables.stand_in(self.thread.samples_len, self.thread.first_weight);
        let mut held = std::mem::take(&mut self.holds.samples);
        let dest = self.top_dest();
        let mut out = Self::to(&mut self.holds, w, dest);
        match table {
            Some(k) => tables.write(k, &mut out)?,
            None => {
                out.write_all(&held)?;
                CompactFormatter.end_object(&mut out)?;
            }
        }
        // Keep the allocation for the next thread.
        held.clear();
        self.holds.samples = held;
        Ok(())
    }

    /// Appends the names and files of the thread's sampled functions to `stringArray`, which
    /// has `count` strings so far.
    fn append_strings<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        dest: Dest,
        count: usize,
    ) -> io::Result<()> {
        let lines = self.lines;
        let th = &mut self.thread;
        let mut out = Self::to(&mut self.holds, w, dest);
        let mut next = count;
        let mut append = |s: &str| -> io::Result<u32> {
            if next > 0 {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut out, s).map_err(io::Error::other)?;
            next += 1;
            Ok(u32::try_from(next - 1).unwrap_or(NONE))
        };
        for &function in &th.func_functions {
            let Some(f) = lines.function(function) else {
                continue;
            };
            if let MapEntry::Vacant(e) = th.name_strings.entry(function) {
                e.insert(append(&f.name)?);
            }
            if let Some(file) = lines.file(f.file) {
                if let MapEntry::Vacant(e) = th.file_strings.entry(f.file) {
                    e.insert(append(file)?);
                }
            }
        }
        Ok(())
    }

    /// Writes the held-back `funcTable` with its name and source columns, as the last key of a
    /// thread object that has `items` keys.
    fn write_func_table<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        dest: Dest,
        items: usize,
    ) -> io::Result<()> {
        if !self.thread.held {
            return Ok(());
        }
        let lines = self.lines;
        // The held `{"length":…,…` and the columns after it.
        let mut tail = std::mem::take(&mut self.holds.func_table);
        let th = &self.thread;
        // As many entries as fxprof's `length` says.
        let len = th
            .func_len
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(th.names.len());
        let sep = |i: usize| if i > 0 { &b","[..] } else { &b""[..] };
        let index = |tail: &mut Vec<u8>, i: Option<u32>| match i {
            Some(i) if i != NONE => CompactFormatter.write_u32(tail, i),
            _ => tail.write_all(b"null"),
        };
        tail.extend_from_slice(sep(th.held_items));
        tail.extend_from_slice(b"\"name\":[");
        for f in 0..len {
            tail.extend_from_slice(sep(f));
            let name = match th.func_functions.get(f) {
                Some(function) if *function != NONE => th.name_strings.get(function).copied(),
                _ => None,
            };
            // (A func always has a name: fxprof's, if the table lost it, string 0.)
            let name = name.or_else(|| th.names.get(f).copied()).unwrap_or(0);
            CompactFormatter.write_u32(&mut tail, name)?;
        }
        tail.extend_from_slice(b"],\"fileName\":[");
        for f in 0..len {
            tail.extend_from_slice(sep(f));
            let file = th
                .function(lines, f)
                .and_then(|func| th.file_strings.get(&func.file).copied());
            index(&mut tail, file)?;
        }
        tail.extend_from_slice(b"],\"lineNumber\":[");
        for f in 0..len {
            tail.extend_from_slice(sep(f));
            let line = th
                .function(lines, f)
                .map(|func| func.start_line)
                .filter(|&l| l != 0);
            index(&mut tail, line)?;
        }
        tail.extend_from_slice(b"],\"columnNumber\":[");
        for f in 0..len {
            tail.extend_from_slice(sep(f));
            tail.extend_from_slice(b"null");
        }
        tail.extend_from_slice(b"]}");
        // (`hold` is empty now: a thread inside a held value would go there.)
        let mut out = Self::to(&mut self.holds, w, dest);
        out.write_all(sep(items))?;
        out.write_all(b"\"funcTable\":")?;
        out.write_all(&tail)?;
        if self.holds.func_table.is_empty() {
            // Keep the allocation for the next thread.
            tail.clear();
            self.holds.func_table = tail;
        }
        self.thread.held = false;
        Ok(())
    }
}

/// Integer writes: recorded where a column is captured (a func may be written as another),
/// then written where they go.
macro_rules! integers {
    ($($name:ident: $t:ty),* $(,)?) => {
        $(
            fn $name<W: ?Sized + Write>(&mut self, w: &mut W, value: $t) -> io::Result<()> {
                match self.stack.last().map(|l| l.ctx) {
                    Some(Ctx::Weights) if !self.in_key => {
                        // A traced thread's weight: nanoseconds to milliseconds.
                        return CompactFormatter.write_f64(&mut self.out(w), value as f64 / 1e6);
                    }
                    Some(Ctx::SampleWeights) if !self.in_key => {
                        let first = &mut self.thread.first_weight;
                        if first.is_none() {
                            *first = i64::try_from(value).ok();
                        }
                    }
                    _ => {}
                }
                match self.scalar(u64::try_from(value).ok()) {
                    Some(other) => CompactFormatter.write_u64(&mut self.out(w), other),
                    None => CompactFormatter.$name(&mut self.out(w), value),
                }
            }
        )*
    };
}

impl Formatter for LinesFormatter<'_> {
    integers!(
        write_i8: i8,
        write_i16: i16,
        write_i32: i32,
        write_i64: i64,
        write_i128: i128,
        write_u8: u8,
        write_u16: u16,
        write_u32: u32,
        write_u64: u64,
        write_u128: u128,
    );

    fn write_null<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.scalar(None);
        CompactFormatter.write_null(&mut self.out(w))
    }

    fn write_bool<W: ?Sized + Write>(&mut self, w: &mut W, value: bool) -> io::Result<()> {
        self.scalar(None);
        CompactFormatter.write_bool(&mut self.out(w), value)
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        self.scalar(None);
        CompactFormatter.write_f32(&mut self.out(w), value)
    }

    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        self.scalar(None);
        CompactFormatter.write_f64(&mut self.out(w), value)
    }

    fn write_number_str<W: ?Sized + Write>(&mut self, w: &mut W, value: &str) -> io::Result<()> {
        self.scalar(None);
        CompactFormatter.write_number_str(&mut self.out(w), value)
    }

    fn begin_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.scalar(None);
        CompactFormatter.begin_string(&mut self.out(w))
    }

    fn end_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        CompactFormatter.end_string(&mut self.out(w))
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if self.weight_type_value && !self.in_key {
            // (`tracing-ms` has no escape: one fragment.)
            self.thread.tracing_ms = fragment == "tracing-ms";
        }
        CompactFormatter.write_string_fragment(&mut self.out(w), fragment)
    }

    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        CompactFormatter.write_char_escape(&mut self.out(w), char_escape)
    }

    fn write_byte_array<W: ?Sized + Write>(&mut self, w: &mut W, value: &[u8]) -> io::Result<()> {
        self.scalar(None);
        // CompactFormatter's own array methods: the bytes are one value here.
        CompactFormatter.write_byte_array(&mut self.out(w), value)
    }

    fn write_raw_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.scalar(None);
        CompactFormatter.write_raw_fragment(&mut self.out(w), fragment)
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let ctx = match std::mem::replace(&mut self.next, Ctx::Other) {
            c @ (Ctx::Threads
            | Ctx::Strings
            | Ctx::Addresses
            | Ctx::Funcs
            | Ctx::FuncNames
            | Ctx::Weights
            | Ctx::SampleWeights) => c,
            _ => Ctx::Other,
        };
        match ctx {
            Ctx::Addresses => self.thread.slots = Some(Vec::new()),
            Ctx::Funcs => self.thread.frames_seen = 0,
            Ctx::FuncNames => self.thread.names.clear(),
            _ => {}
        }
        self.stack.push(Level {
            ctx,
            dest: self.cur,
            items: 0,
        });
        CompactFormatter.begin_array(&mut self.out(w))
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let Some(level) = self.stack.pop() else {
            return CompactFormatter.end_array(&mut self.out(w));
        };
        if level.ctx == Ctx::Strings {
            self.append_strings(w, level.dest, level.items)?;
        }
        CompactFormatter.end_array(&mut Self::to(&mut self.holds, w, level.dest))
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if let Some(top) = self.stack.last_mut() {
            top.items += 1;
            self.next = if top.ctx == Ctx::Threads {
                Ctx::Thread
            } else {
                Ctx::Other
            };
            self.cur = top.dest;
        }
        CompactFormatter.begin_array_value(&mut self.out(w), first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.cur = self.top_dest();
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let ctx = match std::mem::replace(&mut self.next, Ctx::Other) {
            c @ (Ctx::Root | Ctx::Thread | Ctx::FrameTable | Ctx::FuncTable | Ctx::Samples) => c,
            _ => Ctx::Other,
        };
        match ctx {
            Ctx::Thread => self.thread.reset(),
            Ctx::FuncTable => {
                self.holds.func_table.clear();
                self.thread.held = true;
            }
            // Held back until it is known whether it stands in for a table of ours.
            Ctx::Samples if !self.samples.is_empty() => {
                self.holds.samples.clear();
                self.cur = Dest::Samples;
            }
            _ => {}
        }
        self.stack.push(Level {
            ctx,
            dest: self.cur,
            items: 0,
        });
        CompactFormatter.begin_object(&mut self.out(w))
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let Some(level) = self.stack.pop() else {
            return CompactFormatter.end_object(&mut self.out(w));
        };
        match level.ctx {
            // The `}` is written with the replaced columns, at the thread's end.
            Ctx::FuncTable => {
                self.thread.held_items = level.items;
                return Ok(());
            }
            Ctx::Thread => self.write_func_table(w, level.dest, level.items)?,
            Ctx::Samples if level.dest == Dest::Samples => return self.write_samples(w),
            _ => {}
        }
        CompactFormatter.end_object(&mut Self::to(&mut self.holds, w, level.dest))
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, _w: &mut W, _first: bool) -> io::Result<()> {
        // The key is written (or not) at its end, when it is known.
        self.in_key = true;
        self.key.clear();
        Ok(())
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.in_key = false;
        let Some(&Level { ctx, dest, items }) = self.stack.last() else {
            return Ok(());
        };
        let (entry, next) = self.entry(ctx);
        self.next = next;
        self.lines_value = entry == Entry::Lines;
        self.func_len_value = ctx == Ctx::FuncTable && self.key == b"\"length\"";
        self.samples_len_value = ctx == Ctx::Samples && self.key == b"\"length\"";
        self.weight_type_value = ctx == Ctx::Samples && self.key == b"\"weightType\"";
        match entry {
            Entry::Keep | Entry::Lines => {
                self.cur = dest;
                self.colon = true;
                let key = std::mem::take(&mut self.key);
                let mut out = Self::to(&mut self.holds, w, dest);
                if items > 0 {
                    out.write_all(b",")?;
                }
                out.write_all(&key)?;
                self.key = key;
                if let Some(top) = self.stack.last_mut() {
                    top.items += 1;
                }
            }
            Entry::Drop => {
                self.cur = Dest::Discard;
                self.colon = false;
            }
            Entry::Hold => {
                self.cur = Dest::Hold;
                self.colon = false;
            }
        }
        Ok(())
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.colon {
            CompactFormatter.begin_object_value(&mut self.out(w))?;
        }
        if self.lines_value {
            self.lines_value = false;
            self.write_lines(w)?;
            self.cur = Dest::Discard;
        }
        Ok(())
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.cur = self.top_dest();
        self.func_len_value = false;
        self.samples_len_value = false;
        self.weight_type_value = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::ser::{SerializeMap, SerializeSeq, Serializer};
    use serde_json::{json, Value};

    /// JSON with its keys in order, serialized with the calls fxprof makes (`u32` and `i32`
    /// integers, unit for null).
    #[derive(Clone, Debug)]
    enum J {
        O(Vec<(&'static str, J)>),
        A(Vec<J>),
        U(u32),
        I(i32),
        F(f64),
        S(String),
        N,
        B(bool),
    }

    impl Serialize for J {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                J::O(entries) => {
                    let mut m = s.serialize_map(None)?;
                    for (k, v) in entries {
                        m.serialize_entry(k, v)?;
                    }
                    m.end()
                }
                J::A(items) => {
                    let mut q = s.serialize_seq(Some(items.len()))?;
                    for i in items {
                        q.serialize_element(i)?;
                    }
                    q.end()
                }
                J::U(n) => s.serialize_u32(*n),
                J::I(n) => s.serialize_i32(*n),
                J::F(n) => s.serialize_f64(*n),
                J::S(t) => s.serialize_str(t),
                J::N => s.serialize_unit(),
                J::B(b) => s.serialize_bool(*b),
            }
        }
    }

    fn nums(v: &[i64]) -> J {
        J::A(
            v.iter()
                .map(|&n| match u32::try_from(n) {
                    Ok(u) => J::U(u),
                    Err(_) => J::I(n as i32),
                })
                .collect(),
        )
    }

    fn nulls(n: usize) -> J {
        J::A(vec![J::N; n])
    }

    fn strings(v: &[&str]) -> J {
        J::A(v.iter().map(|s| J::S(s.to_string())).collect())
    }

    /// Functions A (`a.js`, starts at line 3) at lines 0, 5, 7 (slots 0-2) and B (no file) at
    /// line 2 (slot 3).
    fn lines() -> SourceLines {
        let mut l = SourceLines::default();
        let a = l.add_function("A".into(), Some("a.js"), 3);
        let b = l.add_function("B".into(), None, 0);
        assert_eq!(l.push(a, 0), Some(SYNTHETIC_BASE));
        assert_eq!(l.push(a, 5), Some(SYNTHETIC_BASE + 1));
        assert_eq!(l.push(a, 7), Some(SYNTHETIC_BASE + 2));
        assert_eq!(l.push(b, 2), Some(SYNTHETIC_BASE + 3));
        l
    }

    /// A thread as fxprof writes it (its keys in fxprof's order). Frames: A:5, A:7, B:2, a
    /// label (-1), a `JIT` library frame (0x10), A:0; fxprof's funcs: one per frame, named
    /// after the address for the synthetic ones (strings 0-5), then `extra` strings.
    fn thread(name: &str, extra: &[&str]) -> J {
        let b = i64::from(SYNTHETIC_BASE);
        let mut string_array = vec!["0x80000001", "0x80000002", "0x80000003", "label", "jit"];
        string_array.push("0x80000000");
        string_array.extend_from_slice(extra);
        J::O(vec![
            (
                "frameTable",
                J::O(vec![
                    ("length", J::U(6)),
                    ("address", nums(&[b + 1, b + 2, b + 3, -1, 16, b])),
                    ("func", nums(&[0, 1, 2, 3, 4, 5])),
                    ("nativeSymbol", nulls(6)),
                    ("line", nulls(6)),
                    ("column", nulls(6)),
                ]),
            ),
            (
                "funcTable",
                J::O(vec![
                    ("length", J::U(6)),
                    ("name", nums(&[0, 1, 2, 3, 4, 5])),
                    (
                        "isJS",
                        J::A(vec![
                            J::B(true),
                            J::B(true),
                            J::B(false),
                            J::B(false),
                            J::B(false),
                            J::B(true),
                        ]),
                    ),
                    ("resource", nums(&[0, 0, 0, -1, 1, 0])),
                    ("fileName", nulls(6)),
                    ("lineNumber", nulls(6)),
                    ("columnNumber", nulls(6)),
                ]),
            ),
            (
                "markers",
                J::O(vec![
                    ("length", J::U(1)),
                    (
                        "data",
                        J::A(vec![J::O(vec![
                            ("type", J::S("x".into())),
                            ("n", J::F(1.5)),
                            ("s", J::S("q\"\n".into())),
                        ])]),
                    ),
                ]),
            ),
            ("name", J::S(name.into())),
            ("stringArray", strings(&string_array)),
            ("tid", J::S("1".into())),
        ])
    }

    fn profile(threads: Vec<J>) -> J {
        J::O(vec![
            (
                "meta",
                J::O(vec![
                    ("version", J::U(1)),
                    ("address", nums(&[i64::from(SYNTHETIC_BASE)])),
                    ("func", nums(&[7])),
                ]),
            ),
            ("libs", J::A(vec![])),
            ("threads", J::A(threads)),
            ("pages", J::A(vec![])),
        ])
    }

    fn two_threads() -> J {
        profile(vec![thread("one", &[]), thread("two", &["more"])])
    }

    /// Writes `j` through the formatter: the text and its parse.
    fn rewrite(j: &J, lines: &SourceLines) -> (String, Value) {
        let mut out = Vec::new();
        let samples = SampleTables::default();
        let fill = Fill {
            lines,
            traced: false,
            samples: &samples,
        };
        write(&mut out, j, &fill).unwrap();
        let s = String::from_utf8(out).unwrap();
        let v = serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"));
        (s, v)
    }

    /// The name of each frame's func, through the string array.
    fn frame_names(t: &Value) -> Vec<String> {
        t["frameTable"]["func"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let name = &t["funcTable"]["name"][f.as_u64().unwrap() as usize];
                t["stringArray"][name.as_u64().unwrap() as usize]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn frame_lines_come_from_synthetic_addresses() {
        let (_, out) = rewrite(&two_threads(), &lines());
        for t in out["threads"].as_array().unwrap() {
            // A label (no address), a `JIT` library address and line 0 are null.
            assert_eq!(t["frameTable"]["line"], json!([5, 7, 2, null, null, null]));
            assert_eq!(
                t["frameTable"]["column"],
                json!([null, null, null, null, null, null])
            );
            assert_eq!(t["frameTable"]["length"], 6);
        }
    }

    #[test]
    fn a_function_s_frames_share_one_func_with_its_name() {
        let (_, out) = rewrite(&two_threads(), &lines());
        for t in out["threads"].as_array().unwrap() {
            assert_eq!(t["frameTable"]["func"], json!([0, 0, 2, 3, 4, 0]));
            assert_eq!(frame_names(t), ["A", "A", "B", "label", "jit", "A"]);
        }
        // Other `func` and `address` keys are not the frame table's.
        assert_eq!(out["meta"]["func"], json!([7]));
    }

    #[test]
    fn names_and_files_are_appended_to_each_thread_s_string_array() {
        let (_, out) = rewrite(&two_threads(), &lines());
        let t = &out["threads"];
        let mut want = vec!["0x80000001", "0x80000002", "0x80000003", "label", "jit"];
        want.extend(["0x80000000", "A", "a.js", "B"]);
        assert_eq!(t[0]["stringArray"], json!(want));
        // Func 1 is no frame's: it keeps fxprof's name.
        assert_eq!(t[0]["funcTable"]["name"], json!([6, 1, 8, 3, 4, 5]));
        assert_eq!(
            t[0]["funcTable"]["fileName"],
            json!([7, null, null, null, null, null])
        );
        assert_eq!(
            t[1]["funcTable"]["fileName"],
            json!([8, null, null, null, null, null]),
            "after the thread's own strings"
        );
        for t in t.as_array().unwrap() {
            let ft = &t["funcTable"];
            assert_eq!(ft["length"], 6);
            // The held-back part: booleans and negative numbers kept.
            assert_eq!(ft["isJS"], json!([true, true, false, false, false, true]));
            assert_eq!(ft["resource"], json!([0, 0, 0, -1, 1, 0]));
            assert_eq!(ft["lineNumber"], json!([3, null, null, null, null, null]));
            assert_eq!(
                ft["columnNumber"],
                json!([null, null, null, null, null, null])
            );
            assert_eq!(
                t["markers"]["data"][0]["s"], "q\"\n",
                "escapes pass through"
            );
            assert_eq!(t["markers"]["data"][0]["n"], 1.5);
            assert_eq!(t["tid"], "1");
        }
    }

    #[test]
    fn only_the_filled_columns_differ_from_serde_json_s_output() {
        let j = two_threads();
        let plain = serde_json::to_vec(&j).unwrap();
        // Without slots: the same bytes.
        let (s, _) = rewrite(&j, &SourceLines::default());
        assert_eq!(s.as_bytes(), &plain[..]);
        let (_, ours) = rewrite(&j, &lines());
        let mut plain: Value = serde_json::from_slice(&plain).unwrap();
        for (t, o) in plain["threads"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .zip(ours["threads"].as_array().unwrap())
        {
            for k in ["line", "func"] {
                assert_ne!(t["frameTable"][k], o["frameTable"][k]);
                t["frameTable"][k] = o["frameTable"][k].clone();
            }
            for k in ["name", "fileName", "lineNumber"] {
                t["funcTable"][k] = o["funcTable"][k].clone();
            }
            t["stringArray"] = o["stringArray"].clone();
        }
        assert_eq!(plain, ours);
    }

    #[test]
    fn the_func_table_is_written_once_as_the_thread_s_last_key() {
        let (s, _) = rewrite(&two_threads(), &lines());
        assert_eq!(s.matches("\"funcTable\"").count(), 2);
        assert_eq!(s.matches("\"fileName\"").count(), 2);
        assert_eq!(s.matches("\"lineNumber\"").count(), 2);
        for (i, _) in s.match_indices("\"funcTable\":") {
            assert!(s[..i].ends_with("\"tid\":\"1\","), "{s}");
        }
    }

    #[test]
    fn file_names_are_escaped() {
        let mut l = SourceLines::default();
        let file = "C:\\src\\\"x\".js\n";
        let f = l.add_function("f\"".into(), Some(file), 1);
        l.push(f, 1);
        let (_, out) = rewrite(&profile(vec![thread("t", &[])]), &l);
        let t = &out["threads"][0];
        assert_eq!(t["stringArray"][6], "f\"");
        assert_eq!(t["stringArray"][7], file);
        // Slot 0 is the only one: frame 5 (address = base) is f at line 1.
        assert_eq!(
            t["frameTable"]["line"],
            json!([null, null, null, null, null, 1])
        );
        assert_eq!(frame_names(t)[5], "f\"");
        // The frames of addresses past the slots are left alone.
        assert_eq!(frame_names(t)[0], "0x80000001");
    }

    #[test]
    fn a_thread_without_frames_keeps_its_func_table() {
        let t = J::O(vec![
            (
                "frameTable",
                J::O(vec![
                    ("length", J::U(0)),
                    ("address", nums(&[])),
                    ("func", nums(&[])),
                    ("line", nulls(0)),
                ]),
            ),
            (
                "funcTable",
                J::O(vec![
                    ("length", J::U(0)),
                    ("name", nums(&[])),
                    ("fileName", nulls(0)),
                    ("lineNumber", nulls(0)),
                    ("columnNumber", nulls(0)),
                ]),
            ),
            ("stringArray", strings(&[])),
        ]);
        let (_, out) = rewrite(&profile(vec![t]), &lines());
        let t = &out["threads"][0];
        assert_eq!(
            t["funcTable"],
            json!({"length": 0, "name": [], "fileName": [], "lineNumber": [], "columnNumber": []})
        );
        assert_eq!(t["frameTable"]["line"], json!([]));
        assert_eq!(t["stringArray"], json!([]));
    }

    #[test]
    fn the_address_space_is_bounded() {
        let mut l = SourceLines::with_limit(2);
        let f = l.add_function("f".into(), None, 0);
        assert_eq!(l.push(f, 1), Some(SYNTHETIC_BASE));
        assert_eq!(l.push(f, 2), Some(SYNTHETIC_BASE + 1));
        assert_eq!(l.push(f, 3), None);
        assert_eq!(l.slot_of(Some(u64::from(SYNTHETIC_BASE) + 1)), 1);
        assert_eq!(l.slot_of(Some(u64::from(SYNTHETIC_BASE) + 2)), NONE);
        assert_eq!(l.slot_of(Some(16)), NONE);
        assert_eq!(l.slot_of(None), NONE);
    }

    /// A thread with `samples` (fxprof's keys: length, weightType, stack, timeDeltas, weight,
    /// threadCPUDelta).
    fn sampled(name: &str, samples: Vec<(&'static str, J)>) -> J {
        J::O(vec![
            ("name", J::S(name.into())),
            ("samples", J::O(samples)),
            ("tid", J::U(1)),
        ])
    }

    fn samples(stack: J, deltas: &[f64], weight: &[i64], cpu: &[i64]) -> Vec<(&'static str, J)> {
        vec![
            ("length", J::U(deltas.len() as u32)),
            ("weightType", J::S("samples".into())),
            ("stack", stack),
            (
                "timeDeltas",
                J::A(deltas.iter().map(|&d| J::F(d)).collect()),
            ),
            ("weight", nums(weight)),
            ("threadCPUDelta", nums(cpu)),
        ]
    }

    #[test]
    fn a_stand_in_s_samples_are_its_table_and_others_stay() {
        let mut tables = SampleTables::default();
        let stand_in = tables
            .add(vec![(0, Some(3), 1), (2_000_000, None, 1)], 1000)
            .unwrap();
        let stand_in_samples = samples(J::A(vec![J::N]), &[0.0], &[i64::from(stand_in)], &[0]);
        let real = || samples(nums(&[0, 1]), &[0.0, 1.5], &[1, 2], &[0, 0]);
        let given = profile(vec![
            sampled("one", real()),
            sampled("two", stand_in_samples),
            sampled("three", real()),
        ]);
        let want = profile(vec![
            sampled("one", real()),
            sampled(
                "two",
                samples(nums(&[3, -1]), &[0.0, 2.0], &[1, 1], &[1, 1]),
            ),
            sampled("three", real()),
        ]);
        let lines = SourceLines::default();
        let fill = Fill {
            lines: &lines,
            traced: false,
            samples: &tables,
        };
        let mut out = Vec::new();
        write(&mut out, &given, &fill).unwrap();
        let want = serde_json::to_string(&want)
            .unwrap()
            .replace("[3,-1]", "[3,null]");
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
