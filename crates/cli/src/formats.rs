//! `info`, `dump` and `validate` through the registry of input formats (the model's
//! [`REGISTRY`](profkit_model::detect::REGISTRY): the format crates' faces, profkit-common's
//! [`InputFormat`]), which reaches every format the same way (analyses and conversions go through the model's
//! [`Source`](profkit_model::Source)). A jitdump or Mono file that arrives as a stream is read
//! record by record ([`InputFormat::streams`]); every other input is handed over whole.
//!
//! A new input format is its crate's face and one line in that table.

use std::io::Write;

use anyhow::{anyhow, Result};
use profkit_common::format::{Context, DumpOptions, Dumped, InputFormat, JitFiles};
use profkit_common::{Summary, Validation};

use crate::cli::DumpArgs;
use crate::source::Scanned;
use profkit_model::detect::Format;

/// Whether `format` reads a stream record by record (its input is then never read whole).
pub fn streams(format: Format) -> bool {
    format.face().is_some_and(|f| f.streams())
}

/// The face of the input, or the error for command `what` on a format it does not read.
fn face_of(s: &Scanned, what: &str) -> Result<&'static dyn InputFormat> {
    match s.format().face() {
        Some(f) => Ok(f),
        None => Err(s.whole()?.unsupported(what)),
    }
}

/// What `profkit info` shows of the input.
pub fn summary(s: &mut Scanned) -> Result<Summary> {
    let f = face_of(s, "info")?;
    let jit = match s {
        Scanned::Whole(o) if o.format == Format::Perf => Some(o.jit_search()?),
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
    format.face().map_or("records", |f| f.record_unit())
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
