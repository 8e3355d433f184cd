//! The write layer: a recording written back (file and pipe mode in, file mode out) reads back
//! with the same records, in time order, plus the inserted ones; build ids are added.

use std::io::Cursor;

use profkit_perf::{
    write, BuildIdEntry, EventData, Insert, Mmap2, PerfData, RecordType, SampleId, WriteOptions,
};

use crate::fixture;

/// (record type, time, body) of every event.
fn events(pd: &PerfData<'_>) -> Vec<(RecordType, Option<u64>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut ev = pd.events().unwrap();
    while let Some(e) = ev.next_event() {
        let e = e.unwrap();
        out.push((e.record_type, e.time, e.body.to_vec()));
    }
    assert!(ev.truncation().is_none());
    out
}

fn rewrite(input: &[u8], inserts: &[Insert], ids: &[BuildIdEntry]) -> Vec<u8> {
    let pd = PerfData::parse(input).unwrap();
    let mut out = Cursor::new(Vec::new());
    let stats = write(
        &pd,
        inserts,
        ids,
        WriteOptions { round_every: 100 },
        &mut out,
    )
    .unwrap();
    assert_eq!(stats.inserted, inserts.len() as u64);
    assert_eq!(stats.bytes, out.get_ref().len() as u64);
    out.into_inner()
}

#[test]
fn file_mode_round_trip_with_an_inserted_mmap2() {
    let input = fixture("node-fp.data");
    let pd = PerfData::parse(&input).unwrap();
    let before = events(&pd);
    let attr = pd.attrs()[0].clone();
    // An MMAP2 halfway through the recording.
    let times: Vec<u64> = before.iter().filter_map(|e| e.1).collect();
    let t = times[times.len() / 2];
    let m = Mmap2 {
        pid: 42,
        tid: 43,
        start: 0x1000,
        len: 0x2000,
        pgoff: 0x3000,
        prot: 5,
        flags: 2,
        path: "/tmp/x/profkit-jit-42-0.so".into(),
        ..Mmap2::default()
    };
    let id = SampleId {
        pid: 42,
        tid: 43,
        time: t,
        id: attr.ids.first().copied().unwrap_or(0),
        ..SampleId::default()
    };
    let rec = m.record(2, &attr, &id, pd.header().endian).unwrap();
    let build_id = BuildIdEntry {
        pid: -1,
        misc: 2,
        build_id: (1..=20).collect(),
        path: m.path.clone(),
    };
    let out = rewrite(
        &input,
        &[Insert {
            time: t,
            record: rec,
        }],
        std::slice::from_ref(&build_id),
    );

    let back = PerfData::parse(&out).unwrap();
    assert!(
        back.meta().problems.is_empty(),
        "{:?}",
        back.meta().problems
    );
    assert_eq!(back.attrs().len(), pd.attrs().len());
    for (a, b) in back.attrs().iter().zip(pd.attrs()) {
        assert_eq!(a.ids, b.ids);
        assert_eq!(a.sample_type, b.sample_type);
        assert_eq!(a.name, b.name);
        assert_eq!(a.clockid, b.clockid);
    }
    assert_eq!(back.features().present, pd.features().present);
    let mut ids = pd.features().build_ids.clone();
    ids.push(profkit_perf::BuildId {
        pid: -1,
        misc: 2 | 0x8000,
        build_id: build_id.build_id.clone(),
        path: build_id.path.clone(),
    });
    assert_eq!(back.features().build_ids, ids);

    let after = events(&back);
    assert_eq!(after.len(), before.len() + 1);
    let at = after
        .iter()
        .position(|e| {
            e.0 == RecordType::MMAP2 && e.1 == Some(t) && e.2.starts_with(&42u32.to_le_bytes())
        })
        .unwrap();
    // Every input event is there, in the same order, around the inserted one.
    let mut without = after.clone();
    without.remove(at);
    assert_eq!(without, before);
    // In time order, and the insert before the input's events of the same time.
    let ts: Vec<u64> = after.iter().filter_map(|e| e.1).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    assert!(after[..at].iter().all(|e| e.1.is_none_or(|x| x <= t)));
    assert!(after[at + 1..].iter().all(|e| e.1.is_none_or(|x| x >= t)));
    let mut walk = back.events().unwrap();
    let mut seen = false;
    while let Some(e) = walk.next_event() {
        if let EventData::Mmap(mm) = e.unwrap().data {
            if mm.pid == 42 {
                assert_eq!(
                    (mm.tid, mm.start, mm.len, mm.pgoff, mm.prot, mm.flags),
                    (43, 0x1000, 0x2000, 0x3000, Some(5), Some(2))
                );
                assert_eq!(mm.path, m.path.as_bytes());
                seen = true;
            }
        }
    }
    assert!(seen);
}

#[test]
fn rewriting_without_inserts_keeps_every_record() {
    for name in ["node-fp.data", "node-dwarf.data.gz", "node-killed.data.gz"] {
        let input = fixture(name);
        let pd = PerfData::parse(&input).unwrap();
        let out = rewrite(&input, &[], &[]);
        let back = PerfData::parse(&out).unwrap();
        assert_eq!(events(&back), events(&pd), "{name}");
        assert_eq!(back.features().build_ids, pd.features().build_ids, "{name}");
    }
}

#[test]
fn pipe_mode_becomes_file_mode() {
    let input = fixture("node-pipe.data");
    let pd = PerfData::parse(&input).unwrap();
    let out = rewrite(&input, &[], &[]);
    let back = PerfData::parse(&out).unwrap();
    assert_eq!(back.header().mode, profkit_perf::Mode::File);
    assert!(
        back.meta().problems.is_empty(),
        "{:?}",
        back.meta().problems
    );
    assert_eq!(back.attrs().len(), pd.attrs().len());
    assert_eq!(back.attrs()[0].ids, pd.attrs()[0].ids);
    assert_eq!(back.attrs()[0].sample_type, pd.attrs()[0].sample_type);
    let header_records = |t: RecordType| matches!(t.0, 64..=67 | 80);
    let want: Vec<_> = events(&pd)
        .into_iter()
        .filter(|e| !header_records(e.0))
        .collect();
    assert_eq!(events(&back), want);
    assert_eq!(back.features().hostname, pd.features().hostname);
    assert_eq!(back.features().cmdline, pd.features().cmdline);
}
