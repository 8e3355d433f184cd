//! `profkit convert FILE -o OUT [-f FORMAT]`: to a viewer or tool through the model's event
//! stream (profkit-export's writers, every input that has calls, samples or code), or between a
//! format's own encodings (XRay → llvm-xray YAML, jitdump ↔ perf map, jitdump re-encoded).
//! Outputs are staged and appear only when the conversion succeeded.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};

use crate::instr_maps::names;
use crate::to_viewer;
use profkit_export::{Format as Out, Output};
use profkit_jitdump::convert::{convert, pid_from_file_name, Encoded, Encoding};
use profkit_jitdump::Endian;
use profkit_model::FuncId;
use profkit_xray::yaml::{write_yaml, YamlOptions};

use crate::cli::{ConvertArgs, EndianArg, OutputFormat};
use crate::output;
use crate::source::Opened;
use profkit_model::detect::Format;

pub fn run(args: &ConvertArgs) -> Result<ExitCode> {
    let target = args
        .format
        .or_else(|| OutputFormat::from_path(&args.output))
        .ok_or_else(|| {
            anyhow!(
                "{}: cannot tell the output format from the name; pass -f (perfetto, chrome, firefox, speedscope, folded, svg, pprof, parquet, perf-map, jitdump, yaml)",
                args.output.display()
            )
        })?;
    let o = Opened::open(&args.file, &args.input)?;
    let output = Output::parse(&args.output.to_string_lossy());
    let out_name = args.output.display().to_string();
    match (o.format, target) {
        (Format::Jitdump | Format::PerfMap, OutputFormat::Export(Out::PerfMap))
        | (_, OutputFormat::Jitdump) => own_encoding(args, &o, target, &output)?,
        (_, OutputFormat::Export(fmt)) => {
            to_viewer::write(args, &o, fmt, &output)?;
        }
        (Format::Xray | Format::XrayYaml, OutputFormat::Yaml) => {
            let trace = o.trace()?;
            let names = if args.symbolize {
                Some(names(&args.instr_map)?)
            } else {
                None
            };
            let name = |id: u32| {
                names
                    .as_ref()
                    .map_or_else(String::new, |n| n.name(FuncId(id)))
            };
            let release = |start, end| o.release(start, end);
            let opts = YamlOptions {
                sort: !args.no_sort,
                names: names
                    .is_some()
                    .then_some(&name as &(dyn Fn(u32) -> String + Sync)),
                release: Some(&release),
            };
            let mut out = output
                .create_large()
                .with_context(|| format!("{out_name}: cannot create"))?;
            let r = write_yaml(&trace, &opts, &mut out)
                .with_context(|| format!("{out_name}: cannot write"))?;
            out.flush()
                .with_context(|| format!("{out_name}: cannot write"))?;
            if let Some(t) = &r.truncation {
                output::print_truncation(o.name(), t);
            }
            if let Some(p) = r.problems.first() {
                output::print_warning(&format!(
                    "{}: skipped {} undecodable record(s); first: {p}",
                    o.name(),
                    r.problems.len()
                ));
            }
        }
        (other, OutputFormat::Yaml) => bail!(
            "{}: llvm-xray YAML is written from XRay traces; this is {}",
            o.name(),
            other.description()
        ),
    }
    output
        .commit()
        .with_context(|| format!("{out_name}: cannot write"))?;
    Ok(ExitCode::SUCCESS)
}

/// jitdump ↔ perf map, and a jitdump re-encoded (`--endian`).
fn own_encoding(
    args: &ConvertArgs,
    o: &Opened,
    target: OutputFormat,
    output: &Output,
) -> Result<()> {
    let out_name = args.output.display().to_string();
    let mut out = output
        .create()
        .with_context(|| format!("{out_name}: cannot create"))?;
    let endian = args.endian.map(|e| match e {
        EndianArg::Little => Endian::Little,
        EndianArg::Big => Endian::Big,
    });
    let input = match o.format {
        Format::Jitdump => Encoded::Jitdump(o.jitdump()?),
        Format::PerfMap => Encoded::PerfMap {
            text: o.bytes(),
            pid: pid_from_file_name(o.name()).unwrap_or(0),
        },
        other => bail!(
            "{}: a jitdump is written from a jitdump or a perf map; this is {}",
            o.name(),
            other.description()
        ),
    };
    let to = match target {
        OutputFormat::Jitdump => Encoding::Jitdump { endian },
        _ => Encoding::PerfMap,
    };
    let stats = convert(&input, to, &mut out)?;
    out.flush()
        .with_context(|| format!("{out_name}: cannot write"))?;
    if stats.skipped > 0 {
        output::print_warning(&format!(
            "{}: skipped {} item(s) that could not be converted",
            o.name(),
            stats.skipped
        ));
        for n in &stats.notes {
            output::print_note(n);
        }
    }
    Ok(())
}
