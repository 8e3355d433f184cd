//! On-disk constants of perf.data (from the kernel's `include/uapi/linux/perf_event.h` and
//! perf's `tools/perf/util/{header.h,event.h}`) and the open newtype [`RecordType`].

/// `PERFILE2`: the magic of a little-endian perf.data file (file and pipe mode).
pub const MAGIC_LE: [u8; 8] = *b"PERFILE2";
/// The magic of a big-endian perf.data file (the 64-bit value byte-swapped).
pub const MAGIC_BE: [u8; 8] = *b"2ELIFREP";
/// Size of `struct perf_file_header` (file mode).
pub const FILE_HEADER_SIZE: u64 = 104;
/// Size of `struct perf_pipe_file_header` (pipe mode).
pub const PIPE_HEADER_SIZE: u64 = 16;
/// Size of `struct perf_event_header`, the header of every record.
pub const RECORD_HEADER_SIZE: usize = 8;
/// `PERF_ATTR_SIZE_VER0`: the smallest `perf_event_attr`.
pub const ATTR_SIZE_VER0: u64 = 64;

/// `PERF_RECORD_MISC_CPUMODE_MASK` and its values.
pub const MISC_CPUMODE_MASK: u16 = 0b111;
/// `PERF_RECORD_MISC_KERNEL`.
pub const MISC_KERNEL: u16 = 1;
/// `PERF_RECORD_MISC_USER`.
pub const MISC_USER: u16 = 2;
/// `PERF_RECORD_MISC_GUEST_KERNEL`.
pub const MISC_GUEST_KERNEL: u16 = 4;
/// `PERF_RECORD_MISC_MMAP_DATA` (MMAP/MMAP2: a non-executable mapping).
pub const MISC_MMAP_DATA: u16 = 1 << 13;
/// `PERF_RECORD_MISC_COMM_EXEC` (COMM: the name changed because of an exec).
pub const MISC_COMM_EXEC: u16 = 1 << 13;
/// `PERF_RECORD_MISC_MMAP_BUILD_ID` (MMAP2 carries a build id instead of the inode).
pub const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// `PERF_RECORD_MISC_BUILD_ID_SIZE` (build-id feature entries: byte 20 is the length).
pub const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// `PROT_EXEC` in an MMAP2 record's `prot`.
pub const PROT_EXEC: u32 = 4;

/// Callchain context markers: entries `>= PERF_CONTEXT_MAX` are not addresses.
pub const PERF_CONTEXT_HV: u64 = (-32i64) as u64;
/// Following frames are kernel frames.
pub const PERF_CONTEXT_KERNEL: u64 = (-128i64) as u64;
/// Following frames are user frames.
pub const PERF_CONTEXT_USER: u64 = (-512i64) as u64;
/// Following frames are guest frames.
pub const PERF_CONTEXT_GUEST: u64 = (-2048i64) as u64;
/// Following frames are guest kernel frames.
pub const PERF_CONTEXT_GUEST_KERNEL: u64 = (-2176i64) as u64;
/// Following frames are guest user frames.
pub const PERF_CONTEXT_GUEST_USER: u64 = (-2560i64) as u64;
/// Callchain entries at or above this value are context markers.
pub const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;

/// `PERF_SAMPLE_*` bits of `perf_event_attr.sample_type`.
pub(crate) const PERF_SAMPLE_IP: u64 = 1 << 0;
pub(crate) const PERF_SAMPLE_TID: u64 = 1 << 1;
pub(crate) const PERF_SAMPLE_TIME: u64 = 1 << 2;
pub(crate) const PERF_SAMPLE_ADDR: u64 = 1 << 3;
pub(crate) const PERF_SAMPLE_READ: u64 = 1 << 4;
pub(crate) const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub(crate) const PERF_SAMPLE_ID: u64 = 1 << 6;
pub(crate) const PERF_SAMPLE_CPU: u64 = 1 << 7;
pub(crate) const PERF_SAMPLE_PERIOD: u64 = 1 << 8;
pub(crate) const PERF_SAMPLE_STREAM_ID: u64 = 1 << 9;
pub(crate) const PERF_SAMPLE_RAW: u64 = 1 << 10;
pub(crate) const PERF_SAMPLE_BRANCH_STACK: u64 = 1 << 11;
pub(crate) const PERF_SAMPLE_REGS_USER: u64 = 1 << 12;
pub(crate) const PERF_SAMPLE_STACK_USER: u64 = 1 << 13;
pub(crate) const PERF_SAMPLE_WEIGHT: u64 = 1 << 14;
pub(crate) const PERF_SAMPLE_DATA_SRC: u64 = 1 << 15;
pub(crate) const PERF_SAMPLE_IDENTIFIER: u64 = 1 << 16;
pub(crate) const PERF_SAMPLE_TRANSACTION: u64 = 1 << 17;
pub(crate) const PERF_SAMPLE_REGS_INTR: u64 = 1 << 18;
pub(crate) const PERF_SAMPLE_PHYS_ADDR: u64 = 1 << 19;
pub(crate) const PERF_SAMPLE_AUX: u64 = 1 << 20;
pub(crate) const PERF_SAMPLE_CGROUP: u64 = 1 << 21;
pub(crate) const PERF_SAMPLE_DATA_PAGE_SIZE: u64 = 1 << 22;
pub(crate) const PERF_SAMPLE_CODE_PAGE_SIZE: u64 = 1 << 23;
pub(crate) const PERF_SAMPLE_WEIGHT_STRUCT: u64 = 1 << 24;

