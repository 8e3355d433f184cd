//! The face `profkit` sees ([`profkit_common::InputFormat`]): [`JITDUMP`] and [`PERF_MAP`].

use std::io::{self, Write};

use profkit_common::format::{Context, DumpOptions, Dumped, Input, InputFormat};
use profkit_common::{Summary, Validation};

use crate::dump;
use crate::error::Error;
use crate::perfmap;
use crate::read::{JitDump, RecordSource, StreamRecords};

/// perf jitdump: read record by record from a stream too.
pub struct Jitdump;

/// perf jitdump.
pub static JITDUMP: Jitdump = Jitdump;

/// perf map text files (`/tmp/perf-PID.map`).
pub struct PerfMap;

/// perf map text files.
pub static PERF_MAP: PerfMap = PerfMap;

/// A jitdump's records, from memory or from the stream.
fn records<'a>(input: Input<'a>) -> Result<Box<dyn RecordSource + 'a>, Error> {
    Ok(match input {
        Input::Bytes(b) => Box::new(JitDump::parse(b)?.source()),
        Input::Stream(r) => Box::new(StreamRecords::new(r)?),
    })
}

impl InputFormat for Jitdump {
    fn name(&self) -> &'static str {
        "jitdump"
    }

    /// The magic in either byte order.
    fn detect(&self, head: &[u8]) -> bool {
        matches!(head.get(..4), Some(b"DTiJ" | b"JiTD"))
    }

    fn streams(&self) -> bool {
        true
    }

    fn summary(&self, input: Input<'_>, _: &Context<'_>) -> Result<Summary, Error> {
        Ok(crate::summary_of(&mut *records(input)?))
    }

    /// A header that does not parse is a finding.
    fn validate(&self, input: Input<'_>) -> Result<Validation, Error> {
        Ok(match input {
            Input::Bytes(b) => crate::validate(b),
            Input::Stream(r) => crate::validate::validate_stream(r),
        })
    }

    fn dump(
        &self,
        input: Input<'_>,
        opts: &DumpOptions,
        out: &mut dyn Write,
    ) -> io::Result<Dumped> {
        let mut records = match records(input) {
            Ok(r) => r,
            Err(e) => {
                return Ok(Dumped {
                    stopped: Some(e),
                    ..Dumped::default()
                })
            }
        };
        let opts = dump::DumpOptions {
            json: opts.json,
            code: opts.code,
        };
        let r = dump::write_records(out, &mut *records, opts)?;
        Ok(Dumped {
            problems: Vec::new(),
            stopped: r.error,
            truncation: r.truncation,
        })
    }
}

impl InputFormat for PerfMap {
    fn name(&self) -> &'static str {
        "perf-map"
    }

    fn detect(&self, head: &[u8]) -> bool {
        perfmap::looks_like_perf_map(head)
    }

    fn record_unit(&self) -> &'static str {
        "lines"
    }

    fn summary(&self, input: Input<'_>, _: &Context<'_>) -> Result<Summary, Error> {
        Ok(perfmap::summary(input.bytes(self.name())?))
    }

    fn validate(&self, input: Input<'_>) -> Result<Validation, Error> {
        Ok(perfmap::validate(input.bytes(self.name())?))
    }

    fn dump(
        &self,
        input: Input<'_>,
        opts: &DumpOptions,
        out: &mut dyn Write,
    ) -> io::Result<Dumped> {
        let text = input.bytes(self.name()).map_err(io::Error::other)?;
        let opts = dump::DumpOptions {
            json: opts.json,
            code: false,
        };
        let mut d = Dumped::default();
        dump::write_perf_map(out, text, opts, &mut |e| d.problems.push(e.to_string()))?;
        Ok(d)
    }
}
