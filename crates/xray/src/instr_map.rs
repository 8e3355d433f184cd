//! The XRay instrumentation map (`xray_instr_map`) of an ELF binary, symbolization (profkit-native's
//! llvm-symbolizer mode), and llvm-xray `extract` YAML.
//!
//! A sled entry is 32 bytes on 64-bit targets (16 on 32-bit): `address`, `function`, `u8 kind`,
//! `u8 always_instrument`, `u8 version`, padding. Version 2 entries are PC-relative
//! (`sled = entry + address`, `function = entry + word + function`); versions 0 and 1 are
//! absolute, and in position-independent executables they are filled in by `R_*_RELATIVE`
//! dynamic relocations, which are applied here. Function ids count from 1 and increase each
//! time an entry's `function` differs from the previous entry's, walking the section in order
//! (what the runtime and llvm-xray do).

use std::collections::HashMap;

use object::{
    Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationFlags, RelocationTarget,
};

use crate::error::{Error, Result};
use crate::raw::{Endian, SledKind};
use crate::yaml;

/// One instrumentation point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sled {
    /// Address of the sled (absolute, after PC-relative decoding and relocation).
    pub address: u64,
    /// Address of the function the sled belongs to.
    pub function: u64,
    /// Entry, exit, tail, log-args entry, custom event, typed event (unknown kinds pass through).
    pub kind: SledKind,
    /// Whether the function is always instrumented.
    pub always_instrument: bool,
    /// Entry layout version (0/1 absolute, 2 PC-relative).
    pub version: u8,
    /// Function id (from 1).
    pub func_id: u32,
}

/// One `xray_fn_idx` entry: the sleds of one function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FnIndexEntry {
    /// Address of the function's first sled entry inside `xray_instr_map`.
    pub first_entry: u64,
    /// Number of sled entries.
    pub count: u64,
}

/// The instrumentation map of a binary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstrMap {
    /// All sleds, in section order.
    pub sleds: Vec<Sled>,
    /// Function addresses; `functions[id - 1]` is the address of function `id`.
    pub functions: Vec<u64>,
    /// `xray_fn_idx` entries (clang 14 emits none).
    pub fn_index: Vec<FnIndexEntry>,
}

fn err(m: impl Into<String>) -> Error {
    crate::error::instr_map(m.into())
}

fn relative_type(arch: object::Architecture, r_type: u32) -> bool {
    use object::elf;
    use object::Architecture as A;
    match arch {
        A::X86_64 | A::X86_64_X32 => r_type == elf::R_X86_64_RELATIVE,
        A::Aarch64 => r_type == elf::R_AARCH64_RELATIVE,
        A::I386 => r_type == elf::R_386_RELATIVE,
        A::Arm => r_type == elf::R_ARM_RELATIVE,
        A::PowerPc64 => r_type == elf::R_PPC64_RELATIVE,
        A::Riscv64 | A::Riscv32 => r_type == elf::R_RISCV_RELATIVE,
        A::LoongArch64 => r_type == elf::R_LARCH_RELATIVE,
        _ => false,
    }
}

