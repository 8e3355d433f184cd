//! The pass over the buffers, on the model's ordered parallel pipeline
//! ([`profkit_model::replay::pipeline`]):
//!
//! * the **source** (its own thread) yields jobs in file order: slices of a mapped file, or
//!   buffers read one by one from a stream (gzip inflates there, overlapping the decoding),
//!   each reading into an allocation a finished buffer handed back; it applies the thread
//!   filter and computes the time window from the first buffer;
//! * **workers** decode jobs into pieces ([`super::worker`]);
//! * the **calling thread** applies the pieces in file order ([`super::stitcher`]) and hands
//!   the buffers' allocations back to the source. At most [`TOKENS`] jobs are in flight, so
//!   memory does not grow with the file.

use std::sync::mpsc;
use std::sync::Arc;

use super::calls::MethodIds;
use super::stitcher::Stitcher;
use super::worker::{Agg, Piece, Worker};
use super::Options;
use profkit_mlpd::read::Buffer;
use profkit_mlpd::stream::OwnedBuffer;
use profkit_mlpd::Error;
use profkit_mlpd::Header;
use profkit_model::replay::pipeline::{self, Workers};

/// Batches in flight (bounds memory; more than the workers, so none waits for work).
pub(crate) const TOKENS: usize = 6;

/// A stream's buffers go to the workers in batches of about this many bytes (a buffer is 32
/// KiB or so: handing each to a worker on its own cost more in thread hand-offs and wake-ups
/// than decoding it on a 2-core machine; in a VM a wake-up costs several microseconds of CPU,
/// and 128 KiB batches still cost about 8% of the report's CPU in them). With [`TOKENS`]
/// batches, at most 3 MiB of a stream's buffers are in memory.
const BATCH_BYTES: usize = 512 << 10;

/// A mapped file's buffers go in batches of about this many bytes: they hold no allocation,
/// only the mapped pages, which are dropped every [`RELEASE_BYTES`] behind the stitcher (peak
/// RSS about 26 MB, against 20 MB with 512 KiB batches released every 8 MiB; 3-4 ms less of a
/// 120 ms report on 2 cores).
const SLICE_BATCH_BYTES: usize = 2 << 20;

/// The stitcher says which prefix of a mapped file is done with every this many bytes.
const RELEASE_BYTES: u64 = 2 << 20;

/// At most this many jobs in a batch (problems and tiny buffers).
const BATCH_JOBS: usize = 128;

/// A unit of the report's work: a buffer to decode (borrowed from a mapped file or owned from
/// a stream), or a problem of the buffer scan to pass on in order.
pub(crate) enum Job<'a> {
    Slice(Buffer<'a>),
    Owned(OwnedBuffer),
    Problem(Error),
}

impl Job<'_> {
    /// The file offset just past the job's buffer (0 for a problem).
    fn end(&self) -> u64 {
        match self {
            Job::Slice(b) => b.end(),
            Job::Owned(b) => b.end(),
            Job::Problem(_) => 0,
        }
    }

    /// The bytes of the job's buffer.
    fn len(&self) -> usize {
        match self {
            Job::Slice(b) => b.data.len(),
            Job::Owned(b) => b.data.len(),
            Job::Problem(_) => 0,
        }
    }
}

/// A decoded job: its piece, the file offset past its buffer, its allocation to recycle.
type Decoded = (Piece, u64, Vec<u8>);

