//! On-disk constants, with the names of Mono's `log.h` (and of the older `proflog.h` for what
//! later versions dropped).
//!
//! An event starts with one byte: the event type in the low nibble (`TYPE_METHOD`), the
//! "extended info" in the high nibble (`TYPE_ENTER`, already shifted). log.h writes an event
//! as `emit_event (buf, TYPE_ENTER | TYPE_METHOD)`; [`event`] names every such byte
//! (`event::METHOD_ENTER = TYPE_METHOD | TYPE_ENTER`). Which bytes a data version defines is
//! [`exinfo_name`] (the note's §2 table: `shared/notes/mono-log-profiler.md`).
#![allow(missing_docs)] // the names are log.h's; see the Mono note for each

/// File header magic (`01 5A 50 4D` on disk).
pub const LOG_HEADER_ID: u32 = 0x4D50_5A01;
/// Buffer header magic (`01 4C 50 4D` on disk).
pub const BUF_ID: u32 = 0x4D50_4C01;
/// Size of a buffer header.
pub const BUF_HEADER_SIZE: usize = 48;
/// Newest data version profkit knows.
pub const MAX_DATA_VERSION: u8 = 17;

// Event types (low nibble of the event byte).
pub const TYPE_ALLOC: u8 = 0;
pub const TYPE_GC: u8 = 1;
pub const TYPE_METADATA: u8 = 2;
pub const TYPE_METHOD: u8 = 3;
pub const TYPE_EXCEPTION: u8 = 4;
pub const TYPE_MONITOR: u8 = 5;
pub const TYPE_HEAP: u8 = 6;
/// v4+.
pub const TYPE_SAMPLE: u8 = 7;
/// v8+.
pub const TYPE_RUNTIME: u8 = 8;
/// v10-15.
pub const TYPE_COVERAGE: u8 = 9;
/// v13+.
pub const TYPE_META: u8 = 10;

/// The event type (low nibble of the event byte); an open newtype so unknown values pass through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventType(pub u8);

impl EventType {
    pub const ALLOC: EventType = EventType(TYPE_ALLOC);
    pub const GC: EventType = EventType(TYPE_GC);
    pub const METADATA: EventType = EventType(TYPE_METADATA);
    pub const METHOD: EventType = EventType(TYPE_METHOD);
    pub const EXCEPTION: EventType = EventType(TYPE_EXCEPTION);
    pub const MONITOR: EventType = EventType(TYPE_MONITOR);
    pub const HEAP: EventType = EventType(TYPE_HEAP);
    pub const SAMPLE: EventType = EventType(TYPE_SAMPLE);
    pub const RUNTIME: EventType = EventType(TYPE_RUNTIME);
    pub const COVERAGE: EventType = EventType(TYPE_COVERAGE);
    pub const META: EventType = EventType(TYPE_META);

    /// The type of an event byte.
    #[inline]
    pub fn of(byte: u8) -> EventType {
        EventType(byte & TYPE_MASK)
    }

    /// `log.h`'s name without `TYPE_` (`"METHOD"`), `"UNKNOWN"` for 11-15.
    pub fn name(self) -> &'static str {
        match self.0 {
            TYPE_ALLOC => "ALLOC",
            TYPE_GC => "GC",
            TYPE_METADATA => "METADATA",
            TYPE_METHOD => "METHOD",
            TYPE_EXCEPTION => "EXCEPTION",
            TYPE_MONITOR => "MONITOR",
            TYPE_HEAP => "HEAP",
            TYPE_SAMPLE => "SAMPLE",
            TYPE_RUNTIME => "RUNTIME",
            TYPE_COVERAGE => "COVERAGE",
            TYPE_META => "META",
            _ => "UNKNOWN",
        }
    }
}

/// The type bits of an event byte.
pub const TYPE_MASK: u8 = 0x0f;
/// The extended-info bits of an event byte.
pub const EXINFO_MASK: u8 = 0xf0;