/// The `PERF_SAMPLE_*` bits with perf's names, in the kernel's order.
pub const SAMPLE_TYPE_BITS: &[(u64, &str)] = &[
    (PERF_SAMPLE_IP, "IP"),
    (PERF_SAMPLE_TID, "TID"),
    (PERF_SAMPLE_TIME, "TIME"),
    (PERF_SAMPLE_ADDR, "ADDR"),
    (PERF_SAMPLE_READ, "READ"),
    (PERF_SAMPLE_CALLCHAIN, "CALLCHAIN"),
    (PERF_SAMPLE_ID, "ID"),
    (PERF_SAMPLE_CPU, "CPU"),
    (PERF_SAMPLE_PERIOD, "PERIOD"),
    (PERF_SAMPLE_STREAM_ID, "STREAM_ID"),
    (PERF_SAMPLE_RAW, "RAW"),
    (PERF_SAMPLE_BRANCH_STACK, "BRANCH_STACK"),
    (PERF_SAMPLE_REGS_USER, "REGS_USER"),
    (PERF_SAMPLE_STACK_USER, "STACK_USER"),
    (PERF_SAMPLE_WEIGHT, "WEIGHT"),
    (PERF_SAMPLE_DATA_SRC, "DATA_SRC"),
    (PERF_SAMPLE_IDENTIFIER, "IDENTIFIER"),
    (PERF_SAMPLE_TRANSACTION, "TRANSACTION"),
    (PERF_SAMPLE_REGS_INTR, "REGS_INTR"),
    (PERF_SAMPLE_PHYS_ADDR, "PHYS_ADDR"),
    (PERF_SAMPLE_AUX, "AUX"),
    (PERF_SAMPLE_CGROUP, "CGROUP"),
    (PERF_SAMPLE_DATA_PAGE_SIZE, "DATA_PAGE_SIZE"),
    (PERF_SAMPLE_CODE_PAGE_SIZE, "CODE_PAGE_SIZE"),
    (PERF_SAMPLE_WEIGHT_STRUCT, "WEIGHT_STRUCT"),
];

/// `sample_type` as perf prints it: `IP|TID|TIME|CALLCHAIN|PERIOD`.
pub fn sample_type_names(sample_type: u64) -> String {
    let mut out = String::new();
    let mut rest = sample_type;
    for &(bit, name) in SAMPLE_TYPE_BITS {
        if sample_type & bit != 0 {
            if !out.is_empty() {
                out.push('|');
            }
            out.push_str(name);
            rest &= !bit;
        }
    }
    if rest != 0 {
        if !out.is_empty() {
            out.push('|');
        }
        out.push_str(&format!("{rest:#x}"));
    }
    out
}

/// Feature bits of the file header (`HEADER_*` in perf's header.h), with perf's names.
pub const FEATURE_NAMES: &[(u32, &str)] = &[
    (1, "TRACING_DATA"),
    (2, "BUILD_ID"),
    (3, "HOSTNAME"),
    (4, "OSRELEASE"),
    (5, "VERSION"),
    (6, "ARCH"),
    (7, "NRCPUS"),
    (8, "CPUDESC"),
    (9, "CPUID"),
    (10, "TOTAL_MEM"),
    (11, "CMDLINE"),
    (12, "EVENT_DESC"),
    (13, "CPU_TOPOLOGY"),
    (14, "NUMA_TOPOLOGY"),
    (15, "BRANCH_STACK"),
    (16, "PMU_MAPPINGS"),
    (17, "GROUP_DESC"),
    (18, "AUXTRACE"),
    (19, "STAT"),
    (20, "CACHE"),
    (21, "SAMPLE_TIME"),
    (22, "MEM_TOPOLOGY"),
    (23, "CLOCKID"),
    (24, "DIR_FORMAT"),
    (25, "BPF_PROG_INFO"),
    (26, "BPF_BTF"),
    (27, "COMPRESSED"),
    (28, "CPU_PMU_CAPS"),
    (29, "CLOCK_DATA"),
    (30, "HYBRID_TOPOLOGY"),
    (31, "PMU_CAPS"),
    (128, "SIMPLEPERF_FILE"),
    (129, "SIMPLEPERF_META_INFO"),
    (130, "SIMPLEPERF_DEBUG_UNWIND"),
    (131, "SIMPLEPERF_DEBUG_UNWIND_FILE"),
    (132, "SIMPLEPERF_FILE2"),
];

