#![no_main]
//! Fuzz every read entry point of profkit-jitdump on the same bytes: the header, the record
//! iterator, every record parse, the DEBUG_INFO entry walk (plus `walk_end` and the
//! fixed-stride recovery), every DEBUG_INFO2 list, `validate`, `summary`, the `dump`
//! renderer, the jitdump → perf map conversion, the perf map reader, validator and summary,
//! and `FollowReader` fed the bytes in two chunks (it must deliver exactly the records the
//! slice reader does), and `StreamRecords` (what `info`/`dump`/`validate` read gzip and stdin
//! with) through a small buffer: the same records, error and cut as the slice's
//! `RecordSource`, the same summary and validation.
//!
//! Readers must never panic; the assertions below are API invariants.

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

use libfuzzer_sys::fuzz_target;
use profkit_jitdump::read::DebugWalkEnd;
use profkit_jitdump::read::{RecordSource, StreamRecords};
use profkit_jitdump::validate::codes;
use profkit_jitdump::{perfmap, FollowReader, JitDump, RawRecord, Record};

fuzz_target!(|data: &[u8]| {
    let slice_records = read_slice(data);
    follow_in_two_chunks(data, &slice_records);
    stream_walks_like_the_slice(data);

    let report = profkit_jitdump::validate(data);
    check_report(&report);
    let _ = report.has_errors();

    for entry in perfmap::entries(data) {
        match entry {
            Ok(e) => {
                std::hint::black_box((e.start, e.size, e.name.len(), e.line));
            }
            Err(e) => {
                std::hint::black_box(e.to_string());
            }
        }
    }
    let _ = perfmap::looks_like_perf_map(data);
    check_report(&perfmap::validate(data));
    std::hint::black_box(perfmap::summary(data).records);
});

/// What a record looks like from outside, to compare the slice and follow readers.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    index: usize,
    offset: u64,
    id: u32,
    timestamp: u64,
    body: Vec<u8>,
}

/// Outcome of reading `data` as a whole: the records, and whether iteration ended on an error.
#[derive(Debug, PartialEq, Eq)]
struct SliceRecords {
    header_ok: bool,
    records: Vec<Seen>,
    error: bool,
}

fn read_slice(data: &[u8]) -> SliceRecords {
    let dump = match JitDump::parse(data) {
        Ok(d) => d,
        Err(e) => {
            std::hint::black_box(e.to_string());
            return SliceRecords {
                header_ok: false,
                records: Vec::new(),
                error: false,
            };
        }
    };
    let header = dump.header();
    assert!(header.total_size as usize >= 40);
    assert_eq!(header.extra.len(), header.total_size as usize - 40);

    let mut seen = Vec::new();
    let mut error = false;
    let mut records = dump.records();
    let mut headers = dump.records();
    for raw in &mut records {
        // The header-only walk must agree with the full one.
        let head = headers.next_header();
        match raw {
            Ok(raw) => {
                let head = match head {
                    Some(Ok(h)) => h,
                    other => panic!("next_header gave {other:?} where next gave {raw:?}"),
                };
                assert_eq!(head, raw.header());
                assert_eq!(raw.total_size(), raw.body.len() + 16);
                assert!(raw.offset + raw.total_size() as u64 <= data.len() as u64);
                touch_record(&raw);
                seen.push(Seen {
                    index: raw.index,
                    offset: raw.offset,
                    id: raw.record_type.0,
                    timestamp: raw.timestamp,
                    body: raw.body.to_vec(),
                });
            }
            Err(e) => {
                assert!(matches!(head, Some(Err(_))));
                std::hint::black_box(e.to_string());
                error = true;
            }
        }
    }
    assert!(records.next().is_none(), "Records is fused");
    if let Some(t) = records.truncation() {
        assert!(!error);
        assert!(t.offset < data.len() as u64);
        std::hint::black_box(t.to_string());
    }

    let summary = profkit_jitdump::summary(&dump);
    std::hint::black_box(summary.records);
    for (json, code) in [(false, true), (true, true)] {
        let opts = profkit_jitdump::dump::DumpOptions { json, code };
        let _ = profkit_jitdump::dump::write_dump(&mut io::sink(), &dump, opts);
    }
    let mut map = Vec::new();
    let _ = profkit_jitdump::convert::jitdump_to_perf_map(&dump, &mut map);

    SliceRecords {
        header_ok: true,
        records: seen,
        error,
    }
}

