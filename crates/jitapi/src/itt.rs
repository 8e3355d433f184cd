//! The ITT path: `__itt_api_init` and the module-load notifications LLVM sends.
//!
//! LLVM's IntelJITEventListener (default mode) calls `__itt_module_load_with_sections` with the
//! whole unrelocated in-memory ELF object plus the load address of each allocated section.
//! [`parse_module`] applies the object's `.rela.debug_*` relocations itself (symbols in loaded
//! sections resolve to their load addresses, so DWARF addresses come out as run-time
//! addresses), then reads every function symbol, its subprogram's `DW_TAG_inlined_subroutine`
//! tree and the line program. Each function becomes one LOAD with a DEBUG_INFO (the line
//! program) and, when it has inlines, a DEBUG_INFO2 with the inline tree.

#![allow(non_snake_case)]

use core::ffi::{c_char, c_void, CStr};
use std::borrow::Cow;
use std::collections::HashMap;

use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SymbolKind};
use profkit_jitdump::{DebugInfo2Builder, DebugInfo2Data, InlineCall};

use crate::abi::{IttApiInfo, IttModuleObject, IttSectionInfo, ITT_GLOBAL_API_LIST_OFFSET};
use crate::collector;
use crate::ffi::guard;

/// A section of the module as the JIT placed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedSection {
    /// Section name (`.text`, `.ltext`, …).
    pub name: String,
    /// Load address.
    pub addr: u64,
    /// Size.
    pub size: u64,
}

/// One function of a module, ready to be written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleFunction {
    /// Symbol name.
    pub name: String,
    /// Load address.
    pub addr: u64,
    /// Size in bytes.
    pub size: u64,
    /// Line rows `(offset, line, file)` from the line program (the innermost location).
    pub lines: Vec<(u32, u32, String)>,
    /// The inline tree, when the function has inlined calls.
    pub debug_info2: Option<DebugInfo2Data>,
}

type Reader<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

fn apply_relocations(
    file: &object::File<'_>,
    section: &object::Section<'_, '_>,
    data: &mut [u8],
    placed: &HashMap<object::SectionIndex, u64>,
) {
    let little = file.is_little_endian();
    for (offset, rel) in section.relocations() {
        if rel.kind() != object::RelocationKind::Absolute {
            continue;
        }
        let target = match rel.target() {
            RelocationTarget::Symbol(i) => file.symbol_by_index(i).ok().map(|s| {
                let base = s
                    .section_index()
                    .and_then(|si| placed.get(&si).copied())
                    .unwrap_or(0);
                base.wrapping_add(s.address())
            }),
            RelocationTarget::Section(si) => Some(placed.get(&si).copied().unwrap_or(0)),
            _ => None,
        };
        let Some(target) = target else { continue };
        let Ok(at) = usize::try_from(offset) else {
            continue;
        };
        let width = usize::from(rel.size() / 8);
        let Some(slot) = at.checked_add(width).and_then(|end| data.get_mut(at..end)) else {
            continue;
        };
        let implicit = if rel.has_implicit_addend() {
            let mut b = [0u8; 8];
            if let Some(dst) = b.get_mut(..width) {
                dst.copy_from_slice(slot);
            }
            if little {
                u64::from_le_bytes(b)
            } else {
                u64::from_be_bytes(b) >> (64 - 8 * width as u32).min(63)
            }
        } else {
            0
        };
        let value = target
            .wrapping_add(rel.addend() as u64)
            .wrapping_add(implicit);
        let bytes = if little {
            value.to_le_bytes()
        } else {
            value.to_be_bytes()
        };
        let src = if little {
            bytes.get(..width)
        } else {
            bytes.get(8 - width..)
        };
        if let Some(src) = src {
            slot.copy_from_slice(src);
        }
    }
}

struct InlineNode {
    name: String,
    file: String,
    ranges: Vec<(u64, u64)>,
    call_line: u32,
    call_column: u32,
    children: Vec<InlineNode>,
}

struct Subprogram {
    low: u64,
    name: String,
    file: String,
    line: u32,
    inlines: Vec<InlineNode>,
}

