//! The registry of input formats: one table ([`FORMATS`]) of the format crates' faces
//! (profkit-common's [`InputFormat`]), through which `info`, `dump` and `validate` reach every
//! format the same way (analyses and conversions go through the model's
//! [`Source`](profkit_model::Source)). A jitdump or Mono file that arrives as a stream is read
//! record by record ([`InputFormat::streams`]); every other input is handed over whole.
//!
//! A new input format is its crate's face and one line here.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use profkit_common::format::{Context, DumpOptions, Dumped, InputFormat, JitFiles};
use profkit_common::{Summary, Validation};
use profkit_model::feed::perf::JitSearch;

use crate::cli::DumpArgs;
use crate::detect::Format;
use crate::source::Scanned;

/// Every input format `info`, `dump` and `validate` read, in the order detection tries them.
pub static FORMATS: &[&dyn InputFormat] = &[
    &profkit_jitdump::JITDUMP,
    &profkit_mlpd::MLPD,
    &profkit_perf::PERF,
    &profkit_xray::XRAY_PROFILE,
    &profkit_xray::XRAY,
    &profkit_jitdump::PERF_MAP,
    &profkit_xray::XRAY_YAML,
];

/// The face of `format` (`None` for an ELF binary, which only `extract` and `-m` read).
fn face(format: Format) -> Option<&'static dyn InputFormat> {
    FORMATS.iter().copied().find(|f| f.name() == format.name())
}

/// Whether `format` reads a stream record by record (its input is then never read whole).
pub fn streams(format: Format) -> bool {
    face(format).is_some_and(|f| f.streams())
}

/// The face of the input, or the error for command `what` on a format it does not read.
fn face_of(s: &Scanned, what: &str) -> Result<&'static dyn InputFormat> {
    match face(s.format()) {
        Some(f) => Ok(f),
        None => Err(s.whole()?.unsupported(what)),
    }
}

/// A perf.data's JIT metadata search, as the format crates ask for it.
struct Jit(JitSearch);

impl JitFiles for Jit {
    fn jitdump(&self, pid: u32, marker: Option<&Path>) -> Result<PathBuf, Vec<PathBuf>> {
        self.0.jitdump(pid, marker)
    }
    fn perf_map(&self, pid: u32) -> Result<PathBuf, Vec<PathBuf>> {
        self.0.perf_map(pid)
    }
}

/// What `profkit info` shows of the input.
pub fn summary(s: &mut Scanned) -> Result<Summary> {
    let f = face_of(s, "info")?;
    let jit = match s {
        Scanned::Whole(o) if o.format == Format::Perf => Some(Jit(o.jit_search()?)),
        _ => None,
    };
    let cx = Context {
        jit: jit.as_ref().map(|j| j as &dyn JitFiles),
    };
    let name = s.name().to_string();
    f.summary(s.input(), &cx)
        .map_err(|e| anyhow!("{name}: {e}"))
}

/// What `profkit validate` reports of the input (a jitdump or Mono header that does not parse
/// is a finding).
pub fn validate(s: &mut Scanned) -> Result<Validation> {
    let f = face_of(s, "validate")?;
    let name = s.name().to_string();
    f.validate(s.input()).map_err(|e| anyhow!("{name}: {e}"))
}

/// What a format calls its records in messages.
pub fn record_unit(format: Format) -> &'static str {
    face(format).map_or("records", |f| f.record_unit())
}

/// `profkit dump` of the input into `out`.
pub fn dump(s: &mut Scanned, args: &DumpArgs, out: &mut dyn Write) -> Result<Dumped> {
    let f = face_of(s, "dump")?;
    let opts = DumpOptions {
        json: args.json,
        code: args.code,
        verify: args.verify,
    };
    let d = f.dump(s.input(), &opts, out)?;
    out.flush()?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry detects as the model does (the CLI and the fuzz harness share the
    /// model's detection): the same format for each format's first bytes.
    #[test]
    fn registry_detects_as_the_model() {
        let samples: [&[u8]; 8] = [
            b"DTiJ\x01\0\0\0",
            b"\x01ZPM\0\0\0\0",
            b"PERFILE2",
            b"\x01\0\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            b"7f0000001000 40 foo\n",
            b"---\nheader:\n  version: 3\n",
            b"\x7fELF\x02\x01\x01\0",
            b"fyorparp\x01\0\0\0\0\0\0\0",
        ];
        for head in samples {
            let model = profkit_model::detect::detect(head);
            let ours = profkit_common::format::detect(FORMATS, head).map(|f| f.name());
            assert_eq!(ours, model.and_then(face).map(|f| f.name()), "{head:?}");
        }
        for f in FORMATS {
            assert!(
                [
                    Format::Jitdump,
                    Format::PerfMap,
                    Format::Xray,
                    Format::XrayProfile,
                    Format::XrayYaml,
                    Format::Mlpd,
                    Format::Perf
                ]
                .iter()
                .any(|m| m.name() == f.name()),
                "{} has no model format",
                f.name()
            );
        }
    }
}
