//! The 32-byte file header shared by basic and FDR traces.

use crate::error::Result;
use crate::raw::{bytes_at, field, Endian, TraceType, HEADER_SIZE};

/// The file header.
///
/// `bitfield` keeps the raw word; only bits 0 (`constant_tsc`) and 1 (`nonstop_tsc`) mean anything
/// (basic mode leaves garbage in the rest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// Format version: basic 1–3, FDR 1–5.
    pub version: u16,
    /// 0 = basic, 1 = FDR.
    pub trace_type: TraceType,
    /// Raw bitfield word (use [`FileHeader::constant_tsc`] / [`FileHeader::nonstop_tsc`]).
    pub bitfield: u32,
    /// TSC ticks per second (0 = unknown; the runtime writes 1e9 when it emulates the TSC).
    pub cycle_frequency: u64,
    /// FDR: the per-thread buffer size the runtime was configured with. Basic: bytes 16..24 (zero).
    pub buffer_size: u64,
    /// Bytes 24..32 (reserved).
    pub reserved: u64,
    /// Byte order, decided from a plausible type and version.
    pub endian: Endian,
}

impl Default for FileHeader {
    fn default() -> Self {
        FileHeader {
            version: 5,
            trace_type: TraceType::FDR,
            bitfield: 3,
            cycle_frequency: 1_000_000_000,
            buffer_size: 16384,
            reserved: 0,
            endian: Endian::Little,
        }
    }
}

/// Whether `(type, version)` is a combination this crate reads.
pub(crate) fn is_supported(trace_type: TraceType, version: u16) -> bool {
    match trace_type {
        TraceType::BASIC => (1..=3).contains(&version),
        TraceType::FDR => (1..=5).contains(&version),
        _ => false,
    }
}

impl FileHeader {
    /// A header for an FDR trace of `version`.
    pub fn fdr(version: u16) -> Self {
        FileHeader {
            version,
            ..Default::default()
        }
    }

    /// A header for a basic-mode trace of `version`.
    pub fn basic(version: u16) -> Self {
        FileHeader {
            version,
            trace_type: TraceType::BASIC,
            buffer_size: 0,
            ..Default::default()
        }
    }

    /// Parses the header at the start of `data`.
    ///
    /// The byte order is the one under which type and version form a supported combination
    /// (little-endian tried first); unlike llvm-xray there is no blind retry whose error hides the first.
    pub fn parse(data: &[u8]) -> Result<FileHeader> {
        let Some(h) = bytes_at::<HEADER_SIZE>(data, 0) else {
            return Err(crate::error::truncated(
                0,
                "file header",
                HEADER_SIZE,
                data.len(),
            ));
        };
        let read = |endian: Endian| FileHeader {
            version: endian.u16(field(&h, 0)),
            trace_type: TraceType(endian.u16(field(&h, 2))),
            bitfield: endian.u32(field(&h, 4)),
            cycle_frequency: endian.u64(field(&h, 8)),
            buffer_size: endian.u64(field(&h, 16)),
            reserved: endian.u64(field(&h, 24)),
            endian,
        };
        let le = read(Endian::Little);
        if is_supported(le.trace_type, le.version) {
            return Ok(le);
        }
        let be = read(Endian::Big);
        if is_supported(be.trace_type, be.version) {
            return Ok(be);
        }
        let h = if le.trace_type.is_known() || !be.trace_type.is_known() {
            le
        } else {
            be
        };
        Err(match h.trace_type {
            TraceType::BASIC | TraceType::FDR => crate::error::unsupported(format_args!(
                "{} version {} (supported: basic 1-3, FDR 1-5)",
                h.trace_type, h.version
            )),
            t => crate::error::unsupported(format_args!(
                "unknown trace type {} (expected 0 basic or 1 FDR)",
                t.0
            )),
        })
    }

    /// The 32 bytes of this header, in its byte order.
    pub fn to_bytes(&self) -> [u8; HEADER_SIZE] {
        let e = self.endian;
        let mut out = [0u8; HEADER_SIZE];
        let parts: [&[u8]; 6] = [
            &e.u16_bytes(self.version),
            &e.u16_bytes(self.trace_type.0),
            &e.u32_bytes(self.bitfield),
            &e.u64_bytes(self.cycle_frequency),
            &e.u64_bytes(self.buffer_size),
            &e.u64_bytes(self.reserved),
        ];
        let mut at = 0;
        for p in parts {
            for (o, b) in out.iter_mut().skip(at).zip(p) {
                *o = *b;
            }
            at += p.len();
        }
        out
    }

    /// Bit 0 of the bitfield.
    pub fn constant_tsc(&self) -> bool {
        self.bitfield & 1 != 0
    }

    /// Bit 1 of the bitfield.
    pub fn nonstop_tsc(&self) -> bool {
        self.bitfield & 2 != 0
    }

    /// Whether this is an FDR trace.
    pub fn is_fdr(&self) -> bool {
        self.trace_type == TraceType::FDR
    }

    /// TSC ticks to nanoseconds (`ticks * 1e9 / cycle_frequency`, exact integer arithmetic).
    /// With a cycle frequency of 0 the ticks are returned unchanged.
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        if self.cycle_frequency == 0 || self.cycle_frequency == 1_000_000_000 {
            return ticks;
        }
        let ns = u128::from(ticks) * 1_000_000_000 / u128::from(self.cycle_frequency);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endianness_from_plausible_version() {
        for endian in [Endian::Little, Endian::Big] {
            for (h, ok) in [
                (FileHeader::fdr(5), true),
                (FileHeader::basic(3), true),
                (FileHeader::fdr(6), false),
            ] {
                let h = FileHeader { endian, ..h };
                let parsed = FileHeader::parse(&h.to_bytes());
                assert_eq!(parsed.is_ok(), ok, "{h:?}");
                if ok {
                    assert_eq!(parsed.unwrap(), h);
                }
            }
        }
    }

    #[test]
    fn unsupported_message_names_the_real_value() {
        // llvm-xray's big-endian retry reports "768" for a basic v3 header-only file; we name v4 here.
        let h = FileHeader::basic(4);
        let e = FileHeader::parse(&h.to_bytes()).unwrap_err().to_string();
        assert!(e.contains("basic version 4"), "{e}");
    }
}
