//! The symbol table of a binary: `.symtab`, else `.dynsym` (+ a separate debug file's
//! `.symtab`), code symbols only, sorted once by address.
//!
//! Names are not copied: each entry keeps the offset and length of its name in the file's
//! bytes (`src` says which file: 0 the binary, 1 its debug file, [`PLT`] the table's own
//! names). A lookup is one binary search.
//!
//! x86-64 PLT stubs get the symbols perf synthesizes for them, `name@plt`: the `n`th
//! `.rela.plt` entry's symbol names the `n`th stub (of `.plt.sec` when the binary has one, else
//! of `.plt` after its 16-byte header), 16 bytes each.

use object::{
    Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, SectionIndex, SymbolIndex, SymbolKind,
};

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
    /// Where the name is: file `src`, bytes `name_off..name_off + name_len`.
    pub name_off: usize,
    pub name_len: u32,
    pub src: u8,
    /// Lower is preferred among symbols at the same address: global function, local
    /// function, weak function, label.
    rank: u8,
    /// Leading underscores of the name (fewer is preferred).
    underscores: u8,
    /// Position in the symbol tables (earlier is preferred, as in perf).
    order: u32,
}

/// Sorted, deduplicated code symbols.
#[derive(Debug, Default)]
pub(crate) struct SymbolTable {
    syms: Vec<Sym>,
    /// Names of the synthesized PLT symbols (`src` [`PLT`]).
    pub plt_names: String,
    /// `syms[i].start`, searched instead of `syms` (a sixth of the bytes: node's 185,000
    /// symbols are 1.5 MB of starts against 9 MB of entries, so a lookup misses the cache
    /// less).
    starts: Vec<u64>,
}

