//! Chrome Trace Event JSON (`.json`, `.json.gz`), the format chrome://tracing, Perfetto UI and
//! many other viewers open.
//!
//! The file is the JSON Object Format, written as a stream — nothing but the current event is
//! held in memory:
//!
//! ```text
//! {"traceEvents":[
//! {"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"a.out"}},
//! {"name":"main","ph":"X","ts":12.345,"dur":1.000,"pid":1,"tid":7},
//! …
//! ],"displayTimeUnit":"ns","otherData":{"producer":"profkit","format":"xray","name":"t.xray"}}
//! ```
//!
//! What each event becomes:
//! * a completed call ([`EventSink::exit`]) → an `X` complete event named after the function;
//!   `ts` and `dur` are microseconds since the trace's origin with exactly three decimals, so
//!   nanosecond precision survives (formatted with integer arithmetic). `X` events are written
//!   when calls return, so a callee's comes before its caller's; viewers order events of equal
//!   `ts` by their position in the file (Perfetto's known issue with `X` events at identical
//!   timestamps), so a call that has a callee starting at the very same nanosecond is written
//!   as a `B` event (at the callee's enter) and an `E` event instead, which nests right;
//! * a process or thread → `M` `process_name` / `thread_name` (and `thread_sort_index`) metadata;
//! * an instant → an `i` event (thread scope) with its arguments in `args`; byte payloads (XRay
//!   custom events) are shown as text when they are valid UTF-8, else as hex;
//! * a counter → a `C` event with the value in `args.value`;
//! * a code region → an `i` event of category `jit` with address, size and event kind
//!   (process scope when the loading thread is unknown);
//! * a sample → an `i` event of category `sample` named after the leaf frame, with the stack
//!   (`a;b;c`, outermost first) and weight in `args`.
//!
//! Events are formatted with `itoa` into one reusable buffer that is handed to the output
//! every 256 KiB; function names and thread ids are escaped and formatted
//! once, when first needed.

pub(crate) mod shared;

use std::io::{self, Write};

use profkit_model::events::{
    ArgValue, CodeEvent, CodeRegion, Counter, Enter, EventSink, Instant, ProcessInfo, Sample,
    ThreadInfo, TraceInfo,
};
use profkit_model::func::{FuncId, FuncInfo};
use profkit_model::span::Span;

use crate::{Options, Output};
use shared::{
    bytes_text, display_tid, flush_all, flush_if_full, push_f64, push_hex_addr_str, push_i64,
    push_json_str, push_u64, push_us, IdMap, Names, OutStream, FLUSH_AT,
};

/// A writer into `output` (gzip-compressed when its name ends in `.gz`).
pub fn sink(output: &Output, _options: &Options) -> io::Result<Box<dyn EventSink + Send>> {
    Ok(Box::new(ChromeWriter::new(OutStream::open(output, true)?)))
}

/// An open call of a thread.
#[derive(Clone, Debug)]
struct Open {
    func: FuncId,
    start: u64,
    /// Written as a `B` event (a callee started at the same nanosecond), so it ends with `E`.
    begun: bool,
    /// The call's logged arguments (XRay), written on its `X` or `B` event.
    args: Vec<u64>,
}

/// Writes Chrome Trace Event JSON into `W` as events arrive. See the [module docs](self).
pub struct ChromeWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    /// Whether the next event is the first (no separator before it).
    first: bool,
    started: bool,
    finished: bool,
    names: Names,
    /// Per function: `{"name":"<escaped>","ph":"X","ts":`.
    complete_prefix: IdMap<Box<[u8]>>,
    /// Per thread index: `"pid":P,"tid":T`.
    threads: IdMap<Box<[u8]>>,
    /// Per thread index: its open calls (see [`Open`]).
    open_calls: IdMap<Vec<Open>>,
    /// `format` and `name` from `begin`, for `otherData`.
    format: &'static str,
    trace_name: String,
}

