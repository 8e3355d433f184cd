//! The pass over the buffers: a pipeline that decodes buffers on worker threads and stitches
//! their results in file order on the calling thread.
//!
//! * The **source** (a thread) yields jobs in file order: slices of a mapped file, or buffers
//!   read one by one from a stream (gzip inflates there, overlapping the decoding). A fixed
//!   set of tokens bounds the jobs in flight, so memory does not grow with the file; a token
//!   carries an allocation that an owned buffer reuses.
//! * **Workers** decode jobs into pieces ([`super::worker`]).
//! * The **calling thread** applies the pieces in job order ([`super::stitcher`]) as they come
//!   back, then returns the token.
//!
//! [`run`] is that mechanism, for any job and piece; [`report`] is the report's use of it (the
//! thread filter, the time window, the buffer scan's problems passed on in order).

use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Mutex;

use super::stitcher::Stitcher;
use super::worker::{Agg, Piece, Worker};
use super::Options;
use profkit_mlpd::read::Buffer;
use profkit_mlpd::stream::OwnedBuffer;
use profkit_mlpd::Error;
use profkit_mlpd::Header;

/// Jobs in flight (bounds memory; more than the workers, so none waits for work).
pub(crate) const TOKENS: usize = 16;

/// Runs `source` → `decode` on `workers` threads → `apply` on the calling thread, in the
/// source's order, with at most `tokens` jobs between the source and `apply`. `source` gets
/// the allocation of a finished job (empty at first) and returns the next job, or `None` at the
/// end; `decode` returns the piece and an allocation to recycle. With `workers == 0`
/// everything runs on the calling thread. Returns the workers (their state, e.g. order-free
/// aggregates).
pub(crate) fn run<J, P, W, S, D, A>(
    workers: usize,
    tokens: usize,
    mut source: S,
    new_worker: &(dyn Fn() -> W + Sync),
    decode: D,
    mut apply: A,
) -> Vec<W>
where
    J: Send,
    P: Send,
    W: Send,
    S: FnMut(Vec<u8>) -> Option<J> + Send,
    D: Fn(&mut W, J) -> (P, Vec<u8>) + Sync,
    A: FnMut(P),
{
    if workers == 0 {
        let mut w = new_worker();
        let mut spare = Vec::new();
        while let Some(job) = source(std::mem::take(&mut spare)) {
            let (piece, v) = decode(&mut w, job);
            apply(piece);
            spare = v;
        }
        return vec![w];
    }
    let tokens = tokens.max(1);
    let (token_tx, token_rx): (SyncSender<Vec<u8>>, Receiver<Vec<u8>>) = mpsc::sync_channel(tokens);
    for _ in 0..tokens {
        let _ = token_tx.send(Vec::new());
    }
    let (work_tx, work_rx) = mpsc::sync_channel::<(u64, J)>(tokens);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<(u64, P, Vec<u8>)>();
    let decode = &decode;
    let mut out = Vec::with_capacity(workers);
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut seq = 0u64;
            while let Ok(v) = token_rx.recv() {
                let Some(job) = source(v) else { break };
                if work_tx.send((seq, job)).is_err() {
                    break;
                }
                seq += 1;
            }
        });
        let mut handles = Vec::with_capacity(workers);
        for _ in 0..workers {
            let done_tx = done_tx.clone();
            let work_rx = &work_rx;
            handles.push(s.spawn(move || {
                let mut w = new_worker();
                loop {
                    let job = match work_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok((seq, job)) = job else { break };
                    let (piece, v) = decode(&mut w, job);
                    if done_tx.send((seq, piece, v)).is_err() {
                        break;
                    }
                }
                w
            }));
        }
        drop(done_tx);
        // the pieces in order: those that come early wait for the ones before them
        let mut pending: BTreeMap<u64, (P, Vec<u8>)> = BTreeMap::new();
        let mut want = 0u64;
        for (seq, piece, v) in done_rx.iter() {
            pending.insert(seq, (piece, v));
            while let Some((piece, v)) = pending.remove(&want) {
                apply(piece);
                want += 1;
                // the source may be gone (end of input): nothing to hand back to then
                let _ = token_tx.send(v);
            }
        }
        for h in handles {
            if let Ok(w) = h.join() {
                out.push(w);
            }
        }
    });
    out
}

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
}

