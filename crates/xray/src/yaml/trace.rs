//! Trace YAML: the record lines ([`RecordFormatter`], [`CachedFormatter`]) and the reader
//! ([`read_yaml`], [`yaml_to_binary`]). See [`super`] for the format.

use std::io::{self, Write};

use super::syntax::{parse_flow_map, parse_int, scalar};
use crate::error::{Error, ErrorExt, Result};
use crate::raw::TraceType;
use crate::read::events::{Event, EventKind};
use crate::read::header::{is_supported, FileHeader};
use crate::write::{BasicTraceWriter, FdrTraceWriter, OwnedEvent};

/// Writes the document start and the `header:` block.
pub(crate) fn write_header(out: &mut dyn Write, h: &FileHeader) -> io::Result<()> {
    write!(
        out,
        "---\nheader:\n  version:         {}\n  type:            {}\n  constant-tsc:    {}\n  nonstop-tsc:     {}\n  cycle-frequency: {}\nrecords:\n",
        h.version,
        h.trace_type.0,
        h.constant_tsc(),
        h.nonstop_tsc(),
        h.cycle_frequency
    )
}

/// Writes the document end.
pub(crate) fn write_footer(out: &mut dyn Write) -> io::Result<()> {
    out.write_all(b"...\n")
}

fn is_text(data: &[u8]) -> bool {
    match std::str::from_utf8(data) {
        Ok(s) => !s.chars().any(|c| c.is_control()),
        Err(_) => false,
    }
}

/// Writes one record line. `func_id` is what to print as `func-id` (llvm prints the previous
/// function's id for custom events), `function` the `function:` value.
pub(crate) fn write_event(
    out: &mut dyn Write,
    ev: &Event<'_>,
    func_id: u32,
    function: &str,
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(160);
    RecordFormatter::new().format(
        &mut buf,
        ev,
        &RecordFormatter::func_segment(func_id, function),
    );
    out.write_all(&buf)
}

/// Formats record lines into a byte buffer without per-record allocation: the
/// `func-id: …, function: …, ` part of each function is prepared once
/// ([`RecordFormatter::func_segment`]) and numbers go through `itoa`. The output is the same
/// as [`write_event`]'s.
#[derive(Clone, Debug)]
pub(crate) struct RecordFormatter {
    empty_data: Vec<u8>,
}

impl Default for RecordFormatter {
    fn default() -> Self {
        Self::new()
    }
}

impl RecordFormatter {
    /// A formatter.
    pub fn new() -> Self {
        RecordFormatter {
            empty_data: scalar("").into_bytes(),
        }
    }

    /// The `func-id: ID, function: NAME, ` part of a record line.
    pub fn func_segment(func_id: u32, function: &str) -> Vec<u8> {
        let mut v = Vec::with_capacity(32 + function.len());
        v.extend_from_slice(b"func-id: ");
        v.extend_from_slice(itoa::Buffer::new().format(func_id).as_bytes());
        v.extend_from_slice(b", function: ");
        v.extend_from_slice(scalar(function).as_bytes());
        v.extend_from_slice(b", ");
        v
    }

    /// Appends the line of `ev` to `buf`; `func_segment` comes from
    /// [`RecordFormatter::func_segment`].
    #[inline]
    pub fn format(&self, buf: &mut Vec<u8>, ev: &Event<'_>, func_segment: &[u8]) {
        Self::prefix(buf, ev, func_segment);
        buf.extend_from_slice(itoa::Buffer::new().format(ev.tsc).as_bytes());
        self.suffix(buf, ev);
    }

    /// Everything before the TSC value: `  - { type: …, func-id: …, …, kind: …, tsc: `.
    fn prefix(buf: &mut Vec<u8>, ev: &Event<'_>, func_segment: &[u8]) {
        let mut n = itoa::Buffer::new();
        buf.extend_from_slice(b"  - { type: ");
        buf.extend_from_slice(n.format(ev.event_type).as_bytes());
        buf.extend_from_slice(b", ");
        buf.extend_from_slice(func_segment);
        if !ev.args.is_empty() {
            buf.extend_from_slice(b"args: [ ");
            for (i, a) in ev.args.iter().enumerate() {
                if i > 0 {
                    buf.extend_from_slice(b", ");
                }
                buf.extend_from_slice(n.format(a).as_bytes());
            }
            buf.extend_from_slice(b" ], ");
        }
        buf.extend_from_slice(b"cpu: ");
        buf.extend_from_slice(n.format(ev.cpu).as_bytes());
        buf.extend_from_slice(b", thread: ");
        buf.extend_from_slice(n.format(ev.tid).as_bytes());
        buf.extend_from_slice(b", ");
        if ev.pid != 0 {
            buf.extend_from_slice(b"process: ");
            buf.extend_from_slice(n.format(ev.pid).as_bytes());
            buf.extend_from_slice(b", ");
        }
        buf.extend_from_slice(b"kind: ");
        buf.extend_from_slice(ev.kind.llvm_name().as_bytes());
        buf.extend_from_slice(b", tsc: ");
    }

