//! `info`, `dump` and `validate` for Mono log profiler files (the `Format::Mlpd` arms).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use profkit_mlpd::raw::EventType;
use profkit_mlpd::{Error, EventKind, File};
use serde_json::json;

use crate::input::Input;
use crate::output;

/// Prints decoding problems on stderr (each skipped the rest of its buffer).
pub fn report_problems(name: &str, problems: &[Error], skipped: u64) {
    for p in problems.iter().take(20) {
        if p.is_truncation() {
            output::print_warning(&format!("{name}: truncated: {p}"));
        } else {
            output::print_warning(&format!("{name}: {p}"));
        }
    }
    if problems.len() > 20 {
        output::print_warning(&format!("{name}: {} more problems", problems.len() - 20));
    }
    if !problems.is_empty() {
        output::print_note(&format!(
            "{name}: {} problem(s); {skipped} byte(s) of event data skipped",
            problems.len()
        ));
    }
}

fn parse<'a>(input: &'a Input) -> Result<File<'a>> {
    File::parse(&input.data).map_err(|e| anyhow!("{}: {e}", input.name))
}

/// `profkit info` on an .mlpd file.
pub fn info(input: Input, json_out: bool, out: &mut dyn Write) -> Result<()> {
    let file = parse(&input)?;
    let h = &file.header;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut threads = BTreeSet::new();
    let (mut buffers, mut events, mut problems) = (0u64, 0u64, Vec::new());
    let (mut tmin, mut tmax) = (u64::MAX, 0u64);
    for b in file.buffers() {
        let b = match b {
            Ok(b) => b,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        buffers += 1;
        threads.insert(b.header.thread_id);
        tmin = tmin.min(b.header.time_base);
        for ev in b.events() {
            match ev {
                Ok(e) => {
                    events += 1;
                    tmax = tmax.max(e.time);
                    *counts
                        .entry(format!(
                            "{}/{:#04x}",
                            EventType(e.byte & 0xf).name(),
                            e.byte & 0xf0
                        ))
                        .or_default() += 1;
                }
                Err(e) => problems.push(e),
            }
        }
    }
    let span = tmax.saturating_sub(if tmin == u64::MAX { tmax } else { tmin });
    if json_out {
        let v = json!({
            "schema": "profkit.info/1", "file": input.name, "format": "mlpd",
            "compression": input.compression, "size": input.data.len(),
            "header": {"major": h.major, "minor": h.minor, "data_version": h.data_version,
                       "ptrsize": h.ptrsize, "pid": h.pid, "port": h.port, "args": h.args,
                       "arch": h.arch, "os": h.os, "startup_ms": h.startup_ms, "size": h.size},
            "buffers": buffers, "events": events, "threads": threads.len(),
            "time_span_ns": span, "counts": counts,
            "problems": problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        });
        serde_json::to_writer(&mut *out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{}: Mono log profiler file (mlpd){}",
            input.name,
            if input.compression.is_some() {
                ", gzip"
            } else {
                ""
            }
        )?;
        writeln!(
            out,
            "  profiler version {}.{}, data version {}, pointer size {}",
            h.major, h.minor, h.data_version, h.ptrsize
        )?;
        if h.major >= 1 {
            writeln!(
                out,
                "  arguments: {}\n  arch: {}, os: {}",
                h.args, h.arch, h.os
            )?;
        }
        writeln!(
            out,
            "  pid {}, port {}, timer overhead {} ns",
            h.pid, h.port, h.timer_overhead
        )?;
        writeln!(
            out,
            "  size {} bytes, header {} bytes, {buffers} buffers, {events} events, {} threads",
            input.data.len(),
            h.size,
            threads.len()
        )?;
        writeln!(out, "  time span {:.6} s", span as f64 / 1e9)?;
        for (k, n) in &counts {
            writeln!(out, "  {k:<24} {n:>10}")?;
        }
    }
    report_problems(&input.name, &problems, 0);
    Ok(())
}

fn kind_text(k: &EventKind<'_>) -> String {
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match *k {
        EventKind::Enter { method } => format!("enter method={method:#x}"),
        EventKind::Leave { method } => format!("leave method={method:#x}"),
        EventKind::ExcLeave { method } => format!("exc_leave method={method:#x}"),
        EventKind::Jit {
            method,
            code,
            size,
            name,
        } => format!(
            "jit method={method:#x} code={code:#x} size={size} name={:?}",
            s(name)
        ),
        EventKind::Alloc {
            class,
            obj,
            size,
            backtrace,
        } => format!(
            "alloc class={class:x?} obj={obj:#x} size={size} frames={:x?}",
            backtrace.collect::<Vec<_>>()
        ),
        EventKind::Metadata(m) => format!(
            "metadata {:?} {} ptr={:#x} image={:#x} domain={:#x} class={:#x} name={:?}",
            m.action,
            profkit_mlpd::raw::mtype_name(m.mtype),
            m.ptr,
            m.image,
            m.domain,
            m.class,
            s(m.name)
        ),
        EventKind::Throw { obj, backtrace } => format!(
            "throw obj={obj:#x} frames={:x?}",
            backtrace.collect::<Vec<_>>()
        ),
        EventKind::Monitor {
            event,
            obj,
            backtrace,
        } => format!(
            "monitor event={event} obj={obj:#x} frames={:x?}",
            backtrace.collect::<Vec<_>>()
        ),
        EventKind::SampleHit {
            thread,
            ips,
            frames,
            ..
        } => format!(
            "sample thread={thread:#x} ips={:x?} frames={:x?}",
            ips.collect::<Vec<_>>(),
            frames.collect::<Vec<_>>()
        ),
        EventKind::GcMove { objects } => format!("gc_move {:x?}", objects.collect::<Vec<_>>()),
        EventKind::HeapObject {
            obj,
            class,
            size,
            generation,
            refs,
        } => format!(
            "heap_object obj={obj:#x} class={class:x?} size={size} gen={generation:?} refs={}",
            refs.len()
        ),
        EventKind::RootRegister {
            start,
            size,
            source,
            key,
            name,
        } => format!(
            "root_register start={start:#x} size={size} source={source} key={key:#x} name={:?}",
            s(name)
        ),
        EventKind::JitHelper {
            htype,
            addr,
            size,
            name,
        } => format!(
            "jit_helper type={htype} addr={addr:#x} size={size} name={:?}",
            s(name)
        ),
        EventKind::AotId { id } => format!("aot_id {:?}", s(id)),
        EventKind::Usym { addr, size, name } => {
            format!("usym addr={addr:#x} size={size} name={:?}", s(name))
        }
        ref other => {
            let d = format!("{other:?}");
            // keep lists short: lazily decoded lists print their cursor
            d.split(" { c: Cursor").next().unwrap_or(&d).to_string()
        }
    }
}

/// `profkit dump` on an .mlpd file: one line per buffer and per event.
pub fn dump(input: Input, json_out: bool) -> Result<ExitCode> {
    let file = parse(&input)?;
    let mut out = output::stdout();
    let h = &file.header;
    if json_out {
        serde_json::to_writer(
            &mut out,
            &json!({"record": "header", "major": h.major, "minor": h.minor, "data_version": h.data_version, "ptrsize": h.ptrsize, "pid": h.pid, "args": h.args}),
        )?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "header: {}.{} data {} ptrsize {} pid {} args {:?}",
            h.major, h.minor, h.data_version, h.ptrsize, h.pid, h.args
        )?;
    }
    let mut problems = Vec::new();
    for b in file.buffers() {
        let b = match b {
            Ok(b) => b,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let bh = b.header;
        if json_out {
            serde_json::to_writer(
                &mut out,
                &json!({"record": "buffer", "index": b.index, "offset": b.offset, "len": bh.len, "thread": bh.thread_id, "time_base": bh.time_base, "truncated": b.truncated}),
            )?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "buffer #{} at {:#x}: len {} thread {:#x} time_base {}{}",
                b.index,
                b.offset,
                bh.len,
                bh.thread_id,
                bh.time_base,
                if b.truncated { " (truncated)" } else { "" }
            )?;
        }
        for ev in b.events() {
            match ev {
                Ok(e) => {
                    let text = kind_text(&e.kind);
                    if json_out {
                        serde_json::to_writer(
                            &mut out,
                            &json!({"record": "event", "offset": e.offset, "byte": e.byte, "type": EventType(e.byte & 0xf).name(), "time": e.time, "event": text}),
                        )?;
                        writeln!(out)?;
                    } else {
                        writeln!(out, "  {:#08x} {:>12} {}", e.offset, e.time, text)?;
                    }
                }
                Err(e) => problems.push(e),
            }
        }
    }
    out.flush()?;
    report_problems(&input.name, &problems, 0);
    Ok(ExitCode::SUCCESS)
}

