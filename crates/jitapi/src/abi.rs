//! `#[repr(C)]` mirrors of the structs and enum values of Intel's `jitprofiling.h` and of the
//! two ITT module structs, with size and offset assertions for LP64 and ILP32
//! (notes/jit-profiling-api.md §1.3 and §2.3).

use core::ffi::{c_char, c_void};
use core::mem::{offset_of, size_of};

/// `iJVM_EVENT_TYPE_SHUTDOWN`: payload NULL; profkit flushes (other engines keep reporting).
pub const EVENT_SHUTDOWN: u32 = 2;
/// `iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED`: [`MethodLoad`].
pub const EVENT_LOAD_FINISHED: u32 = 13;
/// `iJVM_EVENT_TYPE_METHOD_UNLOAD_START`: a pointer whose first `u32` is the method id.
pub const EVENT_UNLOAD_START: u32 = 14;
/// `iJVM_EVENT_TYPE_METHOD_UPDATE`: [`MethodLoad`] (id, address, size matter).
pub const EVENT_UPDATE: u32 = 15;
/// `iJVM_EVENT_TYPE_METHOD_INLINE_LOAD_FINISHED`: [`MethodInlineLoad`].
pub const EVENT_INLINE_LOAD_FINISHED: u32 = 16;
/// `iJVM_EVENT_TYPE_METHOD_UPDATE_V2` (undocumented): [`MethodUpdate`].
pub const EVENT_UPDATE_V2: u32 = 17;
/// `iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED_V2`: [`MethodLoadV2`].
pub const EVENT_LOAD_FINISHED_V2: u32 = 21;
/// `iJVM_EVENT_TYPE_METHOD_LOAD_FINISHED_V3`: [`MethodLoadV3`].
pub const EVENT_LOAD_FINISHED_V3: u32 = 22;

/// `iJIT_NOTHING_RUNNING`.
pub const NOTHING_RUNNING: u32 = 0;
/// `iJIT_SAMPLING_ON`.
pub const SAMPLING_ON: u32 = 1;

/// `LineNumberInfo`: `Offset` is, by Intel's convention, the *end* of the range of `LineNumber`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineNumberInfo {
    /// Offset from the start of the code region.
    pub offset: u32,
    /// Source line.
    pub line_number: u32,
}

/// `iJIT_Method_Load` (the first 64 bytes; legacy headers append fields we never read).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MethodLoad {
    /// Method id (0 is invalid).
    pub method_id: u32,
    /// NUL-terminated name, may be NULL.
    pub method_name: *const c_char,
    /// Start of the code.
    pub method_load_address: *const c_void,
    /// Code size in bytes.
    pub method_size: u32,
    /// Entries in `line_number_table`.
    pub line_number_size: u32,
    /// Line table, may be NULL.
    pub line_number_table: *const LineNumberInfo,
    /// Obsolete.
    pub class_id: u32,
    /// Class name, may be NULL.
    pub class_file_name: *const c_char,
    /// Source file, may be NULL.
    pub source_file_name: *const c_char,
}

/// `iJIT_Method_Load_V2`: no `class_id`, adds `module_name`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MethodLoadV2 {
    /// Method id (0 is invalid).
    pub method_id: u32,
    /// NUL-terminated name, may be NULL.
    pub method_name: *const c_char,
    /// Start of the code.
    pub method_load_address: *const c_void,
    /// Code size in bytes.
    pub method_size: u32,
    /// Entries in `line_number_table`.
    pub line_number_size: u32,
    /// Line table, may be NULL.
    pub line_number_table: *const LineNumberInfo,
    /// Class name, may be NULL.
    pub class_file_name: *const c_char,
    /// Source file, may be NULL.
    pub source_file_name: *const c_char,
    /// Module name, may be NULL.
    pub module_name: *const c_char,
}

/// `iJIT_Method_Load_V3`: V2 plus the code architecture.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MethodLoadV3 {
    /// The V2 part.
    pub v2: MethodLoadV2,
    /// `iJIT_CodeArchitecture`: 0 native, 1 32-bit, 2 64-bit.
    pub module_arch: u32,
}

/// `iJIT_Method_Inline_Load`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MethodInlineLoad {
    /// Id of the inlined instance.
    pub method_id: u32,
    /// Id of the immediate parent (the top method or another inline).
    pub parent_method_id: u32,
    /// NUL-terminated name, may be NULL.
    pub method_name: *const c_char,
    /// Start of the inlined code.
    pub method_load_address: *const c_void,
    /// Size of the inlined code.
    pub method_size: u32,
    /// Entries in `line_number_table`.
    pub line_number_size: u32,
    /// Line table relative to `method_load_address`, may be NULL.
    pub line_number_table: *const LineNumberInfo,
    /// Class name, may be NULL.
    pub class_file_name: *const c_char,
    /// Source file, may be NULL.
    pub source_file_name: *const c_char,
}

/// `iJIT_Method_Update` (current header).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MethodUpdate {
    /// Start of the updated range.
    pub load_address: *const c_void,
    /// Size of the range.
    pub size: u32,
    /// `iJIT_SegmentType`.
    pub segment_type: u32,
    /// Format description.
    pub data_format: *const c_char,
}

