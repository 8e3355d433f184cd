//! The exported C entry points. Each one catches panics and calls only internal functions
//! (never another exported symbol, which ELF interposition could route into a host's stub).

#![allow(non_snake_case)]

use core::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::abi::{self, LineNumberInfo, MethodInlineLoad, MethodLoad, MethodLoadV2, MethodLoadV3};
use crate::collector::{self, LoadEvent};

/// Runs `f`, turning a panic into `default`.
pub(crate) fn guard<R>(default: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(default)
}

/// # Safety
/// `p` is NULL or points to a NUL-terminated string valid for `'a`.
unsafe fn cstr<'a>(p: *const c_char) -> Option<&'a [u8]> {
    if p.is_null() {
        None
    } else {
        // SAFETY: non-NULL and NUL-terminated per the caller's contract.
        Some(unsafe { CStr::from_ptr(p) }.to_bytes())
    }
}

/// # Safety
/// `addr` is NULL or readable for `size` bytes during `'a`.
unsafe fn code<'a>(addr: *const c_void, size: u32) -> &'a [u8] {
    if addr.is_null() || size == 0 {
        &[]
    } else {
        // SAFETY: the JIT reports `size` bytes of code at `addr`, readable during the call.
        unsafe { core::slice::from_raw_parts(addr.cast::<u8>(), size as usize) }
    }
}

/// # Safety
/// `p` is NULL or points to `n` entries valid for `'a`.
unsafe fn table<'a>(p: *const LineNumberInfo, n: u32) -> &'a [LineNumberInfo] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        // SAFETY: the JIT passes `n` entries at `p` (jitprofiling.h contract).
        unsafe { core::slice::from_raw_parts(p, n as usize) }
    }
}

/// Decodes and records one event; the body of `iJIT_NotifyEvent` and `NotifyEvent`.
///
/// # Safety
/// `data` must be what jitprofiling.h specifies for `event` (or NULL).
pub unsafe fn notify_event(event: u32, data: *mut c_void) -> i32 {
    match event {
        abi::EVENT_SHUTDOWN => {
            collector::flush_all(false);
            1
        }
        abi::EVENT_LOAD_FINISHED | abi::EVENT_UPDATE => {
            if data.is_null() {
                return 0;
            }
            // SAFETY: events 13 and 15 carry an iJIT_Method_Load (we read only its 64-byte prefix).
            let m = unsafe { &*data.cast::<MethodLoad>() };
            // SAFETY: the pointers inside come from the JIT and are valid during this call.
            let e = unsafe {
                LoadEvent {
                    method_id: m.method_id,
                    parent_id: 0,
                    name: cstr(m.method_name),
                    class: cstr(m.class_file_name),
                    source: cstr(m.source_file_name),
                    module: None,
                    addr: m.method_load_address as u64,
                    code: code(m.method_load_address, m.method_size),
                    lines: table(m.line_number_table, m.line_number_size),
                }
            };
            if event == abi::EVENT_UPDATE {
                collector::with_state(|s| s.update(&e))
            } else {
                collector::with_state(|s| s.load(&e))
            }
        }
        abi::EVENT_LOAD_FINISHED_V2 | abi::EVENT_LOAD_FINISHED_V3 => {
            if data.is_null() {
                return 0;
            }
            // SAFETY: events 21 and 22 carry iJIT_Method_Load_V2 / _V3; V3 starts with V2.
            let m: &MethodLoadV2 = if event == abi::EVENT_LOAD_FINISHED_V3 {
                unsafe { &(*data.cast::<MethodLoadV3>()).v2 }
            } else {
                unsafe { &*data.cast::<MethodLoadV2>() }
            };
            // SAFETY: as above.
            let e = unsafe {
                LoadEvent {
                    method_id: m.method_id,
                    parent_id: 0,
                    name: cstr(m.method_name),
                    class: cstr(m.class_file_name),
                    source: cstr(m.source_file_name),
                    module: cstr(m.module_name),
                    addr: m.method_load_address as u64,
                    code: code(m.method_load_address, m.method_size),
                    lines: table(m.line_number_table, m.line_number_size),
                }
            };
            collector::with_state(|s| s.load(&e))
        }
        abi::EVENT_INLINE_LOAD_FINISHED => {
            if data.is_null() {
                return 0;
            }
            // SAFETY: event 16 carries an iJIT_Method_Inline_Load.
            let m = unsafe { &*data.cast::<MethodInlineLoad>() };
            // SAFETY: as above.
            let e = unsafe {
                LoadEvent {
                    method_id: m.method_id,
                    parent_id: m.parent_method_id,
                    name: cstr(m.method_name),
                    class: cstr(m.class_file_name),
                    source: cstr(m.source_file_name),
                    module: None,
                    addr: m.method_load_address as u64,
                    code: code(m.method_load_address, m.method_size),
                    lines: table(m.line_number_table, m.line_number_size),
                }
            };
            collector::with_state(|s| s.inline_load(&e))
        }
        abi::EVENT_UNLOAD_START => {
            if data.is_null() {
                return 0;
            }
            // SAFETY: producers pass a pointer whose first 4 bytes are the method id (LLVM
            // MCJIT: &unsigned, ORC: &uint64_t, the docs: iJIT_Method_Load*); read only those.
            let id = unsafe { data.cast::<u32>().read_unaligned() };
            collector::with_state(|s| s.unload(id))
        }
        abi::EVENT_UPDATE_V2 => {
            // Accepted and ignored: no known producer sends it, its layout depends on the
            // header version, and it carries no method id to attach the change to.
            i32::from(!data.is_null())
        }
        _ => 0,
    }
}

