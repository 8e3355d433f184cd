//! The report as text, laid out like mprof-report 6.8.

use std::collections::HashMap;
use std::io::{self, Write};

use super::aggregate::{section_name, Counter, Report, Trace, TrackEvent, HANDLE_NAMES};
use profkit_mlpd::raw::*;

fn ptr(p: u64) -> String {
    if p == 0 {
        "(nil)".to_string()
    } else {
        format!("{p:#x}")
    }
}

const DEFAULT_COUNTERS: [(u64, &str); 13] = [
    (1 << 14, "User Time"),
    (1 << 14, "System Time"),
    (1 << 14, "Total Time"),
    (1 << 14, "Working Set"),
    (1 << 14, "Private Bytes"),
    (1 << 14, "Virtual Bytes"),
    (1 << 14, "Page Faults"),
    (1 << 14, "CPU Load Average - 1min"),
    (1 << 14, "CPU Load Average - 5min"),
    (1 << 14, "CPU Load Average - 15min"),
    (1 << 8, "Methods from AOT"),
    (1 << 8, "Methods JITted using mono JIT"),
    (1 << 8, "Methods JITted using LLVM"),
];

fn write_traces(out: &mut dyn Write, traces: Option<&Vec<Trace>>, what: &str) -> io::Result<()> {
    for t in traces.into_iter().flatten() {
        writeln!(out, "\t{} {what} from:", t.count)?;
        for f in &t.frames {
            writeln!(out, "\t\t{f}")?;
        }
    }
    Ok(())
}

/// Writes what happened to the tracked objects, as mprof-report prints it.
pub fn write_tracking(out: &mut dyn Write, events: &[TrackEvent]) -> io::Result<()> {
    let frames = |out: &mut dyn Write, f: &[String]| -> io::Result<()> {
        for m in f {
            writeln!(out, "\t{m}")?;
        }
        Ok(())
    };
    for e in events {
        match e {
            TrackEvent::Created {
                obj,
                class,
                size,
                secs,
                frames: f,
            } => {
                writeln!(
                    out,
                    "Object {} created ({class}, {size} bytes) at {secs:.3} secs.",
                    ptr(*obj)
                )?;
                frames(out, f)?;
            }
            TrackEvent::Handle {
                obj,
                handle,
                secs,
                frames: f,
            } => {
                writeln!(
                    out,
                    "Object {} referenced from handle {handle} at {secs:.3} secs.",
                    ptr(*obj)
                )?;
                frames(out, f)?;
            }
            TrackEvent::MovedTo { obj, to } => {
                writeln!(out, "Object {} moved to {}", ptr(*obj), ptr(*to))?
            }
            TrackEvent::MovedFrom { obj, from } => {
                writeln!(out, "Object {} moved from {}", ptr(*obj), ptr(*from))?
            }
            TrackEvent::Referenced { obj, parent, class } => writeln!(
                out,
                "Object {} referenced from {} ({class}).",
                ptr(*obj),
                ptr(*parent)
            )?,
        }
    }
    Ok(())
}

