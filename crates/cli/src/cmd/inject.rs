//! `profkit inject -i perf.data -o OUT`: a perf.data whose JIT frames unmodified `perf report`
//! resolves (as after `perf inject --jit`), with one ELF per jitdump layer, written to
//! `OUT-jit/`. The report (text, or `profkit.inject/1` JSON) goes to stdout, warnings to stderr.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use profkit_inject::{inject_bytes, Options, Report};

use crate::cli::InjectArgs;
use crate::output;

pub fn run(args: &InjectArgs) -> Result<ExitCode> {
    // Opened like every input: a gzip recording or stdin is inflated into a temporary file,
    // bounded by PROFKIT_MAX_INFLATED, not into memory.
    let path = profkit_record::recording_file(&args.input);
    let input = crate::input::open(&path)?;
    let mut report = inject_bytes(
        &Options {
            input: path.to_path_buf(),
            output: args.output.clone(),
            jit: Some(
                args.jit
                    .search((*path != *std::path::Path::new("-")).then_some(&*path))?,
            ),
            elf_dir: None,
        },
        &input.name,
        &input.data,
    )?;
    if let Some(cut) = &input.cut {
        report.warnings.insert(0, format!("{}: {cut}", input.name));
    }
    for w in &report.warnings {
        output::print_warning(w);
    }
    let mut out = output::stdout();
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write_text(&mut out, &report)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn write_text(out: &mut impl Write, r: &Report) -> std::io::Result<()> {
    writeln!(
        out,
        "{} -> {}: {} records, {} MMAP2 added, {} build ids added, {} bytes",
        r.input, r.output, r.records, r.mmap2_added, r.build_ids_added, r.bytes
    )?;
    if r.elfs_written > 0 {
        writeln!(
            out,
            "{} ELF(s) with {} functions in {}",
            r.elfs_written, r.functions, r.elf_dir
        )?;
    }
    for p in &r.processes {
        let comm = p.comm.as_deref().unwrap_or("?");
        write!(out, "pid {} ({comm}): {}", p.pid, p.status)?;
        if let Some(d) = &p.jitdump {
            write!(out, " {d}")?;
        }
        if let Some(m) = &p.perf_map {
            write!(out, " {m}")?;
        }
        if p.status == "injected" {
            write!(out, ": {} functions, {} MMAP2", p.functions, p.mmap2)?;
        }
        if p.samples_in_anon_exec > 0 {
            write!(
                out,
                "; {} samples in anonymous executable memory",
                p.samples_in_anon_exec
            )?;
        }
        writeln!(out)?;
        if let Some(why) = &p.reason {
            writeln!(out, "  {why}")?;
        }
        for e in &p.elfs {
            write!(
                out,
                "  {}  layer {}  {} functions  {} runs  {}..{}  {} bytes  {} FDEs  {} line rows",
                e.path,
                e.layer,
                e.functions,
                e.runs,
                e.range.0,
                e.range.1,
                e.bytes,
                e.fdes,
                e.line_rows
            )?;
            if let Some(u) = &e.unwind_map {
                write!(out, "  unwind tables at {u}")?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}
