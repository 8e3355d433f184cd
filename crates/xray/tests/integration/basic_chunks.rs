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
            for (key, calls) in got.iter_mut() {
                BasicLayout::visit_calls(&data, &trace.header, c, *key, |k, f, t, a| calls.push((k, f, t, a.to_vec())));
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