fn profiling_active() -> c_uint {
    if collector::with_state(|s| s.ensure_output()) {
        abi::SAMPLING_ON
    } else {
        abi::NOTHING_RUNNING
    }
}

/// `int iJIT_NotifyEvent(iJIT_JVM_EVENT, void*)`: the drop-in for Intel's static stub.
///
/// # Safety
/// `data` must match `event` as jitprofiling.h specifies.
#[no_mangle]
pub unsafe extern "C" fn iJIT_NotifyEvent(event: c_uint, data: *mut c_void) -> c_int {
    // SAFETY: forwarded caller contract.
    guard(0, || unsafe { notify_event(event, data) })
}

/// `unsigned int NotifyEvent(unsigned int, void*)`: the collector entry the official stub
/// binds through `INTEL_JIT_PROFILER64`. It may arrive before `Initialize` returns.
///
/// # Safety
/// `data` must match `event` as jitprofiling.h specifies.
#[no_mangle]
pub unsafe extern "C" fn NotifyEvent(event: c_uint, data: *mut c_void) -> c_uint {
    // SAFETY: forwarded caller contract.
    guard(0, || unsafe { notify_event(event, data) }) as c_uint
}

/// `unsigned int Initialize(void)`: `iJIT_SAMPLING_ON` (1) when the dump can be written,
/// otherwise 0 (so JITs that check `iJIT_IsProfilingActive` skip their reports).
#[no_mangle]
pub extern "C" fn Initialize() -> c_uint {
    guard(0, profiling_active)
}

/// `iJIT_IsProfilingActiveFlags iJIT_IsProfilingActive(void)`.
#[no_mangle]
pub extern "C" fn iJIT_IsProfilingActive() -> c_uint {
    guard(0, profiling_active)
}

/// `unsigned int iJIT_GetNewMethodID(void)`: from 1, atomic; 0 once exhausted.
#[no_mangle]
pub extern "C" fn iJIT_GetNewMethodID() -> c_uint {
    guard(0, collector::new_method_id)
}

/// Legacy `void iJIT_RegisterCallbackEx(void*, iJIT_ModeChangedEx)`: a no-op (the mode never
/// changes).
#[no_mangle]
pub extern "C" fn iJIT_RegisterCallbackEx(
    _user_data: *mut c_void,
    _callback: Option<unsafe extern "C" fn(*mut c_void, c_uint)>,
) {
}

/// Legacy `void FinalizeThread(void)`: a no-op.
#[no_mangle]
pub extern "C" fn FinalizeThread() {}

/// Legacy `void FinalizeProcess(void)`: writes pending loads and flushes the dump.
#[no_mangle]
pub extern "C" fn FinalizeProcess() {
    guard((), || collector::flush_all(false))
}
