//! One module per subcommand, plus what they share: opening an input and deciding its format.

pub mod account;
pub mod completions;
pub mod convert;
pub mod dump;
pub mod export;
pub mod extract;
pub mod info;
pub mod mlpd;
pub mod report;
pub mod stack;
pub mod symbolize;
pub mod validate;
pub mod xray;

use std::path::Path;

use anyhow::{anyhow, Result};

use crate::cli::InputFormat;
use crate::detect::{detect, Format};
use crate::input::{self, Input};

/// Opens `path` and determines its format (`forced` overrides detection).
pub fn open_detected(path: &Path, forced: Option<InputFormat>) -> Result<(Input, Format)> {
    let input = input::open(path)?;
    let format = match forced {
        Some(f) => Format::from(f),
        None => detect(&input.data).ok_or_else(|| {
            anyhow!(
                "{}: unknown format: not a jitdump (magic \"DTiJ\"/\"JiTD\"), perf map, XRay trace, Mono log profiler file or ELF binary (use --input-format to force one)",
                input.name
            )
        })?,
    };
    Ok((input, format))
}

/// The error for a format whose support has not landed yet.
pub fn unsupported(input: &Input, format: Format, what: &str) -> anyhow::Error {
    anyhow!(
        "{}: {} is not supported yet by `profkit {what}` (profkit currently reads perf jitdump and perf map files)",
        input.name,
        format.description()
    )
}

/// Formats a jitdump parse error the way every command reports it.
pub fn parse_error(input: &Input, e: &profkit_jitdump::Error) -> anyhow::Error {
    anyhow!("{}: {e}", input.name)
}