fn attr_str(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    v: gimli::AttributeValue<Reader<'_>>,
) -> Option<String> {
    dwarf
        .attr_string(unit, v)
        .ok()
        .map(|s| String::from_utf8_lossy(s.slice()).into_owned())
}

/// Name and declaration file/line of a DIE, following abstract_origin / specification.
fn die_name(
    dwarf: &gimli::Dwarf<Reader<'_>>,
    unit: &gimli::Unit<Reader<'_>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'_>>,
    files: &[String],
    depth: u32,
) -> (Option<String>, Option<String>, u32) {
    let mut name = None;
    let mut file = None;
    let mut line = 0;
    for at in [gimli::DW_AT_linkage_name, gimli::DW_AT_name] {
        if name.is_none() {
            if let Some(v) = entry.attr_value(at) {
                name = attr_str(dwarf, unit, v);
            }
        }
    }
    if let Some(gimli::AttributeValue::FileIndex(i)) = entry.attr_value(gimli::DW_AT_decl_file) {
        file = usize::try_from(i).ok().and_then(|i| files.get(i)).cloned();
    }
    if let Some(v) = entry.attr_value(gimli::DW_AT_decl_line) {
        line = v.udata_value().unwrap_or(0) as u32;
    }
    if (name.is_none() || file.is_none()) && depth < 8 {
        for at in [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification] {
            if let Some(gimli::AttributeValue::UnitRef(off)) = entry.attr_value(at) {
                if let Ok(origin) = unit.entry(off) {
                    let (n, f, l) = die_name(dwarf, unit, &origin, files, depth + 1);
                    name = name.or(n);
                    if file.is_none() {
                        file = f;
                        line = l;
                    }
                }
            }
        }
    }
    (name, file, line)
}

fn collect_inlines<'d>(
    dwarf: &gimli::Dwarf<Reader<'d>>,
    unit: &gimli::Unit<Reader<'d>>,
    node: gimli::EntriesTreeNode<'_, '_, Reader<'d>>,
    files: &[String],
    out: &mut Vec<InlineNode>,
    depth: u32,
) -> gimli::Result<()> {
    let mut children = node.children();
    while let Some(child) = children.next()? {
        let entry = child.entry().clone();
        if entry.tag() == gimli::DW_TAG_inlined_subroutine && depth < 64 {
            let (name, file, _) = die_name(dwarf, unit, &entry, files, 0);
            let mut ranges = Vec::new();
            let mut it = dwarf.die_ranges(unit, &entry)?;
            while let Some(r) = it.next()? {
                if r.end > r.begin {
                    ranges.push((r.begin, r.end));
                }
            }
            ranges.sort_unstable();
            let call_file = match entry.attr_value(gimli::DW_AT_call_file) {
                Some(gimli::AttributeValue::FileIndex(i)) => {
                    usize::try_from(i).ok().and_then(|i| files.get(i)).cloned()
                }
                _ => None,
            };
            let _ = call_file;
            let num = |at| {
                entry
                    .attr_value(at)
                    .and_then(|v| v.udata_value())
                    .unwrap_or(0) as u32
            };
            let mut node = InlineNode {
                name: name.unwrap_or_else(|| "<inlined>".into()),
                file: file.unwrap_or_else(|| "<unknown>".into()),
                ranges,
                call_line: num(gimli::DW_AT_call_line),
                call_column: num(gimli::DW_AT_call_column),
                children: Vec::new(),
            };
            collect_inlines(dwarf, unit, child, files, &mut node.children, depth + 1)?;
            out.push(node);
        } else if entry.tag() != gimli::DW_TAG_subprogram {
            // Lexical blocks and the like: inlines inside belong to the same frame.
            collect_inlines(dwarf, unit, child, files, out, depth)?;
        }
    }
    Ok(())
}

