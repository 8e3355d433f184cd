//! speedscope JSON (`.speedscope.json`), per the file-format schema shipped in the npm
//! `speedscope` package (`file-format-schema.json`, draft-07).
//!
//! # What is written
//! * `shared.frames`: one frame per function that occurs in the output (name, and file, line
//!   and column when known), in order of first use;
//! * one **evented** profile per thread with calls: an `O` (open) event at each
//!   [`EventSink::enter`] and a `C` (close) event at each [`EventSink::exit`], balanced (calls
//!   still open at the end are closed at the thread's last time), `unit` `"nanoseconds"`,
//!   `startValue`/`endValue` the thread's first and last event times;
//! * one **sampled** profile per thread with samples: each sample's stack (root first) and its
//!   weight, `unit` `"none"` (weights are counts);
//! * one **sampled** profile per thread with call-path totals (XRay profiling mode), named
//!   `<thread> (call paths)`: each path whose exclusive time is not 0 is a sample weighted by
//!   that time, `unit` `"nanoseconds"` (`"none"` when the trace's clock is unknown: raw ticks),
//!   so speedscope's left-heavy and sandwich views show self and total time per function;
//! * `name` (the trace's), `activeProfileIndex` 0 and `exporter`;
//! * a trace without calls or samples (a jitdump) gets one empty evented profile, since the
//!   speedscope app hangs on a file with none.
//!
//! # Buffering
//! The frame list comes first in the file but is only known once every event has been seen,
//! so this writer cannot stream. It keeps each thread's events in memory, compactly: an event
//! is two LEB128 varints, `frame << 1 | close` and the time since the thread's previous event
//! — usually 3–6 bytes, so a trace of 10 million calls (20 million events) needs about
//! 100 MB — and writes the file at [`EventSink::finish`], streaming the JSON out of those
//! buffers. (A temporary file would bound memory further but adds a dependency and a disk
//! round trip for every output; speedscope itself cannot open traces of that size anyway.)

use std::io::{self, Write};

use profkit_model::events::{
    CallPath, Enter, EventSink, ProcessInfo, Sample, ThreadInfo, TraceInfo,
};
use profkit_model::func::{FuncId, FuncInfo, FunctionTable};
use profkit_model::span::Span;

use crate::chrome::shared::{
    flush_all, flush_if_full, push_json_str, push_u64, IdMap, OutStream, FLUSH_AT,
};
use crate::protobuf::put_varint;
use crate::{Options, Output};

/// The `$schema` URL every file names.
pub const SCHEMA_URL: &str = "https://www.speedscope.app/file-format-schema.json";

/// A writer into `output`.
pub fn sink(output: &Output, _options: &Options) -> io::Result<Box<dyn EventSink + Send>> {
    Ok(Box::new(SpeedscopeWriter::new(OutStream::open(
        output, false,
    )?)))
}

/// What is kept of one thread until the file is written.
#[derive(Debug, Default)]
struct ThreadProfile {
    name: String,
    /// Evented profile: varint pairs (`frame << 1 | close`, delta time).
    events: Vec<u8>,
    first_at: Option<u64>,
    last_at: u64,
    /// Frames currently open, innermost last.
    open: Vec<u32>,
    /// Sampled profile: per sample, varint stack length, the frames, the weight.
    samples: Vec<u8>,
    sample_count: u64,
    total_weight: u64,
    /// Call-path totals, encoded as samples (stack, exclusive time).
    paths: Vec<u8>,
    path_count: u64,
    path_weight: u64,
}

impl ThreadProfile {
    fn push_event(&mut self, frame: u32, close: bool, at: u64) {
        let at = match self.first_at {
            None => {
                self.first_at = Some(at);
                at
            }
            Some(_) => at.max(self.last_at),
        };
        put_varint(&mut self.events, (u64::from(frame) << 1) | u64::from(close));
        put_varint(&mut self.events, at - self.last_at.min(at));
        self.last_at = at;
    }
}

/// Writes speedscope JSON into `W` at [`EventSink::finish`]. See the [module docs](self).
pub struct SpeedscopeWriter<W: Write> {
    out: W,
    functions: FunctionTable,
    trace_name: String,
    /// Frame index of each function used.
    frame_of: IdMap<u32>,
    /// Functions in frame order.
    frames: Vec<FuncId>,
    threads: IdMap<ThreadProfile>,
    /// Whether the trace's clock converts to nanoseconds (else call-path times are raw).
    clock_known: bool,
    finished: bool,
}

impl<W: Write> SpeedscopeWriter<W> {
    /// A writer into `out`.
    pub fn new(out: W) -> Self {
        SpeedscopeWriter {
            out,
            functions: FunctionTable::new(),
            trace_name: String::new(),
            frame_of: IdMap::default(),
            frames: Vec::new(),
            threads: IdMap::default(),
            clock_known: true,
            finished: false,
        }
    }