// Extended info (high nibble, already shifted), per type.
// TYPE_ALLOC
pub const TYPE_ALLOC_NO_BT: u8 = 0 << 4;
pub const TYPE_ALLOC_BT: u8 = 1 << 4;
// TYPE_GC
pub const TYPE_GC_EVENT: u8 = 1 << 4;
pub const TYPE_GC_RESIZE: u8 = 2 << 4;
pub const TYPE_GC_MOVE: u8 = 3 << 4;
pub const TYPE_GC_HANDLE_CREATED: u8 = 4 << 4;
pub const TYPE_GC_HANDLE_DESTROYED: u8 = 5 << 4;
/// v11+.
pub const TYPE_GC_HANDLE_CREATED_BT: u8 = 6 << 4;
/// v11+.
pub const TYPE_GC_HANDLE_DESTROYED_BT: u8 = 7 << 4;
/// v13+.
pub const TYPE_GC_FINALIZE_START: u8 = 8 << 4;
/// v13+.
pub const TYPE_GC_FINALIZE_END: u8 = 9 << 4;
/// v13+.
pub const TYPE_GC_FINALIZE_OBJECT_START: u8 = 10 << 4;
/// v13+.
pub const TYPE_GC_FINALIZE_OBJECT_END: u8 = 11 << 4;
// TYPE_METADATA
/// exinfo 0: a name event for a thread or domain (log.h has no name for it; v11+ for threads
/// with load/unload events, the only METADATA thread event before).
pub const TYPE_METADATA_NAME: u8 = 0;
/// Defined, never written.
pub const TYPE_START_LOAD: u8 = 1 << 4;
pub const TYPE_END_LOAD: u8 = 2 << 4;
/// Defined, never written.
pub const TYPE_START_UNLOAD: u8 = 3 << 4;
pub const TYPE_END_UNLOAD: u8 = 4 << 4;
/// A flag on END_LOAD/END_UNLOAD before v11 (never written).
pub const TYPE_LOAD_ERR: u8 = 1 << 7;
// TYPE_METHOD
pub const TYPE_LEAVE: u8 = 1 << 4;
pub const TYPE_ENTER: u8 = 2 << 4;
pub const TYPE_EXC_LEAVE: u8 = 3 << 4;
pub const TYPE_JIT: u8 = 4 << 4;
// TYPE_EXCEPTION
pub const TYPE_THROW_NO_BT: u8 = 0 << 7;
/// Called EXCEPTION_BT before v13.
pub const TYPE_THROW_BT: u8 = 1 << 7;
pub const TYPE_CLAUSE: u8 = 1 << 4;
// TYPE_MONITOR (v14+; before, bits 4-5 hold the monitor event, see MONITOR_CONTENTION)
pub const TYPE_MONITOR_NO_BT: u8 = 0 << 7;
pub const TYPE_MONITOR_BT: u8 = 1 << 7;
// TYPE_HEAP
pub const TYPE_HEAP_START: u8 = 0 << 4;
pub const TYPE_HEAP_END: u8 = 1 << 4;
pub const TYPE_HEAP_OBJECT: u8 = 2 << 4;
/// v3+.
pub const TYPE_HEAP_ROOT: u8 = 3 << 4;
/// v15+.
pub const TYPE_HEAP_ROOT_REGISTER: u8 = 4 << 4;
/// v15+.
pub const TYPE_HEAP_ROOT_UNREGISTER: u8 = 5 << 4;
// TYPE_SAMPLE
pub const TYPE_SAMPLE_HIT: u8 = 0 << 4;
pub const TYPE_SAMPLE_USYM: u8 = 1 << 4;
/// v4-15.
pub const TYPE_SAMPLE_UBIN: u8 = 2 << 4;
/// v5+.
pub const TYPE_SAMPLE_COUNTERS_DESC: u8 = 3 << 4;
/// v5+.
pub const TYPE_SAMPLE_COUNTERS: u8 = 4 << 4;
// TYPE_RUNTIME
pub const TYPE_JITHELPER: u8 = 1 << 4;
// TYPE_COVERAGE
pub const TYPE_COVERAGE_ASSEMBLY: u8 = 0 << 4;
pub const TYPE_COVERAGE_METHOD: u8 = 1 << 4;
pub const TYPE_COVERAGE_STATEMENT: u8 = 2 << 4;
pub const TYPE_COVERAGE_CLASS: u8 = 3 << 4;
// TYPE_META
pub const TYPE_SYNC_POINT: u8 = 0 << 4;
/// v16+.
pub const TYPE_AOT_ID: u8 = 1 << 4;

