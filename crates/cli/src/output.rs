//! Writing to stdout and printing diagnostics (files go through `profkit_export::output`) (colour only on a terminal, never with
//! NO_COLOR: anstream decides).

use std::io::{self, BufWriter, Write};

use anstyle::{AnsiColor, Style};

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const NOTE: Style = AnsiColor::Cyan.on_default();

/// Buffered stdout for text and JSON; write errors (including a closed pipe) surface as
/// `io::Error`. Control characters other than line feed and tab are escaped on the way out
/// (see [`Controls`]): a name in a recording cannot drive the terminal.
pub fn stdout() -> Controls<BufWriter<io::StdoutLock<'static>>> {
    Controls::new(BufWriter::with_capacity(1 << 16, io::stdout().lock()))
}

/// A writer for text that escapes every control character but line feed and tab (C0, DEL and
/// the C1 controls U+0080..U+009F, whose U+009B starts a terminal escape sequence like ESC `[`)
/// as profkit's one control escaper does (`\r`, `\u001b`; `profkit_common::json`). JSON
/// carries no raw control characters, so it passes unchanged.
pub struct Controls<W: Write> {
    inner: W,
    /// The last byte written was 0xc2 (the lead byte of a C1 control, or of Latin-1 text).
    lead: bool,
    buf: Vec<u8>,
}

impl<W: Write> Controls<W> {
    pub fn new(inner: W) -> Controls<W> {
        Controls {
            inner,
            lead: false,
            buf: Vec::new(),
        }
    }
}

impl<W: Write> Write for Controls<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let needs = |b: u8| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f || b == 0xc2;
        if !self.lead && !data.iter().any(|&b| needs(b)) {
            self.inner.write_all(data)?;
            return Ok(data.len());
        }
        self.buf.clear();
        for &b in data {
            if std::mem::take(&mut self.lead) {
                if (0x80..=0x9f).contains(&b) {
                    profkit_common::json::push_control(&mut self.buf, b);
                    continue;
                }
                self.buf.push(0xc2);
            }
            match b {
                0xc2 => self.lead = true,
                b if needs(b) => profkit_common::json::push_control(&mut self.buf, b),
                b => self.buf.push(b),
            }
        }
        self.inner.write_all(&self.buf)?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.lead) {
            self.inner.write_all(&[0xc2])?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for Controls<W> {
    fn drop(&mut self) {
        if self.lead {
            let _ = self.flush();
        }
    }
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
    // perf.data: what left frames unnamed (JIT metadata, binaries, kernel symbols).
    for w in s.perf.iter().flat_map(|r| r.warnings()) {
        print_warning(&format!("{name}: {w}"));
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    /// Control characters never reach the terminal raw, whatever the write boundaries (B9).
    #[test]
    fn controls_are_escaped_across_writes() {
        let text = "ok\tü\u{1b}[31mRED\r\u{9b}x\u{7f}\n".as_bytes();
        for cut in 0..text.len() {
            let mut out = Vec::new();
            {
                let mut w = super::Controls::new(&mut out);
                w.write_all(&text[..cut]).unwrap();
                w.write_all(&text[cut..]).unwrap();
                w.flush().unwrap();
            }
            assert_eq!(
                String::from_utf8(out).unwrap(),
                "ok\tü\\u001b[31mRED\\r\\u009bx\\u007f\n",
                "cut {cut}"
            );
        }
    }
}
