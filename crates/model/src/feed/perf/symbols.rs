//! Addresses → the model's functions: every frame of every sample goes through
//! [`Symbols::resolve`], which answers with frames (function id and line, innermost first; an
//! address in inlined code gives several).
//!
//! Where a name comes from, by where the address is:
//! * **kernel**: kallsyms (the recording's copy in perf's build-id cache, or `/proc/kallsyms` when
//!   the recording is of the running kernel), else one `[kernel]` function;
//! * **a file mapping**: the binary (checked against the recorded build id, found by
//!   profkit-native's [`Binaries`]) — DWARF inline frames with file and line, else the symbol
//!   table; a binary that cannot be found gives `module+0xoffset` (file offset);
//! * **anonymous memory** (or no mapping): the process's jitdump [`crate::codemap::CodeMap`] at
//!   the sample's time (inline frames, lines, tier), else its perf map, else the bare address.
//!
//! Inlined frames are named `function (inlined)` (see [`frame_name`]).
//!
//! Answers are cached: per process and address for native code (dropped when the process's
//! mappings change), per code-map region and offset for JIT code, per address for the kernel. A
//! cached answer is a range of one shared frame arena, so a hot address costs one hash lookup.

use rustc_hash::FxHashMap as HashMap;
use std::io;
use std::path::Path;

use std::sync::{Arc, Mutex, MutexGuard};

use profkit_native::{Binaries, Binary, BuildId, Kallsyms, Mapping};

use super::process::{Map, MapKind, Process};
use crate::events::EventSink;
use crate::func::{FuncId, FuncInfo, FuncInterner, FuncKind};

/// A range of the frame arena: `(start, len)`.
#[derive(Clone, Copy, Debug)]
pub struct Frames {
    start: u32,
    len: u32,
}

/// Where an address was found (for the report's counters).
///
/// Four bytes wide: as a one-byte field, copying a [`Resolved`] (once or twice per frame a
/// sample looks up) went through odd, overlapping stack moves that stalled on store
/// forwarding (a quarter of `Walk::sample`'s samples).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Origin {
    /// Kernel code.
    Kernel,
    /// A binary on disk (named or not).
    Native,
    /// JIT code named by a jitdump or perf map.
    Jit,
    /// Anonymous memory nothing names.
    UnnamedJit,
}

/// An address's answer: its frames, where they came from, and until when (sample time,
/// exclusive) the same address would get the same answer — JIT code is reloaded, moved and
/// freed; `u64::MAX` for answers that do not depend on time, 0 for answers to look up again.
#[derive(Clone, Copy, Debug)]
pub struct Resolved {
    /// The frames.
    pub frames: Frames,
    /// Where the address was found.
    pub origin: Origin,
    /// The answer holds for samples before this time.
    pub until: u64,
}

impl Resolved {
    fn new(frames: Frames, origin: Origin, until: u64) -> Resolved {
        Resolved {
            frames,
            origin,
            until,
        }
    }
}

/// Kernel symbols, if the recording allows.
pub enum KernelNames {
    /// Parsed kallsyms and where they came from.
    Kallsyms(Kallsyms, String),
    /// Why not.
    Unavailable(String),
    /// Being parsed in the background (joined at the first kernel frame).
    Loading(std::thread::JoinHandle<KernelNames>),
}

impl KernelNames {
    /// Parses kallsyms in the background.
    pub fn load_in_background(load: impl FnOnce() -> KernelNames + Send + 'static) -> KernelNames {
        match std::thread::Builder::new()
            .name("kallsyms".into())
            .spawn(load)
        {
            Ok(h) => KernelNames::Loading(h),
            Err(e) => KernelNames::Unavailable(format!("cannot start a thread: {e}")),
        }
    }

    /// Waits for a background parse.
    fn ready(&mut self) -> &KernelNames {
        if let KernelNames::Loading(_) = self {
            let KernelNames::Loading(h) =
                std::mem::replace(self, KernelNames::Unavailable(String::new()))
            else {
                return self;
            };
            *self = h
                .join()
                .unwrap_or_else(|_| KernelNames::Unavailable("kallsyms parse failed".into()));
        }
        self
    }