impl InstrMap {
    /// Reads the map from an ELF (or other object format the `object` crate reads) file.
    pub fn from_object(data: &[u8]) -> Result<InstrMap> {
        let file =
            object::File::parse(data).map_err(|e| err(format!("cannot parse object file: {e}")))?;
        let endian = if file.is_little_endian() {
            Endian::Little
        } else {
            Endian::Big
        };
        let word = if file.is_64() { 8usize } else { 4 };
        let section = file
            .section_by_name("xray_instr_map")
            .or_else(|| file.section_by_name("__xray_instr_map"))
            .ok_or_else(|| {
                err("failed to find XRay instrumentation map (no xray_instr_map section)")
            })?;
        let base = section.address();
        let mut contents = section
            .uncompressed_data()
            .map_err(|e| err(format!("cannot read xray_instr_map: {e}")))?
            .into_owned();
        let size = contents.len() as u64;
        let put_word = |contents: &mut Vec<u8>, at: u64, value: u64| {
            let Ok(at) = usize::try_from(at) else { return };
            let bytes = endian.u64_bytes(value);
            let bytes: &[u8] = match (word, endian) {
                (8, _) => &bytes,
                (_, Endian::Little) => bytes.get(..4).unwrap_or_default(),
                (_, Endian::Big) => bytes.get(4..).unwrap_or_default(),
            };
            if let Some(slot) = at
                .checked_add(word)
                .and_then(|end| contents.get_mut(at..end))
            {
                slot.copy_from_slice(bytes);
            }
        };
        // Dynamic relocations (PIE / shared objects): R_*_RELATIVE, and absolute ones through
        // the dynamic symbol table.
        if let Some(relocs) = file.dynamic_relocations() {
            let dynsyms = file.dynamic_symbol_table();
            for (vaddr, rel) in relocs {
                if vaddr < base || vaddr - base >= size {
                    continue;
                }
                let at = vaddr - base;
                let RelocationFlags::Elf { r_type } = rel.flags() else {
                    continue;
                };
                let value = if relative_type(file.architecture(), r_type) {
                    rel.addend() as u64
                } else if let (RelocationTarget::Symbol(idx), Some(t)) =
                    (rel.target(), dynsyms.as_ref())
                {
                    match t.symbol_by_index(idx) {
                        Ok(sym) if sym.address() != 0 => {
                            sym.address().wrapping_add(rel.addend() as u64)
                        }
                        _ => continue,
                    }
                } else {
                    continue;
                };
                if !rel.has_implicit_addend() {
                    put_word(&mut contents, at, value);
                }
            }
        }
        // Relocatable objects: section relocations (S + A).
        for (at, rel) in section.relocations() {
            if at >= size {
                continue;
            }
            let sym_addr = match rel.target() {
                RelocationTarget::Symbol(idx) => {
                    file.symbol_by_index(idx).map(|s| s.address()).unwrap_or(0)
                }
                RelocationTarget::Absolute => 0,
                _ => continue,
            };
            if rel.size() as usize == word * 8
                && matches!(rel.kind(), object::RelocationKind::Absolute)
            {
                put_word(
                    &mut contents,
                    at,
                    sym_addr.wrapping_add(rel.addend() as u64),
                );
            }
        }
        let mut map = InstrMap::from_section(&contents, base, word, endian)?;
        if let Some(idx) = file.section_by_name("xray_fn_idx") {
            if let Ok(d) = idx.uncompressed_data() {
                map.fn_index = parse_fn_idx(&d, idx.address(), base, size, word, endian);
            }
        }
        Ok(map)
    }

    /// Decodes raw `xray_instr_map` contents loaded at `base` (entries of `4 * word` bytes).
    pub fn from_section(
        contents: &[u8],
        base: u64,
        word: usize,
        endian: Endian,
    ) -> Result<InstrMap> {
        let entry_size = word * 4;
        if !contents.len().is_multiple_of(entry_size) {
            return Err(err(format!(
                "instrumentation map entries not evenly divisible by {entry_size}: section is {} bytes",
                contents.len()
            )));
        }
        let rd = |chunk: &[u8], at: usize| -> u64 {
            let mut b = [0u8; 8];
            if let Some(src) = chunk.get(at..at + word) {
                match (word, endian) {
                    (8, _) => b.copy_from_slice(src),
                    (_, Endian::Little) => b.iter_mut().zip(src).for_each(|(o, s)| *o = *s),
                    (_, Endian::Big) => b.iter_mut().skip(4).zip(src).for_each(|(o, s)| *o = *s),
                }
            }
            endian.u64(b)
        };
        let mut sleds = Vec::with_capacity(contents.len() / entry_size);
        for (i, chunk) in contents.chunks_exact(entry_size).enumerate() {
            let entry_addr = base.wrapping_add((i * entry_size) as u64);
            let mut address = rd(chunk, 0);
            let mut function = rd(chunk, word);
            let tail = chunk.get(2 * word..).unwrap_or_default();
            let kind = SledKind(tail.first().copied().unwrap_or(0));
            let always_instrument = tail.get(1).copied().unwrap_or(0) != 0;
            let version = tail.get(2).copied().unwrap_or(0);
            if version >= 2 {
                let sign = |v: u64| {
                    if word == 4 {
                        v as u32 as i32 as i64 as u64
                    } else {
                        v
                    }
                };
                address = entry_addr.wrapping_add(sign(address));
                function = entry_addr
                    .wrapping_add(word as u64)
                    .wrapping_add(sign(function));
            }
            if word == 4 {
                address &= 0xffff_ffff;
                function &= 0xffff_ffff;
            }
            sleds.push(Sled {
                address,
                function,
                kind,
                always_instrument,
                version,
                func_id: 0,
            });
        }
        Ok(InstrMap::from_sleds(sleds))
    }

    /// Builds a map from sleds in section order, assigning function ids as LLVM does.
    pub fn from_sleds(mut sleds: Vec<Sled>) -> InstrMap {
        let mut functions = Vec::new();
        let mut cur: Option<u64> = None;
        for s in &mut sleds {
            if cur != Some(s.function) {
                cur = Some(s.function);
                functions.push(s.function);
            }
            s.func_id = functions.len() as u32;
        }
        InstrMap {
            sleds,
            functions,
            fn_index: Vec::new(),
        }
    }

