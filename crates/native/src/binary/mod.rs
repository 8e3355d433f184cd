//! One ELF file: its build id, PT_LOAD segments, code symbols, DWARF (lazily) and the
//! sections an unwinder needs.
//!
//! * [`Binary::open`] maps the file (memmap2) and parses what every lookup needs once: the
//!   build id, the segments (for [`Binary::mapping`]), the unwind sections, and the symbol
//!   table (`.symtab` + `.dynsym`, sorted; names stay in the mapped file).
//! * [`Binary::lookup`] answers an SVMA with its frames, innermost first: from DWARF
//!   (addr2line: inline frames, file and line) when the binary or its attached debug file
//!   has it, else from the symbol table. The DWARF context is built on the first lookup;
//!   answers are cached per address, so a repeated address costs a hash lookup and a
//!   reference-count increment.
//! * [`Binary::attach_debug_file`] (by path: the finder's way, its DWARF loading on a thread
//!   of its own while its symbols are read) and [`Binary::set_debug_file`] (an opened
//!   [`Binary`]) attach a separate debug file (`.build-id/xx/rest.debug`, `.gnu_debuglink`):
//!   its DWARF and `.symtab` are then used.
//!
//! Every file is untrusted: a cut or corrupt file gives an [`Error`] naming it, or fewer
//! answers, never a panic.

pub(crate) mod dwarf;
mod symbols;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use object::{Object, ObjectSection, ObjectSegment};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::build_id::BuildId;
use crate::bytes::SectionBytes;
use crate::demangle::demangle;
use crate::error::{Error, ErrorKind, Result};
use crate::mapping::Mapping;
use profkit_common::FileBytes;
use symbols::{Sym, SymbolTable};

/// The ELF file type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BinaryKind {
    /// `ET_EXEC`: a non-PIE executable (SVMA = AVMA).
    Executable,
    /// `ET_DYN`: a PIE executable or a shared library.
    Dynamic,
    /// `ET_REL`: an object file.
    Relocatable,
    /// Anything else (core files, unknown types).
    Other,
}

/// A PT_LOAD segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// `p_vaddr`.
    pub svma: u64,
    /// `p_memsz`.
    pub mem_size: u64,
    /// `p_offset`.
    pub file_offset: u64,
    /// `p_filesz`.
    pub file_size: u64,
    /// `PF_X` is set.
    pub executable: bool,
}

/// One frame of a lookup: a function, and where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function's name, demangled; `??` when DWARF has a frame without a name and no
    /// symbol covers the address (as `addr2line` prints it).
    pub function: Arc<str>,
    /// The source file (as DWARF states it, joined with the compilation directory).
    pub file: Option<Arc<str>>,
    /// The line (1-based).
    pub line: Option<u32>,
    /// The column (1-based), when DWARF has one.
    pub column: Option<u32>,
}

/// Where the frames of a [`Symbolized`] come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// DWARF debug info: inline frames, files and lines.
    Dwarf,
    /// The symbol table only: one frame, a name, no file or line.
    Symtab,
}

/// A symbol-table entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Name, demangled.
    pub name: Arc<str>,
    /// First address (SVMA).
    pub start: u64,
    /// Size from the symbol table (`None` for unsized symbols, which extend to the next
    /// symbol or the end of their section).
    pub size: Option<u64>,
}

/// What [`Binary::lookup`] knows about an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbolized {
    /// Innermost first: the inlined functions, then the function that holds the code.
    /// Every frame but the last is inlined into the next one; a frame's line is where the
    /// address is (the first frame) or where the inner frame was inlined (the others).
    /// Never empty.
    pub frames: Vec<Frame>,
    /// The symbol-table entry that contains the address, if any (its start is the
    /// function's start address; its name may differ from the DWARF name, e.g.
    /// `foo.part.0` for `foo`).
    pub symbol: Option<Symbol>,
    /// Where `frames` come from.
    pub source: Source,
}

/// A separate debug file attached to a [`Binary`].
struct DebugFile {
    path: PathBuf,
    data: Arc<FileBytes>,
    has_dwarf: bool,
    debug_frame: Option<Section>,
}

/// A section's stated address range and (unless `SHT_NOBITS`) bytes.
#[derive(Clone)]
pub(crate) struct Section {
    pub svma: std::ops::Range<u64>,
    pub data: SectionBytes,
}

/// What the unwinder takes from a binary.
#[derive(Clone, Default)]
pub(crate) struct UnwindSections {
    pub text: Option<std::ops::Range<u64>>,
    pub got: Option<std::ops::Range<u64>>,
    pub eh_frame: Option<Section>,
    pub eh_frame_hdr: Option<Section>,
    pub debug_frame: Option<Section>,
}