/// Every event byte, named after its `TYPE_x | TYPE_y` pair in log.h (for `match` patterns,
/// which cannot use `|` as an operator).
pub mod event {
    use super::*;

    pub const ALLOC: u8 = TYPE_ALLOC | TYPE_ALLOC_NO_BT;
    pub const ALLOC_BT: u8 = TYPE_ALLOC | TYPE_ALLOC_BT;

    pub const GC_EVENT: u8 = TYPE_GC | TYPE_GC_EVENT;
    pub const GC_RESIZE: u8 = TYPE_GC | TYPE_GC_RESIZE;
    pub const GC_MOVE: u8 = TYPE_GC | TYPE_GC_MOVE;
    pub const GC_HANDLE_CREATED: u8 = TYPE_GC | TYPE_GC_HANDLE_CREATED;
    pub const GC_HANDLE_DESTROYED: u8 = TYPE_GC | TYPE_GC_HANDLE_DESTROYED;
    pub const GC_HANDLE_CREATED_BT: u8 = TYPE_GC | TYPE_GC_HANDLE_CREATED_BT;
    pub const GC_HANDLE_DESTROYED_BT: u8 = TYPE_GC | TYPE_GC_HANDLE_DESTROYED_BT;
    pub const GC_FINALIZE_START: u8 = TYPE_GC | TYPE_GC_FINALIZE_START;
    pub const GC_FINALIZE_END: u8 = TYPE_GC | TYPE_GC_FINALIZE_END;
    pub const GC_FINALIZE_OBJECT_START: u8 = TYPE_GC | TYPE_GC_FINALIZE_OBJECT_START;
    pub const GC_FINALIZE_OBJECT_END: u8 = TYPE_GC | TYPE_GC_FINALIZE_OBJECT_END;

    pub const METADATA_NAME: u8 = TYPE_METADATA | TYPE_METADATA_NAME;
    pub const METADATA_END_LOAD: u8 = TYPE_METADATA | TYPE_END_LOAD;
    pub const METADATA_END_UNLOAD: u8 = TYPE_METADATA | TYPE_END_UNLOAD;
    /// Before v11 only (never written).
    pub const METADATA_END_LOAD_ERR: u8 = TYPE_METADATA | TYPE_END_LOAD | TYPE_LOAD_ERR;
    /// Before v11 only (never written).
    pub const METADATA_END_UNLOAD_ERR: u8 = TYPE_METADATA | TYPE_END_UNLOAD | TYPE_LOAD_ERR;

    pub const METHOD_LEAVE: u8 = TYPE_METHOD | TYPE_LEAVE;
    pub const METHOD_ENTER: u8 = TYPE_METHOD | TYPE_ENTER;
    pub const METHOD_EXC_LEAVE: u8 = TYPE_METHOD | TYPE_EXC_LEAVE;
    pub const METHOD_JIT: u8 = TYPE_METHOD | TYPE_JIT;

    pub const EXCEPTION_THROW: u8 = TYPE_EXCEPTION | TYPE_THROW_NO_BT;
    pub const EXCEPTION_THROW_BT: u8 = TYPE_EXCEPTION | TYPE_THROW_BT;
    pub const EXCEPTION_CLAUSE: u8 = TYPE_EXCEPTION | TYPE_CLAUSE;