/// Writes the selected sections as text, laid out like mprof-report (with
/// [`Report::tracking`], only the tracked objects' events, as mprof-report does).
pub fn write_text(
    out: &mut dyn Write,
    r: &Report,
    sections: &[&str],
    verbose: bool,
) -> io::Result<()> {
    if let Some(t) = &r.tracking {
        return write_tracking(out, t);
    }
    let want = |s: &str| sections.contains(&s);
    let tr = r.traces.as_ref();
    let h = &r.header;
    if want("header") {
        writeln!(out, "\nMono log profiler data")?;
        writeln!(out, "\tProfiler version: {}.{}", h.major, h.minor)?;
        writeln!(out, "\tData version: {}", h.data_version)?;
        if h.major >= 1 {
            writeln!(out, "\tArguments: {}", h.args)?;
            writeln!(out, "\tArchitecture: {}", h.arch)?;
            writeln!(out, "\tOperating system: {}", h.os)?;
        }
        writeln!(
            out,
            "\tMean timer overhead: {} nanoseconds",
            h.timer_overhead
        )?;
        writeln!(
            out,
            "\tProgram startup: {} ms since the Unix epoch",
            h.startup_ms
        )?;
        writeln!(out, "\tProgram ID: {}", h.pid)?;
        if h.port != 0 {
            writeln!(out, "\tServer listening on: {}", h.port)?;
        }
    }
    if want("jit") {
        writeln!(out, "\nJIT summary")?;
        writeln!(out, "\tCompiled methods: {}", r.jit.0)?;
        writeln!(out, "\tGenerated code size: {}", r.jit.1)?;
        writeln!(out, "\tJIT helpers: {}", r.jit.2)?;
        writeln!(out, "\tJIT helpers code size: {}", r.jit.3)?;
    }
    if want("gc") {
        writeln!(out, "\nGC summary")?;
        writeln!(out, "\tGC resizes: {}", r.gc.0)?;
        writeln!(out, "\tMax heap size: {}", r.gc.1)?;
        writeln!(out, "\tObject moves: {}", r.gc.2)?;
        for (g, &(count, max, total)) in r.gc_gens.iter().enumerate() {
            if let Some(avg) = total.checked_div(count) {
                writeln!(
                    out,
                    "\tGen{g} collections: {count}, max time: {}us, total time: {}us, average: {}us",
                    max / 1000,
                    total / 1000,
                    avg / 1000
                )?;
            }
        }
        for (i, &(c, d, m)) in r.gc_handles.iter().enumerate() {
            if c > 0 || d > 0 {
                writeln!(
                    out,
                    "\tGC handles {}: created: {c}, destroyed: {d}, max: {m}",
                    HANDLE_NAMES.get(i).copied().unwrap_or("?")
                )?;
                let h = tr.and_then(|t| t.handles.get(i));
                write_traces(out, h.map(|h| &h.0), "created")?;
                write_traces(out, h.map(|h| &h.1), "destroyed")?;
            }
        }
    }
    if want("sample") && !r.samples.0.is_empty() {
        let (rows, un, man, unres) = &r.samples;
        let total = (un + man).max(1);
        let pct = |n: u64| n as f64 * 100.0 / total as f64;
        writeln!(out, "\nStatistical samples summary")?;
        writeln!(out, "\tSample type: cycles")?;
        writeln!(out, "\tUnmanaged hits:  {un:6} ({:4.1}%)", pct(*un))?;
        writeln!(out, "\tManaged hits:    {man:6} ({:4.1}%)", pct(*man))?;
        writeln!(out, "\tUnresolved hits: {unres:6} ({:4.1}%)", pct(*unres))?;
        writeln!(out, "\t{:>6} {:>6} Method name", "Hits", "%")?;
        for (n, c) in rows {
            if pct(*c) >= 0.1 || verbose {
                writeln!(out, "\t{c:6} {:6.2} {n}", pct(*c))?;
            }
        }
    }
    if want("alloc") && !r.alloc.is_empty() {
        writeln!(out, "\nAllocation summary")?;
        writeln!(
            out,
            "{:>10} {:>10} {:>8} Type name",
            "Bytes", "Count", "Average"
        )?;
        let (mut tb, mut tc) = (0u64, 0u64);
        for (n, b, c) in &r.alloc {
            tb += b;
            tc += c;
            writeln!(out, "{b:10} {c:10} {:8} {n}", b / (*c).max(1))?;
            write_traces(out, tr.and_then(|t| t.alloc.get(n)), "bytes")?;
        }
        writeln!(out, "Total memory allocated: {tb} bytes in {tc} objects")?;
    }
    if want("call") && !r.calls.is_empty() {
        writeln!(out, "\nMethod call summary")?;
        writeln!(
            out,
            "{:>8} {:>8} {:>10} Method name",
            "Total(ms)", "Self(ms)", "Calls"
        )?;
        let mut total_calls = 0u64;
        for (i, (n, s)) in r.calls.iter().enumerate() {
            total_calls += s.calls;
            let ms = s.total_ns / 1_000_000;
            if ms == 0 && !verbose {
                continue;
            }
            writeln!(out, "{ms:8} {:8} {:10} {n}", s.self_ns / 1_000_000, s.calls)?;
            write_traces(out, tr.and_then(|t| t.calls.get(i)), "calls")?;
        }
        writeln!(out, "Total calls: {total_calls}")?;
    }
    if want("metadata") {
        writeln!(out, "\nMetadata summary")?;
        writeln!(out, "\tLoaded images: {}", r.metadata.0)?;
        writeln!(out, "\tLoaded assemblies: {}", r.metadata.1)?;
    }
    if want("exception") {
        let (throws, cl) = r.exceptions;
        writeln!(out, "\nException summary")?;
        writeln!(out, "\tThrows: {throws}")?;
        write_traces(out, tr.map(|t| &t.throws), "throws")?;
        for (i, kind) in [
            (0usize, "catch"),
            (1, "filter"),
            (2, "finally"),
            (4, "fault"),
        ] {
            let n = cl.get(i).copied().unwrap_or(0);
            if n > 0 {
                writeln!(out, "\tExecuted {kind} clauses: {n}")?;
            }
        }
    }
    if want("monitor") && (r.monitor_totals.0 + r.monitor_totals.1 + r.monitor_totals.2) > 0 {
        writeln!(out, "\nMonitor lock summary")?;
        for &(o, n, wait, max) in &r.monitors {
            writeln!(out, "\tLock object {}: {n} contentions", ptr(o))?;
            writeln!(
                out,
                "\t\t{:.6} secs total wait time, {:.6} max, {:.6} average",
                wait as f64 / 1e9,
                max as f64 / 1e9,
                wait as f64 / 1e9 / n as f64
            )?;
            write_traces(out, tr.and_then(|t| t.monitors.get(&o)), "contentions")?;
        }
        writeln!(out, "\tLock contentions: {}", r.monitor_totals.0)?;
        writeln!(out, "\tLock acquired: {}", r.monitor_totals.1)?;
        writeln!(out, "\tLock failures: {}", r.monitor_totals.2)?;
    }
    if want("thread") {
        writeln!(out, "\nThread summary")?;
        for (t, n) in &r.threads {
            writeln!(out, "\tThread: {}, name: \"{n}\"", ptr(*t))?;
        }
    }
    if want("domain") {
        writeln!(out, "\nDomain summary")?;
        for (d, n) in &r.domains {
            writeln!(out, "\tDomain: {}, friendly name: \"{n}\"", ptr(*d))?;
        }
    }
    if want("context") {
        writeln!(out, "\nContext summary")?;
        for (c, d) in &r.contexts {
            writeln!(out, "\tContext: {}, domain: {}", ptr(*c), ptr(*d))?;
        }
    }
    if want("heapshot") && !r.heapshots.is_empty() {
        writeln!(out, "\nHeap shot summary")?;
        let mut prev: Option<HashMap<&str, (u64, u64)>> = None;
        for (i, h) in r.heapshots.iter().enumerate() {
            writeln!(
                out,
                "\n\tHeap shot {i} at {:.3} secs: size: {}, object count: {}, class count: {}, roots: {}",
                h.time_ns as f64 / 1e9,
                h.size,
                h.objects,
                h.classes.len(),
                h.roots
            )?;
            writeln!(
                out,
                "\t{:>10} {:>10} {:>8} Class name",
                "Bytes", "Count", "Average"
            )?;
            let limit = if verbose { usize::MAX } else { 30 };
            for (n, b, c) in h.classes.iter().take(limit) {
                write!(out, "\t{b:10} {c:10} {:8} {n}", b / (*c).max(1))?;
                if let Some((pb, pc)) = prev.as_ref().and_then(|p| p.get(n.as_str())) {
                    write!(
                        out,
                        " (bytes: {:+}, count: {:+})",
                        *b as i64 - *pb as i64,
                        *c as i64 - *pc as i64
                    )?;
                }
                writeln!(out)?;
                if tr.is_some() {
                    if let Some((roots, pinning)) = h.root_refs.get(n) {
                        writeln!(out, "\t\t{roots} root references ({pinning} pinning)")?;
                    }
                    for (from, k) in h.refs.get(n).into_iter().flatten() {
                        writeln!(out, "\t\t{k} references from: {from}")?;
                    }
                }
            }
            prev = Some(
                h.classes
                    .iter()
                    .map(|(n, b, c)| (n.as_str(), (*b, *c)))
                    .collect(),
            );
        }
    }
    if want("counters") && !r.counters.is_empty() {
        writeln!(out, "\nCounters:")?;
        let mut last = None;
        let mut shown: Vec<&Counter> = r.counters.iter().collect();
        if !verbose {
            // mprof-report's fixed list, in its order
            shown = DEFAULT_COUNTERS
                .iter()
                .filter_map(|(sec, n)| {
                    r.counters
                        .iter()
                        .find(|c| c.section == *sec && c.name == *n)
                })
                .collect();
        }
        for c in shown {
            if last != Some(c.section) {
                writeln!(out, "\t{}:", section_name(c.section))?;
                last = Some(c.section);
            }
            writeln!(out, "\t\t{:<30} : {}", c.name, c.value)?;
        }
    }
    if want("stats") {
        writeln!(out, "\nMlpd statistics")?;
        writeln!(
            out,
            "\tBuffer count {}\toverhead {} (48 bytes per header)",
            r.buffers,
            r.buffers * 48
        )?;
        writeln!(out, "\nEvent details:")?;
        for &(b, c, mn, mx, by) in &r.stats {
            writeln!(
                out,
                "\t{:>16}\t{:#04x}\tcount {c:6}\tmin {mn:3}\tmax {mx:6}\tbytes {by}",
                EventType::of(b).name(),
                b & EXINFO_MASK
            )?;
        }
    }
    Ok(())
}
