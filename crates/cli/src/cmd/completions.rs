//! `profkit completions SHELL`.

use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};

pub fn run(args: &CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut out = crate::output::stdout();
    clap_complete::generate(args.shell, &mut cmd, "profkit", &mut out);
    std::io::Write::flush(&mut out)?;
    Ok(ExitCode::SUCCESS)
}
