//! Checks shared by the fuzz targets (`fuzz/fuzz_targets/xray_*.rs`) and the test that replays
//! their saved inputs (`fuzz/regressions/xray_*`), so both run exactly the same code. Not part
//! of the supported API: each function panics when a reader breaks one of its own promises
//! (which is what a fuzzer looks for); on any input it must otherwise return normally.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::ops::ControlFlow;

use crate::dump::{dump, DumpOptions};
use crate::read::events::{BufferItem, ThreadState, Trace};
use crate::yaml::convert::write_general;
use crate::yaml::trace::{read_yaml, write_event, write_footer, write_header, yaml_to_binary};
use crate::yaml::{write_yaml, YamlOptions};

/// The binary readers on `data`: header parse, buffer scan, full decode (parallel and
/// sequential must agree), the closure-driven buffer decoder (must give what the iterator
/// gives), the sequential record walk, the verifier, the summary, the dump, the YAML writer
/// (both paths must agree) and the instrumentation-map YAML reader.
pub fn check_read(data: &[u8]) {
    let _ = crate::FileHeader::parse(data);
    if let Ok(trace) = Trace::parse(data) {
        let decoded = trace.decode();
        assert_eq!(decoded, trace.decode_sequential());
        for ev in decoded.events() {
            let _ = trace.header.ticks_to_ns(ev.tsc);
            let _ = ev.args.to_vec();
        }
        for bi in 0..trace.layout().buffers.len() {
            check_visit(&trace, bi);
        }
        check_basic_chunks(&trace, &decoded);
        let _ = trace.fdr_records().count();
        let _ = trace.basic_records().count();
        let v = crate::verify(&trace);
        assert_eq!(v.truncation, decoded.truncation);
        check_summary(&trace);
        check_dump(&trace);
        check_yaml_paths(&trace);
    }
    let _ = crate::InstrMap::from_yaml(&String::from_utf8_lossy(data));
}

/// A basic log read in chunks gives the whole-file decoder's threads, calls and problems.
fn check_basic_chunks(trace: &Trace<'_>, decoded: &crate::Decoded<'_>) {
    if trace.header.trace_type != crate::TraceType::BASIC {
        return;
    }
    for chunk in [1, 3, crate::CHUNK_RECORDS] {
        let layout = crate::BasicLayout::scan(trace.data(), &trace.header, chunk, &mut |_, _| {});
        let keys: Vec<_> = layout.threads.iter().map(|t| t.0).collect();
        let want: Vec<_> = decoded.threads.iter().map(|t| t.key).collect();
        assert_eq!(keys, want);
        for (t, key) in keys.iter().enumerate() {
            let mut calls = Vec::new();
            for c in &layout.chunks {
                crate::BasicLayout::visit_calls(
                    trace.data(),
                    &trace.header,
                    c,
                    t as u32,
                    *key,
                    |k, f, tsc, args| {
                        calls.push((k, f, tsc, args.to_vec()));
                    },
                );
            }
            let want: Vec<_> = decoded.threads[t]
                .events
                .iter()
                .map(|e| (e.kind, e.func_id, e.tsc, e.args.to_vec()))
                .collect();
            assert_eq!(calls, want);
        }
        assert_eq!(layout.problems, decoded.problems);
        assert_eq!(layout.truncation, decoded.truncation);
    }
}

/// [`crate::BufferEvents::visit`] gives the iterator's items and ends in the same state.
fn check_visit(trace: &Trace<'_>, bi: usize) {
    let state = ThreadState::default();
    let mut a = trace.buffer_events(bi, state);
    let mut want = Vec::new();
    for item in a.by_ref() {
        want.push(match item {
            Ok(ev) => BufferItem::from(ev),
            Err(e) => BufferItem::Problem(e),
        });
    }
    let mut b = trace.buffer_events(bi, state);
    let mut got = Vec::new();
    b.visit(|item| {
        got.push(item);
        ControlFlow::Continue(())
    });
    assert_eq!(got, want);
    assert_eq!(
        (a.state(), a.records(), a.used_unknown_tsc()),
        (b.state(), b.records(), b.used_unknown_tsc())
    );
}