fn file_names(dwarf: &gimli::Dwarf<Reader<'_>>, unit: &gimli::Unit<Reader<'_>>) -> Vec<String> {
    let mut out = Vec::new();
    let Some(program) = &unit.line_program else {
        return out;
    };
    let header = program.header();
    let count = header.file_names().len();
    // DWARF 5 file indices start at 0, earlier versions at 1 (index 0 unused).
    let first = if header.version() >= 5 { 0 } else { 1 };
    if first == 1 {
        out.push("<unknown>".to_string());
    }
    for i in first..first + count as u64 {
        let name = header.file(i).map_or_else(
            || "<unknown>".to_string(),
            |f| {
                let base = attr_str(dwarf, unit, f.path_name()).unwrap_or_default();
                let dir = f
                    .directory(header)
                    .and_then(|d| attr_str(dwarf, unit, d))
                    .unwrap_or_default();
                if base.starts_with('/') || dir.is_empty() {
                    base
                } else {
                    format!("{dir}/{base}")
                }
            },
        );
        out.push(name);
    }
    out
}

/// Parses an in-memory ELF object placed at `sections` into its functions.
pub fn parse_module(
    buffer: &[u8],
    sections: &[PlacedSection],
) -> Result<Vec<ModuleFunction>, String> {
    let file = object::File::parse(buffer).map_err(|e| e.to_string())?;
    let mut placed = HashMap::new();
    for s in file.sections() {
        let Ok(name) = s.name() else { continue };
        if let Some(p) = sections.iter().find(|p| p.name == name) {
            placed.insert(s.index(), p.addr);
        }
    }
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<Cow<'_, [u8]>, gimli::Error> {
        let Some(sec) = file.section_by_name(id.name()) else {
            return Ok(Cow::Borrowed(&[][..]));
        };
        let mut data = sec
            .uncompressed_data()
            .map(Cow::into_owned)
            .unwrap_or_default();
        apply_relocations(&file, &sec, &mut data, &placed);
        Ok(Cow::Owned(data))
    };
    let owned = gimli::DwarfSections::load(load).map_err(|e| e.to_string())?;
    let dwarf = owned.borrow(|s| gimli::EndianSlice::new(s, endian));

    let mut subprograms: Vec<Subprogram> = Vec::new();
    let mut rows: Vec<(u64, u32, u32, String)> = Vec::new();
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        let files = file_names(&dwarf, &unit);
        if let Some(program) = unit.line_program.clone() {
            let mut it = program.rows();
            while let Ok(Some((_, row))) = it.next_row() {
                if row.end_sequence() {
                    continue;
                }
                let f = usize::try_from(row.file_index())
                    .ok()
                    .and_then(|i| files.get(i))
                    .cloned()
                    .unwrap_or_else(|| "<unknown>".into());
                let line = row.line().map_or(0, |l| l.get() as u32);
                let col = match row.column() {
                    gimli::ColumnType::LeftEdge => 0,
                    gimli::ColumnType::Column(c) => c.get() as u32,
                };
                rows.push((row.address(), line, col, f));
            }
        }
        let Ok(mut tree) = unit.entries_tree(None) else {
            continue;
        };
        let Ok(root) = tree.root() else { continue };
        let mut stack_nodes = root.children();
        while let Ok(Some(node)) = stack_nodes.next() {
            let entry = node.entry().clone();
            if entry.tag() != gimli::DW_TAG_subprogram {
                continue;
            }
            let Some(gimli::AttributeValue::Addr(low)) = entry.attr_value(gimli::DW_AT_low_pc)
            else {
                continue;
            };
            let (name, file, line) = die_name(&dwarf, &unit, &entry, &files, 0);
            let mut inlines = Vec::new();
            let _ = collect_inlines(&dwarf, &unit, node, &files, &mut inlines, 0);
            subprograms.push(Subprogram {
                low,
                name: name.unwrap_or_default(),
                file: file.unwrap_or_else(|| "<unknown>".into()),
                line,
                inlines,
            });
        }
    }
    rows.sort_by_key(|r| r.0);

    let mut out = Vec::new();
    for sym in file.symbols() {
        if sym.kind() != SymbolKind::Text || sym.size() == 0 {
            continue;
        }
        let Some(base) = sym.section_index().and_then(|si| placed.get(&si).copied()) else {
            continue;
        };
        let addr = base.wrapping_add(sym.address());
        let size = sym.size();
        let end = addr.saturating_add(size);
        let name = sym.name().unwrap_or("").to_string();
        let mut lines: Vec<(u32, u32, String)> = Vec::new();
        let first = rows.partition_point(|r| r.0 < addr);
        let mut di2_lines = Vec::new();
        for r in rows.get(first..).unwrap_or(&[]) {
            if r.0 >= end {
                break;
            }
            let off = (r.0 - addr) as u32;
            if lines.last().is_some_and(|l| l.0 == off) {
                lines.pop();
                di2_lines.pop();
            }
            lines.push((off, r.1, r.3.clone()));
            di2_lines.push((off, r.1, r.2, r.3.clone()));
        }
        let sub = subprograms.iter().find(|s| s.low == addr);
        let debug_info2 = sub
            .filter(|s| !s.inlines.is_empty())
            .map(|s| build_di2(&name, s, addr, size, &di2_lines));
        out.push(ModuleFunction {
            name: if name.is_empty() {
                sub.map(|s| s.name.clone()).unwrap_or_default()
            } else {
                name
            },
            addr,
            size,
            lines,
            debug_info2,
        });
    }
    Ok(out)
}