    /// Keeps the names only if `_text` is at `text` (the recording's kernel mapping): the
    /// same kernel, booted the same way. Otherwise the names are dropped with the reason.
    pub fn check_text(&mut self, text: u64) {
        let KernelNames::Kallsyms(k, from) = self.ready() else {
            return;
        };
        match k.text_address() {
            Some(here) if here == text => {}
            here => {
                *self = KernelNames::Unavailable(format!(
                    "kernel frames are [kernel]: the recording names no kernel build id and its kernel's _text is at {text:#x}, but {from} has it at {}: another kernel or boot; pass the recording machine's kallsyms with --kallsyms FILE",
                    here.map_or_else(|| "no address".to_string(), |a| format!("{a:#x}"))
                ));
            }
        }
    }

    /// Where the names came from, or why there are none.
    pub fn describe(&mut self) -> String {
        match self.ready() {
            KernelNames::Kallsyms(k, from) => format!("{} symbols from {from}", k.len()),
            KernelNames::Unavailable(why) => why.clone(),
            KernelNames::Loading(_) => String::new(),
        }
    }
}

/// `m`'s value, locked (a thread that panicked with it held left it whole: nothing here
/// panics mid-update).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The symbolizer of a recording. See the [module docs](self).
pub struct Symbols {
    /// Finds binaries (shared with a [sibling](Symbols::sibling)).
    pub binaries: Arc<Mutex<Binaries>>,
    /// Kernel names (shared with a [sibling](Symbols::sibling)).
    pub kernel: Arc<Mutex<KernelNames>>,
    interner: FuncInterner,
    arena: Vec<(FuncId, u32)>,
    kernel_cache: HashMap<u64, Frames>,
    /// Per process: (mapping generation, address) → frames, and whether no jitdump region
    /// ever covers the address (then the dump need not be asked again).
    native_cache: HashMap<(u32, u64, u64), (Frames, bool)>,
    /// Per process: (code-map region, offset) → frames.
    jit_cache: HashMap<(u32, usize, u64), Frames>,
    /// Per process: perf map entry start and address → frames.
    map_cache: HashMap<(u32, u64), Frames>,
    scratch: Vec<(FuncInfo, u32)>,
    /// Functions only a sibling found ([`Symbols::count_functions_of`]).
    siblings_functions: usize,
}

impl Symbols {
    /// A symbolizer over `binaries` and `kernel`.
    pub fn new(binaries: Binaries, kernel: KernelNames) -> Symbols {
        Symbols::over(Arc::new(Mutex::new(binaries)), Arc::new(Mutex::new(kernel)))
    }

    /// A symbolizer for another thread over the same binaries and kernel names, with caches
    /// and function ids of its own.
    pub fn sibling(&self) -> Symbols {
        Symbols::over(self.binaries.clone(), self.kernel.clone())
    }

    fn over(binaries: Arc<Mutex<Binaries>>, kernel: Arc<Mutex<KernelNames>>) -> Symbols {
        Symbols {
            binaries,
            kernel,
            interner: FuncInterner::new(),
            arena: Vec::new(),
            kernel_cache: HashMap::default(),
            native_cache: HashMap::default(),
            jit_cache: HashMap::default(),
            map_cache: HashMap::default(),
            scratch: Vec::new(),
            siblings_functions: 0,
        }
    }

    /// The frames of a range from [`Symbols::resolve`], innermost first.
    pub fn frames(&self, f: Frames) -> &[(FuncId, u32)] {
        let start = f.start as usize;
        self.arena
            .get(start..start + f.len as usize)
            .unwrap_or_default()
    }

    /// Number of distinct functions so far (with those only a sibling counted).
    pub fn functions(&self) -> usize {
        self.interner.len() + self.siblings_functions
    }

    /// Counts the functions `sibling` found that this one did not.
    pub fn count_functions_of(&mut self, sibling: &Symbols) {
        self.siblings_functions +=
            sibling.interner.count_new_in(&self.interner) + sibling.siblings_functions;
    }

