//! Arguments of `convert`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{InputOpts, ProfileClockOpts};

/// Output format of `convert`: a viewer or tool format written by profkit-export, or a format
/// a format crate writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Perfetto, Chrome JSON, Firefox, speedscope, folded, SVG, pprof, Parquet, perf map.
    Export(profkit_export::Format),
    /// perf jitdump.
    Jitdump,
    /// llvm-xray's YAML trace (XRay input).
    Yaml,
}

impl OutputFormat {
    /// Parses `-f`: a profkit-export format name (`perfetto`, `chrome`, …, `perf-map`),
    /// `jitdump` or `yaml`.
    pub fn parse(s: &str) -> Result<OutputFormat, String> {
        match s {
            "jitdump" | "dump" => Ok(OutputFormat::Jitdump),
            "yaml" | "yml" => Ok(OutputFormat::Yaml),
            _ => profkit_export::Format::from_name(s)
                .map(OutputFormat::Export)
                .ok_or_else(|| {
                    let names: Vec<_> = profkit_export::Format::ALL
                        .iter()
                        .map(|f| f.name())
                        .chain(["jitdump", "yaml"])
                        .collect();
                    format!("unknown output format; one of: {}", names.join(", "))
                }),
        }
    }

    /// The format an output file's name implies (`.map`, `.dump`/`.jitdump`, `.yaml`, or a
    /// profkit-export extension).
    pub fn from_path(path: &std::path::Path) -> Option<OutputFormat> {
        let name = path.file_name()?.to_str()?;
        if name.ends_with(".map") {
            Some(OutputFormat::Export(profkit_export::Format::PerfMap))
        } else if name.ends_with(".dump") || name.ends_with(".jitdump") {
            Some(OutputFormat::Jitdump)
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            Some(OutputFormat::Yaml)
        } else {
            profkit_export::Format::from_path(path).map(OutputFormat::Export)
        }
    }
}

/// Parses `--time FROM-TO` (seconds, fractions allowed; either side may be empty) into ns.
pub fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("{s:?}: expected FROM-TO in seconds, e.g. 0.5-2"))?;
    let secs = |x: &str, dflt: u64| -> Result<u64, String> {
        let x = x.trim();
        if x.is_empty() {
            return Ok(dflt);
        }
        let v: f64 = x
            .parse()
            .map_err(|_| format!("{s:?}: {x:?} is not a number of seconds"))?;
        if !(v >= 0.0 && v.is_finite()) {
            return Err(format!("{s:?}: times must be non-negative"));
        }
        Ok((v * 1e9).round() as u64)
    };
    let (from, to) = (secs(a, 0)?, secs(b, u64::MAX)?);
    if from > to {
        return Err(format!("{s:?}: FROM is after TO"));
    }
    Ok((from, to))
}

/// Byte order for jitdump output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EndianArg {
    Little,
    Big,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Input file (`-` for stdin).
    pub file: PathBuf,
    /// Output file (`-` for stdout; then --format is required).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Output format; by default taken from the output's extension (.map, .dump/.jitdump, .yaml,
    /// .pftrace, .json, .json.gz, .fxprof.json.gz, .speedscope.json, .folded, .svg, .pb.gz,
    /// .parquet, .otlp.pb, .otlp.json).
    #[arg(short, long, value_parser = OutputFormat::parse, value_name = "FORMAT")]
    pub format: Option<OutputFormat>,
    /// Byte order of jitdump output (default: the input's, or the host's).
    #[arg(long, value_enum)]
    pub endian: Option<EndianArg>,
    /// XRay: the instrumented binary (for function names with --symbolize).
    /// Repeat for instrumented shared objects (`-fxray-shared`), in the order they registered
    /// (the executable first), or pin an object id with `-m ID=PATH`.
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Vec<String>,
    /// XRay YAML: write function names instead of ids in `function:`.
    #[arg(short = 'y', long)]
    pub symbolize: bool,
    /// XRay YAML: keep the file's order instead of sorting records by TSC.
    #[arg(long)]
    pub no_sort: bool,
    /// Keep only this time window, in seconds since the trace's start: `FROM-TO`, `FROM-` or
    /// `-TO` (timeline, stack and table outputs).
    #[arg(long, value_name = "FROM-TO", value_parser = parse_window)]
    pub time: Option<(u64, u64)>,
    /// Keep only these threads (thread ids as the trace numbers them; repeat or comma-separate).
    #[arg(long, value_name = "TID", value_delimiter = ',')]
    pub thread: Vec<u64>,
    /// Keep only these processes (repeat or comma-separate).
    #[arg(long, value_name = "PID", value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// perf.data: the event whose samples to use (its `perf record -e` name, e.g. cycles or
    /// page-faults; default: the first event recorded).
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
    /// Folded / SVG / pprof: weigh stacks by call or sample count instead of time (or period).
    #[arg(long)]
    pub counts: bool,
    /// Folded / SVG: inclusive time (llvm-xray's flame graph behaviour) instead of exclusive.
    #[arg(long)]
    pub inclusive: bool,
    /// Title of SVG flame graphs and Firefox profiles (default: the input's name).
    #[arg(long)]
    pub title: Option<String>,
    /// No progress bar, even on a terminal.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub clock: ProfileClockOpts,
    #[command(flatten)]
    pub input: InputOpts,
}
