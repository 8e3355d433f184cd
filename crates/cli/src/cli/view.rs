//! Arguments of `view`.

use std::path::PathBuf;

use clap::Args;

use super::InputOpts;

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// A Firefox Profiler profile (.json, .json.gz), a Perfetto trace (.pftrace,
    /// .perfetto-trace), a Chrome trace JSON, or any input profkit reads (perf.data, XRay,
    /// Mono, a jitdump …), which is converted to a Firefox Profiler profile first.
    pub file: PathBuf,
    /// Print the viewer's URL without opening a browser.
    #[arg(long)]
    pub no_open: bool,
    /// The local port (0: any free one). Default: the first free from 3000 for the Firefox
    /// Profiler; 9001 for Perfetto, the only port its UI may fetch from.
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// XRay: the instrumented binary, for function names (as `convert -m`).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Vec<String>,
    #[command(flatten)]
    pub input: InputOpts,
}
