//! `profkit info FILE...`: what a file is and what it holds — one shape for every format
//! (text, or `profkit.info/2` JSON; docs/cli.md).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use profkit_common::summary::Source;

use crate::cli::InfoArgs;
use crate::source::Scanned;
use crate::{formats, output};

pub fn run(args: &InfoArgs) -> Result<ExitCode> {
    let mut out = output::stdout();
    for (i, path) in args.files.iter().enumerate() {
        let mut o = Scanned::open(path, &args.input)?;
        let summary = formats::summary(&mut o)?;
        let size = o.size();
        let src = Source {
            file: o.name(),
            size,
            compression: o.compression(),
        };
        if args.json {
            summary.write_json(&mut out, &src)?;
            writeln!(out)?;
        } else {
            if i > 0 {
                writeln!(out)?;
            }
            summary.write_text(&mut out, &src)?;
        }
        out.flush()?;
        if let Some(t) = &summary.truncation {
            output::print_truncation(o.name(), t);
        }
    }
    Ok(ExitCode::SUCCESS)
}
