//! A basic log read in chunks ([`BasicLayout`]) gives what the whole-file decoder gives: the
//! same threads in the same order, the same calls per thread (with their arguments), the same problems — wherever
//! the chunks are cut, with arg payloads, garbage records and a cut file.

use proptest::prelude::*;

use profkit_xray::{BasicLayout, EventKind, FileHeader, ThreadKey, Trace};

/// A record: type (0 function, 1 payload, 2 unknown), kind (0-4), function, thread.
fn record() -> impl Strategy<Value = (u16, u8, u32, u32)> {
    (
        prop_oneof![6 => Just(0u16), 3 => Just(1u16), 1 => Just(2u16)],
        0u8..5,
        0u32..4,
        1u32..4,
    )
}

fn file(records: &[(u16, u8, u32, u32)], cut: usize) -> Vec<u8> {
    let mut data = FileHeader::basic(3).to_bytes().to_vec();
    for (i, &(ty, kind, func, tid)) in records.iter().enumerate() {
        let mut rec = [0u8; 32];
        rec[0..2].copy_from_slice(&ty.to_le_bytes());
        if ty == 1 {
            rec[4..8].copy_from_slice(&func.to_le_bytes());
            rec[8..12].copy_from_slice(&tid.to_le_bytes());
            rec[12..16].copy_from_slice(&7u32.to_le_bytes());
            rec[16..24].copy_from_slice(&(500 + i as u64).to_le_bytes());
        } else {
            rec[3] = kind;
            rec[4..8].copy_from_slice(&func.to_le_bytes());
            rec[8..16].copy_from_slice(&(1000 + i as u64).to_le_bytes());
            rec[16..20].copy_from_slice(&tid.to_le_bytes());
            rec[20..24].copy_from_slice(&7u32.to_le_bytes());
        }
        data.extend_from_slice(&rec);
    }
    let keep = data.len() - cut.min(31).min(data.len() - 32);
    data.truncate(keep);
    data
}

type Calls = Vec<(ThreadKey, Vec<(EventKind, u32, u64, Vec<u64>)>)>;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    #[test]
    fn chunks_read_like_the_whole_file(
        records in proptest::collection::vec(record(), 0..80),
        cut in 0usize..40,
        chunk in 1usize..9,
    ) {
        let data = file(&records, cut);
        let trace = Trace::parse(&data).unwrap();
        let whole = trace.decode();
        let expected: Calls = whole
            .threads
            .iter()
            .map(|t| (t.key, t.events.iter().map(|e| (e.kind, e.func_id, e.tsc, e.args.to_vec())).collect()))
            .collect();
        let layout = BasicLayout::scan(&data, &trace.header, chunk, &mut |_, _| {});
        let mut got: Calls = layout.threads.iter().map(|(k, _)| (*k, Vec::new())).collect();
        for c in &layout.chunks {
            for (i, (key, calls)) in got.iter_mut().enumerate() {
                BasicLayout::visit_calls(&data, &trace.header, c, i as u32, *key, |k, f, t, a| calls.push((k, f, t, a.to_vec())));
            }
        }
        prop_assert_eq!(&got, &expected);
        let firsts: Vec<u64> = whole.threads.iter().map(|t| t.events[0].tsc).collect();
        let layout_firsts: Vec<u64> = layout.threads.iter().map(|t| t.1).collect();
        prop_assert_eq!(layout_firsts, firsts);
        let problems = |v: &[profkit_xray::Error]| v.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        prop_assert_eq!(problems(&layout.problems), problems(&whole.problems));
        prop_assert_eq!(layout.records, whole.records);
        prop_assert_eq!(&layout.truncation, &whole.truncation);
    }
}

/// Function records (kind 0-3 with some arg payloads) of up to 4 threads whose TSCs take
/// small steps (0 often: ties between threads and within one), sometimes backwards.
fn timed_records() -> impl Strategy<Value = Vec<(u8, u32, u32, u64, bool)>> {
    proptest::collection::vec(
        (
            0u8..4,
            0u32..5,
            1u32..5,
            prop_oneof![8 => 0u64..3, 1 => Just(u64::MAX)],
            any::<bool>(),
        ),
        0..120,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// The streamed YAML of a basic log (sorted: threads merged by TSC) is byte for byte the
    /// general path's, in chunks of every size (the harness tries 1, 3 and 7 records too).
    #[test]
    fn basic_yaml_streams_like_the_general_path(records in timed_records()) {
        let mut data = FileHeader::basic(3).to_bytes().to_vec();
        let mut tsc_of = std::collections::HashMap::<u32, u64>::new();
        for &(kind, func, tid, step, arg) in &records {
            let tsc = tsc_of.entry(tid).or_insert(1000);
            *tsc = if step == u64::MAX { tsc.saturating_sub(5) } else { *tsc + step };
            let mut rec = [0u8; 32];
            rec[2] = tid as u8;
            rec[3] = kind;
            rec[4..8].copy_from_slice(&func.to_le_bytes());
            rec[8..16].copy_from_slice(&tsc.to_le_bytes());
            rec[16..20].copy_from_slice(&tid.to_le_bytes());
            rec[20..24].copy_from_slice(&7u32.to_le_bytes());
            data.extend_from_slice(&rec);
            if arg {
                let mut p = [0u8; 32];
                p[0..2].copy_from_slice(&1u16.to_le_bytes());
                p[4..8].copy_from_slice(&func.to_le_bytes());
                p[8..12].copy_from_slice(&tid.to_le_bytes());
                p[12..16].copy_from_slice(&7u32.to_le_bytes());
                p[16..24].copy_from_slice(&(*tsc ^ 0x55).to_le_bytes());
                data.extend_from_slice(&p);
            }
        }
        let trace = Trace::parse(&data).unwrap();
        profkit_xray::harness::check_yaml_paths(&trace);
    }
}

/// 30,000 threads of one enter/exit each in one chunk: a thread's calls are read from its own
/// run, so decoding them all reads each record once (it read the whole chunk per thread, and
/// the scan searched the chunk's thread list per thread: 66 s for 100k threads, B4). A
/// quadratic walk would take minutes here.
#[test]
fn many_threads_are_linear() {
    let n = 30_000u32;
    let records: Vec<(u16, u8, u32, u32)> = (1..=n)
        .flat_map(|t| [(0u16, 0u8, 1u32, t), (0, 1, 1, t)])
        .collect();
    let data = file(&records, 0);
    let trace = Trace::parse(&data).unwrap();
    let started = std::time::Instant::now();
    let layout = BasicLayout::scan(&data, &trace.header, 1 << 16, &mut |_, _| {});
    assert_eq!(layout.threads.len(), n as usize);
    let mut calls = 0usize;
    for c in &layout.chunks {
        assert_eq!(c.runs.len(), c.threads.len());
        for &t in &c.threads {
            let key = layout.threads[t as usize].0;
            BasicLayout::visit_calls(&data, &trace.header, c, t, key, |_, _, _, _| calls += 1);
        }
    }
    assert_eq!(calls, 2 * n as usize);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
