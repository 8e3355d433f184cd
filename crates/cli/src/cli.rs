//! Argument definitions (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Read, validate, analyze and convert the files JIT runtimes and instrumented programs hand
/// to profilers: perf jitdump and perf maps, LLVM XRay traces (basic and FDR) with their
/// instrumentation maps, and Mono log profiler files (.mlpd).
///
/// Input formats are detected from content; gzip is unwrapped transparently; `-` reads stdin.
#[derive(Debug, Parser)]
#[command(
    name = "profkit",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Format, version, header, counts per record kind, threads, time span, truncation
    /// (--json: profkit.info/2).
    Info(InfoArgs),
    /// One line per record (NDJSON with --json).
    Dump(DumpArgs),
    /// Spec violations (errors) and named producer quirks (warnings); exit 1 on errors.
    Validate(ValidateArgs),
    /// Convert a trace for a viewer or tool (Perfetto, Chrome JSON, Firefox Profiler, speedscope,
    /// folded/SVG flame graph, pprof, Parquet, perf map), or between jitdump, perf map and YAML.
    Convert(ConvertArgs),
    /// Per-function latencies of the calls of an XRay trace or a Mono `calls` file (`--llvm`:
    /// llvm-xray account's exact layout).
    Account(AccountArgs),
    /// Aggregated call stacks of an XRay trace or a Mono file (`--folded`: exclusive-time
    /// flame graph input).
    Stack(StackArgs),
    /// The XRay instrumentation map of a binary as YAML (llvm-xray extract's output).
    Extract(ExtractArgs),
    /// Mono log profiler report (mprof-report's sections, with its bugs fixed; --json).
    Report(ReportArgs),
    /// The function, inline frames and file:line of JIT code addresses in a jitdump, at a time.
    Symbolize(SymbolizeArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
}

/// Input formats profkit can detect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// perf jitdump (`jit-<pid>.dump`).
    Jitdump,
    /// perf map text (`perf-<pid>.map`).
    PerfMap,
    /// LLVM XRay trace (basic or FDR).
    Xray,
    /// Mono log profiler (`.mlpd`).
    Mlpd,
    /// ELF binary (XRay instrumentation map).
    Elf,
}

#[derive(Debug, Args)]
pub struct InputOpts {
    /// Treat the input as this format instead of detecting it.
    #[arg(long, value_enum, global = true)]
    pub input_format: Option<InputFormat>,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Input files (`-` for stdin).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// JSON output (schema profkit.info/2, docs/cli.md), one object per line per file.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: InputOpts,
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// Input file (`-` for stdin).
    pub file: PathBuf,
    /// NDJSON output: one JSON object per record.
    #[arg(long)]
    pub json: bool,
    /// Also print code bytes (hex) of JIT_CODE_LOAD records and unwinding data.
    #[arg(long)]
    pub code: bool,
    /// Keep reading a growing jitdump (a live JIT's) until JIT_CODE_CLOSE, Ctrl-C or --timeout.
    #[arg(long)]
    pub follow: bool,
    /// With --follow: stop after this many seconds without new records.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// XRay FDR: group records by block, as `llvm-xray fdr-dump --verify` does.
    #[arg(long)]
    pub verify: bool,
    #[command(flatten)]
    pub input: InputOpts,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Input files (`-` for stdin).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// JSON output (schema profkit.validate/1, docs/cli.md), one object per line per file.
    #[arg(long)]
    pub json: bool,
    /// Do not list warnings (they are still counted).
    #[arg(long)]
    pub errors_only: bool,
    #[command(flatten)]
    pub input: InputOpts,
}

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
    /// .parquet).
    #[arg(short, long, value_parser = OutputFormat::parse, value_name = "FORMAT")]
    pub format: Option<OutputFormat>,
    /// Byte order of jitdump output (default: the input's, or the host's).
    #[arg(long, value_enum)]
    pub endian: Option<EndianArg>,
    /// XRay: the instrumented binary (for function names with --symbolize).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
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
    /// Folded / SVG / pprof from traced calls: weigh stacks by call count instead of time.
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
    pub input: InputOpts,
}

#[derive(Debug, Args)]
pub struct SymbolizeArgs {
    /// The jitdump (`jit-<pid>.dump`, gzip allowed; `-` for stdin).
    pub file: PathBuf,
    /// Addresses (hex with 0x, or decimal), each optionally `@TIME`: the dump's clock in ns, or
    /// seconds with a fraction as `perf script` prints them. Without a time, the code live at
    /// the end of the dump answers.
    #[arg(required = true, value_name = "ADDR[@TIME]")]
    pub addresses: Vec<String>,
    /// JSON output (schema profkit.symbolize/1).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: InputOpts,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Sort column of `account` (llvm-xray's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AccountSort {
    Funcid,
    Count,
    Min,
    Med,
    #[value(name = "90p")]
    P90,
    #[value(name = "99p")]
    P99,
    Max,
    Sum,
    Func,
}

/// Sort order of `account`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortOrder {
    Asc,
    Dsc,
}

/// Output format of `account --llvm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AccountFormat {
    Text,
    Csv,
}

