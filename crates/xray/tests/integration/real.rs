//! Real files from clang-14 (tests/fixtures/xray, made by scripts/fixtures/xray.sh) against
//! llvm-xray 14's outputs on the same files.

use std::collections::BTreeMap;

use profkit_xray::dump::{dump, DumpOptions, DumpOutcome};
use profkit_xray::{verify, EventKind, InstrMap, SledKind, Symbolizer, Trace};

use crate::common::{fixture, golden, llvm_records, LlvmRecord};

fn group_llvm(records: &[LlvmRecord]) -> BTreeMap<u32, Vec<LlvmRecord>> {
    let mut m: BTreeMap<u32, Vec<LlvmRecord>> = BTreeMap::new();
    for r in records {
        m.entry(r.thread).or_default().push(r.clone());
    }
    m
}

fn compare_with_llvm(trace_file: &str, yaml_file: &str) -> usize {
    let data = fixture(trace_file);
    let trace = Trace::parse(&data).unwrap();
    let decoded = trace.decode();
    assert!(
        decoded.is_clean(),
        "{:?} {:?}",
        decoded.problems,
        decoded.truncation
    );
    let llvm = group_llvm(&llvm_records(&golden(yaml_file)));
    let ours: BTreeMap<u32, _> = decoded.threads.iter().map(|t| (t.key.tid, t)).collect();
    assert_eq!(
        llvm.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>()
    );
    let mut n = 0;
    for (tid, recs) in &llvm {
        let t = ours[tid];
        assert_eq!(recs.len(), t.events.len(), "thread {tid}");
        for (l, e) in recs.iter().zip(&t.events) {
            assert_eq!(
                l.kind,
                e.kind.llvm_name(),
                "thread {tid} at {:#x}",
                e.offset
            );
            assert_eq!(l.tsc, e.tsc, "thread {tid} at {:#x}", e.offset);
            assert_eq!(l.cpu, e.cpu);
            assert_eq!(l.process, e.pid);
            assert_eq!(l.args, e.args.to_vec());
            if matches!(e.kind, EventKind::CustomEvent | EventKind::TypedEvent) {
                // llvm-xray repeats the previous function's id on events (a quirk); we give 0.
                assert_eq!(e.func_id, 0);
                assert_eq!(l.data.as_bytes(), e.data);
            } else {
                assert_eq!(l.func_id, e.func_id);
            }
            n += 1;
        }
    }
    n
}

#[test]
fn fdr_header() {
    let data = fixture("demo-fdr.xray");
    let t = Trace::parse(&data).unwrap();
    assert_eq!(t.header.version, 5);
    assert!(t.header.is_fdr());
    assert!(t.header.constant_tsc() && t.header.nonstop_tsc());
    assert_eq!(t.header.cycle_frequency, 1_000_000_000);
    assert_eq!(t.header.buffer_size, 1024);
}

#[test]
fn fdr_events_match_llvm_convert() {
    let n = compare_with_llvm("demo-fdr.xray", "fdr-convert-yaml-nosort.txt");
    assert_eq!(n, llvm_records(&golden("fdr-convert-yaml.txt")).len());
}

#[test]
fn fdr_parallel_equals_sequential() {
    let data = fixture("demo-fdr.xray");
    let t = Trace::parse(&data).unwrap();
    assert_eq!(t.decode(), t.decode_sequential());
}

#[test]
fn fdr_record_count_matches_fdr_dump() {
    let data = fixture("demo-fdr.xray");
    let t = Trace::parse(&data).unwrap();
    let dump = golden("fdr-fdr-dump.txt");
    let llvm_count = dump.lines().filter(|l| l.starts_with('<')).count() as u64;
    let ours = t
        .fdr_records()
        .filter(|e| matches!(e, profkit_xray::FdrEntry::Record(_)))
        .count() as u64;
    assert_eq!(ours, llvm_count);
    let buffers = dump.lines().filter(|l| l.starts_with("<Buffer:")).count();
    assert_eq!(t.layout().buffers.len(), buffers);
    assert_eq!(t.decode().records, llvm_count);
    // Custom events: 12, args: 12.
    let d = t.decode();
    assert_eq!(
        d.events()
            .filter(|e| e.kind == EventKind::CustomEvent)
            .count(),
        12
    );
    assert_eq!(
        d.events().filter(|e| e.kind == EventKind::EnterArg).count(),
        12
    );
    assert_eq!(
        d.events().filter(|e| e.kind == EventKind::TailExit).count(),
        12
    );
    assert_eq!(d.threads.len(), 4);
}

#[test]
fn fdr_verifies_clean() {
    let data = fixture("demo-fdr.xray");
    let t = Trace::parse(&data).unwrap();
    let r = verify(&t);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(r.records, 652);
    assert_eq!(r.truncation, None);
}

#[test]
fn fdr_dump_matches_llvm_fdr_dump() {
    let data = fixture("demo-fdr.xray");
    let t = Trace::parse(&data).unwrap();
    let mut out = Vec::new();
    let o = dump(&t, &DumpOptions::default(), &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), golden("fdr-fdr-dump.txt"));
    assert_eq!(
        o,
        DumpOutcome {
            records: 652,
            ..DumpOutcome::default()
        }
    );
    // --verify: llvm-xray 14 prints the blocks in its own (misordered) way; the blocks are the
    // same.
    let mut out = Vec::new();
    let opts = DumpOptions {
        verify: true,
        ..DumpOptions::default()
    };
    dump(&t, &opts, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    let llvm = golden("fdr-fdr-dump-verify.txt");
    assert_eq!(
        out.matches("[New Block]").count(),
        llvm.matches("[New Block]").count()
    );
    assert!(
        out.starts_with("\n[New Block]\nPreamble: \n<Thread ID: 12010>\n"),
        "{out}"
    );
}