/// Mutable state behind the lock: the lazy DWARF context and the caches.
#[derive(Default)]
struct State {
    /// `None`: not loaded yet; `Some(None)`: no usable DWARF.
    dwarf: Option<Option<dwarf::Context>>,
    cache: FxHashMap<u64, Option<Arc<Symbolized>>>,
    /// Demangled symbol names by symbol index.
    names: FxHashMap<usize, Arc<str>>,
    /// Interned DWARF function and file names.
    strings: FxHashSet<Arc<str>>,
}

/// One opened ELF file (see the [module docs](self)).
pub struct Binary {
    path: PathBuf,
    data: Arc<FileBytes>,
    kind: BinaryKind,
    e_machine: u16,
    build_id: Option<BuildId>,
    debuglink: Option<(String, u32)>,
    segments: Vec<Segment>,
    unwind: UnwindSections,
    has_dwarf: bool,
    debug: Option<DebugFile>,
    symbols: SymbolTable,
    state: Mutex<State>,
}

impl std::fmt::Debug for Binary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Binary")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("build_id", &self.build_id)
            .field("symbols", &self.symbols.len())
            .field("dwarf", &self.has_dwarf())
            .field("debug_file", &self.debug.as_ref().map(|d| &d.path))
            .finish()
    }
}

/// The smallest ELF file: a 32-bit ELF header.
const ELF32_HEADER_SIZE: u64 = 52;

/// The name of DWARF's `.debug_info` in plain and GNU-compressed form.
const DEBUG_INFO: [&str; 2] = [".debug_info", ".zdebug_info"];

