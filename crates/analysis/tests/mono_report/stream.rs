//! The streaming reader (a gzip decoder, a pipe) and the per-buffer call replay: the report
//! from a stream equals the report from the whole file, and replaying each buffer against an
//! unknown inherited stack then stitching gives the numbers of one sequential replay.

use std::io::Read;

use profkit_analysis::mono_report::{self as report, Options, Report};
use profkit_mlpd::stream::StreamReader;
use profkit_mlpd::write::Writer;
use profkit_mlpd::{File, Header};
use proptest::prelude::*;

use super::{fixtures, load, mlpd_files};

fn text(r: &Report) -> String {
    let mut v = Vec::new();
    report::write_text(&mut v, r, &report::SECTIONS, true).expect("write");
    String::from_utf8(v).expect("utf8")
}

fn parallel() -> Options {
    Options {
        parallel: true,
        ..Options::default()
    }
}

/// Reads at most `n` bytes per call (a pipe delivering odd-sized pieces).
struct Trickle<'a>(&'a [u8], usize);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.1.min(buf.len()).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn stream_report_equals_whole_file_report() {
    for f in mlpd_files() {
        let data = load(&f);
        let whole = report::compute(&File::parse(&data).expect("header"), &parallel());
        let raw = std::fs::read(&f).expect("read");
        let streamed = if profkit_mlpd::open::is_gzip(&raw) {
            report::compute_stream(flate2::read::MultiGzDecoder::new(&raw[..]), &parallel())
        } else {
            report::compute_stream(Trickle(&raw, 1000), &parallel())
        }
        .expect("stream header");
        assert_eq!(text(&whole), text(&streamed), "{}", f.display());
        assert_eq!(whole.events, streamed.events);
        assert!(streamed.problems.is_empty());
    }
}

#[test]
fn stream_reader_yields_the_buffers_of_the_slice_reader() {
    let data = load(&fixtures().join("busy_monitor_bt.mlpd"));
    let file = File::parse(&data).expect("header");
    let mut r = StreamReader::new(Trickle(&data, 7)).expect("header");
    assert_eq!(r.header(), &file.header);
    for b in file.buffers() {
        let b = b.expect("buffer");
        let o = r.next_buffer(Vec::new()).expect("more").expect("buffer");
        assert_eq!(
            (o.offset, o.header, &o.data[..]),
            (b.offset, b.header, b.data)
        );
    }
    assert!(r.next_buffer(Vec::new()).is_none());
}

/// Cuts and a corrupt buffer magic: the stream reader reports what the slice reader reports
/// (truncation, resync at the next buffer) and the reports agree.
#[test]
fn stream_reader_handles_truncation_and_bad_magic_like_the_slice_reader() {
    let data = load(&fixtures().join("hello_calls.mlpd"));
    let file = File::parse(&data).expect("header");
    let second = file
        .buffers()
        .nth(1)
        .expect("2 buffers")
        .expect("ok")
        .offset as usize;
    let mut bad = data.clone();
    bad[second] ^= 0xff;
    let mut cases = vec![bad];
    for cut in [
        20,
        100,
        file.header.size + 30,
        data.len() / 2,
        data.len() - 5,
    ] {
        cases.push(data[..cut].to_vec());
    }
    for d in cases {
        let slice = File::parse(&d).map(|f| report::compute(&f, &Options::default()));
        let stream = report::compute_stream(Trickle(&d, 333), &Options::default());
        match (slice, stream) {
            (Ok(a), Ok(b)) => {
                assert_eq!(text(&a), text(&b));
                assert_eq!(a.problems, b.problems);
                assert_eq!(a.skipped_bytes, b.skipped_bytes);
            }
            (Err(a), Err(b)) => assert_eq!(a.kind, b.kind),
            (a, b) => panic!("slice {:?} stream {:?}", a.is_ok(), b.is_ok()),
        }
    }
}

#[derive(Clone, Debug)]
enum Call {
    Enter(u8),
    Leave(u8),
    ExcLeave(u8),
    /// Start a new buffer (of thread `t`).
    Flush(u8),
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        6 => (0u8..6).prop_map(Call::Enter),
        5 => (0u8..6).prop_map(Call::Leave),
        1 => (0u8..6).prop_map(Call::ExcLeave),
        2 => (0u8..2).prop_map(Call::Flush),
    ]
}

proptest! {
    /// Random enters and leaves (recursion, leaves that match a deeper frame or nothing,
    /// unwinding) of two threads, cut into many buffers: per-buffer replay + stitching equals
    /// the sequential replay that `--traces` forces.
    #[test]
    fn per_buffer_replay_equals_sequential(calls in prop::collection::vec(call(), 0..300), steps in prop::collection::vec(1u64..5000, 300)) {
        let mut w = Writer::new(Header { major: 3, data_version: 17, ptrsize: 8, ..Header::default() });
        let mut t = 1_000u64;
        let mut thread = 0u8;
        let mut pending: Vec<(u8, Call, u64)> = Vec::new();
        let flush = |w: &mut Writer, pending: &mut Vec<(u8, Call, u64)>| {
            if let Some(&(th, _, t0)) = pending.first() {
                let mut b = w.buffer(0x7000 + u64::from(th), t0);
                for (_, c, t) in pending.drain(..) {
                    match c {
                        Call::Enter(m) => b.enter(t, 0x5000 + u64::from(m) * 8),
                        Call::Leave(m) => b.leave(t, 0x5000 + u64::from(m) * 8),
                        Call::ExcLeave(m) => b.exc_leave(t, 0x5000 + u64::from(m) * 8),
                        Call::Flush(_) => {}
                    }
                }
                b.finish();
            }
        };
        for (c, dt) in calls.iter().zip(steps.iter().cycle()) {
            t += dt;
            if let Call::Flush(th) = c {
                flush(&mut w, &mut pending);
                thread = *th;
                continue;
            }
            pending.push((thread, c.clone(), t));
        }
        flush(&mut w, &mut pending);
        let bytes = w.into_bytes();
        let f = File::parse(&bytes).expect("header");
        for parallel in [false, true] {
            let fast = report::compute(&f, &Options { parallel, ..Options::default() });
            let full = report::compute(&f, &Options { parallel, traces: true, ..Options::default() });
            prop_assert_eq!(&fast.calls, &full.calls);
            prop_assert_eq!(fast.unmatched_leaves, full.unmatched_leaves);
            prop_assert_eq!(fast.unfinished, full.unfinished);
        }
    }
}
