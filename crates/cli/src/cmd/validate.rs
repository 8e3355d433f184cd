//! `profkit validate FILE...`: errors (spec violations) and warnings (producer quirks).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use profkit_jitdump::validate::{Finding, Severity, Validation};
use profkit_jitdump::{perfmap, validate};
use serde_json::json;

use super::{open_detected, unsupported};
use crate::cli::ValidateArgs;
use crate::detect::Format;
use crate::output;

pub fn run(args: &ValidateArgs) -> Result<ExitCode> {
    let mut out = output::color_stdout();
    let mut any_errors = false;
    for path in &args.files {
        let (input, format) = open_detected(path, args.input.input_format)?;
        let report = match format {
            Format::Jitdump => validate(&input.data),
            Format::PerfMap => perfmap::validate(&input.data),
            Format::Xray | Format::XrayYaml => {
                any_errors |=
                    super::xray::validate(input, format, args.json, args.errors_only, &mut out)?;
                continue;
            }
            Format::Mlpd => {
                any_errors |= super::mlpd::validate(input, args.json, args.errors_only, &mut out)?;
                continue;
            }
            other => return Err(unsupported(&input, other, "validate")),
        };
        any_errors |= report.has_errors();
        if args.json {
            let list = |sev: Severity| -> Vec<serde_json::Value> {
                report
                    .findings
                    .iter()
                    .filter(|f| f.severity == sev)
                    .map(|f| json!({"offset": f.offset, "record": f.record, "code": f.code, "message": f.message}))
                    .collect()
            };
            let v = json!({
                "schema": "profkit.validate/1",
                "file": input.name,
                "format": format.name(),
                "records": report.records,
                "errors": list(Severity::Error),
                "warnings": if args.errors_only { Vec::new() } else { list(Severity::Warning) },
            });
            serde_json::to_writer(&mut out, &v)?;
            writeln!(out)?;
        } else {
            write_text(&mut out, &input.name, format, &report, args.errors_only)?;
        }
    }
    out.flush()?;
    Ok(if any_errors {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn write_text(
    out: &mut impl Write,
    name: &str,
    format: Format,
    report: &Validation,
    errors_only: bool,
) -> Result<()> {
    let errors = report.errors().count();
    let warnings = report.warnings().count();
    let unit = if format == Format::PerfMap {
        "lines"
    } else {
        "records"
    };
    writeln!(
        out,
        "{name}: {} ({} {unit}): {errors} error{}, {warnings} warning{}",
        format.name(),
        report.records,
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" },
    )?;
    for f in &report.findings {
        if errors_only && f.severity == Severity::Warning {
            continue;
        }
        write_finding(out, format, f)?;
    }
    Ok(())
}

fn write_finding(out: &mut impl Write, format: Format, f: &Finding) -> Result<()> {
    let is_error = f.severity == Severity::Error;
    let style = output::severity_style(is_error);
    let label = if is_error { "error" } else { "warning" };
    let place = match (format, f.record) {
        (Format::PerfMap, Some(line)) => format!("line {line}"),
        (_, Some(r)) => format!("record #{r} at offset {:#x}", f.offset),
        (_, None) if f.code == "findings-capped" => "file".to_string(),
        (_, None) => format!("header at offset {:#x}", f.offset),
    };
    writeln!(
        out,
        "  {style}{label}{style:#}[{}] {place}: {}",
        f.code, f.message
    )?;
    Ok(())
}
