//! The real recordings of scripts/fixtures/perf.sh, against perf's own counts.

use std::collections::BTreeMap;

use profkit_perf::{dump, jit_processes, summary, validate, EventData, Mode, PerfData, PerfStream};

use crate::{codes, fixture, fixture_named, perf_count};

struct Walk {
    kinds: BTreeMap<String, u64>,
    samples_with_chain: u64,
    samples_with_stack: u64,
    user_frames: u64,
    kernel_frames: u64,
    times_backwards: u64,
    malformed: u64,
}

fn walk(pd: &PerfData<'_>) -> Walk {
    let mut w = Walk {
        kinds: BTreeMap::new(),
        samples_with_chain: 0,
        samples_with_stack: 0,
        user_frames: 0,
        kernel_frames: 0,
        times_backwards: 0,
        malformed: 0,
    };
    let mut events = pd.events().unwrap();
    let mut last = 0;
    let mut expect_index = 0;
    while let Some(ev) = events.next_event() {
        let ev = ev.unwrap();
        assert_eq!(ev.index, expect_index);
        expect_index += 1;
        *w.kinds.entry(ev.record_type.to_string()).or_insert(0) += 1;
        if let Some(t) = ev.time.filter(|&t| t > 0) {
            if t < last {
                w.times_backwards += 1;
            }
            last = t;
        }
        match &ev.data {
            EventData::Sample(s) => {
                assert_eq!(s.time, ev.time);
                if let Some(c) = &s.callchain {
                    w.samples_with_chain += 1;
                    let split = c.split();
                    w.user_frames += split.user.len() as u64;
                    w.kernel_frames += split.kernel.len() as u64;
                    // The first frame is the sample's ip.
                    if let Some(f) = c.frames().next() {
                        assert_eq!(Some(f.addr), s.ip);
                        assert!(f.first_in_context);
                    }
                }
                if let Some(st) = &s.user_stack {
                    w.samples_with_stack += 1;
                    assert!(st.valid().len() <= st.bytes.len());
                }
            }
            EventData::Malformed(_) => w.malformed += 1,
            _ => {}
        }
    }
    assert!(events.truncation().is_none());
    assert!(events.error().is_none());
    w
}

/// perf's counts and ours agree for every record kind we deliver.
fn same_counts_as_perf(name: &str, w: &Walk) {
    for kind in ["SAMPLE", "MMAP", "MMAP2", "COMM", "FORK", "EXIT", "LOST"] {
        let ours = w.kinds.get(kind).copied().unwrap_or(0);
        let perfs = perf_count(name, kind).unwrap_or(0);
        assert_eq!(ours, perfs, "{name}: {kind} records");
    }
}

