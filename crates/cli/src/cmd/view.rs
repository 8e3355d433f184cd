//! `profkit view FILE [--no-open] [--port N]`: serves one profile on 127.0.0.1 behind a random
//! token and prints (and opens) the URL of the hosted viewer that loads it; the server is
//! [`crate::view`].

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::ViewArgs;
use crate::view::{view, Options};

pub fn run(args: ViewArgs) -> Result<ExitCode> {
    let opts = Options {
        port: args.port,
        open: !args.no_open,
    };
    view(&args.file, args.input, args.instr_map, opts)?;
    Ok(ExitCode::SUCCESS)
}
