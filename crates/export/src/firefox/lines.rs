//! Source lines in the written profile: a serde_json [`Formatter`] that fills the columns
//! `fxprof-processed-profile` 0.8.1 leaves null.
//!
//! fxprof writes `frameTable.line`, `frameTable.column`, `funcTable.fileName`,
//! `funcTable.lineNumber` and `funcTable.columnNumber` as columns of nulls and has no API to
//! set them. The sink gives every sampled (function, line) a frame of its own at a relative
//! address of a synthetic library, from [`SYNTHETIC_BASE`] up; [`SourceLines`] says, per such
//! address, the line and the function's file and start line. [`LinesFormatter`] follows the
//! JSON path while fxprof writes the profile and, in each element of the root's `threads`:
//!
//! * records the `frameTable.address` and `frameTable.func` columns as they pass;
//! * writes `frameTable.line` from each frame's address: the slot's line, or null for an
//!   address below [`SYNTHETIC_BASE`] (the `JIT` libraries), no address (label frames) or
//!   line 0;
//! * holds the `funcTable` object back — `fileName` holds indices into the thread's
//!   `stringArray`, which fxprof writes after `funcTable` — and leaves out its three null
//!   columns;
//! * appends the file names the thread's functions need to the end of `stringArray`, which
//!   gives their indices;
//! * writes `"funcTable":{…,"fileName":[…],"lineNumber":[…],"columnNumber":[…]}` as the
//!   thread object's last key (JSON key order does not matter). A function's file and start
//!   line are those of the slot of any frame whose `func` is that function; functions of no
//!   synthetic frame keep null.
//!
//! Everything else passes through as serde_json's [`CompactFormatter`] writes it. What it
//! relies on, which the tests check against fxprof's own output: `frameTable.address` comes
//! before `frameTable.line` (else the line column is left null), `frameTable` before
//! `stringArray`, and relative addresses are written as integers (`-1` when there is none).
//! The types are those of the processed format version 55 (`preprocessedProfileVersion`):
//! `line: (number|null)[]`, `fileName: (IndexIntoStringTable|null)[]` into the thread's own
//! `stringArray`, `lineNumber: (number|null)[]` (the function's start line).

use std::collections::HashMap;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

/// The first relative address of the synthetic libraries' slots; the `JIT` libraries' relative
/// addresses stay below it.
pub(crate) const SYNTHETIC_BASE: u32 = 0x8000_0000;

/// "None" in the index columns below.
const NONE: u32 = u32::MAX;

/// What one synthetic relative address stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    /// Index into [`SourceLines::files`], or [`NONE`].
    file: u32,
    /// The function's start line (0 = unknown).
    func_line: u32,
    /// The sampled line (0 = unknown).
    line: u32,
}

/// The slots of the synthetic libraries: slot `i` is relative address `SYNTHETIC_BASE + i`.
#[derive(Debug)]
pub(crate) struct SourceLines {
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
            files: Vec::new(),
            file_ids: HashMap::new(),
            slots: Vec::new(),
            limit,
        }
    }

    /// How many more slots fit.
    pub(crate) fn room(&self) -> usize {
        self.limit.saturating_sub(self.slots.len())
    }

    /// Adds the next slot (`file`, the function's start line, the sampled line) and returns its
    /// relative address; `None` when the address space is full. Consecutive calls give
    /// consecutive addresses.
    pub(crate) fn push(&mut self, file: Option<&str>, func_line: u32, line: u32) -> Option<u32> {
        if self.room() == 0 {
            return None;
        }
        let address = SYNTHETIC_BASE.checked_add(u32::try_from(self.slots.len()).ok()?)?;
        let file = match file {
            None => NONE,
            Some(f) => match self.file_ids.get(f) {
                Some(&id) => id,
                None => {
                    let id = u32::try_from(self.files.len()).unwrap_or(NONE);
                    self.files.push(f.to_string());
                    self.file_ids.insert(f.to_string(), id);
                    id
                }
            },
        };
        self.slots.push(Slot {
            file,
            func_line,
            line,
        });
        Some(address)
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

    fn file(&self, id: u32) -> Option<&str> {
        self.files.get(id as usize).map(String::as_str)
    }
}