    /// The output.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The output, giving up the writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn frame(&mut self, func: FuncId) -> u32 {
        if let Some(&f) = self.frame_of.get(func.0) {
            return f;
        }
        let f = self.frames.len() as u32;
        self.frames.push(func);
        self.frame_of.insert(func.0, f);
        f
    }

    fn thread_mut(&mut self, index: u32) -> &mut ThreadProfile {
        self.threads.get_or_insert_with(index, || ThreadProfile {
            name: format!("thread #{index}"),
            ..ThreadProfile::default()
        })
    }

    fn write_file(&mut self) -> io::Result<()> {
        let mut buf: Vec<u8> = Vec::with_capacity(FLUSH_AT + 4096);
        buf.extend_from_slice(b"{\"$schema\":");
        push_json_str(&mut buf, SCHEMA_URL);
        buf.extend_from_slice(b",\"shared\":{\"frames\":[");
        for (n, &func) in self.frames.iter().enumerate() {
            buf.extend_from_slice(if n == 0 { b"\n{" } else { b",\n{" });
            buf.extend_from_slice(b"\"name\":");
            let info = self.functions.get(func);
            match info.and_then(|i| i.name.as_deref()) {
                Some(name) => push_json_str(&mut buf, name),
                None => push_json_str(&mut buf, &format!("#{}", func.0)),
            }
            if let Some(i) = info {
                if let Some(file) = &i.file {
                    buf.extend_from_slice(b",\"file\":");
                    push_json_str(&mut buf, file);
                }
                if i.line != 0 {
                    buf.extend_from_slice(b",\"line\":");
                    push_u64(&mut buf, u64::from(i.line));
                }
                if i.column != 0 {
                    buf.extend_from_slice(b",\"col\":");
                    push_u64(&mut buf, u64::from(i.column));
                }
            }
            buf.push(b'}');
            flush_if_full(&mut self.out, &mut buf)?;
        }
        buf.extend_from_slice(b"]},\"profiles\":[");
        let mut first_profile = true;
        for (_, t) in self.threads.iter() {
            if let Some(start) = t.first_at {
                profile_sep(&mut buf, &mut first_profile);
                write_evented(&mut self.out, &mut buf, t, start)?;
            }
            if t.sample_count > 0 {
                profile_sep(&mut buf, &mut first_profile);
                let s = Sampled {
                    name: format!("{} (samples)", t.name),
                    unit: "none",
                    data: &t.samples,
                    count: t.sample_count,
                    total: t.total_weight,
                };
                write_sampled(&mut self.out, &mut buf, &s)?;
            }
            if t.path_count > 0 {
                profile_sep(&mut buf, &mut first_profile);
                let s = Sampled {
                    name: format!("{} (call paths)", t.name),
                    unit: if self.clock_known {
                        "nanoseconds"
                    } else {
                        "none"
                    },
                    data: &t.paths,
                    count: t.path_count,
                    total: t.path_weight,
                };
                write_sampled(&mut self.out, &mut buf, &s)?;
            }
        }
        if first_profile {
            // speedscope hangs on a file without profiles: give it an empty one.
            profile_sep(&mut buf, &mut first_profile);
            buf.extend_from_slice(b"\"type\":\"evented\",\"name\":");
            push_json_str(
                &mut buf,
                &format!("{} (no calls or samples)", self.trace_name),
            );
            buf.extend_from_slice(
                b",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":0,\"events\":[]}",
            );
        }
        buf.extend_from_slice(b"\n],\"name\":");
        push_json_str(&mut buf, &self.trace_name);
        buf.extend_from_slice(b",\"activeProfileIndex\":0,\"exporter\":\"profkit ");
        buf.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
        buf.extend_from_slice(b"\"}\n");
        flush_all(&mut self.out, &mut buf)
    }
}

fn profile_sep(buf: &mut Vec<u8>, first: &mut bool) {
    buf.extend_from_slice(if *first { b"\n{" } else { b",\n{" });
    *first = false;
}

/// Reads a varint from the front of `b`, advancing it.
fn get_varint(b: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        v |= u64::from(byte & 0x7f).checked_shl(shift)?;
        if byte < 0x80 {
            return Some(v);
        }
        shift += 7;
    }
}

fn write_evented<W: Write>(
    out: &mut W,
    buf: &mut Vec<u8>,
    t: &ThreadProfile,
    start: u64,
) -> io::Result<()> {
    buf.extend_from_slice(b"\"type\":\"evented\",\"name\":");
    push_json_str(buf, &t.name);
    buf.extend_from_slice(b",\"unit\":\"nanoseconds\",\"startValue\":");
    push_u64(buf, start);
    buf.extend_from_slice(b",\"endValue\":");
    push_u64(buf, t.last_at);
    buf.extend_from_slice(b",\"events\":[");
    let mut at = 0u64;
    let mut first = true;
    let mut event = |buf: &mut Vec<u8>, frame: u64, close: bool, at: u64| {
        buf.extend_from_slice(if first {
            b"\n{\"type\":\""
        } else {
            b",\n{\"type\":\""
        });
        first = false;
        buf.push(if close { b'C' } else { b'O' });
        buf.extend_from_slice(b"\",\"frame\":");
        push_u64(buf, frame);
        buf.extend_from_slice(b",\"at\":");
        push_u64(buf, at);
        buf.push(b'}');
    };
    let mut rest = t.events.as_slice();
    while let (Some(key), Some(delta)) = (get_varint(&mut rest), get_varint(&mut rest)) {
        at = at.saturating_add(delta);
        event(buf, key >> 1, key & 1 == 1, at);
        flush_if_full(out, buf)?;
    }
    // Close what is still open, innermost first, at the thread's last time.
    for &frame in t.open.iter().rev() {
        event(buf, u64::from(frame), true, t.last_at);
    }
    buf.extend_from_slice(b"]}");
    Ok(())
}