    /// Interns the frames in `self.scratch` and stores them in the arena.
    fn store(&mut self, sink: &mut dyn EventSink) -> io::Result<Frames> {
        let start = self.arena.len() as u32;
        for (info, line) in std::mem::take(&mut self.scratch) {
            let id = self.interner.intern(info, sink)?;
            self.arena.push((id, line));
        }
        Ok(Frames {
            start,
            len: self.arena.len() as u32 - start,
        })
    }

    /// The frames of kernel address `addr`.
    pub fn kernel(&mut self, addr: u64, sink: &mut dyn EventSink) -> io::Result<Frames> {
        if let Some(&f) = self.kernel_cache.get(&addr) {
            return Ok(f);
        }
        let mut kernel = lock(&self.kernel);
        let info = match kernel.ready() {
            KernelNames::Kallsyms(k, _) => match k.lookup(addr) {
                Some(s) => FuncInfo {
                    name: Some(s.name.to_string()),
                    module: Some(match s.module {
                        Some(m) => format!("[{m}]"),
                        None => "[kernel.kallsyms]".to_string(),
                    }),
                    kind: FuncKind::Kernel,
                    ..FuncInfo::default()
                },
                None => kernel_placeholder(),
            },
            KernelNames::Unavailable(_) | KernelNames::Loading(_) => kernel_placeholder(),
        };
        drop(kernel);
        self.scratch.push((info, 0));
        let f = self.store(sink)?;
        self.kernel_cache.insert(addr, f);
        Ok(f)
    }

    /// The frames of user address `addr` (already `- 1` for a return address) of process
    /// `pid` at `time` (`None`: the clocks cannot be matched, use the JIT code live at the end).
    pub fn user(
        &mut self,
        pid: u32,
        process: &mut Process,
        addr: u64,
        time: Option<u64>,
        sink: &mut dyn EventSink,
    ) -> io::Result<Resolved> {
        // Fast path: a native address already named, where no JIT code ever was.
        let key = (pid, process.generation, addr);
        if let Some(&(f, jit_free)) = self.native_cache.get(&key) {
            if jit_free {
                return Ok(Resolved::new(f, Origin::Native, u64::MAX));
            }
        }
        let kind = process.find(addr).map(|(_, m)| m.kind.clone());
        // Code a jitdump reports inside a file mapping (V8's embedded builtins in node's
        // text) is named by the dump while it is live, as after `perf inject --jit`, whose
        // injected mappings cover the file's.
        let dump = process.jit.dump.as_ref();
        let jit_ever = matches!(kind, Some(MapKind::File))
            && dump.is_some_and(|d| d.map.region_at(addr, None).is_some());
        let jit_now = jit_ever && dump.is_some_and(|d| d.map.region_at(addr, time).is_some());
        match kind {
            Some(MapKind::File) | Some(MapKind::Special) if !jit_now => {
                // Where JIT code was or will be, ask again next time.
                let until = if jit_ever { 0 } else { u64::MAX };
                if let Some(&(f, _)) = self.native_cache.get(&key) {
                    return Ok(Resolved::new(f, Origin::Native, until));
                }
                self.native(process, addr);
                let f = self.store(sink)?;
                self.native_cache.insert(key, (f, !jit_ever));
                Ok(Resolved::new(f, Origin::Native, until))
            }
            _ => {
                // Only anonymous memory is JIT code nothing names; an address no mapping
                // holds (ip 0, a wild return address) is just unknown.
                let anon = matches!(kind, Some(MapKind::Anon));
                self.jit(pid, process, addr, time, anon, sink)
            }
        }
    }

    /// The binary of the file mapping starting at `start`, found on first use.
    pub fn binary_of(
        &mut self,
        process: &mut Process,
        start: u64,
    ) -> Option<(Arc<Binary>, Mapping)> {
        let map = process.maps.get_mut(start)?;
        self.find_binary(start, map)
    }