/// The report's pass: `next` yields the jobs in file order (it receives a recycled allocation
/// for owned buffers); `consumed` is told the file offset below which nothing is needed
/// anymore (every 8 MiB). Returns the workers' merged aggregates, the stitcher and the first
/// buffer's time base (mprof-report's time origin).
pub(crate) fn report<'a, F>(
    header: &Header,
    opts: &Options,
    mut next: F,
    consumed: &(dyn Fn(u64) + Sync),
) -> (Agg, Stitcher, u64)
where
    F: FnMut(Vec<u8>) -> Option<Job<'a>> + Send,
{
    let mut stitcher = Stitcher::new(opts);
    // first buffer's time base: mprof-report's time origin (before the thread filter)
    let mut start: Option<u64> = None;
    let mut window: Option<(u64, u64)> = None;
    // the jobs to decode, each with the time window (known from the first buffer on)
    let source = |mut v: Vec<u8>| loop {
        let job = next(v)?;
        let h = match &job {
            Job::Slice(b) => b.header,
            Job::Owned(b) => b.header,
            Job::Problem(_) => return Some((job, window)),
        };
        if start.is_none() {
            start = Some(h.time_base);
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
            _ => Vec::new(),
        };
    };
    let decode = |w: &mut Worker, (job, window): (Job<'_>, Option<(u64, u64)>)| {
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
        ((piece, end), v)
    };
    let mut released = 0u64;
    let apply = |(piece, end): (Piece, u64)| {
        stitcher.apply(piece);
        if end > released + (8 << 20) {
            consumed(end);
            released = end;
        }
    };
    let workers = if opts.parallel {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8)
    } else {
        0
    };
    let new_worker = || Worker::new(opts);
    let done = run(workers, TOKENS, source, &new_worker, decode, apply);
    stitcher.finish();
    let mut agg = Agg::default();
    for w in done {
        agg.merge(w.finish());
    }
    (agg, stitcher, start.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::mono_report::{compute, to_json, write_text, SECTIONS};
    use profkit_mlpd::read::File;
    use profkit_mlpd::write::Writer;

    /// Many more jobs than tokens, decoded at uneven speeds: applied in source order, never more
    /// than `tokens` in flight, every allocation recycled through the source.
    #[test]
    fn pieces_come_back_in_order_with_bounded_jobs_in_flight() {
        for workers in [0, 1, 3, 8] {
            let in_flight = AtomicUsize::new(0);
            let max_in_flight = AtomicUsize::new(0);
            let mut n = 0u32;
            let mut recycled = 0;
            let source = |v: Vec<u8>| {
                if v.capacity() > 0 {
                    recycled += 1;
                }
                if n == 300 {
                    return None;
                }
                n += 1;
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                max_in_flight.fetch_max(now, Ordering::SeqCst);
                // even jobs are problems passed on like the others
                Some(if n % 2 == 0 { Err(n) } else { Ok(n) })
            };
            let decode = |calls: &mut u32, job: Result<u32, u32>| {
                *calls += 1;
                let k = job.unwrap_or_else(|e| e);
                // later jobs are often faster: they overtake the earlier ones
                std::thread::sleep(std::time::Duration::from_micros(
                    u64::from((301 - k) % 7) * 50,
                ));
                (job, Vec::with_capacity(8))
            };
            let mut seen = Vec::new();
            let apply = |p: Result<u32, u32>| {
                in_flight.fetch_sub(1, Ordering::SeqCst);
                seen.push(p);
            };
            let new_worker = || 0u32;
            let ws = run(workers, 4, source, &new_worker, decode, apply);
            let want: Vec<Result<u32, u32>> = (1..=300)
                .map(|k| if k % 2 == 0 { Err(k) } else { Ok(k) })
                .collect();
            assert_eq!(seen, want, "{workers} workers");
            assert_eq!(ws.len(), workers.max(1));
            assert_eq!(ws.iter().sum::<u32>(), 300);
            assert!(max_in_flight.load(Ordering::SeqCst) <= 4, "{workers}");
            assert!(recycled >= 290, "{workers}: {recycled}");
        }
    }

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
