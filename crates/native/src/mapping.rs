//! Where a binary's bytes are in a process: from an `MMAP`/`MMAP2` record to addresses as
//! the ELF file states them.
//!
//! Terms (framehop's): an **AVMA** is an actual virtual memory address in the profiled
//! process; an **SVMA** is a stated virtual memory address, i.e. an address as written in
//! the ELF file (`p_vaddr`, `st_value`, DWARF `DW_AT_low_pc`). Symbols, DWARF and CFI
//! speak SVMAs; samples speak AVMAs.
//!
//! perf records each executable mapping as (start, len, pgoff): the file bytes from
//! offset `pgoff` appear at AVMA `start`. The PT_LOAD segment whose file bytes the mapping
//! holds says which SVMA that file offset has: `p_vaddr + (pgoff - p_offset)` (the two are
//! congruent modulo the page size, so this holds even when `pgoff` is `p_offset` rounded
//! down to a page). Then `svma = avma - start + svma_at_start` for every address of the
//! mapping.
//!
//! *Which* segment matters when segments share a page: lld (and `-z noseparate-code`
//! layouts generally) start the code segment in the middle of a page that the read-only
//! segment before it ends in, e.g. wasmtime's `_libwasmtime.so`: R at offset 0 size
//! 0x3c4de8, R E at offset 0x3c4de8 / SVMA 0x3c5de8. The r-x mapping then starts at `pgoff`
//! 0x3c4000, a file offset *inside the R segment*; asking "which segment holds `pgoff`"
//! answers R and puts every address 0x1000 too low. The kernel makes one mapping per
//! PT_LOAD, with that segment's protection, so an executable mapping is the executable
//! segment whose page-rounded file range holds `pgoff` (perf gets there by mapping through
//! file offsets). Only executable mappings are symbolized, so [`Mapping::from_segments`]
//! prefers the executable segment; among equals, the one that holds `pgoff` exactly. This
//! covers:
//! * PIE executables and shared libraries (`ET_DYN`, linked at 0): `svma_at_start` is small,
//!   `start` is wherever the loader put it;
//! * non-PIE executables (`ET_EXEC`): SVMA = AVMA;
//! * the usual modern layout where the r-x segment starts at a nonzero file offset
//!   (`pgoff` 0x1000 and up, `-z separate-code`), older layouts with one r-x segment
//!   from offset 0 (gold), and lld layouts whose segments share pages.

use crate::binary::Segment;

/// One mapping of a binary into a process (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// First AVMA of the mapping.
    pub start: u64,
    /// One past the last AVMA of the mapping.
    pub end: u64,
    /// The SVMA that `start` corresponds to.
    pub svma_start: u64,
}

impl Mapping {
    /// Computes the mapping of an *executable* `MMAP`/`MMAP2` record from its start, length
    /// and page offset and the binary's PT_LOAD segments; `None` if no segment's
    /// page-rounded file range holds `pgoff` (or `len` is 0).
    pub fn from_segments(segments: &[Segment], start: u64, len: u64, pgoff: u64) -> Option<Self> {
        if len == 0 {
            return None;
        }
        const PAGE: u64 = 0x1000;
        // Among the segments whose page-rounded file range holds pgoff, the executable one
        // (the mapping is code), then one that holds pgoff exactly.
        let seg = segments
            .iter()
            .filter(|s| {
                s.file_size > 0
                    && s.file_offset & !(PAGE - 1) <= pgoff
                    && pgoff < s.file_offset.saturating_add(s.file_size)
            })
            .min_by_key(|s| (!s.executable, pgoff < s.file_offset))?;
        let svma_start = if pgoff >= seg.file_offset {
            seg.svma.wrapping_add(pgoff - seg.file_offset)
        } else {
            seg.svma.wrapping_sub(seg.file_offset - pgoff)
        };
        Some(Mapping {
            start,
            end: start.saturating_add(len),
            svma_start,
        })
    }

    /// Whether `avma` is inside the mapping.
    pub fn contains(&self, avma: u64) -> bool {
        (self.start..self.end).contains(&avma)
    }

