//! Input format detection by content: what every command and the fuzz harnesses use to tell
//! the formats apart from their first bytes, through the format crates' own tests
//! ([`InputFormat::detect`], one per format, walked in [`FORMATS`]' order).

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

impl Format {
    /// The name used in output (`"format"` in JSON).
    pub fn name(self) -> &'static str {
        match self {
            Format::Jitdump => "jitdump",
            Format::PerfMap => "perf-map",
            Format::Xray => "xray",
            Format::XrayProfile => "xray-profile",
            Format::XrayYaml => "xray-yaml",
            Format::Mlpd => "mlpd",
            Format::Elf => "elf",
            Format::Perf => "perf",
        }
    }

    /// What users call it, for messages.
    pub fn description(self) -> &'static str {
        match self {
            Format::Jitdump => "a perf jitdump",
            Format::PerfMap => "a perf map",
            Format::Xray => "an LLVM XRay trace",
            Format::XrayProfile => "an LLVM XRay profiling-mode profile",
            Format::XrayYaml => "an llvm-xray YAML trace",
            Format::Mlpd => "a Mono log profiler file",
            Format::Elf => "an ELF binary",
            Format::Perf => "a perf.data recording",
        }
    }
}

impl Format {
    /// The format whose registry face is `face` (`None`: a face the model has no driver for).
    fn of_face(face: &dyn InputFormat) -> Option<Format> {
        ALL.into_iter().find(|f| f.name() == face.name())
    }

    /// The registry face of this format (`None` for an ELF binary, which only `extract` and
    /// `-m` read).
    pub fn face(self) -> Option<&'static dyn InputFormat> {
        FORMATS.iter().copied().find(|f| f.name() == self.name())
    }
}

/// Every format, for lookups by name.
const ALL: [Format; 8] = [
    Format::Jitdump,
    Format::PerfMap,
    Format::Xray,
    Format::XrayProfile,
    Format::XrayYaml,
    Format::Mlpd,
    Format::Elf,
    Format::Perf,
];

/// The registry of input formats: every format crate's face (profkit-common's
/// [`InputFormat`]: detect, summary, validate, dump), in the order detection tries them. `info`,
/// `dump` and `validate` reach every format through it; a new input format is its crate's
/// face and one line here (and its driver in `feed`).
pub static FORMATS: &[&dyn InputFormat] = &[
    &profkit_jitdump::JITDUMP,
    &profkit_mlpd::MLPD,
    &profkit_perf::PERF,
    &profkit_xray::XRAY_PROFILE,
    &profkit_xray::XRAY,
    &profkit_jitdump::PERF_MAP,
    &profkit_xray::XRAY_YAML,
];

/// Detects the format of (already decompressed) `data`: an ELF binary (an instrumentation map
/// for `extract` and `-m`), else the first face of [`FORMATS`] that recognises it.
pub fn detect(data: &[u8]) -> Option<Format> {
    if data.get(..4) == Some(b"\x7fELF") {
        return Some(Format::Elf);
    }
    Format::of_face(profkit_common::format::detect(FORMATS, data)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every face of the registry is a format the model can name, and each format's first
    /// bytes are detected as that format.
    #[test]
    fn every_face_is_a_model_format() {
        for f in FORMATS {
            assert!(
                Format::of_face(*f).is_some(),
                "{} has no model format",
                f.name()
            );
        }
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
        for (head, want) in samples {
            assert_eq!(detect(head), Some(want), "{head:?}");
        }
    }
}