#[test]
fn frame_pointer_recording_with_jitdump() {
    let bytes = fixture("node-fp.data");
    let pd = PerfData::parse(&bytes).unwrap();
    assert_eq!(pd.header().mode, Mode::File);
    assert!(pd.meta().problems.is_empty(), "{:?}", pd.meta().problems);
    let a = &pd.attrs()[0];
    assert_eq!(pd.attrs().len(), 1);
    assert_eq!(a.name.as_deref(), Some("cpu-clock:ppp"));
    assert!(a.use_clockid && a.clockid == Some(1));
    assert!(a.has_callchain() && !a.has_user_stack());
    assert_eq!(pd.meta().clockid(), Some(1));
    let f = pd.features();
    assert_eq!(f.perf_version.as_deref(), Some("6.1.187"));
    let cmdline = f.cmdline.as_ref().unwrap();
    assert!(cmdline.iter().any(|a| a == "--perf-prof"), "{cmdline:?}");
    let clock = f.clock_data.unwrap();
    assert_eq!(clock.clockid, 1);
    assert!(clock.wall_clock_ns > 1_600_000_000_000_000_000);
    assert!(f
        .build_ids
        .iter()
        .any(|b| b.path == "/usr/bin/node" && b.build_id.len() == 20));
    assert!(f.build_ids.iter().any(|b| b.is_kernel()));
    assert!(f.problems.is_empty(), "{:?}", f.problems);

    let w = walk(&pd);
    same_counts_as_perf("node-fp", &w);
    assert_eq!(w.times_backwards, 0);
    assert_eq!(w.malformed, 0);
    assert_eq!(w.samples_with_chain, w.kinds["SAMPLE"]);
    assert!(
        w.user_frames > w.kinds["SAMPLE"],
        "frame pointers give user stacks"
    );

    // The jitdump marker: the committed dump's pid is the marker's.
    let dump_name = fixture_named("node-fp.jit-");
    let pid: i32 = dump_name
        .trim_start_matches("node-fp.jit-")
        .trim_end_matches(".dump.gz")
        .parse()
        .unwrap();
    let (procs, outcome) = jit_processes(&pd).unwrap();
    assert!(outcome.truncation.is_none() && outcome.error.is_none());
    let p = procs.iter().find(|p| p.pid == pid).unwrap();
    assert_eq!(p.comm.as_deref(), Some("node"));
    assert_eq!(p.jitdumps.len(), 1);
    let m = &p.jitdumps[0];
    assert!(m.path.ends_with(&format!("/jit-{pid}.dump")), "{}", m.path);
    assert!(m.pid_matches && m.file_pid == Some(pid as u32));
    assert!(m.time.is_some());
    assert!(p.anon_exec_mappings > 0);
    assert_eq!(p.perf_map_path(), format!("/tmp/perf-{pid}.map"));

    let v = validate(&bytes);
    assert!(!v.has_errors(), "{:#?}", v.findings);
    assert!(codes(&v).is_empty(), "{:?}", codes(&v));
    assert_eq!(v.records, w.kinds.values().sum::<u64>());

    let s = summary(&pd);
    assert_eq!(s.format, "perf.data");
    assert_eq!(s.kind, "perf.data file mode, little-endian");
    assert_eq!(
        s.kinds.iter().find(|k| k.0 == "SAMPLE").unwrap().1,
        w.kinds["SAMPLE"]
    );
    assert_eq!(
        s.kinds
            .iter()
            .find(|k| k.0 == "FINISHED_ROUND")
            .map(|k| k.1),
        perf_count("node-fp", "FINISHED_ROUND")
    );
    assert!(s.threads.iter().any(|t| t.name.as_deref() == Some("node")));
    let t = s.time.unwrap();
    assert!(
        t.duration_ns > 100_000_000 && t.duration_ns < 5_000_000_000,
        "{t:?}"
    );
    assert_eq!(
        s.detail("clock"),
        Some(&profkit_common::Value::Str(
            "CLOCK_MONOTONIC (use_clockid 1)".into()
        ))
    );
    assert!(s.truncation.is_none());
    assert_eq!(s.problems, 0);
}

#[test]
fn dwarf_recording_carries_regs_and_stacks() {
    let bytes = fixture("node-dwarf.data.gz");
    let pd = PerfData::parse(&bytes).unwrap();
    let a = &pd.attrs()[0];
    assert!(a.has_user_stack());
    assert_eq!(a.sample_stack_user, 4096);
    assert_ne!(a.sample_regs_user, 0);
    let w = walk(&pd);
    same_counts_as_perf("node-dwarf", &w);
    assert!(w.samples_with_stack > 0);
    let mut events = pd.events().unwrap();
    let mut user_samples = 0;
    while let Some(ev) = events.next_event() {
        if let EventData::Sample(s) = ev.unwrap().data {
            let Some(regs) = s.user_regs.clone() else {
                continue;
            };
            user_samples += 1;
            assert_eq!(regs.abi, 2, "64-bit process");
            assert_eq!(regs.mask, a.sample_regs_user);
            assert_eq!(
                regs.bytes.len(),
                8 * a.sample_regs_user.count_ones() as usize
            );
            // x86-64: the stack pointer (PERF_REG_X86_SP = 7) and ip (8) are there and agree
            // with linux-perf-event-reader's accessor.
            let sp = regs.get(7).unwrap();
            assert_eq!(Some(sp), s.regs().unwrap().get(7));
            assert_eq!(regs.get(8), s.regs().unwrap().get(8));
            assert!(sp > 0x7f00_0000_0000, "{sp:#x}");
            let st = s.user_stack.unwrap();
            assert_eq!(st.bytes.len(), 4096);
        }
    }
    assert!(user_samples > 10, "{user_samples}");
    let v = validate(&bytes);
    assert!(!v.has_errors(), "{:#?}", v.findings);
    // Node's stacks are deeper than 4 KiB.
    assert!(codes(&v).contains(&"stack-copy-full"), "{:?}", codes(&v));
}