/// `profkit validate` on an .mlpd file: decoding errors (spec violations) and known producer
/// quirks (warnings). Returns true when there were errors.
pub fn validate(
    input: Input,
    json_out: bool,
    errors_only: bool,
    out: &mut dyn Write,
) -> Result<bool> {
    let file = parse(&input)?;
    let mut errors: Vec<String> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    let h = &file.header;
    if h.flags != 0 {
        errors.push(format!("header flags {} (must be 0)", h.flags));
    }
    if h.ptrsize != 4 && h.ptrsize != 8 {
        errors.push(format!("pointer size {} (expected 4 or 8)", h.ptrsize));
    }
    let mut wraps = 0u64;
    for b in file.buffers() {
        let b = match b {
            Ok(b) => b,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        let mut last = b.header.time_base;
        let mut move_odd = 0u64;
        for ev in b.events() {
            match ev {
                Ok(e) => {
                    if e.time < last {
                        wraps += 1;
                    }
                    last = e.time;
                    if let EventKind::GcMove { objects } = e.kind {
                        if objects.len() % 2 != 0 {
                            move_odd += 1;
                        }
                    }
                }
                Err(e) => errors.push(format!(
                    "buffer #{} (thread {:#x}): {e}",
                    b.index, b.header.thread_id
                )),
            }
        }
        if move_odd > 0 {
            errors.push(format!(
                "buffer #{}: {move_odd} GC_MOVE event(s) with an odd object count",
                b.index
            ));
        }
    }
    if wraps > 0 {
        warnings.push(format!("mono-time-wrap: {wraps} negative time delta(s) encoded as wrapped 10-byte ULEBs (Mono writes JIT and sample events with stored timestamps; not corruption)"));
    }
    if json_out {
        serde_json::to_writer(
            &mut *out,
            &json!({
                "schema": "profkit.validate/1", "file": input.name, "format": "mlpd",
                "errors": errors, "warnings": if errors_only { Vec::new() } else { warnings.clone() },
                "error_count": errors.len(), "warning_count": warnings.len(),
            }),
        )?;
        writeln!(out)?;
    } else {
        for e in &errors {
            writeln!(out, "{}: error: {e}", input.name)?;
        }
        if !errors_only {
            for w in &warnings {
                writeln!(out, "{}: warning: {w}", input.name)?;
            }
        }
        writeln!(
            out,
            "{}: {} error(s), {} warning(s)",
            input.name,
            errors.len(),
            warnings.len()
        )?;
    }
    Ok(!errors.is_empty())
}