    /// The SVMA of an AVMA of this mapping.
    pub fn to_svma(&self, avma: u64) -> u64 {
        avma.wrapping_sub(self.start).wrapping_add(self.svma_start)
    }

    /// The AVMA of an SVMA of this mapping.
    pub fn to_avma(&self, svma: u64) -> u64 {
        svma.wrapping_sub(self.svma_start).wrapping_add(self.start)
    }

    /// `avma - svma` (wrapping): the load bias. 0 for non-PIE executables.
    pub fn bias(&self) -> u64 {
        self.start.wrapping_sub(self.svma_start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(svma: u64, off: u64, size: u64, x: bool) -> Segment {
        Segment {
            svma,
            mem_size: size,
            file_offset: off,
            file_size: size,
            executable: x,
        }
    }

    #[test]
    fn pie_separate_code() {
        // readelf -l of a gcc 12 PIE: R at 0, R E at 0x1000, R at 0x2000, RW at 0x2de8/0x3de8.
        let segs = [
            seg(0, 0, 0x628, false),
            seg(0x1000, 0x1000, 0x1c5, true),
            seg(0x2000, 0x2000, 0x144, false),
            seg(0x3de8, 0x2de8, 0x258, false),
        ];
        let m = Mapping::from_segments(&segs, 0x5555_5555_5000, 0x1000, 0x1000).unwrap();
        assert_eq!(m.to_svma(0x5555_5555_5139), 0x1139);
        assert_eq!(m.bias(), 0x5555_5555_4000);
        assert_eq!(m.to_avma(0x1139), 0x5555_5555_5139);
        // The data segment mapped from its page-rounded offset.
        let d = Mapping::from_segments(&segs, 0x5555_5555_7000, 0x1000, 0x2000).unwrap();
        assert_eq!(d.to_svma(0x5555_5555_7de8), 0x2de8);
        let d = Mapping::from_segments(&segs, 0x5555_5555_9000, 0x1000, 0x4000);
        assert!(d.is_none());
    }

    #[test]
    fn lld_code_segment_sharing_a_page_with_rodata() {
        // readelf -l of wasmtime 50's _libwasmtime.so (lld): R at 0 size 0x3c4de8, R E at
        // offset 0x3c4de8 / vaddr 0x3c5de8, RW after it.
        let segs = [
            seg(0, 0, 0x3c4de8, false),
            seg(0x3c5de8, 0x3c4de8, 0xd9d1c8, true),
            seg(0x1164fb0, 0x1161fb0, 0x6a0d0, false),
        ];
        // perf: r-xp at pgoff 0x3c4000 (the code segment's page-rounded offset).
        let m = Mapping::from_segments(&segs, 0x7f00_003c_5000, 0xd9e000, 0x3c4000).unwrap();
        assert_eq!(m.to_svma(0x7f00_003c_5de8), 0x3c5de8);
        assert_eq!(m.svma_start, 0x3c5000);
        // A small lld binary: the code segment shares page 0 with the R segment, and the
        // r-x mapping has pgoff 0.
        let small = [
            seg(0, 0, 0x7b4, false),
            seg(0x17c0, 0x7c0, 0x230, true),
            seg(0x29f0, 0x9f0, 0x1d8, false),
        ];
        let m = Mapping::from_segments(&small, 0x5603_a622_9000, 0x1000, 0).unwrap();
        assert_eq!(m.to_svma(0x5603_a622_98a9), 0x18a9);
    }

    #[test]
    fn non_pie_and_single_segment() {
        let segs = [
            seg(0x400000, 0, 0x8000, true),
            seg(0x609000, 0x8e10, 0x300, false),
        ];
        let m = Mapping::from_segments(&segs, 0x400000, 0x9000, 0).unwrap();
        assert_eq!(m.to_svma(0x401234), 0x401234);
        assert_eq!(m.bias(), 0);
        assert!(Mapping::from_segments(&segs, 0x400000, 0, 0).is_none());
    }
}
