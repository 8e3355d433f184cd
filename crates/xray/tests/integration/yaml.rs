//! `yaml::write_yaml` against llvm-xray 14's `convert -f yaml` outputs, and its streaming path
//! against its general path; `summary`, `thread_buffers` and `dump` on the same traces.

use profkit_xray::harness::{check_dump, check_summary, check_yaml_paths};
use profkit_xray::write::{FdrTraceWriter, OwnedEvent};
use profkit_xray::yaml::{write_yaml, YamlOptions, YamlOutcome};
use profkit_xray::{summary, EventKind, FileHeader, InstrMap, Symbolizer, ThreadKey, Trace};

use crate::common::{fixture, golden};

fn yaml(trace: &Trace<'_>, opts: &YamlOptions<'_>) -> (String, YamlOutcome) {
    let mut out = Vec::new();
    let o = write_yaml(trace, opts, &mut out).unwrap();
    (String::from_utf8(out).unwrap(), o)
}

fn sorted_lines(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.lines().collect();
    v.sort_unstable();
    v
}

#[test]
fn yaml_matches_llvm_convert() {
    let bin = fixture("demo");
    let map = InstrMap::from_object(&bin).unwrap();
    let sym = Symbolizer::new(&bin).unwrap();
    // The Symbolizer is not Sync: name every function first (as a function table does).
    let names: Vec<String> = map
        .functions
        .iter()
        .map(|&a| sym.symbolize(a).display_name(a))
        .collect();
    let name = |id: u32| match (id as usize).checked_sub(1).and_then(|i| names.get(i)) {
        Some(n) => n.clone(),
        None => format!("#{id}"),
    };
    for mode in ["fdr", "basic"] {
        let data = fixture(&format!("demo-{mode}.xray"));
        let t = Trace::parse(&data).unwrap();
        let (text, o) = yaml(&t, &YamlOptions::default());
        assert_eq!(text, golden(&format!("{mode}-convert-yaml.txt")), "{mode}");
        assert_eq!(o.problems, vec![]);
        assert_eq!(o.truncation, None);
        assert_eq!(o.events as usize, text.lines().count() - 9, "{mode}");
        let opts = YamlOptions {
            names: Some(&name),
            ..YamlOptions::default()
        };
        let (text, _) = yaml(&t, &opts);
        assert_eq!(
            text,
            golden(&format!("{mode}-convert-yaml-symbolize.txt")),
            "{mode}"
        );
        // --sort=false: the same lines; threads in file order (llvm: its hash map's order).
        let opts = YamlOptions {
            sort: false,
            ..YamlOptions::default()
        };
        let (text, _) = yaml(&t, &opts);
        let llvm = golden(&format!("{mode}-convert-yaml-nosort.txt"));
        assert_eq!(sorted_lines(&text), sorted_lines(&llvm), "{mode}");
        check_yaml_paths(&t);
        check_summary(&t);
        check_dump(&t);
    }
}

/// A trace of `threads` threads whose buffers interleave in the file, with custom events and
/// arguments, small buffers (many per thread), TSCs interleaved across threads.
fn interleaved(version: u16, threads: u32, calls: u64) -> Vec<u8> {
    let mut h = FileHeader::fdr(version);
    h.buffer_size = 512;
    let mut w = FdrTraceWriter::new(h);
    let mut tsc: Vec<u64> = (0..threads).map(|t| 1000 + u64::from(t)).collect();
    let per_chunk = 10;
    let mut done = 0;
    while done < calls {
        for t in 0..threads {
            let mut evs = Vec::new();
            for i in done..(done + per_chunk).min(calls) {
                let ts = &mut tsc[t as usize];
                let mut next = |step: u64| {
                    *ts += step;
                    *ts
                };
                let id = 1 + (i % 5) as u32;
                let mut enter = OwnedEvent::function(EventKind::Enter, id, next(3));
                if i % 7 == 0 {
                    enter.args = vec![i, 2 * i];
                }
                evs.push(enter);
                if i % 11 == 0 {
                    let mut c = OwnedEvent::function(EventKind::CustomEvent, 0, next(1));
                    c.data = format!("event {i}").into_bytes();
                    evs.push(c);
                }
                // Equal TSCs on different threads: ties go in thread order.
                let exit_kind = if i % 13 == 0 {
                    EventKind::TailExit
                } else {
                    EventKind::Exit
                };
                evs.push(OwnedEvent::function(exit_kind, id, next(2 + u64::from(t))));
            }
            w.thread(77, 200 + t, &evs).unwrap();
        }
        done += per_chunk;
    }
    w.finish()
}

