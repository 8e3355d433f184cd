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
    // The records' framing is checked as they are read, in one pass: the reading thread drops
    // what it has read behind itself every 8 MiB, and the walk the rest at its end (this
    // recording is smaller than a step: all of it, once).
    assert_eq!(ranges, [(0, data.len() as u64)]);
}

#[test]
fn the_reading_thread_releases_what_it_has_read_in_steps() {
    const STEP: u64 = 8 << 20;
    let (data, _) = with_copies_of_a_sample(0x1234, 3 * STEP as usize);
    let ranges = std::sync::Mutex::new(Vec::new());
    let release = |start: u64, end: u64| {
        let thread = std::thread::current().id();
        ranges.lock().unwrap().push((start, end, thread));
    };
    let mut sink = Recorded::default();
    let (released, _) = feed(&data, "steps", &options(), Some(&release), &mut sink).unwrap();
    let mut whole = Recorded::default();
    let (summary, _) = feed(&data, "whole", &options(), None, &mut whole).unwrap();
    assert_eq!(released.other_events, summary.other_events);
    let ranges = ranges.into_inner().unwrap();
    // The steps, on the reading thread: one after the other, 8 MiB or more each; then all of
    // the file, once the walk is over, on the walk's.
    let (last, steps) = ranges.split_last().unwrap();
    assert_eq!(
        (last.0, last.1, last.2),
        (0, data.len() as u64, std::thread::current().id())
    );
    assert!(steps.len() >= 2, "{ranges:?}");
    let mut done = 0;
    for &(start, end, thread) in steps {
        assert_eq!(start, done, "{ranges:?}");
        assert!(
            end - start >= STEP && end <= data.len() as u64,
            "{ranges:?}"
        );
        assert_ne!(thread, std::thread::current().id());
        done = end;
    }
}

/// The node-fp recording with one more sample: a copy of the first node sample whose pc and
/// first user frame are `ip` (written with profkit-perf's writer), and that sample's pid.
fn with_sample_at(ip: u64) -> (Vec<u8>, u32) {
    with_copies_of_a_sample(ip, 1)
}

