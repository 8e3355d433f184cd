//! `profkit validate FILE...`: errors (spec violations) and warnings (producer quirks), each
//! with its stable code, offset and record, for every format; exit 1 when there are errors.
//! JSON: `profkit.validate/1` (docs/cli.md).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use profkit_common::{json, Finding, Severity, Validation};

use crate::cli::ValidateArgs;
use crate::source::Scanned;
use crate::{formats, output};
use profkit_model::detect::Format;

pub fn run(args: &ValidateArgs) -> Result<ExitCode> {
    let mut out = output::color_stdout();
    let mut any_errors = false;
    for path in &args.files {
        let mut o = Scanned::open(path, &args.input)?;
        let v = formats::validate(&mut o)?;
        any_errors |= v.has_errors();
        if args.json {
            write_json(&mut out, &o, &v, args.errors_only)?;
        } else {
            write_text(&mut out, &o, &v, args.errors_only)?;
        }
    }
    out.flush()?;
    Ok(if any_errors {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn write_text(out: &mut impl Write, o: &Scanned, v: &Validation, errors_only: bool) -> Result<()> {
    let errors = v.error_count();
    let warnings = v.warning_count();
    writeln!(
        out,
        "{}: {} ({} {}): {errors} error{}, {warnings} warning{}",
        o.name(),
        o.format().name(),
        v.records,
        formats::record_unit(o.format()),
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" },
    )?;
    for f in &v.findings {
        if errors_only && f.severity == Severity::Warning {
            continue;
        }
        let is_error = f.severity == Severity::Error;
        let style = output::severity_style(is_error);
        writeln!(
            out,
            "  {style}{}{style:#}[{}] {}: {}",
            f.severity.name(),
            f.code,
            place(o.format(), f),
            f.message
        )?;
    }
    Ok(())
}

/// Where a finding is, in the words of its format.
fn place(format: Format, f: &Finding) -> String {
    match (format, f.record) {
        (Format::PerfMap, Some(line)) => format!("line {line}"),
        (_, Some(r)) => format!("record #{r} at offset {:#x}", f.offset),
        (_, None) if f.code == profkit_common::finding::FINDINGS_CAPPED => "file".to_string(),
        (_, None) => format!("offset {:#x}", f.offset),
    }
}

fn write_json(out: &mut impl Write, o: &Scanned, v: &Validation, errors_only: bool) -> Result<()> {
    let mut b: Vec<u8> = Vec::with_capacity(1024);
    b.extend_from_slice(b"{\"schema\":\"profkit.validate/1\",\"file\":");
    json::push_str(&mut b, o.name());
    b.extend_from_slice(b",\"format\":");
    json::push_str(&mut b, o.format().name());
    b.extend_from_slice(format!(",\"records\":{}", v.records).as_bytes());
    for (key, sev) in [("errors", Severity::Error), ("warnings", Severity::Warning)] {
        b.extend_from_slice(format!(",\"{key}\":[").as_bytes());
        let list = v
            .findings
            .iter()
            .filter(|f| f.severity == sev && !(errors_only && sev == Severity::Warning));
        for (i, f) in list.enumerate() {
            if i > 0 {
                b.push(b',');
            }
            b.extend_from_slice(format!("{{\"offset\":{},\"record\":", f.offset).as_bytes());
            match f.record {
                Some(r) => b.extend_from_slice(r.to_string().as_bytes()),
                None => b.extend_from_slice(b"null"),
            }
            b.extend_from_slice(b",\"code\":");
            json::push_str(&mut b, f.code);
            b.extend_from_slice(b",\"message\":");
            json::push_str(&mut b, &f.message);
            b.push(b'}');
        }
        b.push(b']');
    }
    b.extend_from_slice(
        format!(
            ",\"error_count\":{},\"warning_count\":{},\"truncated\":",
            v.error_count(),
            v.warning_count()
        )
        .as_bytes(),
    );
    match &v.truncation {
        Some(t) => {
            b.extend_from_slice(format!("{{\"offset\":{},\"record\":", t.offset).as_bytes());
            match t.record {
                Some(r) => b.extend_from_slice(r.to_string().as_bytes()),
                None => b.extend_from_slice(b"null"),
            }
            b.extend_from_slice(b",\"reason\":");
            json::push_str(&mut b, &t.reason);
            b.push(b'}');
        }
        None => b.extend_from_slice(b"null"),
    }
    b.extend_from_slice(b"}\n");
    out.write_all(&b)?;
    Ok(())
}
