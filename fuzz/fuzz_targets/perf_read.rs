#![no_main]
//! Fuzz every read entry point of profkit-perf on the same bytes: `PerfData::parse` (file and
//! pipe mode), every event with its callchain split, user registers and stack, the JIT scan,
//! `validate`, `summary`, `dump` (text and NDJSON), the walk with records read ahead (the same
//! events as on one thread), the one-pass reader (the same events and end), and `PerfStream`
//! over the bytes (it must deliver the same events as the slice reader for a pipe-mode input).
//!
//! Readers must never panic nor allocate from an unchecked size; the assertions below are API
//! invariants.

use std::io;

use libfuzzer_sys::fuzz_target;
use profkit_perf::validate::codes;
use profkit_perf::{dump, EventData, JitScan, Mode, PerfData, PerfStream};

fuzz_target!(|data: &[u8]| {
    let report = profkit_perf::validate(data);
    for f in &report.findings {
        assert_eq!(
            codes::severity(f.code),
            Some(f.severity),
            "finding code {:?} is not in validate::codes::ALL with this severity",
            f.code
        );
    }
    let Ok(pd) = PerfData::parse(data) else {
        assert!(report.findings.iter().any(|f| f.code == "header-invalid"));
        return;
    };
    let slice_events = walk(&pd);
    // Records read ahead on a second thread: the same events, the same end.
    let ahead = pd.with_events_read_ahead(None, |events| {
        let mut n = 0u64;
        while let Some(Ok(_)) = events.next_event() {
            n += 1;
        }
        (n, events.truncation())
    });
    if let Ok((n, cut)) = ahead {
        assert_eq!(n, slice_events, "read ahead delivers other events");
        assert_eq!(
            cut,
            pd.events().ok().and_then(|mut e| {
                while let Some(Ok(_)) = e.next_event() {}
                e.truncation()
            })
        );
    }
    // The one-pass reader (framing checked as it reads): the same events and end as the walk
    // of the checked file, but for a COMPRESSED record the header does not announce, where it
    // stops (at that record).
    if let Ok((one, ())) = PerfData::parse_one_pass(data, None, |_| ()) {
        let outcome = |e: &mut profkit_perf::Events<_>| {
            while let Some(Ok(_)) = e.next_event() {}
            e.outcome()
        };
        // The reading thread releases what it has read: ranges inside the input, each where
        // the last one ended.
        let released = std::sync::Mutex::new(0u64);
        let release = |start: u64, end: u64| {
            let mut done = released.lock().unwrap();
            assert!(start == *done && start < end && end <= data.len() as u64, "{start}..{end}");
            *done = end;
        };
        let got = one.with_events_read_ahead(Some(&release), outcome).ok();
        let want = pd.events().ok().map(|mut e| outcome(&mut e));
        let unlisted = got.as_ref().and_then(|o| o.error.as_ref()).is_some_and(|e| {
            e.to_string().contains("lists no COMPRESSED feature")
        });
        if !unlisted {
            assert_eq!(got, want, "the one-pass reader ends otherwise");
        }
    }
    for (pid, path) in pd.jitdump_markers() {
        assert!(
            profkit_perf::read::jitdump_file_pid(path).is_some(),
            "marker of {pid}"
        );
    }
    std::hint::black_box(profkit_perf::summary(&pd).records);
    for (json, stacks) in [(false, true), (true, true)] {
        let _ = dump::write(&pd, dump::DumpOptions { json, stacks }, &mut io::sink());
    }
    let _ = profkit_perf::jit_processes(&pd);
    if pd.header().mode == Mode::Pipe {
        if let Ok(mut stream) = PerfStream::open(data) {
            let events = stream.events();
            let mut n = 0u64;
            while let Some(ev) = events.next_event() {
                if ev.is_err() {
                    break;
                }
                n += 1;
            }
            assert_eq!(n, slice_events, "PerfStream and PerfData disagree");
        }
    }
});

/// Walks every event, touching every decoded part; returns how many were delivered.
fn walk(pd: &PerfData<'_>) -> u64 {
    let Ok(mut events) = pd.events() else {
        return 0;
    };
    let mut jit = JitScan::new();
    let mut n = 0u64;
    while let Some(ev) = events.next_event() {
        let Ok(ev) = ev else { break };
        assert_eq!(ev.index, n);
        n += 1;
        jit.observe(&ev);
        match &ev.data {
            EventData::Sample(s) => {
                if let Some(c) = &s.callchain {
                    let split = c.split();
                    assert!(split.kernel.len() + split.user.len() + split.guest.len() <= c.len());
                    std::hint::black_box(c.frames().map(|f| f.lookup_addr()).sum::<u64>());
                }
                if let Some(r) = &s.user_regs {
                    assert!(r.bytes.len() <= 64 * 8);
                    std::hint::black_box(r.iter().count());
                }
                if let Some(st) = &s.user_stack {
                    assert!(st.valid().len() <= st.bytes.len());
                }
            }
            EventData::Mmap(m) => {
                std::hint::black_box((m.is_anonymous(), m.jitdump_pid(), m.end()));
            }
            EventData::Malformed(m) => {
                std::hint::black_box(m.len());
            }
            _ => {}
        }
    }
    if let Some(t) = events.truncation() {
        assert!(t.offset <= pd.data().len() as u64);
    }
    std::hint::black_box(jit.processes().len());
    n
}
