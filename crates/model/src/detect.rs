//! The registry of input formats ([`REGISTRY`]) and detection by content: what every command
//! and the fuzz harnesses use to tell the formats apart from their first bytes, through the
//! format crates' own tests ([`InputFormat::detect`], one per format, walked in the registry's
//! order). A format's driver (how the model replays it) is [`crate::Source::open`]'s.

use profkit_common::format::InputFormat;

/// A detected input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// perf jitdump.
    Jitdump,
    /// perf map (`/tmp/perf-PID.map`).
    PerfMap,
    /// LLVM XRay trace (basic or FDR).
    Xray,
    /// LLVM XRay profiling-mode file.
    XrayProfile,
    /// llvm-xray YAML trace.
    XrayYaml,
    /// Mono log profiler file.
    Mlpd,
    /// ELF binary (an XRay instrumentation map).
    Elf,
    /// perf.data.
    Perf,
}

/// One format of the registry.
pub struct Registered {
    /// The format.
    pub format: Format,
    /// What users call it, for messages (`a perf jitdump`).
    pub description: &'static str,
    /// The format crate's face (detect, summary, validate, dump); `None` for an ELF binary,
    /// which only `extract` and `-m` read.
    pub face: Option<&'static dyn InputFormat>,
}

/// An ELF binary: detected by its magic, read by `extract` and `-m` only.
const ELF: Registered = Registered {
    format: Format::Elf,
    description: "an ELF binary",
    face: None,
};

/// The registry of input formats, in the order detection tries them: an ELF binary first (by
/// its magic), then every format crate's face (profkit-common's [`InputFormat`]). `info`,
/// `dump`, `validate` and `--input-format` reach every format through it; a new input format is
/// its crate's face, one line here (and a `Format` variant), and its driver in `Source::open`.
pub static REGISTRY: &[Registered] = &[
    ELF,
    Registered {
        format: Format::Jitdump,
        description: "a perf jitdump",
        face: Some(&profkit_jitdump::JITDUMP),
    },
    Registered {
        format: Format::Mlpd,
        description: "a Mono log profiler file",
        face: Some(&profkit_mlpd::MLPD),
    },
    Registered {
        format: Format::Perf,
        description: "a perf.data recording",
        face: Some(&profkit_perf::PERF),
    },
    Registered {
        format: Format::XrayProfile,
        description: "an LLVM XRay profiling-mode profile",
        face: Some(&profkit_xray::XRAY_PROFILE),
    },
    Registered {
        format: Format::Xray,
        description: "an LLVM XRay trace",
        face: Some(&profkit_xray::XRAY),
    },
    Registered {
        format: Format::PerfMap,
        description: "a perf map",
        face: Some(&profkit_jitdump::PERF_MAP),
    },
    Registered {
        format: Format::XrayYaml,
        description: "an llvm-xray YAML trace",
        face: Some(&profkit_xray::XRAY_YAML),
    },
];

impl Format {
    /// This format's line in the [`REGISTRY`].
    fn registered(self) -> &'static Registered {
        // every variant has its line (tested below)
        REGISTRY.iter().find(|r| r.format == self).unwrap_or(&ELF)
    }

    /// The name used in output (`"format"` in JSON) and by `--input-format`: the face's.
    pub fn name(self) -> &'static str {
        match self.registered().face {
            Some(face) => face.name(),
            None => "elf",
        }
    }

    /// The format named `name` (as [`Format::name`] spells it).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::all().find(|f| f.name() == name)
    }

    /// Every format, in the registry's order.
    pub fn all() -> impl Iterator<Item = Format> {
        REGISTRY.iter().map(|r| r.format)
    }

    /// What users call it, for messages.
    pub fn description(self) -> &'static str {
        self.registered().description
    }

    /// The registry face of this format (`None` for an ELF binary, which only `extract` and
    /// `-m` read).
    pub fn face(self) -> Option<&'static dyn InputFormat> {
        self.registered().face
    }

    /// The bytes this format is read through, when they are not the file's own: an llvm-xray
    /// YAML trace is re-encoded as the binary trace it describes (`None`: read as it is).
    pub fn encode(self, data: &[u8]) -> Option<Result<Vec<u8>, profkit_common::Error>> {
        match self {
            Format::XrayYaml => Some(profkit_xray::yaml::text_to_binary(data)),
            _ => None,
        }
    }
}

/// Detects the format of (already decompressed) `data`: an ELF binary (an instrumentation map
/// for `extract` and `-m`), else the first face of the [`REGISTRY`] that recognises it.
pub fn detect(data: &[u8]) -> Option<Format> {
    if data.get(..4) == Some(b"\x7fELF") {
        return Some(Format::Elf);
    }
    REGISTRY
        .iter()
        .find(|r| r.face.is_some_and(|f| f.detect(data)))
        .map(|r| r.format)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every format has one line in the registry, names are distinct, and each format's first
    /// bytes are detected as that format.
    #[test]
    fn every_format_is_registered_once() {
        let samples: [(&[u8], Format); 8] = [
            (b"DTiJ\x01\0\0\0", Format::Jitdump),
            (b"\x01ZPM\0\0\0\0", Format::Mlpd),
            (b"PERFILE2", Format::Perf),
            (
                &[
                    1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                    0, 0, 0, 0, 0, 0,
                ],
                Format::Xray,
            ),
            (b"7f0000001000 40 foo\n", Format::PerfMap),
            (b"---\nheader:\n  version: 3\n", Format::XrayYaml),
            (b"\x7fELF\x02\x01\x01\0", Format::Elf),
            (b"forpyarx\x01\0\0\0\0\0\0\0", Format::XrayProfile),
        ];
        assert_eq!(REGISTRY.len(), samples.len());
        for (head, want) in samples {
            assert_eq!(detect(head), Some(want), "{head:?}");
            assert_eq!(REGISTRY.iter().filter(|r| r.format == want).count(), 1);
            assert_eq!(Format::from_name(want.name()), Some(want));
        }
    }
}
