//! The ELF builder on the committed node jitdump, parsed back with `object`: one symbol per
//! function at its file offset, one PT_LOAD per run (page-aligned, vaddr == offset) holding
//! the function's code, the build-id note, line tables and unwind tables.

use object::elf::{PT_GNU_EH_FRAME, PT_LOAD, PT_NOTE};
use object::read::elf::{ElfFile64, ProgramHeader as _};
use object::{Object, ObjectSection, ObjectSymbol};
use profkit_inject::elf::{build, ElfFunc, ElfSpec, PAGE};
use profkit_inject::layout::{layout, Span};

use gimli::UnwindSection;

use crate::{fixture, fixture_named};

#[test]
fn node_jitdump_image_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jit.dump");
    std::fs::write(&path, fixture(&fixture_named("node-dwarf.jit-"))).unwrap();
    let image = profkit_inject::dump::load(&path).unwrap();
    let regions = image.map.regions();
    let spans: Vec<Span> = regions.iter().map(|r| Span::of(r, r.size)).collect();
    let lay = layout(&spans, &[]);
    // V8: builtins in the node binary, JIT code gigabytes higher: two ELFs, one layer.
    assert_eq!(lay.elfs.len(), 2);
    for e in &lay.elfs {
        let funcs: Vec<ElfFunc<'_>> = e
            .funcs
            .iter()
            .map(|&i| {
                let r = &regions[i];
                ElfFunc {
                    name: &r.name,
                    start: r.start,
                    size: r.size,
                    code: image.code(i),
                    lines: r.debug.as_ref(),
                    eh_frame: r.unwind.as_ref().map(|u| u.eh_frame.as_slice()),
                }
            })
            .collect();
        let spec = ElfSpec {
            machine: object::elf::EM_X86_64,
            big_endian: false,
            funcs: funcs.clone(),
            runs: e.runs.clone(),
            name: "jit.dump".into(),
            seed: 1,
        };
        let lowest = e.runs[0].start - 0x10_0000;
        let built = build(&spec, |o| {
            assert!(o.unwind_end < PAGE * 64);
            Some(lowest)
        })
        .unwrap();
        let elf = ElfFile64::<object::Endianness>::parse(&*built.bytes).unwrap();

        // Segments: the unwind segment at 0, then one R+X PT_LOAD per run.
        let endian = elf.endian();
        let loads: Vec<_> = elf
            .elf_program_headers()
            .iter()
            .filter(|p| p.p_type(endian) == PT_LOAD)
            .collect();
        assert_eq!(loads.len(), 1 + e.runs.len());
        assert_eq!(loads[0].p_offset(endian), 0);
        for ((p, run), &off) in loads[1..].iter().zip(&e.runs).zip(&built.offsets.runs) {
            assert_eq!(p.p_offset(endian), off);
            assert_eq!(p.p_vaddr(endian), off);
            assert_eq!(off % PAGE, 0);
            assert_eq!(p.p_filesz(endian), run.end - run.start);
        }
        let kinds: Vec<u32> = elf
            .elf_program_headers()
            .iter()
            .map(|p| p.p_type(endian))
            .collect();
        assert!(kinds.contains(&PT_NOTE) && kinds.contains(&PT_GNU_EH_FRAME));

        // Symbols: every function, at its file offset, with its code there.
        let syms: Vec<_> = elf.symbols().collect();
        assert_eq!(syms.len(), funcs.len());
        let text = elf.section_by_name(".text").unwrap();
        assert_eq!(text.address(), text.file_range().unwrap().0);
        let text_data = text.data().unwrap();
        for (k, (s, f)) in syms.iter().zip(&funcs).enumerate() {
            assert_eq!(s.name().unwrap(), f.name);
            assert_eq!(s.size(), f.size);
            assert_eq!(s.kind(), object::SymbolKind::Text);
            let run = e.runs.iter().position(|r| r.funcs.contains(&k)).unwrap();
            let want = built.offsets.runs[run] + (f.start - e.runs[run].start);
            assert_eq!(s.address(), want);
            let at = (s.address() - text.address()) as usize;
            assert_eq!(
                &text_data[at..at + f.size as usize],
                &f.code.unwrap()[..f.size as usize],
                "{}",
                f.name
            );
        }

        // Build id note.
        assert_eq!(elf.build_id().unwrap(), Some(&built.build_id[..]));
        // Line tables where the dump has DEBUG_INFO; unwind tables where it has FDEs.
        let has_lines = funcs
            .iter()
            .any(|f| f.lines.is_some_and(|l| !l.rows.is_empty()));
        assert_eq!(elf.section_by_name(".debug_line").is_some(), has_lines);
        assert_eq!(built.line_rows > 0, has_lines);
        let hdr = elf.section_by_name(".eh_frame_hdr").unwrap();
        let eh = elf.section_by_name(".eh_frame").unwrap();
        assert_eq!(hdr.address(), built.offsets.eh_frame_hdr);
        assert_eq!(eh.address(), built.offsets.eh_frame);
        let with_fdes = funcs
            .iter()
            .filter(|f| f.eh_frame.is_some_and(|e| !e.is_empty()))
            .count();
        assert_eq!(built.fdes, with_fdes);
        if with_fdes > 0 {
            // The table works at the run-time address the segment is mapped at.
            let bases = gimli::BaseAddresses::default()
                .set_eh_frame_hdr(lowest + hdr.address())
                .set_eh_frame(lowest + eh.address());
            let eh_frame = gimli::EhFrame::new(eh.data().unwrap(), gimli::LittleEndian);
            let table = gimli::EhFrameHdr::new(hdr.data().unwrap(), gimli::LittleEndian)
                .parse(&bases, 8)
                .unwrap();
            let table = table.table().unwrap();
            for f in funcs
                .iter()
                .filter(|f| f.eh_frame.is_some_and(|e| !e.is_empty()))
            {
                let fde = table
                    .fde_for_address(
                        &eh_frame,
                        &bases,
                        f.start + 1,
                        gimli::EhFrame::cie_from_offset,
                    )
                    .unwrap();
                assert_eq!(fde.initial_address(), f.start, "{}", f.name);
            }
        }
    }
}
