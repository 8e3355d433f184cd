//! The face `profkit` sees ([`profkit_common::InputFormat`]): [`MLPD`].

use std::io::Write;

use profkit_common::format::{
    dump_parsed, Context, DumpOptions, DumpResult, Dumped, Input, InputFormat, Outcome,
};
use profkit_common::{Summary, Validation};

use crate::error::Error;
use crate::read::File;
use crate::source::{BufferSource, StreamBuffers};

/// Mono log profiler files, read buffer by buffer from a stream too.
pub struct Mlpd;

/// Mono log profiler files.
pub static MLPD: Mlpd = Mlpd;

/// A Mono file's buffers, from memory or from the stream.
fn buffers<'a>(input: Input<'a>) -> Result<Box<dyn BufferSource + 'a>, Error> {
    Ok(match input {
        Input::Bytes(b) => Box::new(File::parse(b)?.source()),
        Input::Stream(r) => Box::new(StreamBuffers::new(r)?),
    })
}

impl InputFormat for Mlpd {
    fn name(&self) -> &'static str {
        "mlpd"
    }

    /// The file magic `01 5A 50 4D`.
    fn detect(&self, head: &[u8]) -> bool {
        head.get(..4) == Some(&[0x01, 0x5a, 0x50, 0x4d])
    }

    fn streams(&self) -> bool {
        true
    }

    fn record_unit(&self) -> &'static str {
        "events"
    }

    fn summary(&self, input: Input<'_>, _: &Context<'_>) -> Outcome<Summary> {
        Ok(crate::summary::summary_of(&mut *buffers(input)?))
    }

    /// A header that does not parse is a finding.
    fn validate(&self, input: Input<'_>) -> Outcome<Validation> {
        Ok(match input {
            Input::Bytes(b) => crate::validate::validate_bytes(b),
            Input::Stream(r) => crate::validate::validate_stream(r),
        })
    }

    /// Every event of every buffer; the undecodable parts (not the cut) are problems.
    fn dump(&self, input: Input<'_>, o: &DumpOptions, out: &mut dyn Write) -> DumpResult {
        dump_parsed(buffers(input), |mut src| {
            let problems = if o.json {
                crate::dump::write_ndjson_of(&mut *src, out)?
            } else {
                crate::dump::write_text_of(&mut *src, out)?
            };
            let mut d = Dumped::ended(None, src.truncation());
            d.problems = problems
                .iter()
                .filter(|p| !p.is_truncation())
                .map(|p| p.to_string())
                .collect();
            Ok(d)
        })
    }
}
