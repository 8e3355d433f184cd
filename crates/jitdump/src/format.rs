//! The face `profkit` sees ([`profkit_common::InputFormat`]): [`JITDUMP`] and [`PERF_MAP`].

use std::io::Write;

use profkit_common::format::{
    dump_parsed, Context, DumpOptions, DumpResult, Dumped, Input, InputFormat, Outcome,
};
use profkit_common::{Summary, Validation};

use crate::dump;
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
fn records<'a>(input: Input<'a>) -> Outcome<Box<dyn RecordSource + 'a>> {
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

    fn summary(&self, input: Input<'_>, _: &Context<'_>) -> Outcome<Summary> {
        Ok(crate::summary_of(&mut *records(input)?))
    }

    /// A header that does not parse is a finding.
    fn validate(&self, input: Input<'_>) -> Outcome<Validation> {
        Ok(match input {
            Input::Bytes(b) => crate::validate(b),
            Input::Stream(r) => crate::validate::validate_stream(r),
        })
    }

    fn dump(&self, input: Input<'_>, o: &DumpOptions, out: &mut dyn Write) -> DumpResult {
        let opts = dump::DumpOptions {
            json: o.json,
            code: o.code,
        };
        dump_parsed(records(input), |mut records| {
            let r = dump::write_records(out, &mut *records, opts)?;
            Ok(Dumped::ended(r.error, r.truncation))
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

    fn summary(&self, input: Input<'_>, _: &Context<'_>) -> Outcome<Summary> {
        Ok(perfmap::summary(input.bytes(self.name())?))
    }

    fn validate(&self, input: Input<'_>) -> Outcome<Validation> {
        Ok(perfmap::validate(input.bytes(self.name())?))
    }

    /// Every line (no code bytes in a perf map); lines that do not parse are problems.
    fn dump(&self, input: Input<'_>, o: &DumpOptions, out: &mut dyn Write) -> DumpResult {
        let text = input.bytes(self.name())?;
        let mut d = Dumped::default();
        let opts = dump::DumpOptions {
            json: o.json,
            code: false,
        };
        dump::write_perf_map(out, text, opts, &mut |e| d.problems.push(e.to_string()))?;
        Ok(d)
    }
}
