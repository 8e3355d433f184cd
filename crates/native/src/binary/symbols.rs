//! The symbol table of a binary: `.symtab`, else `.dynsym` (+ a separate debug file's
//! `.symtab`), code symbols only, sorted once by address.
//!
//! Names are not copied: each entry keeps the offset of its name in the file's bytes (`src`
//! says which file: 0 the binary, 1 its debug file, [`PLT`] the table's own names), and a name
//! ends at its NUL, found when the name is read ([`name_at`]): node's 110,000 symbols have
//! 7.5 MB of names, and finding every name's end while collecting was a fifth of the load.
//! The symbols are read through object's ELF types, not its format-independent ones (a call
//! through an enum per field of each symbol was most of the rest). A lookup is one binary
//! search.
//!
//! x86-64 PLT stubs get the symbols perf synthesizes for them, `name@plt`: the `n`th
//! `.rela.plt` entry's symbol names the `n`th stub (of `.plt.sec` when the binary has one, else
//! of `.plt` after its 16-byte header), 16 bytes each.

use object::elf;
use object::read::elf::{ElfFile, FileHeader, Sym as _};
use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, SymbolIndex};

/// `src` of the synthesized `name@plt` symbols: their names are in [`SymbolTable`]'s own
/// buffer.
pub(crate) const PLT: u8 = 2;

/// One code symbol.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sym {
    /// First address (SVMA).
    pub start: u64,
    /// One past the last address: `start + size` for sized symbols; for unsized ones the
    /// next symbol's start or the end of the symbol's section.
    pub end: u64,
    /// Size from the symbol table (0: unsized).
    pub size: u64,
    /// Where the name is: file `src`, from byte `name_off` to the next NUL (one is there:
    /// see [`SymbolTable::collect`]).
    pub name_off: usize,
    pub src: u8,
    /// Lower is preferred among symbols at the same address: global function, local
    /// function, weak function, label.
    rank: u8,
    /// Position in the symbol tables (earlier is preferred, as in perf).
    order: u32,
}

/// The name at `off` in `bytes`: up to its NUL (`None` without one).
pub(crate) fn name_at(bytes: &[u8], off: usize) -> Option<&[u8]> {
    let rest = bytes.get(off..)?;
    rest.get(..memchr::memchr(0, rest)?)
}

/// Sorted, deduplicated code symbols.
#[derive(Debug, Default)]
pub(crate) struct SymbolTable {
    syms: Vec<Sym>,
    /// Names of the synthesized PLT symbols (`src` [`PLT`]), each followed by a NUL.
    pub plt_names: Vec<u8>,
    /// `syms[i].start`, searched instead of `syms` (a fifth of the bytes: node's 110,000
    /// symbols are 0.9 MB of starts against 4.4 MB of entries, so a lookup misses the cache
    /// less).
    starts: Vec<u64>,
}

impl SymbolTable {
    /// Collects the code symbols of `file` (parsed from `data`), tagged `src`: functions
    /// (`STT_FUNC`, `STT_GNU_IFUNC`) and untyped labels in executable sections, defined in a
    /// section (not undefined, not absolute). Only names that end within their string table
    /// are taken.
    pub fn collect(file: &object::File<'_>, data: &[u8], src: u8, out: &mut Vec<Sym>) {
        match file {
            object::File::Elf32(elf) => collect_elf(file, elf, data, src, out),
            object::File::Elf64(elf) => collect_elf(file, elf, data, src, out),
            _ => {}
        }
    }