    /// v14+.
    pub const MONITOR: u8 = TYPE_MONITOR | TYPE_MONITOR_NO_BT;
    /// v14+.
    pub const MONITOR_BT: u8 = TYPE_MONITOR | TYPE_MONITOR_BT;
    /// Before v14: the monitor event in bits 4-5.
    pub const MONITOR_CONTENTION_V1: u8 = TYPE_MONITOR | (super::MONITOR_CONTENTION << 4);
    /// Before v14.
    pub const MONITOR_CONTENTION_BT_V1: u8 = MONITOR_CONTENTION_V1 | TYPE_MONITOR_BT;
    /// Before v14.
    pub const MONITOR_DONE_V1: u8 = TYPE_MONITOR | (super::MONITOR_DONE << 4);
    /// Before v14.
    pub const MONITOR_FAIL_V1: u8 = TYPE_MONITOR | (super::MONITOR_FAIL << 4);

    pub const HEAP_START: u8 = TYPE_HEAP | TYPE_HEAP_START;
    pub const HEAP_END: u8 = TYPE_HEAP | TYPE_HEAP_END;
    pub const HEAP_OBJECT: u8 = TYPE_HEAP | TYPE_HEAP_OBJECT;
    pub const HEAP_ROOT: u8 = TYPE_HEAP | TYPE_HEAP_ROOT;
    pub const HEAP_ROOT_REGISTER: u8 = TYPE_HEAP | TYPE_HEAP_ROOT_REGISTER;
    pub const HEAP_ROOT_UNREGISTER: u8 = TYPE_HEAP | TYPE_HEAP_ROOT_UNREGISTER;

    pub const SAMPLE_HIT: u8 = TYPE_SAMPLE | TYPE_SAMPLE_HIT;
    pub const SAMPLE_USYM: u8 = TYPE_SAMPLE | TYPE_SAMPLE_USYM;
    pub const SAMPLE_UBIN: u8 = TYPE_SAMPLE | TYPE_SAMPLE_UBIN;
    pub const SAMPLE_COUNTERS_DESC: u8 = TYPE_SAMPLE | TYPE_SAMPLE_COUNTERS_DESC;
    pub const SAMPLE_COUNTERS: u8 = TYPE_SAMPLE | TYPE_SAMPLE_COUNTERS;

    pub const RUNTIME_JITHELPER: u8 = TYPE_RUNTIME | TYPE_JITHELPER;

    pub const COVERAGE_ASSEMBLY: u8 = TYPE_COVERAGE | TYPE_COVERAGE_ASSEMBLY;
    pub const COVERAGE_METHOD: u8 = TYPE_COVERAGE | TYPE_COVERAGE_METHOD;
    pub const COVERAGE_STATEMENT: u8 = TYPE_COVERAGE | TYPE_COVERAGE_STATEMENT;
    pub const COVERAGE_CLASS: u8 = TYPE_COVERAGE | TYPE_COVERAGE_CLASS;

    pub const META_SYNC_POINT: u8 = TYPE_META | TYPE_SYNC_POINT;
    pub const META_AOT_ID: u8 = TYPE_META | TYPE_AOT_ID;
}

// metadata types
pub const MTYPE_CLASS: u8 = 1;
pub const MTYPE_IMAGE: u8 = 2;
pub const MTYPE_ASSEMBLY: u8 = 3;
pub const MTYPE_DOMAIN: u8 = 4;
pub const MTYPE_THREAD: u8 = 5;
pub const MTYPE_CONTEXT: u8 = 6;
pub const MTYPE_VTABLE: u8 = 7;

/// Name of a metadata type.
pub fn mtype_name(m: u8) -> &'static str {
    match m {
        MTYPE_CLASS => "class",
        MTYPE_IMAGE => "image",
        MTYPE_ASSEMBLY => "assembly",
        MTYPE_DOMAIN => "domain",
        MTYPE_THREAD => "thread",
        MTYPE_CONTEXT => "context",
        MTYPE_VTABLE => "vtable",
        _ => "unknown",
    }
}

// monitor events
pub const MONITOR_CONTENTION: u8 = 1;
pub const MONITOR_DONE: u8 = 2;
pub const MONITOR_FAIL: u8 = 3;