/// The llvm-xray YAML trace reader on `data`: what it reads must re-encode into a binary trace
/// that parses and decodes, and that trace written back as YAML must read again.
pub fn check_yaml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(y) = read_yaml(text) else {
        return;
    };
    let Ok(bin) = yaml_to_binary(&y) else {
        return;
    };
    let trace = Trace::parse(&bin).expect("yaml_to_binary writes a trace that parses");
    let decoded = trace.decode();
    let mut out = Vec::new();
    write_header(&mut out, &trace.header).unwrap();
    for ev in decoded.events() {
        write_event(&mut out, ev, ev.func_id, &ev.func_id.to_string()).unwrap();
    }
    write_footer(&mut out).unwrap();
    read_yaml(&String::from_utf8_lossy(&out)).expect("profkit's own YAML reads back");
}

/// [`crate::summary`] counts what [`Trace::decode`] decodes.
pub fn check_summary(trace: &Trace<'_>) {
    let d = trace.decode();
    let s = crate::summary(trace);
    assert_eq!(s.records, d.records);
    assert_eq!(s.problems, d.problems.len() as u64);
    assert_eq!(s.first_problem, d.problems.first().map(|p| p.to_string()));
    assert_eq!(s.truncation, d.truncation);
    let threads: Vec<(Option<u32>, u64, u64)> = d
        .threads
        .iter()
        .map(|t| {
            let pid = (t.key.pid != 0).then_some(t.key.pid);
            (pid, u64::from(t.key.tid), t.events.len() as u64)
        })
        .collect();
    let got: Vec<_> = s
        .threads
        .iter()
        .map(|t| (t.pid, t.tid, t.records))
        .collect();
    assert_eq!(got, threads);
    let mut kinds: Vec<(String, u64)> = Vec::new();
    for ev in d.events() {
        match kinds.iter_mut().find(|(k, _)| k == ev.kind.llvm_name()) {
            Some((_, n)) => *n += 1,
            None => kinds.push((ev.kind.llvm_name().to_string(), 1)),
        }
    }
    let mut got = s.kinds.clone();
    got.sort();
    kinds.sort();
    assert_eq!(got, kinds);
    let lo = d.events().map(|e| e.tsc).min();
    let hi = d.events().map(|e| e.tsc).max();
    assert_eq!(s.time.map(|t| t.first), lo);
    assert_eq!(s.time.map(|t| t.last), hi);
}

/// [`crate::dump::dump`] prints every layout and reports the cut [`Trace::decode`] reports.
pub fn check_dump(trace: &Trace<'_>) {
    let d = trace.decode();
    for json in [false, true] {
        for verify in [false, true] {
            let mut out = Vec::new();
            let o = dump(trace, &DumpOptions { json, verify }, &mut out).unwrap();
            assert_eq!(o.truncation, d.truncation);
            if trace.header.is_fdr() {
                assert_eq!(o.records, d.records);
            }
        }
    }
}

/// [`write_yaml`] (streaming where it applies) writes the bytes the general path writes,
/// sorted or not, with ids or names, and reports the same outcome.
pub fn check_yaml_paths(trace: &Trace<'_>) {
    let name = |id: u32| format!("f'{id}");
    let named: &(dyn Fn(u32) -> String + Sync) = &name;
    for sort in [true, false] {
        for names in [None, Some(named)] {
            let opts = YamlOptions {
                sort,
                names,
                release: None,
            };
            let mut a = Vec::new();
            let oa = write_yaml(trace, &opts, &mut a).unwrap();
            let mut b = Vec::new();
            let ob = write_general(trace, &opts, &mut b).unwrap();
            assert!(a == b, "sort {sort}: the two YAML paths differ");
            assert_eq!(oa, ob, "sort {sort}");
            // A basic log streamed in small chunks (threads spread over many of them).
            for chunk in [1, 3, 7] {
                let mut c = Vec::new();
                let basic = crate::yaml::basic::write_basic(trace, &opts, &mut c, chunk);
                if let Some(oc) = basic {
                    assert!(
                        c == b,
                        "sort {sort}, chunks of {chunk}: basic streaming differs"
                    );
                    assert_eq!(oc.unwrap(), ob, "sort {sort}, chunks of {chunk}");
                }
            }
        }
    }
}

