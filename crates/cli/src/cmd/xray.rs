//! The XRay parts of the commands: opening traces (binary or YAML), function names from `-m`,
//! and `info`, `dump`, `validate`, `convert` for XRay input. Logic lives in profkit-xray and
//! profkit-model; this module only picks and prints (and writes YAML files with O_DIRECT).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use profkit_common::Value;
use profkit_model::{ingest, FuncId, FunctionTable};
use profkit_xray::yaml::{self, write_yaml, YamlOptions};
use profkit_xray::{verify, Finding, InstrMap, Severity, Symbolizer, Trace};
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
            let y = yaml::read_yaml(text).map_err(|e| anyhow!("{}: {e}", input.name))?;
            let bin = yaml::yaml_to_binary(&y).map_err(|e| anyhow!("{}: {e}", input.name))?;
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

/// `profkit convert` of an XRay trace to llvm-xray's YAML ([`profkit_xray::yaml::write_yaml`]).
/// `output` is the path `out` writes to (`-` for stdout): a regular file is written through
/// [`DirectFile`] instead of `out`.
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
    let table = if symbolize {
        names(instr_map)?
    } else {
        FunctionTable::new()
    };
    let name_of = |id: u32| table.name(FuncId(id));
    let opts = YamlOptions {
        sort,
        names: symbolize.then_some(&name_of as &(dyn Fn(u32) -> String + Sync)),
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
    let outcome = write_yaml(&trace, &opts, out).context("cannot write")?;
    if let Some(d) = &mut direct {
        d.finish()
            .with_context(|| format!("{}: cannot write", output.display()))?;
    }
    report_problems(
        &l.input.name,
        &outcome.problems,
        outcome.truncation.as_ref(),
    );
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
