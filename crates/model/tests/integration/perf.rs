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
    // The framing check read the whole file first: all of it is dropped once, then read again
    // in order (this recording is smaller than a release step).
    assert_eq!(ranges.first(), Some(&(0, data.len() as u64)));
    for &(start, end) in &ranges {
        assert!(start < end && end <= data.len() as u64, "{start}..{end}");
    }
}
