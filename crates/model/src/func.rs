//! The function table.

use std::collections::HashMap;

/// A function, as the format numbers it (XRay: the instrumentation-map function id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FuncId(pub u32);

/// What is known about a function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FuncInfo {
    /// Display name (demangled), if known.
    pub name: Option<String>,
    /// Source file, if known.
    pub file: Option<String>,
    /// Source line (0 = unknown or the line table says 0).
    pub line: u32,
    /// Source column.
    pub column: u32,
    /// Module (binary, assembly …) the function lives in.
    pub module: Option<String>,
    /// Address of the function's entry, if known.
    pub address: Option<u64>,
    /// Formatted debug location as the reference tool prints it (llvm-xray: `file:line:col`).
    pub debug: Option<String>,
    /// What kind of code it is (sampled profiles: native, kernel, JIT …).
    pub kind: FuncKind,
    /// The JIT tier that compiled it, when the producer says (jitdump JIT_TIER).
    pub tier: Option<FuncTier>,
}

/// What kind of code a function is. Viewers colour frames by it (Firefox categories, Perfetto
/// frame kinds); formats that know only one kind leave it [`FuncKind::Unknown`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FuncKind {
    /// Not said.
    #[default]
    Unknown,
    /// Machine code from a binary on disk (ELF symbols or DWARF).
    Native,
    /// The kernel.
    Kernel,
    /// Code a JIT generated (jitdump, perf map).
    Jit,
    /// An address nothing names: `module+0xoffset` or a bare address.
    Unsymbolized,
}

/// A JIT tier (the owned form of [`crate::events::CodeTier`]); the code map's, profkit-jit.
pub use profkit_jit::FuncTier;

/// Interned function table: [`FuncId`] → [`FuncInfo`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionTable {
    map: HashMap<FuncId, FuncInfo>,
}

impl FunctionTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces the entry of `id`.
    pub fn insert(&mut self, id: FuncId, info: FuncInfo) {
        self.map.insert(id, info);
    }

    /// The entry of `id`.
    pub fn get(&self, id: FuncId) -> Option<&FuncInfo> {
        self.map.get(&id)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The display name: the known name, else `#N` (as llvm-xray prints unmapped ids).
    pub fn name(&self, id: FuncId) -> String {
        match self.map.get(&id).and_then(|f| f.name.as_deref()) {
            Some(n) => n.to_string(),
            None => unnamed(&mut [0; 11], id.0).to_string(),
        }
    }

    /// Every entry, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (FuncId, &FuncInfo)> {
        let mut v: Vec<_> = self.map.iter().map(|(k, v)| (*k, v)).collect();
        v.sort_unstable_by_key(|e| e.0);
        v.into_iter()
    }

    /// The debug location string, if known.
    pub fn debug(&self, id: FuncId) -> Option<&str> {
        self.map.get(&id).and_then(|f| f.debug.as_deref())
    }
}

/// Hands out [`FuncId`]s to functions found while reading (a sampler symbolizing addresses),
/// declaring each to the sink once ([`crate::events::EventSink::function`]).
///
/// A function is its name, module, kind and tier: the same name in two modules, or compiled
/// by two JIT tiers, stays two functions. The first [`FuncInfo`] seen for a function is the
/// one declared (its file and line).
#[derive(Debug, Default)]
pub struct FuncInterner {
    ids: rustc_hash::FxHashMap<FuncKey, FuncId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FuncKey {
    name: Option<String>,
    module: Option<String>,
    kind: FuncKind,
    tier: Option<String>,
}

impl FuncInterner {
    /// An empty interner; ids start at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of the function `info` describes, declaring it to `sink` when new.
    pub fn intern(
        &mut self,
        mut info: FuncInfo,
        sink: &mut dyn crate::events::EventSink,
    ) -> std::io::Result<FuncId> {
        // The key takes the strings; they are copied back only for a new function.
        let key = FuncKey {
            name: info.name.take(),
            module: info.module.take(),
            kind: info.kind,
            tier: info.tier.as_ref().map(|t| t.name.clone()),
        };
        if let Some(&id) = self.ids.get(&key) {
            return Ok(id);
        }
        let id = FuncId(self.ids.len() as u32);
        info.name.clone_from(&key.name);
        info.module.clone_from(&key.module);
        sink.function(id, &info)?;
        self.ids.insert(key, id);
        Ok(id)
    }

    /// The id of the function `info` describes, and whether it is new (a writer numbering
    /// the functions of several drivers: nothing is declared).
    pub fn add(&mut self, info: &FuncInfo) -> (FuncId, bool) {
        let key = FuncKey {
            name: info.name.clone(),
            module: info.module.clone(),
            kind: info.kind,
            tier: info.tier.as_ref().map(|t| t.name.clone()),
        };
        let next = FuncId(self.ids.len() as u32);
        let id = *self.ids.entry(key).or_insert(next);
        (id, id == next)
    }

    /// How many of this interner's functions `other` does not have.
    pub fn count_new_in(&self, other: &FuncInterner) -> usize {
        self.ids
            .keys()
            .filter(|k| !other.ids.contains_key(*k))
            .count()
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no function was interned.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// The name of an unnamed function id, `#N` (as [`FunctionTable::name`] writes it), in `buf`
/// without allocating: writers of millions of ids name them on the fly.
pub fn unnamed(buf: &mut [u8; 11], id: u32) -> &str {
    buf[0] = b'#';
    let mut itoa = itoa::Buffer::new();
    let digits = itoa.format(id).as_bytes();
    let end = 1 + digits.len();
    if let Some(d) = buf.get_mut(1..end) {
        d.copy_from_slice(digits);
    }
    std::str::from_utf8(buf.get(..end).unwrap_or_default()).unwrap_or("#")
}