#[test]
fn perf_basic_prof_recording_has_anonymous_code_and_no_jitdump() {
    let bytes = fixture("node-basic-prof.data");
    let pd = PerfData::parse(&bytes).unwrap();
    let w = walk(&pd);
    same_counts_as_perf("node-basic-prof", &w);
    let (procs, _) = jit_processes(&pd).unwrap();
    let map = fixture_named("node-basic-prof.perf-");
    let pid: i32 = map
        .trim_start_matches("node-basic-prof.perf-")
        .trim_end_matches(".map")
        .parse()
        .unwrap();
    let p = procs.iter().find(|p| p.pid == pid).unwrap();
    assert!(p.jitdumps.is_empty());
    assert!(p.anon_exec_mappings > 0);
    let v = validate(&bytes);
    assert_eq!(codes(&v), ["anon-exec-without-jitdump"]);
    assert!(!v.has_errors());
}

#[test]
fn pipe_mode_from_memory_and_from_a_stream() {
    let bytes = fixture("node-pipe.data");
    let pd = PerfData::parse(&bytes).unwrap();
    assert_eq!(pd.header().mode, Mode::Pipe);
    assert_eq!(pd.attrs().len(), 1);
    assert_eq!(pd.attrs()[0].name.as_deref(), Some("cpu-clock:ppp"));
    assert_eq!(pd.features().perf_version.as_deref(), Some("6.1.187"));
    assert!(pd.features().clock_data.is_some());
    let w = walk(&pd);
    same_counts_as_perf("node-pipe", &w);

    // The same events through a Read that hands out a few bytes at a time.
    struct Trickle<'a>(&'a [u8]);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(13);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let mut stream = PerfStream::open(Trickle(&bytes)).unwrap();
    assert_eq!(stream.meta().attrs.len(), 1);
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    let events = stream.events();
    while let Some(ev) = events.next_event() {
        *kinds
            .entry(ev.unwrap().record_type.to_string())
            .or_insert(0) += 1;
    }
    assert_eq!(kinds, w.kinds);
    assert!(events.truncation().is_none());

    let v = validate(&bytes);
    assert_eq!(codes(&v), ["anon-exec-without-jitdump"]);
    let s = summary(&pd);
    assert_eq!(s.kind, "perf.data pipe mode, little-endian");
    assert!(s.kinds.iter().any(|k| k.0 == "HEADER_ATTR" && k.1 == 1));

    // A file-mode recording is not a stream.
    let file = fixture("node-fp.data");
    assert!(PerfStream::open(&file[..]).is_err());
}

#[test]
fn killed_recording_is_read_to_its_end() {
    let bytes = fixture("node-killed.data.gz");
    let pd = PerfData::parse(&bytes).unwrap();
    assert_eq!(pd.header().data.size, 0, "perf record was killed");
    assert!(pd.features().present.is_empty());
    let mut events = pd.events().unwrap();
    let mut samples = 0;
    while let Some(ev) = events.next_event() {
        if let EventData::Sample(_) = ev.unwrap().data {
            samples += 1;
        }
    }
    assert!(samples > 100, "{samples}");
    let v = validate(&bytes);
    let c = codes(&v);
    assert!(c.contains(&"data-size-zero"), "{c:?}");
    assert!(v.has_errors());
}