    /// Appends a `name@plt` symbol per x86-64 PLT stub of `file` to `out`, its name to
    /// `names` (see the [module docs](self)). Other machines and files without `.rela.plt`
    /// add nothing.
    pub fn plt(file: &object::File<'_>, out: &mut Vec<Sym>, names: &mut Vec<u8>) {
        const ENTRY: u64 = 16;
        const R_X86_64_JUMP_SLOT: u64 = 7;
        if file.architecture() != object::Architecture::X86_64 || !file.is_little_endian() {
            return;
        }
        let (Some(rela), Some(dynsyms)) = (
            file.section_by_name(".rela.plt")
                .and_then(|s| s.data().ok()),
            file.dynamic_symbol_table(),
        ) else {
            return;
        };
        let stubs = match file.section_by_name(".plt.sec") {
            Some(sec) => Some((sec.address(), sec.size())),
            None => file.section_by_name(".plt").map(|p| {
                (
                    p.address().saturating_add(ENTRY),
                    p.size().saturating_sub(ENTRY),
                )
            }),
        };
        let Some((first, len)) = stubs else { return };
        let count = (len / ENTRY).min(rela.len() as u64 / 24);
        for (i, entry) in rela.chunks_exact(24).take(count as usize).enumerate() {
            let Some(info) = entry.get(8..16).and_then(|b| b.try_into().ok()) else {
                continue;
            };
            let info = u64::from_le_bytes(info);
            if info & 0xffff_ffff != R_X86_64_JUMP_SLOT {
                continue;
            }
            let index = SymbolIndex((info >> 32) as usize);
            let Some(name) = dynsyms
                .symbol_by_index(index)
                .ok()
                .and_then(|s| s.name_bytes().ok())
                .filter(|n| !n.is_empty())
            else {
                continue;
            };
            let start = first.saturating_add(ENTRY * i as u64);
            let name_off = names.len();
            names.extend_from_slice(name);
            names.extend_from_slice(b"@plt\0");
            out.push(Sym {
                start,
                end: start.saturating_add(ENTRY),
                size: ENTRY,
                name_off,
                src: PLT,
                rank: 0,
                order: u32::try_from(out.len()).unwrap_or(u32::MAX),
            });
        }
    }

    /// Sorts and deduplicates, and bounds unsized symbols by the next symbol. Of the symbols
    /// at one address (aliases: `memcpy`/`memmove`, C++ constructors) the one perf shows is
    /// kept, so that names agree with `perf report`: sized, then not weak, then global, then
    /// fewer leading underscores, then a separate debug file's `.symtab` (which perf reads
    /// instead of the binary's `.dynsym`), then the longer name (perf's last rule: glibc's
    /// `__memmove_evex_unaligned_erms` over `__memcpy_evex_unaligned_erms`,
    /// `cfree@GLIBC_2.2.5` over `free`), then the first in table order (of glibc's
    /// `pthread_rwlock_rdlock@GLIBC_2.2.5` and `…@@GLIBC_2.34`, the one listed first).
    /// `files` are the bytes of the files the symbols' names are in, by `src` (the binary,
    /// its debug file).
    pub fn build(syms: Vec<Sym>, plt_names: Vec<u8>, files: &[&[u8]]) -> SymbolTable {
        // One u128 per symbol orders the symbols at one start (unsized, rank, underscores,
        // later source, longer name, table order): comparing it is one instruction pair where
        // the tuple was six comparisons. The first two need no name: a name is read only for
        // the symbols still tied after them (node: a symbol in ten).
        const NAME_BITS: u32 = 13;
        let shorter = |len: usize| {
            u128::from((1u32 << NAME_BITS) - 1 - (len as u32).min((1 << NAME_BITS) - 1))
        };
        let cheap = |s: &Sym| u128::from(s.size == 0) << 63 | u128::from(s.rank & 0x3) << 61;
        let key = |s: &Sym| {
            let bytes = match s.src {
                PLT => &plt_names[..],
                i => files.get(usize::from(i)).copied().unwrap_or_default(),
            };
            let name = name_at(bytes, s.name_off).unwrap_or_default();
            let underscores = name.iter().take_while(|&&b| b == b'_').count().min(255) as u8;
            cheap(s)
                | u128::from(underscores) << 53
                | u128::from(u8::MAX - s.src) << 45
                | shorter(name.len()) << 32
                | u128::from(s.order)
        };
        let order = by_start(&syms);
        let mut kept: Vec<Sym> = Vec::new();
        for run in order.chunk_by(|x, y| x.0 == y.0) {
            let member = |&(_, i): &(u64, u32)| syms.get(i as usize);
            let best = if run.len() == 1 {
                run.first().and_then(member)
            } else {
                let least = run.iter().filter_map(member).map(cheap).min();
                run.iter()
                    .filter_map(member)
                    .filter(|s| Some(cheap(s)) == least)
                    .min_by_key(|s| key(s))
            };
            kept.extend(best.copied());
        }
        let starts: Vec<u64> = kept.iter().map(|s| s.start).collect();
        for (s, &next) in kept.iter_mut().zip(starts.iter().skip(1)) {
            if s.size == 0 {
                s.end = s.end.min(next);
            }
        }
        SymbolTable {
            syms: kept,
            plt_names,
            starts,
        }
    }

