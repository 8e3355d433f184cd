//! Writing to stdout and printing diagnostics (files go through `profkit_export::output`) (colour only on a terminal, never with
//! NO_COLOR: anstream decides).

use std::io::{self, BufWriter, Write};

use anstyle::{AnsiColor, Style};

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const NOTE: Style = AnsiColor::Cyan.on_default();

/// Buffered stdout; write errors (including a closed pipe) surface as `io::Error`.
pub fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::with_capacity(1 << 16, io::stdout().lock())
}

/// Buffered stdout that strips colour unless stdout is a terminal (and NO_COLOR is unset).
pub fn color_stdout() -> BufWriter<anstream::Stdout> {
    BufWriter::with_capacity(1 << 16, anstream::stdout())
}

/// Whether an error is (caused by) writing to a closed pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// `error: message` on stderr.
pub fn print_error(msg: &str) {
    let _ = writeln!(anstream::stderr(), "{ERROR}error{ERROR:#}: {msg}");
}

/// `warning: message` on stderr.
pub fn print_warning(msg: &str) {
    let _ = writeln!(anstream::stderr(), "{WARNING}warning{WARNING:#}: {msg}");
}

/// `note: message` on stderr.
pub fn print_note(msg: &str) {
    let _ = writeln!(anstream::stderr(), "{NOTE}note{NOTE:#}: {msg}");
}

/// `note: NAME: times are TSC ticks …`: an XRay profiling-mode file read without `--tsc-hz`.
pub fn print_ticks_note(name: &str) {
    print_note(&format!(
        "{name}: times are TSC ticks (an XRay profiling-mode file records no TSC frequency; give --tsc-hz to convert)"
    ));
}

/// Styles for severity labels in reports written to stdout.
pub fn severity_style(error: bool) -> Style {
    if error {
        ERROR
    } else {
        WARNING
    }
}

/// `warning: NAME: truncated at offset …` on stderr: how every command reports a cut file
/// (everything before the cut was used).
pub fn print_truncation(name: &str, t: &profkit_common::Truncation) {
    print_warning(&format!("{name}: {t}"));
}

/// Reports what a feed or fold met: the cut, and what could not be decoded (lenient commands
/// skip it).
pub fn print_feed_problems(name: &str, s: &profkit_model::feed::FeedSummary) {
    if let Some(t) = &s.truncation {
        print_truncation(name, t);
    }
    if let Some(first) = s.problems.first() {
        print_warning(&format!(
            "{name}: skipped {} undecodable part(s); first: {first}",
            s.problems.len()
        ));
    }
}