/// The name of feature bit `bit` (`FEATURE_<n>` when unknown).
pub fn feature_name(bit: u32) -> String {
    FEATURE_NAMES
        .iter()
        .find(|(b, _)| *b == bit)
        .map_or_else(|| format!("FEATURE_{bit}"), |(_, n)| (*n).to_string())
}

/// The feature bit of EVENT_DESC (attribute names and ids).
pub const FEATURE_EVENT_DESC: u32 = 12;
/// The feature bit of BUILD_ID.
pub const FEATURE_BUILD_ID: u32 = 2;
/// The feature bit of CMDLINE.
pub const FEATURE_CMDLINE: u32 = 11;
/// The feature bit of PMU_MAPPINGS.
pub const FEATURE_PMU_MAPPINGS: u32 = 16;
/// The feature bit of COMPRESSED (`perf record -z`: the data has COMPRESSED records).
pub const FEATURE_COMPRESSED: u32 = 27;
/// The feature bit of SIMPLEPERF_META_INFO.
pub const FEATURE_SIMPLEPERF_META_INFO: u32 = 129;

profkit_common::open_tag! {
    /// A record's `type` (`PERF_RECORD_*`): an open newtype, unknown values pass through.
    /// Names are perf's without the `PERF_RECORD_` prefix: the kernel's types 1 ..= 21, then
    /// perf's own 64 ..= 83 (HEADER_ATTR and HEADER_FEATURE carry pipe mode's attrs and
    /// features, an AUXTRACE record's payload follows it, COMPRESSED is zstd from
    /// `perf record -z`); `Display` gives `UNKNOWN_<type>` for the others.
    pub struct RecordType(u32) prefix "PERF_RECORD_" {
        MMAP = 1, LOST = 2, COMM = 3, EXIT = 4, THROTTLE = 5, UNTHROTTLE = 6, FORK = 7,
        READ = 8, SAMPLE = 9, MMAP2 = 10, AUX = 11, ITRACE_START = 12, LOST_SAMPLES = 13,
        SWITCH = 14, SWITCH_CPU_WIDE = 15, NAMESPACES = 16, KSYMBOL = 17, BPF_EVENT = 18,
        CGROUP = 19, TEXT_POKE = 20, AUX_OUTPUT_HW_ID = 21,
        HEADER_ATTR = 64, HEADER_EVENT_TYPE = 65, HEADER_TRACING_DATA = 66,
        HEADER_BUILD_ID = 67, FINISHED_ROUND = 68, ID_INDEX = 69, AUXTRACE_INFO = 70,
        AUXTRACE = 71, AUXTRACE_ERROR = 72, THREAD_MAP = 73, CPU_MAP = 74, STAT_CONFIG = 75,
        STAT = 76, STAT_ROUND = 77, EVENT_UPDATE = 78, TIME_CONV = 79, HEADER_FEATURE = 80,
        COMPRESSED = 81, FINISHED_INIT = 82, COMPRESSED2 = 83,
    }
    unknown "UNKNOWN_{}"
}

impl RecordType {
    /// Whether the kernel emits it (types below 64); others are written by perf itself.
    pub fn is_kernel(self) -> bool {
        self.0 < 64
    }
}

/// The clock name of a `clockid_t` (`CLOCK_MONOTONIC` …).
pub fn clock_name(clockid: u32) -> &'static str {
    match clockid {
        0 => "CLOCK_REALTIME",
        1 => "CLOCK_MONOTONIC",
        2 => "CLOCK_PROCESS_CPUTIME_ID",
        3 => "CLOCK_THREAD_CPUTIME_ID",
        4 => "CLOCK_MONOTONIC_RAW",
        5 => "CLOCK_REALTIME_COARSE",
        6 => "CLOCK_MONOTONIC_COARSE",
        7 => "CLOCK_BOOTTIME",
        8 => "CLOCK_REALTIME_ALARM",
        9 => "CLOCK_BOOTTIME_ALARM",
        11 => "CLOCK_TAI",
        _ => "unknown clock",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(RecordType::SAMPLE.to_string(), "SAMPLE");
        assert_eq!(RecordType(21).to_string(), "AUX_OUTPUT_HW_ID");
        assert_eq!(RecordType::COMPRESSED2.to_string(), "COMPRESSED2");
        assert_eq!(RecordType(0).to_string(), "UNKNOWN_0");
        assert_eq!(RecordType(22).to_string(), "UNKNOWN_22");
        assert_eq!(RecordType(84).to_string(), "UNKNOWN_84");
        assert_eq!(sample_type_names(0x127), "IP|TID|TIME|CALLCHAIN|PERIOD");
        assert_eq!(sample_type_names(1 << 40), "0x10000000000");
        assert_eq!(feature_name(29), "CLOCK_DATA");
        assert_eq!(feature_name(99), "FEATURE_99");
    }
}
