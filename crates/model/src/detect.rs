//! Input format detection by content (DESIGN.md, "Command line"): what every command and the
//! fuzz harnesses use to tell the formats apart from their first bytes.

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

/// Detects the format of (already decompressed) `data`.
pub fn detect(data: &[u8]) -> Option<Format> {
    let head4 = data.get(..4)?;
    if head4 == b"DTiJ" || head4 == b"JiTD" {
        return Some(Format::Jitdump);
    }
    if head4 == [0x01, 0x5a, 0x50, 0x4d] {
        return Some(Format::Mlpd);
    }
    // perf.data, file or pipe mode, either byte order.
    if matches!(data.get(..8), Some(b"PERFILE2" | b"2ELIFREP")) {
        return Some(Format::Perf);
    }
    if head4 == b"\x7fELF" {
        return Some(Format::Elf);
    }
    // XRay profiling mode: the magic "xrayprof" as a u64, either byte order.
    if profkit_xray::profile::ProfileHeader::is_profile(data) {
        return Some(Format::XrayProfile);
    }
    if is_xray_header(data) {
        return Some(Format::Xray);
    }
    if profkit_jitdump::perfmap::looks_like_perf_map(data) {
        return Some(Format::PerfMap);
    }
    let head = std::str::from_utf8(data.get(..data.len().min(512))?).ok()?;
    if head.starts_with("---") && head.contains("header:") {
        return Some(Format::XrayYaml);
    }
    None
}

/// XRay's 32-byte file header: u16 version and u16 type (0 basic v1-3, 1 FDR v1-5),
/// little-endian, then a full record or at least the header's 32 bytes.
fn is_xray_header(data: &[u8]) -> bool {
    let Some(&[v0, v1, k0, k1]) = data.get(..4) else {
        return false;
    };
    if data.len() < 32 {
        return false;
    }
    let version = u16::from_le_bytes([v0, v1]);
    let kind = u16::from_le_bytes([k0, k1]);
    matches!((kind, version), (0, 1..=3) | (1, 1..=5))
}
