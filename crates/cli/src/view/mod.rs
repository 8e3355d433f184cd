//! `profkit view`: one profile served to a hosted viewer (docs/view.md).
//!
//! A Firefox Profiler profile, a Perfetto trace or a Chrome trace JSON is served as it is;
//! any other input profkit reads (perf.data, XRay, Mono, a jitdump …) is first converted to a
//! Firefox Profiler profile through `convert`'s own path ([`crate::to_viewer`]) in a private
//! temporary directory removed when the command ends. [`session`] serves it ([`http`]) and
//! [`sources`] answers the source view.

mod http;
mod request;
mod session;
mod sources;

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cli::{ConvertArgs, InputOpts, ProfileClockOpts};
use crate::source::Opened;
use session::Plan;
pub use session::Viewer;
use sources::Sources;

/// How to serve (the command's options; `record --view` passes its own).
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// `--port` (0: any free port); default 3000 and up for the Firefox Profiler, 9001 for
    /// Perfetto.
    pub port: Option<u16>,
    /// Open the viewer's URL in a browser.
    pub open: bool,
}

/// What a file is to `view`.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// A file a viewer loads as it is.
    Ready(Viewer),
    /// An input to convert first.
    Convert,
}

/// Tells a viewer's file (by its first 64 KiB, inflated when gzip, and its name) from an input
/// to convert; refuses the outputs no hosted viewer loads by URL.
fn classify(path: &Path) -> Result<Kind> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let meta = std::fs::metadata(path);
    // stdin, a FIFO: a stream only `convert`'s path reads (once).
    if path == Path::new("-") || meta.as_ref().is_ok_and(|m| !m.is_file()) {
        return Ok(Kind::Convert);
    }
    meta.with_context(|| format!("{}: cannot open", path.display()))?;
    if [".pftrace", ".perfetto-trace", ".perfetto"]
        .iter()
        .any(|e| name.ends_with(e))
    {
        return Ok(Kind::Ready(Viewer::Perfetto));
    }
    let mut head = Vec::new();
    let f =
        std::fs::File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    f.take(2).read_to_end(&mut head)?;
    let f = std::fs::File::open(path)?;
    if head.starts_with(&[0x1f, 0x8b]) {
        // A stream cut or corrupt inside the first 64 KiB keeps what it inflated.
        let _ = flate2::read::MultiGzDecoder::new(f)
            .take(64 << 10)
            .read_to_end(&mut head);
    } else {
        f.take(64 << 10).read_to_end(&mut head)?;
    }
    let text = String::from_utf8_lossy(head.get(2..).unwrap_or_default());
    let json = text.trim_start();
    let refuse = |what: &str| -> Result<Kind> {
        bail!(
            "{}: {what}: no hosted viewer loads it by URL (profkit view serves the Firefox Profiler and Perfetto); open it in its tool, or view the recording it came from",
            path.display()
        )
    };
    if json.starts_with('[') || (json.starts_with('{') && text.contains("\"traceEvents\"")) {
        return Ok(Kind::Ready(Viewer::Perfetto));
    }
    if json.starts_with('{') {
        if text.contains("speedscope.app/file-format-schema") {
            return refuse("a speedscope profile (drop it on https://www.speedscope.app)");
        }
        if text.contains("\"meta\"") {
            return Ok(Kind::Ready(Viewer::Firefox));
        }
        return refuse("a JSON file that is neither a Firefox Profiler profile nor a Chrome trace");
    }
    if name.ends_with(".pb.gz") || name.ends_with(".pprof") {
        return refuse("a pprof profile (`go tool pprof -http=: FILE`)");
    }
    if name.ends_with(".svg") || name.ends_with(".folded") || name.ends_with(".parquet") {
        return refuse("a flame graph, folded stacks or Parquet tables");
    }
    Ok(Kind::Convert)
}

