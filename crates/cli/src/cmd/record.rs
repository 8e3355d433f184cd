//! `profkit record`: profkit-record samples the command into a recording directory; this
//! prints what it kept and, with `-o`, converts it, with `--view` shows it (by running
//! `profkit convert` and `profkit view`, so each is exactly the command a user would type).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use profkit_record::{Manifest, Options};

use crate::cli::{CallGraph, RecordArgs};
use crate::output;

/// profkit's JIT Profiling API collector: `PROFKIT_JITAPI_LIB`, else installed beside the
/// binary (`cargo build` puts `libprofkit_jitapi.so` into the same directory).
fn collector() -> Option<PathBuf> {
    if let Some(lib) = std::env::var_os("PROFKIT_JITAPI_LIB").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(lib));
    }
    let exe = std::env::current_exe().ok()?;
    let lib = exe.parent()?.join("libprofkit_jitapi.so");
    lib.is_file().then_some(lib)
}

pub fn run(args: &RecordArgs) -> Result<ExitCode> {
    let opts = Options {
        frequency: args.frequency,
        stack_copy: match args.call_graph {
            CallGraph::Fp => None,
            CallGraph::Dwarf(n) => Some(n),
        },
        command: args.command.clone(),
        pid: args.pid,
        dir: args.dir.clone(),
        jit_env: !args.no_jit_env,
        collector: collector(),
    };
    let show = !args.quiet && std::io::stderr().is_terminal();
    let mut progress = |samples: u64| {
        if show {
            eprint!("\rprofkit record: {samples} samples");
        }
    };
    let recorded = profkit_record::record(&opts, &mut progress);
    if show {
        eprint!("\r\x1b[K");
    }
    let m = recorded.map_err(|e| anyhow!("profkit record: {e}"))?;
    summarize(&m, args);
    let mut code = m.exit_status.map_or(0, |c| c.clamp(0, 255));
    if let Some(out) = &args.output {
        let status = std::process::Command::new(std::env::current_exe()?)
            .arg("convert")
            .arg(&args.dir)
            .arg("-o")
            .arg(out)
            .status()?;
        if !status.success() && code == 0 {
            code = status.code().unwrap_or(2).clamp(1, 255);
        }
    }
    if args.view {
        // OUT when a hosted viewer loads it, else the recording (view converts it)
        let viewable = args.output.as_ref().filter(|o| {
            let name = o.to_string_lossy();
            [".json", ".json.gz", ".pftrace", ".perfetto-trace"]
                .iter()
                .any(|ext| name.ends_with(ext))
                && !name.ends_with(".speedscope.json")
        });
        let target = viewable.unwrap_or(&args.dir);
        let mut view = std::process::Command::new(std::env::current_exe()?);
        view.arg("view").arg(target);
        if args.no_open {
            view.arg("--no-open");
        }
        view.status()?;
    }
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(2)))
}

/// What was recorded, on stderr (the command's own output stays on stdout).
fn summarize(m: &Manifest, args: &RecordArgs) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(
        e,
        "profkit record: {} samples ({} lost) of {} at {} Hz, {} call chains{} — {}",
        m.samples,
        m.lost,
        m.event,
        m.frequency,
        m.call_graph,
        if m.kernel_samples {
            ", kernel included"
        } else {
            ", user space only"
        },
        m.event_note
    );
    let _ = writeln!(
        e,
        "profkit record: {} processes; JIT metadata: {}",
        m.processes.len(),
        if m.jit_files.is_empty() {
            "none found".to_string()
        } else {
            m.jit_files
                .iter()
                .map(|k| {
                    format!(
                        "{} of pid {} ({} bytes, from {})",
                        k.kind, k.pid, k.bytes, k.recorded
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        }
    );
    if !m.runtimes.is_empty() {
        let _ = writeln!(
            e,
            "profkit record: {}: {}",
            m.runtimes.join(", "),
            m.jit_environment.join("; ")
        );
    }
    for p in &m.problems {
        output::print_warning(p);
    }
    if m.lost > 0 {
        output::print_warning(&format!(
            "{} samples lost: the rings overflowed (try a lower -F)",
            m.lost
        ));
    }
    let _ = writeln!(e, "profkit record: wrote {}", args.dir.display());
}
