//! Hand-made jitdumps for what no producer on our machines writes: big-endian files, MOVE,
//! CLOSE, every extension record, extended headers, and the quirks of producers we cannot run
//! here (CPython 3.13, LLVM, perf's JVMTI agent). Shared by the tests and by
//! `cargo run -p profkit-jitdump --example make_fixtures`, which writes them to
//! `tests/fixtures/jitdump/handmade/`. Everything is deterministic (fixed pids and times).

#![allow(dead_code)]

use profkit_jitdump::read::{FunctionRecord, InlineCallRecord, LineRecord, Range};
use profkit_jitdump::write::{
    CodeLoadData, DebugInfo2Data, HeaderOptions, JitDumpWriter, Tier, Unwinding,
};
use profkit_jitdump::{CodeMove, DebugEntry, Endian, RecordType};

/// A hand-made file: name, bytes, and the validator codes it must produce (sorted, unique).
pub struct Handmade {
    pub name: &'static str,
    pub bytes: Vec<u8>,
    pub codes: &'static [&'static str],
    pub about: &'static str,
}

const PID: u32 = 4242;
const T0: u64 = 1_000_000_000;

fn header(endian: Endian) -> HeaderOptions {
    HeaderOptions {
        endian,
        version: 1,
        elf_mach: 62,
        pad1: 0,
        pid: PID,
        timestamp: T0,
        flags: 0,
        extra: Vec::new(),
    }
}

fn load<'a>(index: u64, addr: u64, code: &'a [u8], name: &'a str, ts: u64) -> CodeLoadData<'a> {
    let mut l = CodeLoadData::new(index, addr, code, name);
    l.timestamp = ts;
    l.pid = PID;
    l.tid = PID + 1;
    l
}