impl Binary {
    /// Maps and parses the ELF file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Binary> {
        let path = path.as_ref();
        Binary::parse(path.to_path_buf(), map_elf(path)?)
    }

    /// Parses an ELF file held in memory; `name` is what errors and [`Binary::path`] say.
    pub fn from_bytes(name: impl Into<PathBuf>, bytes: Vec<u8>) -> Result<Binary> {
        Binary::parse(name.into(), Arc::new(FileBytes::Owned(bytes)))
    }

    fn parse(path: PathBuf, data: Arc<FileBytes>) -> Result<Binary> {
        let elf_err = |e: String| Error::path(&path, ErrorKind::Elf(e));
        let file = object::File::parse(&**data).map_err(|e| elf_err(e.to_string()))?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(elf_err(format!("{:?}, not ELF", file.format())));
        }
        let kind = match file.kind() {
            object::ObjectKind::Executable => BinaryKind::Executable,
            object::ObjectKind::Dynamic => BinaryKind::Dynamic,
            object::ObjectKind::Relocatable => BinaryKind::Relocatable,
            _ => BinaryKind::Other,
        };
        let e_machine = e_machine(&data);
        let build_id = file.build_id().ok().flatten().map(BuildId::new);
        let debuglink = file
            .gnu_debuglink()
            .ok()
            .flatten()
            .map(|(name, crc)| (String::from_utf8_lossy(name).into_owned(), crc));
        let segments = file
            .segments()
            .map(|s| {
                let (file_offset, file_size) = s.file_range();
                let executable = match s.flags() {
                    object::SegmentFlags::Elf { p_flags } => p_flags & object::elf::PF_X != 0,
                    _ => false,
                };
                Segment {
                    svma: s.address(),
                    mem_size: s.size(),
                    file_offset,
                    file_size,
                    executable,
                }
            })
            .collect();
        let unwind = UnwindSections {
            text: section_range(&file, ".text"),
            got: section_range(&file, ".got"),
            eh_frame: section(&file, &data, ".eh_frame"),
            eh_frame_hdr: section(&file, &data, ".eh_frame_hdr"),
            debug_frame: section(&file, &data, ".debug_frame"),
        };
        let has_dwarf = has_dwarf(&file);
        let mut syms = Vec::new();
        SymbolTable::collect(&file, &data, 0, &mut syms);
        let mut plt_names = Vec::new();
        SymbolTable::plt(&file, &mut syms, &mut plt_names);
        let symbols = SymbolTable::build(syms, plt_names, &[&data]);
        release_symbol_tables(&file, &data);
        Ok(Binary {
            path,
            data,
            kind,
            e_machine,
            build_id,
            debuglink,
            segments,
            unwind,
            has_dwarf,
            debug: None,
            symbols,
            state: Mutex::new(State::default()),
        })
    }

    /// Attaches a separate debug file (same build, its DWARF and full `.symtab`); from now
    /// on lookups use its DWARF and both files' symbols. Refused (`false`, nothing changes)
    /// when the two files' build ids differ, or when the debug file adds neither DWARF nor
    /// symbols.
    pub fn set_debug_file(&mut self, debug: Binary) -> bool {
        if let (Some(a), Some(b)) = (&self.build_id, &debug.build_id) {
            if !a.matches(b) {
                return false;
            }
        }
        if !debug.has_dwarf && debug.symbols.len() == 0 {
            return false;
        }
        let Ok(file) = object::File::parse(&**debug.data) else {
            return false;
        };
        self.adopt_debug_file(
            &file,
            DebugFile {
                path: debug.path,
                data: debug.data.clone(),
                has_dwarf: debug.has_dwarf,
                debug_frame: debug.unwind.debug_frame,
            },
        );
        true
    }

    /// Opens the file at `path` and attaches it as this binary's debug file, as
    /// [`Binary::set_debug_file`] does with it opened by [`Binary::open`]; `false` (nothing
    /// changes) when it is not an ELF file or is refused there. A debug file with DWARF is
    /// not read as a binary of its own: its symbols are read once, into this binary's table,
    /// and its DWARF (when this binary has none) starts loading on a thread of its own before
    /// them — inflating glibc's `.debug_info` is the longest single step of a recording's
    /// start, and the first sample in libc waits for it.
    pub fn attach_debug_file(&mut self, path: &Path) -> bool {
        match map_elf(path) {
            Ok(data) => self.attach_debug_data(path, data),
            Err(_) => false,
        }
    }

    /// [`Binary::attach_debug_file`] of the file's bytes, `path` naming it.
    pub(crate) fn attach_debug_data(&mut self, path: &Path, data: Arc<FileBytes>) -> bool {
        let Ok(file) = object::File::parse(&**data) else {
            return false;
        };
        if file.format() != object::BinaryFormat::Elf || !has_dwarf(&file) {
            // No DWARF: attached only if it has more symbols (as a binary of its own).
            return match Binary::parse(path.to_path_buf(), data) {
                Ok(d) => d.symbol_count() > self.symbol_count() && self.set_debug_file(d),
                Err(_) => false,
            };
        }
        let build_id = file.build_id().ok().flatten().map(BuildId::new);
        if let (Some(a), Some(b)) = (&self.build_id, &build_id) {
            if !a.matches(b) {
                return false;
            }
        }
        let debug = DebugFile {
            path: path.to_path_buf(),
            data: data.clone(),
            has_dwarf: true,
            debug_frame: section(&file, &data, ".debug_frame"),
        };
        if self.has_dwarf {
            self.adopt_debug_file(&file, debug);
            return true;
        }
        std::thread::scope(|scope| {
            // No thread to spare: the DWARF loads at the first lookup.
            let dwarf = std::thread::Builder::new()
                .name("dwarf".into())
                .spawn_scoped(scope, || dwarf::Context::load(&data));
            self.adopt_debug_file(&file, debug);
            if let Ok(Ok(ctx)) = dwarf.map(|h| h.join()) {
                self.state
                    .get_mut()
                    .unwrap_or_else(|e| e.into_inner())
                    .dwarf = Some(ctx);
            }
        });
        true
    }

    /// Reads the symbols of `file`, the debug file, into this binary's table and makes it
    /// the binary's debug file (what was looked up before is forgotten).
    fn adopt_debug_file(&mut self, file: &object::File<'_>, debug: DebugFile) {
        let mut syms: Vec<Sym> = self.symbols.iter().copied().collect();
        SymbolTable::collect(file, &debug.data, 1, &mut syms);
        let plt_names = std::mem::take(&mut self.symbols.plt_names);
        self.symbols = SymbolTable::build(syms, plt_names, &[&self.data, &debug.data]);
        release_symbol_tables(file, &debug.data);
        self.debug = Some(debug);
        *self.state.get_mut().unwrap_or_else(|e| e.into_inner()) = State::default();
    }

    /// The path it was opened from (or the name given to [`Binary::from_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The attached debug file's path, if any.
    pub fn debug_file(&self) -> Option<&Path> {
        self.debug.as_ref().map(|d| d.path.as_path())
    }

    /// The `NT_GNU_BUILD_ID`, if the file has one.
    pub fn build_id(&self) -> Option<&BuildId> {
        self.build_id.as_ref()
    }

    /// `ET_EXEC`, `ET_DYN`, …
    pub fn kind(&self) -> BinaryKind {
        self.kind
    }

    /// `e_machine` (62 = `EM_X86_64`).
    pub fn e_machine(&self) -> u16 {
        self.e_machine
    }

    /// `.gnu_debuglink`: the debug file's name and CRC-32.
    pub fn debuglink(&self) -> Option<(&str, u32)> {
        self.debuglink.as_ref().map(|(n, c)| (n.as_str(), *c))
    }

    /// The PT_LOAD segments.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The mapping an `MMAP`/`MMAP2` record (start, len, pgoff) makes of this file (see
    /// [`Mapping`]); `None` if no segment holds `pgoff`.
    pub fn mapping(&self, start: u64, len: u64, pgoff: u64) -> Option<Mapping> {
        Mapping::from_segments(&self.segments, start, len, pgoff)
    }

    /// Whether DWARF debug info (`.debug_info`) is there, in the file or its debug file.
    pub fn has_dwarf(&self) -> bool {
        self.has_dwarf || self.debug.as_ref().is_some_and(|d| d.has_dwarf)
    }

    /// Whether the unwinder can use something of this file (`.eh_frame` or
    /// `.debug_frame` with bytes).
    pub fn has_unwind_info(&self) -> bool {
        let u = self.unwind_sections();
        u.eh_frame.is_some() || u.debug_frame.is_some()
    }

    /// The number of code symbols (after deduplication by address).
    pub fn symbol_count(&self) -> usize {
        self.symbols.len()
    }

    /// The code symbols, sorted by address: (start, size (0: unsized), raw name).
    pub fn symbols(&self) -> impl Iterator<Item = (u64, u64, &str)> + '_ {
        self.symbols
            .iter()
            .map(move |s| (s.start, s.size, self.raw_name(s).unwrap_or("")))
    }

    fn raw_name(&self, s: &Sym) -> Option<&str> {
        let data: &[u8] = match s.src {
            0 => &self.data,
            symbols::PLT => &self.symbols.plt_names,
            _ => &self.debug.as_ref()?.data,
        };
        std::str::from_utf8(symbols::name_at(data, s.name_off)?).ok()
    }

    pub(crate) fn unwind_sections(&self) -> UnwindSections {
        let mut u = self.unwind.clone();
        if u.eh_frame.is_none() && u.debug_frame.is_none() {
            u.debug_frame = self.debug.as_ref().and_then(|d| d.debug_frame.clone());
        }
        u
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The symbol-table entry containing `svma` (no DWARF; cheap), demangled.
    pub fn symbol(&self, svma: u64) -> Option<Symbol> {
        let mut st = self.lock();
        self.symbol_locked(&mut st, svma)
    }

    fn symbol_locked(&self, st: &mut State, svma: u64) -> Option<Symbol> {
        let (i, s) = self.symbols.find(svma)?;
        let name = match st.names.get(&i) {
            Some(n) => n.clone(),
            None => {
                let n: Arc<str> = demangle(self.raw_name(s)?).into();
                st.names.insert(i, n.clone());
                n
            }
        };
        Some(Symbol {
            name,
            start: s.start,
            size: (s.size > 0).then_some(s.size),
        })
    }

    /// The frames at `svma` (an address as the ELF file states it; see [`Mapping`]), or
    /// `None` when neither DWARF nor a symbol covers it. For a return address from an
    /// unwinder or a callchain, look up `svma - 1` (the call instruction), not the return
    /// address itself, which may be the first instruction of the next line or function.
    ///
    /// Answers are cached per address; a repeated address does not allocate.
    pub fn lookup(&self, svma: u64) -> Option<Arc<Symbolized>> {
        let mut st = self.lock();
        if let Some(hit) = st.cache.get(&svma) {
            return hit.clone();
        }
        let answer = self.symbolize(&mut st, svma).map(Arc::new);
        st.cache.insert(svma, answer.clone());
        answer
    }

    /// Loads what [`Binary::lookup`] would load on first use (the DWARF context), now.
    pub fn warm(&self) {
        let mut st = self.lock();
        if st.dwarf.is_none() {
            st.dwarf = Some(self.load_dwarf());
        }
    }

    fn symbolize(&self, st: &mut State, svma: u64) -> Option<Symbolized> {
        let symbol = self.symbol_locked(st, svma);
        if st.dwarf.is_none() {
            st.dwarf = Some(self.load_dwarf());
        }
        let State { dwarf, strings, .. } = st;
        let mut frames = Vec::new();
        let mut location_only = None;
        if let Some(Some(ctx)) = dwarf {
            ctx.frames(svma, &mut frames, &mut |s| intern(strings, s));
            if frames.is_empty() && symbol.is_some() {
                location_only = ctx.location(svma, &mut |s| intern(strings, s));
            }
        }
        if frames.is_empty() {
            let symbol = symbol?;
            let (file, line, column) = location_only.unwrap_or_default();
            let source = if file.is_some() {
                Source::Dwarf
            } else {
                Source::Symtab
            };
            return Some(Symbolized {
                frames: vec![Frame {
                    function: symbol.name.clone(),
                    file,
                    line,
                    column,
                }],
                symbol: Some(symbol),
                source,
            });
        }
        // The outermost frame is the function the symbol table names, as perf shows it (of
        // aliases like memcpy/memmove, DWARF may name the other one); DWARF names it only where
        // no symbol covers the address.
        if let (Some(last), Some(s)) = (frames.last_mut(), &symbol) {
            last.function = s.name.clone();
        }
        Some(Symbolized {
            frames,
            symbol,
            source: Source::Dwarf,
        })
    }

    fn load_dwarf(&self) -> Option<dwarf::Context> {
        let data = match &self.debug {
            Some(d) if d.has_dwarf => &d.data,
            _ if self.has_dwarf => &self.data,
            _ => return None,
        };
        dwarf::Context::load(data)
    }
}

