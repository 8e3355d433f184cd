//! The ELF image of a set of JIT functions (one layer of one process's code), written with
//! `object`'s ELF writer.
//!
//! Layout (addresses are file offsets: `p_vaddr == p_offset`, `sh_addr == sh_offset`, so
//! perf's symbol adjustment (`st_value - (p_vaddr - p_offset)`) and `perf annotate`'s objdump
//! addresses are the file offsets an MMAP2's `pgoff` points at):
//!
//! ```text
//! 0       ELF header, program headers
//!         .note.gnu.build-id
//!         .eh_frame_hdr, .eh_frame        ┐ PT_LOAD #0 (r--): the unwind segment
//! page    run 0: code, gaps zero-filled   ┐ PT_LOAD #1 (r-x)    ┐
//! page    run 1 …                         ┐ PT_LOAD #2 (r-x)    ┘ .text
//!         .symtab, .strtab (one STT_FUNC symbol per function), .debug_*, .shstrtab
//!         section headers
//! ```
//!
//! Each run starts on a page boundary, so the MMAP2 that maps it has a page-aligned `pgoff`.
//! The unwind segment is first (perf's libunwind glue takes the lowest `PT_LOAD` as the base).

use object::elf;
use object::write::elf::{FileHeader, ProgramHeader, SectionHeader, Sym, Writer};
use object::Endianness;
use profkit_jit::codemap::DebugTable;

use crate::layout::Run;
use crate::lines::{debug_sections, FuncLines};
use crate::unwind::{tables, FuncUnwind};

/// Page size: runs start on page boundaries.
pub const PAGE: u64 = 4096;

/// One function of the image.
#[derive(Clone, Copy, Debug)]
pub struct ElfFunc<'a> {
    /// Name (the jitdump's).
    pub name: &'a str,
    /// Run-time start address.
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// Code bytes (`None`: zeros).
    pub code: Option<&'a [u8]>,
    /// Line table (DEBUG_INFO).
    pub lines: Option<&'a DebugTable>,
    /// `.eh_frame` (UNWINDING_INFO).
    pub eh_frame: Option<&'a [u8]>,
}

/// What to build.
#[derive(Clone, Debug)]
pub struct ElfSpec<'a> {
    /// `e_machine`.
    pub machine: u16,
    /// Byte order of the code (the jitdump's).
    pub big_endian: bool,
    /// Functions, by start address.
    pub funcs: Vec<ElfFunc<'a>>,
    /// Runs (run-time ranges; `funcs` ranges index [`ElfSpec::funcs`]).
    pub runs: Vec<Run>,
    /// The compilation unit's name in the line tables.
    pub name: String,
    /// Mixed into the build id (pid, layer …: two images of equal code differ).
    pub seed: u64,
}

/// Where things are in the file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offsets {
    /// `.eh_frame_hdr`.
    pub eh_frame_hdr: u64,
    /// `.eh_frame`.
    pub eh_frame: u64,
    /// End of the unwind segment (`PT_LOAD` #0 covers `0..unwind_end`).
    pub unwind_end: u64,
    /// File offset of each run.
    pub runs: Vec<u64>,
    /// Whether there are FDEs to map (otherwise the unwind segment need not be mapped).
    pub has_fdes: bool,
}

/// A built image.
#[derive(Clone, Debug)]
pub struct Built {
    /// The file.
    pub bytes: Vec<u8>,
    /// Its GNU build id.
    pub build_id: [u8; 20],
    /// Where things are.
    pub offsets: Offsets,
    /// FDEs in the `.eh_frame_hdr` table (0 when the unwind segment is not mapped).
    pub fdes: usize,
    /// Functions whose unwinding info could not be used.
    pub unwind_failed: usize,
    /// Line-table rows.
    pub line_rows: usize,
    /// The run-time address the unwind segment is mapped at (`None`: not mapped).
    pub unwind_at: Option<u64>,
}

/// A 160-bit FNV-1a-style hash (five lanes), for build ids: stable, not cryptographic.
struct IdHash([u64; 3]);

impl IdHash {
    fn new(seed: u64) -> IdHash {
        let mut h = IdHash([
            0xcbf2_9ce4_8422_2325,
            0x8422_2325_cbf2_9ce4,
            0x9e37_79b9_7f4a_7c15,
        ]);
        h.u64(seed);
        h
    }