    /// The symbol containing `svma`: the nearest one at or before it whose range covers it.
    pub fn find(&self, svma: u64) -> Option<(usize, &Sym)> {
        let i = self
            .starts
            .partition_point(|&start| start <= svma)
            .checked_sub(1)?;
        let s = self.syms.get(i)?;
        (svma < s.end || svma == s.start).then_some((i, s))
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Sym> {
        self.syms.iter()
    }
}

/// [`SymbolTable::collect`] of an ELF file.
fn collect_elf<'data, Elf: FileHeader<Endian = object::Endianness>>(
    file: &object::File<'data>,
    elf: &ElfFile<'data, Elf, &'data [u8]>,
    data: &[u8],
    src: u8,
    out: &mut Vec<Sym>,
) {
    let endian = elf.endian();
    // Per section (by index): its end address and whether it is executable, found once
    // (a large binary has 10^5 symbols in a few dozen sections).
    let mut sections: Vec<Option<(u64, bool)>> = Vec::new();
    for sec in file.sections() {
        let i = sec.index().0;
        if sections.len() <= i {
            sections.resize(i + 1, None);
        }
        // A debug file's `.text` is SHT_NOBITS (object calls it uninitialized data), so
        // executable means the section's flag, not its kind.
        let exec = matches!(sec.kind(), object::SectionKind::Text)
            || matches!(sec.flags(), object::SectionFlags::Elf { sh_flags } if sh_flags & u64::from(elf::SHF_EXECINSTR) != 0);
        if let (Some(slot), Some(end)) =
            (sections.get_mut(i), sec.address().checked_add(sec.size()))
        {
            *slot = Some((end, exec));
        }
    }
    // perf reads `.symtab`, and `.dynsym` only when there is none (`.dynsym` is a subset of
    // it; reading both costs a large binary's load time twice). Entry 0 is the null symbol.
    let table = if elf.elf_symbol_table().len() > 1 {
        elf.elf_symbol_table()
    } else {
        elf.elf_dynamic_symbol_table()
    };
    // The string table's bytes in `data`. When it ends with a NUL, every name ends within it;
    // otherwise each name's end is checked here.
    let Some((names_at, names)) = file
        .section_by_index(table.string_section())
        .ok()
        .and_then(|s| s.file_range())
        .and_then(|(off, size)| {
            let at = usize::try_from(off).ok()?;
            Some((
                at,
                data.get(at..at.checked_add(usize::try_from(size).ok()?)?)?,
            ))
        })
    else {
        return;
    };
    let terminated = names.last() == Some(&0);
    out.reserve(table.len());
    for (i, sym) in table.symbols().iter().enumerate().skip(1) {
        let weak = sym.st_bind() == elf::STB_WEAK;
        let global = sym.st_bind() != elf::STB_LOCAL;
        let rank = match sym.st_type() {
            elf::STT_FUNC | elf::STT_GNU_IFUNC if !weak && global => 0,
            elf::STT_FUNC | elf::STT_GNU_IFUNC if !weak => 1,
            elf::STT_FUNC | elf::STT_GNU_IFUNC => 2,
            elf::STT_OBJECT | elf::STT_COMMON | elf::STT_SECTION | elf::STT_FILE | elf::STT_TLS => {
                continue
            }
            _ => 3,
        };
        // The section it is defined in (not undefined, absolute or common).
        let section = match sym.st_shndx(endian) {
            elf::SHN_XINDEX => match table.shndx(endian, SymbolIndex(i)) {
                Some(0) | None => continue,
                Some(index) => index as usize,
            },
            index if index != elf::SHN_UNDEF && index < elf::SHN_LORESERVE => usize::from(index),
            _ => continue,
        };
        let Some((sec_end, exec)) = sections.get(section).copied().flatten() else {
            continue;
        };
        if rank == 3 && !exec {
            continue;
        }
        let name = sym.st_name(endian) as usize;
        let Some(rest) = names.get(name..) else {
            continue;
        };
        if matches!(rest, [] | [0, ..] | [b'$', ..] | [b'.', b'L', ..])
            || (!terminated && memchr::memchr(0, rest).is_none())
        {
            continue;
        }
        let start = sym.st_value(endian).into();
        let size: u64 = sym.st_size(endian).into();
        let end = if size > 0 {
            start.saturating_add(size)
        } else {
            sec_end
        };
        if end <= start && size > 0 {
            continue;
        }
        out.push(Sym {
            start,
            end,
            size,
            name_off: names_at + name,
            src,
            rank,
            order: u32::try_from(out.len()).unwrap_or(u32::MAX),
        });
    }
}