impl<W: Write> ChromeWriter<W> {
    /// A writer into `out`. Nothing is written before [`EventSink::begin`].
    pub fn new(out: W) -> Self {
        ChromeWriter {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            first: true,
            started: false,
            finished: false,
            names: Names::default(),
            complete_prefix: IdMap::default(),
            threads: IdMap::default(),
            open_calls: IdMap::default(),
            format: "",
            trace_name: String::new(),
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

    fn header(&mut self) {
        if !self.started {
            self.started = true;
            self.buf.extend_from_slice(b"{\"traceEvents\":[");
        }
    }

    /// Starts an event: the separator and the opening brace.
    #[inline]
    fn open(&mut self) {
        if self.first {
            self.first = false;
            self.buf.extend_from_slice(b"\n{");
        } else {
            self.buf.extend_from_slice(b",\n{");
        }
    }

    /// Ends an event and hands the buffer to the output when it is full.
    #[inline]
    fn close(&mut self) -> io::Result<()> {
        self.buf.push(b'}');
        flush_if_full(&mut self.out, &mut self.buf)
    }

    /// Appends `"pid":P,"tid":T` of thread `index` (pid 0, tid = index when undeclared).
    #[inline]
    fn push_thread(&mut self, index: u32) {
        match self.threads.get(index) {
            Some(p) => self.buf.extend_from_slice(p),
            None => {
                self.buf.extend_from_slice(b"\"pid\":0,\"tid\":");
                push_u64(&mut self.buf, u64::from(index));
            }
        }
    }

    fn push_name(&mut self, func: FuncId) {
        let name = self.names.get(func);
        push_json_str(&mut self.buf, &name);
    }

    /// Writes as `B` events the open calls of `thread` that started at `time`, below the one
    /// just entered (the top of the stack, since a thread's times never decrease), so that they
    /// come before their callee in the file: viewers order events of equal `ts` by file
    /// position, and an `X` written at exit would follow the callee's.
    #[cold]
    fn begin_callers(&mut self, thread: u32, time: u64) -> io::Result<()> {
        let mut stack = std::mem::take(self.open_calls.get_or_insert_with(thread, Vec::new));
        let callers = stack.len().saturating_sub(1);
        let same = stack
            .iter()
            .take(callers)
            .rev()
            .take_while(|o| o.start == time)
            .count();
        let mut result = Ok(());
        for o in stack
            .iter_mut()
            .take(callers)
            .skip(callers - same)
            .filter(|o| !o.begun)
        {
            o.begun = true;
            self.open();
            self.buf.extend_from_slice(b"\"name\":");
            push_json_str(&mut self.buf, &self.names.get(o.func));
            self.buf.extend_from_slice(b",\"ph\":\"B\",\"ts\":");
            push_us(&mut self.buf, o.start);
            self.buf.push(b',');
            self.push_thread(thread);
            push_call_args(&mut self.buf, &o.args);
            result = result.and(self.close());
        }
        *self.open_calls.get_or_insert_with(thread, Vec::new) = stack;
        result
    }

    fn push_arg_value(&mut self, v: &ArgValue<'_>) {
        match *v {
            ArgValue::Str(s) => push_json_str(&mut self.buf, s),
            ArgValue::U64(x) => push_u64(&mut self.buf, x),
            ArgValue::I64(x) => push_i64(&mut self.buf, x),
            ArgValue::F64(x) => push_f64(&mut self.buf, x),
            ArgValue::Bytes(b) => push_json_str(&mut self.buf, &bytes_text(b)),
        }
    }
}

/// `,"args":{"arg0":…}` for a call with logged arguments; nothing for one without.
fn push_call_args(buf: &mut Vec<u8>, args: &[u64]) {
    for (i, &a) in args.iter().enumerate() {
        buf.extend_from_slice(if i == 0 {
            b",\"args\":{\"arg"
        } else {
            b",\"arg"
        });
        push_u64(buf, i as u64);
        buf.extend_from_slice(b"\":");
        push_u64(buf, a);
    }
    if !args.is_empty() {
        buf.push(b'}');
    }
}

impl<W: Write + Send> EventSink for ChromeWriter<W> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        self.names = Names::new(trace.functions);
        self.format = trace.format;
        self.trace_name = trace.name.to_string();
        self.header();
        Ok(())
    }

    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.names.insert(id, info);
        Ok(())
    }

    fn process(&mut self, p: &ProcessInfo<'_>) -> io::Result<()> {
        self.header();
        self.open();
        self.buf
            .extend_from_slice(b"\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
        push_u64(&mut self.buf, u64::from(p.pid));
        self.buf
            .extend_from_slice(b",\"tid\":0,\"args\":{\"name\":");
        push_json_str(&mut self.buf, p.name);
        self.buf.push(b'}');
        self.close()
    }

    fn thread(&mut self, t: &ThreadInfo<'_>) -> io::Result<()> {
        self.header();
        let mut ids = Vec::with_capacity(32);
        ids.extend_from_slice(b"\"pid\":");
        push_u64(&mut ids, u64::from(t.pid));
        ids.extend_from_slice(b",\"tid\":");
        push_i64(&mut ids, display_tid(t.tid, t.index));
        self.threads.insert(t.index, ids.into_boxed_slice());
        for (meta, sort) in [
            (b"thread_name" as &[u8], false),
            (b"thread_sort_index", true),
        ] {
            self.open();
            self.buf.extend_from_slice(b"\"name\":\"");
            self.buf.extend_from_slice(meta);
            self.buf.extend_from_slice(b"\",\"ph\":\"M\",");
            self.push_thread(t.index);
            self.buf.extend_from_slice(b",\"args\":{");
            if sort {
                self.buf.extend_from_slice(b"\"sort_index\":");
                push_u64(&mut self.buf, u64::from(t.index));
            } else {
                self.buf.extend_from_slice(b"\"name\":");
                push_json_str(&mut self.buf, t.name);
            }
            self.buf.push(b'}');
            self.close()?;
        }
        Ok(())
    }

    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        let stack = self.open_calls.get_or_insert_with(call.thread, Vec::new);
        stack.truncate(call.depth as usize);
        let caller_same_ns = stack
            .last()
            .is_some_and(|o| o.start == call.time && !o.begun);
        stack.push(Open {
            func: call.func,
            start: call.time,
            begun: false,
            args: call.args.to_vec(),
        });
        if caller_same_ns {
            self.begin_callers(call.thread, call.time)?;
        }
        Ok(())
    }

    fn exit(&mut self, span: &Span) -> io::Result<()> {
        let stack = self.open_calls.get_or_insert_with(span.thread, Vec::new);
        stack.truncate(span.depth as usize + 1);
        let open = stack.pop();
        if let Some(o) = open.as_ref().filter(|o| o.begun) {
            // Named like its `B`: some viewers (speedscope) match the pair by name.
            self.open();
            self.buf.extend_from_slice(b"\"name\":");
            push_json_str(&mut self.buf, &self.names.get(o.func));
            self.buf.extend_from_slice(b",\"ph\":\"E\",\"ts\":");
            push_us(&mut self.buf, span.end);
            self.buf.push(b',');
            self.push_thread(span.thread);
            return self.close();
        }
        self.open();
        match self.complete_prefix.get(span.func.0) {
            Some(p) => self.buf.extend_from_slice(p),
            None => {
                let mut p = Vec::with_capacity(64);
                p.extend_from_slice(b"\"name\":");
                push_json_str(&mut p, &self.names.get(span.func));
                p.extend_from_slice(b",\"ph\":\"X\",\"ts\":");
                self.buf.extend_from_slice(&p);
                self.complete_prefix
                    .insert(span.func.0, p.into_boxed_slice());
            }
        }
        push_us(&mut self.buf, span.start);
        self.buf.extend_from_slice(b",\"dur\":");
        push_us(&mut self.buf, span.end.saturating_sub(span.start));
        self.buf.push(b',');
        self.push_thread(span.thread);
        if let Some(o) = &open {
            push_call_args(&mut self.buf, &o.args);
        }
        self.close()
    }

    fn instant(&mut self, i: &Instant<'_>) -> io::Result<()> {
        self.open();
        self.buf.extend_from_slice(b"\"name\":");
        push_json_str(&mut self.buf, i.name);
        self.buf.extend_from_slice(b",\"cat\":");
        push_json_str(&mut self.buf, i.category);
        self.buf
            .extend_from_slice(b",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
        push_us(&mut self.buf, i.time);
        self.buf.push(b',');
        self.push_thread(i.thread);
        self.buf.extend_from_slice(b",\"args\":{");
        for (n, (key, value)) in i.args.iter().enumerate() {
            if n > 0 {
                self.buf.push(b',');
            }
            push_json_str(&mut self.buf, key);
            self.buf.push(b':');
            self.push_arg_value(value);
        }
        self.buf.push(b'}');
        self.close()
    }

    fn counter(&mut self, c: &Counter<'_>) -> io::Result<()> {
        self.open();
        self.buf.extend_from_slice(b"\"name\":");
        push_json_str(&mut self.buf, c.name);
        self.buf.extend_from_slice(b",\"ph\":\"C\",\"ts\":");
        push_us(&mut self.buf, c.time);
        self.buf.extend_from_slice(b",\"pid\":");
        push_u64(&mut self.buf, u64::from(c.pid));
        self.buf.extend_from_slice(b",\"args\":{\"value\":");
        push_f64(&mut self.buf, c.value);
        self.buf.push(b'}');
        self.close()
    }

    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        self.open();
        self.buf.extend_from_slice(b"\"name\":");
        match s.stack.last() {
            Some(&leaf) => self.push_name(leaf),
            None => self.buf.extend_from_slice(b"\"(no stack)\""),
        }
        self.buf
            .extend_from_slice(b",\"cat\":\"sample\",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
        push_us(&mut self.buf, s.time);
        self.buf.push(b',');
        self.push_thread(s.thread);
        self.buf.extend_from_slice(b",\"args\":{\"stack\":\"");
        for (n, &f) in s.stack.iter().enumerate() {
            if n > 0 {
                self.buf.push(b';');
            }
            let name = self.names.get(f);
            shared::push_json_str_body(&mut self.buf, &name);
        }
        self.buf.extend_from_slice(b"\",\"weight\":");
        push_u64(&mut self.buf, s.weight);
        self.buf.push(b'}');
        self.close()
    }

    fn code(&mut self, c: &CodeRegion<'_>) -> io::Result<()> {
        self.open();
        self.buf.extend_from_slice(b"\"name\":");
        push_json_str(&mut self.buf, c.name);
        self.buf
            .extend_from_slice(b",\"cat\":\"jit\",\"ph\":\"i\",");
        match c.thread {
            Some(t) => {
                self.buf.extend_from_slice(b"\"s\":\"t\",");
                self.push_thread(t);
            }
            None => {
                self.buf.extend_from_slice(b"\"s\":\"p\",\"pid\":");
                push_u64(&mut self.buf, u64::from(c.pid));
            }
        }
        self.buf.extend_from_slice(b",\"ts\":");
        push_us(&mut self.buf, c.time);
        self.buf.extend_from_slice(b",\"args\":{\"event\":");
        match c.event {
            CodeEvent::Load => self.buf.extend_from_slice(b"\"load\""),
            CodeEvent::Move { old_address } => {
                self.buf.extend_from_slice(b"\"move\",\"old_address\":");
                push_hex_addr_str(&mut self.buf, old_address);
            }
        }
        self.buf.extend_from_slice(b",\"address\":");
        push_hex_addr_str(&mut self.buf, c.address);
        self.buf.extend_from_slice(b",\"size\":");
        push_u64(&mut self.buf, c.size);
        if let Some(ix) = c.code_index {
            self.buf.extend_from_slice(b",\"code_index\":");
            push_u64(&mut self.buf, ix);
        }
        self.buf.push(b'}');
        self.close()
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.header();
        self.buf.extend_from_slice(
            b"\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"profkit\",\"format\":",
        );
        push_json_str(&mut self.buf, self.format);
        self.buf.extend_from_slice(b",\"name\":");
        let name = std::mem::take(&mut self.trace_name);
        push_json_str(&mut self.buf, &name);
        self.buf.extend_from_slice(b"}}\n");
        flush_all(&mut self.out, &mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profkit_model::func::{FuncInfo, FunctionTable};
    use profkit_model::Clock;

    #[test]
    fn small_trace_is_json() {
        let mut table = FunctionTable::new();
        table.insert(
            FuncId(1),
            FuncInfo {
                name: Some("ma\"in".into()),
                ..FuncInfo::default()
            },
        );
        let mut w = ChromeWriter::new(Vec::new());
        w.begin(&TraceInfo {
            format: "test",
            functions: &table,
            clock: Clock::default(),
            origin_ns: 0,
            name: "t",
            samples: None,
            origin_unix_ns: None,
        })
        .unwrap();
        w.exit(&Span {
            func: FuncId(1),
            thread: 0,
            start: 1,
            end: 12_346,
            depth: 0,
            self_time: 0,
        })
        .unwrap();
        w.finish().unwrap();
        let s = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(
            s,
            "{\"traceEvents\":[\n{\"name\":\"ma\\\"in\",\"ph\":\"X\",\"ts\":0.001,\"dur\":12.345,\"pid\":0,\"tid\":0}\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"profkit\",\"format\":\"test\",\"name\":\"t\"}}\n"
        );
    }
}
