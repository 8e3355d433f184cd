//! `profkit info FILE...`: what a file is and what it holds.
// serde_json's `Value["key"]` yields Null for a missing key; it does not panic.
#![allow(clippy::indexing_slicing)]

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use profkit_jitdump::raw::{elf_machine_name, RecordType};
use profkit_jitdump::{perfmap, JitDump, Scan};
use serde_json::{json, Map, Value};

use super::{open_detected, parse_error, unsupported};
use crate::cli::InfoArgs;
use crate::detect::Format;
use crate::input::Input;
use crate::output;

pub fn run(args: &InfoArgs) -> Result<ExitCode> {
    let mut out = output::stdout();
    for path in &args.files {
        let (input, format) = open_detected(path, args.input.input_format)?;
        let info = match format {
            Format::Jitdump => jitdump_info(&input)?,
            Format::PerfMap => perf_map_info(&input),
            Format::Xray | Format::XrayYaml => {
                super::xray::info(input, format, args.json, &mut out)?;
                continue;
            }
            Format::Mlpd => {
                super::mlpd::info(input, args.json, &mut out)?;
                continue;
            }
            other => return Err(unsupported(&input, other, "info")),
        };
        if let Some(t) = info.get("truncated").filter(|t| !t.is_null()) {
            output::print_warning(&format!(
                "{}: truncated at offset {}: {}",
                input.name,
                t["offset"],
                t["reason"].as_str().unwrap_or("")
            ));
        }
        if let Some(e) = info.get("error").filter(|t| !t.is_null()) {
            output::print_warning(&format!(
                "{}: scan stopped at a corrupt record: {}",
                input.name,
                e["message"].as_str().unwrap_or("")
            ));
        }
        if args.json {
            serde_json::to_writer(&mut out, &info)?;
            writeln!(out)?;
        } else {
            write_text(&mut out, &info)?;
            if args.files.len() > 1 {
                writeln!(out)?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn base(input: &Input, format: Format) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("schema".into(), json!("profkit.info/1"));
    m.insert("file".into(), json!(input.name));
    m.insert("format".into(), json!(format.name()));
    m.insert("compression".into(), json!(input.compression));
    m.insert("size".into(), json!(input.data.len()));
    m
}

/// The `info` object of a jitdump.
pub fn jitdump_info(input: &Input) -> Result<Value> {
    let dump = JitDump::parse(&input.data).map_err(|e| parse_error(input, &e))?;
    let h = dump.header();
    let s = Scan::of(&dump);
    let mut m = base(input, Format::Jitdump);
    m.insert("endian".into(), json!(h.endian.name()));
    m.insert("version".into(), json!(h.version));
    m.insert(
        "header".into(),
        json!({
            "total_size": h.total_size,
            "elf_mach": h.elf_mach,
            "elf_mach_name": elf_machine_name(h.elf_mach),
            "pad1": h.pad1,
            "pid": h.pid,
            "timestamp": h.timestamp,
            "flags": h.flags,
        }),
    );
    let mut records = Map::new();
    for t in RecordType::KNOWN {
        records.insert(t.to_string(), json!(s.count(t)));
    }
    for (t, n) in &s.records {
        if !t.is_known() {
            records.insert(t.to_string(), json!(n));
        }
    }
    m.insert("records".into(), Value::Object(records));
    m.insert("total_records".into(), json!(s.total_records()));
    m.insert("pids".into(), json!(s.pids));
    m.insert("threads".into(), json!(s.threads));
    m.insert("first_timestamp".into(), json!(s.first_timestamp));
    m.insert("last_timestamp".into(), json!(s.last_timestamp));
    m.insert("code_bytes".into(), json!(s.code_bytes));
    m.insert("code_bytes_stored".into(), json!(s.code_bytes_stored));
    m.insert("loads_without_code".into(), json!(s.loads_without_code));
    m.insert("reused_addresses".into(), json!(s.reused_addresses));
    m.insert(
        "loads_at_reused_address".into(),
        json!(s.loads_at_reused_address),
    );
    m.insert("debug_entries".into(), json!(s.debug_entries));
    m.insert("malformed_records".into(), json!(s.malformed_records));
    m.insert(
        "truncated".into(),
        match &s.truncation {
            Some(t) => json!({"offset": t.offset, "record": t.record, "reason": t.reason}),
            None => Value::Null,
        },
    );
    m.insert(
        "error".into(),
        match &s.error {
            Some(e) => json!({"offset": e.offset, "record": e.record, "message": e.message}),
            None => Value::Null,
        },
    );
    Ok(Value::Object(m))
}

fn perf_map_info(input: &Input) -> Value {
    let mut m = base(input, Format::PerfMap);
    let mut entries = 0u64;
    let mut bad = Vec::new();
    let mut bad_count = 0u64;
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    let mut bytes = 0u64;
    let mut seen = std::collections::HashMap::<u64, u32>::new();
    let mut reused = 0u64;
    for e in perfmap::entries(&input.data) {
        match e {
            Ok(e) => {
                entries += 1;
                lo = lo.min(e.start);
                hi = hi.max(e.start.saturating_add(e.size));
                bytes = bytes.saturating_add(e.size);
                let n = seen.entry(e.start).or_insert(0);
                *n += 1;
                if *n == 2 {
                    reused += 1;
                }
            }
            Err(e) => {
                bad_count += 1;
                if bad.len() < 20 {
                    bad.push(json!({"line": e.line, "offset": e.offset, "message": e.message}));
                }
            }
        }
    }
    m.insert("entries".into(), json!(entries));
    m.insert("malformed_lines".into(), json!(bad_count));
    m.insert("malformed".into(), Value::Array(bad));
    m.insert("code_bytes".into(), json!(bytes));
    m.insert("reused_addresses".into(), json!(reused));
    m.insert(
        "address_range".into(),
        if entries > 0 {
            json!([lo, hi])
        } else {
            Value::Null
        },
    );
    m.insert("truncated".into(), Value::Null);
    Value::Object(m)
}

fn write_text(out: &mut impl Write, info: &Value) -> Result<()> {
    let get = |k: &str| info.get(k).cloned().unwrap_or(Value::Null);
    writeln!(out, "file:     {}", get("file").as_str().unwrap_or(""))?;
    let compression = match get("compression").as_str() {
        Some(c) => format!(", {c}-compressed"),
        None => String::new(),
    };
    match get("format").as_str().unwrap_or("") {
        "jitdump" => {
            let h = get("header");
            writeln!(
                out,
                "format:   jitdump version {}, {}-endian{compression}, {} bytes",
                get("version"),
                get("endian").as_str().unwrap_or(""),
                get("size")
            )?;
            writeln!(
                out,
                "header:   total_size {}, elf_mach {}{}, pad1 {:#x}, pid {}, timestamp {}, flags {:#x}",
                h["total_size"],
                h["elf_mach"],
                h["elf_mach_name"].as_str().map(|n| format!(" ({n})")).unwrap_or_default(),
                h["pad1"].as_u64().unwrap_or(0),
                h["pid"],
                h["timestamp"],
                h["flags"].as_u64().unwrap_or(0)
            )?;
            writeln!(out, "records:  {}", get("total_records"))?;
            if let Some(recs) = get("records").as_object() {
                for (k, v) in recs {
                    if v.as_u64() != Some(0) {
                        writeln!(out, "  {k:<30} {v:>10}")?;
                    }
                }
            }
            let pids: Vec<String> = get("pids")
                .as_array()
                .map(|a| a.iter().map(|p| p.to_string()).collect())
                .unwrap_or_default();
            writeln!(
                out,
                "pids:     {} ({} threads)",
                if pids.is_empty() {
                    "-".into()
                } else {
                    pids.join(", ")
                },
                get("threads")
            )?;
            match (
                get("first_timestamp").as_u64(),
                get("last_timestamp").as_u64(),
            ) {
                (Some(a), Some(b)) => writeln!(
                    out,
                    "time:     {a} .. {b} ({:.6} s if nanoseconds)",
                    (b - a) as f64 / 1e9
                )?,
                _ => writeln!(out, "time:     -")?,
            }
            writeln!(
                out,
                "code:     {} bytes declared, {} stored, {} loads without code bytes",
                get("code_bytes"),
                get("code_bytes_stored"),
                get("loads_without_code")
            )?;
            writeln!(
                out,
                "reuse:    {} addresses loaded more than once ({} later loads; normal for V8)",
                get("reused_addresses"),
                get("loads_at_reused_address")
            )?;
            writeln!(out, "debug:    {} DEBUG_INFO entries", get("debug_entries"))?;
            if get("malformed_records").as_u64().unwrap_or(0) > 0 {
                writeln!(
                    out,
                    "malformed: {} records do not parse (see `profkit validate`)",
                    get("malformed_records")
                )?;
            }
        }
        "perf-map" => {
            writeln!(
                out,
                "format:   perf map{compression}, {} bytes",
                get("size")
            )?;
            writeln!(out, "entries:  {}", get("entries"))?;
            writeln!(out, "code:     {} bytes", get("code_bytes"))?;
            if let Some([lo, hi]) = get("address_range").as_array().map(|a| a.as_slice()) {
                writeln!(
                    out,
                    "range:    {:#x} .. {:#x}",
                    lo.as_u64().unwrap_or(0),
                    hi.as_u64().unwrap_or(0)
                )?;
            }
            writeln!(
                out,
                "reuse:    {} addresses listed more than once",
                get("reused_addresses")
            )?;
            writeln!(out, "malformed lines: {}", get("malformed_lines"))?;
            for e in get("malformed").as_array().into_iter().flatten() {
                writeln!(
                    out,
                    "  line {}: {}",
                    e["line"],
                    e["message"].as_str().unwrap_or("")
                )?;
            }
        }
        _ => {}
    }
    match get("truncated") {
        Value::Null => writeln!(out, "truncated: no")?,
        t => writeln!(
            out,
            "truncated: at offset {:#x} (record #{}): {}",
            t["offset"].as_u64().unwrap_or(0),
            t["record"],
            t["reason"].as_str().unwrap_or("")
        )?,
    }
    Ok(())
}
