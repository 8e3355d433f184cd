//! `profkit validate` for Mono log profiler files: spec violations (errors) and known producer
//! quirks (warnings), each with a stable code ([`codes::ALL`], documented in docs/mono.md), the
//! byte offset, and the record: the event's index in the file (the events decoded before it,
//! in file order, counted from 0; messages also name the buffer and the event's index in it).
//!
//! One pass in file order: the header, every buffer (a bad magic resyncs at the next buffer;
//! a decoding error skips the rest of its buffer), every event (time wraps, GC moves, enum
//! ranges, a call stack per thread), then what only the whole file tells (references to
//! methods, vtables and classes never defined). A file cut inside a buffer (also between two
//! events) is the `truncated` error, at the start of the incomplete event.

use std::io::Read;

use profkit_common::{Findings, Truncation, Validation};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::ErrorKind;
use crate::header::Header;
use crate::raw::*;
use crate::read::{Buffer, ClassRef, EventKind, File, MetaAction};
use crate::source::{BufferSource, StreamBuffers};

/// Every finding code, with its severity and a one-line description.
pub mod codes {
    use profkit_common::Severity::{self, Error as E, Warning as W};

    /// The file header cannot be decoded ([`super::validate_bytes`] only).
    pub const HEADER_INVALID: &str = "header-invalid";
    /// Data version 0, 7 or above 17 ([`super::validate_bytes`] only).
    pub const UNSUPPORTED_VERSION: &str = "unsupported-version";
    /// Header flags are not 0.
    pub const HEADER_FLAGS: &str = "header-flags";
    /// Pointer size is not 4 or 8.
    pub const POINTER_SIZE: &str = "pointer-size";
    /// A buffer does not start with `BUF_ID`.
    pub const BAD_BUFFER_MAGIC: &str = "bad-buffer-magic";
    /// An event byte the data version does not define.
    pub const UNKNOWN_EVENT: &str = "unknown-event";
    /// A field runs past the end of its buffer.
    pub const PAST_BUFFER: &str = "past-buffer";
    /// A LEB128 number longer than 10 bytes.
    pub const LEB_TOO_LONG: &str = "leb-too-long";
    /// A string without its NUL inside its buffer.
    pub const UNTERMINATED_STRING: &str = "unterminated-string";
    /// A count larger than the bytes left, or a metadata or counter type out of its range.
    pub const BAD_VALUE: &str = "bad-value";
    /// A GC_MOVE with an odd object count.
    pub const GC_MOVE_ODD: &str = "gc-move-odd";
    /// A field value outside its enum (GC event or generation, monitor event, clause type,
    /// sync point, root source, JIT helper type).
    pub const ENUM_OUT_OF_RANGE: &str = "enum-out-of-range";
    /// A negative time delta written as a wrapped 10-byte ULEB.
    pub const MONO_TIME_WRAP: &str = "mono-time-wrap";
    /// Buffers with thread id 0.
    pub const THREAD_ID_ZERO: &str = "thread-id-zero";
    /// A LEAVE / EXC_LEAVE that matches no frame of its thread.
    pub const UNMATCHED_LEAVE: &str = "unmatched-leave";
    /// A LEAVE / EXC_LEAVE that matches a deeper frame: the frames above it were left unseen.
    pub const LEAVE_SKIPS_FRAMES: &str = "leave-skips-frames";
    /// A method entered but never compiled (no JIT event, so no name).
    pub const METHOD_WITHOUT_JIT: &str = "method-without-jit";
    /// A vtable used before its VTABLE load event.
    pub const VTABLE_BEFORE_LOAD: &str = "vtable-before-load";
    /// A vtable used but never loaded.
    pub const UNDEFINED_VTABLE: &str = "undefined-vtable";
    /// A class used but never loaded.
    pub const UNDEFINED_CLASS: &str = "undefined-class";