/// The profiling-mode reader on `data`: header parse, the block/record walk, `verify`,
/// `summary` and `dump` (text and NDJSON) must agree on the records and the cut; every finding
/// code must be in the table with its severity; records lie inside the file, in order. A file
/// read without problems or cut is written back byte for byte by the writer.
pub fn check_profile(data: &[u8]) {
    use crate::profile::write::{PathRecord, ProfileWriter};
    use crate::profile::{self, Profile, ProfileEntry, RECORD_TAIL_SIZE};

    let _ = profile::ProfileHeader::is_profile(data);
    let Ok(p) = Profile::parse(data) else {
        return;
    };
    let mut blocks: Vec<(u32, u64, Vec<PathRecord>)> = Vec::new();
    let mut problems = 0usize;
    let mut records = 0u64;
    let mut last_end = profile::PROFILE_HEADER_SIZE as u64;
    let mut it = p.entries();
    for e in it.by_ref() {
        match e {
            ProfileEntry::Block(b) => {
                assert!(b.offset >= last_end, "blocks go forward");
                last_end = b.offset + profile::BLOCK_HEADER_SIZE as u64;
                blocks.push((b.number, b.tid, Vec::new()));
            }
            ProfileEntry::Record(r) => {
                assert_eq!(r.index, records);
                assert!(r.offset >= last_end, "records go forward");
                let end = r.offset + (r.path.len() * 4 + RECORD_TAIL_SIZE) as u64;
                assert!(end <= data.len() as u64, "a record inside the file");
                last_end = end;
                records += 1;
                let rec = PathRecord {
                    path: r.path.root_first().collect(),
                    call_count: r.call_count,
                    cumulative_time: r.cumulative_time,
                };
                blocks
                    .last_mut()
                    .expect("a record follows its block")
                    .2
                    .push(rec);
            }
            ProfileEntry::Problem(_) => problems += 1,
        }
    }
    let truncation = it.truncation().cloned();
    assert_eq!(it.records(), records);
    let v = profile::verify::verify(&p);
    assert_eq!(v.records, records);
    assert_eq!(v.truncation, truncation);
    for f in &v.findings {
        let known = profile::verify::codes::ALL
            .iter()
            .chain(profkit_common::finding::COMMON_CODES)
            .any(|(c, s, _)| *c == f.code && *s == f.severity);
        assert!(known, "finding code {} with its severity", f.code);
    }
    let s = profile::summary::summary(&p);
    assert_eq!(s.records, records);
    assert_eq!(s.problems, problems as u64);
    assert_eq!(s.truncation, truncation);
    for json in [false, true] {
        let mut out = Vec::new();
        let d = profile::dump::dump(&p, json, &mut out).unwrap();
        assert_eq!(d.records, records);
        assert_eq!(d.problems.len(), problems);
        assert_eq!(d.truncation, truncation);
    }
    if problems == 0 && truncation.is_none() {
        let mut w = ProfileWriter::new(&p.header);
        for (number, tid, recs) in &blocks {
            w.block_numbered(*number, *tid, recs).unwrap();
        }
        assert!(
            w.finish() == data,
            "the writer writes a clean file back byte for byte"
        );
    }
}

/// The instrumentation map of an ELF object (`InstrMap::from_object`: sections, relocations,
/// sled versions) and the symbolizer on the same bytes (DWARF and the symbol table), as
/// `extract --symbolize` uses them; the map written as YAML must read back with the same sleds.
pub fn check_instr_map(data: &[u8]) {
    let map = crate::InstrMap::from_object(data);
    let sym = crate::Symbolizer::new(data).ok();
    let Ok(map) = map else { return };
    let mut names = Vec::new();
    let yaml = map.to_yaml(|s| {
        let name = sym
            .as_ref()
            .map(|sym| sym.symbolize(s.function).display_name(s.function))
            .unwrap_or_default();
        names.push(name.clone());
        name
    });
    let (back, back_names) = crate::InstrMap::from_yaml(&yaml).unwrap();
    assert_eq!(back.sleds.len(), map.sleds.len());
    for (a, b) in back.sleds.iter().zip(&map.sleds) {
        assert_eq!(
            (a.func_id, a.address, a.function),
            (b.func_id, b.address, b.function)
        );
    }
    // A name with a line break reads back folded (YAML: the break is one space).
    for (got, want) in back_names.iter().zip(&names) {
        if !want.contains(['\n', '\r']) {
            assert_eq!(got, want);
        }
    }
    assert_eq!(back_names.len(), names.len());
}