#[test]
fn streaming_path_equals_general_path() {
    for version in 2..=5 {
        for threads in [1, 3] {
            let data = interleaved(version, threads, 1200);
            let t = Trace::parse(&data).unwrap();
            assert!(t.layout().buffers.len() > 20);
            check_yaml_paths(&t);
            check_summary(&t);
            // Every cut of the tail (the last few buffers).
            for cut in (data.len() - 600..data.len()).step_by(23) {
                let t = Trace::parse(&data[..cut]).unwrap();
                check_yaml_paths(&t);
                check_summary(&t);
                check_dump(&t);
            }
        }
    }
}

#[test]
fn truncated_yaml_is_written_up_to_the_cut() {
    let data = fixture("demo-fdr.xray");
    let full = yaml(&Trace::parse(&data).unwrap(), &YamlOptions::default()).1;
    let cut = &data[..data.len() - 3];
    let t = Trace::parse(cut).unwrap();
    let (_, o) = yaml(&t, &YamlOptions::default());
    assert_eq!(o.events, full.events - 1);
    let tr = o.truncation.unwrap();
    assert_eq!(tr.offset, data.len() as u64 - 8);
    assert_eq!(tr.record, Some(651));
    assert_eq!(
        tr.to_string(),
        format!(
            "truncated at offset {:#x} (record #651): function record needs 8 bytes, 5 remain",
            data.len() - 8
        )
    );
}

#[test]
fn summary_of_the_real_fdr_trace() {
    let data = fixture("demo-fdr.xray");
    let t = Trace::parse(&data).unwrap();
    let s = summary(&t);
    assert_eq!(s.format, "xray");
    assert_eq!(s.kind, "LLVM XRay FDR mode version 5, little-endian");
    assert_eq!(s.records, 652);
    let kinds: Vec<(&str, u64)> = s.kinds.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    assert_eq!(
        kinds,
        [
            ("function-enter", 282),
            ("function-exit", 282),
            ("function-enter-arg", 12),
            ("function-tail-exit", 12),
            ("custom-event", 12)
        ]
    );
    let threads: Vec<(Option<u32>, u64, u64)> = s
        .threads
        .iter()
        .map(|t| (t.pid, t.tid, t.records))
        .collect();
    assert_eq!(
        threads,
        [
            (Some(12009), 12010, 79),
            (Some(12009), 12011, 111),
            (Some(12009), 12012, 163),
            (Some(12009), 12009, 247)
        ]
    );
    let time = s.time.unwrap();
    assert_eq!(
        (time.first, time.last, time.duration_ns),
        (1795297121953411987, 1795297121953641257, 229270)
    );
    assert_eq!(s.detail("buffers"), Some(&8u64.into()));
    assert_eq!(s.detail("mode"), Some(&"fdr".into()));
    assert_eq!((s.problems, s.truncation), (0, None));
    assert!(s
        .header
        .contains(&("cycle_frequency", 1_000_000_000u64.into())));
}

#[test]
fn thread_buffers_group_in_file_order() {
    let data = interleaved(5, 3, 300);
    let t = Trace::parse(&data).unwrap();
    let groups = t.thread_buffers();
    let keys: Vec<ThreadKey> = groups.iter().map(|g| g.0).collect();
    assert_eq!(keys, [200, 201, 202].map(|tid| ThreadKey { pid: 77, tid }));
    let mut all: Vec<usize> = groups.iter().flat_map(|g| g.1.clone()).collect();
    for (_, bufs) in &groups {
        assert!(bufs.windows(2).all(|w| w[0] < w[1]));
    }
    all.sort_unstable();
    assert_eq!(all, (0..t.layout().buffers.len()).collect::<Vec<_>>());
}
