//! Opening an input: the bytes (mapped, or read and inflated), the detected format, an
//! llvm-xray YAML trace re-encoded as binary, and the model's view of it ([`Opened::source`])
//! with the function names of `-m BIN`.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use profkit_model::feed::perf::PerfOptions;
use profkit_model::source::{Open, OpenError};
use profkit_model::Source;

use crate::cli::{InputOpts, PerfDataOpts};
use crate::input::{self, Input, StreamInput};
use crate::instr_maps::names;
use profkit_model::detect::{detect, Format};

const UNKNOWN: &str = "unknown format: not a jitdump (magic \"DTiJ\"/\"JiTD\"), perf map, perf.data, XRay trace or profile, Mono log profiler file or ELF binary (use --input-format to force one)";

/// An opened input.
pub struct Opened {
    /// The input as read.
    pub input: Input,
    /// Its format.
    pub format: Format,
    /// The binary re-encoding of an llvm-xray YAML trace.
    encoded: Option<Vec<u8>>,
    /// The path opened (`None` for stdin).
    path: Option<PathBuf>,
    /// Where a perf.data's JIT metadata is.
    jit: PerfDataOpts,
}

impl Opened {
    /// Opens `path` (`-` = stdin) and determines its format (`forced` overrides detection). A
    /// stream (gzip, stdin) is read into memory after its first bytes are detected (so a
    /// stream of no known format fails at once, whatever its size).
    pub fn open(path: &Path, opts: &InputOpts) -> Result<Opened> {
        let path = &*profkit_record::recording_file(path);
        let forced = opts.input_format;
        match input::open_streaming(path)? {
            input::Opened::Data(input) => Opened::of(input, opts, path, true),
            input::Opened::Stream(mut s) => {
                let format = stream_format(&mut s, forced)?;
                let input = crate::inflate::read_whole(s, format.description())?;
                Opened::of(input, opts, path, true)
            }
        }
    }

    /// The input read whole, with its format; an llvm-xray YAML trace re-encoded as binary
    /// when `encode_yaml`.
    fn of(input: Input, opts: &InputOpts, path: &Path, encode_yaml: bool) -> Result<Opened> {
        let forced = opts.input_format;
        if let Some(cut) = &input.cut {
            crate::output::print_truncation(&input.name, cut);
        }
        let format = match forced {
            Some(f) => f,
            None => detect(&input.data).ok_or_else(|| anyhow!("{}: {UNKNOWN}", input.name))?,
        };
        // info, dump and validate hand the text to the format's face, which re-encodes it
        let encoded = match format.encode(&input.data) {
            Some(encoded) if encode_yaml => {
                Some(encoded.map_err(|e| anyhow!("{}: {e}", input.name))?)
            }
            _ => None,
        };
        Ok(Opened {
            input,
            format,
            encoded,
            path: (path != Path::new("-")).then(|| path.to_path_buf()),
            jit: opts.jit.clone(),
        })
    }

    /// The JIT metadata search of this input, if it is a perf.data.
    pub fn jit_search(&self) -> Result<profkit_model::feed::perf::JitSearch> {
        self.jit.search(self.path())
    }

    /// The input's path (`None` for stdin).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The name for messages.
    pub fn name(&self) -> &str {
        &self.input.name
    }

    /// The bytes the format's reader reads.
    pub fn bytes(&self) -> &[u8] {
        match &self.encoded {
            Some(v) => v,
            None => &self.input.data,
        }
    }

    /// Tells the kernel that bytes `start..end` of a memory-mapped input will not be read
    /// again soon, so their pages leave the resident set.
    pub fn release(&self, start: u64, end: u64) {
        if self.encoded.is_none() {
            self.input.data.release_range(start, end);
        }
    }

    /// The error for a command that does not take this format.
    pub fn unsupported(&self, what: &str) -> anyhow::Error {
        anyhow!(
            "{}: `profkit {what}` does not read {}",
            self.input.name,
            self.format.description()
        )
    }

