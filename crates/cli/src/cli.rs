//! Argument definitions (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Read, validate, analyze and convert the files JIT runtimes and instrumented programs hand
/// to profilers: perf jitdump and perf map (XRay and Mono log profiler support is on the way).
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
    /// Format, version, header, counts per record kind, pids, time span, truncation.
    Info(InfoArgs),
    /// One line per record (NDJSON with --json).
    Dump(DumpArgs),
    /// Spec violations (errors) and named producer quirks (warnings); exit 1 on errors.
    Validate(ValidateArgs),
    /// Convert between formats: jitdump -> perf map, jitdump -> jitdump (re-encode), perf map -> jitdump.
    Convert(ConvertArgs),
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
    /// JSON output (schema profkit.info/1), one object per line per file.
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
    #[command(flatten)]
    pub input: InputOpts,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Input files (`-` for stdin).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// JSON output (schema profkit.validate/1), one object per line per file.
    #[arg(long)]
    pub json: bool,
    /// Do not list warnings (they are still counted).
    #[arg(long)]
    pub errors_only: bool,
    #[command(flatten)]
    pub input: InputOpts,
}

/// Output formats of `convert`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// perf map text: one `START SIZE name` line per code load.
    PerfMap,
    /// perf jitdump.
    Jitdump,
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
    /// Output format; by default taken from the output's extension (.map, .dump/.jitdump).
    #[arg(short, long, value_enum)]
    pub format: Option<OutputFormat>,
    /// Byte order of jitdump output (default: the input's, or the host's).
    #[arg(long, value_enum)]
    pub endian: Option<EndianArg>,
    #[command(flatten)]
    pub input: InputOpts,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