/// Serves `file` (converted first when needed) until Ctrl-C.
pub fn view(file: &Path, input: InputOpts, instr_map: Vec<String>, opts: Options) -> Result<()> {
    let plan = |viewer, path: PathBuf, name: &str, sources| Plan {
        viewer,
        file: path,
        name: name.to_string(),
        content_type: match viewer {
            Viewer::Firefox => "application/json",
            Viewer::Perfetto => "application/octet-stream",
        },
        sources,
        port: opts.port,
        open: opts.open,
    };
    match classify(file)? {
        Kind::Ready(Viewer::Firefox) => {
            let sources = profile_sources(file, &[]);
            session::run(plan(
                Viewer::Firefox,
                file.into(),
                "profile.json",
                Some(sources),
            ))
        }
        Kind::Ready(Viewer::Perfetto) => {
            let json = file.to_string_lossy().to_ascii_lowercase();
            let name = if json.ends_with(".json") || json.ends_with(".json.gz") {
                "trace.json"
            } else {
                "trace.pftrace"
            };
            session::run(plan(Viewer::Perfetto, file.into(), name, None))
        }
        Kind::Convert => {
            let dir = tempfile::Builder::new()
                .prefix(".profkit-view-")
                .tempdir()
                .context("cannot create a temporary directory (TMPDIR)")?;
            // Private to this user: the profile names the recording's functions and files.
            std::fs::set_permissions(
                dir.path(),
                std::os::unix::fs::PermissionsExt::from_mode(0o700),
            )
            .context("cannot make the temporary directory private")?;
            let out = dir.path().join("profile.json.gz");
            let jitdumps = match convert_or_stop(file, &out, input, instr_map) {
                Some(r) => r?,
                None => {
                    // Ctrl-C while converting: the directory goes, the writer with it.
                    let _ = dir.close();
                    eprintln!("profkit: interrupted");
                    std::process::exit(130);
                }
            };
            let sources = profile_sources(&out, &jitdumps);
            let r = session::run(plan(Viewer::Firefox, out, "profile.json", Some(sources)));
            // Removed here, before the process ends, on success, error and Ctrl-C alike.
            let removed = dir.close();
            r?;
            removed.context("cannot remove the temporary profile")
        }
    }
}

/// [`convert`] on a thread of its own, so that a Ctrl-C while it runs ends the command with the
/// temporary directory removed (`None`).
fn convert_or_stop(
    file: &Path,
    out: &Path,
    input: InputOpts,
    instr_map: Vec<String>,
) -> Option<Result<Vec<PathBuf>>> {
    use std::sync::mpsc;
    if let Err(e) = session::catch_signals() {
        return Some(Err(e).context("cannot catch SIGINT/SIGTERM"));
    }
    let (tx, rx) = mpsc::channel();
    let (file, out) = (file.to_path_buf(), out.to_path_buf());
    let spawned = std::thread::Builder::new()
        .name("view-convert".into())
        .spawn(move || {
            let _ = tx.send(convert(&file, &out, input, instr_map));
        });
    if let Err(e) = spawned {
        return Some(Err(e).context("cannot start the conversion"));
    }
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(r) => return Some(r),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Some(Err(anyhow::anyhow!("the conversion failed")))
            }
            Err(mpsc::RecvTimeoutError::Timeout) if session::stopped() => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Converts `file` to a Firefox Profiler profile at `out` through `convert`'s path; the
/// jitdumps it read (whose embedded sources the source view may show).
fn convert(
    file: &Path,
    out: &Path,
    input: InputOpts,
    instr_map: Vec<String>,
) -> Result<Vec<PathBuf>> {
    let args = ConvertArgs {
        file: file.to_path_buf(),
        output: out.to_path_buf(),
        format: None,
        endian: None,
        instr_map,
        symbolize: false,
        no_sort: false,
        time: None,
        thread: Vec::new(),
        pid: Vec::new(),
        event: None,
        counts: false,
        inclusive: false,
        title: None,
        quiet: false,
        clock: ProfileClockOpts { tsc_hz: None },
        input,
    };
    let o = Opened::open(file, &args.input)?;
    let output = profkit_export::Output::parse(&out.to_string_lossy());
    let summary = crate::to_viewer::write(&args, &o, profkit_export::Format::Firefox, &output)?;
    output
        .commit()
        .with_context(|| format!("{}: cannot write", out.display()))?;
    let mut jitdumps: Vec<PathBuf> = summary
        .perf
        .iter()
        .flat_map(|p| p.processes.iter().filter_map(|p| p.jitdump.clone()))
        .collect();
    if o.format == profkit_model::detect::Format::Jitdump {
        jitdumps.extend(o.path().map(Path::to_path_buf));
    }
    Ok(jitdumps)
}

/// The source files the profile names, with the jitdumps' embedded copies.
fn profile_sources(profile: &Path, jitdumps: &[PathBuf]) -> Sources {
    let mut s = match Sources::of_profile(profile) {
        Ok(s) => s,
        Err(e) => {
            crate::output::print_warning(&format!(
                "{}: cannot list the source files it names ({e}); the source view will show none",
                profile.display()
            ));
            Sources::default()
        }
    };
    for j in jitdumps {
        if let Err(e) = s.add_jitdump(j) {
            crate::output::print_warning(&format!(
                "{}: embedded sources not read: {e}",
                j.display()
            ));
        }
    }
    if s.named() > 0 {
        crate::output::print_note(&format!(
            "the source view can show {} file(s) the profile names ({} embedded in the recording, the others read from disk when they exist)",
            s.named(),
            s.embedded()
        ));
    }
    s
}
