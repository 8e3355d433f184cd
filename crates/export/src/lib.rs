//! Writers that turn profkit's event stream into the files viewers and tools open.
//!
//! Every output implements [`profkit_model::events::EventSink`], so it works for every input
//! format a [`profkit_model::feed`] driver reads. [`open`] picks the writer for a [`Format`] and
//! an [`Output`].
//!
//! # Layout
//! * [`chrome`]: Chrome Trace Event JSON (`.json`, `.json.gz`), streamed.
//! * [`perfetto`]: Perfetto protobuf traces (`.pftrace`) through the small encoder in
//!   [`protobuf`], streamed.
//! * [`speedscope`]: speedscope JSON (evented profiles per thread, sampled profiles).
//! * [`folded`]: folded stacks (exclusive time or counts) and, with feature `svg`, SVG flame
//!   graphs drawn by inferno.
//! * [`firefox`]: the Firefox Profiler's processed format via `fxprof-processed-profile`.
//! * [`pprof`]: pprof protobuf profiles (`.pb.gz`).
//! * [`otlp`]: OpenTelemetry profiles (`ProfilesData`, opentelemetry-proto v1.11.0) in the
//!   binary protobuf (`.otlp.pb`) or OTLP/JSON (`.otlp.json`) encoding; prost types generated
//!   from the official .proto files (`otlp::generated`).
//! * [`parquet`] (feature `parquet`): the `spans`, `events`, `functions` and `code` tables.
//! * [`perfmap`]: perf map (`perf-<pid>.map`) from any code source.
//! * [`output`]: [`Output`], where every writer's files go (stdout, staged files,
//!   `O_DIRECT`: profkit-common's, re-exported), and `OutStream` (gzip).

use std::fmt;
use std::io;
use std::path::Path;

use profkit_model::events::EventSink;

pub use output::{Dest, Output};

mod call_tree;
pub mod chrome;
pub mod firefox;
pub mod folded;
pub mod harness;
pub mod otlp;
pub mod output;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod perfetto;
pub mod perfmap;
pub mod pprof;
pub mod protobuf;
pub mod speedscope;

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Perfetto protobuf trace.
    Perfetto,
    /// Chrome Trace Event JSON.
    Chrome,
    /// Firefox Profiler processed profile (gzip JSON).
    Firefox,
    /// speedscope JSON.
    Speedscope,
    /// Folded stacks (`a;b;c 123`).
    Folded,
    /// SVG flame graph.
    Svg,
    /// pprof protobuf (gzip).
    Pprof,
    /// Parquet tables.
    Parquet,
    /// OpenTelemetry profiles, binary protobuf.
    Otlp,
    /// OpenTelemetry profiles, OTLP/JSON.
    OtlpJson,
    /// perf map text.
    PerfMap,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 11] = [
        Format::Perfetto,
        Format::Chrome,
        Format::Firefox,
        Format::Speedscope,
        Format::Folded,
        Format::Svg,
        Format::Pprof,
        Format::Parquet,
        Format::Otlp,
        Format::OtlpJson,
        Format::PerfMap,
    ];

    /// The name used by `-f`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Perfetto => "perfetto",
            Format::Chrome => "chrome",
            Format::Firefox => "firefox",
            Format::Speedscope => "speedscope",
            Format::Folded => "folded",
            Format::Svg => "svg",
            Format::Pprof => "pprof",
            Format::Parquet => "parquet",
            Format::Otlp => "otlp",
            Format::OtlpJson => "otlp-json",
            Format::PerfMap => "perf-map",
        }
    }

    /// The format named `name` (as `-f` takes it; a few aliases are accepted).
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name.to_ascii_lowercase().as_str() {
            "perfetto" | "pftrace" | "proto" => Format::Perfetto,
            "chrome" | "json" | "trace_event" | "trace-event" => Format::Chrome,
            "firefox" | "fxprof" | "gecko" => Format::Firefox,
            "speedscope" => Format::Speedscope,
            "folded" | "collapsed" => Format::Folded,
            "svg" | "flamegraph" => Format::Svg,
            "pprof" => Format::Pprof,
            "parquet" => Format::Parquet,
            "otlp" | "otlp-pb" | "otlp-proto" => Format::Otlp,
            "otlp-json" => Format::OtlpJson,
            "perf-map" | "perfmap" | "map" => Format::PerfMap,
            _ => return None,
        })
    }

    /// The format a file name implies (`.pftrace`, `.perfetto-trace`, `.json`, `.json.gz`,
    /// `.speedscope.json`, `.fxprof.json.gz` / `.firefox.json.gz`, `.folded`, `.svg`, `.pb.gz` /
    /// `.pprof`, `.parquet`, `.otlp.pb` / `.otlp`, `.otlp.json`, `.map`).
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let ends = |s: &str| name.ends_with(s);
        Some(if ends(".otlp.json") {
            Format::OtlpJson
        } else if ends(".otlp.pb") || ends(".otlp") {
            Format::Otlp
        } else if ends(".speedscope.json") {
            Format::Speedscope
        } else if ends(".fxprof.json.gz")
            || ends(".firefox.json.gz")
            || ends(".fxprof.json")
            || ends(".firefox.json")
        {
            Format::Firefox
        } else if ends(".pftrace") || ends(".perfetto-trace") || ends(".perfetto") {
            Format::Perfetto
        } else if ends(".json") || ends(".json.gz") {
            Format::Chrome
        } else if ends(".folded") || ends(".collapsed") {
            Format::Folded
        } else if ends(".svg") {
            Format::Svg
        } else if ends(".pb.gz") || ends(".pprof") || ends(".pb") {
            Format::Pprof
        } else if ends(".parquet") {
            Format::Parquet
        } else if ends(".map") {
            Format::PerfMap
        } else {
            return None;
        })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Settings shared by the writers.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Folded stacks, SVG and pprof from traced calls: weigh stacks by call count instead of
    /// exclusive time.
    pub counts: bool,
    /// Folded stacks: inclusive time (llvm-xray's flame output) instead of exclusive.
    pub inclusive: bool,
    /// Title of SVG flame graphs and of the Firefox profile (default: the trace's name).
    pub title: Option<String>,
}

/// A writer for `format` into `output`.
pub fn open(
    format: Format,
    output: &Output,
    options: &Options,
) -> io::Result<Box<dyn EventSink + Send>> {
    match format {
        Format::Perfetto => perfetto::sink(output, options),
        Format::Chrome => chrome::sink(output, options),
        Format::Firefox => firefox::sink(output, options),
        Format::Speedscope => speedscope::sink(output, options),
        Format::Folded => folded::sink(output, options, false),
        Format::Svg => folded::sink(output, options, true),
        Format::Pprof => pprof::sink(output, options),
        #[cfg(feature = "parquet")]
        Format::Parquet => parquet::sink(output, options),
        #[cfg(not(feature = "parquet"))]
        Format::Parquet => Err(unsupported(
            "this profkit was built without the `parquet` feature",
        )),
        Format::Otlp => otlp::sink(output, options, otlp::Encoding::Protobuf),
        Format::OtlpJson => otlp::sink(output, options, otlp::Encoding::Json),
        Format::PerfMap => perfmap::sink(output, options),
    }
}

/// The error a writer returns for input its format cannot represent (a
/// [`CannotShow`](profkit_model::events::CannotShow)).
pub fn unsupported(what: impl Into<String>) -> io::Error {
    profkit_model::events::CannotShow::error(what)
}
