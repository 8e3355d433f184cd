//! The synthetic libraries of the sampled functions: one per module (named after it), in
//! which every sampled (function, line) has a relative address of its own, given from one
//! counter starting at [`SYNTHETIC_BASE`] when it is first sampled.
//!
//! The libraries have no symbol table: fxprof names a frame from its library's symbol table
//! when the frame is interned, so a table would have to hold every line of a function before
//! any of its frames is interned — the end of the input, when all stacks would then be
//! interned one after the other instead of while the input streams. Without one, a frame is
//! interned as soon as its address is given, and the written profile gets its functions'
//! names, files and lines from [`SourceLines`] ([`super::lines`]).

use rustc_hash::FxHashMap as HashMap;

use fxprof_processed_profile::{
    debugid::DebugId, CategoryPairHandle, Frame, FrameFlags, FrameInfo, LibraryHandle, LibraryInfo,
    Profile, StringHandle,
};
use profkit_model::FuncId;
use rustc_hash::FxHashMap;

use super::lines::SourceLines;

/// A sampled function, as declared.
#[derive(Debug)]
pub(super) struct SampledFunc {
    /// Its name (for a label frame when the address space is full).
    pub(super) name: StringHandle,
    pub(super) category: CategoryPairHandle,
    pub(super) flags: FrameFlags,
    /// Its display name.
    pub(super) display: String,
    /// Its library: its module, or a name for its kind.
    pub(super) module: String,
    /// Its source file and start line.
    pub(super) file: Option<String>,
    pub(super) start_line: u32,
}

/// What a declared function keeps.
#[derive(Debug)]
struct Func {
    name: StringHandle,
    category: CategoryPairHandle,
    flags: FrameFlags,
    lib: LibraryHandle,
    /// Its index in [`SourceLines`].
    function: u32,
}

/// The synthetic libraries and their addresses.
#[derive(Debug, Default)]
pub(super) struct Synthetic {
    funcs: FxHashMap<FuncId, Func>,
    addresses: FxHashMap<(FuncId, u32), Option<u32>>,
    libs: HashMap<String, LibraryHandle>,
    /// What each address stands for.
    lines: SourceLines,
}

impl Synthetic {
    /// Whether `func` was declared ([`Synthetic::declare`]).
    pub(super) fn knows(&self, func: FuncId) -> bool {
        self.funcs.contains_key(&func)
    }

    /// Declares a sampled function; its module's library is added with its first function.
    pub(super) fn declare(&mut self, profile: &mut Profile, id: FuncId, f: SampledFunc) {
        let lib = match self.libs.get(&f.module) {
            Some(&lib) => lib,
            None => {
                let lib = profile.add_lib(LibraryInfo {
                    name: f.module.clone(),
                    debug_name: f.module.clone(),
                    path: f.module.clone(),
                    debug_path: f.module.clone(),
                    debug_id: DebugId::nil(),
                    code_id: None,
                    arch: None,
                    symbol_table: None,
                });
                self.libs.insert(f.module, lib);
                lib
            }
        };
        let function = self
            .lines
            .add_function(f.display, f.file.as_deref(), f.start_line);
        self.funcs.insert(
            id,
            Func {
                name: f.name,
                category: f.category,
                flags: f.flags,
                lib,
                function,
            },
        );
    }

    /// The frame of declared function `func` at `line`: at its relative address, given on
    /// first use (a label frame when the address space is full); `None` if `func` was not
    /// declared.
    pub(super) fn frame(&mut self, func: FuncId, line: u32) -> Option<FrameInfo> {
        let f = self.funcs.get(&func)?;
        let address = match self.addresses.get(&(func, line)) {
            Some(&a) => a,
            None => {
                let a = self.lines.push(f.function, line);
                self.addresses.insert((func, line), a);
                a
            }
        };
        let frame = match address {
            Some(a) => Frame::RelativeAddressFromInstructionPointer(f.lib, a),
            None => Frame::Label(f.name),
        };
        Some(FrameInfo {
            frame,
            category_pair: f.category,
            flags: f.flags,
        })
    }

    /// What each address stands for.
    pub(super) fn lines(&self) -> &SourceLines {
        &self.lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fxprof_processed_profile::{CategoryHandle, ReferenceTimestamp, SamplingInterval};

    #[test]
    fn a_library_per_module_an_address_per_function_and_line() {
        let mut p = Profile::new(
            "t",
            ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
            SamplingInterval::from_nanos(1),
        );
        let mut s = Synthetic::default();
        for (id, module) in [(1, "m"), (2, "m"), (3, "n")] {
            let f = SampledFunc {
                name: p.intern_string("f"),
                category: CategoryHandle::OTHER.into(),
                flags: FrameFlags::empty(),
                display: format!("f{id}"),
                module: module.to_string(),
                file: None,
                start_line: 0,
            };
            s.declare(&mut p, FuncId(id), f);
        }
        assert!(s.knows(FuncId(3)) && !s.knows(FuncId(4)));
        let at = |s: &mut Synthetic, func, line| match s.frame(FuncId(func), line).map(|f| f.frame)
        {
            Some(Frame::RelativeAddressFromInstructionPointer(lib, a)) => (lib, a),
            other => panic!("{other:?}"),
        };
        let (m1, a) = at(&mut s, 1, 10);
        let (m2, b) = at(&mut s, 2, 10);
        let (n, c) = at(&mut s, 3, 0);
        assert_eq!(m1, m2);
        assert_ne!(m1, n);
        assert_eq!(
            [a, b, c],
            [SYNTHETIC_BASE, SYNTHETIC_BASE + 1, SYNTHETIC_BASE + 2]
        );
        assert_eq!(at(&mut s, 1, 10), (m1, a), "the same address again");
        assert_eq!(at(&mut s, 1, 11).1, SYNTHETIC_BASE + 3);
        assert!(s.frame(FuncId(4), 1).is_none());
    }

    use super::super::lines::SYNTHETIC_BASE;
}
