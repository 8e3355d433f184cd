//! What the `convert_all` fuzz target runs on any bytes (and what the tests replay on its saved
//! inputs, `fuzz/regressions/convert_all/`): gzip unwrapped, the format detected from the
//! bytes as the CLI does, the format's driver fed into **every writer** (Perfetto, Chrome JSON,
//! Firefox, speedscope, pprof, folded and, with the `svg` feature, the flame graph) writing into
//! a sink that only counts bytes. Nothing may panic, and each output must stay bounded by the
//! input ([`output_limit`]): a writer whose output grows with a time value or a size field
//! (a corrupt TSC jump once made the Firefox writer emit billions of samples) is a finding.
//! Not part of the API.
#![doc(hidden)]

use std::io::{self, Read, Write};
use std::path::PathBuf;

use profkit_model::detect::{detect, Format};
use profkit_model::feed::perf::{JitSearch, PerfOptions};
use profkit_model::replay::pipeline::Workers;
use profkit_model::{Clock, FunctionTable, Source};

use crate::chrome::ChromeWriter;
use crate::firefox::FirefoxSink;
use crate::folded::FoldedWriter;
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
    macro_rules! writer {
        ($name:expr, $make:expr) => {{
            let mut out = Counting::default();
            {
                let mut sink = $make(&mut out);
                let _ = source.feed("fuzz", Some(Workers::SEQUENTIAL), None, &mut sink);
            }
            assert!(
                out.bytes <= limit,
                "{}: {} bytes from a {} byte input",
                $name,
                out.bytes,
                bytes.len()
            );
        }};
    }
    writer!("perfetto", |w| PerfettoWriter::new(w));
    writer!("chrome", |w| ChromeWriter::new(w));
    writer!("firefox", |w| FirefoxSink::new(w, false, None));
    writer!("speedscope", |w| SpeedscopeWriter::new(w));
    writer!("pprof", |w| PprofSink::new(w, false, false));
    writer!("folded", |w| FoldedWriter::new(w, &options));
    #[cfg(feature = "svg")]
    writer!("svg", |w| FoldedWriter::new_svg(w, &options));
}

/// The model's view of `bytes` as the CLI builds it, without instrumentation maps, JIT
/// metadata or kernel symbols from this machine.
fn source(format: Format, bytes: &[u8]) -> Option<Source<'_>> {
    Some(match format {
        Format::Xray => Source::xray(
            profkit_xray::Trace::parse(bytes).ok()?,
            FunctionTable::new(),
        ),
        Format::XrayProfile => Source::xray_profile(
            profkit_xray::profile::Profile::parse(bytes).ok()?,
            FunctionTable::new(),
            Clock::new(0),
        ),
        Format::Mlpd => Source::mlpd(profkit_mlpd::File::parse(bytes).ok()?),
        Format::Jitdump => Source::jitdump(bytes),
        Format::Perf => {
            let nowhere = PathBuf::from("/nonexistent/profkit-fuzz");
            Source::perf(
                bytes,
                PerfOptions {
                    jit: JitSearch {
                        beside: None,
                        dirs: vec![nowhere.clone()],
                        tmp: nowhere.clone(),
                    },
                    kallsyms: Some(nowhere),
                    ..PerfOptions::default()
                },
            )
        }
        Format::PerfMap | Format::XrayYaml | Format::Elf => return None,
    })
}
