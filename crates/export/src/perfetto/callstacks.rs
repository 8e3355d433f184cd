//! Sampled stacks as Perfetto's profiling data: interned function names, source paths,
//! mappings, frames and callstacks, referred to by a `PerfSample` packet per sample — what
//! `traced_perf` writes and what the Perfetto UI shows as a flame graph of a selection.
//!
//! Each table has its own iid space in `InternedData` (`function_names` 5, `frames` 6,
//! `callstacks` 7, `mapping_paths` 17, `source_paths` 18, `mappings` 19); an entry is written in
//! the first packet that needs it. A frame is a function at a line (a sample's line of that
//! frame), so the flame graph groups by function and the frame details keep the line. A frame's
//! mapping is its function's module (`[unknown]` when none); its `kind` says native, kernel or
//! JIT code.

use rustc_hash::FxHashMap as HashMap;

use profkit_model::events::Sample;
use profkit_model::func::{FuncId, FuncInfo, FuncKind, FunctionTable};

use crate::protobuf::Message;

/// Field numbers of the profiling protos (`profile_common.proto`, `perf_events.proto`).
pub(crate) mod field {
    // InternedData
    pub const ID_FUNCTION_NAMES: u32 = 5;
    pub const ID_FRAMES: u32 = 6;
    pub const ID_CALLSTACKS: u32 = 7;
    pub const ID_MAPPING_PATHS: u32 = 17;
    pub const ID_SOURCE_PATHS: u32 = 18;
    pub const ID_MAPPINGS: u32 = 19;
    // InternedString
    pub const IS_IID: u32 = 1;
    pub const IS_STR: u32 = 2;
    // Frame
    pub const FR_IID: u32 = 1;
    pub const FR_FUNCTION_NAME_ID: u32 = 2;
    pub const FR_MAPPING_ID: u32 = 3;
    pub const FR_SOURCE_PATH_IID: u32 = 5;
    pub const FR_LINE_NUMBER: u32 = 6;
    pub const FR_KIND: u32 = 7;
    pub const KIND_NATIVE: u64 = 1;
    pub const KIND_KERNEL: u64 = 2;
    pub const KIND_JIT: u64 = 4;
    // Mapping
    pub const MA_IID: u32 = 1;
    pub const MA_PATH_STRING_IDS: u32 = 7;
    // Callstack
    pub const CS_IID: u32 = 1;
    pub const CS_FRAME_IDS: u32 = 2;
    // TracePacket.perf_sample and PerfSample
    pub const PERF_SAMPLE: u32 = 66;
    pub const PS_PID: u32 = 2;
    pub const PS_TID: u32 = 3;
    pub const PS_CALLSTACK_IID: u32 = 4;
    pub const PS_CPU_MODE: u32 = 5;
    pub const MODE_KERNEL: u64 = 1;
    pub const MODE_USER: u64 = 2;
}

/// One iid space: a key → iid map handing out 1, 2, 3 ….
struct Iids<K> {
    map: HashMap<K, u64>,
}

impl<K: std::hash::Hash + Eq> Iids<K> {
    fn new() -> Self {
        Iids {
            map: HashMap::default(),
        }
    }

    /// The iid of `key` and whether it is new.
    fn get(&mut self, key: K) -> (u64, bool) {
        let next = self.map.len() as u64 + 1;
        let iid = *self.map.entry(key).or_insert(next);
        (iid, iid == next)
    }
}

/// The interning state of one packet sequence. See the [module docs](self).
pub(crate) struct Callstacks {
    functions: FunctionTable,
    names: Iids<FuncId>,
    sources: Iids<Box<str>>,
    paths: Iids<Box<str>>,
    mappings: Iids<Box<str>>,
    frames: Iids<(FuncId, u32)>,
    stacks: Iids<Box<[u64]>>,
    scratch: Vec<u64>,
}

impl Default for Callstacks {
    fn default() -> Self {
        Callstacks {
            functions: FunctionTable::new(),
            names: Iids::new(),
            sources: Iids::new(),
            paths: Iids::new(),
            mappings: Iids::new(),
            frames: Iids::new(),
            stacks: Iids::new(),
            scratch: Vec::new(),
        }
    }
}

/// Adds an `InternedString { iid, str }` to the packet's interned data table `table`.
fn interned_string(pkt: &mut Message, table: u32, iid: u64, s: &str) {
    pkt.message(super::field::INTERNED_DATA, |d| {
        d.message(table, |e| {
            e.uint64(field::IS_IID, iid);
            e.bytes(field::IS_STR, s.as_bytes());
        })
    });
}