/// Writes `value` (the fxprof profile) as compact JSON into `out`, with the source lines of
/// `lines` filled in.
pub(crate) fn write<W: Write, T: Serialize>(
    out: W,
    value: &T,
    lines: &SourceLines,
) -> io::Result<()> {
    if lines.slots.is_empty() {
        // No synthetic frame: nothing to fill.
        return serde_json::to_writer(out, value).map_err(io::Error::other);
    }
    let mut ser = serde_json::Serializer::with_formatter(out, LinesFormatter::new(lines));
    value.serialize(&mut ser).map_err(io::Error::other)
}

/// Where the bytes of the current token go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dest {
    /// The output.
    Writer,
    /// The held-back `funcTable` of the current thread.
    Hold,
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
    Strings,
    Addresses,
    Funcs,
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
    /// Func index per frame.
    funcs: Vec<u32>,
    /// Slot index per func, from its first synthetic frame.
    func_slots: Vec<u32>,
    /// `funcTable.length`.
    func_len: Option<u64>,
    /// The held-back `funcTable` (from its `{`, without the `}`).
    hold: Vec<u8>,
    held: bool,
    /// Keys written into `hold`.
    held_items: usize,
    /// `stringArray` index of each file id appended.
    file_strings: HashMap<u32, u32>,
}

impl ThreadCapture {
    fn reset(&mut self) {
        self.slots = None;
        self.funcs.clear();
        self.func_slots.clear();
        self.func_len = None;
        self.hold.clear();
        self.held = false;
        self.held_items = 0;
        self.file_strings.clear();
    }

    /// Gives each func the slot of its first synthetic frame.
    fn map_funcs(&mut self) {
        let Some(slots) = &self.slots else { return };
        for (&slot, &func) in slots.iter().zip(&self.funcs) {
            // fxprof makes a func from a frame, so there are at most as many funcs as frames.
            if slot == NONE || func as usize >= self.funcs.len() {
                continue;
            }
            if self.func_slots.len() <= func as usize {
                self.func_slots.resize(func as usize + 1, NONE);
            }
            if let Some(s) = self.func_slots.get_mut(func as usize) {
                if *s == NONE {
                    *s = slot;
                }
            }
        }
    }
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

/// The serde_json formatter that fills the source-line columns (see the module doc).
#[derive(Debug)]
pub(crate) struct LinesFormatter<'a> {
    lines: &'a SourceLines,
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
    thread: ThreadCapture,
}

impl<'a> LinesFormatter<'a> {
    pub(crate) fn new(lines: &'a SourceLines) -> Self {
        LinesFormatter {
            lines,
            stack: Vec::new(),
            cur: Dest::Writer,
            in_key: false,
            key: Vec::new(),
            next: Ctx::Root,
            colon: false,
            lines_value: false,
            func_len_value: false,
            thread: ThreadCapture::default(),
        }
    }

    /// Where the current token goes.
    fn out<'b, W: ?Sized>(&'b mut self, w: &'b mut W) -> Out<'b, W> {
        if self.in_key {
            return Out::Buf(&mut self.key);
        }
        Self::to(&mut self.thread.hold, w, self.cur)
    }

    fn to<'b, W: ?Sized>(hold: &'b mut Vec<u8>, w: &'b mut W, dest: Dest) -> Out<'b, W> {
        match dest {
            Dest::Writer => Out::Writer(w),
            Dest::Hold => Out::Buf(hold),
            Dest::Discard => Out::Null,
        }
    }

    fn top_dest(&self) -> Dest {
        self.stack.last().map_or(Dest::Writer, |l| l.dest)
    }