    /// Everything after the TSC value: `, data: … }` and the newline.
    #[inline]
    fn suffix(&self, buf: &mut Vec<u8>, ev: &Event<'_>) {
        buf.extend_from_slice(b", data: ");
        if ev.data.is_empty() {
            buf.extend_from_slice(&self.empty_data);
        } else if is_text(ev.data) {
            let s = std::str::from_utf8(ev.data).unwrap_or("");
            buf.extend_from_slice(scalar(s).as_bytes());
        } else {
            buf.extend_from_slice(b"''");
            buf.extend_from_slice(b", data-hex: '");
            const HEX: &[u8; 16] = b"0123456789abcdef";
            for &b in ev.data {
                buf.push(HEX.get(usize::from(b >> 4)).copied().unwrap_or(b'0'));
                buf.push(HEX.get(usize::from(b & 15)).copied().unwrap_or(b'0'));
            }
            buf.extend_from_slice(b"'");
        }
        buf.extend_from_slice(b" }\n");
    }
}

/// What a record line's text before `tsc:` depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LineKey {
    event_type: u16,
    func_id: u32,
    cpu: u16,
    tid: u32,
    pid: u32,
    kind: EventKind,
}

/// A [`RecordFormatter`] that remembers the text before `tsc:` of recent
/// (type, function, cpu, thread, process, kind) combinations (64 slots, direct-mapped): a
/// typical function record's line then costs one copy, one number and a constant tail. The
/// output is the same as [`RecordFormatter::format`]'s.
#[derive(Clone, Debug)]
pub(crate) struct CachedFormatter<'f> {
    fmt: &'f RecordFormatter,
    slots: Vec<Option<(LineKey, Vec<u8>)>>,
}

impl<'f> CachedFormatter<'f> {
    /// An empty cache over `fmt`.
    pub fn new(fmt: &'f RecordFormatter) -> Self {
        CachedFormatter {
            fmt,
            slots: vec![None; 64],
        }
    }

    /// Appends the line of `ev` to `buf`, as [`RecordFormatter::format`] does; `func_id` is
    /// the id `func_segment` was made for.
    #[inline]
    pub fn format(&mut self, buf: &mut Vec<u8>, ev: &Event<'_>, func_id: u32, func_segment: &[u8]) {
        if !ev.args.is_empty() || !ev.data.is_empty() {
            self.fmt.format(buf, ev, func_segment);
            return;
        }
        let key = LineKey {
            event_type: ev.event_type,
            func_id,
            cpu: ev.cpu,
            tid: ev.tid,
            pid: ev.pid,
            kind: ev.kind,
        };
        let h = ((u64::from(func_id) << 3 | ev.kind as u64)
            ^ (u64::from(ev.tid) << 32)
            ^ (u64::from(ev.cpu) << 48))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            >> 58;
        match self.slots.get_mut(h as usize) {
            Some(Some((k, text))) if *k == key => buf.extend_from_slice(text),
            Some(slot) => {
                let mut text = Vec::with_capacity(128);
                RecordFormatter::prefix(&mut text, ev, func_segment);
                buf.extend_from_slice(&text);
                *slot = Some((key, text));
            }
            None => RecordFormatter::prefix(buf, ev, func_segment),
        }
        buf.extend_from_slice(itoa::Buffer::new().format(ev.tsc).as_bytes());
        self.fmt.suffix(buf, ev);
    }
}

/// A trace read from YAML.
#[derive(Clone, Debug, Default)]
pub struct YamlTrace {
    /// The header (byte order little-endian).
    pub header: Option<FileHeader>,
    /// Threads in order of first appearance: `(pid, tid, events)`.
    pub threads: Vec<(u32, u32, Vec<OwnedEvent>)>,
}

fn bad(line: usize, what: &'static str, found: &str) -> Error {
    crate::error::invalid(line, what, found).with_record(line as u64)
}

fn kind_of(s: &str) -> Option<EventKind> {
    Some(match s {
        "function-enter" => EventKind::Enter,
        "function-exit" => EventKind::Exit,
        "function-tail-exit" => EventKind::TailExit,
        "function-enter-arg" => EventKind::EnterArg,
        "custom-event" => EventKind::CustomEvent,
        "typed-event" => EventKind::TypedEvent,
        _ => return None,
    })
}

fn hex(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
        .collect()
}

