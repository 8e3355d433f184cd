//! The perf.data driver on cut and corrupted recordings: never a panic, every sample before a
//! cut is used and the cut is reported; on the whole file, every sample perf counted.

use std::path::PathBuf;

use profkit_model::events::Recorded;
use profkit_model::feed::perf::{feed, JitSearch, PerfOptions};

fn options() -> PerfOptions {
    let nowhere = PathBuf::from("/nonexistent/profkit-test");
    PerfOptions {
        jit: JitSearch {
            beside: None,
            dirs: vec![nowhere.clone()],
            tmp: nowhere,
            ..JitSearch::default()
        },
        // Kernel names do not matter here; leave kallsyms unparsed.
        kallsyms: Some(PathBuf::from("/nonexistent/kallsyms")),
        ..PerfOptions::default()
    }
}

fn samples(data: &[u8]) -> Option<(usize, bool)> {
    let mut sink = Recorded::default();
    let (summary, _) = feed(data, "cut", &options(), None, &mut sink).ok()?;
    let n = sink
        .events
        .iter()
        .filter(|e| matches!(e, profkit_model::events::RecordedEvent::Sample { .. }))
        .count();
    Some((n, summary.truncation.is_some()))
}

#[test]
fn cut_recordings_use_everything_before_the_cut() {
    let data = profkit_testkit::read_fixture("perf/node-fp.data");
    let (all, cut) = samples(&data).unwrap();
    // perf report --stats: 355 samples (tests/fixtures/perf/node-fp.stats.txt).
    assert_eq!((all, cut), (355, false));
    // The data section (header bytes 40..56: offset, size); the feature sections follow it.
    let word = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap()) as usize;
    let data_end = word(40) + word(48);
    let mut last = 0;
    let step = (data.len() / 120).max(1);
    for len in (0..data.len()).step_by(step) {
        if let Some((n, truncated)) = samples(&data[..len]) {
            assert!(n <= all);
            // A cut in the data section is reported (the header says how much there was).
            if len > word(40) && len < data_end {
                assert!(truncated, "a cut at {len} is not reported");
            }
            last = last.max(n);
        }
    }
    assert!(
        last > all / 2,
        "cuts late in the file keep most samples ({last} of {all})"
    );
}

#[test]
fn corrupted_bytes_never_panic() {
    let data = profkit_testkit::read_fixture("perf/node-fp.data");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..80 {
        let mut bad = data.clone();
        for _ in 0..8 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let i = (seed as usize) % bad.len();
            bad[i] ^= (seed >> 32) as u8 | 1;
        }
        let _ = samples(&bad);
    }
}

#[test]
fn the_walk_releases_the_bytes_it_has_read() {
    let data = profkit_testkit::read_fixture("perf/node-fp.data");
    let ranges = std::sync::Mutex::new(Vec::new());
    let release = |start: u64, end: u64| ranges.lock().unwrap().push((start, end));
    let mut sink = Recorded::default();
    feed(&data, "release", &options(), Some(&release), &mut sink).unwrap();
    let ranges = ranges.into_inner().unwrap();
    // The records' framing is checked as they are read, in one pass: the walk drops what it
    // has read behind itself every 8 MiB, and the rest at its end (this recording is smaller
    // than a step: all of it, once).
    assert_eq!(ranges, [(0, data.len() as u64)]);
    for &(start, end) in &ranges {
        assert!(start < end && end <= data.len() as u64, "{start}..{end}");
    }
}

/// The node-fp recording with one more sample: a copy of the first node sample whose pc and
/// first user frame are `ip` (written with profkit-perf's writer), and that sample's pid.
fn with_sample_at(ip: u64) -> (Vec<u8>, u32) {
    use profkit_perf::{EventData, Insert, PerfData, WriteOptions};
    const PERF_CONTEXT_USER: u64 = 0xffff_ffff_ffff_fe00;
    let data = profkit_testkit::read_fixture("perf/node-fp.data");
    let pd = PerfData::parse(&data).unwrap();
    let mut events = pd.events().unwrap();
    let mut insert = None;
    while let Some(ev) = events.next_event() {
        let ev = ev.unwrap();
        let EventData::Sample(s) = &ev.data else {
            continue;
        };
        let mut body = ev.body.to_vec();
        let user = body
            .chunks_exact(8)
            .position(|w| u64::from_le_bytes(w.try_into().unwrap()) == PERF_CONTEXT_USER);
        let (Some(pid), Some(at), Some(time)) = (s.pid, user, ev.time) else {
            continue;
        };
        // The pc (PERF_SAMPLE_IP comes first) and the first user frame after the marker.
        body[..8].copy_from_slice(&ip.to_le_bytes());
        body[(at + 1) * 8..(at + 2) * 8].copy_from_slice(&ip.to_le_bytes());
        let mut record = Vec::new();
        record.extend_from_slice(&9u32.to_le_bytes());
        record.extend_from_slice(&ev.misc.to_le_bytes());
        record.extend_from_slice(&u16::try_from(8 + body.len()).unwrap().to_le_bytes());
        record.extend_from_slice(&body);
        insert = Some((
            Insert {
                time: time + 1,
                record,
            },
            pid as u32,
        ));
        break;
    }
    drop(events);
    let (insert, pid) = insert.expect("a sample with a user callchain");
    let mut out = std::io::Cursor::new(Vec::new());
    profkit_perf::write(&pd, &[insert], &[], WriteOptions::default(), &mut out).unwrap();
    (out.into_inner(), pid)
}

fn unnamed_jit_samples(data: &[u8], pid: u32) -> (u64, u64) {
    let mut sink = Recorded::default();
    let (_, report) = feed(data, "t", &options(), None, &mut sink).unwrap();
    let p = report.processes.iter().find(|p| p.pid == pid).unwrap();
    (p.samples, p.unnamed_jit_samples)
}

/// A sample at ip 0 (no mapping holds it) is one more sample, but not JIT code nothing names.
#[test]
fn a_sample_at_ip_0_is_not_anonymous_executable_memory() {
    let base = profkit_testkit::read_fixture("perf/node-fp.data");
    let (zero, pid) = with_sample_at(0);
    let (samples, unnamed) = unnamed_jit_samples(&base, pid);
    assert_eq!(unnamed_jit_samples(&zero, pid), (samples + 1, unnamed));
}