    /// Address of function `id` (ids start at 1).
    pub fn function_address(&self, id: u32) -> Option<u64> {
        self.functions.get((id as usize).checked_sub(1)?).copied()
    }

    /// Id of the function at `address` (the last id if a function appears twice, like LLVM).
    pub fn function_id(&self, address: u64) -> Option<u32> {
        self.functions
            .iter()
            .rposition(|&f| f == address)
            .map(|i| i as u32 + 1)
    }

    /// A map from function id to address.
    pub fn id_to_address(&self) -> HashMap<u32, u64> {
        self.functions
            .iter()
            .enumerate()
            .map(|(i, &a)| (i as u32 + 1, a))
            .collect()
    }

    /// The map as `llvm-xray extract` prints it; `name` gives each sled's `function-name`
    /// (return an empty string for llvm's unsymbolized output).
    pub fn to_yaml(&self, mut name: impl FnMut(&Sled) -> String) -> String {
        let mut out = String::from("---\n");
        for s in &self.sleds {
            let kind = s
                .kind
                .name()
                .map_or_else(|| s.kind.0.to_string(), str::to_string);
            out.push_str(&format!(
                "- {{ id: {}, address: 0x{:X}, function: 0x{:X}, kind: {}, always-instrument: {}, function-name: {}, version: {} }}\n",
                s.func_id,
                s.address,
                s.function,
                kind,
                s.always_instrument,
                yaml::scalar(&name(s)),
                s.version
            ));
        }
        out.push_str("...\n");
        out
    }

    /// Reads `llvm-xray extract` YAML back. Ids are taken from the text; function names are
    /// returned alongside (one per sled, empty when absent).
    pub fn from_yaml(text: &str) -> Result<(InstrMap, Vec<String>)> {
        let mut sleds = Vec::new();
        let mut names = Vec::new();
        for (no, line) in yaml::logical_lines(text) {
            let t = line.trim();
            if t.is_empty() || t == "---" || t == "..." || t.starts_with('#') || t == "[]" {
                continue;
            }
            let bad = |m: String| crate::error::yaml(no, m);
            let fields = yaml::parse_flow_map(t, no)?;
            let get = |k: &str| {
                fields
                    .iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.as_str())
            };
            let int = |k: &str| -> Result<u64> {
                let v = get(k).ok_or_else(|| bad(format!("missing `{k}`")))?;
                yaml::parse_int(v).ok_or_else(|| bad(format!("`{k}`: not an integer: {v}")))
            };
            let kind_text = get("kind").ok_or_else(|| bad("missing `kind`".into()))?;
            let kind = (0u8..=5)
                .map(SledKind)
                .find(|k| k.name() == Some(kind_text))
                .or_else(|| kind_text.parse().ok().map(SledKind))
                .ok_or_else(|| bad(format!("unknown sled kind `{kind_text}`")))?;
            sleds.push(Sled {
                address: int("address")?,
                function: int("function")?,
                kind,
                always_instrument: get("always-instrument") == Some("true"),
                version: get("version").and_then(yaml::parse_int).unwrap_or(0) as u8,
                func_id: int("id")? as u32,
            });
            names.push(get("function-name").unwrap_or("").to_string());
        }
        let mut functions: Vec<u64> = Vec::new();
        for s in &sleds {
            let idx = s.func_id as usize;
            if idx == 0 || idx > sleds.len() {
                continue;
            }
            if functions.len() < idx {
                functions.resize(idx, 0);
            }
            if let Some(slot) = functions.get_mut(idx - 1) {
                *slot = s.function;
            }
        }
        Ok((
            InstrMap {
                sleds,
                functions,
                fn_index: Vec::new(),
            },
            names,
        ))
    }
}

fn parse_fn_idx(
    d: &[u8],
    idx_base: u64,
    map_base: u64,
    map_size: u64,
    word: usize,
    endian: Endian,
) -> Vec<FnIndexEntry> {
    let entry = word * 2;
    let rd = |c: &[u8], at: usize| -> u64 {
        let mut b = [0u8; 8];
        if let Some(src) = c.get(at..at + word) {
            match (word, endian) {
                (8, _) => b.copy_from_slice(src),
                (_, Endian::Little) => b.iter_mut().zip(src).for_each(|(o, s)| *o = *s),
                (_, Endian::Big) => b.iter_mut().skip(4).zip(src).for_each(|(o, s)| *o = *s),
            }
        }
        endian.u64(b)
    };
    let in_map = |a: u64| a >= map_base && a <= map_base.saturating_add(map_size);
    let sled = (word * 4) as u64;
    d.chunks_exact(entry)
        .enumerate()
        .map(|(i, c)| {
            let (a, b) = (rd(c, 0), rd(c, word));
            if in_map(a) && in_map(b) && b >= a {
                // Older layout: {Begin, End} absolute.
                FnIndexEntry {
                    first_entry: a,
                    count: (b - a) / sled,
                }
            } else {
                // Newer layout: {Begin relative to this entry, Size}.
                FnIndexEntry {
                    first_entry: idx_base.wrapping_add((i * entry) as u64).wrapping_add(a),
                    count: b,
                }
            }
        })
        .collect()
}