/// The DEBUG_INFO2 of a function with inlines: the subprogram's inline tree (laid out by
/// profkit-jitdump's [`DebugInfo2Builder`]) and the line program's rows, which already give
/// the deepest frame's location.
fn build_di2(
    name: &str,
    sub: &Subprogram,
    addr: u64,
    size: u64,
    lines: &[(u32, u32, u32, String)],
) -> DebugInfo2Data {
    fn calls(nodes: &[InlineNode], addr: u64) -> Vec<InlineCall> {
        nodes
            .iter()
            .map(|n| InlineCall {
                name: n.name.clone(),
                file: n.file.clone(),
                start_line: 0,
                start_column: 0,
                call_line: n.call_line,
                call_column: n.call_column,
                // Addresses before the function saturate to offset 0: clipped like any
                // range outside the code.
                ranges: n
                    .ranges
                    .iter()
                    .map(|&(b, e)| (b.saturating_sub(addr), e.saturating_sub(addr)))
                    .collect(),
                lines: Vec::new(),
                children: calls(&n.children, addr),
            })
            .collect()
    }
    let mut b = DebugInfo2Builder::new(name, &sub.file, sub.line, 0, size);
    b.inline_calls(&calls(&sub.inlines, addr));
    for (off, line, col, f) in lines {
        b.line(*off, f, *line, *col);
    }
    b.finish()
}

/// `void __itt_module_load_with_sections(__itt_module_object*)`.
///
/// # Safety
/// `obj` is NULL or a valid `__itt_module_object` whose buffer and section array are readable.
#[no_mangle]
pub unsafe extern "C" fn __itt_module_load_with_sections(obj: *mut IttModuleObject) {
    guard((), || {
        // SAFETY: caller contract.
        let Some(m) = (unsafe { obj.as_ref() }) else {
            return;
        };
        if m.module_buffer.is_null() || m.module_size == 0 {
            return;
        }
        // SAFETY: the JIT hands us its object buffer, readable during the call.
        let buffer =
            unsafe { core::slice::from_raw_parts(m.module_buffer.cast::<u8>(), m.module_size) };
        let infos: &[IttSectionInfo] = if m.section_array.is_null() {
            &[]
        } else {
            // SAFETY: `section_number` entries at `section_array`, per the ITT contract.
            unsafe { core::slice::from_raw_parts(m.section_array, m.section_number) }
        };
        let sections: Vec<PlacedSection> = infos
            .iter()
            .filter(|s| !s.name.is_null() && !s.start_addr.is_null())
            .map(|s| PlacedSection {
                // SAFETY: non-NULL NUL-terminated section name.
                name: unsafe { CStr::from_ptr(s.name) }
                    .to_string_lossy()
                    .into_owned(),
                addr: s.start_addr as u64,
                size: s.size as u64,
            })
            .collect();
        let funcs = match parse_module(buffer, &sections) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("profkit-jitapi: cannot read the module object: {e}");
                return;
            }
        };
        for f in funcs {
            // Only code inside a reported section is read (the JIT placed and relocated it).
            let inside = sections.iter().any(|s| {
                f.addr >= s.addr && f.addr.saturating_add(f.size) <= s.addr.saturating_add(s.size)
            });
            if !inside {
                continue;
            }
            // SAFETY: the function lies inside a section the JIT reports as loaded there.
            let code = unsafe { core::slice::from_raw_parts(f.addr as *const u8, f.size as usize) };
            collector::with_state(|s| s.write_function(&f, Some(code)));
        }
    })
}

