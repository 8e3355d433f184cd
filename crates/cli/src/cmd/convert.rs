//! `profkit convert FILE -o OUT [-f FORMAT]`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use profkit_jitdump::convert::{
    header_like, jitdump_to_perf_map, perf_map_to_jitdump, pid_from_file_name, reencode,
    ConvertStats,
};
use profkit_jitdump::{Endian, HeaderOptions, JitDump, JitDumpWriter};

use super::{export, open_detected, parse_error, unsupported};
use profkit_export::{Format as Out, Output};

use crate::cli::{ConvertArgs, EndianArg, OutputFormat};
use crate::detect::Format;
use crate::output;

fn format_from_extension(path: &Path) -> Option<OutputFormat> {
    let name = path.file_name()?.to_str()?;
    if name.ends_with(".map") {
        Some(OutputFormat::Export(Out::PerfMap))
    } else if name.ends_with(".dump") || name.ends_with(".jitdump") {
        Some(OutputFormat::Jitdump)
    } else if name.ends_with(".yaml") || name.ends_with(".yml") {
        Some(OutputFormat::Yaml)
    } else {
        Out::from_path(path).map(OutputFormat::Export)
    }
}

pub fn run(args: &ConvertArgs) -> Result<ExitCode> {
    let target = match args.format.or_else(|| format_from_extension(&args.output)) {
        Some(f) => f,
        None => {
            return Err(anyhow!(
                "{}: cannot tell the output format from the name; pass -f (perfetto, chrome, firefox, speedscope, folded, svg, pprof, parquet, perf-map, jitdump, yaml)",
                args.output.display()
            ))
        }
    };
    let (input, format) = open_detected(&args.file, args.input.input_format)?;
    // Viewer formats (and a perf map from anything but jitdump / perf map) go through the
    // event model.
    match target {
        OutputFormat::Export(Out::PerfMap)
            if matches!(format, Format::Jitdump | Format::PerfMap) => {}
        OutputFormat::Export(out) => {
            export::run(args, input, format, out)?;
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let endian = args.endian.map(|e| match e {
        EndianArg::Little => Endian::Little,
        EndianArg::Big => Endian::Big,
    });
    let target_out = Output::parse(&args.output.to_string_lossy());
    let out_name = args.output.display().to_string();
    let mut out = if target == OutputFormat::Yaml {
        target_out.create_large()
    } else {
        target_out.create()
    }
    .with_context(|| format!("{out_name}: cannot create"))?;
    let stats: ConvertStats = match (format, target) {
        (Format::Xray | Format::XrayYaml, OutputFormat::Yaml) => {
            super::xray::convert_yaml(
                input,
                format,
                args.instr_map.as_deref(),
                args.symbolize,
                !args.no_sort,
                Path::new("-"),
                &mut out,
            )?;
            drop(out);
            target_out
                .commit()
                .with_context(|| format!("{out_name}: cannot write"))?;
            return Ok(ExitCode::SUCCESS);
        }
        (Format::Jitdump, OutputFormat::Export(Out::PerfMap)) => {
            let dump = JitDump::parse(&input.data).map_err(|e| parse_error(&input, &e))?;
            jitdump_to_perf_map(&dump, &mut out)
                .with_context(|| format!("{out_name}: cannot write"))?
        }
        (Format::Jitdump, OutputFormat::Jitdump) => {
            let dump = JitDump::parse(&input.data).map_err(|e| parse_error(&input, &e))?;
            let header = header_like(&dump, endian.unwrap_or(dump.endian()));
            let mut w = JitDumpWriter::new(&mut out, &header)
                .with_context(|| format!("{out_name}: cannot write"))?;
            reencode(&dump, &mut w).with_context(|| format!("{out_name}: cannot write"))?
        }
        (Format::PerfMap, OutputFormat::Jitdump) => {
            let pid = pid_from_file_name(&input.name).unwrap_or(0);
            let header = HeaderOptions {
                endian: endian.unwrap_or(Endian::NATIVE),
                pid,
                timestamp: 0,
                ..HeaderOptions::default()
            };
            let mut w = JitDumpWriter::new(&mut out, &header)
                .with_context(|| format!("{out_name}: cannot write"))?;
            perf_map_to_jitdump(&input.data, pid, &mut w)
                .with_context(|| format!("{out_name}: cannot write"))?
        }
        (Format::PerfMap, OutputFormat::Export(Out::PerfMap)) => {
            let pid = pid_from_file_name(&input.name).unwrap_or(0);
            let mut buf = Vec::new();
            let mut w = JitDumpWriter::new(
                &mut buf,
                &HeaderOptions {
                    pid,
                    timestamp: 0,
                    ..HeaderOptions::default()
                },
            )?;
            let stats = perf_map_to_jitdump(&input.data, pid, &mut w)?;
            let dump = JitDump::parse(&buf).map_err(|e| parse_error(&input, &e))?;
            jitdump_to_perf_map(&dump, &mut out)?;
            stats
        }
        (other, _) => return Err(unsupported(&input, other, "convert")),
    };
    out.flush()
        .with_context(|| format!("{out_name}: cannot write"))?;
    drop(out);
    target_out
        .commit()
        .with_context(|| format!("{out_name}: cannot write"))?;
    if stats.skipped > 0 {
        output::print_warning(&format!(
            "{}: skipped {} item(s) that could not be converted",
            input.name, stats.skipped
        ));
        for n in &stats.notes {
            output::print_note(n);
        }
    }
    Ok(ExitCode::SUCCESS)
}