    /// `(code, severity, description)` for every code the validator emits, besides the two
    /// every format shares ([`profkit_common::finding::COMMON_CODES`]: `truncated`,
    /// `findings-capped`).
    pub const ALL: profkit_common::finding::CodeTable = &[
        (HEADER_INVALID, E, "the file header cannot be decoded (magic, major layout, string lengths)"),
        (UNSUPPORTED_VERSION, E, "data version 0, 7 or above 17 (FiveM writes its own 1.1 heap dumps with data version 0)"),
        (HEADER_FLAGS, E, "header flags are not 0 (mprof-report rejects the file)"),
        (POINTER_SIZE, E, "pointer size is not 4 or 8"),
        (BAD_BUFFER_MAGIC, E, "a buffer does not start with 01 4C 50 4D; the scan resumes at the next buffer magic"),
        (UNKNOWN_EVENT, E, "an event byte (type, exinfo) the data version does not define; the rest of the buffer is skipped (mprof-report: \"unhandled profiler event\")"),
        (PAST_BUFFER, E, "a field runs past the end of its buffer; the rest of the buffer is skipped"),
        (LEB_TOO_LONG, E, "a LEB128 number longer than 10 bytes; the rest of the buffer is skipped"),
        (UNTERMINATED_STRING, E, "a string without its NUL inside its buffer; the rest of the buffer is skipped"),
        (BAD_VALUE, E, "a count larger than the bytes left, or a metadata or counter type out of its range; the rest of the buffer is skipped"),
        (GC_MOVE_ODD, E, "a GC_MOVE with an odd object count (moves are old/new pairs)"),
        (ENUM_OUT_OF_RANGE, E, "a GC event, generation, monitor event, clause type, sync point type, root source or JIT helper type outside its enum"),
        (MONO_TIME_WRAP, W, "a negative time delta, written as a wrapped 10-byte ULEB (Mono writes JIT and sample events with stored timestamps; every 6.8 file has some; not corruption)"),
        (THREAD_ID_ZERO, W, "buffers with thread id 0 (Mono 4.8.0 wrote 0 in every buffer, fixed by mono PR #3700): their threads cannot be told apart"),
        (UNMATCHED_LEAVE, W, "a LEAVE or EXC_LEAVE that matches no frame of its thread (mprof-report: \"unmatched leave\"; Mono 6.8 `calls` runs have them)"),
        (LEAVE_SKIPS_FRAMES, W, "a LEAVE or EXC_LEAVE that matches a deeper frame: the frames above it were left without their own (an exception unwound them)"),
        (METHOD_WITHOUT_JIT, W, "a method entered but without a JIT event in the file: it has no name"),
        (VTABLE_BEFORE_LOAD, W, "a vtable used (ALLOC, HEAP_OBJECT) before its VTABLE load event (Mono 6.8: about 11 per `alloc` file; mprof-report then never resolves its class)"),
        (UNDEFINED_VTABLE, W, "a vtable used but never loaded: its allocations have no class"),
        (UNDEFINED_CLASS, W, "a class used (ALLOC, HEAP_OBJECT before v15, VTABLE) but never loaded: it has no name"),
    ];

    /// The severity of `code` (this table's or a common code's), if it exists.
    pub fn severity(code: &str) -> Option<Severity> {
        profkit_common::finding::severity_in(ALL, code)
    }
}

/// Validates a file whose header parsed.
pub fn validate(file: &File<'_>) -> Validation {
    validate_source(&mut file.source())
}

/// [`validate`] of a file in memory or of a stream.
pub fn validate_source(src: &mut dyn BufferSource) -> Validation {
    let mut v = Validator::new(src.header().data_version);
    v.header(src.header());
    let mut cut = None;
    while let Some(b) = src.next() {
        match b {
            Ok(b) => {
                if let Some(t) = v.buffer(&b) {
                    cut = Some(t);
                }
            }
            // a cut inside a buffer header: the walk's truncation says it
            Err(e) if e.is_truncation() => {}
            Err(e) => {
                let resume = src.offset();
                let skipped = if resume > e.offset {
                    format!("{} bytes skipped to the next buffer", resume - e.offset)
                } else {
                    "no buffer magic follows: the rest of the file is skipped".to_string()
                };
                // the scan places its errors in the buffer expected there
                let place = e.context.as_deref().unwrap_or("buffer #0");
                v.f.push(
                    code_of(&e),
                    e.offset,
                    None,
                    format!("{place}: {}; {skipped}", e.message),
                );
            }
        }
    }
    let truncation = src.cut(cut, v.events);
    v.end(truncation.is_some());
    v.f.finish(v.events, truncation)
}