    /// Records a scalar (an integer, or `None` for anything else) of a captured column.
    fn scalar(&mut self, value: Option<u64>) {
        if self.in_key {
            return;
        }
        if self.func_len_value {
            self.thread.func_len = value;
            return;
        }
        match self.stack.last().map(|l| l.ctx) {
            Some(Ctx::Addresses) => {
                let slot = self.lines.slot_of(value);
                if let Some(s) = &mut self.thread.slots {
                    s.push(slot);
                }
            }
            Some(Ctx::Funcs) => {
                let f = value.and_then(|v| u32::try_from(v).ok()).unwrap_or(NONE);
                self.thread.funcs.push(f);
            }
            _ => {}
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
            (Ctx::FrameTable, b"\"address\"") => (Entry::Keep, Ctx::Addresses),
            (Ctx::FrameTable, b"\"func\"") => (Entry::Keep, Ctx::Funcs),
            (Ctx::FrameTable, b"\"line\"") if self.thread.slots.is_some() => {
                (Entry::Lines, Ctx::Other)
            }
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
        let mut out = Self::to(&mut self.thread.hold, w, self.cur);
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

    /// Appends the files of the thread's functions to `stringArray`, which has `count`
    /// strings so far.
    fn append_files<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        dest: Dest,
        count: usize,
    ) -> io::Result<()> {
        let lines = self.lines;
        let th = &mut self.thread;
        let mut out = Self::to(&mut th.hold, w, dest);
        let mut next = count;
        for &slot in &th.func_slots {
            let Some(file) = lines.slot(slot).map(|s| s.file) else {
                continue;
            };
            let Some(name) = lines.file(file) else {
                continue;
            };
            if th.file_strings.contains_key(&file) {
                continue;
            }
            if next > 0 {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut out, name).map_err(io::Error::other)?;
            th.file_strings
                .insert(file, u32::try_from(next).unwrap_or(NONE));
            next += 1;
        }
        Ok(())
    }

    /// Writes the held-back `funcTable` with its source columns, as the last key of a thread
    /// object that has `items` keys.
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
        let mut tail = std::mem::take(&mut self.thread.hold);
        let th = &self.thread;
        // As many entries as fxprof's `length` says.
        let len = th
            .func_len
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(th.func_slots.len());
        let slot = |f: usize| th.func_slots.get(f).and_then(|&s| lines.slot(s)).copied();
        let sep = |i: usize| if i > 0 { &b","[..] } else { &b""[..] };
        tail.extend_from_slice(sep(th.held_items));
        tail.extend_from_slice(b"\"fileName\":[");
        for f in 0..len {
            tail.extend_from_slice(sep(f));
            match slot(f).and_then(|s| th.file_strings.get(&s.file)) {
                Some(&i) if i != NONE => CompactFormatter.write_u32(&mut tail, i)?,
                _ => tail.extend_from_slice(b"null"),
            }
        }
        tail.extend_from_slice(b"],\"lineNumber\":[");
        for f in 0..len {
            tail.extend_from_slice(sep(f));
            match slot(f) {
                Some(s) if s.func_line != 0 => {
                    CompactFormatter.write_u32(&mut tail, s.func_line)?
                }
                _ => tail.extend_from_slice(b"null"),
            }
        }
        tail.extend_from_slice(b"],\"columnNumber\":[");
        for f in 0..len {
            tail.extend_from_slice(sep(f));
            tail.extend_from_slice(b"null");
        }
        tail.extend_from_slice(b"]}");
        // (`hold` is empty now: a thread inside a held value would go there.)
        let mut out = Self::to(&mut self.thread.hold, w, dest);
        out.write_all(sep(items))?;
        out.write_all(b"\"funcTable\":")?;
        out.write_all(&tail)?;
        if self.thread.hold.is_empty() {
            // Keep the allocation for the next thread.
            tail.clear();
            self.thread.hold = tail;
        }
        self.thread.held = false;
        Ok(())
    }
}