    fn find_binary(&mut self, start: u64, map: &mut Map) -> Option<(Arc<Binary>, Mapping)> {
        if map.binary.is_none() {
            let id = map.build_id.as_deref().map(BuildId::new);
            let found = lock(&self.binaries)
                .find(Path::new(&*map.path), id.as_ref())
                .and_then(|b| {
                    let m = b.mapping(start, map.end - start, map.pgoff)?;
                    Some((b, m))
                });
            map.binary = Some(found);
        }
        map.binary.clone().flatten()
    }

    /// Fills `self.scratch` with the frames of native address `addr`.
    fn native(&mut self, process: &mut Process, addr: u64) {
        let Some((start, map)) = process.find_mut(addr) else {
            return;
        };
        self.find_binary(start, map);
        let module = module_name(&map.path);
        match map.binary.as_ref().and_then(|b| b.as_ref()) {
            Some((bin, mapping)) => {
                let svma = mapping.to_svma(addr);
                match bin.lookup(svma) {
                    Some(sym) => {
                        let outermost = sym.frames.len().saturating_sub(1);
                        for (i, f) in sym.frames.iter().enumerate() {
                            self.scratch.push((
                                FuncInfo {
                                    name: Some(frame_name(&f.function, i < outermost)),
                                    file: f.file.as_deref().map(str::to_string),
                                    module: Some(module.clone()),
                                    kind: FuncKind::Native,
                                    ..FuncInfo::default()
                                },
                                f.line.unwrap_or(0),
                            ));
                        }
                    }
                    None => self
                        .scratch
                        .push((unsymbolized(&module, addr - start + map.pgoff), 0)),
                }
            }
            None => self
                .scratch
                .push((unsymbolized(&module, addr - start + map.pgoff), 0)),
        }
    }

    /// The frames of an address in anonymous memory: jitdump, perf map, or the address.
    fn jit(
        &mut self,
        pid: u32,
        process: &mut Process,
        addr: u64,
        time: Option<u64>,
        anon: bool,
        sink: &mut dyn EventSink,
    ) -> io::Result<Resolved> {
        if let Some(dump) = &process.jit.dump {
            // (region, until): live at the sample's time, until its end; else (no code
            // there then) the last code there, asked again next time.
            let region = match time {
                Some(t) => match dump.map.region_at(addr, Some(t)) {
                    Some(i) => Some((
                        i,
                        dump.map
                            .region(i)
                            .and_then(|r| r.end_time)
                            .unwrap_or(u64::MAX),
                    )),
                    None => dump.map.region_at(addr, None).map(|i| (i, 0)),
                },
                None => dump.map.region_at(addr, None).map(|i| (i, u64::MAX)),
            };
            if let Some((index, until)) = region {
                let r = dump.map.region(index);
                let offset = r.map_or(0, |r| addr - r.start);
                // Keyed by line (or, with inline calls, by offset): the return addresses of
                // one line share one lookup.
                let key = (pid, index, dump.map.location_key(index, offset));
                if let Some(&f) = self.jit_cache.get(&key) {
                    return Ok(Resolved::new(f, Origin::Jit, until));
                }
                let module = module_name(&dump.path.to_string_lossy());
                let tier = r.and_then(|r| r.tier.clone());
                for f in dump.map.frames_at(index, offset) {
                    // V8 names a function's position in its script (`JS:*fib app.js:7:13`):
                    // its start line, which the code's line table does not say, and its file
                    // where there is no line table (interpreted code).
                    let (script, line, column) = script_position(&f.function).unwrap_or_default();
                    self.scratch.push((
                        FuncInfo {
                            name: Some(frame_name(&f.function, f.inlined)),
                            file: f.file.or_else(|| script.map(str::to_string)),
                            line,
                            column,
                            module: Some(module.clone()),
                            kind: FuncKind::Jit,
                            // Inlined frames were compiled by the same tier.
                            tier: tier.clone(),
                            ..FuncInfo::default()
                        },
                        f.line,
                    ));
                }
                let f = self.store(sink)?;
                self.jit_cache.insert(key, f);
                return Ok(Resolved::new(f, Origin::Jit, until));
            }
        }
        if let Some(map) = &process.jit.map {
            if let Some((start, entry)) = map.map.covering(addr) {
                let key = (pid, start);
                if let Some(&f) = self.map_cache.get(&key) {
                    return Ok(Resolved::new(f, Origin::Jit, u64::MAX));
                }
                self.scratch.push((
                    FuncInfo {
                        name: Some(String::from_utf8_lossy(&entry.name).into_owned()),
                        module: Some(module_name(&map.path.to_string_lossy())),
                        kind: FuncKind::Jit,
                        ..FuncInfo::default()
                    },
                    0,
                ));
                let f = self.store(sink)?;
                self.map_cache.insert(key, f);
                return Ok(Resolved::new(f, Origin::Jit, u64::MAX));
            }
        }
        // Nothing names it: the address itself, as perf shows it.
        let origin = if anon {
            Origin::UnnamedJit
        } else {
            Origin::Native
        };
        let key = (pid, u64::MAX, addr);
        if let Some(&(f, _)) = self.native_cache.get(&key) {
            return Ok(Resolved::new(f, origin, 0));
        }
        self.scratch.push((
            FuncInfo {
                name: Some(format!("{addr:#018x}")),
                module: Some("[unknown]".to_string()),
                kind: FuncKind::Unsymbolized,
                ..FuncInfo::default()
            },
            0,
        ));
        let f = self.store(sink)?;
        self.native_cache.insert(key, (f, false));
        Ok(Resolved::new(f, origin, 0))
    }
}