/// What symbolization found for an address: profkit-native's llvm-symbolizer answer.
pub use profkit_native::llvm::LlvmSymbol as SymbolInfo;

/// Names and source positions of an instrumented binary's addresses, as llvm-xray gets them
/// from llvm-symbolizer: profkit-native's [`LlvmSymbolizer`](profkit_native::llvm::LlvmSymbolizer)
/// (the one symbolizer and demangler of the workspace, in its llvm-symbolizer mode).
#[derive(Debug)]
pub struct Symbolizer(profkit_native::llvm::LlvmSymbolizer);

impl Symbolizer {
    /// Loads DWARF and symbols from an object file.
    pub fn new(data: &[u8]) -> Result<Symbolizer> {
        profkit_native::llvm::LlvmSymbolizer::new("", data)
            .map(Symbolizer)
            .map_err(|e| match e.kind {
                profkit_native::ErrorKind::Elf(m) => err(format!("cannot parse object file: {m}")),
                other => err(other.to_string()),
            })
    }

    /// Name and position of `address`, as llvm-symbolizer gives them to llvm-xray (see
    /// [`LlvmSymbolizer::symbolize`](profkit_native::llvm::LlvmSymbolizer::symbolize)).
    pub fn symbolize(&self, address: u64) -> SymbolInfo {
        self.0.symbolize(address)
    }
}

/// Why instrumented objects cannot be given the XRay object ids asked for ([`object_ids`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectIdError {
    /// `ID=PATH` names an id the XRay runtime cannot give (above 255).
    OutOfRange {
        /// The whole argument.
        spec: String,
        /// The id as written.
        id: String,
    },
    /// Two objects have the same id.
    Twice {
        /// The argument that repeats it.
        spec: String,
        /// The id.
        id: u8,
    },
    /// More than 256 objects.
    TooMany,
}

/// The XRay object id of each instrumented object: `PATH` takes the next id in order (the
/// executable is object 0, then each shared object in the order the XRay runtime registered
/// it), `ID=PATH` pins one (0-255) and the ones after it count on from there. Functions of
/// object `k` have the packed ids `k << 24 | id` in the trace ([`split_packed_id`](crate::split_packed_id)).
pub fn object_ids(
    specs: &[String],
) -> core::result::Result<Vec<(u8, std::path::PathBuf)>, ObjectIdError> {
    let mut out: Vec<(u8, std::path::PathBuf)> = Vec::new();
    let mut next = 0u16;
    for spec in specs {
        if let Some((id, _)) = spec.split_once('=') {
            if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && id.parse::<u8>().is_err()
            {
                return Err(ObjectIdError::OutOfRange {
                    spec: spec.clone(),
                    id: id.to_string(),
                });
            }
        }
        let pinned = spec
            .split_once('=')
            .and_then(|(id, path)| Some((id.parse::<u8>().ok()?, path)));
        let (id, path) = match pinned {
            Some((id, path)) => (id, path),
            None => (
                u8::try_from(next).map_err(|_| ObjectIdError::TooMany)?,
                spec.as_str(),
            ),
        };
        if out.iter().any(|(o, _)| *o == id) {
            return Err(ObjectIdError::Twice {
                spec: spec.clone(),
                id,
            });
        }
        next = u16::from(id) + 1;
        out.push((id, std::path::PathBuf::from(path)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(specs: &[&str]) -> core::result::Result<Vec<u8>, ObjectIdError> {
        let specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
        object_ids(&specs).map(|v| v.into_iter().map(|(id, _)| id).collect())
    }

    #[test]
    fn object_ids_count_on_from_pins() {
        assert_eq!(ids(&["a", "b"]), Ok(vec![0, 1]));
        assert_eq!(ids(&["a", "5=b", "c"]), Ok(vec![0, 5, 6]));
        assert_eq!(
            ids(&["a", "0=b"]),
            Err(ObjectIdError::Twice {
                spec: "0=b".into(),
                id: 0
            })
        );
        assert!(matches!(
            ids(&["300=x"]),
            Err(ObjectIdError::OutOfRange { .. })
        ));
        assert_eq!(ids(&["255=x", "y"]), Err(ObjectIdError::TooMany));
        // a path with '=' that is not an id is a path
        assert_eq!(ids(&["dir/a=b"]), Ok(vec![0]));
    }
}