/// A sampled profile to write: its stacks and weights as varints (length, frames, weight).
struct Sampled<'a> {
    name: String,
    unit: &'static str,
    data: &'a [u8],
    count: u64,
    total: u64,
}

fn write_sampled<W: Write>(out: &mut W, buf: &mut Vec<u8>, s: &Sampled<'_>) -> io::Result<()> {
    buf.extend_from_slice(b"\"type\":\"sampled\",\"name\":");
    push_json_str(buf, &s.name);
    buf.extend_from_slice(b",\"unit\":");
    push_json_str(buf, s.unit);
    buf.extend_from_slice(b",\"startValue\":0,\"endValue\":");
    push_u64(buf, s.total);
    buf.extend_from_slice(b",\"samples\":[");
    let mut weights = Vec::with_capacity(s.count.min(1 << 20) as usize);
    let mut rest = s.data;
    let mut first = true;
    while let Some(len) = get_varint(&mut rest) {
        buf.extend_from_slice(if first { b"\n[" } else { b",\n[" });
        first = false;
        for i in 0..len {
            let Some(frame) = get_varint(&mut rest) else {
                break;
            };
            if i > 0 {
                buf.push(b',');
            }
            push_u64(buf, frame);
        }
        buf.push(b']');
        weights.push(get_varint(&mut rest).unwrap_or(0));
        flush_if_full(out, buf)?;
    }
    buf.extend_from_slice(b"],\"weights\":[");
    for (i, w) in weights.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        push_u64(buf, *w);
        flush_if_full(out, buf)?;
    }
    buf.extend_from_slice(b"]}");
    Ok(())
}

impl<W: Write + Send> EventSink for SpeedscopeWriter<W> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        self.functions = trace.functions.clone();
        self.trace_name = trace.name.to_string();
        self.clock_known = trace.clock.ticks_per_second != 0;
        Ok(())
    }

    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.functions.insert(id, info.clone());
        Ok(())
    }

    fn process(&mut self, _p: &ProcessInfo<'_>) -> io::Result<()> {
        Ok(())
    }

    fn thread(&mut self, t: &ThreadInfo<'_>) -> io::Result<()> {
        let name = format!("{} (pid {}, tid {})", t.name, t.pid, t.tid);
        self.thread_mut(t.index).name = name;
        Ok(())
    }

    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        let frame = self.frame(call.func);
        let t = self.thread_mut(call.thread);
        t.push_event(frame, false, call.time);
        t.open.push(frame);
        Ok(())
    }

    fn exit(&mut self, span: &Span) -> io::Result<()> {
        let t = self.thread_mut(span.thread);
        // Close the innermost open frame (the model guarantees it is `span.func`); an exit
        // with nothing open is dropped, so the profile stays balanced whatever comes in.
        if let Some(frame) = t.open.pop() {
            t.push_event(frame, true, span.end);
        }
        Ok(())
    }

    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        let frames: Vec<u32> = s.stack.iter().map(|&f| self.frame(f)).collect();
        let t = self.thread_mut(s.thread);
        put_varint(&mut t.samples, frames.len() as u64);
        for f in frames {
            put_varint(&mut t.samples, u64::from(f));
        }
        put_varint(&mut t.samples, s.weight);
        t.sample_count += 1;
        t.total_weight = t.total_weight.saturating_add(s.weight);
        Ok(())
    }

    fn call_path(&mut self, p: &CallPath<'_>) -> io::Result<()> {
        if p.exclusive == 0 || p.stack.is_empty() {
            return Ok(());
        }
        let frames: Vec<u32> = p.stack.iter().map(|&f| self.frame(f)).collect();
        let t = self.thread_mut(p.thread);
        put_varint(&mut t.paths, frames.len() as u64);
        for f in frames {
            put_varint(&mut t.paths, u64::from(f));
        }
        put_varint(&mut t.paths, p.exclusive);
        t.path_count += 1;
        t.path_weight = t.path_weight.saturating_add(p.exclusive);
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.write_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        let mut b = Vec::new();
        for v in [0u64, 1, 127, 128, 1 << 40, u64::MAX] {
            put_varint(&mut b, v);
        }
        let mut r = b.as_slice();
        for v in [0u64, 1, 127, 128, 1 << 40, u64::MAX] {
            assert_eq!(get_varint(&mut r), Some(v));
        }
        assert_eq!(get_varint(&mut r), None);
    }
}