#[test]
fn dump_text_and_json() {
    let bytes = fixture("node-fp.data");
    let pd = PerfData::parse(&bytes).unwrap();
    let mut text = Vec::new();
    let o = dump::write(&pd, dump::DumpOptions::default(), &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(o.truncation.is_none() && o.error.is_none());
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("HEADER file-mode little-endian header_size 104"));
    assert!(lines[1].starts_with(
        "ATTR #0 cpu-clock:ppp type Software(CpuClock) sample_type IP|TID|TIME|CALLCHAIN|PERIOD"
    ));
    let events: Vec<&&str> = lines.iter().filter(|l| l.starts_with('#')).collect();
    assert_eq!(events.len() as u64, o.events);
    assert!(
        text.contains(".dump\n") || text.contains(".dump"),
        "the jitdump marker mmap is listed"
    );

    let mut json = Vec::new();
    let o2 = dump::write(
        &pd,
        dump::DumpOptions {
            json: true,
            stacks: true,
        },
        &mut json,
    )
    .unwrap();
    assert_eq!(o2.events, o.events);
    let json = String::from_utf8(json).unwrap();
    let mut samples = 0;
    for line in json.lines() {
        assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
        if line.contains("\"type\":\"SAMPLE\"") {
            samples += 1;
            assert!(line.contains("\"callchain\":["), "{line}");
        }
    }
    assert_eq!(samples, perf_count("node-fp", "SAMPLE").unwrap());
    assert!(json.lines().next().unwrap().contains("\"type\":\"HEADER\""));
}

#[test]
fn read_offset_moves_forward_through_the_data_section() {
    let bytes = fixture("node-fp.data");
    let pd = PerfData::parse(&bytes).unwrap();
    let data = pd.header().data;
    let mut events = pd.events().unwrap();
    // Before the first record, the header and the feature sections (read when opening) do
    // not count.
    let first = events.read_offset().unwrap();
    assert!(first <= data.offset + data.size, "{first}");
    let mut last = first;
    while let Some(ev) = events.next_event() {
        ev.unwrap();
        let at = events.read_offset().unwrap();
        assert!(at >= last, "went back from {last} to {at}");
        last = at;
    }
    assert!(last >= data.offset + data.size / 2, "{last}");
    // A stream cannot say.
    let pipe = fixture("node-pipe.data");
    let mut stream = PerfStream::open(&pipe[..]).unwrap();
    assert_eq!(stream.events().read_offset(), None);
}

/// An event as (type, time, attr, body).
type Seen = (u32, Option<u64>, Option<usize>, Vec<u8>);

/// Every event of a walk.
fn all_events(events: &mut profkit_perf::Events<impl std::io::Read>) -> Vec<Seen> {
    let mut out = Vec::new();
    while let Some(Ok(ev)) = events.next_event() {
        out.push((ev.record_type.0, ev.time, ev.attr_index, ev.body.to_vec()));
    }
    out
}

/// The recordings, one of each kind (frame pointers, DWARF, perf map, pipe, killed).
const RECORDINGS: [&str; 5] = [
    "node-fp.data",
    "node-dwarf.data.gz",
    "node-basic-prof.data",
    "node-pipe.data",
    "node-killed.data.gz",
];

#[test]
fn read_ahead_delivers_what_a_walk_here_does() {
    for name in RECORDINGS {
        let bytes = fixture(name);
        let pd = PerfData::parse(&bytes).unwrap();
        let here = all_events(&mut pd.events().unwrap());
        let ahead = pd.with_events_read_ahead(None, all_events).unwrap();
        assert!(!here.is_empty(), "{name}");
        assert_eq!(here, ahead, "{name}");
        // A walk that stops early ends the reader too (no hang, no error).
        let first = pd
            .with_events_read_ahead(None, |e| {
                let mut n = 0;
                while n < 3 && e.next_event().is_some() {
                    n += 1;
                }
                n
            })
            .unwrap();
        assert_eq!(first, 3, "{name}");
    }
}