/// Integer writes: recorded where a column is captured, then written where they go.
macro_rules! integers {
    ($($name:ident: $t:ty),* $(,)?) => {
        $(
            fn $name<W: ?Sized + Write>(&mut self, w: &mut W, value: $t) -> io::Result<()> {
                self.scalar(u64::try_from(value).ok());
                CompactFormatter.$name(&mut self.out(w), value)
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
            c @ (Ctx::Threads | Ctx::Strings | Ctx::Addresses | Ctx::Funcs) => c,
            _ => Ctx::Other,
        };
        match ctx {
            Ctx::Addresses => self.thread.slots = Some(Vec::new()),
            Ctx::Funcs => self.thread.funcs.clear(),
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
            self.append_files(w, level.dest, level.items)?;
        }
        CompactFormatter.end_array(&mut Self::to(&mut self.thread.hold, w, level.dest))
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
            c @ (Ctx::Root | Ctx::Thread | Ctx::FrameTable | Ctx::FuncTable) => c,
            _ => Ctx::Other,
        };
        match ctx {
            Ctx::Thread => self.thread.reset(),
            Ctx::FuncTable => {
                self.thread.hold.clear();
                self.thread.held = true;
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
            Ctx::FrameTable => self.thread.map_funcs(),
            // The `}` is written with the source columns, at the thread's end.
            Ctx::FuncTable => {
                self.thread.held_items = level.items;
                return Ok(());
            }
            Ctx::Thread => self.write_func_table(w, level.dest, level.items)?,
            _ => {}
        }
        CompactFormatter.end_object(&mut Self::to(&mut self.thread.hold, w, level.dest))
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
        match entry {
            Entry::Keep | Entry::Lines => {
                self.cur = dest;
                self.colon = true;
                let key = std::mem::take(&mut self.key);
                let mut out = Self::to(&mut self.thread.hold, w, dest);
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

    /// Slots: function A (`a.js`, starts at line 3) at lines 0, 5, 7; function B (no file)
    /// at line 2.
    fn lines() -> SourceLines {
        let mut l = SourceLines::default();
        assert_eq!(l.push(Some("a.js"), 3, 0), Some(SYNTHETIC_BASE));
        assert_eq!(l.push(Some("a.js"), 3, 5), Some(SYNTHETIC_BASE + 1));
        assert_eq!(l.push(Some("a.js"), 3, 7), Some(SYNTHETIC_BASE + 2));
        assert_eq!(l.push(None, 0, 2), Some(SYNTHETIC_BASE + 3));
        l
    }

    /// A thread as fxprof writes it (its keys in fxprof's order). Frames: A:5, A:7, B:2, a
    /// label (-1), a `JIT` library frame (0x10), A:0; funcs: A, B, label, jit.
    fn thread(name: &str, string_array: &[&str]) -> J {
        let b = i64::from(SYNTHETIC_BASE);
        J::O(vec![
            (
                "frameTable",
                J::O(vec![
                    ("length", J::U(6)),
                    ("address", nums(&[b + 1, b + 2, b + 3, -1, 16, b])),
                    ("func", nums(&[0, 0, 1, 2, 3, 0])),
                    ("line", nulls(6)),
                    ("column", nulls(6)),
                ]),
            ),
            (
                "funcTable",
                J::O(vec![
                    ("length", J::U(4)),
                    ("name", nums(&[0, 1, 2, 3])),
                    (
                        "isJS",
                        J::A(vec![J::B(true), J::B(false), J::B(false), J::B(false)]),
                    ),
                    ("resource", nums(&[0, 1, -1, -1])),
                    ("fileName", nulls(4)),
                    ("lineNumber", nulls(4)),
                    ("columnNumber", nulls(4)),
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
            ("stringArray", strings(string_array)),
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
                ]),
            ),
            ("libs", J::A(vec![])),
            ("threads", J::A(threads)),
            ("pages", J::A(vec![])),
        ])
    }

    fn two_threads() -> J {
        profile(vec![
            thread("one", &["A", "B", "label", "jit"]),
            thread("two", &["A", "B", "label", "jit", "more"]),
        ])
    }

    /// Writes `j` through the formatter: the text and its parse.
    fn rewrite(j: &J, lines: &SourceLines) -> (String, Value) {
        let mut out = Vec::new();
        write(&mut out, j, lines).unwrap();
        let s = String::from_utf8(out).unwrap();
        let v = serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"));
        (s, v)
    }

    #[test]
    fn frame_lines_come_from_synthetic_addresses() {
        let (_, out) = rewrite(&two_threads(), &lines());
        for t in out["threads"].as_array().unwrap() {
            // A label (no address), a `JIT` library address and line 0 are null.
            assert_eq!(t["frameTable"]["line"], json!([5, 7, 2, null, null, null]));
            assert_eq!(
                t["frameTable"]["column"],
                json!([null, null, null, null, null, null]),
                "no columns"
            );
            assert_eq!(t["frameTable"]["length"], 6);
        }
    }

    #[test]
    fn func_files_are_appended_to_each_thread_s_string_array() {
        let (_, out) = rewrite(&two_threads(), &lines());
        let t = &out["threads"];
        assert_eq!(
            t[0]["stringArray"],
            json!(["A", "B", "label", "jit", "a.js"])
        );
        assert_eq!(t[0]["funcTable"]["fileName"], json!([4, null, null, null]));
        assert_eq!(
            t[1]["stringArray"],
            json!(["A", "B", "label", "jit", "more", "a.js"])
        );
        assert_eq!(t[1]["funcTable"]["fileName"], json!([5, null, null, null]));
        for t in t.as_array().unwrap() {
            let ft = &t["funcTable"];
            assert_eq!(ft["length"], 4);
            // The held-back part: numbers, booleans and negative numbers kept.
            assert_eq!(ft["name"], json!([0, 1, 2, 3]));
            assert_eq!(ft["isJS"], json!([true, false, false, false]));
            assert_eq!(ft["resource"], json!([0, 1, -1, -1]));
            assert_eq!(ft["lineNumber"], json!([3, null, null, null]));
            assert_eq!(ft["columnNumber"], json!([null, null, null, null]));
            assert_eq!(
                t["markers"]["data"][0]["s"], "q\"\n",
                "escapes pass through"
            );
            assert_eq!(t["markers"]["data"][0]["n"], 1.5);
            assert_eq!(t["tid"], "1");
        }
    }

    #[test]
    fn only_the_source_columns_differ_from_serde_json_s_output() {
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
            assert_ne!(t["frameTable"]["line"], o["frameTable"]["line"]);
            t["frameTable"]["line"] = o["frameTable"]["line"].clone();
            for k in ["fileName", "lineNumber"] {
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
            let before = &s[..i];
            assert!(before.ends_with("\"tid\":\"1\","), "{s}");
        }
    }

    #[test]
    fn an_empty_string_array_gets_no_leading_comma() {
        let (_, out) = rewrite(&profile(vec![thread("t", &[])]), &lines());
        let t = &out["threads"][0];
        assert_eq!(t["stringArray"], json!(["a.js"]));
        assert_eq!(t["funcTable"]["fileName"], json!([0, null, null, null]));
    }

    #[test]
    fn file_names_are_escaped() {
        let mut l = SourceLines::default();
        let file = "C:\\src\\\"x\".js\n";
        l.push(Some(file), 1, 1);
        let (_, out) = rewrite(&profile(vec![thread("t", &["A"])]), &l);
        let t = &out["threads"][0];
        assert_eq!(t["stringArray"], json!(["A", file]));
        assert_eq!(t["funcTable"]["fileName"], json!([1, null, null, null]));
        // Slot 0 is the only one: frame 5 (address = base) has line 1.
        assert_eq!(
            t["frameTable"]["line"],
            json!([null, null, null, null, null, 1])
        );
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
    }

    #[test]
    fn the_address_space_is_bounded() {
        assert_eq!(
            SourceLines::default().room(),
            (u32::MAX - SYNTHETIC_BASE) as usize
        );
        let mut l = SourceLines::with_limit(2);
        assert_eq!(l.push(None, 0, 1), Some(SYNTHETIC_BASE));
        assert_eq!(l.push(None, 0, 2), Some(SYNTHETIC_BASE + 1));
        assert_eq!(l.room(), 0);
        assert_eq!(l.push(None, 0, 3), None);
        assert_eq!(l.slot_of(Some(u64::from(SYNTHETIC_BASE) + 1)), 1);
        assert_eq!(l.slot_of(Some(u64::from(SYNTHETIC_BASE) + 2)), NONE);
        assert_eq!(l.slot_of(Some(16)), NONE);
        assert_eq!(l.slot_of(None), NONE);
    }
}