/// `(start, index)` of `syms`, sorted by start (symbols at one start in table order): a radix
/// sort on the bytes in which the starts differ (a binary's symbols share their high bytes:
/// three or four passes). node's 110,000 symbols: a few million instructions, against ~48 M
/// for a comparison sort.
fn by_start(syms: &[Sym]) -> Vec<(u64, u32)> {
    let mut a: Vec<(u64, u32)> = syms.iter().zip(0u32..).map(|(s, i)| (s.start, i)).collect();
    let first = a.first().map_or(0, |&(s, _)| s);
    let differ = a.iter().fold(0u64, |bits, &(s, _)| bits | (s ^ first));
    let mut b = vec![(0u64, 0u32); a.len()];
    for shift in (0..64).step_by(8) {
        if (differ >> shift) & 0xff == 0 {
            continue;
        }
        let mut at = [0usize; 256];
        for &(s, _) in &a {
            if let Some(n) = at.get_mut(((s >> shift) & 0xff) as usize) {
                *n += 1;
            }
        }
        let mut sum = 0;
        for n in &mut at {
            (*n, sum) = (sum, sum + *n);
        }
        for &e in &a {
            if let Some(n) = at.get_mut(((e.0 >> shift) & 0xff) as usize) {
                if let Some(slot) = b.get_mut(*n) {
                    *slot = e;
                }
                *n += 1;
            }
        }
        std::mem::swap(&mut a, &mut b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Of the symbols at each start, `build` keeps the one a comparison sort of the whole
    /// tuple puts first, on symbols whose starts share high bytes or not, with many aliases
    /// (symbols at one address) and every tie-breaking field varied; unsized symbols end at
    /// the next start.
    #[test]
    fn build_keeps_the_symbol_the_comparison_order_puts_first() {
        let mut rng = profkit_testkit::Xorshift::new(27);
        // Names of 1 to 4 bytes, 0 to 2 of them leading underscores, each with its NUL.
        let mut names = Vec::new();
        let mut offs = Vec::new();
        for u in 0..3 {
            for len in 1..5usize {
                offs.push(names.len());
                names.extend((0..len).map(|i| if i < u.min(len) { b'_' } else { b'f' }));
                names.push(0);
            }
        }
        for round in 0..200 {
            let n = rng.below(300) as usize;
            let spread = [0xff, 0xffff, 0xffff_ffff, u64::MAX - 16][round % 4];
            let base = rng.below(1 << 40);
            // A third as many starts as symbols: aliases at most of them.
            let starts: Vec<u64> = (0..n / 3 + 1)
                .map(|_| base.wrapping_add(rng.below(spread)))
                .collect();
            let syms: Vec<Sym> = (0..n as u32)
                .map(|order| {
                    let start = starts[rng.below(starts.len() as u64) as usize];
                    let size = rng.below(3);
                    Sym {
                        start,
                        end: start + if size > 0 { size } else { 1 + rng.below(9) },
                        size,
                        name_off: offs[rng.below(offs.len() as u64) as usize],
                        src: rng.below(3) as u8,
                        rank: rng.below(4) as u8,
                        order,
                    }
                })
                .collect();
            let name = |s: &Sym| name_at(&names, s.name_off).unwrap();
            let tuple = |s: &Sym| {
                (
                    s.start,
                    s.size == 0,
                    s.rank,
                    name(s).iter().take_while(|&&b| b == b'_').count(),
                    u8::MAX - s.src,
                    usize::MAX - name(s).len(),
                    s.order,
                )
            };
            let mut want = syms.clone();
            want.sort_by_key(|s| tuple(s));
            want.dedup_by_key(|s| s.start);
            let table = SymbolTable::build(syms, names.clone(), &[&names, &names]);
            let got: Vec<(u64, u32)> = table.iter().map(|s| (s.start, s.order)).collect();
            let want_kept: Vec<(u64, u32)> = want.iter().map(|s| (s.start, s.order)).collect();
            assert_eq!(got, want_kept, "round {round}");
            for (s, next) in table.iter().zip(table.iter().skip(1)) {
                let w = want.iter().find(|w| w.order == s.order).unwrap();
                let end = if s.size == 0 {
                    w.end.min(next.start)
                } else {
                    w.end
                };
                assert_eq!(s.end, end, "round {round}");
            }
        }
    }
}
