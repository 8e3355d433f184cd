//! Opening an input: the bytes (mapped, or read and inflated), the detected format, an
//! llvm-xray YAML trace re-encoded as binary, and the model's view of it ([`Opened::source`])
//! with the function names of `-m BIN`.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use profkit_model::feed::perf::PerfOptions;
use profkit_model::feed::xray::add_object;
use profkit_model::{Clock, FunctionTable, Source};
use profkit_xray::{yaml, InstrMap, Symbolizer, Trace};

use crate::cli::InputFormat;
use crate::detect::{detect, Format};
use crate::input::{self, Input};

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
}

impl Opened {
    /// Opens `path` (`-` = stdin) and determines its format (`forced` overrides detection).
    pub fn open(path: &Path, forced: Option<InputFormat>) -> Result<Opened> {
        let check = |head: &[u8]| -> Result<()> {
            if forced.is_none() && detect(head).is_none() {
                let name = if path == Path::new("-") {
                    "<stdin>".to_string()
                } else {
                    path.display().to_string()
                };
                bail!("{name}: {UNKNOWN}");
            }
            Ok(())
        };
        let input = input::open_checked(path, &check)?;
        if let Some(cut) = &input.cut {
            crate::output::print_truncation(&input.name, cut);
        }
        let format = match forced {
            Some(f) => crate::detect::forced(f),
            None => detect(&input.data).ok_or_else(|| anyhow!("{}: {UNKNOWN}", input.name))?,
        };
        let encoded = match format {
            Format::XrayYaml => {
                let text = std::str::from_utf8(&input.data)
                    .map_err(|e| anyhow!("{}: not UTF-8 text: {e}", input.name))?;
                let y = yaml::read_yaml(text).map_err(|e| anyhow!("{}: {e}", input.name))?;
                Some(yaml::yaml_to_binary(&y).map_err(|e| anyhow!("{}: {e}", input.name))?)
            }
            _ => None,
        };
        Ok(Opened {
            input,
            format,
            encoded,
            path: (path != Path::new("-")).then(|| path.to_path_buf()),
        })
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

    /// An XRay trace (binary or YAML).
    pub fn trace(&self) -> Result<Trace<'_>> {
        Trace::parse(self.bytes()).map_err(|e| anyhow!("{}: {e}", self.input.name))
    }

    /// An XRay profiling-mode profile.
    pub fn profile(&self) -> Result<profkit_xray::profile::Profile<'_>> {
        profkit_xray::profile::Profile::parse(self.bytes())
            .map_err(|e| anyhow!("{}: {e}", self.input.name))
    }

    /// A jitdump.
    pub fn jitdump(&self) -> Result<profkit_jitdump::JitDump<'_>> {
        profkit_jitdump::JitDump::parse(self.bytes())
            .map_err(|e| anyhow!("{}: {e}", self.input.name))
    }

    /// A perf.data recording.
    pub fn perf(&self) -> Result<profkit_perf::PerfData<'_>> {
        profkit_perf::PerfData::parse(self.bytes()).map_err(|e| anyhow!("{}: {e}", self.input.name))
    }

    /// A Mono log profiler file.
    pub fn mlpd(&self) -> Result<profkit_mlpd::File<'_>> {
        profkit_mlpd::File::parse(self.bytes()).map_err(|e| anyhow!("{}: {e}", self.input.name))
    }

    /// The model's view of the input for command `what`; `instr_maps` (`-m`) name XRay
    /// function ids; `tsc_hz` (`--tsc-hz`) is the clock of an XRay profile's ticks.
    pub fn source(
        &self,
        instr_maps: &[String],
        tsc_hz: Option<u64>,
        what: &str,
    ) -> Result<Source<'_>> {
        if tsc_hz.is_some() && self.format != Format::XrayProfile {
            bail!(
                "{}: --tsc-hz applies to XRay profiling-mode files (which record no clock); this is {}",
                self.input.name,
                self.format.description()
            );
        }
        Ok(match self.format {
            Format::Xray | Format::XrayYaml => Source::xray(self.trace()?, names(instr_maps)?),
            Format::XrayProfile => Source::xray_profile(
                self.profile()?,
                names(instr_maps)?,
                Clock::new(tsc_hz.unwrap_or(0)),
            ),
            Format::Mlpd => Source::mlpd(self.mlpd()?),
            Format::Jitdump => Source::jitdump(self.bytes()),
            Format::Perf => Source::perf(self.bytes(), PerfOptions::new(self.path(), Vec::new())),
            Format::PerfMap | Format::Elf => return Err(self.unsupported(what)),
        })
    }
}

/// The objects `-m` names: `(object id, path)`. `-m BIN` arguments take ids in order (the
/// executable is object 0, then each shared object in the order the XRay runtime registered
/// it); `-m ID=PATH` pins an id (0-255).
pub fn instr_maps(specs: &[String]) -> Result<Vec<(u8, PathBuf)>> {
    let mut out: Vec<(u8, PathBuf)> = Vec::new();
    let mut next = 0u16;
    for spec in specs {
        let pinned = spec
            .split_once('=')
            .and_then(|(id, path)| Some((id.parse::<u8>().ok()?, path)));
        let (id, path) = match pinned {
            Some((id, path)) => (id, path),
            None => (
                u8::try_from(next).map_err(|_| anyhow!("-m: more than 256 objects"))?,
                spec.as_str(),
            ),
        };
        if out.iter().any(|(o, _)| *o == id) {
            bail!("-m {spec}: object id {id} is given twice");
        }
        next = u16::from(id) + 1;
        out.push((id, PathBuf::from(path)));
    }
    Ok(out)
}

/// Function names from the instrumented binaries (`-m`, see [`instr_maps`]); empty without
/// one (ids print as `#N`). Functions of shared object `k` get the packed ids the XRay runtime
/// writes: `k << 24 | id`.
pub fn names(specs: &[String]) -> Result<FunctionTable> {
    let mut table = FunctionTable::new();
    for (object, bin) in instr_maps(specs)? {
        let inp = input::open(&bin)?;
        let map = InstrMap::from_object(&inp.data)
            .map_err(|e| anyhow!("{}: cannot read the instrumentation map: {e}", inp.name))?;
        let sym = Symbolizer::new(&inp.data).ok();
        add_object(&mut table, object, &map, sym.as_ref());
    }
    Ok(table)
}
