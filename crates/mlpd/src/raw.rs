//! On-disk constants (names from Mono's `log.h`).
#![allow(missing_docs)] // the names are log.h's; see the Mono note for each

/// File header magic (`01 5A 50 4D` on disk).
pub const LOG_HEADER_ID: u32 = 0x4D50_5A01;
/// Buffer header magic (`01 4C 50 4D` on disk).
pub const BUF_ID: u32 = 0x4D50_4C01;
/// Size of a buffer header.
pub const BUF_HEADER_SIZE: usize = 48;
/// Newest data version profkit knows.
pub const MAX_DATA_VERSION: u8 = 17;

/// The event type (low nibble of the event byte); an open newtype so unknown values pass through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventType(pub u8);

impl EventType {
    pub const ALLOC: EventType = EventType(0);
    pub const GC: EventType = EventType(1);
    pub const METADATA: EventType = EventType(2);
    pub const METHOD: EventType = EventType(3);
    pub const EXCEPTION: EventType = EventType(4);
    pub const MONITOR: EventType = EventType(5);
    pub const HEAP: EventType = EventType(6);
    pub const SAMPLE: EventType = EventType(7);
    pub const RUNTIME: EventType = EventType(8);
    pub const COVERAGE: EventType = EventType(9);
    pub const META: EventType = EventType(10);

    /// `log.h`'s name.
    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "ALLOC",
            1 => "GC",
            2 => "METADATA",
            3 => "METHOD",
            4 => "EXCEPTION",
            5 => "MONITOR",
            6 => "HEAP",
            7 => "SAMPLE",
            8 => "RUNTIME",
            9 => "COVERAGE",
            10 => "META",
            _ => "UNKNOWN",
        }
    }
}

// exinfo values (already shifted into the high nibble)
pub const ALLOC_BT: u8 = 0x10;
pub const GC_EVENT: u8 = 0x10;
pub const GC_RESIZE: u8 = 0x20;
pub const GC_MOVE: u8 = 0x30;
pub const GC_HANDLE_CREATED: u8 = 0x40;
pub const GC_HANDLE_DESTROYED: u8 = 0x50;
pub const GC_HANDLE_CREATED_BT: u8 = 0x60;
pub const GC_HANDLE_DESTROYED_BT: u8 = 0x70;
pub const GC_FINALIZE_START: u8 = 0x80;
pub const GC_FINALIZE_END: u8 = 0x90;
pub const GC_FINALIZE_OBJECT_START: u8 = 0xA0;
pub const GC_FINALIZE_OBJECT_END: u8 = 0xB0;
pub const METADATA_NAME: u8 = 0x00;
pub const METADATA_END_LOAD: u8 = 0x20;
pub const METADATA_END_UNLOAD: u8 = 0x40;
pub const METADATA_LOAD_ERR: u8 = 0x80;
pub const METHOD_LEAVE: u8 = 0x10;
pub const METHOD_ENTER: u8 = 0x20;
pub const METHOD_EXC_LEAVE: u8 = 0x30;
pub const METHOD_JIT: u8 = 0x40;
pub const EXCEPTION_CLAUSE: u8 = 0x10;
pub const EXCEPTION_BT: u8 = 0x80;
pub const MONITOR_BT: u8 = 0x80;
pub const HEAP_START: u8 = 0x00;
pub const HEAP_END: u8 = 0x10;
pub const HEAP_OBJECT: u8 = 0x20;
pub const HEAP_ROOT: u8 = 0x30;
pub const HEAP_ROOT_REGISTER: u8 = 0x40;
pub const HEAP_ROOT_UNREGISTER: u8 = 0x50;
pub const SAMPLE_HIT: u8 = 0x00;
pub const SAMPLE_USYM: u8 = 0x10;
pub const SAMPLE_UBIN: u8 = 0x20;
pub const SAMPLE_COUNTERS_DESC: u8 = 0x30;
pub const SAMPLE_COUNTERS: u8 = 0x40;
pub const RUNTIME_JITHELPER: u8 = 0x10;
pub const META_SYNC_POINT: u8 = 0x00;
pub const META_AOT_ID: u8 = 0x10;

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
        1 => "class",
        2 => "image",
        3 => "assembly",
        4 => "domain",
        5 => "thread",
        6 => "context",
        7 => "vtable",
        _ => "unknown",
    }
}

// monitor events
pub const MONITOR_CONTENTION: u8 = 1;
pub const MONITOR_DONE: u8 = 2;
pub const MONITOR_FAIL: u8 = 3;

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

/// Whether an (event byte) is defined for data version `v`.
pub fn event_defined(byte: u8, v: u8) -> bool {
    let ex = byte & 0xf0;
    match byte & 0x0f {
        0 => ex == 0 || ex == ALLOC_BT,
        1 => match ex {
            0x10..=0x50 => true,
            0x60 | 0x70 => v >= 11,
            0x80..=0xB0 => v >= 13,
            _ => false,
        },
        2 => match ex {
            0x00 | 0x20 | 0x40 => true,
            0xA0 | 0xC0 => v < 11, // END_LOAD/END_UNLOAD with LOAD_ERR (never written)
            _ => false,
        },
        3 => matches!(ex, 0x10 | 0x20 | 0x30 | 0x40),
        4 => matches!(ex & 0x70, 0x00 | 0x10),
        5 => {
            if v < 14 {
                matches!(ex & 0x70, 0x10 | 0x20 | 0x30)
            } else {
                ex == 0 || ex == MONITOR_BT
            }
        }
        6 => match ex {
            0x00..=0x20 => true,
            0x30 => v >= 3,
            0x40 | 0x50 => v >= 15,
            _ => false,
        },
        7 => match ex {
            0x00 | 0x10 => v >= 4,
            0x20 => (4..16).contains(&v),
            0x30 | 0x40 => v >= 5,
            _ => false,
        },
        8 => ex == RUNTIME_JITHELPER && v >= 8,
        9 => ex <= 0x30 && (10..16).contains(&v),
        10 => match ex {
            0x00 => v >= 13,
            0x10 => v >= 16,
            _ => false,
        },
        _ => false,
    }
}