// GC events (MONO_GC_EVENT_*), the two the report pairs
pub const GC_EVENT_START: u64 = 0;
pub const GC_EVENT_END: u64 = 5;

// counter value types
pub const COUNTER_INT: u64 = 0;
pub const COUNTER_UINT: u64 = 1;
pub const COUNTER_WORD: u64 = 2;
pub const COUNTER_LONG: u64 = 3;
pub const COUNTER_ULONG: u64 = 4;
pub const COUNTER_DOUBLE: u64 = 5;
pub const COUNTER_STRING: u64 = 6;
pub const COUNTER_TIME_INTERVAL: u64 = 7;
/// Counter section with its own name (PERFCOUNTERS).
pub const COUNTER_SECTION_PERFCOUNTERS: u64 = 1 << 15;
/// Counter unit TIME (values in 100 ns ticks).
pub const COUNTER_UNIT_TIME: u64 = 2 << 24;

/// Root type flag (v3-14 HEAP_ROOT): the root pins its object (`MONO_PROFILE_GC_ROOT_PINNING`).
pub const GC_ROOT_PINNING: u64 = 1 << 8;

/// log.h's name (without `TYPE_`) of an event byte's extended info in data version `v`
/// (`"ENTER"` for `0x23`), or `None` when `v` does not define the byte. Before v14 a monitor
/// byte carries the monitor event (`"CONTENTION"`, `"CONTENTION_BT"`, `"DONE"`, `"FAIL"`).
pub fn exinfo_name(byte: u8, v: u8) -> Option<&'static str> {
    use event::*;
    let name = match byte {
        ALLOC => "ALLOC_NO_BT",
        ALLOC_BT => "ALLOC_BT",
        GC_EVENT => "GC_EVENT",
        GC_RESIZE => "GC_RESIZE",
        GC_MOVE => "GC_MOVE",
        GC_HANDLE_CREATED => "GC_HANDLE_CREATED",
        GC_HANDLE_DESTROYED => "GC_HANDLE_DESTROYED",
        GC_HANDLE_CREATED_BT if v >= 11 => "GC_HANDLE_CREATED_BT",
        GC_HANDLE_DESTROYED_BT if v >= 11 => "GC_HANDLE_DESTROYED_BT",
        GC_FINALIZE_START if v >= 13 => "GC_FINALIZE_START",
        GC_FINALIZE_END if v >= 13 => "GC_FINALIZE_END",
        GC_FINALIZE_OBJECT_START if v >= 13 => "GC_FINALIZE_OBJECT_START",
        GC_FINALIZE_OBJECT_END if v >= 13 => "GC_FINALIZE_OBJECT_END",
        METADATA_NAME => "NAME",
        METADATA_END_LOAD => "END_LOAD",
        METADATA_END_UNLOAD => "END_UNLOAD",
        METADATA_END_LOAD_ERR if v < 11 => "END_LOAD|LOAD_ERR",
        METADATA_END_UNLOAD_ERR if v < 11 => "END_UNLOAD|LOAD_ERR",
        METHOD_LEAVE => "LEAVE",
        METHOD_ENTER => "ENTER",
        METHOD_EXC_LEAVE => "EXC_LEAVE",
        METHOD_JIT => "JIT",
        EXCEPTION_THROW => "THROW_NO_BT",
        EXCEPTION_THROW_BT => "THROW_BT",
        EXCEPTION_CLAUSE => "CLAUSE",
        // bit 7 is ignored on clauses (the decoder looks at bits 4-6)
        b if b == EXCEPTION_CLAUSE | TYPE_THROW_BT => "CLAUSE",
        MONITOR if v >= 14 => "MONITOR_NO_BT",
        MONITOR_BT if v >= 14 => "MONITOR_BT",
        MONITOR_CONTENTION_V1 if v < 14 => "CONTENTION",
        MONITOR_CONTENTION_BT_V1 if v < 14 => "CONTENTION_BT",
        MONITOR_DONE_V1 if v < 14 => "DONE",
        MONITOR_FAIL_V1 if v < 14 => "FAIL",
        // written by no version, read as their event (bit 7 only means "backtrace")
        b if v < 14 && b == MONITOR_DONE_V1 | TYPE_MONITOR_BT => "DONE_BT",
        b if v < 14 && b == MONITOR_FAIL_V1 | TYPE_MONITOR_BT => "FAIL_BT",
        HEAP_START => "HEAP_START",
        HEAP_END => "HEAP_END",
        HEAP_OBJECT => "HEAP_OBJECT",
        HEAP_ROOT if v >= 3 => "HEAP_ROOT",
        HEAP_ROOT_REGISTER if v >= 15 => "HEAP_ROOT_REGISTER",
        HEAP_ROOT_UNREGISTER if v >= 15 => "HEAP_ROOT_UNREGISTER",
        SAMPLE_HIT if v >= 4 => "SAMPLE_HIT",
        SAMPLE_USYM if v >= 4 => "SAMPLE_USYM",
        SAMPLE_UBIN if (4..16).contains(&v) => "SAMPLE_UBIN",
        SAMPLE_COUNTERS_DESC if v >= 5 => "SAMPLE_COUNTERS_DESC",
        SAMPLE_COUNTERS if v >= 5 => "SAMPLE_COUNTERS",
        RUNTIME_JITHELPER if v >= 8 => "JITHELPER",
        COVERAGE_ASSEMBLY if (10..16).contains(&v) => "COVERAGE_ASSEMBLY",
        COVERAGE_METHOD if (10..16).contains(&v) => "COVERAGE_METHOD",
        COVERAGE_STATEMENT if (10..16).contains(&v) => "COVERAGE_STATEMENT",
        COVERAGE_CLASS if (10..16).contains(&v) => "COVERAGE_CLASS",
        META_SYNC_POINT if v >= 13 => "SYNC_POINT",
        META_AOT_ID if v >= 16 => "AOT_ID",
        _ => return None,
    };
    Some(name)
}