/// Validates a file in memory (decompressed): [`validate`], or the header's problem when the
/// header does not parse (`header-invalid`, `unsupported-version`, or `truncated`).
pub fn validate_bytes(data: &[u8]) -> Validation {
    match File::parse(data) {
        Ok(f) => validate(&f),
        Err(e) => header_problem(&e, data.len() as u64),
    }
}

/// Validates a file read as a stream (a gzip file, a pipe), one buffer in memory at a time:
/// [`validate_bytes`]'s findings on the same bytes, offsets in the stream (a stream that fails
/// is cut where it fails).
pub fn validate_stream(r: impl Read) -> Validation {
    match StreamBuffers::new(r) {
        Ok(mut src) => validate_source(&mut src),
        // a stream's header error is where the stream ends when it is a cut
        Err(e) => header_problem(&e, e.offset),
    }
}

/// The validation of a file whose header does not parse (`len` bytes of it are there).
fn header_problem(e: &crate::Error, len: u64) -> Validation {
    let mut f = Findings::new(codes::ALL);
    match e.kind() {
        ErrorKind::Truncated => {
            let what = crate::error::truncated_inside(e).unwrap_or("header");
            return f.finish(
                0,
                Some(Truncation::new(
                    0,
                    None,
                    format!("the file ends inside its {what} ({len} bytes)"),
                )),
            );
        }
        // a stream that fails inside the header (a cut gzip stream) is cut there
        ErrorKind::Io => {
            let why = crate::error::io_cause(e).unwrap_or(&e.message);
            return f.finish(
                0,
                Some(Truncation::new(
                    0,
                    None,
                    format!("the file ends inside its header (the stream fails: {why})"),
                )),
            );
        }
        ErrorKind::Unsupported => f.push(
            codes::UNSUPPORTED_VERSION,
            e.offset,
            None,
            e.message.clone(),
        ),
        _ => f.push(codes::HEADER_INVALID, e.offset, None, e.message.clone()),
    }
    f.finish(0, None)
}

/// The code of a decoding error (truncations are reported as the cut): the one it carries,
/// `bad-value` for a failing stream.
fn code_of(e: &crate::Error) -> &'static str {
    e.code.unwrap_or(codes::BAD_VALUE)
}

/// Where something was first used: (offset, record).
type FirstUse = FxHashMap<u64, (u64, u64)>;

struct Validator {
    f: Findings,
    version: u8,
    /// Events decoded so far (the next one's record index).
    events: u64,
    /// Per thread: the methods on its stack.
    stacks: FxHashMap<u64, Vec<u64>>,
    /// Buffers with thread id 0: (count, first offset).
    thread_zero: (u64, u64),
    jitted: FxHashSet<u64>,
    entered: FirstUse,
    vtables: FxHashSet<u64>,
    /// Vtables used before their load (first use), and used while never loaded yet.
    vtables_early: FirstUse,
    classes: FxHashSet<u64>,
    classes_used: FirstUse,
}

impl Validator {
    fn new(version: u8) -> Validator {
        Validator {
            f: Findings::new(codes::ALL),
            version,
            events: 0,
            stacks: FxHashMap::default(),
            thread_zero: (0, 0),
            jitted: FxHashSet::default(),
            entered: FirstUse::default(),
            vtables: FxHashSet::default(),
            vtables_early: FirstUse::default(),
            classes: FxHashSet::default(),
            classes_used: FirstUse::default(),
        }
    }

    fn header(&mut self, h: &Header) {
        // field offsets: ptrsize 7; flags 20 (after startup_ms and timer_overhead), 28 in
        // major 3 (after startup_ns too)
        if h.flags != 0 {
            let off = if h.major >= 3 { 28 } else { 20 };
            self.f.push(
                codes::HEADER_FLAGS,
                off,
                None,
                format!(
                    "header flags {:#x} (must be 0; mprof-report rejects the file)",
                    h.flags
                ),
            );
        }
        if h.ptrsize != 4 && h.ptrsize != 8 {
            self.f.push(
                codes::POINTER_SIZE,
                7,
                None,
                format!("pointer size {} (expected 4 or 8)", h.ptrsize),
            );
        }
    }

