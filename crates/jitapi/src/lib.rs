//! **profkit-jitapi**: Intel's JIT Profiling API (`jitprofiling.h`) implemented as a library
//! that writes perf **jitdump** files, so every JIT that reports to VTune can be profiled with
//! `perf record -k 1` + `perf inject --jit`, or samply.
//!
//! Three ways in, one collector:
//!
//! * **Drop-in** for Intel's static stub (JITs linked against `libprofkit_jitapi`):
//!   `iJIT_NotifyEvent`, `iJIT_IsProfilingActive`, `iJIT_GetNewMethodID`, and the legacy
//!   `iJIT_RegisterCallbackEx`, `FinalizeThread`, `FinalizeProcess` ([`ffi`]).
//! * **Collector** for Intel's official stub, loaded via `INTEL_JIT_PROFILER64`:
//!   `Initialize` and `NotifyEvent` ([`ffi`]).
//! * **ITT** module loads, loaded via `INTEL_LIBITTNOTIFY64`: `__itt_api_init` binds
//!   `__itt_module_load_with_sections` and friends; the in-memory ELF object and its DWARF
//!   become one LOAD per function with a DEBUG_INFO2 inline tree ([`itt`]).
//!
//! Layout: [`abi`] holds the C structs with layout assertions, [`lines`] the line-table
//! conventions, [`collector`] the process-wide state (lazy init, fork, deferred parents,
//! output), [`ffi`] and [`itt`] the exported symbols. Output is
//! `$PROFKIT_JITDUMP_DIR/jit-<pid>.dump` (default: the current directory); see docs/jitapi.md.

pub mod abi;
pub mod collector;
pub mod ffi;
pub mod itt;
pub mod lines;

pub use ffi::notify_event;