/// Whether an event byte is defined for data version `v`.
#[inline]
pub fn event_defined(byte: u8, v: u8) -> bool {
    exinfo_name(byte, v).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table as the note's §2 lists it, checked against the named constants.
    #[test]
    fn defined_bytes_per_version() {
        let v17: Vec<u8> = (0..=255u8).filter(|&b| event_defined(b, 17)).collect();
        assert_eq!(
            v17,
            [
                0x00, 0x02, 0x04, 0x05, 0x06, 0x07, 0x0a, 0x10, 0x11, 0x13, 0x14, 0x16, 0x17, 0x18,
                0x1a, 0x21, 0x22, 0x23, 0x26, 0x31, 0x33, 0x36, 0x37, 0x41, 0x42, 0x43, 0x46, 0x47,
                0x51, 0x56, 0x61, 0x71, 0x81, 0x84, 0x85, 0x91, 0x94, 0xa1, 0xb1,
            ]
        );
        assert!(event_defined(event::MONITOR_CONTENTION_V1, 13));
        assert!(!event_defined(event::MONITOR_CONTENTION_V1, 14));
        assert!(event_defined(event::MONITOR_BT, 14));
        assert!(event_defined(event::SAMPLE_UBIN, 15));
        assert!(!event_defined(event::SAMPLE_UBIN, 16));
        assert!(event_defined(event::COVERAGE_CLASS, 10));
        assert!(!event_defined(event::COVERAGE_CLASS, 16));
        assert!(event_defined(event::METADATA_END_LOAD_ERR, 10));
        assert!(!event_defined(event::METADATA_END_LOAD_ERR, 11));
        assert!(!event_defined(event::GC_HANDLE_CREATED_BT, 10));
        assert!(!event_defined(0x6e, 17));
        assert_eq!(exinfo_name(event::METHOD_ENTER, 17), Some("ENTER"));
        assert_eq!(EventType::of(event::METHOD_ENTER), EventType::METHOD);
    }
}