    /// Checks a buffer's events; returns the cut when the file ends inside the buffer.
    fn buffer(&mut self, b: &Buffer<'_>) -> Option<Truncation> {
        let tid = b.header.thread_id;
        if tid == 0 {
            if self.thread_zero.0 == 0 {
                self.thread_zero.1 = b.offset;
            }
            self.thread_zero.0 += 1;
        }
        let mut last = b.header.time_base;
        // where the next event starts
        let mut next = b.offset + BUF_HEADER_SIZE as u64;
        let mut incomplete = None;
        let mut evs = b.events();
        while let Some(ev) = evs.next() {
            let rec = self.events;
            let e = match ev {
                Ok(e) => e,
                Err(e) if e.is_truncation() => {
                    // an error does not count: the index is the incomplete event's
                    incomplete = Some((evs.index(), e));
                    break;
                }
                Err(e) => {
                    // the decoder places its errors in the buffer and the event
                    let place = e
                        .context
                        .clone()
                        .unwrap_or_else(|| format!("buffer #{}, event #0", b.index));
                    self.f.push(
                        code_of(&e),
                        e.offset,
                        Some(rec),
                        format!(
                            "{place}: {}; the rest of the buffer ({} bytes) is skipped",
                            e.message,
                            evs.remaining()
                        ),
                    );
                    break;
                }
            };
            self.events += 1;
            next = e.offset + u64::from(e.size);
            if e.time < last {
                self.f.push(
                    codes::MONO_TIME_WRAP,
                    e.offset,
                    Some(rec),
                    format!(
                        "buffer #{}: {} event {} ns before the previous one (a wrapped 10-byte ULEB delta: Mono writes JIT and sample events with stored timestamps)",
                        b.index,
                        EventType::of(e.byte).name(),
                        last - e.time
                    ),
                );
            }
            last = e.time;
            self.event(tid, e.offset, rec, &e.kind);
        }
        b.cut_at(next, self.events, incomplete.as_ref().map(|(i, e)| (*i, e)))
    }