impl Callstacks {
    /// Starts over with the trace's function table.
    pub(crate) fn begin(&mut self, functions: &FunctionTable) {
        self.functions = functions.clone();
    }

    /// A function declared after `begin`.
    pub(crate) fn declare(&mut self, id: FuncId, info: &FuncInfo) {
        self.functions.insert(id, info.clone());
    }

    /// Interns the frames and callstack of `s` (writing new entries into `pkt`'s interned
    /// data) and returns the callstack's iid.
    pub(crate) fn intern(&mut self, pkt: &mut Message, s: &Sample<'_>) -> u64 {
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        for (i, &func) in s.stack.iter().enumerate() {
            ids.push(self.frame(pkt, func, s.line(i)));
        }
        let known = self.stacks.map.get(ids.as_slice()).copied();
        let (iid, new) = match known {
            Some(iid) => (iid, false),
            None => self.stacks.get(ids.as_slice().into()),
        };
        if new {
            pkt.message(super::field::INTERNED_DATA, |d| {
                d.message(field::ID_CALLSTACKS, |c| {
                    c.uint64(field::CS_IID, iid);
                    // Bottom (outermost) frame first, as `Callstack.frame_ids` wants.
                    c.packed_uint64(field::CS_FRAME_IDS, ids.iter().copied());
                })
            });
        }
        self.scratch = ids;
        iid
    }

    /// Whether the leaf of `s` is kernel code.
    pub(crate) fn cpu_mode(&self, s: &Sample<'_>) -> u64 {
        let kernel = s
            .stack
            .last()
            .and_then(|&f| self.functions.get(f))
            .is_some_and(|f| f.kind == FuncKind::Kernel);
        if kernel {
            field::MODE_KERNEL
        } else {
            field::MODE_USER
        }
    }

    fn frame(&mut self, pkt: &mut Message, func: FuncId, line: u32) -> u64 {
        let (iid, new) = self.frames.get((func, line));
        if !new {
            return iid;
        }
        let info = self.functions.get(func).cloned().unwrap_or_default();
        let name = self.name(pkt, func, &info);
        let mapping = self.mapping(pkt, info.module.as_deref().unwrap_or("[unknown]"));
        let source = match info.file.as_deref() {
            Some(f) if line != 0 => {
                let (sid, new) = self.sources.get(f.into());
                if new {
                    interned_string(pkt, field::ID_SOURCE_PATHS, sid, f);
                }
                Some(sid)
            }
            _ => None,
        };
        let kind = match info.kind {
            FuncKind::Native => Some(field::KIND_NATIVE),
            FuncKind::Kernel => Some(field::KIND_KERNEL),
            FuncKind::Jit => Some(field::KIND_JIT),
            FuncKind::Unknown | FuncKind::Unsymbolized => None,
        };
        pkt.message(super::field::INTERNED_DATA, |d| {
            d.message(field::ID_FRAMES, |f| {
                f.uint64(field::FR_IID, iid);
                f.uint64(field::FR_FUNCTION_NAME_ID, name);
                f.uint64(field::FR_MAPPING_ID, mapping);
                if let Some(sid) = source {
                    f.uint64(field::FR_SOURCE_PATH_IID, sid);
                    f.uint64(field::FR_LINE_NUMBER, u64::from(line));
                }
                if let Some(k) = kind {
                    f.uint64(field::FR_KIND, k);
                }
            })
        });
        iid
    }

    fn name(&mut self, pkt: &mut Message, func: FuncId, info: &FuncInfo) -> u64 {
        let (iid, new) = self.names.get(func);
        if new {
            let name = match &info.name {
                Some(n) => std::borrow::Cow::Borrowed(n.as_str()),
                None => std::borrow::Cow::Owned(format!("#{}", func.0)),
            };
            interned_string(pkt, field::ID_FUNCTION_NAMES, iid, &name);
        }
        iid
    }

    fn mapping(&mut self, pkt: &mut Message, module: &str) -> u64 {
        let (iid, new) = self.mappings.get(module.into());
        if new {
            let (path, new_path) = self.paths.get(module.into());
            if new_path {
                interned_string(pkt, field::ID_MAPPING_PATHS, path, module);
            }
            pkt.message(super::field::INTERNED_DATA, |d| {
                d.message(field::ID_MAPPINGS, |m| {
                    m.uint64(field::MA_IID, iid);
                    m.packed_uint64(field::MA_PATH_STRING_IDS, [path]);
                })
            });
        }
        iid
    }
}