impl SymbolTable {
    /// Collects the code symbols of `file` (parsed from `data`), tagged `src`: functions
    /// (`STT_FUNC`, `STT_GNU_IFUNC`) and untyped labels in executable sections, defined in a
    /// section (not undefined, not absolute).
    pub fn collect(file: &object::File<'_>, data: &[u8], src: u8, out: &mut Vec<Sym>) {
        let base = data.as_ptr() as usize;
        // Per section (by index): its end address and whether it is executable, found once
        // (a large binary has 10^5 symbols in a few dozen sections).
        let sections: Vec<Option<(u64, bool)>> = {
            let mut v = Vec::new();
            for sec in file.sections() {
                let i = sec.index().0;
                if v.len() <= i {
                    v.resize(i + 1, None);
                }
                // A debug file's `.text` is SHT_NOBITS (object calls it uninitialized data),
                // so executable means the section's flag, not its kind.
                let exec = matches!(sec.kind(), object::SectionKind::Text)
                    || matches!(sec.flags(), object::SectionFlags::Elf { sh_flags } if sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0);
                if let (Some(slot), Some(end)) =
                    (v.get_mut(i), sec.address().checked_add(sec.size()))
                {
                    *slot = Some((end, exec));
                }
            }
            v
        };
        let section_end = |index: Option<SectionIndex>| -> Option<(u64, bool)> {
            sections.get(index?.0).copied().flatten()
        };
        // perf reads `.symtab`, and `.dynsym` only when there is none (`.dynsym` is a subset
        // of it; reading both costs a large binary's load time twice).
        let symbols = if file.symbols().next().is_some() {
            file.symbols()
        } else {
            file.dynamic_symbols()
        };
        for sym in symbols {
            let rank = match (sym.kind(), sym.is_weak(), sym.is_global()) {
                (SymbolKind::Text, false, true) => 0,
                (SymbolKind::Text, false, false) => 1,
                (SymbolKind::Text, true, _) => 2,
                (SymbolKind::Unknown, _, _) => 3,
                _ => continue,
            };
            let Some((sec_end, exec)) = section_end(sym.section_index()) else {
                continue;
            };
            if rank == 3 && !exec {
                continue;
            }
            let Ok(name) = sym.name_bytes() else { continue };
            if name.is_empty() || name.starts_with(b"$") || name.starts_with(b".L") {
                continue;
            }
            let Some(name_off) = (name.as_ptr() as usize).checked_sub(base) else {
                continue;
            };
            let Ok(name_len) = u32::try_from(name.len()) else {
                continue;
            };
            if name_off
                .checked_add(name.len())
                .is_none_or(|end| end > data.len())
            {
                continue;
            }
            let start = sym.address();
            let size = sym.size();
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
                name_off,
                name_len,
                src,
                rank,
                underscores: name.iter().take_while(|&&b| b == b'_').count().min(255) as u8,
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
    /// Appends a `name@plt` symbol per x86-64 PLT stub of `file` to `out`, its name to
    /// `names` (see the [module docs](self)). Other machines and files without `.rela.plt`
    /// add nothing.
    pub fn plt(file: &object::File<'_>, out: &mut Vec<Sym>, names: &mut String) {
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
                .and_then(|s| s.name().ok())
                .filter(|n| !n.is_empty())
            else {
                continue;
            };
            let start = first.saturating_add(ENTRY * i as u64);
            let name_off = names.len();
            names.push_str(name);
            names.push_str("@plt");
            let Ok(name_len) = u32::try_from(names.len() - name_off) else {
                continue;
            };
            out.push(Sym {
                start,
                end: start.saturating_add(ENTRY),
                size: ENTRY,
                name_off,
                name_len,
                src: PLT,
                rank: 0,
                underscores: 0,
                order: u32::try_from(out.len()).unwrap_or(u32::MAX),
            });
        }
    }

    pub fn build(syms: Vec<Sym>, plt_names: String) -> SymbolTable {
        // One u128 per symbol orders (start, unsized, rank, underscores, later source, longer
        // name, table order): comparing it is one instruction pair where the tuple was seven
        // comparisons. It is computed once per symbol, not twice per comparison (node's 185,000
        // symbols: 98 M instructions → ~30 M); the keys are unique (table order), so the order
        // is the same.
        const NAME_BITS: u32 = 13;
        let shorter =
            |len: u32| u128::from((1u32 << NAME_BITS) - 1 - len.min((1 << NAME_BITS) - 1));
        let key = |s: &Sym| {
            u128::from(s.start) << 64
                | u128::from(s.size == 0) << 63
                | u128::from(s.rank & 0x3) << 61
                | u128::from(s.underscores) << 53
                | u128::from(u8::MAX - s.src) << 45
                | shorter(s.name_len) << 32
                | u128::from(s.order)
        };
        let order = sorted_order(&syms, key);
        let mut syms: Vec<Sym> = order
            .iter()
            .filter_map(|&i| syms.get(i as usize).copied())
            .collect();
        syms.dedup_by_key(|s| s.start);
        let starts: Vec<u64> = syms.iter().map(|s| s.start).skip(1).collect();
        for (s, next) in syms.iter_mut().zip(starts) {
            if s.size == 0 {
                s.end = s.end.min(next);
            }
        }
        syms.shrink_to_fit();
        let starts = syms.iter().map(|s| s.start).collect();
        SymbolTable {
            syms,
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

/// The order of `syms` by `key`, whose top 64 bits are the start: a radix sort of the starts on
/// the bytes in which they differ (a binary's symbols share their high bytes: three or four
/// passes), then the few symbols that share a start by the whole key. node's 185,000 symbols:
/// ~10 M instructions, against ~48 M for a comparison sort of the keys.
fn sorted_order(syms: &[Sym], key: impl Fn(&Sym) -> u128) -> Vec<u32> {
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
    for run in a.chunk_by_mut(|x, y| x.0 == y.0) {
        if run.len() > 1 {
            run.sort_unstable_by_key(|&(_, i)| syms.get(i as usize).map(&key));
        }
    }
    a.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The radix order is the comparison sort's, on symbols whose starts share high bytes or
    /// not, with many aliases (symbols at one address) and every tie-breaking field varied.
    #[test]
    fn the_radix_order_is_the_comparison_order() {
        let mut rng = profkit_testkit::Xorshift::new(27);
        for round in 0..200 {
            let n = rng.below(300) as usize;
            let spread = [0xff, 0xffff, 0xffff_ffff, u64::MAX][round % 4];
            let base = rng.below(1 << 40);
            // A third as many starts as symbols: aliases at most of them.
            let starts: Vec<u64> = (0..n / 3 + 1)
                .map(|_| base.wrapping_add(rng.below(spread)))
                .collect();
            let syms: Vec<Sym> = (0..n as u32)
                .map(|order| Sym {
                    start: starts[rng.below(starts.len() as u64) as usize],
                    end: 0,
                    size: rng.below(3),
                    name_off: 0,
                    name_len: rng.below(20) as u32,
                    src: rng.below(3) as u8,
                    rank: rng.below(4) as u8,
                    underscores: rng.below(3) as u8,
                    order,
                })
                .collect();
            let key = |s: &Sym| {
                u128::from(s.start) << 64
                    | u128::from(s.rank) << 40
                    | u128::from(s.name_len) << 32
                    | u128::from(s.order)
            };
            let mut want: Vec<u32> = (0..n as u32).collect();
            want.sort_by_key(|&i| key(&syms[i as usize]));
            assert_eq!(sorted_order(&syms, key), want, "round {round}");
        }
    }
}