    fn event(&mut self, tid: u64, off: u64, rec: u64, kind: &EventKind<'_>) {
        match *kind {
            EventKind::Enter { method } => {
                self.stacks.entry(tid).or_default().push(method);
                self.entered.entry(method).or_insert((off, rec));
            }
            EventKind::Leave { method } | EventKind::ExcLeave { method } => {
                let stack = self.stacks.entry(tid).or_default();
                match stack.iter().rposition(|&m| m == method) {
                    Some(pos) => {
                        let above = stack.len() - pos - 1;
                        stack.truncate(pos);
                        if above > 0 {
                            self.f.push(
                                codes::LEAVE_SKIPS_FRAMES,
                                off,
                                Some(rec),
                                format!("thread {tid:#x}: the leave of method {method:#x} closes {above} frame(s) above it that had no leave"),
                            );
                        }
                    }
                    None => self.f.push(
                        codes::UNMATCHED_LEAVE,
                        off,
                        Some(rec),
                        format!("thread {tid:#x}: the leave of method {method:#x} matches no frame of the thread"),
                    ),
                }
            }
            EventKind::Jit { method, .. } => {
                self.jitted.insert(method);
            }
            EventKind::GcMove { objects } if objects.len() % 2 != 0 => self.f.push(
                codes::GC_MOVE_ODD,
                off,
                Some(rec),
                format!("GC_MOVE with {} objects (old/new pairs)", objects.len()),
            ),
            EventKind::GcEvent { event, generation } => {
                if event > 11 {
                    self.range(off, rec, "GC event", event, "0-11");
                }
                if generation > 2 {
                    self.range(off, rec, "GC generation", generation, "0-2");
                }
            }
            EventKind::Monitor { event, .. } if !(1..=3).contains(&event) => {
                self.range(off, rec, "monitor event", u64::from(event), "1-3")
            }
            EventKind::Clause { clause_type, .. } if !matches!(clause_type, 0 | 1 | 2 | 4) => {
                self.range(off, rec, "clause type", clause_type, "0, 1, 2 or 4")
            }
            EventKind::SyncPoint { kind } if kind > 2 => {
                self.range(off, rec, "sync point type", u64::from(kind), "0-2")
            }
            EventKind::RootRegister { source, .. } if source > 16 => {
                self.range(off, rec, "root source", u64::from(source), "0-16")
            }
            EventKind::JitHelper { htype, .. } => {
                // before v14 the raw value is one more (0 was UNKNOWN, read as u64::MAX)
                let unknown_v13 = self.version < 14 && htype == u64::MAX;
                if htype > 9 && !unknown_v13 {
                    let raw = if self.version < 14 {
                        htype.wrapping_add(1)
                    } else {
                        htype
                    };
                    let range = if self.version < 14 { "0-10" } else { "0-9" };
                    self.range(off, rec, "JIT helper type", raw, range);
                }
            }
            EventKind::Alloc { class, .. } | EventKind::HeapObject { class, .. } => {
                self.class_ref(class, off, rec)
            }
            EventKind::Metadata(m) if m.action == MetaAction::Load => match m.mtype {
                MTYPE_CLASS => {
                    self.classes.insert(m.ptr);
                }
                MTYPE_VTABLE => {
                    self.vtables.insert(m.ptr);
                    self.class_ref(ClassRef::Class(m.class), off, rec);
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn range(&mut self, off: u64, rec: u64, what: &str, v: u64, range: &str) {
        self.f.push(
            codes::ENUM_OUT_OF_RANGE,
            off,
            Some(rec),
            format!("{what} {v} (data version {}: {range})", self.version),
        );
    }

    fn class_ref(&mut self, c: ClassRef, off: u64, rec: u64) {
        match c {
            ClassRef::Class(p) => {
                self.classes_used.entry(p).or_insert((off, rec));
            }
            ClassRef::Vtable(p) => {
                if !self.vtables.contains(&p) {
                    self.vtables_early.entry(p).or_insert((off, rec));
                }
            }
        }
    }

    /// What only the whole file tells, in file order. In a cut file the definitions may be in
    /// the part that is missing: references are not checked.
    fn end(&mut self, cut: bool) {
        let mut late: Vec<(u64, u64, &'static str, String)> = Vec::new();
        if self.thread_zero.0 > 0 {
            late.push((
                self.thread_zero.1,
                u64::MAX,
                codes::THREAD_ID_ZERO,
                format!(
                    "{} buffer(s) have thread id 0 (Mono 4.8.0 wrote 0 in every buffer, fixed by mono PR #3700): their threads cannot be told apart",
                    self.thread_zero.0
                ),
            ));
        }
        if cut {
            self.entered.clear();
            self.classes_used.clear();
            self.vtables_early.retain(|vt, _| self.vtables.contains(vt));
        }
        for (&m, &(off, rec)) in &self.entered {
            if !self.jitted.contains(&m) {
                late.push((
                    off,
                    rec,
                    codes::METHOD_WITHOUT_JIT,
                    format!("method {m:#x} is entered but no JIT event names it"),
                ));
            }
        }
        for (&vt, &(off, rec)) in &self.vtables_early {
            let (code, msg) = if self.vtables.contains(&vt) {
                (
                    codes::VTABLE_BEFORE_LOAD,
                    format!("vtable {vt:#x} is used before its VTABLE load event (mprof-report leaves it unresolved)"),
                )
            } else {
                (
                    codes::UNDEFINED_VTABLE,
                    format!("vtable {vt:#x} is used but never loaded"),
                )
            };
            late.push((off, rec, code, msg));
        }
        for (&c, &(off, rec)) in &self.classes_used {
            // a NULL class (a vtable of no class, a lazily based pointer) is not a reference
            if c != 0 && !self.classes.contains(&c) {
                late.push((
                    off,
                    rec,
                    codes::UNDEFINED_CLASS,
                    format!("class {c:#x} is used but never loaded"),
                ));
            }
        }
        late.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        for (off, rec, code, msg) in late {
            let rec = (rec != u64::MAX).then_some(rec);
            self.f.push(code, off, rec, msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use profkit_common::Severity;

    use super::*;
    use crate::read::Metadata;
    use crate::write::Writer;

    fn header() -> Header {
        Header {
            major: 3,
            data_version: 17,
            ptrsize: 8,
            ..Header::default()
        }
    }

    fn codes_of(v: &Validation) -> Vec<&'static str> {
        v.findings.iter().map(|f| f.code).collect()
    }

    fn meta(action: MetaAction, mtype: u8, ptr: u64, class: u64) -> Metadata<'static> {
        Metadata {
            action,
            mtype,
            ptr,
            image: 0,
            domain: 0,
            class,
            name: b"n",
            mvid: b"",
        }
    }

    #[test]
    fn every_code_is_in_the_table_once() {
        let mut seen = FxHashSet::default();
        for (code, _, desc) in codes::ALL {
            assert!(seen.insert(*code), "{code}");
            assert!(!desc.is_empty());
            assert!(code.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
        }
        assert_eq!(codes::severity("mono-time-wrap"), Some(Severity::Warning));
        assert_eq!(codes::severity("truncated"), Some(Severity::Error));
    }

    #[test]
    fn a_clean_file_has_no_findings() {
        let mut w = Writer::new(header());
        let mut b = w.buffer(7, 100);
        b.jit(110, 0x5000, 0x9000, 16, b"M");
        b.enter(120, 0x5000);
        b.leave(130, 0x5000);
        b.finish();
        let bytes = w.into_bytes();
        let v = validate(&File::parse(&bytes).unwrap());
        assert_eq!(v.findings, []);
        assert_eq!(v.records, 3);
        assert_eq!(v.truncation, None);
    }

    #[test]
    fn header_problems() {
        let bytes = Writer::new(Header {
            flags: 2,
            ptrsize: 2,
            ..header()
        })
        .into_bytes();
        let v = validate(&File::parse(&bytes).unwrap());
        assert_eq!(codes_of(&v), [codes::HEADER_FLAGS, codes::POINTER_SIZE]);
        assert_eq!(v.findings[0].offset, 28);
        assert_eq!(v.findings[1].offset, 7);
        let v = validate_bytes(b"\x01ZPM\x03\x00\x12\x08\0\0\0\0\0\0\0\0");
        assert_eq!(codes_of(&v), [codes::UNSUPPORTED_VERSION]);
        let v = validate_bytes(b"\x01ZPX");
        assert_eq!(codes_of(&v), [codes::HEADER_INVALID]);
        let v = validate_bytes(b"\x01ZPM\x03");
        assert_eq!(codes_of(&v), [profkit_common::finding::TRUNCATED]);
    }

    #[test]
    fn decoding_errors_carry_offset_and_record() {
        let mut w = Writer::new(header());
        let mut b = w.buffer(7, 100);
        b.enter(110, 0x5000);
        b.leave(120, 0x5000);
        b.finish();
        w.raw(b"garbage!"); // a bad buffer magic
        let mut b = w.buffer(7, 200);
        b.enter(210, 0x5000);
        b.raw(&[0x6e, 1, 2, 3]); // an unknown event
        b.finish();
        let mut b = w.buffer(7, 300);
        b.raw(&[0x43, 0x01, 0x00, 0x00, 0x10, b'a']); // a JIT name without NUL
        b.finish();
        let bytes = w.into_bytes();
        let f = File::parse(&bytes).unwrap();
        let v = validate(&f);
        let bufs: Vec<_> = f.buffers().flatten().collect();
        let got: Vec<_> = v
            .findings
            .iter()
            .map(|f| (f.code, f.offset, f.record))
            .collect();
        let bad_magic = bufs[0].end();
        assert_eq!(
            got,
            [
                (codes::BAD_BUFFER_MAGIC, bad_magic, None),
                (codes::UNKNOWN_EVENT, bufs[1].offset + 48 + 3, Some(3)),
                (codes::UNTERMINATED_STRING, bufs[2].offset + 48 + 5, Some(3)),
                (codes::METHOD_WITHOUT_JIT, bufs[0].offset + 48, Some(0)),
            ]
        );
        assert!(
            v.findings[0].message.contains("8 bytes skipped"),
            "{}",
            v.findings[0]
        );
        assert!(
            v.findings[1]
                .message
                .starts_with("buffer #1, event #1: unknown event byte 0x6e"),
            "{}",
            v.findings[1]
        );
        assert!(v.has_errors());
        // the open frame of buffer #1 is no finding: programs end with frames open
        assert_eq!(v.records, 3);
    }

    #[test]
    fn events_quirks_and_ranges() {
        let mut w = Writer::new(header());
        let mut b = w.buffer(0, 1000); // thread id 0
        b.jit(900, 0x5000, 0x9000, 16, b"M"); // stored timestamp: a wrap
        b.gc_move(1010, &[0x1000, 0x2000, 0x3000]);
        b.gc_event(1020, 12, 0);
        b.gc_event(1021, 0, 3);
        b.monitor(1030, 4, 0x1000, None);
        b.clause(1040, 3, 0, 0x5000, 0x1000);
        b.sync_point(1050, 3);
        b.enter(1060, 0x5000);
        b.enter(1061, 0x5008); // no JIT event
        b.enter(1062, 0x5010);
        b.leave(1070, 0x5000); // closes two frames above it
        b.leave(1080, 0x5000); // matches nothing
        b.finish();
        let bytes = w.into_bytes();
        let v = validate(&File::parse(&bytes).unwrap());
        assert_eq!(
            codes_of(&v),
            [
                codes::MONO_TIME_WRAP,
                codes::GC_MOVE_ODD,
                codes::ENUM_OUT_OF_RANGE,
                codes::ENUM_OUT_OF_RANGE,
                codes::ENUM_OUT_OF_RANGE,
                codes::ENUM_OUT_OF_RANGE,
                codes::ENUM_OUT_OF_RANGE,
                codes::LEAVE_SKIPS_FRAMES,
                codes::UNMATCHED_LEAVE,
                codes::THREAD_ID_ZERO,
                codes::METHOD_WITHOUT_JIT,
                codes::METHOD_WITHOUT_JIT,
            ]
        );
        let records: Vec<_> = v.findings.iter().map(|f| f.record).collect();
        assert_eq!(
            records,
            [0, 1, 2, 3, 4, 5, 6, 10, 11, u64::MAX, 8, 9].map(|r| (r != u64::MAX).then_some(r))
        );
        assert!(
            v.findings[0].message.contains("100 ns before"),
            "{}",
            v.findings[0]
        );
    }

    #[test]
    fn vtables_and_classes() {
        let mut w = Writer::new(header());
        let mut b = w.buffer(7, 0);
        b.alloc(1, 0x7700, 0x1000, 16, None); // vtable loaded later
        b.metadata(2, &meta(MetaAction::Load, MTYPE_CLASS, 0x6600, 0));
        b.metadata(3, &meta(MetaAction::Load, MTYPE_VTABLE, 0x7700, 0x6600));
        b.metadata(4, &meta(MetaAction::Load, MTYPE_VTABLE, 0x7708, 0x6608)); // class never loaded
        b.alloc(5, 0x7700, 0x1010, 16, None);
        b.alloc(6, 0x7710, 0x1020, 16, None); // never loaded
        b.finish();
        let bytes = w.into_bytes();
        let v = validate(&File::parse(&bytes).unwrap());
        let got: Vec<_> = v.findings.iter().map(|f| (f.code, f.record)).collect();
        assert_eq!(
            got,
            [
                (codes::VTABLE_BEFORE_LOAD, Some(0)),
                (codes::UNDEFINED_CLASS, Some(3)),
                (codes::UNDEFINED_VTABLE, Some(5)),
            ]
        );
        assert!(!v.has_errors());
    }

    #[test]
    fn a_cut_inside_an_event_or_between_two_is_truncated() {
        let mut w = Writer::new(header());
        let mut b = w.buffer(7, 100);
        b.enter(110, 0x5000);
        b.jit(120, 0x5000, 0x9000, 16, b"Main");
        b.finish();
        let bytes = w.into_bytes();
        let f = File::parse(&bytes).unwrap();
        let buf = f.buffers().next().unwrap().unwrap();
        let jit = buf.events().nth(1).unwrap().unwrap().offset;
        // between the two events
        let v = validate(&File::parse(&bytes[..jit as usize]).unwrap());
        let t = v.truncation.clone().unwrap();
        assert_eq!((t.offset, t.record), (jit, Some(1)));
        assert_eq!(codes_of(&v), [profkit_common::finding::TRUNCATED]);
        // inside the JIT event: the cut is at its start
        let v = validate(&File::parse(&bytes[..jit as usize + 4]).unwrap());
        let t = v.truncation.clone().unwrap();
        assert_eq!((t.offset, t.record), (jit, Some(1)));
        assert!(t.reason.contains("event #1 is incomplete"), "{}", t.reason);
        assert_eq!(codes_of(&v), [profkit_common::finding::TRUNCATED]);
        // inside the buffer header
        let v = validate(&File::parse(&bytes[..f.header.size + 20]).unwrap());
        let t = v.truncation.unwrap();
        assert_eq!((t.offset, t.record), (f.header.size as u64, Some(0)));
    }
}