fn touch_record(raw: &RawRecord<'_>) {
    let record = match raw.parse() {
        Ok(r) => r,
        Err(e) => {
            assert_eq!(e.record, Some(raw.index as u64));
            std::hint::black_box(e.to_string());
            return;
        }
    };
    match record {
        Record::CodeLoad(l) => {
            if let Some(code) = l.code {
                assert_eq!(code.len() as u64, l.code_size);
            }
            assert!(!l.name.contains(&0));
            std::hint::black_box((l.name.len(), l.trailing.len(), l.code_addr));
        }
        Record::CodeMove(m) => {
            std::hint::black_box(m);
        }
        Record::DebugInfo(d) => {
            let mut n = 0u64;
            let mut entries = d.entries();
            for e in &mut entries {
                assert!(!e.file.contains(&0));
                std::hint::black_box((e.addr, e.line, e.discrim, e.file.len()));
                n += 1;
            }
            assert!(n <= d.nr_entry);
            assert_eq!(entries.remaining(), d.nr_entry - n);
            match d.walk_end() {
                DebugWalkEnd::Exact { padding } => {
                    assert_eq!(n, d.nr_entry);
                    assert!(padding < 8);
                }
                DebugWalkEnd::Leftover { leftover } => {
                    assert_eq!(n, d.nr_entry);
                    assert!(leftover > 0);
                }
                DebugWalkEnd::Overrun { entry, offset } => {
                    assert_eq!(entry, n);
                    assert!(offset >= raw.offset);
                }
            }
            if let Some(stride) = d.fixed_stride() {
                for i in 0..d.nr_entry as usize {
                    let e = d
                        .entry_at_stride(stride, i)
                        .expect("fixed_stride promised every entry");
                    std::hint::black_box((e.addr, e.line, e.file.len()));
                }
                assert!(d.entry_at_stride(stride, d.nr_entry as usize).is_none());
            }
            // Arbitrary strides must not panic either.
            for stride in [0, 1, 16, 17, usize::MAX] {
                let _ = d.entry_at_stride(stride, 0);
                let _ = d.entry_at_stride(stride, usize::MAX);
            }
        }
        Record::CodeClose => {}
        Record::UnwindingInfo(u) => {
            assert_eq!(
                u.eh_frame().len() + u.eh_frame_hdr().len(),
                u.unwind_data.len()
            );
            assert_eq!(u.unwind_data.len() as u64, u.unwind_data_size);
            std::hint::black_box((u.mapped_size, u.padding.len()));
        }
        Record::DebugInfo2(d) => {
            let c = d.counts;
            let mut files = d.files();
            let nf = files.by_ref().count();
            assert!(nf as u64 <= u64::from(c.file_count));
            std::hint::black_box(files.rest().len() + files.remaining() as usize);
            let mut names = d.function_names();
            let nn = names.by_ref().count();
            assert!(nn as u64 <= u64::from(c.function_names_count));
            std::hint::black_box(names.rest().len());
            assert_eq!(d.functions().len() as u64, u64::from(c.function_count));
            assert_eq!(
                d.inline_calls().len() as u64,
                u64::from(c.inline_call_record_count)
            );
            assert_eq!(d.ranges().len() as u64, u64::from(c.range_count));
            assert_eq!(d.lines().len() as u64, u64::from(c.line_record_count));
            std::hint::black_box(d.functions().map(|f| f.start_line).sum::<u32>());
            std::hint::black_box(d.inline_calls().map(|f| f.depth).max());
            std::hint::black_box(d.ranges().map(|r| r.size).max());
            std::hint::black_box(d.lines().map(|l| l.line_number).max());
            std::hint::black_box(d.trailing.len());
        }
        Record::JitTier(t) => {
            std::hint::black_box((t.color_name(), t.name.len(), t.padding.len()));
        }
        Record::EmbeddedSourceFile(s) => {
            assert!(s.path.len() < s.path_size as usize);
            std::hint::black_box((s.path.len(), s.content.len(), s.padding.len()));
        }
        Record::Unknown(r) => {
            assert_eq!(r, *raw);
        }
        _ => {}
    }
}

fn check_report(report: &profkit_jitdump::Validation) {
    for f in &report.findings {
        assert_eq!(
            codes::severity(f.code),
            Some(f.severity),
            "finding code {:?} is not in validate::codes::ALL with this severity",
            f.code
        );
        std::hint::black_box(f.message.len());
    }
}

