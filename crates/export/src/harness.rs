//! What the `convert_all` fuzz target runs on any bytes (and what the tests replay on its saved
//! inputs, `fuzz/regressions/convert_all/`): gzip unwrapped, the format detected from the
//! bytes as the CLI does, the format's driver fed once, through a tee, into **every writer**
//! (Perfetto, Chrome JSON, speedscope, pprof, OTLP, folded and, with the `svg` feature, the
//! flame graph) writing into a sink that only counts bytes, and into two Firefox writers, whose
//! profile with profkit's samples tables must be fxprof's with every sample. Nothing may
//! panic, and each output must stay bounded by the input ([`output_limit`]): a writer whose
//! output grows with a time value or a size field (a corrupt TSC jump once made the Firefox
//! writer emit billions of samples) is a finding.
//! Not part of the API.
#![doc(hidden)]

use std::io::{self, Read, Write};

use profkit_model::detect::{detect, Format};
use profkit_model::events::{
    CallPath, CodeRegion, Counter, Enter, EventSink, Instant, ProcessInfo, Sample, ThreadInfo,
    TraceInfo,
};
use profkit_model::replay::pipeline::Workers;
use profkit_model::source::Open;
use profkit_model::span::Span;
use profkit_model::{FuncId, FuncInfo, Source};

use crate::chrome::ChromeWriter;
use crate::firefox::FirefoxSink;
use crate::folded::FoldedWriter;
use crate::otlp::{Encoding as OtlpEncoding, OtlpSink};
use crate::perfetto::PerfettoWriter;
use crate::pprof::PprofSink;
use crate::speedscope::SpeedscopeWriter;
use crate::Options;

/// Decompressed bytes of a gzip input looked at, at most.
pub const MAX_INFLATED: u64 = 16 << 20;

/// The most bytes one writer may produce for an input of `len` bytes: a fixed allowance for
/// headers and metadata, plus a generous amount per input byte (an event's name may be
/// repeated in every event that uses it).
pub fn output_limit(len: usize) -> u64 {
    (32 << 20) + 20_000 * len as u64
}