/// The bytes of the ELF file at `path`: only a regular file with an ELF header is read (a
/// recording can name any path: `/proc/self/pagemap`, a FIFO, a device).
fn map_elf(path: &Path) -> Result<Arc<FileBytes>> {
    let map = FileBytes::open_regular(path, ELF32_HEADER_SIZE)
        .map_err(|e| Error::path(path, e.into()))?;
    if !map.starts_with(b"\x7fELF") {
        return Err(Error::path(
            path,
            ErrorKind::Elf("not an ELF file (no \\x7fELF magic)".into()),
        ));
    }
    Ok(Arc::new(map))
}

fn intern(set: &mut FxHashSet<Arc<str>>, s: &str) -> Arc<str> {
    if let Some(a) = set.get(s) {
        return a.clone();
    }
    let a: Arc<str> = s.into();
    set.insert(a.clone());
    a
}

fn e_machine(data: &[u8]) -> u16 {
    let little = data.get(5) != Some(&2);
    match data.get(18..20) {
        Some(&[a, b]) if little => u16::from_le_bytes([a, b]),
        Some(&[a, b]) => u16::from_be_bytes([a, b]),
        _ => 0,
    }
}

fn has_dwarf(file: &object::File<'_>) -> bool {
    DEBUG_INFO.iter().any(|n| {
        file.section_by_name(n)
            .is_some_and(|s| s.size() > 0 && s.file_range().is_some())
    })
}

