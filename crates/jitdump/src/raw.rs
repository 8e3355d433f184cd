//! On-disk constants of the jitdump format: magic, sizes, record ids, flags.
//!
//! Record ids are an open newtype ([`RecordType`]) so ids this crate does not know pass
//! through the reader untouched and can be reported or copied.

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

/// Byte order of a file, decided by how its magic reads: `Little` when the magic bytes on disk
/// are `44 54 69 4A` ("DTiJ"), `Big` for `4A 69 54 44` ("JiTD"). profkit-common's, shared by
/// every format.
pub use profkit_common::Endian;

profkit_common::open_tag! {
    /// A record id. Unknown ids are kept as they are; `Display` gives the spec name, or
    /// `UNKNOWN_<id>`. [`RecordType::KNOWN`] lists every id this crate knows, in id order.
    pub struct RecordType(u32) {
        #[doc = "JIT_CODE_LOAD: a function's code was emitted."] CODE_LOAD = 0 => "JIT_CODE_LOAD",
        #[doc = "JIT_CODE_MOVE: already emitted code moved."] CODE_MOVE = 1 => "JIT_CODE_MOVE",
        #[doc = "JIT_CODE_DEBUG_INFO: a flat line table for the next LOAD."] CODE_DEBUG_INFO = 2 => "JIT_CODE_DEBUG_INFO",
        #[doc = "JIT_CODE_CLOSE: the runtime is done."] CODE_CLOSE = 3 => "JIT_CODE_CLOSE",
        #[doc = "JIT_CODE_UNWINDING_INFO: `.eh_frame` + `.eh_frame_hdr` for the next LOAD."] CODE_UNWINDING_INFO = 4 => "JIT_CODE_UNWINDING_INFO",
        #[doc = "SAMPLY_JIT_CODE_DEBUG_INFO2: line table plus inline tree for the next LOAD (seed 001)."] SAMPLY_DEBUG_INFO2 = 827_346_259 => "SAMPLY_JIT_CODE_DEBUG_INFO2",
        #[doc = "SAMPLY_JIT_TIER: the tier name and colour of the next LOAD with the same code_addr."] SAMPLY_JIT_TIER = 827_346_260 => "SAMPLY_JIT_TIER",
        #[doc = "SAMPLY_EMBEDDED_SOURCE_FILE: the content of a source file named by debug info."] SAMPLY_EMBEDDED_SOURCE_FILE = 827_346_261 => "SAMPLY_EMBEDDED_SOURCE_FILE",
    }
    unknown "UNKNOWN_{}"
    debug "RecordType({})"
}

impl RecordType {
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
