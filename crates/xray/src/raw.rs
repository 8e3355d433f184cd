//! On-disk constants and open tag newtypes (unknown values pass through).

/// Size of the file header shared by basic and FDR traces.
pub const HEADER_SIZE: usize = 32;
/// Size of a basic-mode record.
pub const BASIC_RECORD_SIZE: usize = 32;
/// Size of an FDR function record.
pub const FDR_FUNCTION_RECORD_SIZE: usize = 8;
/// Size of an FDR metadata record.
pub const FDR_METADATA_RECORD_SIZE: usize = 16;
/// Largest FDR function id: function records keep 28 bits.
pub const MAX_FDR_FUNC_ID: u32 = 0x0FFF_FFFF;

/// Byte order of a trace (profkit-common's). The runtime writes the host's order;
/// little-endian in practice.
pub use profkit_common::Endian;

/// `N` bytes at `off`, or `None` when they are not all there.
pub(crate) use profkit_common::endian::array as bytes_at;

/// `N` bytes at a constant offset of a fixed-size record (zero-filled past the end).
#[inline(always)]
pub(crate) fn field<const N: usize, const M: usize>(rec: &[u8; M], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = at
            .checked_add(i)
            .and_then(|j| rec.get(j))
            .copied()
            .unwrap_or(0);
    }
    out
}

profkit_common::open_tag! {
    /// Header `type` field: 0 = basic ("naive") mode, 1 = Flight Data Recorder mode.
    pub struct TraceType(u16) {
        /// Basic / naive mode (32-byte records).
        BASIC = 0 => "basic",
        /// Flight Data Recorder mode.
        FDR = 1 => "fdr",
    }
    unknown "unknown({})"
}

profkit_common::open_tag! {
    /// Kind of an FDR metadata record (7 bits of the first byte).
    pub struct MetadataKind(u8) {
        /// Starts a block; carries the thread id.
        NEW_BUFFER = 0 => "NewBuffer",
        /// Ends a fixed-size buffer (version 1 only).
        END_OF_BUFFER = 1 => "EndOfBuffer",
        /// CPU id and absolute TSC.
        NEW_CPU_ID = 2 => "NewCPUId",
        /// New base TSC.
        TSC_WRAP = 3 => "TSCWrap",
        /// Wall-clock seconds and microseconds.
        WALLTIME_MARKER = 4 => "WalltimeMarker",
        /// Custom event header; a payload follows.
        CUSTOM_EVENT_MARKER = 5 => "CustomEventMarker",
        /// One argument of the preceding function record.
        CALL_ARGUMENT = 6 => "CallArgument",
        /// Number of bytes of the buffer that follow (version 2+).
        BUFFER_EXTENTS = 7 => "BufferExtents",
        /// Typed event header; a payload follows (version 5).
        TYPED_EVENT_MARKER = 8 => "TypedEventMarker",
        /// Process id (version 3+).
        PID = 9 => "Pid",
    }
    unknown "unknown({})"
}

profkit_common::open_tag! {
    /// Kind of a function record (FDR: 3 bits; basic: a byte).
    pub struct FunctionKind(u8) {
        /// Function entry.
        ENTER = 0 => "Enter",
        /// Function exit.
        EXIT = 1 => "Exit",
        /// Exit by tail call (carries the id of the function that leaves).
        TAIL_EXIT = 2 => "TailExit",
        /// Entry with logged arguments.
        ENTER_ARGS = 3 => "EnterArgs",
    }
    unknown "unknown({})"
}

profkit_common::open_tag! {
    /// Basic-mode record type (first u16 of a 32-byte record).
    pub struct BasicRecordType(u16) {
        /// Function record.
        FUNCTION = 0 => "Function",
        /// Argument payload of the previous function record.
        ARG_PAYLOAD = 1 => "ArgPayload",
    }
    unknown "unknown({})"
}

profkit_common::open_tag! {
    /// Kind of an instrumentation-map sled.
    pub struct SledKind(u8) {
        /// Function entry sled.
        ENTRY = 0 => "function-enter",
        /// Function exit sled.
        EXIT = 1 => "function-exit",
        /// Tail-call exit sled.
        TAIL = 2 => "tail-exit",
        /// Entry sled logging arguments.
        LOG_ARGS_ENTER = 3 => "log-args-enter",
        /// `__xray_customevent` sled.
        CUSTOM_EVENT = 4 => "custom-event",
        /// `__xray_typedevent` sled (llvm-xray 14 cannot load these).
        TYPED_EVENT = 5 => "typed-event",
    }
    unknown "unknown({})"
}
