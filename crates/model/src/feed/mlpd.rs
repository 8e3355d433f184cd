//! Mono log profiler files → [`EventSink`].
//!
//! One thread after another (each thread's buffers in file order): ENTER / LEAVE / EXC_LEAVE
//! become calls; exceptions thrown, GC phases and monitor events become instants on the thread
//! they happened on; GC resizes become the counter `GC heap size`; performance counters become
//! counters named after their COUNTERS_DESC (values summed from the deltas the file stores);
//! JIT events become code regions; sample hits with managed frames become samples on the sampled
//! thread. Samples, counters and code come in a second pass, each in time order per thread.
//!
//! The origin is the header's start time on the event clock (major 3) or the earliest buffer
//! time; process and thread names come from the header and the thread-name metadata.

use std::collections::HashMap;
use std::io;

use profkit_mlpd::raw::{MONITOR_CONTENTION, MONITOR_DONE, MONITOR_FAIL, MTYPE_THREAD};
use profkit_mlpd::read::{Buffer, CounterValue, MetaAction};
use profkit_mlpd::{EventKind, File};

use super::{CallForwarder, FeedSummary, Monotonic};
use crate::events::{
    Arg, ArgValue, CodeEvent, CodeRegion, Counter, EventSink, Instant, ProcessInfo, Sample,
    ThreadInfo, TraceInfo,
};
use crate::ingest::mlpd::Methods;
use crate::span::{CallKind, MismatchPolicy, SpanBuilder};

/// The GC event names of note §5.
fn gc_event_name(event: u64) -> &'static str {
    match event {
        0 => "GC start",
        1 => "GC mark start",
        2 => "GC mark end",
        3 => "GC reclaim start",
        4 => "GC reclaim end",
        5 => "GC end",
        6 => "GC pre stop world",
        7 => "GC post stop world",
        8 => "GC pre start world",
        9 => "GC post start world",
        10 => "GC pre stop world locked",
        11 => "GC post start world unlocked",
        _ => "GC event",
    }
}

fn monitor_event_name(event: u8) -> &'static str {
    match event {
        MONITOR_CONTENTION => "monitor contention",
        MONITOR_DONE => "monitor acquired",
        MONITOR_FAIL => "monitor failed",
        _ => "monitor event",
    }
}

struct Threads {
    index: HashMap<u64, u32>,
    names: HashMap<u64, String>,
    pid: u32,
}

impl Threads {
    /// The index of thread `tid`, declaring it to `sink` the first time.
    fn get(&mut self, tid: u64, sink: &mut dyn EventSink) -> io::Result<u32> {
        if let Some(&i) = self.index.get(&tid) {
            return Ok(i);
        }
        let i = self.index.len() as u32;
        self.index.insert(tid, i);
        let name = self
            .names
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| format!("thread {tid:#x}"));
        sink.thread(&ThreadInfo {
            index: i,
            pid: self.pid,
            tid,
            name: &name,
        })?;
        Ok(i)
    }
}

