//! `profkit report FILE.mlpd`: mprof-report's sections (the logic is in profkit-mlpd's
//! `report` module; this only parses options, opens the input and prints). Plain files are
//! mapped; gzip files and stdin are read as a stream, one buffer at a time.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use profkit_analysis::mono_report::{
    self as report, AllocSort, Find, MethodSort, Options, SECTIONS,
};

use crate::cli::ReportArgs;
use crate::input::{self, Opened};
use crate::output;
use profkit_model::detect::{detect, Format};

fn parse_addr(s: &str, what: &str) -> Result<u64> {
    let t = s.trim();
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    };
    v.map_err(|_| anyhow!("{what} {s:?}: expected an address or id (0x7f... or decimal)"))
}

fn parse_time(s: &str) -> Result<(u64, u64)> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| anyhow!("--time {s:?}: expected FROM-TO in seconds"))?;
    let secs = |x: &str| -> Result<f64> {
        let f: f64 = x
            .trim()
            .parse()
            .map_err(|_| anyhow!("--time {s:?}: {x:?} is not a number of seconds"))?;
        if f.is_nan() || f < 0.0 {
            bail!("--time {s:?}: negative time");
        }
        Ok(f)
    };
    let (from, to) = (secs(a)?, secs(b)?);
    if from > to {
        bail!("--time {s:?}: FROM is after TO");
    }
    Ok(((from * 1e9) as u64, (to * 1e9) as u64))
}

fn parse_find(specs: &[String]) -> Result<Option<Find>> {
    if specs.is_empty() {
        return Ok(None);
    }
    let mut f = Find::default();
    for s in specs {
        if let Some(n) = s.strip_prefix("S:") {
            f.min_size = n
                .trim()
                .parse()
                .map_err(|_| anyhow!("--find {s:?}: S: takes a size in bytes"))?;
        } else if let Some(n) = s.strip_prefix("T:") {
            f.name = Some(n.to_string());
        } else {
            bail!("--find {s:?}: expected S:MINSIZE or T:NAME");
        }
    }
    Ok(Some(f))
}

fn options(args: &ReportArgs) -> Result<Options> {
    Ok(Options {
        thread: args
            .thread
            .as_deref()
            .map(|t| parse_addr(t, "--thread"))
            .transpose()?,
        time: args.time.as_deref().map(parse_time).transpose()?,
        parallel: true,
        traces: args.traces,
        maxframes: args.maxframes,
        method_sort: match args.method_sort.as_str() {
            "self" => MethodSort::SelfTime,
            "calls" => MethodSort::Calls,
            _ => MethodSort::Total,
        },
        alloc_sort: match args.alloc_sort.as_str() {
            "count" => AllocSort::Count,
            _ => AllocSort::Bytes,
        },
        track: args
            .track
            .iter()
            .filter(|t| !t.trim().is_empty())
            .map(|t| parse_addr(t, "--track"))
            .collect::<Result<_>>()?,
        find: parse_find(&args.find)?,
        skip_calls: false,
        skip_allocs: false,
        source_core: false,
    })
}

fn not_mlpd(name: &str, format: Format) -> anyhow::Error {
    anyhow!(
        "{name}: `profkit report` reads Mono log profiler files; this is {}",
        format.description()
    )
}

pub fn run(args: &ReportArgs) -> Result<ExitCode> {
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
    let mut opts = options(args)?;
    // decode only what the printed sections need (issue #13); JSON has every section
    let wanted = |s: &str| args.json || sections.contains(&s);
    opts.skip_calls = !wanted("call") && !wanted("stats");
    opts.skip_allocs = !wanted("alloc");
    let forced = args.input.input_format;
    let (name, r) = match input::open_streaming(&args.file)? {
        Opened::Data(input) => {
            match forced.or_else(|| detect(&input.data)) {
                Some(Format::Mlpd) | None => {}
                Some(f) => return Err(not_mlpd(&input.name, f)),
            }
            let file = profkit_mlpd::File::parse(&input.data)
                .map_err(|e| anyhow!("{}: {e}", input.name))?;
            let r = report::compute_with(&file, &opts, &|upto| input.data.release(upto));
            (input.name, r)
        }
        Opened::Stream(mut s) => {
            match forced.or_else(|| detect(s.head())) {
                Some(Format::Mlpd) | None => {}
                Some(f) => return Err(not_mlpd(&s.name, f)),
            }
            // inflating is the pass's serial part: it keeps a core of its own
            opts.source_core = s.compression.is_some();
            let r =
                report::compute_stream(&mut s, &opts).map_err(|e| anyhow!("{}: {e}", s.name))?;
            (s.name, r)
        }
    };
    let mut out = output::stdout();
    if args.json {
        serde_json::to_writer(&mut out, &report::to_json(&r))?;
        writeln!(out)?;
    } else {
        report::write_text(&mut out, &r, &sections, args.verbose)?;
    }
    out.flush()?;
    if let Some(t) = &r.truncation {
        output::print_truncation(&name, t);
    }
    for p in r.problems.iter().take(20) {
        output::print_warning(&format!("{name}: {p}"));
    }
    if r.problems.len() > 20 {
        output::print_warning(&format!("{name}: {} more problems", r.problems.len() - 20));
    }
    if !r.problems.is_empty() {
        output::print_note(&format!(
            "{name}: {} problem(s); {} byte(s) of event data skipped",
            r.problems.len(),
            r.skipped_bytes
        ));
    }
    Ok(ExitCode::SUCCESS)
}