/// A frame's function name; an inlined frame is marked ` (inlined)`, as `perf script` does,
/// so that flame graphs tell inlined code from calls and a symbol's self time (its
/// non-inlined frames) stays what `perf report` shows.
fn frame_name(function: &str, inlined: bool) -> String {
    if inlined {
        format!("{function} (inlined)")
    } else {
        function.to_string()
    }
}

/// The script, line and column a JIT function's name ends with (V8: `JS:*fib
/// /app/x.js:7:13`, `LazyCompile:~main x.js:2:10`), when the name has a script part.
fn script_position(name: &str) -> Option<(Option<&str>, u32, u32)> {
    let (_, script) = name.split_once(' ')?;
    let (rest, column) = script.rsplit_once(':')?;
    let (path, line) = rest.rsplit_once(':')?;
    if path.is_empty() {
        return None;
    }
    Some((Some(path), line.parse().ok()?, column.parse().ok()?))
}

fn kernel_placeholder() -> FuncInfo {
    FuncInfo {
        name: Some("[kernel]".to_string()),
        module: Some("[kernel.kallsyms]".to_string()),
        kind: FuncKind::Kernel,
        ..FuncInfo::default()
    }
}

fn unsymbolized(module: &str, offset: u64) -> FuncInfo {
    FuncInfo {
        name: Some(format!("{module}+{offset:#x}")),
        module: Some(module.to_string()),
        kind: FuncKind::Unsymbolized,
        ..FuncInfo::default()
    }
}

/// The file name of a recorded path (`/usr/lib/x86_64-linux-gnu/libc.so.6` → `libc.so.6`).
pub fn module_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

#[cfg(test)]
mod tests {
    use super::script_position;

    #[test]
    fn v8_names_give_their_start_line() {
        assert_eq!(
            script_position("JS:*fib /tmp/busy.js:7:13"),
            Some((Some("/tmp/busy.js"), 7, 13))
        );
        assert_eq!(
            script_position("JS:^requireBuiltin node:internal/bootstrap/realm:420:24"),
            Some((Some("node:internal/bootstrap/realm"), 420, 24))
        );
        assert_eq!(script_position("Builtin:ArrayMap"), None);
        assert_eq!(script_position("JS:~ :1:2"), None);
        assert_eq!(script_position("py::f x.py:a:b"), None);
        assert_eq!(script_position("wasm-function[3] 0x12"), None);
    }
}
