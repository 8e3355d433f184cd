//! Several inputs on one timeline: a recording's perf.data samples and the XRay traces its
//! instrumented program wrote (`profkit record` of an XRay binary), fed to one [`EventSink`]
//! as if they were one trace.
//!
//! [`Joined`] is an [`EventSink`] in front of the real one. The first input passes through as
//! it is (its `begin` is the trace's; its thread indexes, function ids and times stay). Each
//! input after it ([`Joined::next_part`]) is renumbered into the first one's spaces:
//!
//! * a thread the first input declared (same pid and tid; a tid alone when the later input
//!   records no pid) is the same thread, so an XRay call lands on the track of the samples
//!   taken in it; any other thread gets the next free index;
//! * function ids are moved past every id the first input used, each declared through
//!   [`EventSink::function`] before its first use;
//! * times move onto the first input's clock: a part's absolute time (its origin + the
//!   event's time) plus the part's offset, minus the first input's origin; an event that
//!   would fall before the origin is clamped to it. The offset is asked of the caller when the
//!   part's origin is known (at its `begin`), so it can tell which clock the part used.
//!
//! The parts are fed one after another, not interleaved: each thread's events stay in time
//! order within a part, and writers that need a global order (none of the timeline writers
//! do: Perfetto and Chrome JSON timestamp every event) are not given joined inputs.
//! Only the real sink's `finish` ends the trace ([`Joined::finish`]).

use std::collections::{HashMap, HashSet};
use std::io;

use crate::events::{
    CallPath, CodeRegion, Counter, Enter, EventSink, Instant, MappingInfo, ProcessInfo, Sample,
    ThreadId, ThreadInfo, TraceInfo,
};
use crate::func::{FuncId, FuncInfo, FunctionTable};
use crate::span::Span;

/// One sink fed by several inputs in turn (see the module docs).
pub struct Joined<'s> {
    sink: &'s mut dyn EventSink,
    /// The first input's origin (absolute ns on its clock); `None` before its `begin`.
    origin_ns: Option<u64>,
    /// Every thread declared downstream.
    threads: HashMap<ThreadId, u32>,
    /// Threads by tid alone, for inputs that record no pid.
    tids: HashMap<u64, u32>,
    next_thread: u32,
    processes: HashSet<u32>,
    /// One past the largest function id used downstream.
    next_func: u32,
    part: Option<Part>,
}

/// The renumbering of the input being fed after the first.
struct Part {
    /// The part's offset from its origin (see [`Joined::next_part`]).
    align: Box<dyn Fn(u64) -> i128>,
    offset_ns: i128,
    /// The part's origin (from its `begin`).
    origin_ns: u64,
    functions: FunctionTable,
    funcs: HashMap<FuncId, FuncId>,
    /// The part's thread index → the downstream index.
    threads: HashMap<u32, u32>,
    stack: Vec<FuncId>,
}

impl<'s> Joined<'s> {
    /// A joined trace written to `sink`: feed the first input to it, then call
    /// [`Joined::next_part`] before each further input, and [`Joined::finish`] at the end.
    pub fn new(sink: &'s mut dyn EventSink) -> Self {
        Joined {
            sink,
            origin_ns: None,
            threads: HashMap::new(),
            tids: HashMap::new(),
            next_thread: 0,
            processes: HashSet::new(),
            next_func: 0,
            part: None,
        }
    }

    /// The next input's events are renumbered and moved by `align(origin)` nanoseconds (added
    /// to its absolute times to put them on the first input's clock; `origin` is the part's
    /// own, in absolute ns on its clock).
    pub fn next_part(&mut self, align: impl Fn(u64) -> i128 + 'static) {
        self.part = Some(Part {
            align: Box::new(align),
            offset_ns: 0,
            origin_ns: 0,
            functions: FunctionTable::new(),
            funcs: HashMap::new(),
            threads: HashMap::new(),
            stack: Vec::new(),
        });
    }

    /// Ends the joined trace (the inputs' own `finish` calls are not passed on).
    pub fn finish(self) -> io::Result<()> {
        self.sink.finish()
    }

    fn see_func(&mut self, id: FuncId) {
        self.next_func = self.next_func.max(id.0.saturating_add(1));
    }

    /// A part's time on the first input's clock.
    fn time(&self, t: u64) -> u64 {
        let Some(p) = &self.part else { return t };
        let abs = i128::from(p.origin_ns) + i128::from(t) + p.offset_ns;
        let rel = abs - i128::from(self.origin_ns.unwrap_or(0));
        u64::try_from(rel.max(0)).unwrap_or(u64::MAX)
    }

    /// A part's thread index downstream (an undeclared index passes unchanged: the writer
    /// reports it as it would for the part alone).
    fn thread_index(&self, index: u32) -> u32 {
        match &self.part {
            Some(p) => p.threads.get(&index).copied().unwrap_or(index),
            None => index,
        }
    }