/// Parses llvm-xray / profkit trace YAML. Errors carry the 1-based line number as offset.
pub fn read_yaml(text: &str) -> Result<YamlTrace> {
    let mut out = YamlTrace::default();
    let (mut version, mut ttype, mut ctsc, mut ntsc, mut freq) = (None, None, false, false, 0u64);
    let mut index = std::collections::HashMap::<(u32, u32), usize>::new();
    for (ln, raw) in crate::yaml::syntax::logical_lines(text) {
        let line = raw.trim();
        if line.is_empty()
            || line == "---"
            || line == "..."
            || line == "header:"
            || line == "records:"
        {
            continue;
        }
        if line.starts_with("- {") {
            let kv = parse_flow_map(line, ln)?;
            let get = |k: &str| kv.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
            let num = |k: &'static str| -> Result<u64> {
                match get(k) {
                    None => Ok(0),
                    Some(v) => parse_int(v).ok_or_else(|| bad(ln, k, v)),
                }
            };
            let kind_s = get("kind").unwrap_or("");
            let kind = kind_of(kind_s).ok_or_else(|| bad(ln, "a record kind", kind_s))?;
            let mut data = get("data").unwrap_or("").as_bytes().to_vec();
            if let Some(h) = get("data-hex") {
                data = hex(h).ok_or_else(|| bad(ln, "hex bytes in data-hex", h))?;
            }
            let args = match get("args") {
                Some(a) => a
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| parse_int(s).ok_or_else(|| bad(ln, "an argument", s)))
                    .collect::<Result<Vec<u64>>>()?,
                None => Vec::new(),
            };
            let is_event = matches!(kind, EventKind::CustomEvent | EventKind::TypedEvent);
            let ev = OwnedEvent {
                kind: Some(kind),
                func_id: if is_event { 0 } else { num("func-id")? as u32 },
                tsc: num("tsc")?,
                cpu: num("cpu")? as u16,
                args,
                event_type: if kind == EventKind::TypedEvent {
                    num("type")? as u16
                } else {
                    0
                },
                data: if is_event { data } else { Vec::new() },
            };
            let key = (num("process")? as u32, num("thread")? as u32);
            let slot = *index.entry(key).or_insert_with(|| {
                out.threads.push((key.0, key.1, Vec::new()));
                out.threads.len() - 1
            });
            if let Some((_, _, v)) = out.threads.get_mut(slot) {
                v.push(ev);
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim();
            match k.trim() {
                "version" => version = parse_int(v).map(|x| x as u16),
                "type" => ttype = parse_int(v).map(|x| x as u16),
                "constant-tsc" => ctsc = v == "true",
                "nonstop-tsc" => ntsc = v == "true",
                "cycle-frequency" => freq = parse_int(v).unwrap_or(0),
                _ => return Err(bad(ln, "a header key or a record", line)),
            }
            continue;
        }
        return Err(bad(ln, "a header key or a record", line));
    }
    let (Some(version), Some(t)) = (version, ttype) else {
        return Err(bad(0, "a header with version and type", ""));
    };
    let trace_type = match t {
        0 => TraceType::BASIC,
        1 => TraceType::FDR,
        _ => return Err(bad(0, "header type 0 (basic) or 1 (FDR)", &t.to_string())),
    };
    if !is_supported(trace_type, version) {
        // The binary re-encoding of an unsupported version would not read back.
        return Err(bad(
            0,
            "a header version this reader supports (basic 1-3, FDR 1-5)",
            &format!("{trace_type} version {version}"),
        ));
    }
    let mut h = if trace_type == TraceType::FDR {
        FileHeader::fdr(version)
    } else {
        FileHeader::basic(version)
    };
    h.bitfield = u32::from(ctsc) | (u32::from(ntsc) << 1);
    h.cycle_frequency = freq;
    out.header = Some(h);
    Ok(out)
}

/// An llvm-xray YAML trace's text (`data`, as read from the file) re-encoded as a binary
/// trace: what every reader and analysis of YAML input works on.
pub fn text_to_binary(data: &[u8]) -> Result<Vec<u8>> {
    let text = std::str::from_utf8(data).map_err(crate::error::not_text)?;
    yaml_to_binary(&read_yaml(text)?)
}

/// Re-encodes a YAML trace as the binary format its header names (FDR or basic). Each thread's
/// events are sorted by TSC first (YAML is usually sorted globally, which keeps that order).
pub fn yaml_to_binary(y: &YamlTrace) -> Result<Vec<u8>> {
    let Some(h) = y.header else {
        return Err(bad(0, "a header", ""));
    };
    if h.trace_type == TraceType::FDR {
        let mut w = FdrTraceWriter::new(h);
        for (pid, tid, evs) in &y.threads {
            w.thread(*pid, *tid, evs)?;
        }
        Ok(w.finish())
    } else {
        let mut w = BasicTraceWriter::new(h);
        for (pid, tid, evs) in &y.threads {
            w.thread(*pid, *tid, evs)?;
        }
        Ok(w.finish())
    }
}
