//! The XRay parts of the commands: opening traces (binary or YAML), function names from `-m`,
//! and `info`, `dump`, `validate`, `convert` for XRay input. Logic lives in profkit-xray and
//! profkit-model; this module only picks and prints.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use profkit_common::Value;
use profkit_model::{ingest, FunctionTable};
use profkit_xray::trace_yaml;
use profkit_xray::trace_yaml::{CachedFormatter, RecordFormatter};
use profkit_xray::{
    verify, BufferEvents, BufferItem, Event, EventKind, Finding, InstrMap, Severity, Symbolizer,
    ThreadKey, ThreadState, Trace,
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
    truncation: Option<&profkit_xray::Truncation>,
) {
    if let Some(t) = truncation {
        output::print_warning(&format!("{name}: {t}"));
    }
    if !problems.is_empty() {
        output::print_warning(&format!(
            "{name}: skipped {} undecodable record(s); first: {}",
            problems.len(),
            problems.first().map(|p| p.to_string()).unwrap_or_default()
        ));
    }
}

/// `profkit info` for an XRay trace (from [`profkit_xray::summary`]).
pub fn info(input: Input, format: Format, json_out: bool, out: &mut dyn Write) -> Result<()> {
    let l = from_input(input, format, "info")?;
    let trace = l.trace()?;
    let h = trace.header;
    let s = profkit_xray::summary(&trace);
    let buffers = match s.detail("buffers") {
        Some(Value::U64(n)) => *n,
        _ => 0,
    };
    let (first, last, span_ns) = match s.time {
        Some(t) => (Some(t.first), Some(t.last), t.duration_ns),
        None => (None, None, 0),
    };
    if json_out {
        let v = json!({
            "schema": "profkit.info/1",
            "file": l.input.name,
            "format": l.format.name(),
            "size": l.input.data.len(),
            "mode": if h.is_fdr() { "fdr" } else { "basic" },
            "version": h.version,
            "header": {"type": h.trace_type.0, "constant_tsc": h.constant_tsc(), "nonstop_tsc": h.nonstop_tsc(),
                       "cycle_frequency": h.cycle_frequency, "buffer_size": h.buffer_size},
            "buffers": buffers,
            "records": s.records,
            "events": s.kinds.iter().map(|(k, n)| (k.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "threads": s.threads.iter()
                .map(|t| json!({"pid": t.pid.unwrap_or(0), "tid": t.tid, "events": t.records}))
                .collect::<Vec<_>>(),
            "tsc_first": first,
            "tsc_last": last,
            "duration_ns": span_ns,
            "problems": s.problems,
            "truncated": s.truncation.as_ref().map(|t| t.to_string()),
        });
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
        writeln!(out, "buffers:  {buffers}")?;
    }
    writeln!(out, "records:  {}", s.records)?;
    for (k, n) in &s.kinds {
        writeln!(out, "  {k:<30} {n:>10}")?;
    }
    writeln!(out, "threads:  {}", s.threads.len())?;
    for t in &s.threads {
        writeln!(
            out,
            "  pid {:<8} tid {:<8} {:>10} events",
            t.pid.unwrap_or(0),
            t.tid,
            t.records
        )?;
    }
    writeln!(
        out,
        "time:     {span_ns} ns between the first and the last event"
    )?;
    if s.problems > 0 {
        writeln!(out, "problems: {}", s.problems)?;
    }
    if let Some(t) = &s.truncation {
        writeln!(out, "truncated: {t}")?;
    }
    Ok(())
}

/// `profkit dump` for an XRay trace ([`profkit_xray::dump`]): `llvm-xray fdr-dump` lines
/// (FDR), llvm's YAML record lines (basic), or NDJSON. Undecodable records are warnings and
/// exit 2; a cut file is a warning.
pub fn dump(input: Input, format: Format, json_out: bool, verify_blocks: bool) -> Result<ExitCode> {
    let l = from_input(input, format, "dump")?;
    let trace = l.trace()?;
    let mut out = output::stdout();
    let opts = profkit_xray::dump::DumpOptions {
        json: json_out,
        verify: verify_blocks,
    };
    let outcome = profkit_xray::dump::dump(&trace, &opts, &mut out)?;
    for e in &outcome.problems {
        output::print_warning(&format!("{}: {e}", l.input.name));
    }
    if let Some(t) = &outcome.truncation {
        output::print_warning(&format!("{}: {t}", l.input.name));
    }
    Ok(if outcome.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
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
    let errors: Vec<&Finding> = report.errors().collect();
    let warnings: Vec<&Finding> = report.warnings().collect();
    if json_out {
        let list = |v: &[&Finding]| -> Vec<serde_json::Value> {
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
            "{}: xray ({} records): {} error{}, {} warning{}",
            l.input.name,
            report.records,
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
            let label = f.severity.name();
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

/// `profkit convert` of an XRay trace to llvm-xray's YAML. `output` is the path `out` writes
/// to (`-` for stdout): a regular file is written through [`DirectFile`] instead of `out`.
pub fn convert_yaml(
    input: Input,
    format: Format,
    instr_map: Option<&Path>,
    symbolize: bool,
    sort: bool,
    output: &Path,
    out: &mut dyn Write,
) -> Result<()> {
    let l = from_input(input, format, "convert")?;
    let trace = l.trace()?;
    let names = if symbolize {
        names(instr_map)?
    } else {
        FunctionTable::new()
    };
    let mut direct = if output.as_os_str() == "-" {
        None
    } else {
        DirectFile::open(output)
    };
    let out: &mut dyn Write = match &mut direct {
        Some(d) => d,
        None => out,
    };
    convert_yaml_to(&l, &trace, &names, symbolize, sort, out)?;
    if let Some(d) = &mut direct {
        d.finish()
            .with_context(|| format!("{}: cannot write", output.display()))?;
    }
    Ok(())
}

fn convert_yaml_to(
    l: &Loaded,
    trace: &Trace<'_>,
    names: &FunctionTable,
    symbolize: bool,
    sort: bool,
    out: &mut dyn Write,
) -> Result<()> {
    if trace.header.is_fdr() && convert_yaml_streaming(trace, names, symbolize, sort, out)? {
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

/// A regular output file written in large aligned chunks with `O_DIRECT` (Linux), bypassing
/// the page cache: on the benchmark machine a buffered writer of a multi-GB file is throttled by
/// dirty-page writeback (6.8 GB took 10.9 s with `dd bs=1M`, 2.4 s with `oflag=direct`). The
/// last partial block goes through a second, ordinary descriptor; if the file system refuses
/// direct I/O, writing continues through that descriptor at the same offset.
pub struct DirectFile {
    direct: Option<std::fs::File>,
    plain: std::fs::File,
    buf: Vec<u8>,
    /// Offset of the first aligned byte of `buf`.
    start: usize,
    /// Bytes staged after `start`.
    len: usize,
    /// File offset of the first staged byte.
    pos: u64,
}

const DIRECT_ALIGN: usize = 4096;
const DIRECT_CHUNK: usize = 8 << 20;

impl DirectFile {
    /// The open flag, where known.
    fn o_direct() -> Option<i32> {
        if cfg!(not(target_os = "linux")) {
            None
        } else if cfg!(any(
            target_arch = "x86_64",
            target_arch = "x86",
            target_arch = "riscv64"
        )) {
            Some(0o40000)
        } else if cfg!(any(target_arch = "aarch64", target_arch = "arm")) {
            Some(0o200000)
        } else {
            None
        }
    }

    /// Opens an existing regular file for direct writing from offset 0; `None` when it is not
    /// a regular file or direct I/O is not available (write through the ordinary path then).
    pub fn open(path: &Path) -> Option<DirectFile> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let flag = Self::o_direct()?;
            if !std::fs::metadata(path).ok()?.is_file() {
                return None;
            }
            let direct = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(flag)
                .open(path)
                .ok()?;
            let plain = std::fs::OpenOptions::new().write(true).open(path).ok()?;
            let buf = vec![0u8; DIRECT_CHUNK + DIRECT_ALIGN];
            let start = buf.as_ptr().align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
            Some(DirectFile {
                direct: Some(direct),
                plain,
                buf,
                start,
                len: 0,
                pos: 0,
            })
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            None
        }
    }

    /// Writes the first `n` staged bytes at the current file offset.
    fn write_out(&mut self, n: usize) -> std::io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            let data = self.buf.get(self.start..self.start + n).unwrap_or_default();
            let mut done = false;
            if let Some(d) = &self.direct {
                if n.is_multiple_of(DIRECT_ALIGN) {
                    match d.write_all_at(data, self.pos) {
                        Ok(()) => done = true,
                        Err(_) => self.direct = None,
                    }
                }
            }
            if !done {
                self.plain.write_all_at(data, self.pos)?;
            }
        }
        self.pos += n as u64;
        self.buf
            .copy_within(self.start + n..self.start + self.len, self.start);
        self.len -= n;
        Ok(())
    }

    /// Writes everything staged, the unaligned tail included.
    pub fn finish(&mut self) -> std::io::Result<()> {
        let aligned = self.len / DIRECT_ALIGN * DIRECT_ALIGN;
        if aligned > 0 {
            self.write_out(aligned)?;
        }
        if self.len > 0 {
            self.write_out(self.len)?;
        }
        self.plain.flush()
    }
}

impl Write for DirectFile {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = DIRECT_CHUNK - self.len;
        let n = data.len().min(room);
        let at = self.start + self.len;
        if let (Some(dst), Some(src)) = (self.buf.get_mut(at..at + n), data.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.len += n;
        if self.len == DIRECT_CHUNK {
            self.write_out(DIRECT_CHUNK)?;
        }
        Ok(n)
    }

    /// Staged bytes stay staged until a whole chunk is full or [`DirectFile::finish`].
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Events between two checkpoints of the streaming YAML writer.
const CHECKPOINT_EVERY: u64 = 256;
/// Events per output piece (one piece is formatted by one worker into one buffer); a TSC window
/// also holds at least 4 checkpoint intervals per thread, so that finding each thread's start
/// (decoding up to one interval per thread) stays a small part of the work.
const PIECE_EVENTS: u64 = 64 * 1024;

/// Where decoding can resume inside a buffer: the walk's position and state just before an
/// event, that event's TSC, and the function id llvm would print for a custom event there.
#[derive(Clone, Copy, Debug)]
struct Checkpoint {
    /// Index into the thread's buffer list.
    buf: usize,
    pos: u64,
    state: ThreadState,
    records: u64,
    tsc: u64,
    /// Number of the event in the thread's stream.
    ordinal: u64,
    /// Last function id before this event in the buffer (`None`: none yet).
    prev_local: Option<u32>,
    /// The same across the thread's buffers (0 when there is none), set after the scan.
    prev: u32,
}

/// What one FDR buffer looks like to the streaming YAML writer.
#[derive(Clone, Debug, Default)]
struct BufInfo {
    /// Decodes cleanly on its own: no problem, no event before the TSC is set, one thread.
    ok: bool,
    /// Thread of its events (`None`: no events).
    key: Option<ThreadKey>,
    first_tsc: u64,
    last_tsc: u64,
    monotonic: bool,
    events: u64,
    last_func: Option<u32>,
    checkpoints: Vec<Checkpoint>,
}

impl BufInfo {
    /// Notes the next event of the buffer; `Err` when it is on another thread than the first.
    #[inline]
    fn note(
        &mut self,
        key: ThreadKey,
        tsc: u64,
        func: Option<u32>,
        pending: &mut Option<Checkpoint>,
    ) -> std::result::Result<(), ()> {
        match self.key {
            None => {
                self.key = Some(key);
                self.first_tsc = tsc;
            }
            Some(k0) if k0 != key => return Err(()),
            Some(_) => {
                if tsc < self.last_tsc {
                    self.monotonic = false;
                }
            }
        }
        if let Some(mut c) = pending.take() {
            c.tsc = tsc;
            self.checkpoints.push(c);
        }
        if func.is_some() {
            self.last_func = func;
        }
        self.last_tsc = tsc;
        self.events += 1;
        Ok(())
    }
}

/// Decodes buffer `bi` once (function records through the fast path) to check it and to note
/// a checkpoint every [`CHECKPOINT_EVERY`] events.
fn scan_buffer(trace: &Trace<'_>, bi: usize) -> BufInfo {
    let mut info = BufInfo {
        ok: true,
        monotonic: true,
        ..BufInfo::default()
    };
    let mut it = trace.buffer_events(bi, ThreadState::default());
    loop {
        // Where the next event's walk starts: its TSC is filled in when it is decoded.
        let mut pending = Some(Checkpoint {
            buf: 0,
            pos: it.position(),
            state: it.state(),
            records: it.records(),
            tsc: 0,
            ordinal: info.events,
            prev_local: info.last_func,
            prev: 0,
        });
        let mut bad = false;
        let mut due = false;
        let item = it.visit_calls(&mut |c| {
            let key = ThreadKey {
                pid: c.pid,
                tid: c.tid,
            };
            if info
                .note(key, c.tsc, Some(c.func_id), &mut pending)
                .is_err()
            {
                bad = true;
                return std::ops::ControlFlow::Break(());
            }
            if info.events.is_multiple_of(CHECKPOINT_EVERY) {
                due = true;
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        });
        if bad {
            info.ok = false;
            break;
        }
        match item {
            None if due => continue,
            None => break,
            Some(BufferItem::Problem(_)) => {
                info.ok = false;
                break;
            }
            Some(BufferItem::Event(ev)) => {
                let key = ThreadKey {
                    pid: ev.pid,
                    tid: ev.tid,
                };
                if info.note(key, ev.tsc, None, &mut pending).is_err() {
                    info.ok = false;
                    break;
                }
            }
            Some(BufferItem::Call(c)) => {
                let key = ThreadKey {
                    pid: c.pid,
                    tid: c.tid,
                };
                if info
                    .note(key, c.tsc, Some(c.func_id), &mut pending)
                    .is_err()
                {
                    info.ok = false;
                    break;
                }
            }
        }
    }
    if it.used_unknown_tsc() {
        info.ok = false;
    }
    info
}

/// One thread of the streaming writer: its buffers in file order and the checkpoints of all
/// of them, with ordinals and custom-event ids across buffers.
struct ThreadPlan {
    bufs: Vec<usize>,
    checkpoints: Vec<Checkpoint>,
    events: u64,
}

/// Decodes one thread's events from a checkpoint on, with the id llvm prints (custom and typed
/// events repeat the previous function's id).
struct Cursor<'t, 'a> {
    trace: &'t Trace<'a>,
    plan: &'t ThreadPlan,
    buf: usize,
    it: BufferEvents<'a>,
    prev_id: u32,
}

impl<'t, 'a> Cursor<'t, 'a> {
    fn at(trace: &'t Trace<'a>, plan: &'t ThreadPlan, cp: &Checkpoint) -> Self {
        let bi = plan.bufs.get(cp.buf).copied().unwrap_or(usize::MAX);
        Cursor {
            trace,
            plan,
            buf: cp.buf,
            it: trace.buffer_events_at(bi, cp.pos, cp.state, cp.records),
            prev_id: cp.prev,
        }
    }

    fn next_event(&mut self) -> Option<(Event<'a>, u32)> {
        loop {
            match self.it.next() {
                Some(Ok(ev)) => {
                    let id = if matches!(ev.kind, EventKind::CustomEvent | EventKind::TypedEvent) {
                        self.prev_id
                    } else {
                        self.prev_id = ev.func_id;
                        ev.func_id
                    };
                    return Some((ev, id));
                }
                Some(Err(_)) => continue,
                None => {
                    self.buf += 1;
                    let bi = *self.plan.bufs.get(self.buf)?;
                    self.it = self.trace.buffer_events(bi, ThreadState::default());
                }
            }
        }
    }
}

/// One piece of output: per thread, where to start and which events to emit.
#[derive(Clone, Debug)]
enum Piece {
    /// Sorted output: every thread's events with `lo <= tsc < hi` (`hi = None`: no bound),
    /// merged by TSC, ties in thread order.
    Window { lo: u64, hi: Option<u64> },
    /// File order: `count` events of thread `thread` from checkpoint `cp`.
    Run {
        thread: usize,
        cp: usize,
        count: u64,
    },
}

/// The `func-id: …, function: …, ` segments, by id.
#[derive(Default)]
struct Segments {
    dense: Vec<Option<Vec<u8>>>,
    sparse: HashMap<u32, Vec<u8>>,
}

impl Segments {
    fn get(&mut self, id: u32, make: impl FnOnce() -> Vec<u8>) -> &[u8] {
        let v = if id < (1 << 20) {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            self.dense
                .get_mut(i)
                .map(|slot| slot.get_or_insert_with(make))
        } else {
            Some(self.sparse.entry(id).or_insert_with(make))
        };
        v.map(|v| v.as_slice()).unwrap_or_default()
    }
}

/// Formats piece `piece` into `buf`.
fn format_piece(
    trace: &Trace<'_>,
    plans: &[ThreadPlan],
    piece: &Piece,
    names: &FunctionTable,
    symbolize: bool,
    fmt: &RecordFormatter,
    buf: &mut Vec<u8>,
) {
    let mut segs = Segments::default();
    let mut lines = CachedFormatter::new(fmt);
    let mut emit = |buf: &mut Vec<u8>, ev: &Event<'_>, id: u32| {
        let seg = segs.get(id, || {
            let name = if symbolize {
                names.name(profkit_model::FuncId(id))
            } else {
                id.to_string()
            };
            RecordFormatter::func_segment(id, &name)
        });
        lines.format(buf, ev, id, seg);
    };
    match *piece {
        Piece::Run { thread, cp, count } => {
            let Some(plan) = plans.get(thread) else {
                return;
            };
            let Some(c) = plan.checkpoints.get(cp) else {
                return;
            };
            let mut cur = Cursor::at(trace, plan, c);
            for _ in 0..count {
                let Some((ev, id)) = cur.next_event() else {
                    break;
                };
                emit(buf, &ev, id);
            }
        }
        Piece::Window { lo, hi } => {
            let below_hi = |t: u64| hi.is_none_or(|h| t < h);
            let mut heads: Vec<(Option<(Event<'_>, u32)>, Cursor<'_, '_>)> = Vec::new();
            for plan in plans {
                // The last checkpoint before `lo`: every event at `lo` or later comes after it.
                let n = plan.checkpoints.partition_point(|c| c.tsc < lo);
                let Some(c) = plan.checkpoints.get(n.saturating_sub(1)) else {
                    continue;
                };
                let mut cur = Cursor::at(trace, plan, c);
                let mut head = cur.next_event();
                while head.as_ref().is_some_and(|(ev, _)| ev.tsc < lo) {
                    head = cur.next_event();
                }
                if head.as_ref().is_some_and(|(ev, _)| below_hi(ev.tsc)) {
                    heads.push((head, cur));
                }
            }
            loop {
                let mut best: Option<(usize, u64)> = None;
                for (i, (h, _)) in heads.iter().enumerate() {
                    if let Some((ev, _)) = h {
                        if best.is_none_or(|(_, t)| ev.tsc < t) {
                            best = Some((i, ev.tsc));
                        }
                    }
                }
                let Some((i, _)) = best else { break };
                let Some((h, cur)) = heads.get_mut(i) else {
                    break;
                };
                let mut next = cur.next_event();
                if next.as_ref().is_some_and(|(ev, _)| !below_hi(ev.tsc)) {
                    next = None;
                }
                if let Some((ev, id)) = std::mem::replace(h, next) {
                    emit(buf, &ev, id);
                }
            }
        }
    }
}

/// Plans the pieces: per thread, its buffers and checkpoints; then TSC windows (sorted) or
/// runs of each thread in turn (unsorted). `None` when the trace needs the general path.
fn plan_pieces(trace: &Trace<'_>, sort: bool) -> Option<(Vec<ThreadPlan>, Vec<Piece>)> {
    if trace
        .layout()
        .segments
        .iter()
        .any(|s| !matches!(s, profkit_xray::Segment::Buffer(_)))
    {
        return None;
    }
    let n = trace.layout().buffers.len();
    let mut infos: Vec<BufInfo> = (0..n)
        .into_par_iter()
        .map(|bi| scan_buffer(trace, bi))
        .collect();
    if infos.iter().any(|i| !i.ok) {
        return None;
    }
    // Threads in order of their first event in the file.
    let mut threads: Vec<(usize, ThreadPlan)> = Vec::new();
    for (key, bufs) in ingest::xray::thread_buffers(trace) {
        let mut first = None;
        let mut last_tsc: Option<u64> = None;
        let mut plan = ThreadPlan {
            bufs: Vec::new(),
            checkpoints: Vec::new(),
            events: 0,
        };
        let mut carry = 0u32;
        for &bi in &bufs {
            let info = infos.get_mut(bi)?;
            let Some(k) = info.key else { continue };
            if k != key {
                return None;
            }
            first.get_or_insert(bi);
            if sort {
                if !info.monotonic || last_tsc.is_some_and(|t| t > info.first_tsc) {
                    return None;
                }
                last_tsc = Some(info.last_tsc);
            }
            let index = plan.bufs.len();
            plan.bufs.push(bi);
            for mut c in info.checkpoints.drain(..) {
                c.buf = index;
                c.ordinal += plan.events;
                c.prev = c.prev_local.unwrap_or(carry);
                plan.checkpoints.push(c);
            }
            carry = info.last_func.unwrap_or(carry);
            plan.events += info.events;
        }
        if let Some(f) = first {
            threads.push((f, plan));
        }
    }
    threads.sort_by_key(|(f, _)| *f);
    let plans: Vec<ThreadPlan> = threads.into_iter().map(|(_, p)| p).collect();
    let mut pieces = Vec::new();
    let per_piece = (PIECE_EVENTS / CHECKPOINT_EVERY).max(1) as usize;
    if sort {
        let per_piece = per_piece.max(plans.len().saturating_mul(4));
        let mut cuts: Vec<u64> = plans
            .iter()
            .flat_map(|p| p.checkpoints.iter().map(|c| c.tsc))
            .collect();
        cuts.sort_unstable();
        let mut bounds: Vec<u64> = cuts.iter().step_by(per_piece).skip(1).copied().collect();
        bounds.dedup();
        let mut lo = 0u64;
        for b in bounds {
            if b > lo {
                pieces.push(Piece::Window { lo, hi: Some(b) });
                lo = b;
            }
        }
        pieces.push(Piece::Window { lo, hi: None });
    } else {
        for (t, plan) in plans.iter().enumerate() {
            let mut i = 0;
            while let Some(c) = plan.checkpoints.get(i) {
                let j = i + per_piece;
                let end = plan.checkpoints.get(j).map_or(plan.events, |e| e.ordinal);
                pieces.push(Piece::Run {
                    thread: t,
                    cp: i,
                    count: end.saturating_sub(c.ordinal),
                });
                i = j;
            }
        }
    }
    Some((plans, pieces))
}

/// Streams an FDR trace as llvm-xray YAML. Every buffer is first decoded once, in parallel, to
/// check it and to note a checkpoint every 256 events; the output is then cut into pieces of
/// ~64 Ki events (more with many threads) — TSC windows over all threads (sorted: threads merged by TSC, ties in thread
/// order, which is what a stable sort of all events gives since each thread's events are
/// already in TSC order) or runs of one thread (unsorted) — that are decoded from the nearest
/// checkpoint and formatted in parallel, and written in order by the calling thread. Returns
/// `false` (nothing written) when the trace needs the general path: decoding problems, skipped
/// bytes, buffers that depend on earlier ones, or (when sorting) a thread whose TSCs go
/// backwards.
fn convert_yaml_streaming(
    trace: &Trace<'_>,
    names: &FunctionTable,
    symbolize: bool,
    sort: bool,
    out: &mut dyn Write,
) -> Result<bool> {
    let Some((plans, pieces)) = plan_pieces(trace, sort) else {
        return Ok(false);
    };
    trace_yaml::write_header(out, &trace.header)?;
    let fmt = RecordFormatter::new();
    let group = rayon::current_num_threads().max(1) * 2;
    let mut write_err: Option<std::io::Error> = None;
    std::thread::scope(|sc| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(group * 2);
        // Written buffers come back to be reused: fresh multi-MB allocations would cost a
        // page fault per 4 KiB of output.
        let (pool_tx, pool_rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let (fmt, plans, pieces) = (&fmt, &plans, &pieces);
        sc.spawn(move || {
            for chunk in pieces.chunks(group) {
                let mut texts: Vec<Vec<u8>> = chunk
                    .iter()
                    .map(|_| pool_rx.try_recv().unwrap_or_default())
                    .collect();
                chunk
                    .par_iter()
                    .zip(texts.par_iter_mut())
                    .for_each(|(piece, buf)| {
                        buf.clear();
                        format_piece(trace, plans, piece, names, symbolize, fmt, buf);
                    });
                for t in texts {
                    if tx.send(t).is_err() {
                        return;
                    }
                }
            }
        });
        for buf in rx {
            if let Err(e) = out.write_all(&buf) {
                write_err = Some(e);
                break;
            }
            let _ = pool_tx.send(buf);
        }
    });
    if let Some(e) = write_err {
        return Err(anyhow::Error::new(e).context("cannot write"));
    }
    trace_yaml::write_footer(out)?;
    out.flush().context("cannot write")?;
    Ok(true)
}