    /// A part's function id downstream, declared on first use.
    fn func(&mut self, id: FuncId) -> io::Result<FuncId> {
        let Some(p) = &mut self.part else {
            return Ok(id);
        };
        if let Some(&f) = p.funcs.get(&id) {
            return Ok(f);
        }
        let f = FuncId(self.next_func);
        self.next_func = self.next_func.saturating_add(1);
        p.funcs.insert(id, f);
        let mut info = p.functions.get(id).cloned().unwrap_or_default();
        if info.name.is_none() {
            info.name = Some(p.functions.name(id));
        }
        self.sink.function(f, &info)?;
        Ok(f)
    }
}

impl EventSink for Joined<'_> {
    fn begin(&mut self, trace: &TraceInfo<'_>) -> io::Result<()> {
        match &mut self.part {
            None => {
                self.origin_ns = Some(trace.origin_ns);
                for (id, _) in trace.functions.iter() {
                    self.see_func(id);
                }
                self.sink.begin(trace)
            }
            Some(p) => {
                p.origin_ns = trace.origin_ns;
                p.offset_ns = (p.align)(trace.origin_ns);
                p.functions = trace.functions.clone();
                Ok(())
            }
        }
    }

    fn process(&mut self, process: &ProcessInfo<'_>) -> io::Result<()> {
        if self.processes.insert(process.pid) || self.part.is_none() {
            self.sink.process(process)?;
        }
        Ok(())
    }

    fn thread(&mut self, t: &ThreadInfo<'_>) -> io::Result<()> {
        let key = ThreadId {
            pid: t.pid,
            tid: t.tid,
        };
        let Some(p) = &mut self.part else {
            self.threads.insert(key, t.index);
            self.tids.entry(t.tid).or_insert(t.index);
            self.next_thread = self.next_thread.max(t.index.saturating_add(1));
            return self.sink.thread(t);
        };
        let known = self.threads.get(&key).copied().or_else(|| {
            (t.pid == 0)
                .then(|| self.tids.get(&t.tid).copied())
                .flatten()
        });
        let index = match known {
            Some(i) => i,
            None => {
                let i = self.next_thread;
                self.next_thread = self.next_thread.saturating_add(1);
                self.threads.insert(key, i);
                self.tids.entry(t.tid).or_insert(i);
                self.sink.thread(&ThreadInfo { index: i, ..*t })?;
                i
            }
        };
        p.threads.insert(t.index, index);
        Ok(())
    }

    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        match &mut self.part {
            None => {
                self.see_func(id);
                self.sink.function(id, info)
            }
            Some(p) => {
                p.functions.insert(id, info.clone());
                Ok(())
            }
        }
    }

    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        let func = self.func(call.func)?;
        self.sink.enter(&Enter {
            thread: self.thread_index(call.thread),
            func,
            time: self.time(call.time),
            ..*call
        })
    }

    fn exit(&mut self, span: &Span) -> io::Result<()> {
        let func = self.func(span.func)?;
        self.sink.exit(&Span {
            thread: self.thread_index(span.thread),
            func,
            start: self.time(span.start),
            end: self.time(span.end),
            ..*span
        })
    }

    fn instant(&mut self, i: &Instant<'_>) -> io::Result<()> {
        self.sink.instant(&Instant {
            thread: self.thread_index(i.thread),
            time: self.time(i.time),
            ..*i
        })
    }

    fn counter(&mut self, c: &Counter<'_>) -> io::Result<()> {
        self.sink.counter(&Counter {
            time: self.time(c.time),
            ..*c
        })
    }

    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        if self.part.is_none() {
            return self.sink.sample(s);
        }
        let mut stack = self
            .part
            .as_mut()
            .map(|p| std::mem::take(&mut p.stack))
            .unwrap_or_default();
        stack.clear();
        for &f in s.stack {
            stack.push(self.func(f)?);
        }
        let r = self.sink.sample(&Sample {
            thread: self.thread_index(s.thread),
            time: self.time(s.time),
            stack: &stack,
            ..*s
        });
        if let Some(p) = &mut self.part {
            p.stack = stack;
        }
        r
    }

    fn code(&mut self, c: &CodeRegion<'_>) -> io::Result<()> {
        self.sink.code(&CodeRegion {
            thread: c.thread.map(|t| self.thread_index(t)),
            time: self.time(c.time),
            ..*c
        })
    }

    fn mapping(&mut self, m: &MappingInfo<'_>) -> io::Result<()> {
        self.sink.mapping(m)
    }

    fn call_path(&mut self, path: &CallPath<'_>) -> io::Result<()> {
        if self.part.is_none() {
            return self.sink.call_path(path);
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "call-path totals (an XRay profiling-mode file) have no times to join to a timeline",
        ))
    }

    /// An input ended: not the trace (see [`Joined::finish`]).
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}
