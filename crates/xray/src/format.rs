//! The faces `profkit` sees ([`profkit_common::InputFormat`]): [`XRAY`] (basic and FDR
//! traces), [`XRAY_PROFILE`] (profiling mode) and [`XRAY_YAML`] (llvm-xray YAML traces, read
//! through their binary re-encoding).

use std::io::Write;

use profkit_common::format::{
    dump_parsed, Context, DumpOptions, DumpResult, Dumped, Input, InputFormat, Outcome,
};
use profkit_common::{Summary, Validation};

use crate::profile::Profile;
use crate::read::header::is_supported;
use crate::{Error, Trace, TraceType};

/// LLVM XRay traces, basic (versions 1-3) and FDR (versions 1-5).
pub struct Xray;
/// LLVM XRay traces.
pub static XRAY: Xray = Xray;

/// LLVM XRay profiling-mode files.
pub struct XrayProfile;
/// LLVM XRay profiling-mode files.
pub static XRAY_PROFILE: XrayProfile = XrayProfile;

/// llvm-xray YAML traces.
pub struct XrayYaml;
/// llvm-xray YAML traces.
pub static XRAY_YAML: XrayYaml = XrayYaml;

/// Whether `data` starts with XRay's 32-byte file header of a type and version this crate
/// reads (`u16` version, `u16` type, little-endian).
pub fn is_trace(data: &[u8]) -> bool {
    let Some(&[v0, v1, k0, k1]) = data.get(..4) else {
        return false;
    };
    data.len() >= crate::raw::HEADER_SIZE
        && is_supported(
            TraceType(u16::from_le_bytes([k0, k1])),
            u16::from_le_bytes([v0, v1]),
        )
}

/// A dump's outcome in the common shape.
fn dumped(problems: &[Error], truncation: Option<profkit_common::Truncation>) -> Dumped {
    Dumped {
        problems: problems.iter().map(Error::to_string).collect(),
        stopped: None,
        truncation,
    }
}

/// The dump of a trace in binary form.
fn dump_trace(bytes: &[u8], o: &DumpOptions, out: &mut dyn Write) -> DumpResult {
    let opts = crate::dump::DumpOptions {
        json: o.json,
        verify: o.verify,
    };
    dump_parsed(Trace::parse(bytes), |trace| {
        let r = crate::dump::dump(&trace, &opts, out)?;
        Ok(dumped(&r.problems, r.truncation))
    })
}

impl InputFormat for Xray {
    fn name(&self) -> &'static str {
        "xray"
    }

    fn detect(&self, head: &[u8]) -> bool {
        is_trace(head)
    }

    fn summary(&self, input: Input<'_>, _: &Context<'_>) -> Outcome<Summary> {
        Ok(crate::summary(&Trace::parse(input.bytes(self.name())?)?))
    }

    fn validate(&self, input: Input<'_>) -> Outcome<Validation> {
        Ok(crate::verify(&Trace::parse(input.bytes(self.name())?)?))
    }

    fn dump(&self, input: Input<'_>, o: &DumpOptions, out: &mut dyn Write) -> DumpResult {
        dump_trace(input.bytes(self.name())?, o, out)
    }
}

impl InputFormat for XrayProfile {
    fn name(&self) -> &'static str {
        "xray-profile"
    }

    /// The magic "xrayprof" as a `u64`, either byte order.
    fn detect(&self, head: &[u8]) -> bool {
        crate::profile::ProfileHeader::is_profile(head)
    }

    fn summary(&self, input: Input<'_>, _: &Context<'_>) -> Outcome<Summary> {
        let p = Profile::parse(input.bytes(self.name())?)?;
        Ok(crate::profile::summary::summary(&p))
    }

    fn validate(&self, input: Input<'_>) -> Outcome<Validation> {
        let p = Profile::parse(input.bytes(self.name())?)?;
        Ok(crate::profile::verify::verify(&p))
    }

    /// Every path record of every thread.
    fn dump(&self, input: Input<'_>, o: &DumpOptions, out: &mut dyn Write) -> DumpResult {
        dump_parsed(Profile::parse(input.bytes(self.name())?), |p| {
            let r = crate::profile::dump::dump(&p, o.json, out)?;
            Ok(dumped(&r.problems, r.truncation))
        })
    }
}

impl InputFormat for XrayYaml {
    fn name(&self) -> &'static str {
        "xray-yaml"
    }

    /// A YAML document with a `header:` in its first 512 bytes.
    fn detect(&self, head: &[u8]) -> bool {
        let Some(start) = head.get(..head.len().min(512)) else {
            return false;
        };
        std::str::from_utf8(start).is_ok_and(|h| h.starts_with("---") && h.contains("header:"))
    }

    /// The trace's summary, marked as read from YAML.
    fn summary(&self, input: Input<'_>, _: &Context<'_>) -> Outcome<Summary> {
        let bin = crate::yaml::text_to_binary(input.bytes(self.name())?)?;
        let mut sum = crate::summary(&Trace::parse(&bin)?);
        sum.format = "xray-yaml";
        sum.kind.push_str(" (read from llvm-xray YAML)");
        Ok(sum)
    }

    fn validate(&self, input: Input<'_>) -> Outcome<Validation> {
        let bin = crate::yaml::text_to_binary(input.bytes(self.name())?)?;
        Ok(crate::verify(&Trace::parse(&bin)?))
    }

    /// The dump of the binary re-encoding (what every reader of YAML input works on).
    fn dump(&self, input: Input<'_>, o: &DumpOptions, out: &mut dyn Write) -> DumpResult {
        let text = input.bytes(self.name())?;
        dump_parsed(crate::yaml::text_to_binary(text), |bin| {
            dump_trace(&bin, o, out)
        })
    }
}
