//! The XRay parts of the commands: opening traces (binary or YAML), function names from `-m`,
//! and `info`, `dump`, `validate`, `convert` for XRay input. Logic lives in profkit-xray and
//! profkit-model; this module only picks and prints.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use profkit_model::{ingest, FunctionTable};
use profkit_xray::trace_yaml;
use profkit_xray::trace_yaml::RecordFormatter;
use profkit_xray::verify::{verify, Severity};
use profkit_xray::{
    BufferEvents, Event, EventKind, FdrEntry, FdrRecord, InstrMap, Symbolizer, ThreadKey,
    ThreadState, Trace,
};
use rayon::prelude::*;
use serde_json::json;

use super::{open_detected, unsupported};
use crate::cli::InputFormat;
use crate::detect::Format;
use crate::input::{self, Input};
use crate::output;

/// An opened XRay trace: the input, plus the binary re-encoding when the input was YAML.
pub struct Loaded {
    pub input: Input,
    pub format: Format,
    encoded: Option<Vec<u8>>,
}

impl Loaded {
    /// The binary trace bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.encoded {
            Some(v) => v,
            None => &self.input.data,
        }
    }

    /// Tells the kernel that bytes `start..end` of a memory-mapped input will not be read again
    /// soon, so their pages leave the resident set (they are read back from the page cache if
    /// they are needed after all). Does nothing for other inputs.
    pub fn release(&self, start: u64, end: u64) {
        #[cfg(unix)]
        if let (None, crate::input::Data::Mapped(m)) = (&self.encoded, &self.input.data) {
            let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) else {
                return;
            };
            if start < end && end <= m.len() {
                // SAFETY: the map is read-only and file-backed, so MADV_DONTNEED only drops
                // page-table entries; later reads fault the same file bytes back in.
                let _ = unsafe {
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
                };
            }
        }
        #[cfg(not(unix))]
        let _ = (start, end);
    }

    /// Parses the trace.
    pub fn trace(&self) -> Result<Trace<'_>> {
        Trace::parse(self.bytes()).map_err(|e| anyhow!("{}: {e}", self.input.name))
    }
}

/// Opens an XRay trace (binary or llvm-xray YAML) for command `what`.
pub fn load(path: &Path, forced: Option<InputFormat>, what: &str) -> Result<Loaded> {
    let (input, format) = open_detected(path, forced)?;
    from_input(input, format, what)
}

/// Wraps an already opened input.
pub fn from_input(input: Input, format: Format, what: &str) -> Result<Loaded> {
    match format {
        Format::Xray => Ok(Loaded {
            input,
            format,
            encoded: None,
        }),
        Format::XrayYaml => {
            let text = std::str::from_utf8(&input.data)
                .map_err(|e| anyhow!("{}: not UTF-8 text: {e}", input.name))?;
            let y = trace_yaml::read_yaml(text).map_err(|e| anyhow!("{}: {e}", input.name))?;
            let bin = trace_yaml::yaml_to_binary(&y).map_err(|e| anyhow!("{}: {e}", input.name))?;
            Ok(Loaded {
                input,
                format,
                encoded: Some(bin),
            })
        }
        other => Err(unsupported(&input, other, what)),
    }
}

/// Function names from the instrumented binary (`-m`); empty without one (ids print as `#N`).
pub fn names(bin: Option<&Path>) -> Result<FunctionTable> {
    let Some(bin) = bin else {
        return Ok(FunctionTable::new());
    };
    let inp = input::open(bin)?;
    let map = InstrMap::from_object(&inp.data)
        .map_err(|e| anyhow!("{}: cannot read the instrumentation map: {e}", inp.name))?;
    let sym = Symbolizer::new(&inp.data).ok();
    Ok(ingest::xray::function_table(&map, sym.as_ref()))
}

