//! Arguments of the analyses: `account`, `stack`, `report`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{InputOpts, ProfileClockOpts};

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
    /// Repeat for instrumented shared objects (`-fxray-shared`), in the order they registered
    /// (the executable first), or pin an object id with `-m ID=PATH`.
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Vec<String>,
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
    pub clock: ProfileClockOpts,
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
    /// Repeat for instrumented shared objects (`-fxray-shared`), in the order they registered
    /// (the executable first), or pin an object id with `-m ID=PATH`.
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Vec<String>,
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
    pub clock: ProfileClockOpts,
    #[command(flatten)]
    pub input: InputOpts,
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