#[test]
fn basic_events_match_llvm_convert() {
    let n = compare_with_llvm("demo-basic.xray", "basic-convert-yaml-nosort.txt");
    assert!(n > 0);
    let data = fixture("demo-basic.xray");
    let t = Trace::parse(&data).unwrap();
    assert_eq!(t.header.version, 3);
    assert_eq!(t.header.trace_type, profkit_xray::TraceType::BASIC);
    assert_eq!((data.len() - 32) % 32, 0);
    assert_eq!(t.decode().records as usize, (data.len() - 32) / 32);
    assert!(verify(&t)
        .findings
        .iter()
        .all(|f| f.severity == profkit_xray::Severity::Warning));
}

#[test]
fn instr_map_matches_llvm_extract() {
    let bin = fixture("demo");
    let map = InstrMap::from_object(&bin).unwrap();
    let (llvm, _) = InstrMap::from_yaml(&golden("extract.txt")).unwrap();
    assert_eq!(map.sleds, llvm.sleds);
    assert_eq!(map.functions, llvm.functions);
    // Byte-identical extract output.
    assert_eq!(map.to_yaml(|_| String::new()), golden("extract.txt"));
}

#[test]
fn instr_map_symbolized_matches_llvm_extract() {
    let bin = fixture("demo");
    let map = InstrMap::from_object(&bin).unwrap();
    let sym = Symbolizer::new(&bin).unwrap();
    let text = map.to_yaml(|s| sym.symbolize(s.function).display_name(s.function));
    assert_eq!(text, golden("extract-symbolize.txt"));
    let info = sym.symbolize(map.function_address(1).unwrap());
    assert_eq!(info.name.as_deref(), Some("fib(int)"));
    assert_eq!(info.debug_string(), "demo.cc:0:0");
}

#[test]
fn instr_map_typed_event_sleds_load() {
    // llvm-xray 14 fails on this binary ("Exec format error"); we load it.
    assert!(golden("extract-typed.stderr").contains("Exec format error"));
    let bin = fixture("demo-typed");
    let map = InstrMap::from_object(&bin).unwrap();
    assert!(map.sleds.iter().any(|s| s.kind == SledKind::TYPED_EVENT));
    let sym = Symbolizer::new(&bin).unwrap();
    let typed = map
        .sleds
        .iter()
        .find(|s| s.kind == SledKind::TYPED_EVENT)
        .unwrap();
    assert_eq!(
        sym.symbolize(typed.function).name.as_deref(),
        Some("emit_typed(int)")
    );
}

#[test]
fn account_debug_strings_match_llvm() {
    // `llvm-xray account` prints `file:line:col: name` per function id.
    let bin = fixture("demo");
    let map = InstrMap::from_object(&bin).unwrap();
    let sym = Symbolizer::new(&bin).unwrap();
    for line in golden("fdr-account.txt").lines().skip(2) {
        let id: u32 = line.split_whitespace().next().unwrap().parse().unwrap();
        let tail = line.split("  ").last().unwrap().trim();
        let addr = map.function_address(id).unwrap();
        let info = sym.symbolize(addr);
        assert_eq!(
            format!("{}: {}", info.debug_string(), info.display_name(addr)),
            tail
        );
    }
}

#[test]
fn instr_map_version_1_pie_relocations() {
    // Version-1 entries are zeros in the file; R_X86_64_RELATIVE relocations give the addresses.
    let bin = fixture("sled-v1-pie");
    let map = InstrMap::from_object(&bin).unwrap();
    assert_eq!(map.to_yaml(|_| String::new()), golden("extract-v1-pie.txt"));
    assert!(map.sleds.iter().all(|s| s.version == 1 && s.address != 0));
    let sym = Symbolizer::new(&bin).unwrap();
    assert_eq!(
        sym.symbolize(map.function_address(2).unwrap())
            .name
            .as_deref(),
        Some("g")
    );
}

#[test]
fn llvm22_basic_header_leaves_buffer_size_unwritten() {
    // clang-22's basic runtime (tests/fixtures/xray/nodebug-basic.xray) never writes the
    // header's buffer size: clang's pattern fill stays there, and in the bitfield's high bits.
    let bytes = fixture("nodebug-basic.xray");
    let trace = Trace::parse(&bytes).unwrap();
    assert_eq!(trace.header.buffer_size, 0xAAAA_AAAA_AAAA_AAAA);
    let v = verify(&trace);
    let codes: Vec<&str> = v.findings.iter().map(|f| f.code).collect();
    assert_eq!(codes, ["header-bitfield", "header-uninitialized"]);
    assert!(!v.has_errors());
    // LLVM 14's basic header (the demo) is written.
    let demo = fixture("demo-basic.xray");
    let demo = verify(&Trace::parse(&demo).unwrap());
    assert!(demo
        .findings
        .iter()
        .all(|f| f.code != "header-uninitialized"));
}
