//! The one place that maps an input's format to its crate's `info`, `dump` and `validate`
//! (analyses and conversions go through the model's [`Source`](profkit_model::Source)). A
//! jitdump or Mono file walks its records or buffers through one interface whether it is
//! mapped or a stream ([`Scanned::jitdump`], [`Scanned::mlpd`]).

use std::io::Write;

use anyhow::Result;
use profkit_common::{Summary, Truncation, Validation};

use crate::cli::DumpArgs;
use crate::detect::Format;
use crate::source::{Opened, Scanned};

/// What `profkit info` shows of the input.
pub fn summary(s: &mut Scanned) -> Result<Summary> {
    Ok(match s.format() {
        Format::Jitdump => profkit_jitdump::summary_of(&mut *s.jitdump()?),
        Format::Mlpd => profkit_mlpd::summary::summary_of(&mut *s.mlpd()?),
        Format::PerfMap => profkit_jitdump::perfmap::summary(s.whole()?.bytes()),
        Format::Xray => profkit_xray::summary(&s.whole()?.trace()?),
        Format::XrayProfile => profkit_xray::profile::summary::summary(&s.whole()?.profile()?),
        Format::XrayYaml => {
            let mut sum = profkit_xray::summary(&s.whole()?.trace()?);
            sum.format = "xray-yaml";
            sum.kind.push_str(" (read from llvm-xray YAML)");
            sum
        }
        Format::Perf => perf_summary(s.whole()?)?,
        Format::Elf => return Err(s.whole()?.unsupported("info")),
    })
}

/// perf.data: the reader's summary, and where each JIT process's jitdump and perf map are.
fn perf_summary(o: &Opened) -> Result<Summary> {
    use profkit_common::summary::Value;
    let data = o.perf()?;
    let mut s = profkit_perf::summary(&data);
    let search = o.jit_search()?;
    let mut found = Vec::new();
    for j in profkit_model::feed::perf::jit_sources(&data, &search) {
        let mut line = format!("pid {}", j.pid);
        if let Some(c) = &j.comm {
            line.push_str(&format!(" ({c})"));
        }
        match &j.jitdump {
            Ok(p) => line.push_str(&format!(": jitdump {}", p.display())),
            Err(tried) if tried.is_empty() => line.push_str(": no jitdump"),
            Err(tried) => {
                let tried: Vec<String> = tried.iter().map(|t| t.display().to_string()).collect();
                line.push_str(&format!(": jitdump not found (tried {})", tried.join(", ")));
            }
        }
        match &j.perf_map {
            Ok(p) => line.push_str(&format!(", perf map {}", p.display())),
            Err(tried) => {
                let tried: Vec<String> = tried.iter().map(|t| t.display().to_string()).collect();
                line.push_str(&format!(", no perf map (tried {})", tried.join(", ")));
            }
        }
        found.push(Value::Str(line));
    }
    if !found.is_empty() {
        s.details.push(("jit metadata", Value::List(found)));
    }
    Ok(s)
}

/// What `profkit validate` reports of the input (a jitdump or Mono header that does not parse
/// is a finding).
pub fn validate(s: &mut Scanned) -> Result<Validation> {
    let o = match s {
        Scanned::Stream(st, Format::Jitdump) => {
            return Ok(profkit_jitdump::validate::validate_stream(st))
        }
        Scanned::Stream(st, Format::Mlpd) => {
            return Ok(profkit_mlpd::validate::validate_stream(st))
        }
        _ => s.whole()?,
    };
    Ok(match o.format {
        Format::Jitdump => profkit_jitdump::validate(o.bytes()),
        Format::PerfMap => profkit_jitdump::perfmap::validate(o.bytes()),
        Format::Xray | Format::XrayYaml => profkit_xray::verify(&o.trace()?),
        Format::XrayProfile => profkit_xray::profile::verify::verify(&o.profile()?),
        Format::Mlpd => profkit_mlpd::validate::validate_bytes(o.bytes()),
        Format::Perf => profkit_perf::validate(o.bytes()),
        Format::Elf => return Err(o.unsupported("validate")),
    })
}

/// What a format calls its records in messages.
pub fn record_unit(format: Format) -> &'static str {
    match format {
        Format::PerfMap => "lines",
        Format::Mlpd => "events",
        _ => "records",
    }
}

/// How a dump ended: what could not be decoded, and the cut.
#[derive(Debug, Default)]
pub struct Dumped {
    /// Undecodable parts, with their offsets (each skipped what it affected).
    pub problems: Vec<String>,
    /// A corrupt record that ended the dump.
    pub stopped: Option<String>,
    /// Where the file is cut, if it is.
    pub truncation: Option<Truncation>,
}

/// `profkit dump` of the input into `out`.
pub fn dump(s: &mut Scanned, args: &DumpArgs, out: &mut dyn Write) -> Result<Dumped> {
    let mut d = Dumped::default();
    match s.format() {
        Format::Jitdump => {
            let opts = profkit_jitdump::dump::DumpOptions {
                json: args.json,
                code: args.code,
            };
            let r = profkit_jitdump::dump::write_records(out, &mut *s.jitdump()?, opts)?;
            d.stopped = r.error.map(|e| e.to_string());
            d.truncation = r.truncation;
        }
        Format::Mlpd => {
            let mut src = s.mlpd()?;
            let problems = if args.json {
                profkit_mlpd::dump::write_ndjson_of(&mut *src, out)?
            } else {
                profkit_mlpd::dump::write_text_of(&mut *src, out)?
            };
            d.problems = problems
                .iter()
                .filter(|p| !p.is_truncation())
                .map(|p| p.to_string())
                .collect();
            d.truncation = src.truncation();
        }
        _ => dump_whole(s.whole()?, args, out, &mut d)?,
    }
    out.flush()?;
    Ok(d)
}

/// [`dump`] of the formats read whole.
fn dump_whole(o: &Opened, args: &DumpArgs, out: &mut dyn Write, d: &mut Dumped) -> Result<()> {
    match o.format {
        Format::Jitdump | Format::Mlpd => unreachable_format(o)?,
        Format::PerfMap => {
            let opts = profkit_jitdump::dump::DumpOptions {
                json: args.json,
                code: false,
            };
            profkit_jitdump::dump::write_perf_map(out, o.bytes(), opts, &mut |e| {
                d.problems.push(e.to_string())
            })?;
        }
        Format::Xray | Format::XrayYaml => {
            let opts = profkit_xray::dump::DumpOptions {
                json: args.json,
                verify: args.verify,
            };
            let r = profkit_xray::dump::dump(&o.trace()?, &opts, out)?;
            d.problems = r.problems.iter().map(|p| p.to_string()).collect();
            d.truncation = r.truncation;
        }
        Format::XrayProfile => {
            let r = profkit_xray::profile::dump::dump(&o.profile()?, args.json, out)?;
            d.problems = r.problems.iter().map(|p| p.to_string()).collect();
            d.truncation = r.truncation;
        }
        Format::Perf => {
            let opts = profkit_perf::dump::DumpOptions {
                json: args.json,
                stacks: args.code,
            };
            let r = profkit_perf::dump::write(&o.perf()?, opts, out)?;
            d.stopped = r.error.map(|e| e.to_string());
            d.truncation = r.truncation;
        }
        Format::Elf => return Err(o.unsupported("dump")),
    }
    Ok(())
}

/// The formats [`Scanned`] walks itself never get here.
fn unreachable_format<T>(o: &Opened) -> Result<T> {
    Err(anyhow::anyhow!(
        "{}: {} is walked through Scanned",
        o.name(),
        o.format.description()
    ))
}