/// Counts what a writer writes.
#[derive(Default)]
pub struct Counting {
    /// Bytes written.
    pub bytes: u64,
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs every writer on `data` (see the module docs).
pub fn check_convert(data: &[u8]) {
    let mut inflated = Vec::new();
    let bytes = if data.starts_with(&[0x1f, 0x8b]) {
        let _ = flate2::read::MultiGzDecoder::new(data)
            .take(MAX_INFLATED)
            .read_to_end(&mut inflated);
        &inflated[..]
    } else {
        data
    };
    let Some(format) = detect(bytes) else { return };
    let Some(source) = source(format, bytes) else {
        return;
    };
    let options = Options::default();
    let limit = output_limit(bytes.len());
    let mut outs: Vec<Counting> = (0..WRITERS.len()).map(|_| Counting::default()).collect();
    // The Firefox profile with profkit's samples tables, and with fxprof's.
    let (mut ours, mut theirs) = (Digest::default(), Digest::default());
    {
        let mut it = outs.iter_mut();
        let mut next = || it.next().map(|c| c as &mut Counting);
        let mut sinks: Vec<Box<dyn EventSink + '_>> = Vec::new();
        if let Some(w) = next() {
            sinks.push(Box::new(PerfettoWriter::new(w)));
        }
        if let Some(w) = next() {
            sinks.push(Box::new(ChromeWriter::new(w)));
        }
        sinks.push(Box::new(FirefoxSink::new(&mut ours, false, None)));
        sinks.push(Box::new(
            FirefoxSink::new(&mut theirs, false, None).samples_through_fxprof(),
        ));
        if let Some(w) = next() {
            sinks.push(Box::new(SpeedscopeWriter::new(w)));
        }
        if let Some(w) = next() {
            sinks.push(Box::new(PprofSink::new(w, false, false)));
        }
        if let Some(w) = next() {
            sinks.push(Box::new(OtlpSink::new(w, OtlpEncoding::Protobuf, false)));
        }
        if let Some(w) = next() {
            sinks.push(Box::new(OtlpSink::new(w, OtlpEncoding::Json, false)));
        }
        if let Some(w) = next() {
            sinks.push(Box::new(FoldedWriter::new(w, &options)));
        }
        #[cfg(feature = "svg")]
        if let Some(w) = next() {
            sinks.push(Box::new(FoldedWriter::new_svg(w, &options)));
        }
        // One pass of the driver feeds every writer.
        let mut tee = Tee {
            sinks: sinks.into_iter().map(|s| (s, false)).collect(),
        };
        let _ = source.feed("fuzz", Some(Workers::SEQUENTIAL), None, &mut tee);
    }
    assert!(
        ours.bytes <= limit,
        "firefox: {} bytes from a {} byte input",
        ours.bytes,
        bytes.len()
    );
    assert!(
        ours == theirs,
        "firefox: the samples tables profkit wrote are not fxprof's ({} bytes against {})",
        ours.bytes,
        theirs.bytes
    );
    for (name, out) in WRITERS.iter().zip(&outs) {
        assert!(
            out.bytes <= limit,
            "{name}: {} bytes from a {} byte input",
            out.bytes,
            bytes.len()
        );
    }
}

/// The length and FNV-1a hash of what is written (outputs compared without keeping them:
/// they may be tens of MB).
#[derive(Debug, PartialEq, Eq)]
struct Digest {
    bytes: u64,
    hash: u64,
}

impl Default for Digest {
    fn default() -> Self {
        Digest {
            bytes: 0,
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }
}

impl Write for Digest {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for &b in buf {
            self.hash = (self.hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.bytes += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The writers [`check_convert`] runs, in order.
const WRITERS: &[&str] = &[
    "perfetto",
    "chrome",
    "speedscope",
    "pprof",
    "otlp",
    "otlp-json",
    "folded",
    #[cfg(feature = "svg")]
    "svg",
];

/// Hands every event to each of its sinks; a sink that fails is left out from then on (the
/// others go on), and the first failure is the tee's result.
struct Tee<'a> {
    sinks: Vec<(Box<dyn EventSink + 'a>, bool)>,
}

impl Tee<'_> {
    fn each(&mut self, mut f: impl FnMut(&mut dyn EventSink) -> io::Result<()>) -> io::Result<()> {
        let mut first = Ok(());
        for (sink, failed) in &mut self.sinks {
            if *failed {
                continue;
            }
            if let Err(e) = f(sink.as_mut()) {
                *failed = true;
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}

impl EventSink for Tee<'_> {
    fn begin(&mut self, t: &TraceInfo<'_>) -> io::Result<()> {
        self.each(|s| s.begin(t))
    }
    fn process(&mut self, p: &ProcessInfo<'_>) -> io::Result<()> {
        self.each(|s| s.process(p))
    }
    fn thread(&mut self, t: &ThreadInfo<'_>) -> io::Result<()> {
        self.each(|s| s.thread(t))
    }
    fn function(&mut self, id: FuncId, info: &FuncInfo) -> io::Result<()> {
        self.each(|s| s.function(id, info))
    }
    fn enter(&mut self, call: &Enter<'_>) -> io::Result<()> {
        self.each(|s| s.enter(call))
    }
    fn exit(&mut self, span: &Span) -> io::Result<()> {
        self.each(|s| s.exit(span))
    }
    fn instant(&mut self, i: &Instant<'_>) -> io::Result<()> {
        self.each(|s| s.instant(i))
    }
    fn counter(&mut self, c: &Counter<'_>) -> io::Result<()> {
        self.each(|s| s.counter(c))
    }
    fn sample(&mut self, smp: &Sample<'_>) -> io::Result<()> {
        self.each(|s| s.sample(smp))
    }
    fn code(&mut self, c: &CodeRegion<'_>) -> io::Result<()> {
        self.each(|s| s.code(c))
    }
    fn call_path(&mut self, p: &CallPath<'_>) -> io::Result<()> {
        self.each(|s| s.call_path(p))
    }
    fn finish(&mut self) -> io::Result<()> {
        self.each(|s| s.finish())
    }
}

/// The model's view of `bytes` as the CLI builds it, without instrumentation maps, JIT
/// metadata or kernel symbols from this machine ([`Open::isolated`]); `None` for an input that
/// does not open (an llvm-xray YAML trace is not re-encoded here: `None`).
pub fn source(format: Format, bytes: &[u8]) -> Option<Source<'_>> {
    Source::open(format, bytes, &Open::isolated())
        .ok()
        .flatten()
}