/// A source that only shows the first `avail` bytes of `data`, like a file being written.
struct Growing<'a> {
    data: &'a [u8],
    pos: usize,
    avail: Rc<Cell<usize>>,
}

impl Read for Growing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let end = self.avail.get().min(self.data.len());
        let n = end.saturating_sub(self.pos).min(buf.len());
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Feeds `data` to a [`FollowReader`] in two chunks (split point chosen from the data) and
/// checks that it delivers the same records as the slice reader.
fn follow_in_two_chunks(data: &[u8], slice: &SliceRecords) {
    let split = match data.first() {
        Some(&b) => data.len() * usize::from(b) / 255,
        None => 0,
    };
    let avail = Rc::new(Cell::new(split));
    let mut follow = FollowReader::new(Growing {
        data,
        pos: 0,
        avail: avail.clone(),
    });
    let mut got = Vec::new();
    let mut error = false;
    let mut header_ok = false;
    for round in 0..2 {
        if round == 1 {
            avail.set(data.len());
        }
        follow.fill().expect("reading from memory cannot fail");
        loop {
            match follow.next_record() {
                Ok(Some(raw)) => {
                    got.push(Seen {
                        index: raw.index,
                        offset: raw.offset,
                        id: raw.record_type.0,
                        timestamp: raw.timestamp,
                        body: raw.body.to_vec(),
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    std::hint::black_box(e.to_string());
                    error = true;
                    break;
                }
            }
        }
        if error {
            break;
        }
    }
    if let Ok(Some(_)) = follow.header() {
        header_ok = true;
    }
    std::hint::black_box((follow.pending_bytes(), follow.offset()));
    if !slice.header_ok {
        // A bad header must not yield records; a header that is merely too long for the
        // data is "not yet", not an error.
        assert!(got.is_empty());
        return;
    }
    let follow_result = SliceRecords {
        header_ok,
        records: got,
        error,
    };
    assert_eq!(
        &follow_result,
        slice,
        "FollowReader (split at {split} of {}) disagrees with Records",
        data.len()
    );
}

/// What a [`RecordSource`] walk yields: (index, offset, type, body) per record, the error
/// (where: the messages may differ, a stream not knowing the file's size), the cut.
type Walk = (
    Vec<(usize, u64, u32, Vec<u8>)>,
    Option<(u64, Option<u64>)>,
    Option<String>,
);

fn walk(records: &mut dyn RecordSource) -> Walk {
    let mut out = Vec::new();
    let mut error = None;
    while let Some(r) = records.next() {
        match r {
            Ok(r) => out.push((r.index, r.offset, r.record_type.0, r.body.to_vec())),
            Err(e) => error = Some((e.offset, e.record)),
        }
    }
    (out, error, records.truncation().map(|t| t.to_string()))
}

/// The stream reader over a buffer of a few bytes (its size taken from the data) must see
/// what the slice reader sees.
fn stream_walks_like_the_slice(data: &[u8]) {
    let capacity = 1 + usize::from(data.last().copied().unwrap_or(0) % 61);
    let reader = || io::BufReader::with_capacity(capacity, data);
    let slice = JitDump::parse(data).map(|d| walk(&mut d.source()));
    let stream = StreamRecords::new(reader()).map(|mut s| walk(&mut s));
    match (&slice, &stream) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "stream (buffer {capacity}) and slice disagree"),
        (Err(a), Err(b)) => assert_eq!((a.offset, a.record), (b.offset, b.record)),
        _ => panic!("slice {:?} but stream {:?}", slice.is_ok(), stream.is_ok()),
    }
    if let (Ok(dump), Ok(mut s)) = (JitDump::parse(data), StreamRecords::new(reader())) {
        let a = profkit_jitdump::summary(&dump);
        let b = profkit_jitdump::summary_of(&mut s);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
    // The same findings, where; the messages of sizes past a stream's bound differ.
    let found = |v: &profkit_jitdump::Validation| -> Vec<_> {
        v.findings
            .iter()
            .map(|f| (f.code, f.severity, f.offset, f.record))
            .collect()
    };
    let a = profkit_jitdump::validate(data);
    let b = profkit_jitdump::validate::validate_stream(reader());
    assert_eq!(found(&a), found(&b));
}