    /// An XRay trace (binary or YAML), for the YAML writer.
    pub fn trace(&self) -> Result<profkit_xray::Trace<'_>> {
        profkit_xray::Trace::parse(self.bytes()).map_err(|e| anyhow!("{}: {e}", self.input.name))
    }

    /// A jitdump.
    pub fn jitdump(&self) -> Result<profkit_jitdump::JitDump<'_>> {
        profkit_jitdump::JitDump::parse(self.bytes())
            .map_err(|e| anyhow!("{}: {e}", self.input.name))
    }

    /// The model's view of the input for command `what`; `instr_maps` (`-m`) name XRay
    /// function ids; `tsc_hz` (`--tsc-hz`) is the clock of an XRay profile's ticks; `event`
    /// (`--event`) picks a perf.data recording's sampled event. Each is read only where the
    /// format uses it.
    pub fn source(
        &self,
        instr_maps: &[String],
        tsc_hz: Option<u64>,
        event: Option<&str>,
        what: &str,
    ) -> Result<Source<'_>> {
        let perf = || {
            Ok(PerfOptions {
                jit: self.jit_search()?,
                kallsyms: self
                    .jit
                    .kallsyms
                    .clone()
                    .or_else(|| self.path().and_then(profkit_record::recorded_kallsyms)),
                event: event.map(str::to_string),
                helper: helper_from_env(),
                ..PerfOptions::default()
            })
        };
        let open = Open {
            instr_names: &|| Ok(names(instr_maps)?),
            tsc_hz,
            perf: &|| perf().map_err(|e: anyhow::Error| e.into()),
        };
        match Source::open(self.format, self.bytes(), &open) {
            Ok(Some(src)) => Ok(src),
            Ok(None) => Err(self.unsupported(what)),
            Err(OpenError::Input(e)) => Err(anyhow!("{}: {e}", self.input.name)),
            Err(OpenError::Provider(e)) => Err(anyhow!(e)),
        }
    }
}

/// The format of a stream, from its first (decompressed) bytes (`forced` overrides detection).
fn stream_format(s: &mut StreamInput, forced: Option<Format>) -> Result<Format> {
    if let Some(f) = forced {
        return Ok(f);
    }
    if let Some(f) = detect(s.head()) {
        return Ok(f);
    }
    let got = s.head().len();
    match s.head_failure() {
        // too little was inflated to tell the format: the stream is the problem
        Some(e) => bail!(
            "{}: gzip data is corrupt or cut off after {got} inflated bytes ({e})",
            s.name
        ),
        None => bail!("{}: {UNKNOWN}", s.name),
    }
}

/// An input opened for `info`, `dump` and `validate`: a file of a format that streams (jitdump,
/// Mono) that arrives as a stream (gzip, stdin) is read one record or buffer at a time, so memory stays flat whatever
/// its size; anything else is [`Opened`] whole (a plain file mapped, another stream read into
/// memory, up to [`crate::inflate::max_inflated`]).
pub enum Scanned {
    /// The input mapped or in memory.
    Whole(Opened),
    /// A stream of a format that reads streams.
    Stream(StreamInput, Format),
}

impl Scanned {
    /// Opens `path` (`-` = stdin) and determines its format (`forced` overrides detection).
    pub fn open(path: &Path, opts: &InputOpts) -> Result<Scanned> {
        let path = &*profkit_record::recording_file(path);
        let forced = opts.input_format;
        match input::open_streaming(path)? {
            input::Opened::Data(input) => Opened::of(input, opts, path, false).map(Scanned::Whole),
            input::Opened::Stream(mut s) => match stream_format(&mut s, forced)? {
                f if crate::formats::streams(f) => Ok(Scanned::Stream(s, f)),
                f => {
                    let input = crate::inflate::read_whole(s, f.description())?;
                    Opened::of(input, opts, path, false).map(Scanned::Whole)
                }
            },
        }
    }

    /// The name for messages.
    pub fn name(&self) -> &str {
        match self {
            Scanned::Whole(o) => o.name(),
            Scanned::Stream(s, _) => &s.name,
        }
    }

    /// The input's format.
    pub fn format(&self) -> Format {
        match self {
            Scanned::Whole(o) => o.format,
            Scanned::Stream(_, f) => *f,
        }
    }

    /// `Some("gzip")` for a compressed input.
    pub fn compression(&self) -> Option<&'static str> {
        match self {
            Scanned::Whole(o) => o.input.compression,
            Scanned::Stream(s, _) => s.compression,
        }
    }

    /// The (decompressed) size; a stream is read to its end first.
    pub fn size(&mut self) -> u64 {
        match self {
            Scanned::Whole(o) => o.input.data.len() as u64,
            Scanned::Stream(s, _) => s.finish(),
        }
    }

    /// The input in memory: every format but a jitdump or Mono file read as a stream.
    pub fn whole(&self) -> Result<&Opened> {
        match self {
            Scanned::Whole(o) => Ok(o),
            Scanned::Stream(s, f) => Err(anyhow!(
                "{}: {} is read as a stream here, not in memory",
                s.name,
                f.description()
            )),
        }
    }

    /// The input as its format's face reads it: the bytes, or the stream.
    pub fn input(&mut self) -> profkit_common::format::Input<'_> {
        use profkit_common::format::Input;
        match self {
            Scanned::Whole(o) => Input::Bytes(o.bytes()),
            Scanned::Stream(s, _) => Input::Stream(s),
        }
    }
}

/// `PROFKIT_HELPER=1` (or `0`): name perf.data samples on two threads (or one) whatever the
/// number of CPUs (see `PerfOptions::helper`); unset or anything else: by the CPUs.
fn helper_from_env() -> Option<bool> {
    match std::env::var("PROFKIT_HELPER").ok()?.as_str() {
        "1" | "on" => Some(true),
        "0" | "off" => Some(false),
        _ => None,
    }
}
