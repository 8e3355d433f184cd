//! `profkit dump FILE`: one line per record (NDJSON with `--json`), `--follow` for live files.

use std::fmt::Write as _;
use std::fs::File;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use profkit_jitdump::read::DebugWalkEnd;
use profkit_jitdump::validate::recovered_name_tail;
use profkit_jitdump::{perfmap, DebugInfo, FollowReader, JitDump, RawRecord, Record};
use serde_json::{json, Map, Value};

use super::{open_detected, parse_error, unsupported};
use crate::cli::DumpArgs;
use crate::detect::Format;
use crate::output;

pub fn run(args: &DumpArgs) -> Result<ExitCode> {
    if args.follow {
        return follow(args);
    }
    let (input, format) = open_detected(&args.file, args.input.input_format)?;
    let mut out = output::stdout();
    match format {
        Format::Jitdump => {
            let dump = JitDump::parse(&input.data).map_err(|e| parse_error(&input, &e))?;
            write_header(&mut out, &dump, args.json)?;
            let mut records = dump.records();
            for raw in &mut records {
                match raw {
                    Ok(raw) => write_record(&mut out, &raw, args)?,
                    Err(e) => {
                        out.flush()?;
                        return Err(parse_error(&input, &e));
                    }
                }
            }
            out.flush()?;
            if let Some(t) = records.truncation() {
                output::print_warning(&format!("{}: {t}", input.name));
            }
        }
        Format::PerfMap => {
            for e in perfmap::entries(&input.data) {
                match e {
                    Ok(e) if args.json => {
                        serde_json::to_writer(
                            &mut out,
                            &json!({"line": e.line, "start": e.start, "size": e.size, "name": String::from_utf8_lossy(e.name)}),
                        )?;
                        writeln!(out)?;
                    }
                    Ok(e) => {
                        write!(out, "{:>6} {:#014x} {:#8x} ", e.line, e.start, e.size)?;
                        out.write_all(e.name)?;
                        writeln!(out)?;
                    }
                    Err(e) => output::print_warning(&format!("{}: {e}", input.name)),
                }
            }
            out.flush()?;
        }
        Format::Xray | Format::XrayYaml => {
            return super::xray::dump(input, format, args.json, args.verify)
        }
        Format::Mlpd => return super::mlpd::dump(input, args.json),
        other => return Err(unsupported(&input, other, "dump")),
    }
    Ok(ExitCode::SUCCESS)
}

