//! XRay traces → [`EventSink`]: calls per thread (each thread's buffers in file order, threads
//! one after another, so memory stays O(stack depth)), custom and typed events as instants.
//!
//! The origin is the earliest first event of any thread. Calls left open when a thread's
//! events end are closed at its last time; exits whose enter is not in the trace are dropped.

use std::io;
use std::ops::ControlFlow;

use profkit_xray::{
    BufferItem, CallRecord, Event, EventKind, ThreadKey, ThreadState, Trace, TraceType,
};

use super::{CallForwarder, FeedSummary, Monotonic};
use crate::events::{Arg, ArgValue, EventSink, Instant, ProcessInfo, ThreadInfo, TraceInfo};
use crate::func::{FuncId, FunctionTable};
use crate::ingest::xray::{call_kind, clock, thread_buffers};
use crate::span::{MismatchPolicy, SpanBuilder};

/// Feeds `trace` to `sink`. `functions` names the function ids (see
/// [`crate::ingest::xray::function_table`]); `name` names the trace and its process (the
/// program's file name is a good choice). `done(start, end)` is called with the byte range of
/// each FDR buffer once it has been fed (for progress, and to release a mapped file's pages).
pub fn feed(
    trace: &Trace<'_>,
    functions: &FunctionTable,
    name: &str,
    sink: &mut dyn EventSink,
    done: &mut dyn FnMut(u64, u64),
) -> io::Result<FeedSummary> {
    let clk = clock(&trace.header);
    let mut summary = FeedSummary::default();

    // Each thread's events as a lazily decoded sequence: FDR buffers in file order, or the
    // basic-mode thread's decoded events.
    let basic = trace.header.trace_type == TraceType::BASIC;
    let decoded = basic.then(|| trace.decode());
    let groups: Vec<(ThreadKey, Vec<usize>)> = if basic {
        Vec::new()
    } else {
        thread_buffers(trace)
    };
    let first_tsc = |i: usize| -> Option<u64> {
        trace
            .buffer_events(i, ThreadState::default())
            .find_map(|r| r.ok())
            .map(|e| e.tsc)
    };
    let origin_raw = match &decoded {
        Some(d) => d
            .threads
            .iter()
            .filter_map(|t| t.events.first().map(|e| e.tsc))
            .min(),
        None => groups
            .iter()
            .filter_map(|(_, b)| b.first().and_then(|&i| first_tsc(i)))
            .min(),
    }
    .unwrap_or(0);
    let to_ns = move |t: u64| clk.to_ns(t.saturating_sub(origin_raw));

    sink.begin(&TraceInfo {
        format: "xray",
        functions,
        clock: clk,
        origin_ns: clk.to_ns(origin_raw),
        name,
    })?;

    let keys: Vec<ThreadKey> = match &decoded {
        Some(d) => d.threads.iter().map(|t| t.key).collect(),
        None => groups.iter().map(|g| g.0).collect(),
    };
    let mut pids: Vec<u32> = keys.iter().map(|k| k.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in &pids {
        let pname = if pids.len() == 1 {
            name.to_string()
        } else {
            format!("{name} (pid {pid})")
        };
        sink.process(&ProcessInfo {
            pid: *pid,
            name: &pname,
        })?;
    }

    let mut thread_name = String::new();
    for (index, key) in keys.iter().enumerate() {
        let index = index as u32;
        thread_name.clear();
        thread_name.push_str("thread ");
        thread_name.push_str(itoa::Buffer::new().format(key.tid));
        sink.thread(&ThreadInfo {
            index,
            pid: key.pid,
            tid: u64::from(key.tid),
            name: &thread_name,
        })?;
        let mut t = ThreadFeed {
            builder: SpanBuilder::new(index, MismatchPolicy::Unwind),
            clamp: Monotonic::default(),
            index,
            other: 0,
        };
        match &decoded {
            Some(d) => {
                for ev in d.threads.get(index as usize).map_or(&[][..], |t| &t.events) {
                    t.event(ev, &to_ns, sink)?;
                }
            }
            None => {
                let bufs = groups.get(index as usize).map_or(&[][..], |g| &g.1);
                let mut state = ThreadState::default();
                for &i in bufs {
                    let mut it = trace.buffer_events(i, state);
                    loop {
                        let mut failed = None;
                        let item = it.visit_calls(&mut |c: CallRecord| match t
                            .call(c.kind, c.func_id, c.tsc, &to_ns, &mut *sink)
                        {
                            Ok(()) => ControlFlow::Continue(()),
                            Err(e) => {
                                failed = Some(e);
                                ControlFlow::Break(())
                            }
                        });
                        if let Some(e) = failed {
                            return Err(e);
                        }
                        match item {
                            None => break,
                            Some(BufferItem::Problem(e)) => summary.problems.push(e.to_string()),
                            Some(BufferItem::Event(ev)) => t.event(&ev, &to_ns, sink)?,
                            Some(BufferItem::Call(c)) => {
                                t.call(c.kind, c.func_id, c.tsc, &to_ns, sink)?
                            }
                        }
                    }
                    state = it.state();
                    if let Some(b) = trace.layout().buffers.get(i) {
                        done(b.start, b.end);
                    }
                }
            }
        }
        summary.other_events += t.other;
        let end = t.builder.last_time();
        let mut fwd = CallForwarder {
            sink: &mut *sink,
            thread: index,
            to_ns: &to_ns,
            error: None,
        };
        let stats = t.builder.finish_closing(end, &mut fwd);
        fwd.result()?;
        summary.calls.merge(&stats);
        summary.threads += 1;
    }
    match decoded {
        Some(d) => {
            summary
                .problems
                .extend(d.problems.iter().map(|p| p.to_string()));
            summary.truncation = d.truncation.map(|t| t.to_string());
        }
        None => {
            summary.truncation = trace.truncation().map(|t| t.to_string());
        }
    }
    sink.finish()?;
    Ok(summary)
}

struct ThreadFeed {
    builder: SpanBuilder,
    clamp: Monotonic,
    index: u32,
    other: u64,
}

impl ThreadFeed {
    /// A function record.
    #[inline]
    fn call(
        &mut self,
        kind: EventKind,
        func: u32,
        tsc: u64,
        to_ns: &dyn Fn(u64) -> u64,
        sink: &mut dyn EventSink,
    ) -> io::Result<()> {
        let Some(kind) = call_kind(kind) else {
            return Ok(());
        };
        let tsc = self.clamp.next(tsc);
        let mut fwd = CallForwarder {
            sink,
            thread: self.index,
            to_ns,
            error: None,
        };
        self.builder.event(kind, FuncId(func), tsc, &mut fwd);
        fwd.result()
    }

    /// Any event: calls go to [`ThreadFeed::call`], custom and typed events become instants.
    fn event(
        &mut self,
        ev: &Event<'_>,
        to_ns: &dyn Fn(u64) -> u64,
        sink: &mut dyn EventSink,
    ) -> io::Result<()> {
        if call_kind(ev.kind).is_some() {
            return self.call(ev.kind, ev.func_id, ev.tsc, to_ns, sink);
        }
        self.other += 1;
        let time = to_ns(self.clamp.next(ev.tsc));
        match ev.kind {
            EventKind::TypedEvent => {
                let args: [Arg<'_>; 2] = [
                    ("type", ArgValue::U64(u64::from(ev.event_type))),
                    ("data", ArgValue::Bytes(ev.data)),
                ];
                sink.instant(&Instant {
                    thread: self.index,
                    time,
                    name: "typed event",
                    category: "xray.typed",
                    args: &args,
                })
            }
            _ => {
                let args: [Arg<'_>; 1] = [("data", ArgValue::Bytes(ev.data))];
                sink.instant(&Instant {
                    thread: self.index,
                    time,
                    name: "custom event",
                    category: "xray.custom",
                    args: &args,
                })
            }
        }
    }
}
