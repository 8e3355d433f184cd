//! DWARF line tables for an ELF's functions, from their DEBUG_INFO (written with gimli).
//!
//! One compilation unit covers the ELF's `.text` (`DW_AT_low_pc`/`DW_AT_high_pc`), and its
//! line program has one sequence per function with a line table, at the function's address in
//! the ELF. That is what binutils' `addr2line` and `objdump -l` (used by `perf annotate` and
//! `perf report --sort srcline`) read.

use gimli::write::{
    Address, AttributeValue, DwarfUnit, EndianVec, LineProgram, LineString, Sections,
};
use gimli::{Encoding, Format, LineEncoding, RunTimeEndian};
use profkit_jit::codemap::DebugTable;

/// One function's line table, placed.
#[derive(Clone, Copy, Debug)]
pub struct FuncLines<'a> {
    /// The function's address in the ELF.
    pub addr: u64,
    /// Its size.
    pub size: u64,
    /// Its rows (offsets from the function's start, sorted).
    pub table: &'a DebugTable,
}

/// The DWARF sections: `(name, bytes)` of each non-empty one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DebugSections {
    /// `.debug_abbrev`, `.debug_info`, `.debug_line`, `.debug_str` …
    pub sections: Vec<(&'static str, Vec<u8>)>,
    /// Rows written.
    pub rows: usize,
}

/// A file name the line program accepts (not empty, no NUL).
fn file_name(name: &str) -> Vec<u8> {
    let b: Vec<u8> = name.bytes().filter(|&c| c != 0).collect();
    if b.is_empty() {
        b"<unknown>".to_vec()
    } else {
        b
    }
}

/// Line tables of `funcs` (sorted by address) in a unit covering `text` (`(start, len)` in the
/// ELF). `None` when no function has rows.
pub fn debug_sections(
    funcs: &[FuncLines<'_>],
    text: (u64, u64),
    name: &str,
    big_endian: bool,
) -> Result<Option<DebugSections>, String> {
    if funcs.iter().all(|f| f.table.rows.is_empty()) {
        return Ok(None);
    }
    let encoding = Encoding {
        format: Format::Dwarf32,
        version: 4,
        address_size: 8,
    };
    let mut dwarf = DwarfUnit::new(encoding);
    let mut program = LineProgram::new(
        encoding,
        LineEncoding::default(),
        LineString::String(b"/".to_vec()),
        None,
        LineString::String(file_name(name)),
        None,
    );
    let dir = program.default_directory();
    let mut rows = 0;
    for f in funcs {
        let t = f.table;
        let in_range: Vec<_> = t.rows.iter().filter(|r| r.offset < f.size).collect();
        if in_range.is_empty() {
            continue;
        }
        let files: Vec<_> = t
            .files
            .iter()
            .map(|n| program.add_file(LineString::String(file_name(n)), dir, None))
            .collect();
        program.begin_sequence(Some(Address::Constant(f.addr)));
        let mut last = 0;
        for r in in_range {
            let Some(&file) = files.get(r.file as usize) else {
                continue;
            };
            if r.offset < last {
                continue;
            }
            last = r.offset;
            let row = program.row();
            row.address_offset = r.offset;
            row.file = file;
            row.line = u64::from(r.line);
            row.column = u64::from(r.column);
            program.generate_row();
            rows += 1;
        }
        program.end_sequence(f.size);
    }
    dwarf.unit.line_program = program;
    let root = dwarf.unit.root();
    let cu = dwarf.unit.get_mut(root);
    cu.set(gimli::DW_AT_name, AttributeValue::String(file_name(name)));
    cu.set(
        gimli::DW_AT_producer,
        AttributeValue::String(b"profkit inject".to_vec()),
    );
    cu.set(
        gimli::DW_AT_low_pc,
        AttributeValue::Address(Address::Constant(text.0)),
    );
    cu.set(gimli::DW_AT_high_pc, AttributeValue::Udata(text.1));
    let endian = if big_endian {
        RunTimeEndian::Big
    } else {
        RunTimeEndian::Little
    };
    let mut sections = Sections::new(EndianVec::new(endian));
    dwarf
        .write(&mut sections)
        .map_err(|e| format!("writing DWARF line tables: {e}"))?;
    let mut out = DebugSections {
        sections: Vec::new(),
        rows,
    };
    let _ = sections.for_each(|id, data| -> Result<(), ()> {
        if !data.slice().is_empty() {
            out.sections.push((id.name(), data.slice().to_vec()));
        }
        Ok(())
    });
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use profkit_jit::codemap::LineRow;

    #[test]
    fn line_program_reads_back() {
        let table = DebugTable {
            files: vec!["/src/a.js".into(), String::new()],
            rows: vec![
                LineRow {
                    offset: 0,
                    file: 0,
                    line: 3,
                    column: 1,
                },
                LineRow {
                    offset: 8,
                    file: 0,
                    line: 4,
                    column: 5,
                },
                LineRow {
                    offset: 40,
                    file: 1,
                    line: 9,
                    column: 0,
                },
            ],
            ..DebugTable::default()
        };
        let funcs = [FuncLines {
            addr: 0x2000,
            size: 32,
            table: &table,
        }];
        let d = debug_sections(&funcs, (0x2000, 0x100), "jit", false)
            .unwrap()
            .unwrap();
        assert_eq!(d.rows, 2); // the row past the function's end is left out
        let secs: std::collections::HashMap<&str, Vec<u8>> = d.sections.iter().cloned().collect();
        let empty = Vec::new();
        let dwarf = gimli::Dwarf::load(|id| -> Result<_, gimli::Error> {
            Ok(gimli::EndianSlice::new(
                secs.get(id.name()).unwrap_or(&empty).as_slice(),
                gimli::LittleEndian,
            ))
        })
        .unwrap();
        let header = dwarf.units().next().unwrap().unwrap();
        let unit = dwarf.unit(header).unwrap();
        let mut rows = unit.line_program.clone().unwrap().rows();
        let mut got = Vec::new();
        while let Some((_, row)) = rows.next_row().unwrap() {
            got.push((
                row.address(),
                row.line().map(|l| l.get()),
                row.end_sequence(),
            ));
        }
        assert_eq!(
            got,
            vec![
                (0x2000, Some(3), false),
                (0x2008, Some(4), false),
                (0x2020, Some(4), true)
            ]
        );
    }
}