fn write_header(out: &mut impl Write, dump: &JitDump<'_>, json: bool) -> Result<()> {
    let h = dump.header();
    if json {
        let v = json!({
            "type": "HEADER", "offset": 0, "endian": h.endian.name(), "version": h.version,
            "total_size": h.total_size, "elf_mach": h.elf_mach, "pad1": h.pad1, "pid": h.pid,
            "timestamp": h.timestamp, "flags": h.flags,
        });
        serde_json::to_writer(&mut *out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "HEADER {}-endian version {} total_size {} elf_mach {} pad1 {:#x} pid {} timestamp {} flags {:#x}",
            h.endian.name(),
            h.version,
            h.total_size,
            h.elf_mach,
            h.pad1,
            h.pid,
            h.timestamp,
            h.flags
        )?;
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// DEBUG_INFO entries as `(addr, line, discrim, file)`, recovered when the record is corrupt.
fn debug_entries(d: &DebugInfo<'_>) -> (Vec<(u64, u32, u32, String)>, &'static str) {
    match d.walk_end() {
        DebugWalkEnd::Exact { .. } => (
            d.entries()
                .map(|e| (e.addr, e.line, e.discrim, lossy(e.file)))
                .collect(),
            "ok",
        ),
        _ => match d.fixed_stride() {
            Some(stride) => (
                (0..d.nr_entry as usize)
                    .filter_map(|i| d.entry_at_stride(stride, i))
                    .map(|e| {
                        (
                            e.addr,
                            e.line,
                            e.discrim,
                            format!("…{}", recovered_name_tail(e.file)),
                        )
                    })
                    .collect(),
                "corrupt-recovered",
            ),
            None => (
                d.entries()
                    .map(|e| (e.addr, e.line, e.discrim, lossy(e.file)))
                    .collect(),
                "corrupt",
            ),
        },
    }
}

/// The JSON object of one record.
pub fn record_json(raw: &RawRecord<'_>, with_code: bool) -> Value {
    let mut m = Map::new();
    m.insert("index".into(), json!(raw.index));
    m.insert("offset".into(), json!(raw.offset));
    m.insert("type".into(), json!(raw.record_type.to_string()));
    m.insert("timestamp".into(), json!(raw.timestamp));
    m.insert("size".into(), json!(raw.total_size()));
    let parsed = match raw.parse() {
        Ok(p) => p,
        Err(e) => {
            m.insert("error".into(), json!(e.to_string()));
            return Value::Object(m);
        }
    };
    let mut put = |k: &str, v: Value| {
        m.insert(k.into(), v);
    };
    match parsed {
        Record::CodeLoad(l) => {
            put("pid", json!(l.pid));
            put("tid", json!(l.tid));
            put("vma", json!(l.vma));
            put("code_addr", json!(l.code_addr));
            put("code_size", json!(l.code_size));
            put("code_index", json!(l.code_index));
            put("name", json!(lossy(l.name)));
            put("code_present", json!(l.code.is_some()));
            if with_code {
                put("code", json!(l.code.map(hex)));
            }
        }
        Record::CodeMove(mv) => {
            put("pid", json!(mv.pid));
            put("tid", json!(mv.tid));
            put("vma", json!(mv.vma));
            put("old_code_addr", json!(mv.old_code_addr));
            put("new_code_addr", json!(mv.new_code_addr));
            put("code_size", json!(mv.code_size));
            put("code_index", json!(mv.code_index));
        }
        Record::DebugInfo(d) => {
            put("code_addr", json!(d.code_addr));
            put("nr_entry", json!(d.nr_entry));
            let (entries, status) = debug_entries(&d);
            put("status", json!(status));
            put(
                "entries",
                Value::Array(
                    entries
                        .into_iter()
                        .map(|(a, l, c, f)| json!({"addr": a, "line": l, "discrim": c, "file": f}))
                        .collect(),
                ),
            );
        }
        Record::CodeClose => {}
        Record::UnwindingInfo(u) => {
            put("unwind_data_size", json!(u.unwind_data_size));
            put("eh_frame_hdr_size", json!(u.eh_frame_hdr_size));
            put("mapped_size", json!(u.mapped_size));
            if with_code {
                put("eh_frame", json!(hex(u.eh_frame())));
                put("eh_frame_hdr", json!(hex(u.eh_frame_hdr())));
            }
        }
        Record::DebugInfo2(d) => {
            put("files", json!(d.files().map(lossy).collect::<Vec<_>>()));
            put(
                "function_names",
                json!(d.function_names().map(lossy).collect::<Vec<_>>()),
            );
            put(
                "functions",
                json!(d
                    .functions()
                    .map(|f| json!({"name": f.function_name_index, "file": f.file_index, "line": f.start_line, "column": f.start_column, "flags": f.flags}))
                    .collect::<Vec<_>>()),
            );
            put(
                "inline_calls",
                json!(d
                    .inline_calls()
                    .map(|c| json!({"depth": c.depth, "ranges": c.range_count, "function": c.function_index, "call_line": c.call_line_number, "call_column": c.call_column_number}))
                    .collect::<Vec<_>>()),
            );
            put(
                "ranges",
                json!(d
                    .ranges()
                    .map(|r| json!([r.start_offset, r.size]))
                    .collect::<Vec<_>>()),
            );
            put(
                "lines",
                json!(d
                    .lines()
                    .map(|l| json!([l.code_offset, l.file_index, l.line_number, l.column_number]))
                    .collect::<Vec<_>>()),
            );
        }
        Record::JitTier(t) => {
            put("code_addr", json!(t.code_addr));
            put("color", json!(t.color));
            put("color_name", json!(t.color_name()));
            put("flags", json!(t.flags));
            put("name", json!(lossy(t.name)));
        }
        Record::EmbeddedSourceFile(s) => {
            put("path", json!(lossy(s.path)));
            put("flags", json!(s.flags));
            put("content_size", json!(s.content.len()));
            if with_code {
                put("content", json!(lossy(s.content)));
            }
        }
        _ => {
            put("body_size", json!(raw.body.len()));
            if with_code {
                put("body", json!(hex(raw.body)));
            }
        }
    }
    Value::Object(m)
}

fn write_record(out: &mut impl Write, raw: &RawRecord<'_>, args: &DumpArgs) -> Result<()> {
    if args.json {
        serde_json::to_writer(&mut *out, &record_json(raw, args.code))?;
        writeln!(out)?;
        return Ok(());
    }
    write!(
        out,
        "#{:<6} {:#010x} {:<27} ts {} size {}",
        raw.index,
        raw.offset,
        raw.record_type.to_string(),
        raw.timestamp,
        raw.total_size()
    )?;
    let parsed = match raw.parse() {
        Ok(p) => p,
        Err(e) => {
            writeln!(out, " MALFORMED: {}", e.message)?;
            return Ok(());
        }
    };
    match parsed {
        Record::CodeLoad(l) => {
            write!(
                out,
                " pid {} tid {} vma {:#x} code_addr {:#x} code_size {} code_index {} name ",
                l.pid, l.tid, l.vma, l.code_addr, l.code_size, l.code_index
            )?;
            out.write_all(l.name)?;
            if l.code.is_none() {
                write!(out, " (no code bytes)")?;
            }
            writeln!(out)?;
            if args.code {
                if let Some(code) = l.code {
                    writeln!(out, "    code {}", hex(code))?;
                }
            }
        }
        Record::CodeMove(m) => writeln!(
            out,
            " pid {} tid {} vma {:#x} old {:#x} new {:#x} code_size {} code_index {}",
            m.pid, m.tid, m.vma, m.old_code_addr, m.new_code_addr, m.code_size, m.code_index
        )?,
        Record::DebugInfo(d) => {
            let (entries, status) = debug_entries(&d);
            writeln!(
                out,
                " code_addr {:#x} nr_entry {}{}",
                d.code_addr,
                d.nr_entry,
                match status {
                    "ok" => "",
                    "corrupt-recovered" =>
                        " CORRUPT (file names overwritten; entries recovered by fixed stride)",
                    _ => " CORRUPT (entries do not walk to the record's end)",
                }
            )?;
            for (a, l, c, f) in entries {
                writeln!(out, "    {a:#x} line {l} discrim {c} {f}")?;
            }
        }
        Record::CodeClose => writeln!(out)?,
        Record::UnwindingInfo(u) => {
            writeln!(
                out,
                " unwind_data_size {} eh_frame_hdr_size {} mapped_size {}",
                u.unwind_data_size, u.eh_frame_hdr_size, u.mapped_size
            )?;
            if args.code {
                writeln!(out, "    eh_frame {}", hex(u.eh_frame()))?;
                writeln!(out, "    eh_frame_hdr {}", hex(u.eh_frame_hdr()))?;
            }
        }
        Record::DebugInfo2(d) => {
            let files: Vec<String> = d.files().map(lossy).collect();
            let names: Vec<String> = d.function_names().map(lossy).collect();
            writeln!(
                out,
                " files {} functions {} inline_calls {} ranges {} lines {}",
                files.len(),
                d.counts.function_count,
                d.counts.inline_call_record_count,
                d.counts.range_count,
                d.counts.line_record_count
            )?;
            let name_of = |i: u32| names.get(i as usize).map(String::as_str).unwrap_or("?");
            let file_of = |i: u32| files.get(i as usize).map(String::as_str).unwrap_or("?");
            for (i, f) in d.functions().enumerate() {
                writeln!(
                    out,
                    "    function {i}: {} at {}:{}:{} flags {:#x}",
                    name_of(f.function_name_index),
                    file_of(f.file_index),
                    f.start_line,
                    f.start_column,
                    f.flags
                )?;
            }
            let mut ranges = d.ranges();
            for c in d.inline_calls() {
                let rs: Vec<String> = ranges
                    .by_ref()
                    .take(c.range_count as usize)
                    .map(|r| {
                        format!(
                            "+{:#x}..+{:#x}",
                            r.start_offset,
                            u64::from(r.start_offset) + u64::from(r.size)
                        )
                    })
                    .collect();
                writeln!(
                    out,
                    "    {:indent$}inline function {} called at line {}:{} {}",
                    "",
                    c.function_index,
                    c.call_line_number,
                    c.call_column_number,
                    rs.join(" "),
                    indent = 2 * c.depth.min(64) as usize
                )?;
            }
            for l in d.lines() {
                writeln!(
                    out,
                    "    +{:#x} {}:{}:{}",
                    l.code_offset,
                    file_of(l.file_index),
                    l.line_number,
                    l.column_number
                )?;
            }
        }
        Record::JitTier(t) => {
            write!(
                out,
                " code_addr {:#x} color {} ({}) flags {:#x} name ",
                t.code_addr,
                t.color,
                t.color_name(),
                t.flags
            )?;
            out.write_all(t.name)?;
            writeln!(out)?;
        }
        Record::EmbeddedSourceFile(s) => {
            write!(out, " content_size {} path ", s.content.len())?;
            out.write_all(s.path)?;
            writeln!(out)?;
            if args.code {
                out.write_all(s.content)?;
                writeln!(out)?;
            }
        }
        _ => writeln!(
            out,
            " (unknown record id {}, {} body bytes)",
            raw.record_type.0,
            raw.body.len()
        )?,
    }
    Ok(())
}

/// `dump --follow`: tails a growing jitdump until CLOSE, Ctrl-C or the timeout.
fn follow(args: &DumpArgs) -> Result<ExitCode> {
    let name = args.file.display().to_string();
    let file = File::open(&args.file).with_context(|| format!("{name}: cannot open"))?;
    let mut reader = FollowReader::new(file);
    let mut out = output::stdout();
    let timeout = args.timeout.map(Duration::from_secs_f64);
    let mut last_progress = Instant::now();
    let mut header_done = false;
    loop {
        let added = reader
            .fill()
            .with_context(|| format!("{name}: cannot read"))?;
        if added > 0 {
            last_progress = Instant::now();
        }
        if !header_done {
            if let Some(h) = reader
                .header()
                .map_err(|e| anyhow::anyhow!("{name}: {e}"))?
            {
                header_done = true;
                let json = json!({"type": "HEADER", "offset": 0, "endian": h.endian.name(), "version": h.version, "pid": h.pid, "timestamp": h.timestamp});
                if args.json {
                    serde_json::to_writer(&mut out, &json)?;
                    writeln!(out)?;
                } else {
                    writeln!(
                        out,
                        "HEADER {}-endian version {} pid {} timestamp {}",
                        h.endian.name(),
                        h.version,
                        h.pid,
                        h.timestamp
                    )?;
                }
            }
        }
        let mut closed = false;
        while let Some(raw) = reader
            .next_record()
            .map_err(|e| anyhow::anyhow!("{name}: {e}"))?
        {
            closed |= raw.record_type == profkit_jitdump::RecordType::CODE_CLOSE;
            write_record(&mut out, &raw, args)?;
        }
        out.flush()?;
        if closed {
            break;
        }
        if timeout.is_some_and(|t| last_progress.elapsed() >= t) {
            if reader.pending_bytes() > 0 {
                output::print_warning(&format!(
                    "{name}: stopped after the timeout with {} bytes of an incomplete record at offset {:#x}",
                    reader.pending_bytes(),
                    reader.offset()
                ));
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(ExitCode::SUCCESS)
}