/// Drops the pages of the symbol and string tables from the resident set once the symbols are
/// collected: the entries are copied, and a name is read again (from the page cache) only when
/// a lookup names its symbol. node's tables are ~15 MB that stayed resident for the whole run.
fn release_symbol_tables(file: &object::File<'_>, data: &FileBytes) {
    for name in [".symtab", ".strtab", ".dynsym", ".dynstr"] {
        if let Some((offset, size)) = file.section_by_name(name).and_then(|s| s.file_range()) {
            data.release_range(offset, offset.saturating_add(size));
        }
    }
}

fn section_range(file: &object::File<'_>, name: &str) -> Option<std::ops::Range<u64>> {
    let s = file.section_by_name(name)?;
    Some(s.address()..s.address().checked_add(s.size())?)
}

/// A section's range and bytes: shared with the file when stored plainly, decompressed
/// into a buffer when compressed; `None` for `SHT_NOBITS` (a debug file's copy of
/// `.eh_frame`) or bytes outside the file.
pub(crate) fn section(
    file: &object::File<'_>,
    data: &Arc<FileBytes>,
    name: &str,
) -> Option<Section> {
    let s = file.section_by_name(name)?;
    let svma = s.address()..s.address().checked_add(s.size())?;
    let compressed = s.compressed_file_range().ok()?;
    let bytes = if compressed.format == object::CompressionFormat::None {
        let (off, size) = s.file_range()?;
        let start = usize::try_from(off).ok()?;
        let end = start.checked_add(usize::try_from(size).ok()?)?;
        data.get(start..end)?;
        SectionBytes::shared(data.clone(), start..end)
    } else {
        let bytes = SectionBytes::owned(s.uncompressed_data().ok()?.into_owned());
        // The compressed bytes are read once: their pages leave the resident set (libc6-dbg's
        // 4 MB of compressed DWARF stayed in it for the whole run).
        data.release_range(
            compressed.offset,
            compressed.offset.saturating_add(compressed.compressed_size),
        );
        bytes
    };
    if bytes.is_empty() {
        return None;
    }
    Some(Section { svma, data: bytes })
}
