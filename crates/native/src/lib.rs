//! Native code for perf.data: the ELF binaries a recording names (build ids, symbols, DWARF
//! lines and inline frames), finding them, kernel symbols, and unwinding
//! `--call-graph dwarf` user stacks with framehop, JIT code included.
//!
//! This crate takes plain values — paths, build ids, addresses, registers, stack bytes — and
//! knows nothing of perf.data's records or of profkit's model: a driver reads the recording
//! (profkit-perf) and feeds both.
//!
//! # Addresses
//! An **AVMA** is an address in the profiled process, an **SVMA** an address as the ELF file
//! states it. A [`Mapping`] (from an `MMAP2` record: start, len, pgoff, and the binary's
//! segments) converts one to the other; symbols and DWARF are looked up by SVMA, the
//! unwinder works in AVMAs. Return addresses (every frame of a callchain or an unwind but the
//! first) point after the call: look up `address - 1`.
//!
//! # API layout
//! * [`Binary`]: one mapped ELF file — [`Binary::build_id`], [`Binary::mapping`],
//!   [`Binary::lookup`] (frames innermost first, [`Symbolized`]: DWARF inline frames with
//!   file:line, else the symbol table; cached per address), [`Binary::symbol`] (the symbol
//!   table only), [`Binary::attach_debug_file`], [`Binary::set_debug_file`].
//! * [`Binaries`]: finds the file for a recorded (path, build id) — the path, perf's
//!   `~/.debug` build-id cache, `/usr/lib/debug/.build-id`, search directories — once, and
//!   lists what was missing or another build ([`Binaries::problems`]).
//!   [`paths`] says which recorded names are files at all ([`paths::is_file_backed`],
//!   [`paths::jitdump_pid`], …).
//! * [`Kallsyms`]: kernel symbols from `/proc/kallsyms` text, and whether they were hidden
//!   ([`Kallsyms::is_restricted`]).
//! * [`Unwinder`]: framehop's x86-64 unwinder for one process: modules from binaries
//!   ([`Unwinder::add_binary`]) and from jitdump unwinding info ([`Unwinder::add_jit`]),
//!   [`Unwinder::unwind`] from [`UserRegs`] and a stack copy to return addresses.
//! * [`demangle()`]: C++ and Rust symbol names made readable (perf's rules; llvm-symbolizer's
//!   with [`demangle_as`]) — the workspace's one demangler.
//! * [`LlvmSymbolizer`]: symbolization by llvm-symbolizer's rules, for what profkit compares
//!   with LLVM's tools (profkit-xray's `Symbolizer`).
//!
//! ```no_run
//! use profkit_native::{Binaries, BuildId, Unwinder, UserRegs};
//! use std::path::Path;
//!
//! let mut binaries = Binaries::new();
//! let id = BuildId::from_hex("93ac61ec5a8eb1396f9fbd350e3169a558528a40");
//! // From an MMAP2 record: path, start, len, pgoff (and perhaps a build id).
//! let path = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
//! if let Some(bin) = binaries.find(path, id.as_ref()) {
//!     let mapping = bin.mapping(0x7f00_0000_0000, 0x15_5000, 0x2_6000).unwrap();
//!     let mut unwinder = Unwinder::new();
//!     unwinder.add_binary(&bin, &mapping);
//!     // From a sample: ip, the user registers and the user stack copy.
//!     let regs = UserRegs { ip: 0x7f00_0000_1234, sp: 0x7ffd_0000_0000, bp: 0 };
//!     let mut frames = Vec::new();
//!     unwinder.unwind(regs, &[0u8; 64], &mut frames);
//!     let leaf = bin.lookup(mapping.to_svma(regs.ip));
//!     let callers = frames.iter().map(|&ra| bin.lookup(mapping.to_svma(ra) - 1));
//! }
//! for problem in binaries.problems() {
//!     eprintln!("warning: {problem}");
//! }
//! ```

pub mod binary;
pub mod build_id;
mod bytes;
mod demangle;
pub mod error;
pub mod finder;
#[doc(hidden)]
pub mod harness;
pub mod kernel;
pub mod llvm;
pub mod mapping;
pub mod paths;
pub mod unwind;

pub use binary::{Binary, BinaryKind, Frame, Segment, Source, Symbol, Symbolized};
pub use build_id::BuildId;
pub use bytes::SectionBytes;
pub use demangle::{demangle, demangle_as, set_cpp_parameters, Style};
pub use error::{Error, ErrorKind, Result, Subject};
pub use finder::{Binaries, Problem, ProblemKind};
pub use kernel::{Kallsyms, KernelSymbol};
pub use llvm::{LlvmSymbol, LlvmSymbolizer};
pub use mapping::Mapping;
pub use unwind::{JitPlacement, JitUnwindInfo, UnwindEnd, Unwinder, UserRegs};
