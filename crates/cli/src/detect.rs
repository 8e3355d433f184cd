//! Input format detection: profkit-model's [`detect`], and `--input-format` as a [`Format`].

pub use profkit_model::detect::{detect, Format};

use crate::cli::InputFormat;

/// The format `--input-format` names.
pub fn forced(f: InputFormat) -> Format {
    match f {
        InputFormat::Jitdump => Format::Jitdump,
        InputFormat::PerfMap => Format::PerfMap,
        InputFormat::Xray => Format::Xray,
        InputFormat::XrayProfile => Format::XrayProfile,
        InputFormat::Mlpd => Format::Mlpd,
        InputFormat::Elf => Format::Elf,
        InputFormat::Perf => Format::Perf,
    }
}
