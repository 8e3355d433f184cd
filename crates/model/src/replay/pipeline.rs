//! An ordered parallel pipeline: jobs in order → workers → pieces applied in job order.
//!
//! A producer thread pulls jobs (it may read and inflate a stream while the workers decode),
//! the workers turn each job into one or more pieces, and the calling thread applies the
//! pieces in job order (a job's pieces in the order it emitted them). At most `in_flight`
//! jobs are decoding or waiting, and a job holds at most [`PIECES_PER_JOB`] pieces not yet
//! applied, so memory is bounded by the pieces' size, never by the input's.

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Mutex;

/// Pieces a job may have decoded ahead of the one being applied.
pub const PIECES_PER_JOB: usize = 2;

/// How many threads work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workers {
    /// Decoding threads; 0 runs everything on the calling thread (deterministic, no threads).
    pub threads: usize,
    /// Jobs decoding or waiting at most (at least `threads + 1`).
    pub in_flight: usize,
}

impl Workers {
    /// No threads: jobs are decoded and applied one after another on the calling thread.
    pub const SEQUENTIAL: Workers = Workers {
        threads: 0,
        in_flight: 1,
    };

    /// One decoding thread per core (at most 8), 16 jobs in flight.
    pub fn per_core() -> Workers {
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8);
        Workers {
            threads: n,
            in_flight: 16,
        }
    }
}

/// Runs the jobs `next` yields through `decode` on worker threads; `apply` receives the pieces
/// on the calling thread in job order. `decode(worker, job, emit)` calls `emit` for each piece
/// of the job, in order. Returns the workers' states (e.g. their order-free aggregates, to
/// merge), or the first error of `apply`, after which nothing more is decoded.
pub fn run<J, P, W, E>(
    workers: Workers,
    next: impl FnMut() -> Option<J> + Send,
    make_worker: impl Fn() -> W + Sync,
    decode: impl Fn(&mut W, J, &mut dyn FnMut(P)) + Sync,
    mut apply: impl FnMut(P) -> Result<(), E>,
) -> Result<Vec<W>, E>
where
    J: Send,
    P: Send,
    W: Send,
{
    let mut next = next;
    if workers.threads == 0 {
        return sequential(&mut next, &make_worker, &decode, &mut apply);
    }
    let in_flight = workers.in_flight.max(workers.threads + 1);
    // Per job, in order: the receiver of its pieces. The bound is what limits the jobs in
    // flight: the producer blocks until the calling thread has finished a job.
    let (order_tx, order_rx) = mpsc::sync_channel::<Receiver<P>>(in_flight);
    let (work_tx, work_rx) = mpsc::sync_channel::<(J, SyncSender<P>)>(in_flight);
    let work_rx = Mutex::new(work_rx);
    let mut result = Ok(());
    let mut states = Vec::new();
    // Threads are spawned fallibly (an address-space or thread limit): with no worker or no
    // producer, the jobs run on the calling thread instead.
    let mut threads_failed = false;
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(workers.threads);
        for _ in 0..workers.threads {
            let (work_rx, make_worker, decode) = (&work_rx, &make_worker, &decode);
            let spawned = std::thread::Builder::new().spawn_scoped(s, move || {
                let mut w = make_worker();
                loop {
                    // Jobs are taken in order: the job the calling thread waits for is always
                    // in a worker's hands already (or done), so waiting cannot deadlock.
                    let job = match work_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok((job, tx)) = job else { break };
                    let mut open = true;
                    decode(&mut w, job, &mut |p| {
                        // A closed receiver means the calling thread stopped: drop the rest.
                        open = open && tx.send(p).is_ok();
                    });
                }
                w
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(_) => break,
            }
        }
        let next = &mut next;
        let producer = if handles.is_empty() {
            None
        } else {
            std::thread::Builder::new()
                .spawn_scoped(s, move || {
                    while let Some(job) = next() {
                        let (tx, rx) = mpsc::sync_channel(PIECES_PER_JOB);
                        if order_tx.send(rx).is_err() || work_tx.send((job, tx)).is_err() {
                            break;
                        }
                    }
                })
                .ok()
        };
        if producer.is_none() {
            // The channels' senders are gone with the closure: the workers stop.
            threads_failed = true;
        } else {
            'jobs: for rx in order_rx.iter() {
                for piece in rx.iter() {
                    if let Err(e) = apply(piece) {
                        result = Err(e);
                        break 'jobs;
                    }
                }
            }
        }
        // Dropping the receivers (by leaving the loop) stops the producer and the workers.
        drop(order_rx);
        for h in handles {
            if let Ok(w) = h.join() {
                states.push(w);
            }
        }
    });
    if threads_failed {
        return sequential(&mut next, &make_worker, &decode, &mut apply);
    }
    result.map(|()| states)
}

/// The jobs decoded and applied one after another on the calling thread.
fn sequential<J, P, W, E>(
    next: &mut impl FnMut() -> Option<J>,
    make_worker: &impl Fn() -> W,
    decode: &impl Fn(&mut W, J, &mut dyn FnMut(P)),
    apply: &mut impl FnMut(P) -> Result<(), E>,
) -> Result<Vec<W>, E> {
    let mut w = make_worker();
    let mut failed = None;
    while let Some(job) = next() {
        decode(&mut w, job, &mut |p| {
            if failed.is_none() {
                if let Err(e) = apply(p) {
                    failed = Some(e);
                }
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
    }
    Ok(vec![w])
}