/// Warns about decoding problems (lenient commands skip what they cannot use).
pub fn report_problems(
    name: &str,
    problems: &[profkit_xray::Error],
    truncation: Option<&profkit_xray::Error>,
) {
    if let Some(t) = truncation {
        output::print_warning(&format!("{name}: truncated: {t}"));
    }
    if !problems.is_empty() {
        output::print_warning(&format!(
            "{name}: skipped {} undecodable record(s); first: {}",
            problems.len(),
            problems.first().map(|p| p.to_string()).unwrap_or_default()
        ));
    }
}

/// `profkit info` for an XRay trace.
pub fn info(input: Input, format: Format, json_out: bool, out: &mut dyn Write) -> Result<()> {
    let l = from_input(input, format, "info")?;
    let trace = l.trace()?;
    let h = trace.header;
    let decoded = trace.decode();
    let mut kinds: Vec<(&str, u64)> = Vec::new();
    let mut first = u64::MAX;
    let mut last = 0u64;
    for ev in decoded.events() {
        let name = ev.kind.llvm_name();
        match kinds.iter_mut().find(|(k, _)| *k == name) {
            Some((_, n)) => *n += 1,
            None => kinds.push((name, 1)),
        }
        first = first.min(ev.tsc);
        last = last.max(ev.tsc);
    }
    let threads: Vec<_> = decoded
        .threads
        .iter()
        .map(|t| json!({"pid": t.key.pid, "tid": t.key.tid, "events": t.events.len()}))
        .collect();
    let span_ns = if first <= last {
        h.ticks_to_ns(last - first)
    } else {
        0
    };
    let v = json!({
        "schema": "profkit.info/1",
        "file": l.input.name,
        "format": l.format.name(),
        "size": l.input.data.len(),
        "mode": if h.is_fdr() { "fdr" } else { "basic" },
        "version": h.version,
        "header": {"type": h.trace_type.0, "constant_tsc": h.constant_tsc(), "nonstop_tsc": h.nonstop_tsc(),
                   "cycle_frequency": h.cycle_frequency, "buffer_size": h.buffer_size},
        "buffers": trace.layout().buffers.len(),
        "records": decoded.records,
        "events": kinds.iter().map(|(k, n)| ((*k).to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "threads": threads,
        "tsc_first": if first == u64::MAX { None } else { Some(first) },
        "tsc_last": if first == u64::MAX { None } else { Some(last) },
        "duration_ns": span_ns,
        "problems": decoded.problems.len(),
        "truncated": decoded.truncation.as_ref().map(|t| t.to_string()),
    });
    if json_out {
        serde_json::to_writer(&mut *out, &v)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "file:     {}", l.input.name)?;
    writeln!(
        out,
        "format:   LLVM XRay {} mode version {}{}, {} bytes",
        if h.is_fdr() { "FDR" } else { "basic" },
        h.version,
        if l.format == Format::XrayYaml {
            " (YAML)"
        } else {
            ""
        },
        l.input.data.len()
    )?;
    writeln!(
        out,
        "header:   cycle frequency {} Hz, constant_tsc {}, nonstop_tsc {}, buffer size {}",
        h.cycle_frequency,
        h.constant_tsc(),
        h.nonstop_tsc(),
        h.buffer_size
    )?;
    if h.is_fdr() {
        writeln!(out, "buffers:  {}", trace.layout().buffers.len())?;
    }
    writeln!(out, "records:  {}", decoded.records)?;
    for (k, n) in &kinds {
        writeln!(out, "  {k:<30} {n:>10}")?;
    }
    writeln!(out, "threads:  {}", decoded.threads.len())?;
    for t in &decoded.threads {
        writeln!(
            out,
            "  pid {:<8} tid {:<8} {:>10} events",
            t.key.pid,
            t.key.tid,
            t.events.len()
        )?;
    }
    writeln!(
        out,
        "time:     {span_ns} ns between the first and the last event"
    )?;
    if !decoded.problems.is_empty() {
        writeln!(out, "problems: {}", decoded.problems.len())?;
    }
    if let Some(t) = &decoded.truncation {
        writeln!(out, "truncated: {t}")?;
    }
    Ok(())
}

fn payload(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// One record as `llvm-xray fdr-dump` prints it.
fn llvm_record(rec: &FdrRecord<'_>) -> String {
    match rec {
        FdrRecord::Function {
            kind,
            func_id,
            tsc_delta,
        } => {
            let k = match kind.0 {
                0 => "Function Enter",
                1 => "Function Exit",
                2 => "Function Tail Exit",
                3 => "Function Enter With Arg",
                _ => "Function (invalid kind)",
            };
            format!("<{k}: #{func_id} delta = +{tsc_delta}>")
        }
        FdrRecord::NewBuffer { tid } => format!("<Thread ID: {tid}>"),
        FdrRecord::EndOfBuffer => "<End of Buffer>".into(),
        FdrRecord::NewCpuId { cpu, tsc } => format!("<CPU: id = {cpu}, tsc = {tsc}>"),
        FdrRecord::TscWrap { tsc } => format!("<TSC Wrap: base = {tsc}>"),
        FdrRecord::WalltimeMarker { seconds, micros } => {
            format!("<Wall Time: seconds = {seconds}.{micros:06}>")
        }
        FdrRecord::CustomEvent { size, time, data } => match time {
            profkit_xray::CustomEventTime::Delta(d) => format!(
                "<Custom Event: delta = +{d}, size = {size}, data = '{}'>",
                payload(data)
            ),
            profkit_xray::CustomEventTime::Absolute { tsc, cpu } => format!(
                "<Custom Event: tsc = {tsc}, cpu = {}, size = {size}, data = '{}'>",
                cpu.unwrap_or(0),
                payload(data)
            ),
        },
        FdrRecord::CallArgument { arg } => {
            format!("<Call Argument: data = {arg} (hex = {arg:#x})>")
        }
        FdrRecord::BufferExtents { size } => format!("<Buffer: size = {size} bytes>"),
        // llvm-xray 14 omits the closing '>' here; profkit prints it.
        FdrRecord::TypedEvent {
            size,
            tsc_delta,
            event_type,
            data,
        } => format!(
            "<Typed Event: delta = +{tsc_delta}, type = {event_type}, size = {size}, data = '{}'>",
            payload(data)
        ),
        FdrRecord::Pid { pid } => format!("<PID: {pid}>"),
        FdrRecord::UnknownMetadata { kind, .. } => format!("<Unknown Metadata: kind = {}>", kind.0),
    }
}

fn record_json(rec: &FdrRecord<'_>) -> serde_json::Value {
    match rec {
        FdrRecord::Function {
            kind,
            func_id,
            tsc_delta,
        } => json!({"type": "Function", "kind": kind.0, "func_id": func_id, "delta": tsc_delta}),
        FdrRecord::NewBuffer { tid } => json!({"type": "NewBuffer", "tid": tid}),
        FdrRecord::EndOfBuffer => json!({"type": "EndOfBuffer"}),
        FdrRecord::NewCpuId { cpu, tsc } => json!({"type": "NewCPUId", "cpu": cpu, "tsc": tsc}),
        FdrRecord::TscWrap { tsc } => json!({"type": "TSCWrap", "tsc": tsc}),
        FdrRecord::WalltimeMarker { seconds, micros } => {
            json!({"type": "WalltimeMarker", "seconds": seconds, "micros": micros})
        }
        FdrRecord::CustomEvent { size, time, data } => {
            let (tsc, cpu, delta) = match time {
                profkit_xray::CustomEventTime::Delta(d) => (None, None, Some(*d)),
                profkit_xray::CustomEventTime::Absolute { tsc, cpu } => (Some(*tsc), *cpu, None),
            };
            json!({"type": "CustomEvent", "size": size, "tsc": tsc, "cpu": cpu, "delta": delta, "data": payload(data)})
        }
        FdrRecord::CallArgument { arg } => json!({"type": "CallArgument", "arg": arg}),
        FdrRecord::BufferExtents { size } => json!({"type": "BufferExtents", "size": size}),
        FdrRecord::TypedEvent {
            size,
            tsc_delta,
            event_type,
            data,
        } => {
            json!({"type": "TypedEvent", "size": size, "delta": tsc_delta, "event_type": event_type, "data": payload(data)})
        }
        FdrRecord::Pid { pid } => json!({"type": "Pid", "pid": pid}),
        FdrRecord::UnknownMetadata { kind, .. } => {
            json!({"type": "UnknownMetadata", "kind": kind.0})
        }
    }
}

/// `profkit dump` for an XRay trace: `llvm-xray fdr-dump` lines (FDR), llvm's YAML record lines
/// (basic), or NDJSON.
pub fn dump(input: Input, format: Format, json_out: bool, verify_blocks: bool) -> Result<ExitCode> {
    let l = from_input(input, format, "dump")?;
    let trace = l.trace()?;
    let mut out = output::stdout();
    if !trace.header.is_fdr() {
        for ev in trace.decode().events() {
            if json_out {
                serde_json::to_writer(
                    &mut out,
                    &json!({"offset": ev.offset, "kind": ev.kind.llvm_name(), "func_id": ev.func_id,
                            "tsc": ev.tsc, "cpu": ev.cpu, "tid": ev.tid, "pid": ev.pid, "args": ev.args.to_vec()}),
                )?;
                writeln!(out)?;
            } else {
                trace_yaml::write_event(&mut out, ev, ev.func_id, &ev.func_id.to_string())?;
            }
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut problems = 0u64;
    let mut in_block = false;
    let mut in_body = false;
    for entry in trace.fdr_records() {
        match entry {
            FdrEntry::Record(item) => {
                if json_out {
                    let mut v = record_json(&item.record);
                    if let Some(o) = v.as_object_mut() {
                        o.insert("offset".into(), json!(item.offset));
                        o.insert("index".into(), json!(item.index));
                    }
                    serde_json::to_writer(&mut out, &v)?;
                    writeln!(out)?;
                    continue;
                }
                let line = llvm_record(&item.record);
                if !verify_blocks {
                    writeln!(out, "{line}")?;
                    continue;
                }
                match item.record {
                    FdrRecord::BufferExtents { .. } => {}
                    FdrRecord::NewBuffer { .. } => {
                        writeln!(out, "\n[New Block]\nPreamble: \n{line}")?;
                        in_block = true;
                        in_body = false;
                    }
                    FdrRecord::WalltimeMarker { .. } | FdrRecord::Pid { .. } if !in_body => {
                        writeln!(out, "{line}")?
                    }
                    FdrRecord::NewCpuId { .. } | FdrRecord::TscWrap { .. } => {
                        if !in_body && in_block {
                            writeln!(out, "\nBody:")?;
                            in_body = true;
                        }
                        writeln!(out, " {line}\n")?;
                    }
                    FdrRecord::Function { .. } => writeln!(out, "-  {line}")?,
                    FdrRecord::CustomEvent { .. } | FdrRecord::TypedEvent { .. } => {
                        writeln!(out, "*  {line}")?
                    }
                    FdrRecord::CallArgument { .. } => writeln!(out, " : {line}")?,
                    _ => writeln!(out, "{line}")?,
                }
            }
            FdrEntry::Skip(s) => {
                if json_out {
                    writeln!(
                        out,
                        "{}",
                        json!({"type": "Skip", "offset": s.offset, "len": s.len, "junk": s.kind == profkit_xray::SkipKind::Junk})
                    )?;
                }
            }
            FdrEntry::Problem(e) => {
                problems += 1;
                out.flush()?;
                output::print_warning(&format!("{}: {e}", l.input.name));
            }
        }
    }
    out.flush()?;
    Ok(if problems > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// `profkit validate` for an XRay trace.
pub fn validate(
    input: Input,
    format: Format,
    json_out: bool,
    errors_only: bool,
    out: &mut dyn Write,
) -> Result<bool> {
    let l = from_input(input, format, "validate")?;
    let trace = l.trace()?;
    let report = verify(&trace);
    let errors: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    let warnings: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .collect();
    if json_out {
        let list = |v: &[&profkit_xray::Finding]| -> Vec<serde_json::Value> {
            v.iter()
                .map(|f| json!({"offset": f.offset, "record": f.record, "code": f.code, "message": f.message}))
                .collect()
        };
        let v = json!({
            "schema": "profkit.validate/1",
            "file": l.input.name,
            "format": "xray",
            "records": report.records,
            "errors": list(&errors),
            "warnings": if errors_only { Vec::new() } else { list(&warnings) },
        });
        serde_json::to_writer(&mut *out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{}: xray ({} records, {} blocks): {} error{}, {} warning{}",
            l.input.name,
            report.records,
            report.blocks,
            errors.len(),
            if errors.len() == 1 { "" } else { "s" },
            warnings.len(),
            if warnings.len() == 1 { "" } else { "s" },
        )?;
        for f in &report.findings {
            let is_error = f.severity == Severity::Error;
            if errors_only && !is_error {
                continue;
            }
            let style = output::severity_style(is_error);
            let label = if is_error { "error" } else { "warning" };
            let place = match f.record {
                Some(r) => format!("record #{r} at offset {:#x}", f.offset),
                None => format!("offset {:#x}", f.offset),
            };
            writeln!(
                out,
                "  {style}{label}{style:#}[{}] {place}: {}",
                f.code, f.message
            )?;
        }
    }
    Ok(report.has_errors())
}

/// `profkit convert` of an XRay trace to llvm-xray's YAML.
pub fn convert_yaml(
    input: Input,
    format: Format,
    instr_map: Option<&Path>,
    symbolize: bool,
    sort: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let l = from_input(input, format, "convert")?;
    let trace = l.trace()?;
    let names = if symbolize {
        names(instr_map)?
    } else {
        FunctionTable::new()
    };
    if trace.header.is_fdr() && convert_yaml_streaming(&trace, &names, symbolize, sort, out)? {
        return Ok(());
    }
    let decoded = trace.decode();
    report_problems(
        &l.input.name,
        &decoded.problems,
        decoded.truncation.as_ref(),
    );
    // llvm prints the previous function's id on custom and typed events.
    let mut prev: HashMap<(u32, u32), u32> = HashMap::new();
    let mut ids: Vec<u32> = Vec::with_capacity(decoded.event_count());
    for ev in decoded.events() {
        let key = (ev.pid, ev.tid);
        if matches!(ev.kind, EventKind::CustomEvent | EventKind::TypedEvent) {
            ids.push(prev.get(&key).copied().unwrap_or(0));
        } else {
            prev.insert(key, ev.func_id);
            ids.push(ev.func_id);
        }
    }
    let mut order: Vec<usize> = (0..ids.len()).collect();
    let all: Vec<_> = decoded.events().collect();
    if sort {
        order.sort_by_key(|&i| all.get(i).map(|e| e.tsc).unwrap_or(0));
    }
    let mut name_cache: HashMap<u32, String> = HashMap::new();
    trace_yaml::write_header(out, &trace.header)?;
    for i in order {
        let (Some(ev), Some(&id)) = (all.get(i), ids.get(i)) else {
            continue;
        };
        let name = name_cache.entry(id).or_insert_with(|| {
            if symbolize {
                names.name(profkit_model::FuncId(id))
            } else {
                id.to_string()
            }
        });
        trace_yaml::write_event(out, ev, id, name)?;
    }
    trace_yaml::write_footer(out)?;
    out.flush().context("cannot write")?;
    Ok(())
}

/// What one FDR buffer looks like to the streaming YAML writer.
#[derive(Clone, Copy, Debug)]
struct BufInfo {
    /// Decodes cleanly on its own: no problem, no event before the TSC is set, one thread.
    ok: bool,
    /// Thread of its events (`None`: no events).
    key: Option<ThreadKey>,
    first_tsc: u64,
    last_tsc: u64,
    monotonic: bool,
}

fn scan_buffer(trace: &Trace<'_>, bi: usize) -> BufInfo {
    let mut info = BufInfo {
        ok: true,
        key: None,
        first_tsc: 0,
        last_tsc: 0,
        monotonic: true,
    };
    let mut it = trace.buffer_events(bi, ThreadState::default());
    for item in it.by_ref() {
        let Ok(ev) = item else {
            info.ok = false;
            break;
        };
        let k = ThreadKey {
            pid: ev.pid,
            tid: ev.tid,
        };
        match info.key {
            None => {
                info.key = Some(k);
                info.first_tsc = ev.tsc;
            }
            Some(k0) if k0 != k => {
                info.ok = false;
                break;
            }
            Some(_) => {
                if ev.tsc < info.last_tsc {
                    info.monotonic = false;
                }
            }
        }
        info.last_tsc = ev.tsc;
    }
    if it.used_unknown_tsc() {
        info.ok = false;
    }
    info
}

/// One thread's events in file order, with the id llvm prints (custom and typed events repeat
/// the previous function's id).
struct Stream<'t, 'a> {
    trace: &'t Trace<'a>,
    bufs: Vec<usize>,
    next_buf: usize,
    it: Option<BufferEvents<'a>>,
    prev_id: u32,
}

impl<'a> Stream<'_, 'a> {
    fn next_event(&mut self) -> Option<(Event<'a>, u32)> {
        loop {
            if let Some(it) = &mut self.it {
                match it.next() {
                    Some(Ok(ev)) => {
                        let id =
                            if matches!(ev.kind, EventKind::CustomEvent | EventKind::TypedEvent) {
                                self.prev_id
                            } else {
                                self.prev_id = ev.func_id;
                                ev.func_id
                            };
                        return Some((ev, id));
                    }
                    Some(Err(_)) => continue,
                    None => self.it = None,
                }
            }
            let bi = *self.bufs.get(self.next_buf)?;
            self.next_buf += 1;
            self.it = Some(self.trace.buffer_events(bi, ThreadState::default()));
        }
    }
}

/// The `func-id: …, function: …, ` segments, by id.
#[derive(Default)]
struct Segments {
    dense: Vec<Option<Vec<u8>>>,
    sparse: HashMap<u32, Vec<u8>>,
}

impl Segments {
    fn ensure(&mut self, id: u32, make: impl FnOnce() -> Vec<u8>) {
        if id < (1 << 20) {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            if let Some(slot) = self.dense.get_mut(i) {
                if slot.is_none() {
                    *slot = Some(make());
                }
            }
        } else {
            self.sparse.entry(id).or_insert_with(make);
        }
    }

    fn get(&self, id: u32) -> &[u8] {
        let v = if id < (1 << 20) {
            self.dense.get(id as usize).and_then(|s| s.as_ref())
        } else {
            self.sparse.get(&id)
        };
        v.map(Vec::as_slice).unwrap_or_default()
    }
}

const BATCH: usize = 32 * 1024;

/// Streams an FDR trace as llvm-xray YAML: each thread's buffers are decoded in file order and
/// the threads merged by TSC (ties in thread order, which is what a stable sort of all events
/// gives since each thread's events are already in TSC order); records are formatted in
/// parallel batches and written by the calling thread as they come. Returns `false` (nothing
/// written) when the trace needs the general path: decoding problems, skipped bytes, buffers
/// that depend on earlier ones, or (when sorting) a thread whose TSCs go backwards.
fn convert_yaml_streaming(
    trace: &Trace<'_>,
    names: &FunctionTable,
    symbolize: bool,
    sort: bool,
    out: &mut dyn Write,
) -> Result<bool> {
    if trace
        .layout()
        .segments
        .iter()
        .any(|s| !matches!(s, profkit_xray::Segment::Buffer(_)))
    {
        return Ok(false);
    }
    let n = trace.layout().buffers.len();
    let infos: Vec<BufInfo> = (0..n)
        .into_par_iter()
        .map(|bi| scan_buffer(trace, bi))
        .collect();
    if infos.iter().any(|i| !i.ok) {
        return Ok(false);
    }
    // Threads in order of their first event in the file.
    let mut threads: Vec<(usize, Vec<usize>)> = Vec::new();
    for (key, bufs) in ingest::xray::thread_buffers(trace) {
        let mut first = None;
        let mut last_tsc: Option<u64> = None;
        for &bi in &bufs {
            let Some(info) = infos.get(bi) else {
                return Ok(false);
            };
            let Some(k) = info.key else { continue };
            if k != key {
                return Ok(false);
            }
            first.get_or_insert(bi);
            if sort {
                if !info.monotonic || last_tsc.is_some_and(|t| t > info.first_tsc) {
                    return Ok(false);
                }
                last_tsc = Some(info.last_tsc);
            }
        }
        if let Some(f) = first {
            threads.push((f, bufs));
        }
    }
    threads.sort_by_key(|(f, _)| *f);
    let mut streams: Vec<Stream<'_, '_>> = threads
        .into_iter()
        .map(|(_, bufs)| Stream {
            trace,
            bufs,
            next_buf: 0,
            it: None,
            prev_id: 0,
        })
        .collect();
    trace_yaml::write_header(out, &trace.header)?;
    let fmt = RecordFormatter::new();
    let group = rayon::current_num_threads().max(1) * 4;
    let mut write_err: Option<std::io::Error> = None;
    std::thread::scope(|sc| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(group * 2);
        let fmt = &fmt;
        sc.spawn(move || {
            let mut heads: Vec<Option<(Event<'_>, u32)>> =
                streams.iter_mut().map(Stream::next_event).collect();
            let mut segs = Segments::default();
            let mut cur = 0usize;
            loop {
                let mut batches: Vec<Vec<(Event<'_>, u32)>> = Vec::with_capacity(group);
                let mut done = false;
                while batches.len() < group && !done {
                    let mut batch = Vec::with_capacity(BATCH);
                    while batch.len() < BATCH {
                        let pick = if sort {
                            let mut best: Option<(usize, u64)> = None;
                            for (i, h) in heads.iter().enumerate() {
                                if let Some((ev, _)) = h {
                                    if best.is_none_or(|(_, t)| ev.tsc < t) {
                                        best = Some((i, ev.tsc));
                                    }
                                }
                            }
                            best.map(|(i, _)| i)
                        } else {
                            while cur < heads.len() && heads.get(cur).is_some_and(Option::is_none) {
                                cur += 1;
                            }
                            (cur < heads.len()).then_some(cur)
                        };
                        let Some(i) = pick else {
                            done = true;
                            break;
                        };
                        let (Some(h), Some(s)) = (heads.get_mut(i), streams.get_mut(i)) else {
                            done = true;
                            break;
                        };
                        if let Some(item) = std::mem::replace(h, s.next_event()) {
                            segs.ensure(item.1, || {
                                let name = if symbolize {
                                    names.name(profkit_model::FuncId(item.1))
                                } else {
                                    item.1.to_string()
                                };
                                RecordFormatter::func_segment(item.1, &name)
                            });
                            batch.push(item);
                        }
                    }
                    if !batch.is_empty() {
                        batches.push(batch);
                    }
                }
                let segs = &segs;
                let texts: Vec<Vec<u8>> = batches
                    .par_iter()
                    .map(|b| {
                        let mut buf = Vec::with_capacity(b.len() * 150);
                        for (ev, id) in b {
                            fmt.format(&mut buf, ev, segs.get(*id));
                        }
                        buf
                    })
                    .collect();
                for t in texts {
                    if tx.send(t).is_err() {
                        return;
                    }
                }
                if done {
                    return;
                }
            }
        });
        for buf in rx {
            if let Err(e) = out.write_all(&buf) {
                write_err = Some(e);
                break;
            }
        }
    });
    if let Some(e) = write_err {
        return Err(anyhow::Error::new(e).context("cannot write"));
    }
    trace_yaml::write_footer(out)?;
    out.flush().context("cannot write")?;
    Ok(true)
}
