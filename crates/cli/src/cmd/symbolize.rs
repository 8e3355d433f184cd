//! `profkit symbolize DUMP ADDR[@TIME]...`: JIT addresses → function, inline frames, file:line,
//! through the code map timeline of profkit-model.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use profkit_model::codemap::{CodeMap, Frame, Symbolized};
use serde_json::json;

use crate::cli::SymbolizeArgs;
use crate::output;
use crate::source::Opened;
use profkit_model::detect::Format;

/// A parsed `ADDR[@TIME]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query {
    /// The address.
    pub addr: u64,
    /// The time in ns on the dump's clock.
    pub time: Option<u64>,
}

fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses `ADDR[@TIME]`: the address in hex (`0x…`) or decimal; the time in ns, or in seconds
/// when it has a fraction (`perf script`'s `12345.678901`).
pub fn parse_query(s: &str) -> Result<Query> {
    let (a, t) = match s.split_once('@') {
        Some((a, t)) => (a, Some(t)),
        None => (s, None),
    };
    let addr = parse_u64(a.trim())
        .ok_or_else(|| anyhow!("{s:?}: the address must be hex (0x7f…) or decimal"))?;
    let time = match t.map(str::trim) {
        None => None,
        Some(t) if t.contains('.') => {
            let (sec, frac) = t.split_once('.').unwrap_or((t, ""));
            let sec: u64 = sec
                .parse()
                .map_err(|_| anyhow!("{s:?}: the time must be ns or seconds.fraction"))?;
            if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
                bail!("{s:?}: the time's fraction must have 1 to 9 digits");
            }
            let frac_ns: u64 = format!("{frac:0<9}").parse().unwrap_or(0);
            Some(
                sec.checked_mul(1_000_000_000)
                    .and_then(|v| v.checked_add(frac_ns))
                    .ok_or_else(|| anyhow!("{s:?}: the time is too large"))?,
            )
        }
        Some(t) => Some(
            t.parse()
                .map_err(|_| anyhow!("{s:?}: the time must be ns or seconds.fraction"))?,
        ),
    };
    Ok(Query { addr, time })
}

fn location(f: &Frame) -> String {
    match &f.file {
        Some(file) if f.line > 0 => format!("{file}:{}:{}", f.line, f.column),
        Some(file) => file.clone(),
        None => "??".to_string(),
    }
}

fn frame_json(f: &Frame) -> serde_json::Value {
    json!({
        "function": f.function,
        "file": f.file,
        "line": f.line,
        "column": f.column,
        "inlined": f.inlined,
    })
}

fn result_json(q: &Query, s: Option<&Symbolized<'_>>) -> serde_json::Value {
    match s {
        None => json!({"address": format!("{:#x}", q.addr), "time": q.time, "found": false}),
        Some(s) => {
            let r = s.region;
            json!({
                "address": format!("{:#x}", q.addr),
                "time": q.time,
                "found": true,
                "function": r.name,
                "offset": s.offset,
                "region": {
                    "start": format!("{:#x}", r.start),
                    "size": r.size,
                    "code_index": r.code_index,
                    "tid": r.tid,
                    "load_time": r.load_time,
                    "end_time": r.end_time,
                    "end_reason": r.end_reason,
                    "record": r.record,
                    "debug": r.debug.as_ref().map(|d| d.source),
                },
                "frames": s.frames.iter().map(frame_json).collect::<Vec<_>>(),
            })
        }
    }
}

/// Runs `profkit symbolize`.
pub fn run(args: &SymbolizeArgs) -> Result<ExitCode> {
    let queries = args
        .addresses
        .iter()
        .map(|a| parse_query(a))
        .collect::<Result<Vec<_>>>()?;
    let o = Opened::open(&args.file, &args.input)?;
    if o.format != Format::Jitdump {
        return Err(o.unsupported("symbolize"));
    }
    let dump = o.jitdump()?;
    let map = CodeMap::from_jitdump(&dump);
    if let Some(t) = &map.truncation {
        output::print_truncation(o.name(), t);
    }
    if let Some(p) = map.problems.first() {
        output::print_warning(&format!(
            "{}: {} record(s) could not be read; first: {p}",
            o.name(),
            map.problems.len()
        ));
    }
    let mut out = output::stdout();
    let mut missing = 0usize;
    if args.json {
        let results: Vec<_> = queries
            .iter()
            .map(|q| {
                let s = map.lookup(q.addr, q.time);
                missing += usize::from(s.is_none());
                result_json(q, s.as_ref())
            })
            .collect();
        let doc = json!({
            "schema": "profkit.symbolize/1",
            "file": o.name(),
            "debug_bias": map.debug_bias,
            "truncated": serde_json::from_str::<serde_json::Value>(
                &profkit_common::truncation::json(map.truncation.as_ref())
            )?,
            "results": results,
        });
        serde_json::to_writer(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        for q in &queries {
            let at = q.time.map(|t| format!("@{t}")).unwrap_or_default();
            match map.lookup(q.addr, q.time) {
                None => {
                    missing += 1;
                    writeln!(
                        out,
                        "{:#x}{at}: ?? (no code at this address{})",
                        q.addr,
                        if q.time.is_some() {
                            " at this time"
                        } else {
                            ""
                        }
                    )?;
                }
                Some(s) => {
                    let r = s.region;
                    writeln!(out, "{:#x}{at}: {} + {:#x}", q.addr, r.name, s.offset)?;
                    for f in &s.frames {
                        let inl = if f.inlined { " (inlined)" } else { "" };
                        writeln!(out, "    {} at {}{inl}", f.function, location(f))?;
                    }
                    let end = match (r.end_time, r.end_reason) {
                        (Some(t), Some(why)) => format!(", until {t} ({why})"),
                        (Some(t), None) => format!(", until {t}"),
                        _ => String::new(),
                    };
                    writeln!(
                        out,
                        "    code {:#x}..{:#x} (code_index {}, tid {}, loaded at {}{end}, record #{})",
                        r.start,
                        r.end(),
                        r.code_index,
                        r.tid,
                        r.load_time,
                        r.record
                    )?;
                }
            }
        }
    }
    out.flush().context("cannot write")?;
    if missing > 0 {
        output::print_note(&format!(
            "{missing} of {} address(es) had no code{}",
            queries.len(),
            if queries.iter().any(|q| q.time.is_some()) {
                " live at the time given"
            } else {
                ""
            }
        ));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries() {
        assert_eq!(
            parse_query("0x10@5").unwrap(),
            Query {
                addr: 16,
                time: Some(5)
            }
        );
        assert_eq!(parse_query("16@1.5").unwrap().time, Some(1_500_000_000));
        assert_eq!(parse_query("0x10").unwrap().time, None);
        assert!(parse_query("zz").is_err());
        assert!(parse_query("0x1@1.").is_err());
    }
}