/// Every event of a walk and how it ended.
fn walked(
    events: &mut profkit_perf::Events<impl std::io::Read>,
) -> (Vec<Seen>, profkit_perf::Outcome) {
    let seen = all_events(events);
    (seen, events.outcome())
}

#[test]
fn one_pass_delivers_what_the_checked_walk_does() {
    for name in RECORDINGS {
        let bytes = fixture(name);
        let checked = PerfData::parse(&bytes).unwrap();
        let want = walked(&mut checked.events().unwrap());
        let (one, ()) = PerfData::parse_one_pass(&bytes, None, |_| ()).unwrap();
        // A whole file-mode recording is read in one pass; the cut and the pipe are not.
        assert_eq!(
            one.one_pass(),
            name == "node-fp.data"
                || name == "node-dwarf.data.gz"
                || name == "node-basic-prof.data",
            "{name}"
        );
        assert_eq!(
            one.with_events_read_ahead(None, walked).unwrap(),
            want,
            "{name}"
        );
        // Its other walks check the framing first, and deliver the same.
        assert_eq!(walked(&mut one.events().unwrap()), want, "{name}");
    }
}

#[test]
fn one_pass_sorts_as_linux_perf_data_does() {
    // Samples given random times (many out of order across windows: the case its sorter's
    // rounds do not promise to order) and random records turned into a FINISHED_ROUND and a
    // user record: the one-pass reader must deliver linux-perf-data's order, record for record.
    let bytes = fixture("node-fp.data");
    let pd = PerfData::parse(&bytes).unwrap();
    let attr = &pd.attrs()[0];
    // SAMPLE: [IDENTIFIER] [IP] [TID] TIME …
    assert!(attr.sample_type & 4 != 0 && attr.sample_type & (1 << 16) == 0);
    let time_at = 8 * ((attr.sample_type & 1) + (attr.sample_type >> 1 & 1)) as usize;
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (start, size) = (word(&bytes, 40) as usize, word(&bytes, 48) as usize);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut unordered_rounds = 0;
    for round in 0..40 {
        let mut b = bytes.clone();
        let mut off = start;
        while off < start + size {
            let ty = u32::from_le_bytes(b[off..off + 4].try_into().unwrap());
            let len = u16::from_le_bytes(b[off + 6..off + 8].try_into().unwrap()) as usize;
            let r = next();
            if ty == 9 && r % 3 != 0 {
                let t = 1_000 + (r >> 8) % (if round % 2 == 0 { 50 } else { 5_000 });
                b[off + 8 + time_at..off + 16 + time_at].copy_from_slice(&t.to_le_bytes());
            } else if r % (5 + round) == 0 && len >= 16 {
                // An 8-byte FINISHED_ROUND, then a user record of a type nobody reads.
                b[off..off + 8].copy_from_slice(&[68, 0, 0, 0, 0, 0, 8, 0]);
                b[off + 8..off + 12].copy_from_slice(&90u32.to_le_bytes());
                b[off + 12..off + 14].fill(0);
                b[off + 14..off + 16].copy_from_slice(&(len as u16 - 8).to_le_bytes());
            }
            off += len;
        }
        let checked = PerfData::parse(&b).unwrap();
        let want = walked(&mut checked.events().unwrap());
        let (one, ()) = PerfData::parse_one_pass(&b, None, |_| ()).unwrap();
        assert!(one.one_pass());
        let got = one.with_events_read_ahead(None, walked).unwrap();
        assert_eq!(got.1, want.1, "round {round}");
        assert_eq!(got.0.len(), want.0.len(), "round {round}");
        assert!(got.0 == want.0, "round {round}: another order");
        let times: Vec<u64> = got.0.iter().filter_map(|e| e.1).collect();
        unordered_rounds += usize::from(times.windows(2).any(|w| w[0] > w[1]));
    }
    assert!(
        unordered_rounds > 10,
        "the rounds' promise was broken in {unordered_rounds}"
    );
}

