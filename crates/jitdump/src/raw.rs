//! On-disk constants of the jitdump format: magic, sizes, record ids, flags.
//!
//! Record ids are an open newtype ([`RecordType`]) so ids this crate does not know pass
//! through the reader untouched and can be reported or copied.

use core::fmt;

/// The magic number, `0x4A695444` ("JiTD" when written big-endian, "DTiJ" little-endian).
pub const MAGIC: u32 = 0x4A69_5444;

/// The only header `version` value the spec defines (spec document "version 2").
pub const VERSION: u32 = 1;

/// Size of the file header defined by the spec. `total_size` may be larger; readers skip the rest.
pub const FILE_HEADER_SIZE: usize = 40;

/// Size of every record header: id u32, total_size u32, timestamp u64.
pub const RECORD_HEADER_SIZE: usize = 16;

/// Header flag bit 0: timestamps come from an architecture clock (e.g. the TSC).
pub const FLAG_ARCH_TIMESTAMP: u64 = 1;

/// Byte order of a file, decided by how its magic reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Magic bytes on disk are `44 54 69 4A` ("DTiJ").
    Little,
    /// Magic bytes on disk are `4A 69 54 44` ("JiTD").
    Big,
}

impl Endian {
    /// The byte order of the machine running this code.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };

    /// `"little"` or `"big"`.
    pub fn name(self) -> &'static str {
        match self {
            Endian::Little => "little",
            Endian::Big => "big",
        }
    }

    /// Decodes a `u16` from exactly two bytes.
    #[inline]
    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    /// Decodes a `u32` from exactly four bytes.
    #[inline]
    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    /// Decodes a `u64` from exactly eight bytes.
    #[inline]
    pub fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }

    /// Encodes a `u32`.
    #[inline]
    pub fn u32_bytes(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    /// Encodes a `u64`.
    #[inline]
    pub fn u64_bytes(self, v: u64) -> [u8; 8] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
}

/// A record id. Unknown ids are kept as they are.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordType(pub u32);

impl RecordType {
    /// JIT_CODE_LOAD: a function's code was emitted.
    pub const CODE_LOAD: RecordType = RecordType(0);
    /// JIT_CODE_MOVE: already emitted code moved.
    pub const CODE_MOVE: RecordType = RecordType(1);
    /// JIT_CODE_DEBUG_INFO: a flat line table for the next LOAD.
    pub const CODE_DEBUG_INFO: RecordType = RecordType(2);
    /// JIT_CODE_CLOSE: the runtime is done.
    pub const CODE_CLOSE: RecordType = RecordType(3);
    /// JIT_CODE_UNWINDING_INFO: `.eh_frame` + `.eh_frame_hdr` for the next LOAD.
    pub const CODE_UNWINDING_INFO: RecordType = RecordType(4);
    /// SAMPLY_JIT_CODE_DEBUG_INFO2: line table plus inline tree for the next LOAD (seed 001).
    pub const SAMPLY_DEBUG_INFO2: RecordType = RecordType(827_346_259);
    /// SAMPLY_JIT_TIER: the tier name and colour of the next LOAD with the same code_addr.
    pub const SAMPLY_JIT_TIER: RecordType = RecordType(827_346_260);
    /// SAMPLY_EMBEDDED_SOURCE_FILE: the content of a source file named by debug info.
    pub const SAMPLY_EMBEDDED_SOURCE_FILE: RecordType = RecordType(827_346_261);

    /// Every id this crate knows, in id order.
    pub const KNOWN: [RecordType; 8] = [
        Self::CODE_LOAD,
        Self::CODE_MOVE,
        Self::CODE_DEBUG_INFO,
        Self::CODE_CLOSE,
        Self::CODE_UNWINDING_INFO,
        Self::SAMPLY_DEBUG_INFO2,
        Self::SAMPLY_JIT_TIER,
        Self::SAMPLY_EMBEDDED_SOURCE_FILE,
    ];

    /// The spec's name (`JIT_CODE_LOAD`, …), or `None` for an unknown id.
    pub fn static_name(self) -> Option<&'static str> {
        Some(match self {
            Self::CODE_LOAD => "JIT_CODE_LOAD",
            Self::CODE_MOVE => "JIT_CODE_MOVE",
            Self::CODE_DEBUG_INFO => "JIT_CODE_DEBUG_INFO",
            Self::CODE_CLOSE => "JIT_CODE_CLOSE",
            Self::CODE_UNWINDING_INFO => "JIT_CODE_UNWINDING_INFO",
            Self::SAMPLY_DEBUG_INFO2 => "SAMPLY_JIT_CODE_DEBUG_INFO2",
            Self::SAMPLY_JIT_TIER => "SAMPLY_JIT_TIER",
            Self::SAMPLY_EMBEDDED_SOURCE_FILE => "SAMPLY_EMBEDDED_SOURCE_FILE",
            _ => return None,
        })
    }

    /// Whether this id is one of [`RecordType::KNOWN`].
    pub fn is_known(self) -> bool {
        self.static_name().is_some()
    }

    /// Size of the record body's fixed part (after the 16-byte header), if the id is known.
    pub fn fixed_body_size(self) -> Option<usize> {
        Some(match self {
            Self::CODE_LOAD => 40,
            Self::CODE_MOVE => 48,
            Self::CODE_DEBUG_INFO => 16,
            Self::CODE_CLOSE => 0,
            Self::CODE_UNWINDING_INFO => 24,
            Self::SAMPLY_DEBUG_INFO2 => 32,
            Self::SAMPLY_JIT_TIER => 16,
            Self::SAMPLY_EMBEDDED_SOURCE_FILE => 16,
            _ => return None,
        })
    }
}

impl fmt::Display for RecordType {
    /// The spec name, or `UNKNOWN_<id>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.static_name() {
            Some(name) => f.write_str(name),
            None => write!(f, "UNKNOWN_{}", self.0),
        }
    }
}

impl fmt::Debug for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordType({self})")
    }
}

/// The Firefox Profiler's named category colours, indexed by a JIT_TIER record's `color`
/// (notes/extension-records.md).
pub const TIER_COLORS: [&str; 14] = [
    "transparent",
    "lightblue",
    "red",
    "lightred",
    "orange",
    "blue",
    "green",
    "purple",
    "yellow",
    "brown",
    "magenta",
    "lightgreen",
    "grey",
    "darkgray",
];

/// A few ELF `e_machine` values seen in jitdump headers, for display.
pub fn elf_machine_name(mach: u32) -> Option<&'static str> {
    Some(match mach {
        0 => "EM_NONE",
        3 => "EM_386",
        8 => "EM_MIPS",
        20 => "EM_PPC",
        21 => "EM_PPC64",
        22 => "EM_S390",
        40 => "EM_ARM",
        62 => "EM_X86_64",
        183 => "EM_AARCH64",
        243 => "EM_RISCV",
        258 => "EM_LOONGARCH",
        _ => return None,
    })
}

/// The `e_machine` of the host this code was compiled for (0 when unknown).
pub const fn host_elf_machine() -> u32 {
    if cfg!(target_arch = "x86_64") {
        62
    } else if cfg!(target_arch = "x86") {
        3
    } else if cfg!(target_arch = "aarch64") {
        183
    } else if cfg!(target_arch = "arm") {
        40
    } else if cfg!(target_arch = "riscv64") {
        243
    } else if cfg!(target_arch = "powerpc64") {
        21
    } else if cfg!(target_arch = "s390x") {
        22
    } else if cfg!(target_arch = "loongarch64") {
        258
    } else {
        0
    }
}
