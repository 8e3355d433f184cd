//! The 40-byte file header and the whole-file entry point [`JitDump`].

use super::bytes::{u32_at, u64_at};
use super::records::Records;
use crate::error::{Error, ErrorKind, Result};
use crate::raw::{Endian, FILE_HEADER_SIZE, MAGIC};

/// The jitdump file header, decoded. Field names follow the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// Byte order, decided by the magic.
    pub endian: Endian,
    /// Format version; the spec defines only 1 (Mono once wrote 2).
    pub version: u32,
    /// Size of the header in bytes; at least 40. Bytes past 40 are kept in [`Header::extra`].
    pub total_size: u32,
    /// ELF `e_machine` of the JIT's code (0 from CPython 3.13.0).
    pub elf_mach: u32,
    /// Reserved; V8 writes 0xDEADBEEF, CPython ≤ 3.13 leaves garbage.
    pub pad1: u32,
    /// Process id of the runtime.
    pub pid: u32,
    /// Creation time (CLOCK_MONOTONIC ns by the spec; V8 and CPython write wall-clock µs).
    pub timestamp: u64,
    /// Flags; bit 0 is ARCH_TIMESTAMP.
    pub flags: u64,
    /// Header bytes beyond the 40 the spec defines (`total_size - 40` of them).
    pub extra: &'a [u8],
}

impl<'a> Header<'a> {
    /// Decodes the header at the start of `data`.
    ///
    /// Fails when the magic is wrong, `total_size < 40`, or the header (including its extra
    /// bytes) is longer than `data`.
    pub fn parse(data: &'a [u8]) -> Result<Header<'a>> {
        let magic = data.get(..4).ok_or_else(|| {
            Error::header(
                0,
                format!(
                    "file is {} bytes, too short for the jitdump magic",
                    data.len()
                ),
            )
            .with_kind(ErrorKind::Truncated)
        })?;
        let endian = if magic == MAGIC.to_le_bytes() {
            Endian::Little
        } else if magic == MAGIC.to_be_bytes() {
            Endian::Big
        } else {
            return Err(Error::header(
                0,
                format!(
                    "magic {:02x} {:02x} {:02x} {:02x} is neither \"DTiJ\" (little-endian) nor \"JiTD\" (big-endian)",
                    magic.first().copied().unwrap_or(0),
                    magic.get(1).copied().unwrap_or(0),
                    magic.get(2).copied().unwrap_or(0),
                    magic.get(3).copied().unwrap_or(0),
                ),
            ));
        };
        let short = || {
            Error::header(
                0,
                format!(
                    "file header needs {FILE_HEADER_SIZE} bytes, file has {}",
                    data.len()
                ),
            )
            .with_kind(ErrorKind::Truncated)
        };
        let version = u32_at(data, 4, endian).ok_or_else(short)?;
        let total_size = u32_at(data, 8, endian).ok_or_else(short)?;
        let elf_mach = u32_at(data, 12, endian).ok_or_else(short)?;
        let pad1 = u32_at(data, 16, endian).ok_or_else(short)?;
        let pid = u32_at(data, 20, endian).ok_or_else(short)?;
        let timestamp = u64_at(data, 24, endian).ok_or_else(short)?;
        let flags = u64_at(data, 32, endian).ok_or_else(short)?;
        let size = total_size as usize;
        if size < FILE_HEADER_SIZE {
            return Err(Error::header(
                8,
                format!("header total_size {total_size} is below the 40-byte header"),
            ));
        }
        let extra = data.get(FILE_HEADER_SIZE..size).ok_or_else(|| {
            Error::header(
                8,
                format!(
                    "header total_size {total_size} runs past the end of the {}-byte file",
                    data.len()
                ),
            )
        })?;
        Ok(Header {
            endian,
            version,
            total_size,
            elf_mach,
            pad1,
            pid,
            timestamp,
            flags,
            extra,
        })
    }
}

/// A whole jitdump file in memory (usually a memory map): its header and its records.
///
/// ```
/// # fn main() -> Result<(), profkit_jitdump::Error> {
/// # let bytes = profkit_jitdump::write::example_dump();
/// let dump = profkit_jitdump::JitDump::parse(&bytes)?;
/// let mut records = dump.records();
/// for raw in &mut records {
///     let raw = raw?;
///     if let profkit_jitdump::Record::CodeLoad(load) = raw.parse()? {
///         println!("{:#x} {}", load.code_addr, String::from_utf8_lossy(load.name));
///     }
/// }
/// if let Some(cut) = records.truncation() {
///     eprintln!("{cut}");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct JitDump<'a> {
    data: &'a [u8],
    header: Header<'a>,
}

impl<'a> JitDump<'a> {
    /// Parses the file header; records are read lazily by [`JitDump::records`].
    pub fn parse(data: &'a [u8]) -> Result<JitDump<'a>> {
        let header = Header::parse(data)?;
        Ok(JitDump { data, header })
    }

    /// The file header.
    pub fn header(&self) -> &Header<'a> {
        &self.header
    }

    /// Byte order of every field in the file.
    pub fn endian(&self) -> Endian {
        self.header.endian
    }

    /// The whole file.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// An iterator over the records after the header.
    pub fn records(&self) -> Records<'a> {
        Records::new(
            self.data,
            self.header.total_size as usize,
            self.header.endian,
        )
    }
}