#[test]
fn one_pass_tells_the_jitdump_marker_before_its_window() {
    let bytes = fixture("node-fp.data");
    let (pd, ()) = PerfData::parse_one_pass(&bytes, None, |_| ()).unwrap();
    assert!(pd.one_pass() && pd.jitdump_markers().is_empty());
    let (markers, marker_seen_before) = pd
        .with_events_read_ahead(None, |e| {
            let mut markers = Vec::new();
            let mut before = None;
            loop {
                markers.extend(e.jitdump_markers_ahead());
                let Some(Ok(ev)) = e.next_event() else { break };
                if let EventData::Mmap(m) = &ev.data {
                    if m.jitdump_pid().is_some() && before.is_none() {
                        before = Some(!markers.is_empty());
                    }
                }
            }
            (markers, before)
        })
        .unwrap();
    assert_eq!(markers.len(), 1, "{markers:?}");
    assert_eq!(markers[0].0, 30519);
    assert!(String::from_utf8_lossy(&markers[0].1).ends_with("/jit-30519.dump"));
    assert_eq!(
        marker_seen_before,
        Some(true),
        "told before the marker's own record"
    );
}

#[test]
fn framing_check_notes_the_jitdump_marker() {
    let bytes = fixture("node-fp.data");
    let pd = PerfData::parse(&bytes).unwrap();
    let markers: Vec<_> = pd
        .jitdump_markers()
        .iter()
        .map(|(pid, path)| (*pid, String::from_utf8_lossy(path).into_owned()))
        .collect();
    assert_eq!(markers.len(), 1, "{markers:?}");
    assert_eq!(markers[0].0, 30519);
    assert!(markers[0].1.ends_with("/jit-30519.dump"), "{markers:?}");
    // Pipe mode has no framing check before the walk.
    let pipe = fixture("node-pipe.data");
    assert!(PerfData::parse(&pipe).unwrap().jitdump_markers().is_empty());
}

/// Every sample of the real recordings reads back from its copy
/// ([`profkit_perf::Sample::write_copy`]) with the same fields and callchain (the user
/// registers and stack stay behind), and no prefix of a copy reads as a sample.
#[test]
fn a_sample_copy_reads_back() {
    for name in ["node-fp.data", "node-two.data", "node-dwarf.data.gz"] {
        let data = fixture(name);
        let pd = PerfData::parse(&data).unwrap();
        let mut events = pd.events().unwrap();
        let mut copies = 0;
        while let Some(ev) = events.next_event() {
            let EventData::Sample(s) = ev.unwrap().data else {
                continue;
            };
            let mut copy = Vec::new();
            s.write_copy(&mut copy);
            copy.extend_from_slice(b"tail");
            let (back, rest) = profkit_perf::Sample::read_copy(&copy).unwrap();
            assert_eq!(rest, b"tail");
            let fields = |s: &profkit_perf::Sample<'_>| {
                (
                    s.attr_index,
                    s.id,
                    s.ip,
                    s.pid,
                    s.tid,
                    s.time,
                    s.cpu,
                    s.period,
                    s.cpu_mode,
                )
            };
            assert_eq!(fields(&back), fields(&s));
            let chain = |s: &profkit_perf::Sample<'_>| {
                s.callchain.map(|c| (c.as_bytes().to_vec(), c.endian()))
            };
            assert_eq!(chain(&back), chain(&s));
            assert!(back.user_regs.is_none() && back.user_stack.is_none());
            let whole = copy.len() - 4;
            for cut in [0, 1, 10, whole / 2, whole - 1] {
                assert!(
                    profkit_perf::Sample::read_copy(&copy[..cut]).is_none(),
                    "{cut}"
                );
            }
            copies += 1;
        }
        assert!(copies > 100, "{name}: {copies}");
    }
}
