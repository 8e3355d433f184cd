//! [`InputFormat`]: the face every format crate shows the command line — how its files are
//! recognised ([`InputFormat::detect`]), what `profkit info` shows ([`InputFormat::summary`]),
//! what `profkit validate` finds ([`InputFormat::validate`]) and what `profkit dump` prints
//! ([`InputFormat::dump`]). The CLI keeps one table of them (its registry); a new input format
//! is a format crate implementing this trait and one line of that table (profkit-model's
//! `detect::REGISTRY`).
//!
//! Each crate exports one `static` per format it reads (`profkit_jitdump::JITDUMP`,
//! `profkit_jitdump::PERF_MAP`, …). Inputs arrive as bytes (a mapped file or an inflated
//! stream) or, for formats that read record by record ([`InputFormat::streams`]), as a stream.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Summary, Truncation, Validation};

/// An input as a format reads it.
pub enum Input<'a> {
    /// The whole (decompressed) file.
    Bytes(&'a [u8]),
    /// A stream read from its start (only for formats whose [`InputFormat::streams`] is true).
    Stream(&'a mut dyn BufRead),
}

impl Input<'_> {
    /// The bytes, or an error for a stream (a format that does not stream never gets one).
    pub fn bytes(&self, format: &str) -> Result<&[u8], Error> {
        match self {
            Input::Bytes(b) => Ok(b),
            Input::Stream(_) => Err(Error::unlocated(
                crate::ErrorKind::Unsupported,
                None,
                format!("{format} is read whole, not as a stream"),
            )),
        }
    }
}

/// What `profkit dump` was asked for (each format takes what applies to it).
#[derive(Clone, Copy, Debug, Default)]
pub struct DumpOptions {
    /// NDJSON instead of text.
    pub json: bool,
    /// Code bytes (jitdump) or stacks (perf.data).
    pub code: bool,
    /// llvm-xray's `--verify` text for XRay traces.
    pub verify: bool,
}

/// How a dump ended: what could not be decoded, and the cut.
#[derive(Debug, Default)]
pub struct Dumped {
    /// Undecodable parts, each with its offset (each skipped what it affected).
    pub problems: Vec<String>,
    /// What ended the dump early (a corrupt record, a header that does not parse).
    pub stopped: Option<Error>,
    /// Where the file is cut, if it is.
    pub truncation: Option<Truncation>,
}

impl Dumped {
    /// A dump that ended before its first record: the input cannot be read.
    #[cold]
    pub fn stopped(e: impl Into<Error>) -> Dumped {
        Dumped {
            stopped: Some(e.into()),
            ..Dumped::default()
        }
    }

    /// A dump that walked the records until `stopped` (or the end), with the cut.
    pub fn ended(stopped: Option<Error>, truncation: Option<Truncation>) -> Dumped {
        Dumped {
            problems: Vec::new(),
            stopped,
            truncation,
        }
    }
}

/// What [`InputFormat::summary`] and [`InputFormat::validate`] give.
pub type Outcome<T> = Result<T, Error>;

/// What [`InputFormat::dump`] gives: write errors are the `io::Error`.
pub type DumpResult = io::Result<Dumped>;

/// `dump` of what `parsed` holds, or a dump [`Dumped::stopped`] at once by its error.
pub fn dump_parsed<T, E: Into<Error>>(
    parsed: Result<T, E>,
    dump: impl FnOnce(T) -> DumpResult,
) -> DumpResult {
    match parsed {
        Ok(t) => dump(t),
        Err(e) => Ok(Dumped::stopped(e)),
    }
}

/// An input a format cannot read (a stream given to a format read whole) fails a dump as an
/// `io::Error` of kind `InvalidData`.
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

/// Where a process's JIT metadata is, as the caller searches for it (perf.data's `info` names
/// each JIT process's jitdump and perf map; the search itself lives above the format crates).
pub trait JitFiles {
    /// The jitdump of process `pid` (`marker`: the path its mmap marker names), or the paths
    /// tried.
    fn jitdump(&self, pid: u32, marker: Option<&Path>) -> Result<PathBuf, Vec<PathBuf>>;
    /// The perf map of process `pid`, or the paths tried.
    fn perf_map(&self, pid: u32) -> Result<PathBuf, Vec<PathBuf>>;
}

/// What a command knows beyond the input's bytes.
#[derive(Clone, Copy, Default)]
pub struct Context<'a> {
    /// Where JIT processes' metadata is (perf.data).
    pub jit: Option<&'a dyn JitFiles>,
}

/// One input format's face (see the module docs).
pub trait InputFormat: Sync {
    /// The name in outputs (`"format"` in JSON): `jitdump`, `perf-map`, `xray`, ….
    fn name(&self) -> &'static str;

    /// Whether `head` (a file's first bytes, at most 64 KiB; the whole file when shorter) is
    /// this format's.
    fn detect(&self, head: &[u8]) -> bool;

    /// Whether [`InputFormat::summary`], [`InputFormat::validate`] and [`InputFormat::dump`]
    /// read a stream record by record (a gzip or stdin input then never sits in memory whole).
    fn streams(&self) -> bool {
        false
    }

    /// What a record is called in messages (`records`, `lines`, `events`).
    fn record_unit(&self) -> &'static str {
        "records"
    }

    /// What `profkit info` shows.
    fn summary(&self, input: Input<'_>, cx: &Context<'_>) -> Outcome<Summary>;

    /// What `profkit validate` finds (a header that does not parse is an error only where the
    /// format cannot report it as a finding).
    fn validate(&self, input: Input<'_>) -> Outcome<Validation>;

    /// `profkit dump` into `out`: write errors are the `io::Error`; a file that cannot be read
    /// (further) is [`Dumped::stopped`].
    fn dump(&self, input: Input<'_>, o: &DumpOptions, out: &mut dyn Write) -> DumpResult;
}
