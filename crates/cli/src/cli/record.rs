//! Arguments of `record`.

use std::path::PathBuf;

use clap::Args;

/// `profkit record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Samples per second.
    #[arg(short = 'F', long = "freq", default_value_t = 999, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub frequency: u64,
    /// Call chains: frame pointers (`fp`) or a copy of the user stack for DWARF unwinding
    /// (`dwarf`, or `dwarf,SIZE` in bytes; default 8192).
    #[arg(short = 'g', long = "call-graph", default_value = "fp", value_name = "fp|dwarf[,SIZE]", value_parser = parse_call_graph)]
    pub call_graph: CallGraph,
    /// Attach to a running process instead of starting a command (Ctrl-C stops).
    #[arg(short = 'p', long, value_name = "PID", conflicts_with = "command")]
    pub pid: Option<i32>,
    /// The recording directory (an earlier recording there is moved to DIR.old).
    #[arg(
        short = 'd',
        long = "dir",
        default_value = "profkit.rec",
        value_name = "DIR"
    )]
    pub dir: PathBuf,
    /// Convert the recording when the command ends (any `convert` output, by extension).
    #[arg(short = 'o', long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Do not set the runtimes' JIT switches (NODE_OPTIONS, JAVA_TOOL_OPTIONS, …).
    #[arg(long)]
    pub no_jit_env: bool,
    /// Then show it: `profkit view` of OUT (a Firefox or Perfetto output), else of the
    /// recording (converted to a Firefox profile); Ctrl-C stops serving.
    #[arg(long)]
    pub view: bool,
    /// With --view: print the viewer's URL without opening a browser.
    #[arg(long, requires = "view")]
    pub no_open: bool,
    /// No progress line, even on a terminal.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The command and its arguments.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// `record -g`: how call chains are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallGraph {
    /// Frame pointers.
    Fp,
    /// A copy of this many bytes of the user stack, for DWARF unwinding.
    Dwarf(u32),
}

fn parse_call_graph(s: &str) -> Result<CallGraph, String> {
    match s.split_once(',') {
        None if s == "fp" => Ok(CallGraph::Fp),
        None if s == "dwarf" => Ok(CallGraph::Dwarf(8192)),
        Some(("dwarf", size)) => {
            let n: u32 = size
                .parse()
                .map_err(|_| format!("{size:?} is not a size in bytes"))?;
            if n == 0 || n > 65_528 || !n.is_multiple_of(8) {
                return Err(format!(
                    "stack copy size {n}: give a multiple of 8 up to 65528"
                ));
            }
            Ok(CallGraph::Dwarf(n))
        }
        _ => Err(format!("{s:?}: expected fp, dwarf or dwarf,SIZE")),
    }
}