#[derive(Debug, Args)]
pub struct AccountArgs {
    /// XRay trace (binary or llvm-xray YAML) or Mono log profiler file (`-` for stdin).
    pub file: PathBuf,
    /// The instrumented binary, for function names (without it functions print as `#N`).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
    /// Reproduce `llvm-xray account` byte for byte (where llvm-xray is right).
    #[arg(long)]
    pub llvm: bool,
    /// With --llvm: text or csv.
    #[arg(short, long, value_enum, default_value = "text")]
    pub format: AccountFormat,
    /// JSON output (schema profkit.account/1).
    #[arg(long, conflicts_with = "llvm")]
    pub json: bool,
    /// Sort by this column.
    #[arg(short, long, value_enum, default_value = "funcid")]
    pub sort: AccountSort,
    /// Sort order.
    #[arg(short = 'r', long = "sortorder", value_enum, default_value = "asc")]
    pub sortorder: SortOrder,
    /// Only the first N rows.
    #[arg(short = 'p', long = "top", value_name = "N")]
    pub top: Option<usize>,
    /// Deduce sibling calls: an exit of a function deeper in the stack closes the frames above
    /// it (llvm-xray -d). profkit always does this unless --llvm is given without -d.
    #[arg(short = 'd', long = "deduce-sibling-calls")]
    pub deduce_sibling_calls: bool,
    /// Accepted for llvm-xray compatibility; profkit always keeps going.
    #[arg(short = 'k', long = "keep-going")]
    pub keep_going: bool,
    #[command(flatten)]
    pub input: InputOpts,
}

/// What `stack --aggregation` sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StackAggregation {
    Time,
    Count,
}

#[derive(Debug, Args)]
pub struct StackArgs {
    /// XRay trace (binary or llvm-xray YAML) or Mono log profiler file (`-` for stdin).
    pub file: PathBuf,
    /// The instrumented binary, for function names.
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
    /// Reproduce `llvm-xray stack` (human output; with --folded, its inclusive flame output).
    #[arg(long)]
    pub llvm: bool,
    /// Folded stacks (`f;g;h VALUE`) for flame-graph tools; exclusive time unless --inclusive
    /// (`--all-stacks` is llvm-xray's name).
    #[arg(long, visible_alias = "all-stacks")]
    pub folded: bool,
    /// With --folded: inclusive time (llvm-xray's flame values).
    #[arg(long)]
    pub inclusive: bool,
    /// One set of stacks per thread (`--per-thread-stacks` is llvm-xray's name).
    #[arg(
        long,
        visible_alias = "per-thread-stacks",
        conflicts_with = "aggregate_threads"
    )]
    pub per_thread: bool,
    /// With --llvm: merge the threads' stacks as `llvm-xray stack --aggregate-threads` does
    /// (without --llvm, stacks of all threads are merged unless --per-thread).
    #[arg(long)]
    pub aggregate_threads: bool,
    /// Sum time or count calls (`--aggregation-type` is llvm-xray's name).
    #[arg(
        long,
        visible_alias = "aggregation-type",
        value_enum,
        default_value = "time"
    )]
    pub aggregation: StackAggregation,
    /// Accepted for llvm-xray compatibility; profkit always keeps going.
    #[arg(short = 'k', long = "keep-going")]
    pub keep_going: bool,
    #[command(flatten)]
    pub input: InputOpts,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// The instrumented binary.
    pub binary: PathBuf,
    /// Fill in `function-name` (demangled).
    #[arg(short, long)]
    pub symbolize: bool,
    /// Output file (default stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Input .mlpd file (plain or gzip; `-` for stdin).
    pub file: PathBuf,
    /// Comma-separated sections: header,jit,gc,sample,alloc,call,metadata,exception,monitor,
    /// thread,domain,context,heapshot,counters (and stats). Default: all but stats.
    #[arg(long, value_delimiter = ',')]
    pub reports: Vec<String>,
    /// Collect and show backtraces: callers of each method, allocation, throw, lock
    /// contention and GC handle sites, heap-shot references (as mprof-report --traces).
    #[arg(long)]
    pub traces: bool,
    /// Frames per backtrace with --traces.
    #[arg(long, default_value_t = 6)]
    pub maxframes: usize,
    /// Sort the call section by total, self or calls.
    #[arg(long, value_parser = ["total", "self", "calls"], default_value = "total")]
    pub method_sort: String,
    /// Sort allocations and heap-shot classes by bytes or count.
    #[arg(long, value_parser = ["bytes", "count"], default_value = "bytes")]
    pub alloc_sort: String,
    /// Track these objects (addresses, comma-separated): print only what happens to them.
    #[arg(long, value_delimiter = ',')]
    pub track: Vec<String>,
    /// Find and track objects: S:MINSIZE (allocated with at least that many bytes) or
    /// T:NAME (class name contains NAME); give both to require both.
    #[arg(long)]
    pub find: Vec<String>,
    /// Only this thread (id as printed in the thread section, hex with 0x or decimal).
    #[arg(long)]
    pub thread: Option<String>,
    /// Only events in FROM-TO seconds since the first buffer.
    #[arg(long)]
    pub time: Option<String>,
    /// List every method, class and counter.
    #[arg(long)]
    pub verbose: bool,
    /// JSON output (schema profkit.mlpd-report/1).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: InputOpts,
}