    fn bytes(&mut self, b: &[u8]) {
        for &c in b {
            for (k, lane) in self.0.iter_mut().enumerate() {
                *lane ^= u64::from(c).wrapping_add(k as u64);
                *lane = lane.wrapping_mul(0x0100_0000_01b3);
            }
        }
    }

    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    fn finish(&self) -> [u8; 20] {
        let mut out = [0u8; 20];
        let mut all = Vec::with_capacity(24);
        for lane in self.0 {
            // A final avalanche per lane.
            let mut x = lane;
            x ^= x >> 33;
            x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
            x ^= x >> 33;
            all.extend_from_slice(&x.to_le_bytes());
        }
        for (o, b) in out.iter_mut().zip(all) {
            *o = b;
        }
        out
    }
}

/// The build id of `spec`: a hash of every function's address, size, name and code.
fn build_id(spec: &ElfSpec<'_>) -> [u8; 20] {
    let mut h = IdHash::new(spec.seed);
    for f in &spec.funcs {
        h.u64(f.start);
        h.u64(f.size);
        h.bytes(f.name.as_bytes());
        h.bytes(f.code.unwrap_or_default());
    }
    h.finish()
}

/// Builds the image of `spec`. `place_unwind` is asked, once the file layout is known, where
/// (which run-time address) the unwind segment will be mapped; `None` leaves the
/// `.eh_frame_hdr` table empty (unwinders then fall back to frame pointers in this code).
pub fn build(
    spec: &ElfSpec<'_>,
    place_unwind: impl FnOnce(&Offsets) -> Option<u64>,
) -> Result<Built, String> {
    let endian = if spec.big_endian {
        Endianness::Big
    } else {
        Endianness::Little
    };
    let unwind_funcs: Vec<FuncUnwind<'_>> = spec
        .funcs
        .iter()
        .filter_map(|f| {
            f.eh_frame.filter(|e| !e.is_empty()).map(|e| FuncUnwind {
                start: f.start,
                size: f.size,
                eh_frame: e,
            })
        })
        .collect();
    // Sizes first: they do not depend on where the tables are mapped, as long as it is near
    // the code (32-bit offsets).
    let near = unwind_funcs.first().map_or(0, |f| f.start);
    let sized = tables(&unwind_funcs, spec.big_endian, near, near);
    let id = build_id(spec);

    let mut buf = Vec::new();
    let mut w = Writer::new(endian, true, &mut buf);
    let many_runs = spec.runs.len() > 60_000;
    let loads = if many_runs { 1 } else { spec.runs.len() };
    let phnum = 1 + loads + 2;
    w.reserve_file_header();
    w.reserve_program_headers(phnum as u32);

    w.reserve_null_section_index();
    let note_name = w.add_section_name(b".note.gnu.build-id");
    let _note_index = w.reserve_section_index();
    let hdr_name = w.add_section_name(b".eh_frame_hdr");
    let _hdr_index = w.reserve_section_index();
    let eh_name = w.add_section_name(b".eh_frame");
    let _eh_index = w.reserve_section_index();
    let text_name = w.add_section_name(b".text");
    let text_index = w.reserve_section_index();

    let note_off = w.reserve(36, 4) as u64;
    let hdr_off = w.reserve(sized.eh_frame_hdr.len(), 4) as u64;
    let eh_off = w.reserve(sized.eh_frame.len(), 8) as u64;
    let unwind_end = w.reserved_len() as u64;
    let mut run_offs = Vec::with_capacity(spec.runs.len());
    for r in &spec.runs {
        let len = usize::try_from(r.len()).map_err(|_| "run too large".to_string())?;
        run_offs.push(w.reserve(len, PAGE as usize) as u64);
    }
    let text_start = run_offs.first().copied().unwrap_or(unwind_end);
    let text_end = spec
        .runs
        .last()
        .zip(run_offs.last())
        .map_or(text_start, |(r, o)| o + r.len());

    // Each function's address in the file.
    let mut addrs = vec![0u64; spec.funcs.len()];
    for (r, &off) in spec.runs.iter().zip(&run_offs) {
        for k in r.funcs.clone() {
            if let (Some(a), Some(f)) = (addrs.get_mut(k), spec.funcs.get(k)) {
                *a = off + (f.start - r.start);
            }
        }
    }

    // Symbols.
    w.reserve_null_symbol_index();
    let mut names = Vec::with_capacity(spec.funcs.len());
    for f in &spec.funcs {
        names.push(w.add_string(f.name.as_bytes()));
        w.reserve_symbol_index(Some(text_index));
    }
    w.reserve_symtab_section_index();
    w.reserve_strtab_section_index();

    // Line tables.
    let lines: Vec<FuncLines<'_>> = spec
        .funcs
        .iter()
        .zip(&addrs)
        .filter_map(|(f, &addr)| {
            f.lines.map(|table| FuncLines {
                addr,
                size: f.size,
                table,
            })
        })
        .collect();
    let debug = debug_sections(
        &lines,
        (text_start, text_end - text_start),
        &spec.name,
        spec.big_endian,
    )?
    .unwrap_or_default();
    let mut debug_ids = Vec::new();
    for (name, _) in &debug.sections {
        let n = w.add_section_name(name.as_bytes());
        debug_ids.push((n, w.reserve_section_index()));
    }
    w.reserve_shstrtab_section_index();

    w.reserve_symtab();
    w.reserve_strtab();
    let mut debug_offs = Vec::new();
    for (_, bytes) in &debug.sections {
        debug_offs.push(w.reserve(bytes.len(), 1) as u64);
    }
    w.reserve_shstrtab();
    w.reserve_section_headers();

    let offsets = Offsets {
        eh_frame_hdr: hdr_off,
        eh_frame: eh_off,
        unwind_end,
        runs: run_offs.clone(),
        has_fdes: sized.fdes > 0,
    };
    let unwind_at = if sized.fdes > 0 {
        place_unwind(&offsets)
    } else {
        None
    };
    let t = match unwind_at {
        Some(u) => tables(
            &unwind_funcs,
            spec.big_endian,
            u.wrapping_add(eh_off),
            u.wrapping_add(hdr_off),
        ),
        None => tables(&[], spec.big_endian, eh_off, hdr_off),
    };
    let mut eh_frame = t.eh_frame.clone();
    let mut eh_frame_hdr = t.eh_frame_hdr.clone();
    // Unmapped tables are empty; keep the reserved sizes.
    eh_frame.resize(sized.eh_frame.len().max(eh_frame.len()), 0);
    eh_frame_hdr.resize(sized.eh_frame_hdr.len().max(eh_frame_hdr.len()), 0);
    if eh_frame.len() != sized.eh_frame.len() || eh_frame_hdr.len() != sized.eh_frame_hdr.len() {
        return Err("unwind tables changed size between passes".into());
    }

    // Write.
    w.write_file_header(&FileHeader {
        os_abi: elf::ELFOSABI_NONE,
        abi_version: 0,
        e_type: elf::ET_DYN,
        e_machine: spec.machine,
        e_entry: 0,
        e_flags: 0,
    })
    .map_err(|e| e.to_string())?;
    w.write_align_program_headers();
    w.write_program_header(&ProgramHeader {
        p_type: elf::PT_LOAD,
        p_flags: elf::PF_R,
        p_offset: 0,
        p_vaddr: 0,
        p_paddr: 0,
        p_filesz: unwind_end,
        p_memsz: unwind_end,
        p_align: PAGE,
    });
    if many_runs {
        w.write_program_header(&load(text_start, text_end - text_start));
    } else {
        for (r, &off) in spec.runs.iter().zip(&run_offs) {
            w.write_program_header(&load(off, r.len()));
        }
    }
    w.write_program_header(&ProgramHeader {
        p_type: elf::PT_NOTE,
        p_flags: elf::PF_R,
        p_offset: note_off,
        p_vaddr: note_off,
        p_paddr: note_off,
        p_filesz: 36,
        p_memsz: 36,
        p_align: 4,
    });
    w.write_program_header(&ProgramHeader {
        p_type: elf::PT_GNU_EH_FRAME,
        p_flags: elf::PF_R,
        p_offset: hdr_off,
        p_vaddr: hdr_off,
        p_paddr: hdr_off,
        p_filesz: eh_frame_hdr.len() as u64,
        p_memsz: eh_frame_hdr.len() as u64,
        p_align: 4,
    });

    w.write_align(4);
    let u32b = |v: u32| {
        if spec.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut note = Vec::with_capacity(36);
    note.extend_from_slice(&u32b(4));
    note.extend_from_slice(&u32b(20));
    note.extend_from_slice(&u32b(elf::NT_GNU_BUILD_ID));
    note.extend_from_slice(b"GNU\0");
    note.extend_from_slice(&id);
    w.write(&note);
    w.write_align(4);
    w.write(&eh_frame_hdr);
    w.write_align(8);
    w.write(&eh_frame);
    for r in &spec.runs {
        let mut image = vec![0u8; usize::try_from(r.len()).unwrap_or(0)];
        for f in spec.funcs.get(r.funcs.clone()).unwrap_or_default() {
            let (Some(code), Ok(at)) = (f.code, usize::try_from(f.start - r.start)) else {
                continue;
            };
            let n = usize::try_from(f.size).unwrap_or(0).min(code.len());
            if let (Some(dst), Some(src)) = (image.get_mut(at..at + n), code.get(..n)) {
                dst.copy_from_slice(src);
            }
        }
        w.write_align(PAGE as usize);
        w.write(&image);
    }

    w.write_null_symbol();
    for ((f, &addr), name) in spec.funcs.iter().zip(&addrs).zip(&names) {
        w.write_symbol(&Sym {
            name: Some(*name),
            section: Some(text_index),
            st_info: (elf::STB_LOCAL << 4) | elf::STT_FUNC,
            st_other: elf::STV_DEFAULT,
            st_shndx: 0,
            st_value: addr,
            st_size: f.size,
        });
    }
    w.write_strtab();
    for (_, bytes) in &debug.sections {
        w.write(bytes);
    }
    w.write_shstrtab();

    w.write_null_section_header();
    w.write_section_header(&SectionHeader {
        name: Some(note_name),
        sh_type: elf::SHT_NOTE,
        sh_flags: u64::from(elf::SHF_ALLOC),
        sh_addr: note_off,
        sh_offset: note_off,
        sh_size: 36,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 4,
        sh_entsize: 0,
    });
    w.write_section_header(&SectionHeader {
        name: Some(hdr_name),
        sh_type: elf::SHT_PROGBITS,
        sh_flags: u64::from(elf::SHF_ALLOC),
        sh_addr: hdr_off,
        sh_offset: hdr_off,
        sh_size: eh_frame_hdr.len() as u64,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 4,
        sh_entsize: 0,
    });
    w.write_section_header(&SectionHeader {
        name: Some(eh_name),
        sh_type: elf::SHT_PROGBITS,
        sh_flags: u64::from(elf::SHF_ALLOC),
        sh_addr: eh_off,
        sh_offset: eh_off,
        sh_size: eh_frame.len() as u64,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 8,
        sh_entsize: 0,
    });
    w.write_section_header(&SectionHeader {
        name: Some(text_name),
        sh_type: elf::SHT_PROGBITS,
        sh_flags: u64::from(elf::SHF_ALLOC | elf::SHF_EXECINSTR),
        sh_addr: text_start,
        sh_offset: text_start,
        sh_size: text_end - text_start,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 16,
        sh_entsize: 0,
    });
    w.write_symtab_section_header(spec.funcs.len() as u32 + 1);
    w.write_strtab_section_header();
    for (((_, bytes), (n, _)), &off) in debug.sections.iter().zip(&debug_ids).zip(&debug_offs) {
        w.write_section_header(&SectionHeader {
            name: Some(*n),
            sh_type: elf::SHT_PROGBITS,
            sh_flags: 0,
            sh_addr: 0,
            sh_offset: off,
            sh_size: bytes.len() as u64,
            sh_link: 0,
            sh_info: 0,
            sh_addralign: 1,
            sh_entsize: 0,
        });
    }
    w.write_shstrtab_section_header();
    if w.reserved_len() != w.len() {
        return Err(format!(
            "ELF writer: {} bytes reserved, {} written",
            w.reserved_len(),
            w.len()
        ));
    }
    Ok(Built {
        bytes: buf,
        build_id: id,
        offsets,
        fdes: if unwind_at.is_some() { t.fdes } else { 0 },
        unwind_failed: sized.failed,
        line_rows: debug.rows,
        unwind_at,
    })
}

/// A `PT_LOAD` of code: `len` bytes at file offset (and address) `off`.
fn load(off: u64, len: u64) -> ProgramHeader {
    ProgramHeader {
        p_type: elf::PT_LOAD,
        p_flags: elf::PF_R | elf::PF_X,
        p_offset: off,
        p_vaddr: off,
        p_paddr: off,
        p_filesz: len,
        p_memsz: len,
        p_align: PAGE,
    }
}