/// `__itt_section_info`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IttSectionInfo {
    /// Section name.
    pub name: *const c_char,
    /// 1 bss, 2 data, 3 text.
    pub section_type: u32,
    /// ELF section flags.
    pub flags: usize,
    /// Load address of the section.
    pub start_addr: *const c_void,
    /// Section size.
    pub size: usize,
    /// Offset of the section in the object buffer.
    pub file_offset: usize,
}

/// `__itt_id`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IttId {
    /// Three 64-bit parts.
    pub d: [u64; 3],
}

/// `__itt_module_object`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IttModuleObject {
    /// Structure version.
    pub version: u32,
    /// Module id.
    pub module_id: IttId,
    /// 1 = ELF.
    pub module_type: u32,
    /// Module name (LLVM: MD5 hex of the buffer).
    pub module_name: *const c_char,
    /// The object file in memory.
    pub module_buffer: *const c_void,
    /// Its size.
    pub module_size: usize,
    /// Section load addresses.
    pub section_array: *const IttSectionInfo,
    /// Entries in `section_array`.
    pub section_number: usize,
}

/// `__itt_api_info`: one entry of the function table the static part hands to `__itt_api_init`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IttApiInfo {
    /// Function name, NULL at the end of the table.
    pub name: *const c_char,
    /// Where the bound function pointer is stored.
    pub func_ptr: *mut *mut c_void,
    /// The static part's init stub.
    pub init_func: *mut c_void,
    /// The static part's no-op.
    pub null_func: *mut c_void,
    /// `__itt_group_id`.
    pub group: u32,
}

/// Offset of `api_list_ptr` in `__itt_global`: magic, three `unsigned long` versions, three
/// `long` counters, the mutex, then `lib`, `error_handler`, `dll_path_ptr`.
pub const ITT_GLOBAL_API_LIST_OFFSET: usize = {
    let word = size_of::<usize>();
    let before_mutex = 8 + 6 * word;
    let align = core::mem::align_of::<libc::pthread_mutex_t>();
    let mutex_at = before_mutex.div_ceil(align) * align;
    let after_mutex = mutex_at + size_of::<libc::pthread_mutex_t>();
    after_mutex.div_ceil(word) * word + 3 * word
};

#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(size_of::<LineNumberInfo>() == 8);
    assert!(size_of::<MethodLoad>() == 64);
    assert!(offset_of!(MethodLoad, method_name) == 8);
    assert!(offset_of!(MethodLoad, method_size) == 24);
    assert!(offset_of!(MethodLoad, line_number_size) == 28);
    assert!(offset_of!(MethodLoad, line_number_table) == 32);
    assert!(offset_of!(MethodLoad, class_id) == 40);
    assert!(offset_of!(MethodLoad, class_file_name) == 48);
    assert!(offset_of!(MethodLoad, source_file_name) == 56);
    assert!(size_of::<MethodLoadV2>() == 64);
    assert!(offset_of!(MethodLoadV2, class_file_name) == 40);
    assert!(offset_of!(MethodLoadV2, module_name) == 56);
    assert!(size_of::<MethodLoadV3>() == 72);
    assert!(offset_of!(MethodLoadV3, module_arch) == 64);
    assert!(size_of::<MethodInlineLoad>() == 56);
    assert!(offset_of!(MethodInlineLoad, parent_method_id) == 4);
    assert!(offset_of!(MethodInlineLoad, method_name) == 8);
    assert!(offset_of!(MethodInlineLoad, line_number_table) == 32);
    assert!(offset_of!(MethodInlineLoad, source_file_name) == 48);
    assert!(size_of::<MethodUpdate>() == 24);
    assert!(size_of::<IttSectionInfo>() == 48);
    assert!(offset_of!(IttSectionInfo, start_addr) == 24);
    assert!(offset_of!(IttSectionInfo, file_offset) == 40);
    assert!(size_of::<IttModuleObject>() == 80);
    assert!(offset_of!(IttModuleObject, module_type) == 32);
    assert!(offset_of!(IttModuleObject, module_buffer) == 48);
    assert!(offset_of!(IttModuleObject, section_number) == 72);
    assert!(size_of::<IttApiInfo>() == 40);
};

#[cfg(all(
    target_pointer_width = "64",
    target_arch = "x86_64",
    target_env = "gnu"
))]
const _: () = assert!(ITT_GLOBAL_API_LIST_OFFSET == 120);

#[cfg(target_pointer_width = "32")]
const _: () = {
    assert!(size_of::<MethodLoad>() == 36);
    assert!(offset_of!(MethodLoad, source_file_name) == 32);
    assert!(size_of::<MethodLoadV2>() == 36);
    assert!(offset_of!(MethodLoadV2, module_name) == 32);
    assert!(size_of::<MethodLoadV3>() == 40);
    assert!(size_of::<MethodInlineLoad>() == 36);
    assert!(offset_of!(MethodInlineLoad, source_file_name) == 32);
    assert!(size_of::<MethodUpdate>() == 16);
};
