//! Kernel symbols from `/proc/kallsyms` text.
//!
//! Each line is `<hex address> <type letter> <name>[\t[<module>]]`. Only code symbols are
//! kept (types `t`, `T`, `w`, `W`), sorted by address; a symbol extends to the next one.
//! When `kernel.kptr_restrict` hides addresses from the reader, every address reads 0:
//! [`Kallsyms::is_restricted`] says so, and a caller shows kernel frames as `[kernel]`.

use std::path::Path;

use crate::build_id::{build_id_from_notes, BuildId};
use crate::error::{Error, Result};

/// The last symbol covers at most this many bytes (nothing bounds it otherwise).
const LAST_SYMBOL_SPAN: u64 = 1 << 20;

#[derive(Debug, Clone, Copy)]
struct KSym {
    start: u64,
    name: (u32, u32),
    module: Option<(u32, u32)>,
}

/// A kernel symbol (see [`Kallsyms::lookup`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSymbol<'a> {
    /// The name as kallsyms spells it.
    pub name: &'a str,
    /// Its address.
    pub start: u64,
    /// The module it belongs to (`None`: the kernel image).
    pub module: Option<&'a str>,
}

/// Parsed kallsyms (see the [module docs](self)).
#[derive(Debug, Default)]
pub struct Kallsyms {
    text: String,
    syms: Vec<KSym>,
    restricted: bool,
}

impl Kallsyms {
    /// Parses kallsyms text. Malformed lines are skipped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut names = String::new();
        let mut syms = Vec::new();
        let mut lines = 0usize;
        let mut zero = 0usize;
        let push = |names: &mut String, s: &str| -> Option<(u32, u32)> {
            let off = u32::try_from(names.len()).ok()?;
            let len = u32::try_from(s.len()).ok()?;
            names.push_str(s);
            Some((off, len))
        };
        for line in text.lines() {
            let mut parts = line.splitn(3, [' ', '\t']);
            let (Some(addr), Some(kind), Some(rest)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            lines += 1;
            if addr == 0 {
                zero += 1;
                continue;
            }
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let (name, module) = match rest.split_once('\t') {
                Some((n, m)) => (
                    n.trim(),
                    Some(m.trim().trim_start_matches('[').trim_end_matches(']')),
                ),
                None => (rest.trim(), None),
            };
            if name.is_empty() {
                continue;
            }
            let Some(name) = push(&mut names, name) else {
                break;
            };
            let module = match module {
                Some(m) => push(&mut names, m),
                None => None,
            };
            syms.push(KSym {
                start: addr,
                name,
                module,
            });
        }
        syms.sort_by_key(|s| s.start);
        syms.dedup_by_key(|s| s.start);
        Kallsyms {
            text: names,
            syms,
            restricted: lines > 0 && zero == lines,
        }
    }

    /// Reads and parses a kallsyms file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Kallsyms> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::path(path, e.into()))?;
        Ok(Kallsyms::parse(&String::from_utf8_lossy(&bytes)))
    }

    /// Whether every address was 0 (`kptr_restrict`): no kernel names can be given.
    pub fn is_restricted(&self) -> bool {
        self.restricted
    }

    /// The number of code symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// Whether there are no code symbols (restricted, empty or not kallsyms).
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol at or before `addr` (the last symbol covers at most 1 MiB).
    pub fn lookup(&self, addr: u64) -> Option<KernelSymbol<'_>> {
        let i = self
            .syms
            .partition_point(|s| s.start <= addr)
            .checked_sub(1)?;
        let s = self.syms.get(i)?;
        if self.syms.get(i + 1).is_none() && addr - s.start >= LAST_SYMBOL_SPAN {
            return None;
        }
        let get = |(off, len): (u32, u32)| {
            let off = usize::try_from(off).ok()?;
            self.text
                .get(off..off.checked_add(usize::try_from(len).ok()?)?)
        };
        Some(KernelSymbol {
            name: get(s.name)?,
            start: s.start,
            module: s.module.and_then(get),
        })
    }
}

/// The running kernel's build id, from `/sys/kernel/notes`.
pub fn running_kernel_build_id() -> Option<BuildId> {
    build_id_from_notes(&std::fs::read("/sys/kernel/notes").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_lookup() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000000 T _text\n\
             ffffffff81001000 t do_one\n\
             ffffffff81002000 D some_data\n\
             ffffffff81003000 W weak_fn\n\
             garbage line\n\
             ffffffffc0a01000 t ext4_fn\t[ext4]\n",
        );
        assert!(!k.is_restricted());
        assert_eq!(k.len(), 4);
        let s = k.lookup(0xffffffff81001234).unwrap();
        assert_eq!(
            (s.name, s.start, s.module),
            ("do_one", 0xffffffff81001000, None)
        );
        // Data symbols do not end the code symbol before them.
        assert_eq!(k.lookup(0xffffffff81002010).unwrap().name, "do_one");
        let m = k.lookup(0xffffffffc0a01010).unwrap();
        assert_eq!((m.name, m.module), ("ext4_fn", Some("ext4")));
        assert!(k.lookup(0xffffffffc0a01000 + (1 << 20)).is_none());
        assert!(k.lookup(0x1000).is_none());
    }

    #[test]
    fn restricted() {
        let k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t foo\n");
        assert!(k.is_restricted());
        assert!(k.is_empty());
        assert!(k.lookup(0xffffffff81000000).is_none());
        assert!(!Kallsyms::parse("").is_restricted());
    }
}