/// `void __itt_module_unload_with_sections(__itt_module_object*)`: bookkeeping only (jitdump
/// has no unload record); flushes the dump.
///
/// # Safety
/// `obj` is NULL or a valid `__itt_module_object`.
#[no_mangle]
pub unsafe extern "C" fn __itt_module_unload_with_sections(_obj: *mut IttModuleObject) {
    guard((), || collector::flush_all(false))
}

/// `void __itt_module_load(void* start, void* end, const char* path)`: one LOAD named after
/// `path` covering `[start, end)`, without code bytes (the range may hold unreadable pages).
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn __itt_module_load(
    start: *mut c_void,
    end: *mut c_void,
    path: *const c_char,
) {
    guard((), || {
        let (s, e) = (start as u64, end as u64);
        if s == 0 || e <= s {
            return;
        }
        let name = if path.is_null() {
            "<module>".to_string()
        } else {
            // SAFETY: non-NULL NUL-terminated path.
            unsafe { CStr::from_ptr(path) }
                .to_string_lossy()
                .into_owned()
        };
        let f = ModuleFunction {
            name,
            addr: s,
            size: e - s,
            lines: Vec::new(),
            debug_info2: None,
        };
        collector::with_state(|st| st.write_function(&f, None));
    })
}

/// `void __itt_module_unload(void* start)`: bookkeeping only.
#[no_mangle]
pub extern "C" fn __itt_module_unload(_start: *mut c_void) {}

/// `void __itt_api_init(__itt_global*, __itt_group_id)`: binds our module functions in the
/// static part's table and points every other entry at its `null_func` (what Intel's
/// reference collector does).
///
/// # Safety
/// `global` is NULL or the caller's `__itt_global`.
#[no_mangle]
pub unsafe extern "C" fn __itt_api_init(global: *mut c_void, _init_groups: u32) {
    guard((), || {
        if global.is_null() {
            return;
        }
        // SAFETY: `api_list_ptr` sits at this offset of `__itt_global` (layout in abi.rs).
        let list = unsafe {
            global
                .cast::<u8>()
                .add(ITT_GLOBAL_API_LIST_OFFSET)
                .cast::<*mut IttApiInfo>()
                .read_unaligned()
        };
        let mut p = list;
        let mut n = 0;
        while !p.is_null() && n < 100_000 {
            // SAFETY: the table is an array of __itt_api_info ending at name == NULL.
            let info = unsafe { &*p };
            if info.name.is_null() {
                break;
            }
            // SAFETY: non-NULL NUL-terminated name.
            let name = unsafe { CStr::from_ptr(info.name) }.to_bytes();
            let ours: *mut c_void = match name {
                b"__itt_module_load_with_sections" => {
                    __itt_module_load_with_sections as *mut c_void
                }
                b"__itt_module_unload_with_sections" => {
                    __itt_module_unload_with_sections as *mut c_void
                }
                b"__itt_module_load" => __itt_module_load as *mut c_void,
                b"__itt_module_unload" => __itt_module_unload as *mut c_void,
                _ => info.null_func,
            };
            if !info.func_ptr.is_null() {
                // SAFETY: func_ptr points to the static part's function-pointer slot.
                unsafe { info.func_ptr.write(ours) };
            }
            // SAFETY: next entry of the same array (the terminator is checked above).
            p = unsafe { p.add(1) };
            n += 1;
        }
    })
}