/// A minimal `.eh_frame` (one CIE, one FDE, terminator) and a 20-byte `.eh_frame_hdr`.
pub fn unwind_tables() -> (Vec<u8>, Vec<u8>) {
    let mut eh = Vec::new();
    // CIE: length 16, id 0, version 1, "zR", code align 1, data align -8, RA reg 16,
    // aug data len 1, FDE encoding pcrel|sdata4, DW_CFA_def_cfa rsp+8, padding.
    eh.extend_from_slice(&16u32.to_le_bytes());
    eh.extend_from_slice(&0u32.to_le_bytes());
    eh.extend_from_slice(&[1, b'z', b'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8]);
    // FDE: length 20, CIE pointer, pc begin, pc range, aug len 0, nops.
    eh.extend_from_slice(&20u32.to_le_bytes());
    eh.extend_from_slice(&24u32.to_le_bytes());
    eh.extend_from_slice(&(-0x100i32).to_le_bytes());
    eh.extend_from_slice(&64u32.to_le_bytes());
    eh.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    eh.extend_from_slice(&0u32.to_le_bytes());
    // eh_frame_hdr: version 1, eh_frame_ptr enc, fde_count enc, table enc, then 3 × u32.
    let mut hdr = vec![1u8, 0x1b, 0x03, 0x3b];
    hdr.extend_from_slice(&(-(eh.len() as i32) - 4).to_le_bytes());
    hdr.extend_from_slice(&1u32.to_le_bytes());
    hdr.extend_from_slice(&(-0x100i32).to_le_bytes());
    hdr.extend_from_slice(&(-(eh.len() as i32)).to_le_bytes());
    (eh, hdr)
}

/// A DEBUG_INFO2 body: `outer` with `inl_a` inlined at depth 0 (two ranges) and `inl_b`
/// inlined into `inl_a` at depth 1.
pub fn inline_tree() -> DebugInfo2Data {
    DebugInfo2Data {
        files: vec!["app.js".into(), "lib.js".into()],
        function_names: vec!["outer".into(), "inl_a".into(), "inl_b".into()],
        functions: vec![
            FunctionRecord {
                function_name_index: 0,
                file_index: 0,
                start_line: 10,
                start_column: 0,
                flags: 1,
            },
            FunctionRecord {
                function_name_index: 1,
                file_index: 1,
                start_line: 3,
                start_column: 4,
                flags: 1,
            },
            FunctionRecord {
                function_name_index: 2,
                file_index: 1,
                start_line: 30,
                start_column: 2,
                flags: 0,
            },
        ],
        inline_calls: vec![
            InlineCallRecord {
                depth: 0,
                range_count: 2,
                function_index: 1,
                call_line_number: 12,
                call_column_number: 5,
            },
            InlineCallRecord {
                depth: 1,
                range_count: 1,
                function_index: 2,
                call_line_number: 5,
                call_column_number: 9,
            },
        ],
        ranges: vec![
            Range {
                start_offset: 0x10,
                size: 0x20,
            },
            Range {
                start_offset: 0x40,
                size: 0x08,
            },
            Range {
                start_offset: 0x18,
                size: 0x08,
            },
        ],
        lines: vec![
            LineRecord {
                code_offset: 0,
                file_index: 0,
                line_number: 10,
                column_number: 0,
            },
            LineRecord {
                code_offset: 0x10,
                file_index: 1,
                line_number: 4,
                column_number: 2,
            },
            LineRecord {
                code_offset: 0x18,
                file_index: 1,
                line_number: 31,
                column_number: 6,
            },
            LineRecord {
                code_offset: 0x20,
                file_index: 1,
                line_number: 5,
                column_number: 2,
            },
            LineRecord {
                code_offset: 0x30,
                file_index: 0,
                line_number: 13,
                column_number: 1,
            },
        ],
    }
}

/// Every record kind, valid, in byte order `endian`.
pub fn all_records(endian: Endian) -> Vec<u8> {
    let mut w = JitDumpWriter::new(Vec::new(), &header(endian)).unwrap();
    let code_a: Vec<u8> = (0..0x50u8).collect();
    let code_b = [0x90u8; 32];
    let (eh, hdr) = unwind_tables();
    let entries = [
        DebugEntry {
            addr: 0x7000_1000,
            line: 10,
            discrim: 0,
            file: b"app.js",
        },
        DebugEntry {
            addr: 0x7000_1010,
            line: 12,
            discrim: 3,
            file: b"app.js",
        },
        DebugEntry {
            addr: 0x7000_1030,
            line: 13,
            discrim: 0,
            file: b"app.js",
        },
    ];
    let tree = inline_tree();
    let mut a = load(1, 0x7000_1000, &code_a, "JS:*outer app.js:10:0", T0 + 10);
    a.debug_info = Some(&entries);
    a.debug_info2 = Some(&tree);
    a.tier = Some(Tier {
        color: 6,
        flags: 1,
        name: "Turbofan",
    });
    a.unwinding = Some(Unwinding {
        eh_frame: &eh,
        eh_frame_hdr: &hdr,
        mapped_size: (eh.len() + hdr.len()) as u64,
    });
    w.write_code_load(&a).unwrap();
    let mut b = load(2, 0x7000_2000, &code_b, "Baseline: helper", T0 + 20);
    b.tier = Some(Tier {
        color: 1,
        flags: 0,
        name: "Baseline",
    });
    w.write_code_load(&b).unwrap();
    w.write_embedded_source_record(
        T0 + 25,
        "app.js",
        b"function outer() {\n  return inl_a();\n}\n",
    )
    .unwrap();
    w.write_code_move_record(
        T0 + 30,
        &CodeMove {
            pid: PID,
            tid: PID + 1,
            vma: 0x7000_3000,
            old_code_addr: 0x7000_2000,
            new_code_addr: 0x7000_3000,
            code_size: 32,
            code_index: 2,
        },
    )
    .unwrap();
    w.write_code_close_record(T0 + 40).unwrap();
    w.into_inner()
}

fn finish(w: JitDumpWriter<Vec<u8>>) -> Vec<u8> {
    w.into_inner()
}

/// Every hand-made file.
pub fn all() -> Vec<Handmade> {
    let mut out = Vec::new();
    out.push(Handmade {
        name: "all-records-le.dump",
        bytes: all_records(Endian::Little),
        codes: &[],
        about: "every record kind (LOAD with DEBUG_INFO, DEBUG_INFO2 inline tree, JIT_TIER, UNWINDING_INFO; EMBEDDED_SOURCE_FILE; MOVE; CLOSE), little-endian, valid",
    });
    out.push(Handmade {
        name: "all-records-be.dump",
        bytes: all_records(Endian::Big),
        codes: &[],
        about: "the same content big-endian (magic \"JiTD\")",
    });

    // Extended header: total_size 48.
    let mut h = header(Endian::Little);
    h.extra = vec![0xAB; 8];
    let mut w = JitDumpWriter::new(Vec::new(), &h).unwrap();
    w.write_code_load(&load(0, 0x1000, &[0xc3], "ret", T0 + 1))
        .unwrap();
    out.push(Handmade {
        name: "header-extended.dump",
        bytes: finish(w),
        codes: &["header-size-extended"],
        about: "header total_size 48 (8 extra bytes, skipped)",
    });

    // CPython 3.13.0 -X perf_jit: elf_mach 0, garbage pad1, 11-byte trampolines, index from 1,
    // UNWINDING_INFO with mapped_size rounded up to 16.
    let mut h = header(Endian::Little);
    h.elf_mach = 0;
    h.pad1 = 0x5555_7f3a;
    let mut w = JitDumpWriter::new(Vec::new(), &h).unwrap();
    let (eh, hdr) = unwind_tables();
    let tramp = [
        0xf3u8, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd6, 0x5d,
    ];
    for i in 0..3u64 {
        let name = [
            "py::fib:/tmp/x.py",
            "py::work:/tmp/x.py",
            "py::<module>:/tmp/x.py",
        ][i as usize];
        let mut l = load(i + 1, 0x7f00_0000 + i * 0x80, &tramp, name, T0 + i);
        let size = (eh.len() + hdr.len()) as u64;
        l.unwinding = Some(Unwinding {
            eh_frame: &eh,
            eh_frame_hdr: &hdr,
            mapped_size: size.next_multiple_of(16),
        });
        w.write_code_load(&l).unwrap();
    }
    out.push(Handmade {
        name: "cpython-quirks.dump",
        bytes: finish(w),
        codes: &["elf-mach-zero", "header-pad-nonzero", "unwinding-mapped-size"],
        about: "CPython 3.13.0 style: elf_mach 0, uninitialized pad1, UNWINDING_INFO mapped_size rounded up to 16",
    });

    // LLVM PerfJITEventListener: vma 0, DEBUG_INFO with +0x40 bias and discriminators,
    // ORC's uninitialized flags.
    let mut h = header(Endian::Little);
    h.flags = 0x7ffd_0000_0000;
    let mut w = JitDumpWriter::new(Vec::new(), &h).unwrap();
    let code = [0x90u8; 0x30];
    for i in 0..2u64 {
        let addr = 0x7f10_0000 + i * 0x100;
        let entries = [
            DebugEntry {
                addr: addr + 0x40,
                line: 3,
                discrim: 0,
                file: b"/src/kernel.ll",
            },
            DebugEntry {
                addr: addr + 0x40 + 0x10,
                line: 4,
                discrim: 1,
                file: b"/src/kernel.ll",
            },
            DebugEntry {
                addr: addr + 0x40 + 0x2c,
                line: 5,
                discrim: 0,
                file: b"/src/kernel.ll",
            },
        ];
        let mut l = load(i + 1, addr, &code, "kernel", T0 + i);
        l.vma = 0;
        l.debug_info = Some(&entries);
        w.write_code_load(&l).unwrap();
    }
    out.push(Handmade {
        name: "llvm-quirks.dump",
        bytes: finish(w),
        codes: &["debug-info-address-bias-0x40", "unknown-flags", "vma-zero"],
        about: "LLVM style: vma 0, DEBUG_INFO addresses + 0x40 with discriminators, uninitialized header flags",
    });

    // perf's JVMTI agent when code == NULL: LOADs without code bytes.
    let mut w = JitDumpWriter::new(Vec::new(), &header(Endian::Little)).unwrap();
    let mut l = load(1, 0x4000, &[], "Interpreter", T0);
    l.code = None;
    l.code_size = 0x200;
    w.write_code_load(&l).unwrap();
    out.push(Handmade {
        name: "load-without-code.dump",
        bytes: finish(w),
        codes: &["load-without-code"],
        about: "a LOAD that declares code_size 0x200 but stores no code bytes (perf's JVMTI agent, .NET stubs)",
    });

    // Cut in the middle of the DEBUG_INFO2 record.
    let full = all_records(Endian::Little);
    out.push(Handmade {
        name: "truncated.dump",
        bytes: full.get(..300).unwrap().to_vec(),
        codes: &["pending-without-load", "truncated"],
        about: "all-records-le.dump cut at byte 300, inside its third record",
    });

    // One record with total_size 8.
    let mut w = JitDumpWriter::new(Vec::new(), &header(Endian::Little)).unwrap();
    w.write_code_load(&load(0, 0x1000, &[0xc3], "first", T0))
        .unwrap();
    let mut bytes = finish(w);
    let at = bytes.len();
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&8u32.to_le_bytes());
    bytes.extend_from_slice(&T0.to_le_bytes());
    bytes.extend_from_slice(&[0u8; 40]);
    assert_eq!(at, 40 + 16 + 40 + 6 + 1);
    out.push(Handmade {
        name: "record-size-8.dump",
        bytes,
        codes: &["record-size-invalid"],
        about: "the second record declares total_size 8 (below the 16-byte record header): corrupt, not truncated",
    });

    // Unknown record id, MOVE errors, duplicate code_index, timestamps backwards, after CLOSE.
    let mut w = JitDumpWriter::new(Vec::new(), &header(Endian::Little)).unwrap();
    w.write_raw_record(RecordType(42), T0, &[1, 2, 3, 4, 5, 6, 7, 8])
        .unwrap();
    w.write_code_move_record(
        T0 + 1,
        &CodeMove {
            pid: PID,
            tid: PID,
            vma: 0x2000,
            old_code_addr: 0x1000,
            new_code_addr: 0x2000,
            code_size: 1,
            code_index: 9,
        },
    )
    .unwrap();
    w.write_code_load(&load(0, 0x1000, &[0xc3, 0xc3], "a", T0 + 5))
        .unwrap();
    w.write_code_load(&load(0, 0x1100, &[0xc3], "b", T0 + 3))
        .unwrap();
    w.write_code_move_record(
        T0 + 6,
        &CodeMove {
            pid: PID,
            tid: PID,
            vma: 0x3000,
            old_code_addr: 0x1100,
            new_code_addr: 0x3000,
            code_size: 7,
            code_index: 0,
        },
    )
    .unwrap();
    w.write_code_close_record(T0 + 7).unwrap();
    w.write_code_load(&load(1, 0x1200, &[0xc3], "late", T0 + 8))
        .unwrap();
    out.push(Handmade {
        name: "sequence-errors.dump",
        bytes: finish(w),
        codes: &["duplicate-code-index", "move-before-load", "move-size-changed", "record-after-close", "timestamp-backwards", "unknown-record-type"],
        about: "unknown id 42, MOVE before its LOAD, MOVE changing the size, duplicate code_index, a timestamp going backwards, a LOAD after CLOSE",
    });

    // DEBUG_INFO2 that breaks every rule of the extension note, and a pending DEBUG_INFO.
    let mut bad = inline_tree();
    bad.inline_calls[1].depth = 3;
    bad.inline_calls[0].function_index = 7;
    bad.ranges[1].size = 0x100;
    bad.ranges.push(Range {
        start_offset: 0x20,
        size: 4,
    });
    bad.lines[2].file_index = 9;
    bad.inline_calls.push(InlineCallRecord {
        depth: 0,
        range_count: 1,
        function_index: 2,
        call_line_number: 1,
        call_column_number: 1,
    });
    let mut w = JitDumpWriter::new(Vec::new(), &header(Endian::Little)).unwrap();
    let code = [0x90u8; 0x50];
    let mut l = load(1, 0x5000, &code, "bad", T0);
    l.debug_info2 = Some(&bad);
    w.write_code_load(&l).unwrap();
    w.write_debug_info_record(
        T0 + 1,
        0x6000,
        &[DebugEntry {
            addr: 0x6000,
            line: 0,
            discrim: 0,
            file: b"x.js",
        }],
    )
    .unwrap();
    w.write_jit_tier_record(
        T0 + 2,
        0x6000,
        &Tier {
            color: 99,
            flags: 2,
            name: "Weird",
        },
    )
    .unwrap();
    out.push(Handmade {
        name: "extension-errors.dump",
        bytes: finish(w),
        codes: &["debug-info-line-zero", "debug-info2-depth", "debug-info2-index", "debug-info2-out-of-range", "debug-info2-overlap", "jit-tier-color", "jit-tier-flags", "pending-without-load"],
        about: "DEBUG_INFO2 with a depth jump, bad indexes, a range past the code and overlapping siblings; a DEBUG_INFO and a JIT_TIER never followed by their LOAD; a line 0; a colour index past the list",
    });
    out
}
