//! Argument definitions (clap derive).

use std::path::PathBuf;

mod analysis;
mod convert;
mod graph;
mod record;
mod view;

pub use analysis::{
    AccountArgs, AccountFormat, AccountSort, ReportArgs, SortOrder, StackAggregation, StackArgs,
};
pub use convert::{ConvertArgs, EndianArg, OutputFormat};
pub use graph::{DiffArgs, DiffFormat, DiffSort, GraphArgs};
pub use record::{CallGraph, RecordArgs};
pub use view::ViewArgs;

use clap::{Args, Parser, Subcommand};
use profkit_model::detect::Format;

/// Read, validate, analyze and convert the files JIT runtimes and instrumented programs hand
/// to profilers: perf jitdump and perf maps, LLVM XRay traces (basic, FDR and profiling mode)
/// with their instrumentation maps, Mono log profiler files (.mlpd), and perf.data recordings,
/// whose samples are named through all of these and the native binaries. `inject` writes a
/// perf.data that unmodified perf report resolves.
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
    /// C++ names without parameter lists or return types, as `perf report` prints them
    /// (default: in full, as `c++filt` and `addr2line -C` print them).
    #[arg(long, global = true)]
    pub short_names: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sample a command (or `-p PID`) with every runtime's JIT metadata turned on, into a
    /// recording directory (perf.data that perf reads, the JIT files of every process — kept
    /// through /proc/PID/root, so containers' too — kallsyms, manifest.json); `-o` converts it.
    Record(RecordArgs),
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
    /// Aggregated call stacks of an XRay trace, a Mono file or a perf.data recording (`--folded`:
    /// flame graph input).
    Stack(StackArgs),
    /// The call graph of an XRay trace or Mono `calls` file as DOT, with per-edge latency
    /// statistics (llvm-xray graph).
    Graph(GraphArgs),
    /// Per-function changes between two profiles (table, CSV, JSON), a differential flame
    /// graph (`-f folded|svg`), or the difference of their call graphs (`--graph`: DOT).
    Diff(DiffArgs),
    /// The XRay instrumentation map of a binary as YAML (llvm-xray extract's output).
    Extract(ExtractArgs),
    /// Mono log profiler report (mprof-report's sections, with its bugs fixed; --json).
    Report(ReportArgs),
    /// The function, inline frames and file:line of JIT code addresses in a jitdump, at a time.
    Symbolize(SymbolizeArgs),
    /// A perf.data whose JIT frames perf report resolves (as after `perf inject --jit`), with one
    /// ELF per jitdump instead of one per function (written to OUT-jit/).
    Inject(InjectArgs),
    /// Serve a profile on 127.0.0.1 behind a random token and open it in the Firefox Profiler
    /// or Perfetto UI (any other input is converted to a Firefox profile first).
    View(ViewArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
}

/// `--input-format`: the names of the formats profkit-model's registry knows.
fn input_format() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = Format::all().map(|f| PossibleValue::new(f.name()).help(f.description()));
    // the parser accepts only the names `all` gave, each of which `from_name` knows
    PossibleValuesParser::new(values).map(|name| Format::from_name(&name).unwrap_or(Format::Elf))
}

#[derive(Debug, Args)]
pub struct InputOpts {
    /// Treat the input as this format instead of detecting it.
    #[arg(long, global = true, value_parser = input_format())]
    pub input_format: Option<Format>,
    #[command(flatten)]
    pub jit: PerfDataOpts,
}

/// Where a perf.data's JIT metadata and kernel symbols are, besides where the recording says
/// (every command that reads perf.data).
#[derive(Debug, Args, Clone, Default)]
pub struct PerfDataOpts {
    /// perf.data: the kernel symbols of the machine that recorded (its /proc/kallsyms);
    /// without it, the build-id cache's copy, or this machine's only when the recording proves
    /// it was made on this kernel.
    #[arg(long, value_name = "FILE", global = true)]
    pub kallsyms: Option<PathBuf>,
    /// perf.data: a directory to look for `jit-<pid>.dump` and `perf-<pid>.map` in (after the
    /// path perf recorded, /tmp for maps and the perf.data's directory), or one such file
    /// (its pid from its name, or a jitdump's header); repeatable.
    #[arg(long = "jit-dir", value_name = "DIR|FILE", global = true)]
    pub jit_dir: Vec<PathBuf>,
    /// perf.data: the perf map of process PID, whatever its file name; repeatable.
    #[arg(long = "perf-map", value_name = "PID=FILE", value_parser = parse_pid_file, global = true)]
    pub perf_map: Vec<(u32, PathBuf)>,
    /// perf.data: read perf maps whoever owns them (perf skips a map not owned by the current
    /// user or root, since /tmp is shared; so does profkit without this).
    #[arg(long, global = true)]
    pub any_map_owner: bool,
}

impl PerfDataOpts {
    /// The JIT metadata search of the perf.data at `path` (`None`: a pipe).
    pub fn search(
        &self,
        path: Option<&std::path::Path>,
    ) -> anyhow::Result<profkit_model::feed::perf::JitSearch> {
        let mut s = profkit_model::feed::perf::JitSearch::new(path, Vec::new());
        for p in &self.jit_dir {
            s.add_jit_path(p).map_err(anyhow::Error::msg)?;
        }
        s.map_files.extend(self.perf_map.iter().cloned());
        s.any_map_owner = self.any_map_owner;
        Ok(s)
    }
}

fn parse_pid_file(s: &str) -> Result<(u32, PathBuf), String> {
    let (pid, file) = s
        .split_once('=')
        .ok_or_else(|| format!("expected PID=FILE, got {s:?}"))?;
    let pid = pid
        .parse::<u32>()
        .map_err(|_| format!("{pid:?} is not a process id"))?;
    Ok((pid, PathBuf::from(file)))
}

/// How to read the times of an XRay profiling-mode file.
#[derive(Debug, Args)]
pub struct ProfileClockOpts {
    /// XRay profiling mode: ticks per second of the TSC that timed the calls (the file records
    /// none; e.g. `2596120000`, the kernel's `tsc: Refined TSC clocksource calibration` on the
    /// machine that ran the program). Without it, times are shown in ticks.
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u64).range(1..))]
    pub tsc_hz: Option<u64>,
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
pub struct InjectArgs {
    /// The recording (`perf record -k 1`, file or pipe mode, gzip allowed; `-`: stdin).
    #[arg(short, long)]
    pub input: PathBuf,
    /// The perf.data to write; the ELFs go to OUT-jit/.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub jit: PerfDataOpts,
    /// JSON report (schema profkit.inject/1).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// The instrumented binary; several for a program and its `-fxray-shared` libraries, in
    /// the order the runtime registers them (the executable first), or `ID=PATH` to pin an
    /// object id: their functions get the packed ids of the trace (`ID << 24 | id`).
    #[arg(required = true, value_name = "BIN")]
    pub binaries: Vec<String>,
    /// Fill in `function-name` (demangled).
    #[arg(short, long)]
    pub symbolize: bool,
    /// Output file (default stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}