/// The report's pass: `next` yields the jobs in file order (it receives a recycled allocation
/// for owned buffers); `consumed` is told the file offset below which nothing is needed
/// anymore (every [`RELEASE_BYTES`]). Returns the workers' merged aggregates, the stitcher and
/// the first buffer's time base (mprof-report's time origin).
pub(crate) fn report<'a, F>(
    header: &Header,
    opts: &Options,
    mut next: F,
    consumed: &(dyn Fn(u64) + Sync),
) -> (Agg, Stitcher, u64)
where
    F: FnMut(Vec<u8>) -> Option<Job<'a>> + Send,
{
    let ids = Arc::new(MethodIds::default());
    let mut stitcher = Stitcher::new(opts, ids.clone());
    // first buffer's time base: mprof-report's time origin (before the thread filter)
    let mut start: Option<u64> = None;
    let mut window: Option<(u64, u64)> = None;
    let start_ref = &mut start;
    // finished buffers' allocations, back to the source
    let (recycle, recycled) = mpsc::channel::<Vec<u8>>();
    // the next job to decode, with the time window (known from the first buffer on)
    let mut one = move || {
        let mut v = recycled.try_recv().unwrap_or_default();
        loop {
            let job = next(v)?;
            let h = match &job {
                Job::Slice(b) => b.header,
                Job::Owned(b) => b.header,
                Job::Problem(_) => return Some((job, window)),
            };
            if start_ref.is_none() {
                *start_ref = Some(h.time_base);
                window = opts
                    .time
                    .map(|(a, b)| (h.time_base.saturating_add(a), h.time_base.saturating_add(b)));
            }
            if opts.thread.is_none_or(|t| t == h.thread_id) {
                return Some((job, window));
            }
            // another thread's buffer: its allocation serves the next one
            v = match job {
                Job::Owned(b) => b.data,
                _ => recycled.try_recv().unwrap_or_default(),
            };
        }
    };
    // the jobs in batches of about BATCH_BYTES, SLICE_BATCH_BYTES for a mapped file (one job
    // each when sequential)
    let parallel = opts.parallel;
    let source = move || {
        let mut jobs = Vec::new();
        let mut bytes = 0;
        while let Some(j) = one() {
            bytes += j.0.len();
            let batch = match (&j.0, parallel) {
                (_, false) => 0,
                (Job::Slice(_), true) => SLICE_BATCH_BYTES,
                (_, true) => BATCH_BYTES,
            };
            jobs.push(j);
            if bytes >= batch || jobs.len() >= BATCH_JOBS {
                break;
            }
        }
        (!jobs.is_empty()).then_some(jobs)
    };
    let decode = |w: &mut Worker,
                  jobs: Vec<(Job<'_>, Option<(u64, u64)>)>,
                  emit: &mut dyn FnMut(Vec<Decoded>)| {
        let mut out = Vec::with_capacity(jobs.len());
        for (job, window) in jobs {
            let end = job.end();
            let (piece, v) = match job {
                Job::Slice(b) => (w.piece(&b, window), Vec::new()),
                Job::Owned(b) => (w.piece(&b.buffer(header), window), b.data),
                Job::Problem(e) => (
                    Piece {
                        problem: Some(e),
                        ..Piece::default()
                    },
                    Vec::new(),
                ),
            };
            out.push((piece, end, v));
        }
        emit(out);
    };
    let mut released = 0u64;
    let apply = |decoded: Vec<Decoded>| -> Result<(), ()> {
        for (piece, end, v) in decoded {
            stitcher.apply(piece);
            if end > released + RELEASE_BYTES {
                consumed(end);
                released = end;
            }
            if v.capacity() > 0 {
                // the source may be gone (end of input): nothing to hand back to then
                let _ = recycle.send(v);
            }
        }
        Ok(())
    };
    let workers = if opts.parallel {
        let cores = Workers::per_core().threads;
        Workers {
            threads: if opts.source_core {
                cores.saturating_sub(1).max(1)
            } else {
                cores
            },
            in_flight: TOKENS,
        }
    } else {
        Workers::SEQUENTIAL
    };
    let done = pipeline::run(
        workers,
        source,
        || Worker::new(opts, ids.clone()),
        decode,
        apply,
    )
    .unwrap_or_default();
    stitcher.finish();
    let mut agg = Agg::default();
    for w in done {
        agg.merge(w.finish());
    }
    (agg, stitcher, start.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mono_report::{compute, to_json, write_text, SECTIONS};
    use profkit_mlpd::read::File;
    use profkit_mlpd::write::Writer;

    fn text(r: &crate::mono_report::Report) -> String {
        let mut v = Vec::new();
        write_text(&mut v, r, &SECTIONS, true).unwrap();
        String::from_utf8(v).unwrap()
    }

    /// Many buffers of three threads with calls crossing buffers, and bad buffer magics between
    /// them: the parallel pass gives the sequential pass's report, problems in file order.
    #[test]
    fn parallel_and_sequential_passes_agree() {
        let mut w = Writer::new(profkit_mlpd::Header {
            major: 3,
            data_version: 17,
            ptrsize: 8,
            ..profkit_mlpd::Header::default()
        });
        let mut t = 1000u64;
        for i in 0..200u64 {
            let thread = 0x7000 + i % 3;
            let mut b = w.buffer(thread, t);
            for k in 0..20u64 {
                t += 7;
                let m = 0x5000 + ((i + k) % 5) * 8;
                if (i + k) % 3 == 0 {
                    b.leave(t, m);
                } else {
                    b.enter(t, m);
                }
            }
            b.alloc(t, 0x7700 + (i % 4) * 8, 0x1000, 24, None);
            b.finish();
            if i % 50 == 7 {
                w.raw(b"junk");
            }
        }
        let bytes = w.into_bytes();
        let file = File::parse(&bytes).unwrap();
        let seq = compute(&file, &Options::default());
        for _ in 0..3 {
            let par = compute(
                &file,
                &Options {
                    parallel: true,
                    ..Options::default()
                },
            );
            assert_eq!(text(&par), text(&seq));
            assert_eq!(to_json(&par), to_json(&seq));
            assert_eq!(par.problems, seq.problems);
        }
        assert_eq!(seq.problems.len(), 4);
        assert!(seq.problems.windows(2).all(|w| w[0].offset < w[1].offset));
        assert_eq!(seq.buffers, 200);
    }

    /// A report that skips the calls or the allocations prints the sections it keeps as the
    /// full report does.
    #[test]
    fn skipping_sections_keeps_the_others() {
        let mut w = Writer::new(profkit_mlpd::Header {
            major: 3,
            data_version: 17,
            ptrsize: 8,
            ..profkit_mlpd::Header::default()
        });
        let mut t = 1000u64;
        for i in 0..40u64 {
            let mut b = w.buffer(0x7000 + i % 2, t);
            for k in 0..10u64 {
                t += 5;
                b.enter(t, 0x5000 + (k % 3) * 8);
                b.alloc(t, 0x7700 + (k % 2) * 8, 0x1000, 16 + k, None);
                b.leave(t + 1, 0x5000 + (k % 3) * 8);
            }
            b.finish();
        }
        let bytes = w.into_bytes();
        let file = File::parse(&bytes).unwrap();
        let section = |r: &crate::mono_report::Report, s: &str| {
            let mut v = Vec::new();
            write_text(&mut v, r, &[s], false).unwrap();
            String::from_utf8(v).unwrap()
        };
        let full = compute(&file, &Options::default());
        let calls = compute(
            &file,
            &Options {
                skip_allocs: true,
                parallel: true,
                ..Options::default()
            },
        );
        let allocs = compute(
            &file,
            &Options {
                skip_calls: true,
                parallel: true,
                ..Options::default()
            },
        );
        assert_eq!(section(&calls, "call"), section(&full, "call"));
        assert_eq!(section(&allocs, "alloc"), section(&full, "alloc"));
        assert!(calls.alloc.is_empty() && allocs.calls.is_empty());
        assert!(!full.alloc.is_empty() && !full.calls.is_empty());
    }

    /// The report's source: a thread filter skips other threads' buffers (their allocations
    /// recycled); the time window starts at the first buffer of any thread.
    #[test]
    fn the_thread_filter_and_the_window_apply_at_the_source() {
        let mut w = Writer::new(profkit_mlpd::Header {
            major: 3,
            data_version: 17,
            ptrsize: 8,
            ..profkit_mlpd::Header::default()
        });
        for (thread, base) in [(1u64, 1000u64), (2, 1100), (1, 1200)] {
            let mut b = w.buffer(thread, base);
            b.enter(base + 10, 0x5000);
            b.leave(base + 20, 0x5000);
            b.finish();
        }
        let bytes = w.into_bytes();
        let file = File::parse(&bytes).unwrap();
        let one = compute(
            &file,
            &Options {
                thread: Some(2),
                parallel: true,
                ..Options::default()
            },
        );
        assert_eq!((one.buffers, one.start_time), (1, 1000));
        assert_eq!(one.calls[0].1.calls, 1);
        let window = compute(
            &file,
            &Options {
                time: Some((150, 250)),
                ..Options::default()
            },
        );
        assert_eq!(window.calls[0].1.calls, 1);
    }
}
