//! Symbolization by llvm-symbolizer's rules, for output compared with LLVM's tools (llvm-xray
//! `extract`, `account`, `stack`, `graph`): one object file held in memory, its DWARF read with
//! addr2line over the whole file and its symbol table (`.symtab` and `.dynsym`, code symbols
//! only) searched by address; names demangled by [`Style::LlvmSymbolizer`].
//!
//! [`Binary::lookup`](crate::Binary::lookup) answers by perf's rules instead (the symbol perf
//! prefers among aliases, `name@plt` stubs, unsized symbols reaching the next one, a separate
//! debug file); the two differ where the tools they are compared with differ. What llvm-symbolizer
//! does that this follows:
//! * the name is that of the symbol-table function containing the address (so a sled inside
//!   an inlined callee is named after its real function), else DWARF's outermost frame; of
//!   symbols at one address the smallest, then the first by name; an unsized symbol names only
//!   its own address;
//! * the position is the line table's, else, for a local symbol, the file of the `STT_FILE`
//!   symbol before it in the table (an empty `STT_FILE` gives none: `<invalid>`).

use std::borrow::Cow;
use std::path::PathBuf;
use std::rc::Rc;

use object::{Object, ObjectSection, ObjectSymbol};

use crate::demangle::{demangle_as, Style};
use crate::error::{Error, ErrorKind, Result};

/// What symbolization found for an address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LlvmSymbol {
    /// Demangled function name.
    pub name: Option<String>,
    /// Source file (as in the line table; for a local symbol without line information, the
    /// `STT_FILE` symbol before it, as llvm-symbolizer does).
    pub file: Option<String>,
    /// Line (0 when the line table says 0 or nothing).
    pub line: u32,
    /// Column.
    pub column: u32,
}

impl LlvmSymbol {
    /// llvm-xray's debug column: `basename:line:col`; `<invalid>:0:0` when nothing gives a
    /// file (llvm-symbolizer's placeholder).
    pub fn debug_string(&self) -> String {
        match &self.file {
            Some(f) => {
                let base = f.rsplit(['/', '\\']).next().unwrap_or(f);
                format!("{base}:{}:{}", self.line, self.column)
            }
            None => "<invalid>:0:0".to_string(),
        }
    }

    /// The name, or `@(HEXADDR)` when there is none (what llvm-xray prints for an address
    /// llvm-symbolizer cannot name).
    pub fn display_name(&self, address: u64) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None => format!("@({address:X})"),
        }
    }
}

/// A code symbol: start, size, name, and for a local symbol the `STT_FILE` name before it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct CodeSymbol {
    start: u64,
    size: u64,
    name: String,
    file: Option<String>,
}

type Reader = gimli::EndianRcSlice<gimli::RunTimeEndian>;

/// Names and source positions of addresses as llvm-symbolizer gives them to LLVM's tools:
/// DWARF (addr2line) first, then the ELF symbol table. See the [module docs](self).
pub struct LlvmSymbolizer {
    ctx: Option<addr2line::Context<Reader>>,
    symbols: Vec<CodeSymbol>,
}

impl core::fmt::Debug for LlvmSymbolizer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LlvmSymbolizer")
            .field("dwarf", &self.ctx.is_some())
            .field("symbols", &self.symbols.len())
            .finish()
    }
}

impl LlvmSymbolizer {
    /// Loads DWARF and symbols from an object file (`name`: what an error says).
    pub fn new(name: impl Into<PathBuf>, data: &[u8]) -> Result<LlvmSymbolizer> {
        let file = object::File::parse(data)
            .map_err(|e| Error::path(name, ErrorKind::Elf(e.to_string())))?;
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let load = |id: gimli::SectionId| -> core::result::Result<Reader, gimli::Error> {
            let d: Cow<'_, [u8]> = file
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .unwrap_or(Cow::Borrowed(&[]));
            Ok(gimli::EndianRcSlice::new(Rc::from(&*d), endian))
        };
        let ctx = gimli::Dwarf::load(load)
            .ok()
            .and_then(|dwarf| addr2line::Context::from_dwarf(dwarf).ok());
        // Table order matters: a local symbol's file is the `STT_FILE` symbol before it.
        let mut symbols = Vec::new();
        let mut file_name: Option<String> = None;
        for sym in file.symbols() {
            if sym.kind() == object::SymbolKind::File {
                // An empty STT_FILE name (the linker's marker before the symbols it made local,
                // e.g. hidden-visibility functions) gives no file: llvm-symbolizer then keeps
                // `<invalid>`.
                file_name = sym
                    .name()
                    .ok()
                    .filter(|n| !n.is_empty())
                    .map(str::to_string);
                continue;
            }
            if sym.kind() != object::SymbolKind::Text || !sym.is_definition() {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            symbols.push(CodeSymbol {
                start: sym.address(),
                size: sym.size(),
                name: name.to_string(),
                file: if sym.is_local() {
                    file_name.clone()
                } else {
                    None
                },
            });
        }
        for sym in file.dynamic_symbols() {
            if sym.kind() == object::SymbolKind::Text && sym.is_definition() {
                if let Ok(name) = sym.name() {
                    symbols.push(CodeSymbol {
                        start: sym.address(),
                        size: sym.size(),
                        name: name.to_string(),
                        file: None,
                    });
                }
            }
        }
        symbols.sort();
        symbols.dedup_by_key(|s| s.start);
        Ok(LlvmSymbolizer { ctx, symbols })
    }

    /// Name and position of `address`, as llvm-symbolizer gives them to llvm-xray: the name
    /// of the symbol-table function containing it (so a sled inside an inlined callee is
    /// named after its real function), else DWARF's outermost frame; the position from the
    /// line table, else (local symbols) the file of the `STT_FILE` symbol before it.
    pub fn symbolize(&self, address: u64) -> LlvmSymbol {
        let mut info = LlvmSymbol::default();
        // addr2line computes `address + 1` (an overflow panic in debug builds at u64::MAX).
        if let Some(ctx) = self.ctx.as_ref().filter(|_| address != u64::MAX) {
            if let Ok(mut frames) = ctx.find_frames(address).skip_all_loads() {
                let mut outermost = None;
                while let Ok(Some(frame)) = frames.next() {
                    if let Some(name) = frame.function.as_ref().and_then(|f| f.raw_name().ok()) {
                        outermost = Some(demangle_as(&name, Style::LlvmSymbolizer).into_owned());
                    }
                }
                info.name = outermost;
            }
            if let Ok(Some(loc)) = ctx.find_location(address) {
                info.file = loc.file.map(str::to_string);
                info.line = loc.line.unwrap_or(0);
                info.column = loc.column.unwrap_or(0);
            }
        }
        let i = self.symbols.partition_point(|s| s.start <= address);
        if let Some(s) = i.checked_sub(1).and_then(|j| self.symbols.get(j)) {
            if address == s.start || address < s.start.saturating_add(s.size) {
                info.name = Some(demangle_as(&s.name, Style::LlvmSymbolizer).into_owned());
                if info.file.is_none() {
                    info.file.clone_from(&s.file);
                }
            }
        }
        info
    }
}