/// The node-fp recording with copies of one more sample, a millisecond apart (at least one,
/// and as many as `bytes` of them take): the first node sample with a user callchain, its pc and first user frame
/// set to `ip` (written with profkit-perf's writer); and that sample's pid.
fn with_copies_of_a_sample(ip: u64, bytes: usize) -> (Vec<u8>, u32) {
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
    // A millisecond apart, past the recording's end: a reader sorting by window holds what
    // is read until the time of the records before it in the file has passed. The copy's time
    // in its body (PERF_SAMPLE_TIME) moves too.
    const MS: u64 = 1_000_000;
    let copies = bytes.div_ceil(insert.record.len()).max(1) as u64;
    let time_at = insert
        .record
        .chunks_exact(8)
        .position(|w| u64::from_le_bytes(w.try_into().unwrap()) == insert.time - 1)
        .expect("the sample's time")
        * 8;
    let mut inserts = Vec::new();
    for i in 0..copies {
        let mut record = insert.record.clone();
        record[time_at..time_at + 8].copy_from_slice(&(insert.time - 1 + i * MS).to_le_bytes());
        let time = insert.time + i * MS;
        inserts.push(Insert { time, record });
        // A FINISHED_ROUND every 256 copies (~0.5 MiB): the writer counts only the input's
        // records for its own.
        if i % 256 == 255 {
            // type, misc 0, size 8
            let record = [68u32.to_le_bytes(), (8u32 << 16).to_le_bytes()].concat();
            inserts.push(Insert { time, record });
        }
    }
    let mut out = std::io::Cursor::new(Vec::new());
    profkit_perf::write(&pd, &inserts, &[], WriteOptions::default(), &mut out).unwrap();
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

/// A sink on the writer's thread whose events the test reads after `finish` (a [`Threaded`]
/// frees its sink there).
#[derive(Clone, Default)]
struct Kept(std::sync::Arc<std::sync::Mutex<Recorded>>);

macro_rules! kept {
    ($($method:ident($arg:ty)),*) => {
        impl profkit_model::events::EventSink for Kept {
            $(fn $method(&mut self, a: $arg) -> std::io::Result<()> {
                self.0.lock().unwrap().$method(a)
            })*
            fn function(
                &mut self,
                id: profkit_model::func::FuncId,
                info: &profkit_model::func::FuncInfo,
            ) -> std::io::Result<()> {
                self.0.lock().unwrap().function(id, info)
            }
            fn finish(&mut self) -> std::io::Result<()> {
                self.0.lock().unwrap().finish()
            }
        }
    };
}
use profkit_model::events::{
    CodeRegion, MappingInfo, ProcessInfo, Sample, ThreadInfo, Threaded, TraceInfo,
};
kept!(
    begin(&TraceInfo<'_>),
    process(&ProcessInfo<'_>),
    thread(&ThreadInfo<'_>),
    sample(&Sample<'_>),
    code(&CodeRegion<'_>),
    mapping(&MappingInfo<'_>)
);

/// Naming on two threads (a helper on the writer's thread names the samples of the processes
/// it is given) gives the events naming on one gives: on the recording of two node processes
/// (one each, with their perf maps: JIT frames named from both), on python3, node and python3
/// under shims that fork (forks and mappings of the helper's processes handed over), and on
/// every other recording (one process, or user stacks: nothing moves).
#[test]
fn naming_on_two_threads_gives_the_events_of_one() {
    let dir = profkit_testkit::scratch_dir().join("two-threads");
    std::fs::create_dir_all(&dir).unwrap();
    for map in profkit_testkit::fixture_files("perf", "map") {
        let name = map.file_name().unwrap().to_string_lossy().into_owned();
        let plain = name.split_once('.').map_or(name.as_str(), |(_, rest)| rest);
        std::fs::copy(&map, dir.join(plain)).unwrap();
    }
    let options = |helper| PerfOptions {
        jit: JitSearch {
            beside: None,
            dirs: vec![dir.clone()],
            tmp: dir.clone(),
            ..JitSearch::default()
        },
        kallsyms: Some(PathBuf::from("/nonexistent/kallsyms")),
        helper: Some(helper),
        ..PerfOptions::default()
    };
    let run = |data: &[u8], helper: bool| {
        let kept = Kept::default();
        let mut sink = Threaded::new(kept.clone()).unwrap();
        let (_, report) = feed(data, "two", &options(helper), None, &mut sink).unwrap();
        let recorded = kept.0.lock().unwrap().clone();
        assert!(recorded.finished);
        (recorded, report)
    };
    for (name, moves) in [
        ("node-two.data", true),
        ("mix.data", true),
        ("node-fp.data", false),
        ("node-basic-prof.data", false),
        ("node-pipe.data", false),
        ("node-dwarf.data.gz", false),
        ("node-killed.data.gz", false),
    ] {
        let data = profkit_testkit::read_fixture_gunzipped(format!("perf/{name}"));
        let (one, one_report) = run(&data, false);
        let (two, two_report) = run(&data, true);
        assert_eq!(one_report.helped, 0, "{name}");
        assert_eq!(
            two_report.helped > 0,
            moves,
            "{name}: {}",
            two_report.helped
        );
        assert_eq!(one, two, "{name}");
        assert_eq!(one_report.functions, two_report.functions, "{name}");
        let per_process = |r: &profkit_model::feed::perf::PerfReport| {
            r.processes
                .iter()
                .map(|p| {
                    (
                        p.pid,
                        p.comm.clone(),
                        p.samples,
                        p.jit_samples,
                        p.unnamed_jit_samples,
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(per_process(&one_report), per_process(&two_report), "{name}");
        assert_eq!(one_report.fp_cut, two_report.fp_cut, "{name}");
        if name == "node-two.data" {
            // Both processes' JIT frames are named (from their perf maps).
            let unnamed: u64 = two_report
                .processes
                .iter()
                .map(|p| p.unnamed_jit_samples)
                .sum();
            let jit: u64 = two_report.processes.iter().map(|p| p.jit_samples).sum();
            assert!(
                jit > 400 && unnamed * 20 < jit,
                "{jit} JIT samples, {unnamed} unnamed"
            );
            // The helper took one of the two node processes: about half the samples.
            let total: u64 = two_report.processes.iter().map(|p| p.samples).sum();
            assert!(
                two_report.helped * 4 > total,
                "{} of {total}",
                two_report.helped
            );
        }
    }
}
