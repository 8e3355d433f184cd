//! `profkit report FILE.mlpd`: mprof-report's sections (the logic is in profkit-mlpd's
//! `report` module; this only parses options and prints).

use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use profkit_mlpd::report::{self, Options, SECTIONS};

use super::open_detected;
use crate::cli::ReportArgs;
use crate::detect::Format;
use crate::output;

fn parse_thread(s: &str) -> Result<u64> {
    let t = s.trim();
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    };
    v.map_err(|_| anyhow!("--thread {s:?}: expected a thread id (0x7f... or decimal)"))
}

fn parse_time(s: &str) -> Result<(u64, u64)> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| anyhow!("--time {s:?}: expected FROM-TO in seconds"))?;
    let secs = |x: &str| -> Result<u64> {
        let f: f64 = x
            .trim()
            .parse()
            .map_err(|_| anyhow!("--time {s:?}: {x:?} is not a number of seconds"))?;
        if f.is_nan() || f < 0.0 {
            bail!("--time {s:?}: negative time");
        }
        Ok((f * 1e9) as u64)
    };
    Ok((secs(a)?, secs(b)?))
}

pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    let (input, format) = open_detected(&args.file, args.input.input_format)?;
    if format != Format::Mlpd {
        bail!(
            "{}: `profkit report` reads Mono log profiler files; this is {}",
            input.name,
            format.description()
        );
    }
    let sections: Vec<&str> = if args.reports.is_empty() {
        SECTIONS.iter().copied().filter(|&s| s != "stats").collect()
    } else {
        let mut v = Vec::new();
        for r in &args.reports {
            match SECTIONS.iter().find(|&&s| s == r.as_str()) {
                Some(s) => v.push(*s),
                None => bail!(
                    "--reports: unknown section {r:?} (known: {})",
                    SECTIONS.join(",")
                ),
            }
        }
        v
    };
    let opts = Options {
        thread: args.thread.as_deref().map(parse_thread).transpose()?,
        time: args.time.as_deref().map(parse_time).transpose()?,
        parallel: true,
    };
    let file =
        profkit_mlpd::File::parse(&input.data).map_err(|e| anyhow!("{}: {e}", input.name))?;
    let r = report::compute(&file, &opts);
    let mut out = output::stdout();
    if args.json {
        serde_json::to_writer(&mut out, &report::to_json(&r))?;
        writeln!(out)?;
    } else {
        report::write_text(&mut out, &r, &sections, args.verbose)?;
    }
    out.flush()?;
    if args.traces {
        output::print_note("--traces is not implemented yet; the report has no backtraces");
    }
    super::mlpd::report_problems(&input.name, &r.problems, r.skipped_bytes);
    Ok(ExitCode::SUCCESS)
}