/// Feeds `file` to `sink`; `methods` names the methods ([`crate::ingest::mlpd::methods`]).
pub fn feed(
    file: &File<'_>,
    methods: &Methods,
    name: &str,
    sink: &mut dyn EventSink,
) -> io::Result<FeedSummary> {
    let mut summary = FeedSummary::default();
    let mut bufs: Vec<Buffer<'_>> = Vec::new();
    for b in file.buffers() {
        match b {
            Ok(b) => bufs.push(b),
            Err(e) => summary.problems.push(e.to_string()),
        }
    }
    // Thread names and the earliest time.
    let mut names = HashMap::new();
    let mut earliest = u64::MAX;
    for b in &bufs {
        earliest = earliest.min(b.header.time_base);
        for ev in b.events().flatten() {
            if let EventKind::Metadata(m) = ev.kind {
                if m.mtype == MTYPE_THREAD && m.action == MetaAction::Name && !m.name.is_empty() {
                    names.insert(m.ptr, String::from_utf8_lossy(m.name).into_owned());
                }
            }
        }
    }
    let h = &file.header;
    let origin = if h.major >= 3 && h.startup_ns != 0 && h.startup_ns <= earliest {
        h.startup_ns
    } else if earliest == u64::MAX {
        0
    } else {
        earliest
    };
    let to_ns = move |t: u64| t.saturating_sub(origin);
    sink.begin(&TraceInfo {
        format: "mlpd",
        functions: &methods.table,
        clock: crate::Clock::NANOSECONDS,
        origin_ns: origin,
        name,
    })?;
    let pname = if h.args.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({})", h.args)
    };
    sink.process(&ProcessInfo {
        pid: h.pid,
        name: &pname,
    })?;
    let mut threads = Threads {
        index: HashMap::new(),
        names,
        pid: h.pid,
    };

    // Pass 1: per thread, calls and instants.
    let mut order: Vec<u64> = Vec::new();
    let mut by_thread: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, b) in bufs.iter().enumerate() {
        by_thread
            .entry(b.header.thread_id)
            .or_insert_with(|| {
                order.push(b.header.thread_id);
                Vec::new()
            })
            .push(i);
    }
    for tid in &order {
        let index = threads.get(*tid, sink)?;
        let mut builder = SpanBuilder::new(index, MismatchPolicy::Unwind);
        let mut clamp = Monotonic::default();
        for &bi in by_thread.get(tid).map_or(&[][..], |v| v) {
            let Some(b) = bufs.get(bi) else { continue };
            for ev in b.events() {
                let ev = match ev {
                    Ok(ev) => ev,
                    Err(e) => {
                        summary.problems.push(e.to_string());
                        continue;
                    }
                };
                let t = clamp.next(ev.time);
                let call = match ev.kind {
                    EventKind::Enter { method } => Some((CallKind::Enter, method)),
                    EventKind::Leave { method } | EventKind::ExcLeave { method } => {
                        Some((CallKind::Exit, method))
                    }
                    _ => None,
                };
                if let Some((kind, m)) = call {
                    let mut fwd = CallForwarder {
                        sink: &mut *sink,
                        thread: index,
                        to_ns: &to_ns,
                        error: None,
                    };
                    builder.event(kind, methods.id(m), t, &mut fwd);
                    fwd.result()?;
                    continue;
                }
                let time = to_ns(t);
                let mut instant = |name: &str, category: &str, args: &[Arg<'_>]| {
                    summary.other_events += 1;
                    sink.instant(&Instant {
                        thread: index,
                        time,
                        name,
                        category,
                        args,
                    })
                };
                match ev.kind {
                    EventKind::Throw { obj, .. } => instant(
                        "exception thrown",
                        "exception",
                        &[("object", ArgValue::U64(obj))],
                    )?,
                    EventKind::GcEvent { event, generation } => instant(
                        gc_event_name(event),
                        "gc",
                        &[("generation", ArgValue::U64(generation))],
                    )?,
                    EventKind::Monitor { event, obj, .. } => instant(
                        monitor_event_name(event),
                        "monitor",
                        &[("object", ArgValue::U64(obj))],
                    )?,
                    _ => {}
                }
            }
        }
        let end = builder.last_time();
        let mut fwd = CallForwarder {
            sink: &mut *sink,
            thread: index,
            to_ns: &to_ns,
            error: None,
        };
        let stats = builder.finish_closing(end, &mut fwd);
        fwd.result()?;
        summary.calls.merge(&stats);
    }

    // Pass 2: samples, counters, heap size, code, in file order.
    let mut counter_names: HashMap<u64, String> = HashMap::new();
    let mut counter_values: HashMap<u64, f64> = HashMap::new();
    let mut frames = Vec::new();
    for b in &bufs {
        for ev in b.events().flatten() {
            let time = to_ns(ev.time);
            match ev.kind {
                EventKind::SampleHit {
                    thread,
                    frames: f,
                    timestamp,
                    ..
                } => {
                    frames.clear();
                    frames.extend(f.map(|m| methods.id(m)));
                    if frames.is_empty() {
                        continue;
                    }
                    frames.reverse(); // the file lists the leaf first
                    let index = threads.get(thread, sink)?;
                    summary.other_events += 1;
                    sink.sample(&Sample {
                        thread: index,
                        time: timestamp.map_or(time, to_ns),
                        stack: &frames,
                        weight: 1,
                    })?;
                }
                EventKind::GcResize { heap_size } => {
                    summary.other_events += 1;
                    sink.counter(&Counter {
                        pid: h.pid,
                        name: "GC heap size",
                        time,
                        value: heap_size as f64,
                    })?;
                }
                EventKind::CountersDesc { descs } => {
                    for d in descs {
                        let n = String::from_utf8_lossy(d.name);
                        let full = if d.section_name.is_empty() {
                            n.into_owned()
                        } else {
                            format!("{}/{n}", String::from_utf8_lossy(d.section_name))
                        };
                        counter_names.insert(d.index, full);
                    }
                }
                EventKind::Counters { timestamp, values } => {
                    let time = timestamp.map_or(time, to_ns);
                    for (index, _, v) in values {
                        let cur = counter_values.entry(index).or_insert(0.0);
                        match v {
                            CounterValue::Signed(d) => *cur += d as f64,
                            CounterValue::Unsigned(d) => *cur += d as f64,
                            CounterValue::Double(x) => *cur = x,
                            CounterValue::String(_) => continue,
                        }
                        let value = *cur;
                        let name = counter_names
                            .entry(index)
                            .or_insert_with(|| format!("counter {index}"));
                        summary.other_events += 1;
                        sink.counter(&Counter {
                            pid: h.pid,
                            name,
                            time,
                            value,
                        })?;
                    }
                }
                EventKind::Jit {
                    code, size, name, ..
                } => {
                    let thread = threads.get(b.header.thread_id, sink)?;
                    summary.other_events += 1;
                    sink.code(&CodeRegion {
                        thread: Some(thread),
                        pid: h.pid,
                        time,
                        address: code,
                        size,
                        name: &String::from_utf8_lossy(name),
                        event: CodeEvent::Load,
                        code_index: None,
                        tier: None,
                    })?;
                }
                _ => {}
            }
        }
    }
    summary.threads = threads.index.len() as u32;
    sink.finish()?;
    Ok(summary)
}
