//! Opening an input for the model: the bytes (mapped, or read and inflated), the detected
//! format, an llvm-xray YAML trace re-encoded as binary, and the function names of `-m BIN`.

use std::path::Path;

use anyhow::{anyhow, Result};
use profkit_model::feed::xray::function_table;
use profkit_model::{FunctionTable, Source};
use profkit_xray::{trace_yaml, InstrMap, Symbolizer, Trace};

use crate::cli::InputFormat;
use crate::cmd::{open_detected, unsupported};
use crate::detect::Format;
use crate::input::{self, Data, Input};

/// An opened input whose calls the model can replay.
pub struct Opened {
    /// The input as read.
    pub input: Input,
    /// Its format.
    pub format: Format,
    /// The binary re-encoding of an llvm-xray YAML trace.
    encoded: Option<Vec<u8>>,
}

impl Opened {
    /// Opens `path` for command `what` (which needs calls or code: XRay, Mono, jitdump).
    pub fn open(path: &Path, forced: Option<InputFormat>, what: &str) -> Result<Opened> {
        let (input, format) = open_detected(path, forced)?;
        Opened::from_input(input, format, what)
    }

    /// Wraps an input already opened.
    pub fn from_input(input: Input, format: Format, what: &str) -> Result<Opened> {
        let encoded = match format {
            Format::Xray | Format::Mlpd | Format::Jitdump => None,
            Format::XrayYaml => {
                let text = std::str::from_utf8(&input.data)
                    .map_err(|e| anyhow!("{}: not UTF-8 text: {e}", input.name))?;
                let y = trace_yaml::read_yaml(text).map_err(|e| anyhow!("{}: {e}", input.name))?;
                Some(trace_yaml::yaml_to_binary(&y).map_err(|e| anyhow!("{}: {e}", input.name))?)
            }
            other => return Err(unsupported(&input, other, what)),
        };
        Ok(Opened {
            input,
            format,
            encoded,
        })
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
            if let Data::Mapped(_) = &self.input.data {
                self.input.data.release_range(start, end);
            }
        }
    }

    /// An XRay trace (binary or YAML).
    pub fn trace(&self) -> Result<Trace<'_>> {
        Trace::parse(self.bytes()).map_err(|e| anyhow!("{}: {e}", self.input.name))
    }

    /// The model's view of the input; `instr_map` names XRay function ids.
    pub fn source(&self, instr_map: Option<&Path>) -> Result<Source<'_>> {
        Ok(match self.format {
            Format::Xray | Format::XrayYaml => Source::xray(self.trace()?, names(instr_map)?),
            Format::Mlpd => Source::mlpd(
                profkit_mlpd::File::parse(self.bytes())
                    .map_err(|e| anyhow!("{}: {e}", self.input.name))?,
            ),
            Format::Jitdump => Source::jitdump(self.bytes()),
            other => return Err(unsupported(&self.input, other, "this command")),
        })
    }
}

/// Function names from the instrumented binary (`-m`); empty without one (ids print as `#N`).
pub fn names(bin: Option<&Path>) -> Result<FunctionTable> {
    let Some(bin) = bin else {
        return Ok(FunctionTable::new());
    };
    let inp = input::open(bin)?;
    let map = InstrMap::from_object(&inp.data)
        .map_err(|e| anyhow!("{}: cannot read the instrumentation map: {e}", inp.name))?;
    let sym = Symbolizer::new(&inp.data).ok();
    Ok(function_table(&map, sym.as_ref()))
}
